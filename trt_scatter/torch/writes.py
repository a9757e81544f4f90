"""The writes PyTorch's scatter-like ops become, written once for both exporters.

A slice write (``slice_scatter``, slice assignment, ``select_scatter``) becomes one
``trt_scatter::SliceScatter`` node; a write of whole slices at an index list (``index_copy``,
``index_put`` with one integer index tensor) one ``trt_scatter::ScatterUpdate`` node; a write of each
batch row at its own position (``cache[arange(B), :, pos] = k``, ``index_put`` with a batch index and a
position index) one ``trt_scatter::CacheScatter`` node (TensorScatter-24); a write that combines
(``scatter_add``, ``scatter_reduce``, ``index_add``, ``index_put(accumulate=True)``) one
``trt_scatter::ScatterNDReduce`` node where the index addresses whole rows along the first axis (an
index list, or PyTorch's index broadcast over the other axes, as PyG's aggregations write it: the
kernel then sorts rows, not elements) and one ``trt_scatter::ScatterElementsReduce`` node otherwise;
with the node inputs :mod:`trt_scatter.ops` prescribes. A masked write (``x[mask] = v``,
``masked_scatter``) becomes a ``Where``. The graph is built through an *emitter*, a small
object each exporter implements over its own graph API (onnxscript for ``dynamo=True``,
TorchScript's ``GraphContext`` for ``dynamo=False``):

=======================================  ==================================================
``emitter.op(op_type, *inputs, **attrs)``  one standard ONNX node (attributes as Python values)
``emitter.ints(values)``                   a 1-D int64 constant
``emitter.scalar(value)``                  a 0-d int64 constant
``emitter.vector(value)``                  a 0-d or 1-element int tensor as 1-D int64
``emitter.int64(value)``                   an int tensor as int64 (a Cast only where it is not)
``emitter.plugin(op_type, inputs, data,``  the ``trt_scatter`` node, typed like ``data``, with the
``**attributes)``                           op's attributes (ints, strings) and ``inplace=0``
``emitter.is_batch_arange(value, data)``   True if ``value`` is ``[0, 1, ..., B-1]`` for B data's first
                                           dimension: a constant (B static) or ``Range(0, B, 1)``, B read
                                           from ``Shape(data)``
``emitter.dims(value)``                    the static shape: a tuple of ints, symbolic names (str)
                                           and ``None`` (not known), or ``None`` if the rank is not
``emitter.expand_source(value)``           the input of the Expand that made ``value``, or ``None``
=======================================  ==================================================

Parameters here are Python ints or graph values (run-time integers, ``SymInt`` in the FX graph);
PyTorch's slice semantics (negative bounds count from the end, clamping, steps > 0) are
SliceScatter-15's for positive steps, so bounds pass through unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    import onnx_ir
    import torch

    #: a graph value of either exporter (onnxscript's for dynamo=True, TorchScript's for dynamo=False)
    _Value = onnx_ir.Value | torch._C.Value

INT64_MAX = 2**63 - 1
#: PyTorch's reduce names (scatter_reduce, scatter's "add") -> the reduction ops' ``reduction`` attribute
REDUCTIONS = {"sum": "add", "add": "add", "prod": "mul", "amax": "max", "amin": "min", "mean": "mean"}
SCATTER_REDUCE = {"add": "sum", "multiply": "prod"}  #: scatter's reduce= as scatter_reduce's (include_self=True)


def require_torch() -> None:
    """Imports PyTorch and onnxscript, or raises one ImportError that says which extra installs them
    (they are not core dependencies of trt-scatter)."""
    try:
        import onnxscript  # noqa: F401
        import torch  # noqa: F401
    except ImportError as err:
        raise ImportError(f"trt_scatter.torch needs PyTorch and onnxscript ({err}): pip install 'trt-scatter[torch]'") from None


def slice_write(emitter: Any, data: _Value, updates: _Value, slices: Sequence[tuple[int, int | _Value | None, int | _Value | None, int]]) -> _Value:
    """Writes ``updates`` into ``data`` at ``slices``: ``[(axis, start, stop, step), ...]`` on distinct axes in [0, rank).

    ``start``/``stop`` may be ``None`` (0 / the end); ``step`` must be a positive int. Slices that
    cover their whole axis are dropped; when none is left the write is ``updates`` itself (an Identity).
    """
    dims = emitter.dims(data)
    written = [(axis, start, stop, step) for axis, start, stop, step in slices if not _whole_axis(dims, axis, start, stop, step)]
    if not written:
        return emitter.op("Identity", updates)
    starts = _vector(emitter, [0 if start is None else start for _, start, _, _ in written])
    stops = _vector(emitter, [INT64_MAX if stop is None else stop for _, _, stop, _ in written])
    steps = _vector(emitter, [step for _, _, _, step in written])
    axes = emitter.ints([axis for axis, _, _, _ in written])
    return emitter.plugin("SliceScatter", [data, updates, starts, stops, steps, axes], data)


def select_slice(index: int) -> tuple[int, int]:
    """``(start, stop)`` of the one-element slice that selecting ``index`` (an int) takes, negative indices included."""
    return index, (index + 1 if index != -1 else INT64_MAX)


def index_write(emitter: Any, data: _Value, indices: _Value, updates: _Value, axis: int, wrap_negative: bool) -> _Value:
    """Writes the slices ``updates`` of ``data`` along ``axis`` at ``indices`` (ScatterUpdate-3).

    ``updates`` must already have the shape ``data.shape[:axis] + indices.shape + data.shape[axis+1:]``.
    ScatterUpdate takes indices in [0, s-1] only; ``wrap_negative`` adds s to negative ones first
    (PyTorch's advanced indexing reads -1 as the last element). Indices out of [-s, s-1] stay out
    of range, so the plugin skips and counts them instead of writing somewhere else.
    """
    if wrap_negative:
        indices = wrapped(emitter, indices, data, axis)
    return emitter.plugin("ScatterUpdate", [data, indices, updates, emitter.ints([axis])], data)


def batch_position_write(emitter: Any, data: _Value, batch_index: _Value, positions: _Value, values: _Value, axis: int) -> _Value | None:
    """Writes each batch row ``b`` of ``data`` at position ``positions[b]`` along ``axis`` (TensorScatter-24, linear), or
    returns None where the indices are not that write: ``data[arange(B), ..., positions, ...] = values`` with the batch
    index an ``arange`` over data's first dimension and ``positions`` a 1-D integer tensor of one index per row.

    PyTorch's advanced indexing gives ``values`` the shape ``(B,) + data.shape[1:axis] + data.shape[axis+1:]`` (the
    broadcast index dimension first, whether the two index tensors are adjacent or not), to which they are
    broadcast first; the written entry's axis is then put back, of size 1. Negative positions count from the end
    (PyTorch's indexing), so they are wrapped.
    """
    dims, index_dims = emitter.dims(data), emitter.dims(positions)
    if dims is None or index_dims is None or len(index_dims) != 1 or not 1 <= axis < len(dims) or not emitter.is_batch_arange(batch_index, data):
        return None
    if isinstance(index_dims[0], int) and isinstance(dims[0], int) and index_dims[0] not in (dims[0], 1):
        return None  # several positions for a batch of 1, which PyTorch writes all into its row: not this write
    if index_dims[0] is None or index_dims[0] != dims[0]:  # a length not proven the batch's: PyTorch broadcasts one position
        # to every row. Expand broadcasts both ways: several positions for a batch of 1 (PyTorch writes them all into its
        # row) stay several, which the reference refuses and the plugin skips and counts, as for any run-time shape it checks
        positions = emitter.op("Expand", positions, emitter.op("Shape", data, start=0, end=1))
    target = (dims[0],) + dims[1:axis] + dims[axis + 1 :]
    pieces = [emitter.op("Shape", positions), emitter.op("Shape", data, start=1, end=axis), emitter.op("Shape", data, start=axis + 1)]
    values = expand_to(emitter, values, pieces, target)
    update = emitter.op("Unsqueeze", values, emitter.ints([axis]))
    return emitter.plugin("CacheScatter", [data, update, wrapped(emitter, positions, data, axis)], data, axis=axis, mode="linear")


def fill_write(emitter: Any, data: _Value, indices: _Value, value: _Value, axis: int, wrap_negative: bool) -> _Value:
    """``index_fill``: the scalar ``value`` (of data's type) written into the slices of ``data`` at the 1-D ``indices``
    along ``axis``, as :func:`index_write` of ``value`` broadcast to those slices."""
    pieces = [emitter.op("Shape", data, start=0, end=axis), emitter.op("Shape", indices), emitter.op("Shape", data, start=axis + 1)]
    return index_write(emitter, data, indices, expand_to(emitter, value, pieces, None), axis, wrap_negative)


def wrapped(emitter: Any, indices: _Value, data: _Value, axis: int) -> _Value:
    """``indices`` as int64 with the negative ones in [-s, -1] counted from the end of data's ``axis`` (of size s), as
    PyTorch's indexing reads them. One below -s stays as it was, so that the rule it breaks names the user's value
    (adding s once would turn -7 into a -1 that the user never gave)."""
    indices = emitter.int64(indices)  # the type of the dimension it adds
    size = emitter.op("Gather", emitter.op("Shape", data), emitter.scalar(axis), axis=0)  # 0-d: any index rank
    shifted = emitter.op("Add", indices, size)
    return emitter.op("Where", emitter.op("Less", shifted, emitter.scalar(0)), indices,
                      emitter.op("Where", emitter.op("Less", indices, emitter.scalar(0)), shifted, indices))


def masked_write(emitter: Any, data: _Value, mask: _Value, values: _Value, position: int = 0) -> _Value | None:
    """``data[mask] = values`` with a boolean ``mask`` over data's axes from ``position`` on (``x[:, mask]``: 1) and
    ``values`` the same at every masked element: ``Where(mask, values, data)``, no NonZero (which gives data-dependent
    shapes, and which TensorRT-RTX lacks); None for values of one element per True (a source)."""
    operands = _masked_operands(emitter, data, mask, values, position)
    return None if operands is None else emitter.op("Where", operands[0], emitter.op("CastLike", operands[1], data), data)


def masked_accumulate(emitter: Any, data: _Value, mask: _Value, values: _Value, position: int = 0) -> _Value | None:
    """``data[mask] += values`` (``index_put_((mask,), values, accumulate=True)``), the mask and values as
    :func:`masked_write` takes them: ``Where(mask, data + values, data)``, no NonZero; None for values of one row per
    masked element."""
    operands = _masked_operands(emitter, data, mask, values, position)
    return None if operands is None else emitter.op("Where", operands[0], emitter.op("Add", data, emitter.op("CastLike", operands[1], data)), data)


def _masked_operands(emitter, data, mask, values, position):
    """``(mask, values)`` that broadcast to data's shape for ``Where``: the mask placed on data's axes ``position``,
    ``position + 1``, ...; values as PyTorch broadcasts them to the indexed shape ``dims[:position] + (count,) + rest``,
    with the masked elements' axis, which must be 1 (the same value at every masked element), spread over the mask's
    axes. None where values vary along the masked elements or a rank is not known."""
    dims, mask_dims, value_dims = emitter.dims(data), emitter.dims(mask), emitter.dims(values)
    if dims is None or mask_dims is None or value_dims is None or not mask_dims or position + len(mask_dims) > len(dims):
        return None
    rest = len(dims) - position - len(mask_dims)
    extra = len(value_dims) - (position + 1 + rest)  # PyTorch drops values' leading 1s past the indexed shape's rank
    if extra > 0:
        if any(d != 1 for d in value_dims[:extra]):
            return None
        values = emitter.op("Reshape", values, emitter.op("Shape", values, start=extra))
        value_dims = value_dims[extra:]
    counted = len(value_dims) - rest - 1  # values' axis on the masked elements, if they reach it
    if counted >= 0:
        if value_dims[counted] != 1:
            return None
        if len(mask_dims) > 1:
            values = emitter.op("Unsqueeze", values, emitter.ints(list(range(counted + 1, counted + len(mask_dims)))))
    spread = [*range(position), *range(position + len(mask_dims), len(dims))]
    if spread:
        mask = emitter.op("Unsqueeze", mask, emitter.ints(spread))
    return mask, values


def masked_scatter(emitter: Any, data: _Value, mask: _Value, source: _Value) -> _Value:
    """``data.masked_scatter(mask, source)``: the True elements of ``mask`` (broadcast to data) take ``source``'s elements
    in order, as ``Where(mask, source_flat[max(CumSum(mask) - 1, 0)], data)``: no NonZero."""
    shape = emitter.op("Shape", data)
    mask = emitter.op("Expand", mask, shape)
    ranks = emitter.op("CumSum", emitter.op("Cast", emitter.op("Reshape", mask, emitter.ints([-1])), to=7), emitter.scalar(0))
    rows = emitter.op("Max", emitter.op("Sub", ranks, emitter.ints([1])), emitter.ints([0]))
    taken = emitter.op("Gather", emitter.op("Reshape", source, emitter.ints([-1])), rows, axis=0)
    return emitter.op("Where", mask, emitter.op("Reshape", taken, shape), data)


def scatter_reduce_write(emitter: Any, data: _Value, axis: int, index: _Value, src: _Value, reduction: str, include_self: bool | int) -> _Value | None:
    """``scatter_reduce``/``scatter_add``: ``src`` combined into ``data`` at ``index`` along ``axis`` (PyTorch's
    ``reduce`` already mapped through :data:`REDUCTIONS`); ``None`` where the ranks are not known.

    PyTorch reads only the part of ``src`` that has index's shape: a Slice takes it where the shapes may differ.
    Where ``index`` is an index list broadcast over data's other axes (:func:`_index_rows`), the write is a
    ScatterNDReduce of rows; else a ScatterElementsReduce.
    """
    data_dims, index_dims, src_dims = emitter.dims(data), emitter.dims(index), emitter.dims(src)
    if data_dims is None or index_dims is None or src_dims is None or not len(data_dims) == len(index_dims) == len(src_dims):
        return None
    updates = index_shaped(emitter, index, src)
    attributes = {"reduction": reduction, "include_self": int(bool(include_self))}
    rows = _index_rows(emitter, index, axis, data_dims, index_dims)
    if rows is not None:
        return emitter.plugin("ScatterNDReduce", [data, rows, updates], data, **attributes)
    return emitter.plugin("ScatterElementsReduce", [data, index, updates], data, axis=axis, **attributes)


def index_shaped(emitter: Any, index: _Value, src: _Value) -> _Value:
    """The part of ``src`` that has ``index``'s shape, which is all PyTorch's scatters read of a larger ``src``: a Slice
    where the shapes may differ, ``src`` itself where they are known to be equal or the ranks are unknown or differ."""
    index_dims, src_dims = emitter.dims(index), emitter.dims(src)
    if index_dims is None or src_dims is None or len(index_dims) != len(src_dims) or all(_known_equal(a, b) for a, b in zip(index_dims, src_dims)):
        return src
    rank = len(src_dims)
    return emitter.op("Slice", src, emitter.ints([0] * rank), emitter.op("Shape", index), emitter.ints(list(range(rank))))


def index_reduce_write(emitter: Any, data: _Value, indices: _Value, updates: _Value, axis: int, reduction: str, include_self: bool | int = 1) -> _Value | None:
    """``index_add`` and ``index_put(accumulate=True)``: the slices ``updates`` (shape ``data.shape[:axis] +
    indices.shape + data.shape[axis+1:]``) combined into ``data`` at ``indices`` along ``axis``; ``None`` where the
    ranks are not known off the first axis. Negative indices count from
    the end, as in ``index_put`` and the reduction ops (eager ``index_add``, ``scatter_add`` and ``index_reduce`` refuse
    them: the exported model takes more than they do).

    Along the first axis: ScatterNDReduce with ``indices[..., None]`` as its index rows (any rank of indices).
    Along another: ScatterElementsReduce with the indices (of any rank: flattened, and updates' index dimensions with
    them) broadcast to updates' shape.
    """
    attributes = {"reduction": reduction, "include_self": int(bool(include_self))}
    if axis == 0:
        rows = emitter.op("Unsqueeze", indices, emitter.ints([-1]))
        return emitter.plugin("ScatterNDReduce", [data, rows, updates], data, **attributes)
    data_dims, index_dims = emitter.dims(data), emitter.dims(indices)
    if data_dims is None or index_dims is None:
        return None
    if len(index_dims) != 1:  # the indices in order as one list, and updates' index dimensions as one
        count = emitter.vector(emitter.op("Size", indices))
        updates = emitter.op("Reshape", updates, emitter.op("Concat", emitter.op("Shape", updates, start=0, end=axis), count,
                                                             emitter.op("Shape", updates, start=axis + len(index_dims)), axis=0))
        indices = emitter.op("Reshape", indices, emitter.ints([-1]))
    shape = [1] * axis + [-1] + [1] * (len(data_dims) - axis - 1)
    expanded = emitter.op("Expand", emitter.op("Reshape", indices, emitter.ints(shape)), emitter.op("Shape", updates))
    return emitter.plugin("ScatterElementsReduce", [data, expanded, updates], data, axis=axis, **attributes)


def _index_rows(emitter, index, axis, data_dims, index_dims):
    """For ``index`` = an index list ``e`` of shape (E, 1, ..., 1) expanded over data's other axes (PyTorch's
    ``index.view(-1, 1).expand_as(src)``) along axis 0: ``e`` as (E, 1) index rows, else ``None``. Every element
    of a row then has the same target row, so ScatterNDReduce of rows computes the same values."""
    source = emitter.expand_source(index) if axis == 0 else None
    source_dims = emitter.dims(source) if source is not None else None
    if source_dims is None or len(source_dims) != len(index_dims) or any(d != 1 for d in source_dims[1:]):
        return None
    if not _known_equal(source_dims[0], index_dims[0]) or not all(_known_equal(a, b) for a, b in zip(index_dims[1:], data_dims[1:])):
        return None  # a broadcast along the axis too, or a write of part of each row
    return source if len(source_dims) == 2 else emitter.op("Reshape", source, emitter.ints([-1, 1]))


def _known_equal(a, b):
    """Dimensions known to be equal: the same int, or the same symbolic name."""
    return a is not None and a == b


def expand_to(emitter: Any, values: _Value, shape_pieces: Sequence[_Value], target_dims: Sequence[int | str | None] | None) -> _Value:
    """``values`` broadcast to the shape ``Concat(shape_pieces)``, unless its static shape already is ``target_dims``."""
    if target_dims is not None and emitter.dims(values) == tuple(target_dims) and None not in target_dims:
        return values
    return emitter.op("Expand", values, emitter.op("Concat", *shape_pieces, axis=0))


def _whole_axis(dims, axis, start, stop, step):
    if step != 1 or not isinstance(start, (int, type(None))) or not isinstance(stop, (int, type(None))):
        return False
    size = dims[axis] if dims is not None else None
    return start in (None, 0) and (stop is None or stop >= INT64_MAX // 2 or (isinstance(size, int) and stop >= size))


def _vector(emitter, values):
    """One 1-D int64 tensor of ``values`` (ints and run-time integers mixed): a constant when all are ints."""
    if all(isinstance(v, int) for v in values):
        return emitter.ints(values)
    pieces = [emitter.ints([v]) if isinstance(v, int) else emitter.vector(v) for v in values]
    return pieces[0] if len(pieces) == 1 else emitter.op("Concat", *pieces, axis=0)
