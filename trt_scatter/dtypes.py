"""Element types, once: NumPy's, ONNX's and TensorRT's names for the same type.

Every module that turns one kind of type into another asks here, so a type trt-scatter moves has
one row in :data:`ELEMENT_TYPES` and nowhere else::

    dtypes.from_onnx(TensorProto.BFLOAT16)   # dtype(bfloat16) (ml_dtypes), or None where unknown
    dtypes.to_onnx(np.float16)               # TensorProto.FLOAT16
    dtypes.to_tensorrt(np.int64)             # trt.int64 of the backend in use
    dtypes.from_tensorrt(trt.float32)        # dtype('float32')

bfloat16 has no NumPy type of its own: ``ml_dtypes`` provides it where installed (:data:`BFLOAT16`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import tensorrt as trt
    from numpy.typing import DTypeLike


def _bfloat16():
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


#: NumPy's bfloat16 (from ml_dtypes), or None where ml_dtypes is not installed.
BFLOAT16 = _bfloat16()

#: The element types TensorRT networks carry for scatter data, by NumPy name -> TensorRT ``DataType`` member.
ELEMENT_TYPES = {
    "float32": "FLOAT",
    "float16": "HALF",
    "bfloat16": "BF16",
    "int8": "INT8",
    "uint8": "UINT8",
    "int32": "INT32",
    "int64": "INT64",
    "bool": "BOOL",
}
#: TensorRT ``DataType`` members the kernels move (they move bytes), by size in bytes: the element
#: types above and the 1-byte float formats NumPy has no type for.
KERNEL_TYPES = {"FLOAT": 4, "HALF": 2, "BF16": 2, "INT8": 1, "UINT8": 1, "BOOL": 1, "FP8": 1, "E8M0": 1, "INT32": 4, "INT64": 8}
#: The index types of every op (NumPy names): int32 and int64.
INDEX_TYPES = ("int32", "int64")


def name(dtype: DTypeLike) -> str:
    """The name of a NumPy dtype, ``"bfloat16"`` for ml_dtypes' (whose ``.name`` says so too)."""
    return np.dtype(dtype).name


def from_onnx(elem_type: int) -> np.dtype | None:
    """The NumPy dtype of an ONNX ``TensorProto`` element type, or ``None`` (undefined, or no NumPy type)."""
    from onnx import TensorProto, helper

    if elem_type == TensorProto.UNDEFINED:
        return None
    if elem_type == TensorProto.BFLOAT16:
        return BFLOAT16
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except Exception:  # a type NumPy cannot hold (strings, float8 without ml_dtypes, ...)
        return None


def onnx_name(elem_type: int) -> str:
    """The name of an ONNX element type for messages: its NumPy name where it has one (``int64``), else ONNX's (``string``)."""
    from onnx import TensorProto

    dtype = from_onnx(elem_type)
    if dtype is not None and dtype.kind != "O":  # NumPy holds ONNX's strings as objects
        return name(dtype)
    return TensorProto.DataType.Name(elem_type).lower() if elem_type in TensorProto.DataType.values() else f"element type {elem_type}"


def to_onnx(dtype: DTypeLike | None) -> int:
    """The ONNX ``TensorProto`` element type of a NumPy dtype (``UNDEFINED`` for ``None``)."""
    from onnx import TensorProto, helper

    if dtype is None:
        return TensorProto.UNDEFINED
    dtype = np.dtype(dtype)
    if dtype == BFLOAT16:
        return TensorProto.BFLOAT16
    return helper.np_dtype_to_tensor_dtype(dtype)


def to_tensorrt(dtype: DTypeLike) -> trt.DataType:
    """The TensorRT ``DataType`` of a NumPy dtype; a TypeError for a type TensorRT has not (float64, uint16...)."""
    from trt_scatter.backend import tensorrt

    member = ELEMENT_TYPES.get(name(dtype))
    if member is None:
        raise TypeError(f"TensorRT has no element type for {np.dtype(dtype)}")
    return getattr(tensorrt().DataType, member)


def from_tensorrt(trt_dtype: trt.DataType) -> np.dtype:
    """The NumPy dtype of a TensorRT ``DataType``; a TypeError for one NumPy lacks (fp8, int4; bfloat16 without ml_dtypes)."""
    member = str(trt_dtype).rsplit(".", 1)[-1]
    for numpy_name, trt_member in ELEMENT_TYPES.items():
        if trt_member == member:
            if numpy_name == "bfloat16" and BFLOAT16 is None:
                raise TypeError("bfloat16 tensors need the ml_dtypes package")
            return BFLOAT16 if numpy_name == "bfloat16" else np.dtype(numpy_name)
    raise TypeError(f"trt-scatter has no NumPy type for TensorRT's {trt_dtype}")


def tensorrt_name(trt_dtype: trt.DataType) -> str:
    """NumPy's name for a TensorRT ``DataType`` (``float32``, ``bfloat16`` with or without ml_dtypes...), or TensorRT's
    own in lower case for the types NumPy has none for (``fp8``, ``int4``)."""
    member = str(trt_dtype).rsplit(".", 1)[-1]
    return next((numpy_name for numpy_name, trt_member in ELEMENT_TYPES.items() if trt_member == member), member.lower())
