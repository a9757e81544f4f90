"""Shared pieces of the oracle tests: element types, random values, bit-exact comparison, ONNX references.

The ONNX references (``onnx.reference.ReferenceEvaluator`` and onnxruntime) are independent
implementations of ScatterElements and ScatterND, so the oracle is checked against them and
never against itself.
"""

import functools

import ml_dtypes
import numpy as np
from hypothesis import strategies as st
from onnx import helper

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)

#: Every element type the specs call numeric and TensorRT can hold (bfloat16 via ml_dtypes).
ELEMENT_TYPES = [
    np.dtype(t)
    for t in (np.bool_, np.int8, np.uint8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64, BFLOAT16)
]
INDEX_TYPES = [np.dtype(np.int32), np.dtype(np.int64)]

#: onnxruntime 1.31 cannot take bfloat16 NumPy arrays ("Numpy_type 256 can't be converted to MLDataType").
ORT_ELEMENT_TYPES = [t for t in ELEMENT_TYPES if t != BFLOAT16]

element_types = st.sampled_from(ELEMENT_TYPES)
index_types = st.sampled_from(INDEX_TYPES)
seeds = st.integers(0, 2**32 - 1)


def random_values(rng, shape, dtype):
    """Random values of ``dtype`` covering its range (ints up to their extremes, floats with sign and scale)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        values = rng.integers(0, 2, size=shape).astype(np.bool_)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    else:
        values = (rng.standard_normal(size=shape) * 1000).astype(dtype)
    return np.asarray(values)  # an array even for shape (), where NumPy's generators return scalars


def assert_bitwise_equal(actual, expected):
    """Same dtype, same shape, same bits: a scatter copies elements, so nothing less is right (-0.0 included)."""
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    unsigned = np.dtype(f"u{actual.dtype.itemsize}")
    np.testing.assert_array_equal(np.ascontiguousarray(actual).view(unsigned), np.ascontiguousarray(expected).view(unsigned))


def snapshot(*arrays):
    return [np.array(a, copy=True) for a in arrays]


def assert_unchanged(arrays, copies):
    for array, copy in zip(arrays, copies):
        assert_bitwise_equal(np.asarray(array), copy)


@functools.lru_cache(maxsize=None)
def _model(op_type, dtype, index_dtype, attributes):
    element = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    index = helper.np_dtype_to_tensor_dtype(np.dtype(index_dtype))
    inputs = [
        helper.make_tensor_value_info("data", element, None),
        helper.make_tensor_value_info("indices", index, None),
        helper.make_tensor_value_info("updates", element, None),
    ]
    node = helper.make_node(op_type, ["data", "indices", "updates"], ["output"], **dict(attributes))
    graph = helper.make_graph([node], op_type, inputs, [helper.make_tensor_value_info("output", element, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
    return model


@functools.lru_cache(maxsize=None)
def _reference_evaluator(op_type, dtype, index_dtype, attributes):
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(_model(op_type, dtype, index_dtype, attributes))


@functools.lru_cache(maxsize=None)
def _ort_session(op_type, dtype, index_dtype, attributes):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(
        _model(op_type, dtype, index_dtype, attributes).SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def run_onnx(runtime, op_type, data, indices, updates, **attributes):
    """Runs one ONNX ``op_type`` node (opset 18) with ``runtime`` "reference" or "onnxruntime"."""
    factory = {"reference": _reference_evaluator, "onnxruntime": _ort_session}[runtime]
    session = factory(op_type, data.dtype, indices.dtype, tuple(sorted(attributes.items())))
    feeds = {"data": data, "indices": indices, "updates": updates}
    return session.run(None, feeds)[0]


def maybe_empty(draw, shape):
    """``shape`` with one dimension set to 0 about one time in ten (an empty tensor), else as it is."""
    shape = tuple(shape)
    if shape and draw(st.integers(0, 9)) == 0:
        at = draw(st.integers(0, len(shape) - 1))
        shape = shape[:at] + (0,) + shape[at + 1 :]
    return shape


@st.composite
def shapes(draw, rank_min=1, rank_max=6, maximum=4):
    """Shapes of rank in [rank_min, rank_max] with dimensions up to ``maximum``; one in ten is empty."""
    rank = draw(st.integers(rank_min, rank_max))
    return maybe_empty(draw, draw(st.tuples(*[st.integers(1, maximum)] * rank)))
