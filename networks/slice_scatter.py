"""SliceScatter-15 in a TensorRT network: native lowering to stock layers, or the plugin.

Native lowering (``impl="native"``, runs on any TensorRT, including TensorRT-RTX, which cannot
add plugin layers from Python): with ``k = max(axes) + 1``, data is seen as rows of shape
``data.shape[k:]`` (a reshape), each updated row gets its flat row number ``sum_j (first_j +
i_j * step_j) * stride_j`` (``arange`` and elementwise layers, broadcast over the slice's grid),
and one ``IScatterLayer`` in ND mode writes the rows; a reshape restores data's shape. Index
bytes per updated element: ``8 / prod(data.shape[k:])`` (int64 row numbers), so 8 when the
last axis is sliced and far less when only leading axes are.

Slice geometry follows OpenVINO (:func:`trt_scatter.oracle.slice_geometry`): where a sliced
dimension is known when the network is built it is computed on the host and the coordinates
are a constant; where it is dynamic it is computed at run time with shape layers (int64). The
start/stop/step constants are clamped on the host to +-2**62 first, which changes no slice
(every dimension is smaller) and keeps ``dim + start`` and ``span + |step| - 1`` from
overflowing int64 for INT64_MIN/INT64_MAX inputs.

The updates' shape is checked at build time where it is known (the oracle's rule); at run time
TensorRT rejects updates whose shape differs from the computed slice, since the index tensor
is shaped from the computed geometry, never from updates.
"""

import numpy as np

from trt_scatter.networks.graph import INT64, TensorRTGraph
from trt_scatter.oracle import rules
from trt_scatter.oracle.slice_scatter import OP, check_slice_scatter, slice_geometry

LIMIT = 2**62
IMPLS = ("native", "plugin")


def add_slice_scatter(network, data, updates, start, stop, step, axes=None, impl="native"):
    """Adds SliceScatter(data, updates, start, stop, step[, axes]) to ``network``; returns the output ITensor.

    ``start``/``stop``/``step``/``axes`` are 1-D integer constants (lists or arrays).
    ``impl="plugin"`` adds the SliceScatter plugin (needs full TensorRT's ``add_plugin_v3``);
    its constant inputs keep the arrays' int32/int64 type (lists become int64).
    """
    graph = TensorRTGraph(network)
    params = dict(start=start, stop=stop, step=step) | ({} if axes is None else dict(axes=axes))
    graph.check_arguments(OP, dict(data=data, updates=updates), params)
    if impl == "native":
        return lower_slice_scatter(graph, data, updates, start, stop, step, axes)
    if impl == "plugin":
        checked = check(graph, data, updates, start, stop, step, axes)[:3]
        params = [start, stop, step] + ([] if axes is None else [axes])
        values = list(checked) + ([] if axes is None else [rules.as_int_vector(OP, "axes", axes)])
        from trt_scatter.plugins import add_plugin_layer

        constants = [graph.constant(index_constant(param, value)) for param, value in zip(params, values)]
        return add_plugin_layer(network, "SliceScatter", [data, updates] + constants)
    raise ValueError(f"{OP}: impl must be one of {', '.join(IMPLS)} (got {impl!r})")


def index_constant(original, values):
    """``values`` (checked Python ints) as a 1-D array of ``original``'s type if that is int32 or
    int64, else int64. Values beyond int64 (from uint64 or Python ints) clamp to its bounds,
    which selects the same slice, instead of wrapping around into another value."""
    dtype = np.asarray(original).dtype
    bounds = np.iinfo(INT64)
    return np.array([min(max(v, bounds.min), bounds.max) for v in values], dtype=dtype if dtype in (np.int32, np.int64) else INT64)


def check(graph, data, updates, start, stop, step, axes=None):
    """The oracle's rules on what is known at build time; returns start, stop, step (int lists) and axes in [0, r-1]."""
    rules.check_data_type(OP, "data", graph.dtype_of(data))
    rules.check_same_type(OP, "updates", graph.dtype_of(updates), graph.dtype_of(data))
    start, stop, step = (rules.as_int_vector(OP, name, v) for name, v in (("start", start), ("stop", stop), ("step", step)))
    if axes is not None:
        axes = rules.as_int_vector(OP, "axes", axes)
    axes = check_slice_scatter(graph.shape_of(data), graph.shape_of(updates), start, stop, step, axes)
    return start, stop, step, axes


def lower_slice_scatter(graph, data, updates, start, stop, step, axes=None):
    """The native lowering on ``graph`` (a :class:`~trt_scatter.networks.graph.TensorRTGraph` or ``OnnxGraph``)."""
    start, stop, step, axes = check(graph, data, updates, start, stop, step, axes)
    if not axes:  # no sliced axis: updates replace all of data, i.e. a full slice of axis 0
        start, stop, step, axes = [0], [LIMIT], [1], [0]
    slices = {axis: tuple(_clamp(v) for v in params) for axis, *params in zip(axes, start, stop, step)}
    pieces = []
    for axis in range(max(slices) + 1):
        if axis in slices:
            coordinates, count = _coordinates(graph, data, axis, *slices[axis])
        else:
            count = graph.dim(data, axis)
            coordinates = graph.arange(count)
        pieces.append((coordinates, [count]))
    return graph.scatter_rows(data, pieces, updates)


def _clamp(value):
    return min(max(value, -LIMIT), LIMIT)


def _coordinates(graph, data, axis, start, stop, step):
    """The int64 coordinates ``first + i*step`` of the slice along ``axis``, and their count (a dimension)."""
    dim = graph.dim(data, axis)
    if isinstance(dim, int):
        first, count = slice_geometry(start, stop, step, dim)
        return graph.constant(first + step * np.arange(count, dtype=INT64)), count

    def const(value):
        return graph.constant(np.array([value], dtype=INT64))

    def clamped(value):  # oracle.slice_geometry's clamp, with the sign of value known here
        if value < 0:
            return graph.binary("max", graph.binary("add", dim, const(value)), const(0 if step > 0 else -1))
        return graph.binary("min", const(value), dim if step > 0 else graph.binary("sub", dim, const(1)))

    first, last = clamped(start), clamped(stop)
    span = graph.binary("sub", last, first) if step > 0 else graph.binary("sub", first, last)
    count = graph.binary("max", span, const(0))
    if abs(step) != 1:  # ceil(span / |step|) of a non-negative span
        count = graph.binary("div", graph.binary("add", count, const(abs(step) - 1)), const(abs(step)))
    coordinates = graph.arange(count)
    if step != 1:
        coordinates = graph.binary("mul", coordinates, const(step))
    return graph.binary("add", coordinates, first), count
