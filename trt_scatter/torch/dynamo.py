"""The ``torch.onnx.export(..., dynamo=True)`` translations: ``custom_translation_table`` entries.

Each function takes an ATen op's arguments as the exporter hands them over (graph values, Python
ints, ``SymInt`` as 0-d int64 values) and builds ONNX through onnxscript, inside the exporter's
tracer. What a ``trt_scatter`` node cannot express exactly goes to the exporter's own (stock)
translation of the op, and the ``trt_scatter`` logger says so at debug level.

The exporter does not decompose an op that has a translation, so ``aten.index_copy`` reaches
:func:`index_copy` instead of becoming ``index_put``, and ``aten.slice_scatter`` (what slice
assignment becomes after functionalization) reaches :func:`slice_scatter`.
"""

import functools

from trt_scatter.log import logger
from trt_scatter.ops import DOMAIN, VERSION, register_onnx_schemas
from trt_scatter.torch import writes


def translation_table():
    """``{torch op overload: translation}`` for ``torch.onnx.export(..., dynamo=True, custom_translation_table=...)``."""
    writes.require_torch()
    import torch

    register_onnx_schemas()  # onnxscript needs the schemas to call the ops
    aten = torch.ops.aten
    return {
        aten.slice_scatter.default: slice_scatter,
        aten.select_scatter.default: select_scatter,
        aten.index_copy.default: index_copy,
        aten.index_put.default: index_put,
        aten._unsafe_index_put.default: index_put,
    }


def slice_scatter(self, src, dim=0, start=None, end=None, step=1):
    """``aten.slice_scatter``: one SliceScatter (an Identity for a slice of the whole axis)."""
    axis = _axis(dim, self)
    if axis is None or not (isinstance(step, int) and step > 0):
        return _stock("slice_scatter", "a step that is not a positive int, or data of unknown rank", self, src, dim, start, end, step)
    return writes.slice_write(_Emitter(), self, _unbroadcast(src, self, axis), [(axis, start, end, step)])


def _unbroadcast(src, data, axis):
    """``src`` without the Expand that slice assignment puts on the values (PyTorch's ``copy`` broadcasts them to
    the slice), where it can only be an identity: static shapes, the values' dimensions equal data's off the
    sliced axis and not 1 on it (so no broadcast, only equal or an error). The Expand's shape comes from the
    slice, whose start (a KV cache's position) would otherwise set shapes in the TensorRT network."""
    producer = src.producer()
    if producer is not None and producer.op_type == "CastLike" and producer.inputs[0].dtype == src.dtype:
        producer = producer.inputs[0].producer()  # PyTorch's copy casts to the slice's type, here the same
    if producer is None or producer.op_type != "Expand" or producer.domain not in ("", "ai.onnx"):
        return src
    values = producer.inputs[0]
    emitter = _Emitter()
    values_dims, data_dims = emitter.dims(values), emitter.dims(data)
    if values_dims is None or data_dims is None or len(values_dims) != len(data_dims):
        return src
    if not all(isinstance(d, int) for d in values_dims + data_dims):
        return src
    if values_dims[axis] == 1 or any(v != d for i, (v, d) in enumerate(zip(values_dims, data_dims)) if i != axis):
        return src
    return values


def select_scatter(self, src, dim, index):
    """``aten.select_scatter``: a SliceScatter of one element along ``dim`` (src gets that axis back, of size 1)."""
    axis = _axis(dim, self)
    if axis is None or not isinstance(index, int):
        return _stock("select_scatter", "an index known only at run time, or data of unknown rank", self, src, dim, index)
    emitter = _Emitter()
    start, stop = writes.select_slice(index)
    updates = emitter.op("Unsqueeze", src, emitter.ints([axis]))
    return writes.slice_write(emitter, self, updates, [(axis, start, stop, 1)])


def index_copy(self, dim, index, source):
    """``aten.index_copy``: one ScatterUpdate. PyTorch refuses negative indices here, so none are wrapped."""
    axis = _axis(dim, self)
    if axis is None or index.shape is None or len(index.shape) > 1:
        logger.debug("trt_scatter.torch: aten.index_copy with data of unknown rank or an index of rank > 1: the stock translation (index_put)")
        return _stock_function("index_put")(self, [None] * (axis or 0) + [index], source, False)
    emitter = _Emitter()
    if len(index.shape) == 0:
        index = emitter.op("Reshape", index, emitter.ints([1]))
    return writes.index_write(emitter, self, index, source, axis, wrap_negative=False)


def index_put(self, indices, values, accumulate=False):
    """``aten.index_put`` with one integer index tensor and ``accumulate=False``: one ScatterUpdate."""
    ir = _ir()
    tensors = [(position, index) for position, index in enumerate(indices) if index is not None]
    integer = len(tensors) == 1 and tensors[0][1].dtype in (ir.DataType.INT64, ir.DataType.INT32)
    if accumulate or not integer or self.shape is None:
        return _stock("index_put", "accumulate=True, a mask, several index tensors or data of unknown rank", self, indices, values, accumulate)
    axis, index = tensors[0]
    emitter = _Emitter()
    data_dims, index_dims = emitter.dims(self), emitter.dims(index)
    target = None if index_dims is None else data_dims[:axis] + index_dims + data_dims[axis + 1 :]
    pieces = [emitter.op("Shape", self, start=0, end=axis), emitter.op("Shape", index), emitter.op("Shape", self, start=axis + 1)]
    updates = writes.expand_to(emitter, values, pieces, target)
    constant = index.const_value
    wrap = constant is None or (constant.numpy() < 0).any()
    return writes.index_write(emitter, self, index, updates, axis, wrap_negative=wrap)


class _Emitter:
    """:mod:`.writes`' emitter over onnxscript (the exporter's tracer records the calls)."""

    def __init__(self):
        import onnxscript

        self._op = onnxscript.opset18
        self._trt_scatter = onnxscript.values.Opset(DOMAIN, VERSION)

    def op(self, op_type, *inputs, **attributes):
        return getattr(self._op, op_type)(*inputs, **attributes)

    def ints(self, values):
        import numpy as np

        ir = _ir()

        return self._op.Constant(value=ir.tensor(np.array(values, dtype=np.int64)))

    def int64(self, value):
        ir = _ir()
        return value if value.dtype == ir.DataType.INT64 else self._op.Cast(value, to=ir.DataType.INT64)

    def scalar(self, value):
        import numpy as np

        return self._op.Constant(value=_ir().tensor(np.array(value, dtype=np.int64)))

    def vector(self, value):
        return self._op.Reshape(self.int64(value), self.ints([1]))

    def dims(self, value):
        if value.shape is None:
            return None
        return tuple(d if isinstance(d, int) else (d.value if getattr(d, "value", None) is not None else None) for d in value.shape)

    def plugin(self, op_type, inputs, data):
        output = getattr(self._trt_scatter, op_type)(*inputs, inplace=0)
        output.dtype, output.shape = data.dtype, data.shape  # what ops.py says; the tracer cannot infer a custom op
        return output


def _ir():
    try:
        import onnx_ir
    except ImportError:  # onnxscript before onnx_ir became a package of its own
        from onnxscript import ir as onnx_ir
    return onnx_ir


def _axis(dim, data):
    if data.shape is None or not isinstance(dim, int):
        return None
    rank = len(data.shape)
    return dim + rank if -rank <= dim < 0 else dim if 0 <= dim < rank else None


def _stock(name, reason, *args):
    logger.debug("trt_scatter.torch: aten.%s with %s: the stock translation", name, reason)
    return _stock_function(name)(*args)


@functools.lru_cache(maxsize=None)
def _stock_function(name):
    """The exporter's own translation of ``aten.<name>.default`` (from a registry without custom entries)."""
    import torch

    target = getattr(torch.ops.aten, name).default
    decompositions = _stock_registry().get_decomps(target)
    if not decompositions:
        raise NotImplementedError(f"torch.onnx has no translation of aten.{name}")
    return decompositions[0].onnx_function


@functools.lru_cache(maxsize=None)
def _stock_registry():
    from torch.onnx._internal.exporter import _registration

    return _registration.ONNXRegistry.from_torchlib()
