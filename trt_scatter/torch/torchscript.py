"""The ``torch.onnx.export(..., dynamo=False)`` (TorchScript) symbolics.

:func:`register_symbolics` puts them in the TorchScript exporter's registry for opsets
:data:`OPSETS`, ahead of the stock ones, which each falls back to (saying so at debug level)
for what a ``trt_scatter`` node cannot express exactly:

- ``aten::slice_scatter`` and ``aten::select_scatter``: one SliceScatter (the stock exporter
  has no translation for either);
- ``aten::index_copy``: one ScatterUpdate; ``aten::index_fill``, and ``aten::index_put`` with one integer index
  tensor and ``accumulate=False``: one ScatterUpdate, negative indices wrapped first;
- ``aten::scatter_add``, ``aten::scatter_reduce`` (sum, prod, mean, amax, amin, include_self either way),
  ``aten::scatter`` with ``reduce="add"|"multiply"`` (the stock symbolic cannot translate it),
  ``aten::index_add``, ``aten::index_reduce`` (no stock symbolic), ``aten::index_put`` with ``accumulate=True``: one
  ScatterNDReduce or ScatterElementsReduce (:mod:`.writes`). The stock symbolics refuse ``mean``, ``include_self=False``
  and ``index_add`` with repeated indices, and add a repeated ``index_put`` index once;
- slice assignment (``x[:, a:b] = y``, ``cache[:, :, pos:pos + t] = new``, ``x[:, 3] = y``,
  ``x[:, idx] = y``): the exporter turns ``aten::slice``/``aten::select`` followed by an in-place
  write into an ``onnx::Placeholder`` whose sub-block holds that chain; its symbolic here reads the
  chain and writes one SliceScatter over all the sliced and selected axes (or one ScatterUpdate),
  where the stock one builds a full coordinate tensor for a ScatterND. The registry has no public
  entry for ``onnx::Placeholder``, so this one uses the exporter's internal registry.

Call ``torch.onnx.export(..., dynamo=False, custom_opsets={"trt_scatter": 1})`` in between, or
use :func:`trt_scatter.torch.export`, which does both.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from typing import TYPE_CHECKING

from trt_scatter.log import first_line, logger
from trt_scatter.ops import DOMAIN
from trt_scatter.torch import writes

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    import torch
    from torch.onnx._internal.torchscript_exporter.jit_utils import GraphContext


def _max_opset():
    try:
        from torch.onnx import _constants

        return _constants.ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET
    except (ImportError, AttributeError):
        return 20


OPSETS = range(13, _max_opset() + 1)  #: target opsets the symbolics serve (Unsqueeze takes its axes as an input from 13; below, the stock ones)

_stock = {}  # (name, opset) -> the function registered before ours (None: the exporter has none)
_refusals: list[str] | None = None  # inside refusals_after_export: what the symbolics could not translate, in order


@contextlib.contextmanager
def refusals_after_export() -> Iterator[None]:
    """Raises the first write the symbolics refused once the export inside is done, as one ValueError: where a
    symbolic raises, the TorchScript exporter prints its whole graph before the error. A failure of the export itself
    is one ValueError line too, chained to PyTorch's error."""
    global _refusals
    _refusals = refusals = []
    also = ""
    try:
        yield
    except Exception as err:
        if not refusals:
            raise ValueError(f"trt_scatter.torch.export: PyTorch's TorchScript exporter failed: {type(err).__name__}: {first_line(err)} "
                             "(dynamo=True exports with PyTorch's dynamo exporter)") from err
        also = f"; the export also failed: {type(err).__name__}: {first_line(err)}"  # maybe on the data left unwritten, maybe not
    finally:
        _refusals = None
    if refusals:
        raise ValueError(refusals[0] + also) from None


@contextlib.contextmanager
def onnx_log_as_asked() -> Iterator[None]:
    """The TorchScript exporter's ONNX log on during the export inside only where its ``verbose=True`` asks for it (or
    it was on before), and after the export as it was before. PyTorch's ``setup_onnx_logging`` turns it on for every
    export and leaves it on (it reads the function that says whether the log is on, not its answer), after which each
    failed export printed the whole TorchScript graph ahead of its one line."""
    import torch

    try:
        from torch.onnx._internal.torchscript_exporter import utils
    except ImportError:  # another PyTorch: its own logging, the state restored after
        utils = None
    was_on = torch._C._jit_is_onnx_log_enabled()

    @contextlib.contextmanager
    def setup_onnx_logging(verbose):
        torch._C._jit_set_onnx_log_enabled(was_on or bool(verbose))
        yield

    swapped = utils is not None and hasattr(utils, "setup_onnx_logging")
    if swapped:
        original, utils.setup_onnx_logging = utils.setup_onnx_logging, setup_onnx_logging
    try:
        yield
    finally:
        if swapped:
            utils.setup_onnx_logging = original
        torch._C._jit_set_onnx_log_enabled(was_on)


@contextlib.contextmanager
def removed_mutations() -> Iterator[list[str]]:
    """The TorchScript exporter's warnings inside the block that it removed an in-place write (its words, as a list);
    every warning is given on as it came. It says so of a copy into a view that it cannot translate
    (``x.narrow(...).copy_(y)``: the write is lost) and, in the same words, of a write into an input that a symbolic
    has translated (``x[0] = y``: the write is kept), so the words alone do not say which."""
    removed = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield removed
    for warning in caught:
        said = str(warning.message)
        if _REMOVED_MUTATION in said:
            removed.append(said.split(" (Triggered internally", 1)[0])
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno, source=warning.source)


_REMOVED_MUTATION = "Removing mutation from node"  #: the TorchScript exporter's words for a write it removed


def _refuse(message: str, data: torch._C.Value) -> torch._C.Value:
    """A write the symbolics cannot translate: raised here where ``torch.onnx.export`` called them directly, kept for
    :func:`refusals_after_export` (``data`` passed on unwritten meanwhile) inside it."""
    if _refusals is None:
        raise ValueError(message)
    _refusals.append(message)
    return data


def register_symbolics() -> None:
    """Registers the symbolics for every opset in :data:`OPSETS` (idempotent)."""
    writes.require_torch()
    registry = _registry()
    for version in range(7, OPSETS[-1] + 1):  # the stock symbolics register when their module is imported
        try:
            _exporter_module(f"symbolic_opset{version}")
        except ImportError:
            pass
    new = [(name, opset) for name in _SYMBOLICS for opset in OPSETS if (name, opset) not in _stock]
    for name, opset in new:  # all before registering any: a lookup for opset n finds what is registered for n-1
        group = registry.get_function_group(name)
        _stock[(name, opset)] = group.get(opset) if group is not None else None
    for name, opset in new:
        registry.register(name, opset, functools.partial(_SYMBOLICS[name], stock=_stock_caller(name, opset)), custom=True)


def unregister_symbolics() -> None:
    """Removes what :func:`register_symbolics` registered; the stock symbolics serve again."""
    registry = _registry()
    for name, opset in list(_stock):
        registry.unregister(name, opset)
        del _stock[(name, opset)]
    for name in _SYMBOLICS:  # a group left empty (no stock symbolic) would make the exporter fail on min([])
        group = registry.get_function_group(name)
        if group is not None and not len(getattr(group, "_functions", (None,))):
            getattr(registry, "_registry", {}).pop(name, None)


def slice_scatter(g: GraphContext, self, src: torch._C.Value, dim: torch._C.Value, start: torch._C.Value, end: torch._C.Value, step: torch._C.Value, *, stock: Callable[..., torch._C.Value]) -> torch._C.Value:
    axis, step = _axis(self, _const(dim)), _const(step)
    if axis is None or not (isinstance(step, int) and step > 0):
        return stock(g, "a step that is not a positive int, or data of unknown rank", self, src, dim, start, end, step)
    return writes.slice_write(_Emitter(g), self, src, [(axis, _const(start), _const(end), step)])


def select_scatter(g: GraphContext, self, src: torch._C.Value, dim: torch._C.Value, index: torch._C.Value, *, stock: Callable[..., torch._C.Value]) -> torch._C.Value:
    axis, index = _axis(self, _const(dim)), _const(index)
    if axis is None or not isinstance(index, int):
        return stock(g, "an index known only at run time, or data of unknown rank", self, src, dim, index)
    emitter = _Emitter(g)
    start, stop = writes.select_slice(index)
    return writes.slice_write(emitter, self, emitter.op("Unsqueeze", src, emitter.ints([axis])), [(axis, start, stop, 1)])


def index_copy(g: GraphContext, self, dim: torch._C.Value, index: torch._C.Value, source: torch._C.Value, *, stock: Callable[..., torch._C.Value]) -> torch._C.Value:
    from torch.onnx import symbolic_helper

    axis, rank = _axis(self, _const(dim)), symbolic_helper._get_tensor_rank(index)
    if axis is None or rank is None or rank > 1:
        return stock(g, "data of unknown rank or an index of rank > 1", self, dim, index, source)
    emitter = _Emitter(g)
    if rank == 0:
        index = emitter.op("Reshape", index, emitter.ints([1]))
    return writes.index_write(emitter, self, index, source, axis, wrap_negative=False)


def index_fill(g: GraphContext, self, dim: torch._C.Value, index: torch._C.Value, value: torch._C.Value, *, stock: Callable[..., torch._C.Value]) -> torch._C.Value:
    """``aten::index_fill``: one ScatterUpdate of ``value`` broadcast to the written slices, negative indices counted from
    the end (0-d data: as one element along dim 0). The stock symbolic wrote a ScatterElements whose updates are empty
    where the index is 0-d, a node no runtime takes."""
    import torch
    from torch.onnx import symbolic_helper

    emitter = _Emitter(g)
    scalar_type = _exporter_module("_type_utils").JitScalarType
    rank, index_rank, axis = symbolic_helper._get_tensor_rank(self), symbolic_helper._get_tensor_rank(index), _const(dim)
    if (rank is None or index_rank is None or index_rank > 1 or axis not in range(-max(rank, 1), max(rank, 1))
            or emitter.scalar_type(index) not in (scalar_type.INT64, scalar_type.INT)):  # a float index: the validator's refusal
        return stock(g, "data of unknown rank, an index of rank > 1 or not of integers", self, dim, index, value)
    data = self if rank else emitter.op("Unsqueeze", self, emitter.ints([0]))
    axis %= max(rank, 1)
    if index_rank == 0:
        index = emitter.op("Reshape", index, emitter.ints([1]))
    constant = symbolic_helper._maybe_get_const(value, "t")
    if not isinstance(constant, torch._C.Value):  # a number
        value = g.op("Constant", value_t=torch.tensor(constant))
    written = writes.fill_write(emitter, data, index, emitter.cast(value, emitter.scalar_type(self)), axis, wrap_negative=True)
    return written if rank else emitter.op("Squeeze", written, emitter.ints([0]))


def index_put(g: GraphContext, self, indices: torch._C.Value, values: torch._C.Value, accumulate: torch._C.Value, *, stock: Callable[..., torch._C.Value]) -> torch._C.Value:
    from torch.onnx import symbolic_helper

    written = None
    accumulating = _const(accumulate) not in (False, 0)
    if symbolic_helper._is_packed_list(indices):
        unpacked = symbolic_helper._unpack_list(indices)
        written = _index_put(_Emitter(g), self, unpacked, values, accumulate=accumulating)
        if written is None:
            written = (_masked_accumulate if accumulating else _masked_assign)(_Emitter(g), self, unpacked, values)
    if written is None:  # with accumulate, ScatterND (no reduction) into zeros plus self, which the rewrite pass sums as eager does
        return stock(g, "a mask, several index tensors or data of unknown rank", self, indices, values, accumulate)
    return written


def scatter_add(g: GraphContext, self, dim: torch._C.Value, index: torch._C.Value, src: torch._C.Value, *, stock: Callable[..., torch._C.Value]) -> torch._C.Value:
    axis = _axis(self, _const(dim))
    written = None if axis is None else writes.scatter_reduce_write(_Emitter(g), self, axis, index, src, "add", True)
    return written if written is not None else stock(g, "data of unknown rank", self, dim, index, src)


def scatter_reduce(g: GraphContext, self, dim: torch._C.Value, index: torch._C.Value, src: torch._C.Value, reduce: torch._C.Value, include_self: torch._C.Value, *, stock: Callable[..., torch._C.Value]) -> torch._C.Value:
    from torch.onnx import symbolic_helper

    axis = _axis(self, _const(dim))
    reduction = writes.REDUCTIONS.get(symbolic_helper._maybe_get_const(reduce, "s"))
    include = _const(include_self)
    written = None
    if axis is not None and reduction is not None and include in (True, False, 0, 1):
        written = writes.scatter_reduce_write(_Emitter(g), self, axis, index, src, reduction, include)
    return written if written is not None else stock(g, "a reduce or include_self not known, or data of unknown rank",
                                                     self, dim, index, src, reduce, include_self)


def scatter(g: GraphContext, self, dim: torch._C.Value, index: torch._C.Value, src: torch._C.Value, reduce: torch._C.Value | None = None, *, stock: Callable[..., torch._C.Value]) -> torch._C.Value:
    """``aten::scatter``: without ``reduce``, the stock symbolic of the part of ``src`` that has ``index``'s shape; ``scatter(dim, index, src or value, reduce="add" |
    "multiply")``, which the stock one cannot translate (it takes four inputs), one reduction node of ``src`` (a
    scalar ``value`` broadcast to the index's shape), as the dynamo translation writes it."""
    from torch.onnx import symbolic_helper

    if reduce is None:  # of a larger src, PyTorch reads the part of index's shape (the stock symbolic took all of it)
        return stock(g, "no reduction", self, dim, index, writes.index_shaped(_Emitter(g), index, src))  # a number: as it is
    axis = _axis(self, _const(dim))
    reduction = writes.REDUCTIONS.get(writes.SCATTER_REDUCE.get(symbolic_helper._maybe_get_const(reduce, "s")))
    written = None
    if axis is not None and reduction is not None:
        emitter = _Emitter(g)
        if symbolic_helper._get_tensor_rank(src) == 0:
            src = emitter.op("Expand", emitter.cast(src, emitter.scalar_type(self)), emitter.op("Shape", index))
        written = writes.scatter_reduce_write(emitter, self, axis, index, src, reduction, True)
    if written is None:
        return symbolic_helper._unimplemented("aten::scatter", "a reduce other than 'add' or 'multiply', or data of unknown rank")
    return written


def index_add(g: GraphContext, self, dim: torch._C.Value, index: torch._C.Value, source: torch._C.Value, alpha: torch._C.Value, *, stock: Callable[..., torch._C.Value]) -> torch._C.Value:
    from torch.onnx import symbolic_helper

    axis, rank, scale = _axis(self, _const(dim)), symbolic_helper._get_tensor_rank(index), _number(alpha)
    written = None
    if axis is not None and rank is not None and rank <= 1 and (scale is None or isinstance(scale, (int, float))):
        emitter = _Emitter(g)
        if rank == 0:
            index = emitter.op("Reshape", index, emitter.ints([1]))
        if scale not in (1, None):  # alpha * source, which PyTorch's own symbolic refuses
            factor, scalar_type = emitter.g.op("Constant", value_t=_torch().tensor(scale)), _exporter_module("_type_utils").JitScalarType
            kind = emitter.scalar_type(source)
            if kind in (scalar_type.INT8, scalar_type.UINT8):  # TensorRT has no 8-bit integer arithmetic: in int32
                wide = emitter.cast(source, scalar_type.INT)
                source = emitter.cast(emitter.op("Mul", wide, emitter.cast(factor, scalar_type.INT)), kind)
            else:
                source = emitter.op("Mul", source, emitter.cast(factor, kind))
        written = writes.index_reduce_write(emitter, self, index, source, axis, "add")
    return written if written is not None else stock(g, "alpha not a constant, an index of rank > 1 or data of unknown rank",
                                                     self, dim, index, source, alpha)


def index_reduce(g: GraphContext, self, dim: torch._C.Value, index: torch._C.Value, source: torch._C.Value, reduce: torch._C.Value, include_self: torch._C.Value, *, stock: Callable[..., torch._C.Value]) -> torch._C.Value:
    """``aten::index_reduce`` (prod, mean, amax, amin; include_self either way), which torch.onnx has no symbolic
    of: one reduction node, as :func:`index_add` writes."""
    from torch.onnx import symbolic_helper

    axis, rank = _axis(self, _const(dim)), symbolic_helper._get_tensor_rank(index)
    reduction, include = writes.REDUCTIONS.get(symbolic_helper._maybe_get_const(reduce, "s")), _const(include_self)
    if axis is None or rank is None or rank > 1 or reduction is None or include not in (True, False, 0, 1):
        return _refuse("trt_scatter.torch: aten::index_reduce with a reduce or include_self not known, an index of rank > 1 or "
                       "data of unknown rank: PyTorch's exporters have no translation of it, and trt_scatter's takes a 0-D or 1-D index", self)
    emitter = _Emitter(g)
    if rank == 0:
        index = emitter.op("Reshape", index, emitter.ints([1]))
    return writes.index_reduce_write(emitter, self, index, source, axis, reduction, include)


def placeholder(g: GraphContext, *inputs: torch._C.Value, stock: Callable[..., torch._C.Value], **attributes: object) -> torch._C.Value:
    """``onnx::Placeholder`` of an in-place write through a chain of slices and selects."""
    written = None
    if g.original_node.s("name") in ("index_put", "index_put_"):
        written = _chained_write(g, inputs[0])
    if written is None:
        return stock(g, "a chain of views it cannot read as one slice or index list", *inputs, **attributes)
    return written


_SYMBOLICS = {
    "aten::slice_scatter": slice_scatter,
    "aten::select_scatter": select_scatter,
    "aten::index_copy": index_copy,
    "aten::index_fill": index_fill,
    "aten::index_put": index_put,
    "aten::scatter_add": scatter_add,
    "aten::scatter_reduce": scatter_reduce,
    "aten::scatter": scatter,
    "aten::index_add": index_add,
    "aten::index_reduce": index_reduce,
    "onnx::Placeholder": placeholder,
}


def _chained_write(g, data):
    """The Placeholder's sub-block ``slice/select ... -> index_put_(view, indices, values)`` as one write, or ``None``."""
    block = next(g.original_node.blocks())
    nodes = list(block.nodes())
    if not nodes or nodes[-1].kind() not in ("aten::index_put_", "aten::index_put") or len(list(nodes[-1].inputs())) != 4:
        return None
    view_value, indices, values, accumulate = nodes[-1].inputs()
    if _old_const(accumulate, g) not in (False, 0):
        return None
    emitter = _Emitter(g)
    remaining = list(range(len(_sizes(data) or ())))  # original axis of each axis of the view
    slices, steps_in_onnx = [], []  # (axis, start, stop, step) on data; what reproduces the view
    previous = None
    for node in nodes[:-1]:
        kind, arguments = node.kind(), [_old_const(v, g) for v in node.inputs()]
        source = next(node.inputs())
        if kind not in ("aten::slice", "aten::select") or (previous is not None and source is not previous) or not remaining:
            return None
        view_axis = arguments[1]
        if not isinstance(view_axis, int) or not -len(remaining) <= view_axis < len(remaining):
            return None
        axis = remaining[view_axis]
        if any(axis == written_axis for written_axis, *_ in slices):
            return None  # the same axis sliced twice
        if kind == "aten::slice":
            start, stop, step = arguments[2:5]
            if not (isinstance(step, int) and step > 0):
                return None
            slices.append((axis, start, stop, step))
            steps_in_onnx.append(("slice", view_axis % len(remaining), start, stop, step))
        else:
            index = arguments[2]
            if isinstance(index, int):
                slices.append((axis, *writes.select_slice(index), 1))
            else:  # an index known at run time (``cache[b, :, pos[b]]``: the tracer selects at ``pos[b]``)
                index = _runtime_index(emitter, data, axis, index)
                if index is None:
                    return None
                slices.append((axis, index, emitter.op("Add", index, emitter.scalar(1)), 1))
            steps_in_onnx.append(("select", view_axis % len(remaining), index))
            remaining.remove(axis)
        previous = node.output()
    if previous is not view_value:
        return None
    index_tensors = [_old_index(v, g) for v in _old_list(indices)]
    if values not in g.env or any(index is _UNKNOWN for index in index_tensors):
        return None
    index_tensors = [emitter.op("Constant", value=v) if isinstance(v, _torch().Tensor) else v for v in index_tensors]
    updates = g.env[values]
    if index_tensors:  # x[:, idx] = v: a slice of everything, then an index list
        whole = all(step[0] == "slice" and writes._whole_axis(_sizes(data), step[1], step[2], step[3], step[4]) for step in steps_in_onnx)
        if whole:
            return _index_put(emitter, data, index_tensors, updates)
        return _selected_write(emitter, data, slices, steps_in_onnx, remaining, index_tensors, updates)
    # Slice assignment broadcasts the values to the view: the exporter has put an expand_as there
    # already; otherwise the view is rebuilt from data (the chain in ONNX) for its shape.
    view_sizes, value_sizes = _old_sizes(view_value), _old_sizes(values)
    known = view_sizes is not None and None not in view_sizes and view_sizes == value_sizes
    expanded = values.node().kind() == "aten::expand_as"
    source = next(values.node().inputs()) if expanded else None
    static = [emitter.dims(v) for v in (data, g.env.get(source))] if source is not None and source in g.env else [None]
    if known and expanded and all(d is not None and all(isinstance(x, int) for x in d) for d in static) and _old_sizes(source) == view_sizes:
        # Static data and values, which already have the view's shape: the expand_as would only make the view's
        # start (a KV cache's position) set shapes in the network. A view that comes out shorter at
        # run time (clamped at the end) makes the plugin write nothing, where PyTorch would raise.
        updates = g.env[source]
    elif not known and not expanded:
        view = data
        for step in steps_in_onnx:
            if step[0] == "slice":
                _, view_axis, start, stop, step_size = step
                bounds = (writes._vector(emitter, [v]) for v in (start or 0, writes.INT64_MAX if stop is None else stop))
                view = emitter.op("Slice", view, *bounds, emitter.ints([view_axis]), emitter.ints([step_size]))
            else:
                index = step[2] if not isinstance(step[2], int) else emitter.op("Constant", value=_torch().tensor(step[2]))
                view = emitter.op("Gather", view, index, axis=step[1])
        updates = emitter.op("Expand", updates, emitter.op("Shape", view))
    selected = sorted(axis for (axis, *_), step in zip(slices, steps_in_onnx) if step[0] == "select")
    if selected:
        updates = emitter.op("Unsqueeze", updates, emitter.ints(selected))
    # Assignment (copy_) converts the values to data's element type; a plugin node takes one type.
    return writes.slice_write(emitter, data, emitter.cast(updates, emitter.scalar_type(data)), slices)


def _selected_write(emitter, data, slices, steps, remaining, index_tensors, values):
    """``data[b, ..., t, ...] = values`` (``cache[b, :, pos[b]] = k[b]``): selects (int indices) and 0-d integer index
    tensors (a select at a run-time index, negative ones counting from the end) on otherwise whole axes: one SliceScatter
    of one element on each of those axes; None for any other form."""
    dims = _sizes(data)
    if dims is None:
        return None
    written, selected = [], []
    for (axis, start, stop, step), kind in zip(slices, steps):
        if kind[0] == "select":
            written.append((axis, start, stop, step))
            selected.append(axis)
        elif not writes._whole_axis(dims, axis, start, stop, step):
            return None
    for position, index in enumerate(index_tensors):
        if index is None:
            continue
        index = _runtime_index(emitter, data, remaining[position], index) if position < len(remaining) else None
        if index is None:
            return None
        written.append((remaining[position], index, emitter.op("Add", index, emitter.scalar(1)), 1))
        selected.append(remaining[position])
    if len(set(selected)) != len(selected):
        return None
    kept = [axis for axis in range(len(dims)) if axis not in selected]
    shape = emitter.op("Shape", data)
    pieces = [emitter.op("Gather", shape, emitter.ints([axis]), axis=0) for axis in kept]
    updates = writes.expand_to(emitter, values, pieces, tuple(dims[axis] for axis in kept)) if pieces else values
    updates = emitter.op("Unsqueeze", updates, emitter.ints(sorted(selected)))
    return writes.slice_write(emitter, data, emitter.cast(updates, emitter.scalar_type(data)), written)


def _runtime_index(emitter, data, axis, index):
    """A 0-d integer graph value selecting along ``axis`` as an int64 index in [0, s) (PyTorch's negative indices count
    from the end), or None for anything else."""
    scalar_type = _exporter_module("_type_utils").JitScalarType
    if not hasattr(index, "node") or _sizes(index) != [] or emitter.scalar_type(index) not in (scalar_type.INT64, scalar_type.INT):
        return None
    return writes.wrapped(emitter, index, data, axis)


def _single_mask(emitter, data, indices):
    """``(position, mask)``: the one boolean mask ``indices`` holds and the axis it starts on (``x[mask]``: 0,
    ``x[:, mask]``: 1), or ``(0, None)`` where they are anything else. The exporter hands each axis taken whole around
    the mask over as its every index, ``arange(n)`` shaped to broadcast against the others (a constant where the axis
    is static, ``Range(0, Shape(data)[axis], 1)`` where it is dynamic), and a 1-D mask before whole axes (``x[mask, :]``)
    as ``Reshape(mask, [-1, 1, ...])``."""
    from torch.onnx import symbolic_helper

    bool_type = _exporter_module("_type_utils").JitScalarType.BOOL
    given = [not symbolic_helper._is_none(index) and emitter.scalar_type(index) == bool_type for index in indices]
    if given.count(True) != 1:
        return 0, None
    position = given.index(True)
    mask, trailing = indices[position], len(indices) - position - 1
    if trailing:  # the mask reshaped to broadcast against the whole axes after it
        mask = _column_of(mask, trailing)
        if mask is None or len(emitter.dims(mask) or ()) != 1:
            return 0, None
    dims, count = emitter.dims(data) or (), len(emitter.dims(mask) or ())
    for place, index in enumerate(indices):
        if place == position or (place < position and symbolic_helper._is_none(index)):
            continue
        axis = place if place < position else place - 1 + count
        if not _whole_axis_index(index, data, dims, axis, len(indices) - 1 - place):
            return 0, None
    return position, mask


def _whole_axis_index(index, data, dims, axis, ones):
    """Whether ``index`` is every index of data's ``axis`` followed by ``ones`` axes of size 1: ``arange(n)`` as a
    constant of shape ``(n,) + (1,) * ones``, or a Range over ``Shape(data)[axis]`` reshaped to ``[-1] + [1] * ones``."""
    from torch.onnx import symbolic_helper

    torch = _torch()
    whole = symbolic_helper._maybe_get_const(index, "t")
    if isinstance(whole, torch.Tensor):
        return (axis < len(dims) and isinstance(dims[axis], int) and tuple(whole.shape) == (dims[axis],) + (1,) * ones
                and whole.flatten().tolist() == list(range(dims[axis])))
    if index.node().kind() != "onnx::Reshape":
        return ones == 0 and _arange_over(index, data, axis)
    source = _column_of(index, ones)
    return source is not None and _arange_over(source, data, axis)


def _column_of(value, ones):
    """``x`` where ``value`` is ``Reshape(x, [-1] + [1] * ones)``, as the exporter shapes an index to broadcast against
    ``ones`` indices after it; else None."""
    from torch.onnx import symbolic_helper

    node = value.node()
    if node.kind() != "onnx::Reshape":
        return None
    source, shape = node.inputs()
    shape = symbolic_helper._maybe_get_const(shape, "t")
    return source if isinstance(shape, _torch().Tensor) and shape.tolist() == [-1] + [1] * ones else None


def _arange_over(value, data, axis):
    """Whether ``value`` is ``Range(0, Shape(data)[axis], 1)``: every index of a dynamic axis of ``data``."""
    node = value.node()
    if node.kind() != "onnx::Range":
        return False
    start, limit, delta = node.inputs()
    if _const(start) != 0 or _const(delta) != 1:
        return False
    while limit.node().kind() in ("onnx::Cast", "onnx::Squeeze", "onnx::Reshape"):
        limit = next(limit.node().inputs())
    gather = limit.node()
    if gather.kind() != "onnx::Gather":
        return False
    shape, index = gather.inputs()
    return shape.node().kind() == "onnx::Shape" and next(shape.node().inputs()) is data and _const(index) == axis


def _masked_assign(emitter, data, indices, values):
    """``data[mask] = values`` with one boolean mask and values the same at every masked element: ``Where(mask, values,
    data)`` (:func:`writes.masked_write`). PyTorch's stock symbolic expands the mask to data's shape and writes values'
    elements one per True element, which is eager PyTorch's result only while one row is masked. ``None`` where
    ``indices`` is no single mask, or values are one per masked element (the stock form)."""
    position, mask = _single_mask(emitter, data, indices)
    return None if mask is None else writes.masked_write(emitter, data, mask, values, position)


def _masked_accumulate(emitter, data, indices, values):
    """``data[mask] += values`` with one boolean mask over data's leading axes: ``Where(mask, data + values, data)``
    where ``values`` broadcasts over the axes the mask leaves (a scalar, or a row per masked element's rest).
    PyTorch's stock symbolic writes ``Where(mask, values, data)``, an assignment: its sums were wrong. Values given
    one per masked element cannot be written this way: refused (the dynamo exporter writes them). ``None`` where
    ``indices`` is no single mask."""
    position, mask = _single_mask(emitter, data, indices)
    if mask is None:
        return None
    data_dims, mask_dims, value_dims = emitter.dims(data), emitter.dims(mask), emitter.dims(values)
    if data_dims is None or mask_dims is None or value_dims is None:
        return _refuse("trt_scatter.torch: index_put with a mask and accumulate=True on tensors of unknown rank: PyTorch's "
                       "TorchScript translation assigns instead of adding; export with dynamo=True", data)
    written = writes.masked_accumulate(emitter, data, mask, values, position)
    if written is None:
        return _refuse("trt_scatter.torch: index_put with a mask, accumulate=True and a value per masked element: "
                       "PyTorch's TorchScript translation assigns instead of adding; export with dynamo=True", data)
    return written


def _index_put(emitter, data, indices, values, accumulate=False):
    """``data[..., index, ...] = values`` (``+=`` with ``accumulate``) with one integer index tensor among ``indices`` (the
    rest None); ``None`` otherwise."""
    from torch.onnx import symbolic_helper

    scalar_type = _exporter_module("_type_utils").JitScalarType

    tensors = [(position, index) for position, index in enumerate(indices) if not symbolic_helper._is_none(index)]
    if len(tensors) == 2 and tensors[0][0] == 0 and not accumulate:  # a batch index and a position index: each row at its own position
        return writes.batch_position_write(emitter, data, tensors[0][1], tensors[1][1], values, tensors[1][0])
    if len(tensors) != 1:
        return None
    axis, index = tensors[0]
    data_dims, index_dims = emitter.dims(data), emitter.dims(index)
    if emitter.scalar_type(index) not in (scalar_type.INT64, scalar_type.INT) or data_dims is None or axis >= len(data_dims):
        return None
    target = None if index_dims is None else data_dims[:axis] + index_dims + data_dims[axis + 1 :]
    pieces = [emitter.op("Shape", data, start=0, end=axis), emitter.op("Shape", index), emitter.op("Shape", data, start=axis + 1)]
    updates = writes.expand_to(emitter, values, pieces, target)
    if accumulate:
        return writes.index_reduce_write(emitter, data, index, updates, axis, "add")
    constant = symbolic_helper._maybe_get_const(index, "t")
    wrap = not (hasattr(constant, "min") and constant.numel() and int(constant.min()) >= 0)
    return writes.index_write(emitter, data, index, updates, axis, wrap_negative=wrap)


class _Emitter:
    """:mod:`.writes`' emitter over TorchScript's ``GraphContext``."""

    def __init__(self, g):
        self.g = g

    def op(self, op_type, *inputs, **attributes):
        # Shape takes start/end from opset 15, but the exporter's own shape inference reads them as a
        # whole shape (a [3, 6] piece of a shape came out as 2 elements): a Gather of the dimensions
        # (or a Slice of the Shape where the rank is not known) instead.
        if op_type == "Shape" and attributes:
            shape = self.g.op("Shape", *inputs)
            rank = len(_sizes(inputs[0])) if _sizes(inputs[0]) is not None else None
            start, end = attributes.get("start", 0), attributes.get("end", rank if rank is not None else writes.INT64_MAX)
            if rank is None:
                return self.op("Slice", shape, self.ints([start]), self.ints([end]))
            dims = list(range(rank))[start:end]
            return self.op("Gather", shape, self.ints(dims), axis=0) if dims else self.ints([])
        return self.g.op(op_type, *inputs, **{f"{name}_{_suffix(value)}": value for name, value in attributes.items()})

    def ints(self, values):
        import torch

        return self.g.op("Constant", value_t=torch.tensor(list(values), dtype=torch.int64))

    def scalar_type(self, value):
        """``value``'s element type (a ``JitScalarType``), UNDEFINED where the graph does not say."""
        scalar_type = _exporter_module("_type_utils").JitScalarType
        return scalar_type.from_value(value, scalar_type.UNDEFINED)

    def cast(self, value, to):
        """``value`` as element type ``to`` (a ``JitScalarType``): a Cast only where its type is not ``to``
        already; with ``to`` UNDEFINED, ``value`` as it is."""
        if to in (self.scalar_type(value), _exporter_module("_type_utils").JitScalarType.UNDEFINED):
            return value
        return self.g.op("Cast", value, to_i=to.onnx_type())

    def int64(self, value):
        return self.cast(value, _exporter_module("_type_utils").JitScalarType.INT64)

    def vector(self, value):
        return self.g.op("Reshape", self.int64(value), self.ints([1]))

    def dims(self, value):
        """Sizes, with TorchScript's symbolic dimensions (negative ids, shared by equal dimensions) as names."""
        kind = value.type().kind() if hasattr(value.type(), "kind") else None
        sizes = value.type().symbolic_sizes() if kind == "TensorType" else None
        return None if sizes is None else tuple(d if d >= 0 else f"symbol{-d}" for d in sizes)

    def scalar(self, value):
        return self.g.op("Constant", value_t=_torch().tensor(value, dtype=_torch().int64))

    def plugin(self, op_type, inputs, data, **attributes):
        named = {f"{name}_{_suffix(value)}": value for name, value in attributes.items()}
        output = self.g.op(f"{DOMAIN}::{op_type}", *inputs, **named, inplace_i=0)
        output.setType(data.type())  # what ops.py says; the exporter cannot infer a custom op
        return output

    def is_batch_arange(self, value, data):
        from torch.onnx import symbolic_helper

        torch = _torch()
        constant = symbolic_helper._maybe_get_const(value, "t")
        if isinstance(constant, torch.Tensor):
            sizes = _sizes(data)
            return (constant.dim() == 1 and sizes is not None and sizes[0] is not None
                    and torch.equal(constant, torch.arange(sizes[0], dtype=constant.dtype)))  # fmt: skip
        return _arange_over(value, data, 0)

    def expand_source(self, value):
        node = value.node() if value is not None else None
        return next(node.inputs()) if node is not None and node.kind() == "onnx::Expand" else None


def _suffix(value):
    import torch

    if isinstance(value, torch.Tensor):
        return "t"
    sample = value[0] if isinstance(value, (list, tuple)) and value else value
    return {int: "i", float: "f", str: "s"}.get(type(sample), "i")


def _sizes(value):
    from torch.onnx import symbolic_helper

    return symbolic_helper._get_tensor_sizes(value)


def _axis(data, dim):
    sizes = _sizes(data)
    if sizes is None or not isinstance(dim, int):
        return None
    rank = len(sizes)
    return dim + rank if -rank <= dim < 0 else dim if 0 <= dim < rank else None


def _const(value):
    """A converted argument as a Python int (or bool, or ``None``) where the graph fixes it, else the value itself."""
    from torch.onnx import symbolic_helper

    if symbolic_helper._is_none(value):
        return None
    constant = symbolic_helper._maybe_get_const(value, "i")
    return int(constant) if isinstance(constant, (int, bool)) or getattr(constant, "ndim", None) == 0 else constant


def _number(value):
    """A scalar argument as the Python int or float the graph fixes (:func:`_const` would make 2.5 an int), ``None``
    where it is absent, else the value itself."""
    from torch.onnx import symbolic_helper

    if symbolic_helper._is_none(value):
        return None
    constant = symbolic_helper._maybe_get_const(value, "t")
    return constant.item() if isinstance(constant, _torch().Tensor) and constant.ndim == 0 else constant


def _old_const(value, g):
    """An argument of the Placeholder's sub-block (a TorchScript value): its constant, or its converted value."""
    node = value.node()
    if node.kind() == "prim::Constant":
        if node.mustBeNone():
            return None
        constant = value.toIValue()
        if getattr(constant, "ndim", None) == 0:  # the tracer records ints as 0-d tensors
            constant = constant.item()
        return int(constant) if isinstance(constant, (bool, int)) else constant
    return _const(g.env[value]) if value in g.env else None


_UNKNOWN = object()


def _old_index(value, g):
    """An index of the Placeholder's sub-block: None, a constant tensor (kept a tensor, whatever its size: ``x[:, t] = y``
    with ``t = torch.tensor([3])`` indexes with a tensor, not an int), or its converted value; ``_UNKNOWN`` otherwise."""
    node = value.node()
    if node.kind() == "prim::Constant":
        if node.mustBeNone():
            return None
        constant = value.toIValue()
        return constant if isinstance(constant, _torch().Tensor) else _UNKNOWN
    return g.env.get(value, _UNKNOWN)


def _old_sizes(value):
    """The sizes TorchScript recorded for a value (None for a dimension not known), or None."""
    kind = value.type().kind()
    return tuple(value.type().varyingSizes()) if kind == "TensorType" and value.type().dim() is not None else None


def _old_list(value):
    node = value.node()
    return list(node.inputs()) if node.kind() == "prim::ListConstruct" else [value]


def _stock_caller(name, opset):
    def call(g, reason, *inputs, **attributes):
        logger.debug("trt_scatter.torch: %s with %s: the stock symbolic", name, reason)
        stock = _stock.get((name, opset))
        if stock is None:
            from torch.onnx import symbolic_helper

            return symbolic_helper._unimplemented(name, reason)
        return stock(g, *inputs, **attributes)

    return call


def _registry():
    return _exporter_module("registration").registry


def _exporter_module(name):
    """A module of the TorchScript exporter: ``torch.onnx._internal.torchscript_exporter`` from torch 2.9, before in
    ``torch.onnx._internal`` (registration) or ``torch.onnx`` (_type_utils)."""
    import importlib

    for package in ("torch.onnx._internal.torchscript_exporter", "torch.onnx._internal", "torch.onnx"):
        try:
            return importlib.import_module(f"{package}.{name}")
        except ImportError:
            continue
    raise ImportError(f"this torch has no TorchScript exporter module {name}")


def _torch():
    import torch

    return torch
