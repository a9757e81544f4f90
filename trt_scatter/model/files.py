"""Reading an ONNX model from a file, and the tensors it keeps in external files beside it.

:func:`read_proto` opens the file once (a pipe or ``/dev/stdin`` too) and refuses by name what is
not a model (missing, a folder, empty, a TensorRT engine, other bytes, more than a protobuf holds)
and external data that is not the model's own: every external location must name a file in the
model's folder (relative, no ``..``, not reached through a link out of the folder) that is long
enough; TensorRT's parser would otherwise read whatever the model names, or fail in its own words.
It reads no external data. :func:`read_external` then reads the external tensors a command needs,
from the model's own folder wherever the process runs from: the integer ones (index constants,
which validation must see) or all of them (weights, for running the model).
"""

from __future__ import annotations

import math
import os
import select
import stat
import time
from typing import TYPE_CHECKING

from trt_scatter import dtypes
from trt_scatter.log import first_line
from trt_scatter.model.graph import ModelError, printable, subgraphs

if TYPE_CHECKING:
    from collections.abc import Iterator

    import onnx

# The first bytes of a serialized TensorRT engine: full TensorRT's plans start b"ftrt" (as
# torch-tensorrt's checks read them), TensorRT-RTX 1.7's b"vtrt" (seen in its plans).
ENGINE_MAGICS = (b"ftrt", b"vtrt")
#: The most bytes a model file may have: a protobuf message holds at most 2 GiB (weights beyond that
#: live in external files).
MAX_MODEL_BYTES = 2**31 - 1
#: The most elements one tensor may have: TensorRT's volume limit (a dimension or a volume of 2**31
#: or more is refused by name before anything is allocated).
MAX_ELEMENTS = 2**31 - 1
#: How long a pipe (``<(cat model.onnx)``, a FIFO) may take to start sending a model.
PIPE_WAIT_S = 30


def read_proto(path: str | os.PathLike) -> onnx.ModelProto:
    """The ``onnx.ModelProto`` in the file ``path``, without the data of its external tensors; one open."""
    import onnx
    from google.protobuf.message import DecodeError

    path = os.fspath(path)
    _check_not_a_directory(path)
    data = _read_bytes(path)
    _check_start(path, data[:4])
    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, RuntimeError, OSError) as err:
        raise ModelError(f"{path!r} is not an ONNX model ({first_line(err)})") from None
    if not model.HasField("graph") or not model.ir_version:
        raise ModelError(f"{path!r} is not an ONNX model (no graph or IR version)")
    check_tensor_sizes(model, path)
    _check_external_files(model, path)
    return model


def check_model_file(path: str | os.PathLike) -> None:
    """What :func:`read_proto` would refuse first in a regular file, from its first bytes: a file that is missing, a
    directory, empty, or a TensorRT engine. For a command that checks its outputs before it reads its model (``build``
    named an engine given for a model as its own output). A pipe or device is left to :func:`read_proto`: its bytes
    come once."""
    path = os.fspath(path)
    _check_not_a_directory(path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return
        with open(path, "rb") as file:
            start = file.read(4)
    except OSError as err:
        raise _unreadable(path, err) from None
    _check_start(path, start)


def _check_not_a_directory(path):
    if os.path.isdir(path):
        raise ModelError(f"{path!r} is a directory, not an ONNX model")


def _unreadable(path, err):
    return ModelError(f"cannot read ONNX model {path!r}: {err.strerror or err}")


def _check_start(path, start):
    if not start:
        raise ModelError(f"{path!r} is empty, not an ONNX model")
    if start in ENGINE_MAGICS:
        raise ModelError(f"{path!r} is a serialized TensorRT engine, not an ONNX model")


def _read_bytes(path):
    """The bytes of the file ``path``, read once: a regular file whole (at most :data:`MAX_MODEL_BYTES`), a
    pipe or device as it comes, until it ends, stops for :data:`PIPE_WAIT_S` or passes that size."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO without a writer must not block the open
    except OSError as err:
        raise _unreadable(path, err) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode):
            if info.st_size > MAX_MODEL_BYTES:
                raise ModelError(f"{path!r} holds {info.st_size} bytes, more than a protobuf holds ({MAX_MODEL_BYTES}): keep its weights in external files")
            os.set_blocking(fd, True)
            with os.fdopen(os.dup(fd), "rb") as f:
                return f.read()
        return _read_stream(fd, path)
    except OSError as err:
        raise _unreadable(path, err) from None
    finally:
        os.close(fd)


def _read_stream(fd, path):
    """A pipe, FIFO or device read as it comes (``<(cat model.onnx)``, ``/dev/stdin``): what a protobuf can
    hold, and no endless source (``/dev/zero``: no model starts with a zero byte)."""
    chunks, size, deadline = [], 0, time.monotonic() + PIPE_WAIT_S
    while True:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise ModelError(f"{path!r} sent nothing for {PIPE_WAIT_S} s: no ONNX model came")
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            continue
        if not chunk:
            return b"".join(chunks)
        if not chunks and chunk[:1] == b"\0":
            raise ModelError(f"{path!r} is not an ONNX model (it starts with a zero byte, which no protobuf field does)")
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_MODEL_BYTES:
            raise ModelError(f"{path!r} sends more than a protobuf holds ({MAX_MODEL_BYTES} bytes): no ONNX model is that large")
        deadline = time.monotonic() + PIPE_WAIT_S


def check_tensor_sizes(model: onnx.ModelProto, path: str | os.PathLike | None = None) -> None:
    """Every tensor the model holds (initializers, ``Constant`` values, subgraphs included) has fewer than
    :data:`MAX_ELEMENTS` elements, and the bytes its dims say it has (checked before any array is made)."""
    from onnx import TensorProto

    where = f"{os.fspath(path)!r}" if path is not None else "the model"
    for name, tensor in constant_tensors(model.graph):
        count = math.prod(tensor.dims)
        if count > MAX_ELEMENTS or any(d < 0 for d in tensor.dims):
            raise ModelError(f"{where}: tensor {printable(repr(name))} claims shape {list(tensor.dims)} ({count} elements): "
                             f"TensorRT takes at most {MAX_ELEMENTS} elements per tensor")
        if tensor.data_type == TensorProto.UNDEFINED:
            raise ModelError(f"{where}: tensor {printable(repr(name))} has no element type (data_type 0)")
        if tensor.data_location == TensorProto.EXTERNAL or tensor.data_type == TensorProto.STRING:
            continue
        if not tensor.HasField("raw_data"):  # the values in the typed field of the type: one per element
            field = _TYPED_FIELDS.get(tensor.data_type)
            stored = len(getattr(tensor, field)) if field else count
            if stored != count:
                raise ModelError(f"{where}: tensor {printable(repr(name))} of shape {list(tensor.dims)} holds {stored} values in {field}, "
                                 f"not the {count} its shape takes")
            continue
        expected = _byte_count(tensor)
        if expected is not None and len(tensor.raw_data) != expected:
            raise ModelError(f"{where}: tensor {printable(repr(name))} of shape {list(tensor.dims)} holds {len(tensor.raw_data)} bytes, "
                             f"not the {expected} its shape and type take")


def _byte_count(tensor):
    """The bytes ``tensor``'s dims and type take (``None`` for a type whose size NumPy does not know)."""
    from onnx import helper

    try:
        itemsize = helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    except Exception:
        return None
    return math.ceil(math.prod(tensor.dims) * _PACKED.get(tensor.data_type, itemsize))


#: TensorProto's typed field that holds one value per element of a type (onnx.proto: float_data for FLOAT; int32_data
#: for INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16 and BFLOAT16 bits; int64_data; double_data; uint64_data for
#: UINT32 and UINT64); the other types are not counted here.
_TYPED_FIELDS = {1: "float_data", 6: "int32_data", 5: "int32_data", 3: "int32_data", 4: "int32_data", 2: "int32_data", 9: "int32_data",
                 10: "int32_data", 16: "int32_data", 7: "int64_data", 11: "double_data", 12: "uint64_data", 13: "uint64_data"}
_PACKED = {21: 0.5, 22: 0.5, 23: 0.5, 25: 0.25, 26: 0.25}  # bytes per element of TensorProto.UINT4, INT4, FLOAT4E2M1, UINT2, INT2


def external_tensors(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    """The tensors ``model`` keeps in external files (initializers and ``Constant`` values, subgraphs included)."""
    from onnx.external_data_helper import uses_external_data

    return [tensor for _, tensor in constant_tensors(model.graph) if uses_external_data(tensor)]


def holds_indices(tensor: onnx.TensorProto) -> bool:
    """Whether ``tensor`` is int32 or int64, the types of index constants, which validation must read wherever
    trt-scatter runs from (weights it need not)."""
    from onnx import TensorProto

    return tensor.data_type in (TensorProto.INT32, TensorProto.INT64)


def read_external(model: onnx.ModelProto, path: str | os.PathLike, integers_only: bool = False) -> None:
    """Reads into ``model`` the external data of its tensors from the folder of ``path`` (the model's file).

    ``integers_only``: only the int32/int64 tensors (``onnx.save(..., save_as_external_data=True)``
    moves every tensor over 1 KiB out, 128 int64 indices, and a constant index out of range must be
    refused wherever trt-scatter runs from, while weights need not be read to check a model).
    Otherwise every tensor. The files were checked when the model was read (:func:`read_proto`);
    one that changed since is a ModelError naming the model.
    """
    from onnx import TensorProto

    for name, tensor in constant_tensors(model.graph):
        if tensor.data_location != TensorProto.EXTERNAL or (integers_only and not holds_indices(tensor)):
            continue
        try:
            _load_external(tensor, path, name)
        except OSError as err:
            raise ModelError(f"cannot read the external data of {os.fspath(path)!r}: {err.strerror or first_line(err)}") from None


def external_file(tensor: onnx.TensorProto, path: str | os.PathLike, name: str | None = None) -> tuple[str, int, int | None]:
    """``(file, offset, length)`` of an external tensor (named ``name``) of the model at ``path``: the file its
    location names in the model's folder. A ModelError where the location is absolute, climbs out with ``..``,
    reaches out of the folder through a link, or names no file."""
    from onnx.external_data_helper import ExternalDataInfo

    entries = {entry.key: entry.value for entry in tensor.external_data}
    location = entries.get("location", "")
    where = _kept(path, name or tensor.name, tensor)
    for key in ("offset", "length"):
        if key in entries and not (entries[key].isascii() and entries[key].isdigit()):
            raise ModelError(f"{where} at {key} {printable(entries[key])}: an {key} is a byte count"
                             + (" from the file's start, 0 or more" if key == "offset" else ", 0 or more"))
    info = ExternalDataInfo(tensor)
    folder = os.path.dirname(os.path.abspath(path))
    parts = location.replace("\\", "/").split("/")
    if not location or os.path.isabs(location) or location.startswith(("/", "\\")) or ".." in parts or (len(location) > 1 and location[1] == ":"):
        raise ModelError(f"{where}: an external data location must be a file in the model's folder (relative, no '..')")
    file = os.path.join(folder, location)
    real_folder, real_file = os.path.realpath(folder), os.path.realpath(file)
    if os.path.commonpath([real_folder, real_file]) != real_folder:
        raise ModelError(f"{where}, which a link takes out of the model's folder (to {printable(repr(real_file))})")
    if os.path.isdir(real_file):
        raise ModelError(f"{where}, which is a folder: an external data location names a file in the model's folder")
    if not os.path.isfile(real_file):
        raise ModelError(f"{where}, which is not in {folder!r}")
    return real_file, info.offset or 0, info.length


def _kept(path, name, tensor):
    """``'<model>' keeps tensor '<name>' in '<location>'``: what a message on an external tensor starts with."""
    location = next((entry.value for entry in tensor.external_data if entry.key == "location"), "")
    return f"{os.fspath(path)!r} keeps tensor {printable(repr(name))} in {printable(repr(location))}"


def _check_external_files(model, path):
    """Every file that holds a tensor of the model is the model's own (:func:`external_file`) and long enough."""
    for name, tensor in constant_tensors(model.graph):
        if tensor.data_location != tensor.EXTERNAL:
            continue
        file, offset, length = external_file(tensor, path, name)
        where, needed = _kept(path, name, tensor), _byte_count(tensor)
        if length and needed is not None and length != needed:
            raise ModelError(f"{where} as {length} bytes, and its shape {list(tensor.dims)} and type {dtypes.onnx_name(tensor.data_type)} "
                             f"take {needed}")
        size, wanted = os.path.getsize(file), length or needed
        if wanted and size < offset + wanted:
            raise ModelError(f"{where}, which holds {size} bytes, not the {wanted} from offset {offset}")


def _load_external(tensor, path, name):
    """Reads ``tensor``'s external data (the model's own file, :func:`external_file`) into the tensor itself."""
    from onnx import TensorProto

    file, offset, length = external_file(tensor, path, name)
    with open(file, "rb") as f:
        f.seek(offset)
        tensor.raw_data = f.read(length) if length else f.read()
    tensor.data_location = TensorProto.DEFAULT
    del tensor.external_data[:]


def constant_tensors(graph: onnx.GraphProto) -> Iterator[tuple[str, onnx.TensorProto]]:
    """``(tensor name, TensorProto)`` of the initializers and ``Constant`` values of ``graph`` and its subgraphs."""
    for init in graph.initializer:
        yield init.name, init
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            for attribute in node.attribute:
                if attribute.name == "value":
                    yield node.output[0], attribute.t
        for subgraph in subgraphs(node):
            yield from constant_tensors(subgraph)
