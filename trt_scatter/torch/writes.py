"""The two writes PyTorch's scatter-like ops become, written once for both exporters.

A slice write (``slice_scatter``, slice assignment, ``select_scatter``) becomes one
``trt_scatter::SliceScatter`` node; a write of whole slices at an index list (``index_copy``,
``index_put`` with one integer index tensor) one ``trt_scatter::ScatterUpdate`` node, with the
node inputs :mod:`trt_scatter.ops` prescribes. The graph is built through an *emitter*, a small
object each exporter implements over its own graph API (onnxscript for ``dynamo=True``,
TorchScript's ``GraphContext`` for ``dynamo=False``):

=======================================  ==================================================
``emitter.op(op_type, *inputs, **attrs)``  one standard ONNX node (attributes as Python values)
``emitter.ints(values)``                   a 1-D int64 constant
``emitter.scalar(value)``                  a 0-d int64 constant
``emitter.vector(value)``                  a 0-d or 1-element int tensor as 1-D int64
``emitter.int64(value)``                   an int tensor as int64 (a Cast only where it is not)
``emitter.plugin(op_type, inputs, data)``  the ``trt_scatter`` node, typed like ``data``
``emitter.dims(value)``                    the static shape: a tuple of ints, symbolic names (str)
                                           and ``None`` (not known), or ``None`` if the rank is not
=======================================  ==================================================

Parameters here are Python ints or graph values (run-time integers, ``SymInt`` in the FX graph);
PyTorch's slice semantics (negative bounds count from the end, clamping, steps > 0) are
SliceScatter-15's for positive steps, so bounds pass through unchanged.
"""

INT64_MAX = 2**63 - 1


def require_torch():
    """Imports PyTorch and onnxscript, or raises one ImportError that says which extra installs them
    (they are not core dependencies of trt-scatter)."""
    try:
        import onnxscript  # noqa: F401
        import torch  # noqa: F401
    except ImportError as err:
        raise ImportError(f"trt_scatter.torch needs PyTorch and onnxscript ({err}): pip install 'trt-scatter[torch]'") from None


def slice_write(emitter, data, updates, slices):
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


def select_slice(index):
    """``(start, stop)`` of the one-element slice that selecting ``index`` (an int) takes, negative indices included."""
    return index, (index + 1 if index != -1 else INT64_MAX)


def index_write(emitter, data, indices, updates, axis, wrap_negative):
    """Writes the slices ``updates`` of ``data`` along ``axis`` at ``indices`` (ScatterUpdate-3).

    ``updates`` must already have the shape ``data.shape[:axis] + indices.shape + data.shape[axis+1:]``.
    ScatterUpdate takes indices in [0, s-1] only; ``wrap_negative`` adds s to negative ones first
    (PyTorch's advanced indexing reads -1 as the last element). Indices out of [-s, s-1] stay out
    of range, so the plugin skips and counts them instead of writing somewhere else.
    """
    if wrap_negative:
        indices = emitter.int64(indices)  # the type of the dimension it adds
        size = emitter.op("Gather", emitter.op("Shape", data), emitter.scalar(axis), axis=0)  # 0-d: any index rank
        negative = emitter.op("Less", indices, emitter.scalar(0))
        indices = emitter.op("Where", negative, emitter.op("Add", indices, size), indices)
    return emitter.plugin("ScatterUpdate", [data, indices, updates, emitter.ints([axis])], data)


def expand_to(emitter, values, shape_pieces, target_dims):
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
