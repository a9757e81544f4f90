"""The ``torch.onnx.export(..., dynamo=True)`` translations: ``custom_translation_table`` entries.

Each function takes an ATen op's arguments as the exporter hands them over (graph values, Python
ints, ``SymInt`` as 0-d int64 values) and builds ONNX through onnxscript, inside the exporter's
tracer. What a ``trt_scatter`` node cannot express exactly goes to the exporter's own (stock)
translation of the op, and the ``trt_scatter`` logger says so at debug level.

The exporter does not decompose an op that has a translation, so ``aten.index_copy`` reaches
:func:`index_copy` instead of becoming ``index_put``, and ``aten.slice_scatter`` (what slice
assignment becomes after functionalization) reaches :func:`slice_scatter`. The writes that combine
(``scatter_add``, ``scatter_reduce``, ``index_add``, ``index_put(accumulate=True)``; their in-place
forms after functionalization) become the reduction ops: the stock translations drop ``mean``
(``scatter_reduce(reduce="mean")`` exports as a plain ScatterElements, the last update winning) and refuse
``include_self=False``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from trt_scatter.log import logger
from trt_scatter.ops import DOMAIN, VERSION, register_onnx_schemas
from trt_scatter.torch import writes

if TYPE_CHECKING:
    from collections.abc import Callable

    import torch


def translation_table() -> dict[torch._ops.OpOverload, Callable[..., Any]]:
    """``{torch op overload: translation}`` for ``torch.onnx.export(..., dynamo=True, custom_translation_table=...)``."""
    writes.require_torch()
    import torch

    register_onnx_schemas()  # onnxscript needs the schemas to call the ops
    aten = torch.ops.aten
    return {
        aten.slice_scatter.default: slice_scatter,
        aten.select_scatter.default: select_scatter,
        aten.index_copy.default: index_copy,
        aten.index_fill.int_Scalar: index_fill,
        aten.index_fill.int_Tensor: index_fill,
        aten.index_put.default: index_put,
        aten._unsafe_index_put.default: index_put,
        aten.masked_scatter.default: masked_scatter,
        aten.scatter.src: scatter,
        aten.scatter_add.default: scatter_add,
        aten.scatter_reduce.two: scatter_reduce,
        aten.index_add.default: index_add,
        aten.index_reduce.default: index_reduce,
        aten.scatter.reduce: scatter_with_reduce,
        aten.scatter.value_reduce: scatter_value_with_reduce,
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
        index = _one_index(emitter, index)
    return writes.index_write(emitter, self, index, source, axis, wrap_negative=False)


def index_fill(self, dim, index, value):
    """``aten.index_fill`` (a number or a 0-d tensor): one ScatterUpdate of ``value`` broadcast to the written slices.
    Unlike ``index_copy``, which PyTorch decomposes it into, it takes negative indices, so those are wrapped."""
    if self.shape is not None and len(self.shape) == 0 and dim in (0, -1):  # PyTorch fills 0-d data as one element on dim 0
        emitter = _Emitter()
        row = emitter.op("Unsqueeze", self, emitter.ints([0]))
        row.shape, row.dtype = _ir().Shape([1]), self.dtype
        return emitter.op("Squeeze", index_fill(row, 0, index, value), emitter.ints([0]))
    axis = _axis(dim, self)
    if axis is None or index.shape is None or len(index.shape) > 1:
        raise ValueError(f"trt_scatter.torch: aten.index_fill with dim={dim} for data of rank {None if self.shape is None else len(self.shape)} "
                         f"or an index of rank {None if index.shape is None else len(index.shape)}: PyTorch takes a dim of the data and "
                         "a 0-D or 1-D index")
    emitter = _Emitter()
    integer = index.dtype in (_ir().DataType.INT64, _ir().DataType.INT32)  # other indices go on to the validator's refusal
    wrap = integer and _may_be_negative(index)  # of the index as given: a Reshape's output has no type or constant
    if len(index.shape) == 0:
        index = _one_index(emitter, index)
    if not hasattr(value, "dtype"):  # a Python number
        value = emitter.number(value)
    return writes.fill_write(emitter, self, index, emitter.op("CastLike", value, self), axis, wrap)


def index_put(self, indices, values, accumulate=False):
    """``aten.index_put``: with one integer index tensor, one ScatterUpdate, or with ``accumulate=True`` one
    ScatterNDReduce (along the first axis) or ScatterElementsReduce (a 1-D index along another) that adds; with a batch
    index (``arange`` over the first dimension) and a position index, one CacheScatter (each batch row at its own
    position); with a boolean mask and values that broadcast, a Where (of the sum, with ``accumulate=True``)."""
    ir = _ir()
    tensors = [(position, index) for position, index in enumerate(indices) if index is not None]
    integer = tensors and all(index.dtype in (ir.DataType.INT64, ir.DataType.INT32) for _, index in tensors)
    if len(tensors) == 1 and tensors[0][1].dtype == ir.DataType.BOOL:  # x[mask] = v, x[:, mask] += v: a Where
        written = (writes.masked_accumulate if accumulate else writes.masked_write)(_Emitter(), self, tensors[0][1], values, tensors[0][0])
        if written is not None:
            return written
    if not accumulate and integer and self.shape is not None and len(tensors) == 2 and tensors[0][0] == 0:
        written = writes.batch_position_write(_Emitter(), self, tensors[0][1], tensors[1][1], values, tensors[1][0])
        if written is not None:
            return written
    if not integer or len(tensors) != 1 or self.shape is None:
        return _stock("index_put", "a mask with a value per element, several index tensors (but a batch and a position index), "
                      "or data of unknown rank", self, indices, values, accumulate)
    axis, index = tensors[0]
    emitter = _Emitter()
    data_dims, index_dims = emitter.dims(self), emitter.dims(index)
    target = None if index_dims is None else data_dims[:axis] + index_dims + data_dims[axis + 1 :]
    pieces = [emitter.op("Shape", self, start=0, end=axis), emitter.op("Shape", index), emitter.op("Shape", self, start=axis + 1)]
    updates = writes.expand_to(emitter, values, pieces, target)
    if accumulate:
        written = writes.index_reduce_write(emitter, self, index, updates, axis, "add")
        return written if written is not None else _stock("index_put", "accumulate=True and data of unknown rank",
                                                          self, indices, values, accumulate)
    return writes.index_write(emitter, self, index, updates, axis, wrap_negative=_may_be_negative(index))


def _one_index(emitter, index):
    """A 0-d index as a list of one, with its shape and type (which the writes read: the tracer infers none)."""
    listed = emitter.op("Reshape", index, emitter.ints([1]))
    listed.shape, listed.dtype = _ir().Shape([1]), index.dtype
    return listed


def _may_be_negative(index):
    """Whether an index tensor may hold negative values: computed at run time, or a constant that does."""
    constant = index.const_value
    return constant is None or bool((constant.numpy() < 0).any())


def masked_scatter(self, mask, source):
    """``aten.masked_scatter``: a Where on the mask, each True element taking the next of ``source``'s (no NonZero)."""
    return writes.masked_scatter(_Emitter(), self, mask, source)


def scatter(self, dim, index, src):
    """``aten.scatter.src``: the stock translation (a ScatterElements) of the part of ``src`` that has ``index``'s shape,
    all PyTorch reads of a larger ``src`` (the stock translation gave ScatterElements the whole of it, an invalid node)."""
    shaped = writes.index_shaped(_Emitter(), index, src)
    if shaped is not src:  # the stock translation reads its rank
        shaped.shape, shaped.dtype = index.shape, src.dtype
    return _stock_function("scatter", "src")(self, dim, index, shaped)


def scatter_add(self, dim, index, src):
    """``aten.scatter_add``: one ScatterElementsReduce (add), or ScatterNDReduce where the index is an index list
    broadcast over the other axes (:func:`trt_scatter.torch.writes.scatter_reduce_write`)."""
    axis = _axis(dim, self)
    written = None if axis is None else writes.scatter_reduce_write(_Emitter(), self, axis, index, src, "add", True)
    return written if written is not None else _stock("scatter_add", "data of unknown rank", self, dim, index, src)


def scatter_reduce(self, dim, index, src, reduce, include_self=True):
    """``aten.scatter_reduce.two`` (sum, prod, mean, amax, amin; include_self either way): one reduction node. The
    stock translation drops ``mean`` (it writes a plain ScatterElements) and cannot say ``include_self=False``."""
    axis = _axis(dim, self)
    reduction = writes.REDUCTIONS.get(reduce)
    written = None if axis is None or reduction is None else writes.scatter_reduce_write(_Emitter(), self, axis, index, src, reduction, include_self)
    return written if written is not None else _stock_two("scatter_reduce", f"reduce={reduce!r} or data of unknown rank",
                                                          self, dim, index, src, reduce, include_self)


def index_add(self, dim, index, source, alpha=1):
    """``aten.index_add``: one ScatterNDReduce (add) along the first axis, a ScatterElementsReduce along another, of
    ``alpha * source`` (PyTorch's own translation takes only ``alpha=1``)."""
    axis = _axis(dim, self)
    if axis is None or index.shape is None or len(index.shape) > 1:
        return _stock("index_add", "an index of rank > 1 or data of unknown rank", self, dim, index, source, alpha)
    emitter = _Emitter()
    if len(index.shape) == 0:
        index = _one_index(emitter, index)
    if alpha != 1:
        scale = emitter.number(alpha)
        if source.dtype in (_ir().DataType.INT8, _ir().DataType.UINT8):  # TensorRT has no 8-bit integer arithmetic: in int32
            wide = emitter.op("Cast", source, to=_ir().DataType.INT32)
            source = emitter.op("CastLike", emitter.op("Mul", wide, emitter.op("CastLike", scale, wide)), source)
        else:
            source = emitter.op("Mul", source, emitter.op("CastLike", scale, source))
    return writes.index_reduce_write(emitter, self, index, source, axis, "add")


def index_reduce(self, dim, index, source, reduce, include_self=True):
    """``aten.index_reduce`` (prod, mean, amax, amin; include_self either way), which torch.onnx has no translation
    of: one ScatterNDReduce along the first axis, a ScatterElementsReduce along another, as :func:`index_add`."""
    axis, reduction = _axis(dim, self), writes.REDUCTIONS.get(reduce)
    if axis is None or index.shape is None or len(index.shape) > 1 or reduction is None:
        raise ValueError(f"trt_scatter.torch: aten.index_reduce with reduce={reduce!r}, an index of rank > 1 or data of unknown "
                         "rank: PyTorch's exporters have no translation of it, and trt_scatter's takes a 0-D or 1-D index")
    emitter = _Emitter()
    if len(index.shape) == 0:
        index = _one_index(emitter, index)
    return writes.index_reduce_write(emitter, self, index, source, axis, reduction, include_self)


def scatter_with_reduce(self, dim, index, src, reduce):
    """``aten.scatter.reduce`` (``scatter(dim, index, src, reduce="add"|"multiply")``), which torch.onnx has no
    translation of: :func:`scatter_reduce` with ``"sum"``/``"prod"`` and ``include_self=True``, one reduction node
    (torch.export refuses any other ``reduce`` before a translation runs)."""
    return scatter_reduce(self, dim, index, src, writes.SCATTER_REDUCE[reduce], include_self=True)


def scatter_value_with_reduce(self, dim, index, value, reduce):
    """``aten.scatter.value_reduce`` (a scalar ``value`` for every index): :func:`scatter_with_reduce` of the value
    broadcast to the index's shape."""
    emitter = _Emitter()
    src = emitter.op("Expand", emitter.op("CastLike", emitter.number(value), self), emitter.op("Shape", index))
    return scatter_with_reduce(self, dim, index, src, reduce)


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

    def number(self, value):
        """A Python number as a 0-d constant of NumPy's type for it (int64, float64, bool), for a CastLike to data's type:
        a float32 constant would round 16777217.0 or 0.1 before the cast, and 1e-50 to 0 (False for bool data)."""
        import numpy as np

        return self._op.Constant(value=_ir().tensor(np.asarray(value)))

    def scalar(self, value):
        import numpy as np

        return self._op.Constant(value=_ir().tensor(np.array(value, dtype=np.int64)))

    def vector(self, value):
        return self._op.Reshape(self.int64(value), self.ints([1]))

    def dims(self, value):
        if value.shape is None:
            return None
        return tuple(d if isinstance(d, int) else (d.value if getattr(d, "value", None) is not None else None) for d in value.shape)

    def plugin(self, op_type, inputs, data, **attributes):
        output = getattr(self._trt_scatter, op_type)(*inputs, **attributes, inplace=0)
        output.dtype, output.shape = data.dtype, data.shape  # what ops.py says; the tracer cannot infer a custom op
        return output

    def is_batch_arange(self, value, data):
        import numpy as np

        constant = _constant_of(value)
        dims = self.dims(data)
        if constant is not None:
            return constant.ndim == 1 and dims is not None and isinstance(dims[0], int) and np.array_equal(constant, np.arange(dims[0]))
        producer = value.producer()
        if producer is None or producer.op_type != "Range" or producer.domain not in ("", "ai.onnx"):
            return False
        start, limit, delta = producer.inputs
        if any(_constant_of(v) is None or _constant_of(v).reshape(-1).tolist() != [w] for v, w in ((start, 0), (delta, 1))):
            return False
        return _reads_first_dimension(limit, data)

    def expand_source(self, value):
        producer = value.producer() if value is not None else None
        if producer is None or producer.op_type != "Expand" or producer.domain not in ("", "ai.onnx"):
            return None
        return producer.inputs[0]


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


def _stock_two(name, reason, *args):
    logger.debug("trt_scatter.torch: aten.%s with %s: the stock translation", name, reason)
    return _stock_function(name, "two")(*args)


@functools.lru_cache(maxsize=None)
def _stock_function(name, overload="default"):
    """The exporter's own translation of ``aten.<name>.<overload>`` (from a registry without custom entries)."""
    import torch

    target = getattr(getattr(torch.ops.aten, name), overload)
    decompositions = _stock_registry().get_decomps(target)
    if not decompositions:
        raise NotImplementedError(f"torch.onnx has no translation of aten.{name}")
    return decompositions[0].onnx_function


@functools.lru_cache(maxsize=None)
def _stock_registry():
    from torch.onnx._internal.exporter import _registration

    return _registration.ONNXRegistry.from_torchlib()


def _constant_of(value):
    """A value's constant (an array), through the ``CastLike``/``Cast`` the exporter puts on Python numbers; or None."""
    for _ in range(3):
        if value is None:
            return None
        if value.const_value is not None:
            return value.const_value.numpy()
        producer = value.producer()
        if producer is None:
            return None
        if producer.op_type == "Constant" and "value" in producer.attributes:
            return producer.attributes["value"].value.numpy()
        if producer.op_type not in ("CastLike", "Cast"):
            return None
        value = producer.inputs[0]
    return None


def _reads_first_dimension(value, data):
    """True if ``value`` is data's first dimension: ``Squeeze(Shape(data, start=0, end=1))``, or ``Gather(Shape(data), 0)``,
    through Casts and Reshapes."""
    producer = value.producer()
    while producer is not None and producer.op_type in ("Cast", "CastLike", "Squeeze", "Reshape"):
        if producer.op_type == "Squeeze":
            shape = producer.inputs[0].producer()
            return (shape is not None and shape.op_type == "Shape" and shape.inputs[0] is data
                    and _attribute(shape, "start", 0) == 0 and _attribute(shape, "end", None) == 1)  # fmt: skip
        producer = producer.inputs[0].producer()
    if producer is None or producer.op_type != "Gather":
        return False
    shape, index = producer.inputs[0].producer(), _constant_of(producer.inputs[1])
    return shape is not None and shape.op_type == "Shape" and shape.inputs[0] is data and _attribute(shape, "start", 0) == 0 and index is not None and index.reshape(-1).tolist() == [0]


def _attribute(node, name, default):
    attribute = node.attributes.get(name)
    return default if attribute is None else attribute.value
