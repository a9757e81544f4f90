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

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from trt_scatter.networks.example import Example
from trt_scatter.networks.graph import INT64, TensorRTGraph, is_tensor
from trt_scatter.networks.slice_scatter import index_constant
from trt_scatter.oracle import rules
from trt_scatter.oracle.scatter_update import OP, UPDATES_SHAPE, axis_value, check_node, check_axis_shape, check_scatter_update, check_scatter_update_static

if TYPE_CHECKING:
    from collections.abc import Callable

    import tensorrt as trt
    from numpy.typing import ArrayLike

    from trt_scatter.model.node import OpNode
    from trt_scatter.networks.graph import OnnxGraph, Value

IMPLS = ("native", "plugin")


def add_scatter_update(network: trt.INetworkDefinition, data: trt.ITensor, indices: trt.ITensor, updates: trt.ITensor, axis: ArrayLike | trt.ITensor, impl: str = "native") -> trt.ITensor:
    """Adds ScatterUpdate(data, indices, updates, axis) to ``network``; returns the output ITensor.

    ``indices`` is an ITensor (values known at run time). ``axis`` is a constant (an int, or a
    0-D/1-element integer array) or a 0-D/1-element integer ITensor (int32/int64 for the plugin; its value known at run
    time only: the native lowering then writes element by element, see :func:`_lower_runtime_axis`).
    ``impl="plugin"`` adds the ScatterUpdate plugin (needs full TensorRT's ``add_plugin_v3``) with
    a constant ``axis`` as a 1-element constant input (an array's int32/int64 type is kept; an int
    becomes int64).
    """
    graph = TensorRTGraph(network, OP)
    graph.check_arguments(OP, dict(data=data, indices=indices, updates=updates), parameters=dict(axis=axis))  # axis: an ITensor for the plugin
    graph.check_fixed_values(check_node, dict(data=data, indices=indices, updates=updates, axis=axis))
    rules.check_choice(OP, "impl", impl, IMPLS)
    if impl == "native":
        return lower_scatter_update(graph, data, indices, updates, axis)
    check(graph, data, indices, updates, axis)
    from trt_scatter.plugins import add_plugin_layer, require_plugin_layers

    graph.check_plugin_index_types(OP, {"indices": indices, "axis": axis})
    require_plugin_layers(network, "ScatterUpdate")  # before the axis constant: a refusal leaves the network as it was
    _assert_one_axis(graph, axis)
    axis_input = axis if is_tensor(axis) else graph.constant(index_constant(axis, [axis_value(axis)]))
    return add_plugin_layer(network, "ScatterUpdate", [data, indices, updates, axis_input])


def check(graph: TensorRTGraph | OnnxGraph, data: trt.ITensor | Value, indices: trt.ITensor | Value, updates: trt.ITensor | Value, axis: ArrayLike | trt.ITensor | Value) -> int | None:
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


def lower_scatter_update(graph: TensorRTGraph | OnnxGraph, data: trt.ITensor | Value, indices: trt.ITensor | Value, updates: trt.ITensor | Value, axis: ArrayLike | trt.ITensor | Value) -> trt.ITensor | Value:
    """The native lowering on ``graph`` (a :class:`~trt_scatter.networks.graph.TensorRTGraph` or ``OnnxGraph``)."""
    constant_axis = check(graph, data, indices, updates, axis)
    graph.check_scatter_type(OP, data)
    if constant_axis is None:
        _assert_one_axis(graph, axis)
        return _lower_runtime_axis(graph, data, indices, updates, axis)
    axis = constant_axis
    graph.assert_shape(OP, "updates", updates, lambda: graph.dims(data)[:axis] + graph.dims(indices) + graph.dims(data)[axis + 1 :],
                       f"must have the shape {UPDATES_SHAPE}")
    if graph.dtype_of(indices) not in (np.int32, np.int64):  # the index types TensorRT's and ONNX's arithmetic take
        indices = graph.cast(indices, INT64)
    indices = graph.indices_in_range(OP, indices, data, [axis], negative=False)  # on int32 or int64 as given: the values of
    if graph.dtype_of(indices) != INT64:  # constant ones are read from their constant layer (fixed_value), not through a cast
        indices = graph.cast(indices, INT64)  # row numbers are int64 (shape arithmetic); so are the indices in them
    pieces = []
    for j in range(axis):
        count = graph.dim(data, j)
        pieces.append((graph.arange(count), [count]))
    pieces.append((indices, graph.dims(indices)))
    return graph.scatter_rows(data, pieces, updates)


def _assert_one_axis(graph, axis):
    """A run-time ``axis`` of shape (n,), n known at run time only, must hold one value: the run-time half of
    :func:`~trt_scatter.oracle.scatter_update.check_axis_shape`, once every rule known at build time has passed."""
    if is_tensor(axis) and graph.shape_of(axis):
        graph.assert_length(OP, "axis", axis, 1, "must hold one value (an axis of data)")


def lower_node(graph: TensorRTGraph | OnnxGraph, node: OpNode, tensor: Callable[[str], trt.ITensor | Value]) -> trt.ITensor | Value:
    """A model's ScatterUpdate node (a :class:`trt_scatter.model.node.OpNode`) lowered on ``graph``: a constant
    axis gives the row lowering; ``tensor(name)``: the graph's value of an input."""
    data, indices, updates = tensor("data"), tensor("indices"), tensor("updates")
    axis = node.constant("axis")
    return lower_scatter_update(graph, data, indices, updates, axis if axis is not None else tensor("axis"))


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


# ---- the example network (trt_scatter.networks.examples) ---------------------------------------


def _example_shapes(params):
    data_shape = params["data_shape"]
    rules.check_rank_at_least(OP, "data", data_shape, 1)
    axis = rules.normalize_axis(OP, "axis", params["axis"], len(data_shape))
    indices_shape = tuple(params["indices_shape"])
    updates_shape = data_shape[:axis] + indices_shape + data_shape[axis + 1 :]
    check_scatter_update(data_shape, indices_shape, updates_shape, axis)  # at a profile's bounds too (check_profile)
    return {"data": data_shape, "indices": indices_shape, "updates": updates_shape}


def _example_indices(params, shapes):
    # Distinct indices: a random choice, without repeats, along the axis.
    data_shape = shapes["data"]
    axis = rules.normalize_axis(OP, "axis", params["axis"], len(data_shape))
    count = int(np.prod(shapes["indices"]))
    return {"indices": np.random.default_rng(0).permutation(data_shape[axis])[:count].reshape(shapes["indices"])}


def _add_example(network, inputs, params, index_dtype, impl="native"):
    axis = np.array([params["axis"]], dtype=index_dtype)
    return add_scatter_update(network, inputs["data"], inputs["indices"], inputs["updates"], axis, impl=impl)


#: Values for the defaults: ScatterUpdate-3, example 2; ``impl`` picks the builder's implementation.
EXAMPLE = Example(
    defaults={"data_shape": (3, 5), "indices_shape": (2,), "axis": 1},
    seed_values={
        "data": np.array([[-1, 1, -1, 3, 4], [-1, 6, -1, 8, 9], [-1, 11, 1, 13, 14]]),
        "indices": np.array([0, 2]),
        "updates": np.array([[1, 1], [1, 1], [1, 2]]),
    },
    shapes=_example_shapes, values=_example_indices, add=_add_example, options=("impl",),
)
