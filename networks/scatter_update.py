"""ScatterUpdate-3 in a TensorRT network: native lowering to stock layers, or the plugin.

Native lowering (``impl="native"``, runs on any TensorRT, including TensorRT-RTX): data is
seen as rows of shape ``data.shape[axis+1:]`` (a reshape over its first ``axis + 1`` axes);
the row of ``(i_0, ..., i_{axis-1}, indices[m])`` is ``sum_j i_j * stride_j + indices[m]``,
computed with ``arange`` and elementwise layers broadcast over the grid ``data.shape[:axis] +
indices.shape``, which with ``data.shape[axis+1:]`` is exactly ``updates``' shape; one
``IScatterLayer`` in ND mode writes the rows and a reshape restores data's shape. Index bytes
per updated element: ``8 / prod(data.shape[axis+1:])`` (int64 row numbers; int32 indices are
cast to int64 first).

Index values: the spec allows [0, s-1] only and the oracle raises on others; no TensorRT layer
can raise at run time, so the lowering clamps indices to [0, s-1] (two fused elementwise
layers): a forbidden index writes to a valid row, never outside the output, and its result is
unspecified (the plugin instead skips such indices and counts them).

A run-time ``axis`` (a tensor) decides which dimension is indexed, hence the row length, which no
shape may take from a value: :func:`_lower_runtime_axis` then gives every element of ``updates``
its own flat destination in data (8 index bytes per updated element). It is used only for a
run-time ``axis``; a constant one keeps the row lowering.
"""

import numpy as np

from trt_scatter.networks.graph import INT64, TensorRTGraph, is_tensor
from trt_scatter.networks.slice_scatter import index_constant
from trt_scatter.oracle import rules
from trt_scatter.oracle.scatter_update import OP, axis_value, check_axis_shape, check_scatter_update, check_scatter_update_static

IMPLS = ("native", "plugin")


def add_scatter_update(network, data, indices, updates, axis, impl="native"):
    """Adds ScatterUpdate(data, indices, updates, axis) to ``network``; returns the output ITensor.

    ``indices`` is an ITensor (values known at run time). ``axis`` is a constant (an int, or a
    0-D/1-element integer array) or a 0-D/1-element int32/int64 ITensor (its value known at run
    time only: the native lowering then writes element by element, see :func:`_lower_runtime_axis`).
    ``impl="plugin"`` adds the ScatterUpdate plugin (needs full TensorRT's ``add_plugin_v3``) with
    a constant ``axis`` as a 1-element constant input (an array's int32/int64 type is kept; an int
    becomes int64).
    """
    graph = TensorRTGraph(network)
    graph.check_arguments(OP, dict(data=data, indices=indices, updates=updates))  # axis: a constant, or an ITensor for the plugin
    if impl == "native":
        return lower_scatter_update(graph, data, indices, updates, axis)
    if impl == "plugin":
        check(graph, data, indices, updates, axis)
        axis_input = axis if is_tensor(axis) else graph.constant(index_constant(axis, [axis_value(axis)]))
        from trt_scatter.plugins import add_plugin_layer

        return add_plugin_layer(network, "ScatterUpdate", [data, indices, updates, axis_input])
    raise ValueError(f"{OP}: impl must be one of {', '.join(IMPLS)} (got {impl!r})")


def check(graph, data, indices, updates, axis):
    """The oracle's rules on what is known at build time; returns axis in [0, r-1], or None for
    a run-time ``axis`` (a tensor)."""
    rules.check_data_type(OP, "data", graph.dtype_of(data))
    rules.check_same_type(OP, "updates", graph.dtype_of(updates), graph.dtype_of(data))
    rules.check_index_type(OP, "indices", graph.dtype_of(indices))
    if is_tensor(axis):
        rules.check_index_type(OP, "axis", graph.dtype_of(axis))
        check_axis_shape(graph.shape_of(axis))
        return check_scatter_update_static(graph.shape_of(data), graph.shape_of(indices), graph.shape_of(updates))
    return check_scatter_update(graph.shape_of(data), graph.shape_of(indices), graph.shape_of(updates), axis_value(axis))


def lower_scatter_update(graph, data, indices, updates, axis):
    """The native lowering on ``graph`` (a :class:`~trt_scatter.networks.graph.TensorRTGraph` or ``OnnxGraph``)."""
    constant_axis = check(graph, data, indices, updates, axis)
    if constant_axis is None:
        return _lower_runtime_axis(graph, data, indices, updates, axis)
    axis = constant_axis
    if graph.dtype_of(indices) != INT64:  # row numbers are int64 (shape arithmetic); so are the indices in them
        indices = graph.cast(indices, INT64)
    indices = graph.indices_in_range(OP, indices, data, [axis], negative=False)
    pieces = []
    for j in range(axis):
        count = graph.dim(data, j)
        pieces.append((graph.arange(count), [count]))
    pieces.append((indices, [graph.dim(indices, i) for i in range(len(graph.shape_of(indices)))]))
    return graph.scatter_rows(data, pieces, updates)


def _lower_runtime_axis(graph, data, indices, updates, axis):
    """The lowering for a run-time ``axis``: every element of ``updates`` scattered to its flat position in data.

    Where the axis is known at run time only, so is the length of data's rows, and no shape may
    depend on a value: data is seen as 1-D and each element gets its own destination (8 index
    bytes per updated element, :meth:`~trt_scatter.networks.graph._Composites.scatter_flat`).
    With ``a`` the axis, ``inner = prod(data.shape[a+1:])`` (a reduction of the shape where the
    position exceeds ``a``), ``s = data.shape[a]`` and ``k`` the number of indices, element ``e``
    of updates (shape ``outer x k x inner`` flattened) has ``t = e div inner`` (its row),
    ``o = t div k``, ``j = t - o*k`` (its index) and lands on ``(o*s + indices[j])*inner +
    e - t*inner``, i.e. ``e + inner*(indices[j] - t) + o*s*inner``.

    Indices are clamped into [0, s-1] as in the constant-axis lowering. An axis out of [-r, r-1]
    (the spec forbids it; a constant one is refused, a run-time one cannot be) is clamped into
    range, and updates whose shape does not fit the run-time axis give an unspecified result; in
    every case destinations are clamped into data, so nothing is written outside the output.
    """
    rank = len(graph.shape_of(data))
    axis = graph.axes_in_range(axis, rank)  # (1,)
    dims = graph.shape_vector(data)
    one = graph.constant(np.ones(1, INT64))
    inner = graph.reduce("prod", graph.where(graph.binary("less", axis, graph.constant(np.arange(rank, dtype=INT64))), dims, one))
    size = graph.gather(dims, axis)
    flat = graph.reshape(indices if graph.dtype_of(indices) == INT64 else graph.cast(indices, INT64), (-1,))
    flat = graph.binary("min", graph.binary("max", flat, graph.constant(np.zeros(1, INT64))), graph.binary("sub", size, one))
    count = graph.volume(indices)
    if not (isinstance(count, int) and count > 0):  # a valid updates is empty then; any other reads a 0, never past the end
        flat = graph.concat([flat, graph.constant(np.zeros(1, INT64))])
        count = graph.binary("max", graph.as_tensor(count), one)
    elements = graph.arange(graph.as_tensor(graph.volume(updates)))  # e
    rows = graph.binary("div", elements, graph.binary("max", inner, one))  # t (inner is 0 only for an empty updates)
    blocks = graph.binary("div", rows, graph.as_tensor(count))  # o
    chosen = graph.gather(flat, graph.binary("sub", rows, graph.binary("mul", blocks, graph.as_tensor(count))))  # indices[j]
    shift = graph.binary("mul", graph.binary("sub", chosen, rows), inner)
    destinations = graph.binary("add", graph.binary("add", elements, shift), graph.binary("mul", blocks, graph.binary("mul", size, inner)))
    return graph.scatter_flat(OP, "indices", data, graph.reshape(destinations, (-1, 1)), updates)
