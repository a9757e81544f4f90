"""TensorScatter-24 (ONNX) in a TensorRT network: native lowering to stock layers, or the CacheScatter plugin.

Native lowering (``impl="native"``, any TensorRT, including TensorRT-RTX, and standard ONNX through
:class:`~trt_scatter.networks.graph.OnnxGraph`): the cache is seen as rows of shape
``past_cache.shape[axis+1:]`` (a reshape over its first ``axis + 1`` axes, B x P x M rows); entry
``(b, p, s)`` of the update goes to row ``(b*P + p)*M + position(b, s)`` with ``position = w[b] + s``
(linear) or ``(w[b] mod M + s) mod M`` (circular), computed with ``arange`` and elementwise layers
broadcast over the grid ``update.shape[:axis+1]``; one ``IScatterLayer`` in ND mode writes the rows and
a reshape restores the cache's shape. Index bytes per updated element: ``8 / prod(shape[axis+1:])``.

Write indices the spec forbids (below 0; in linear mode, leaving the update no room), which no layer
can refuse at run time, are clamped: a negative one to 0, and a linear position into [0, M-1], so the
engine never writes outside its output; their result is unspecified (the plugin skips such a batch
row and counts it). An update longer than the cache on the axis, known at run time only, is asserted
against (``IAssertionLayer``); where nothing can assert (ONNX), a circular position is taken mod M in full
and a linear one clamped, so that it stays inside too. ``mode`` and ``axis`` are attributes, known when
the network is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from trt_scatter.networks.graph import INT64, TensorRTGraph, describe, grid_is_too_deep, is_tensor
from trt_scatter.oracle import rules
from trt_scatter.oracle.tensor_scatter import DEFAULT_AXIS, OP, UPDATE_SHAPE, check_mode, check_node, check_tensor_scatter

if TYPE_CHECKING:
    from collections.abc import Callable

    import tensorrt as trt

    from trt_scatter.model.node import OpNode
    from trt_scatter.networks.graph import OnnxGraph, Value

IMPLS = ("native", "plugin")


def add_tensor_scatter(network: trt.INetworkDefinition, past_cache: trt.ITensor, update: trt.ITensor, write_indices: trt.ITensor | None = None, axis: int = DEFAULT_AXIS, mode: str = "linear", impl: str = "native") -> trt.ITensor:
    """Adds TensorScatter(past_cache, update[, write_indices]) to ``network``; returns the output ITensor.

    ``write_indices`` is a 1-D int32/int64 ITensor of one index per batch row, or None (every row writes
    from 0); ``axis`` (not 0, the batch axis) and ``mode`` ("linear" or "circular") are the op's attributes.
    ``impl="plugin"`` adds the CacheScatter plugin (needs full TensorRT's ``add_plugin_v3``).
    """
    graph = TensorRTGraph(network, OP)
    tensors = dict(past_cache=past_cache, update=update) | ({} if write_indices is None else {"write_indices": write_indices})
    graph.check_arguments(OP, tensors, dict(axis=axis))
    if is_tensor(mode):  # an ITensor shown by its name, not as a Python object
        raise rules.ScatterInputError(OP, "mode", "must be 'linear' or 'circular' (a string attribute)", describe(mode))
    graph.check_fixed_values(check_node, tensors, dict(axis=axis, mode=mode))
    rules.check_choice(OP, "impl", impl, IMPLS)
    if impl == "native":
        return lower_tensor_scatter(graph, past_cache, update, write_indices, axis, mode)
    axis = check(graph, past_cache, update, write_indices, axis, mode)
    graph.check_plugin_index_types(OP, {"write_indices": write_indices})
    from trt_scatter.plugins import add_plugin_layer

    return add_plugin_layer(network, "CacheScatter", list(tensors.values()), {"axis": axis, "mode": check_mode(mode)})  # a str, as the field takes it


def check(graph: TensorRTGraph | OnnxGraph, past_cache: trt.ITensor | Value, update: trt.ITensor | Value, write_indices: trt.ITensor | Value | None, axis: int, mode: str) -> int:
    """The oracle's rules on what is known at build time; returns axis in [1, rank-1]."""
    rules.check_data_type(OP, "past_cache", graph.dtype_of(past_cache))
    rules.check_same_type(OP, "update", graph.dtype_of(update), graph.dtype_of(past_cache), other="past_cache")
    check_mode(mode)
    indices_shape = None
    if write_indices is not None:
        rules.check_type_in(OP, "write_indices", graph.dtype_of(write_indices), ("int32", "int64"))
        indices_shape = graph.shape_of(write_indices)
    return check_tensor_scatter(graph.shape_of(past_cache), graph.shape_of(update), indices_shape, axis)


def _assert_constant_starts_fit(graph, write_indices, size, count):
    """Linear mode: constant write indices (a network's constant layer) whose update must fit a cache length ``size``
    or an update length ``count`` known at run time only are asserted to (``w + S <= M``), as the oracle checks; the
    clamp that follows would write them elsewhere, a place the spec does not define. Static lengths: the oracle's check
    when the network is built (``check_fixed_values``)."""
    values = graph.fixed_value(write_indices) if write_indices is not None and graph.RUNTIME_ASSERTIONS else None
    if values is None or values.size == 0 or not (is_tensor(size) or is_tensor(count)):
        return
    room = graph.binary("sub", _tensor(graph, size, (1,)), _tensor(graph, count, (1,)))  # M - S: w + S would overflow at w near 2**63
    graph.assertion(graph.binary("less", graph.constant(np.full(1, int(values.max()) - 1, INT64)), room),
                    f"{OP}: 'write_indices' values must be at most max_sequence_length - sequence_length in linear mode when the network runs "
                    f"(the update must fit; its constant values reach {int(values.max())})")


def lower_tensor_scatter(graph: TensorRTGraph | OnnxGraph, past_cache: trt.ITensor | Value, update: trt.ITensor | Value, write_indices: trt.ITensor | Value | None = None, axis: int = DEFAULT_AXIS, mode: str = "linear") -> trt.ITensor | Value:
    """The native lowering on ``graph`` (a :class:`~trt_scatter.networks.graph.TensorRTGraph` or ``OnnxGraph``)."""
    axis = check(graph, past_cache, update, write_indices, axis, mode)
    graph.check_scatter_type(OP, past_cache, "past_cache")
    rank = len(graph.shape_of(past_cache))
    batch, size, count = graph.dim(past_cache, 0), graph.dim(past_cache, axis), graph.dim(update, axis)
    inner = graph.product([graph.dim(past_cache, d) for d in range(1, axis)])  # P
    zero = graph.constant(np.zeros((1, 1), INT64))
    offsets = graph.reshape(graph.arange(count), (1, -1))  # s, (1, S)
    if write_indices is None:
        starts = zero
    else:
        starts = write_indices if graph.dtype_of(write_indices) == INT64 else graph.cast(write_indices, INT64)
        starts = graph.binary("max", graph.reshape(starts, (-1, 1)), zero)  # (B, 1), none below 0
    graph.assert_shape(OP, "update", update, lambda: graph.dims(past_cache)[:axis] + [count] + graph.dims(past_cache)[axis + 1 :], f"must have {UPDATE_SHAPE}")
    if write_indices is not None:
        graph.assert_shape(OP, "write_indices", write_indices, [batch], "must hold one write index per batch row: (batch_size,)")
    graph.assert_shape_at_most(OP, "update", update, past_cache, [axis],
                               "must have at most past_cache's entries on the axis when the network runs (sequence_length <= max_sequence_length)")
    if check_mode(mode) == "circular":
        modulus = _tensor(graph, _max(graph, size, 1), (1, 1))  # M, or 1 where M is 0 (nothing is written then)
        starts = graph.binary("sub", starts, graph.binary("mul", graph.binary("div", starts, modulus), modulus))  # w mod M: w + s may overflow
        positions = graph.binary("add", starts, offsets)
        # (w mod M + s) mod M in full: an update longer than the cache, which the spec forbids (asserted where TensorRT
        # can), wraps around more than once and stays inside the cache
        positions = graph.binary("sub", positions, graph.binary("mul", graph.binary("div", positions, modulus), modulus))
    else:
        _assert_constant_starts_fit(graph, write_indices, size, count)
        positions = graph.indices_in_range(OP, graph.binary("add", starts, offsets), past_cache, [axis], negative=False)
    # Row of (b, p, s): (b*P + p)*M + position(b, s), broadcast over the grid (B, D1, ..., D_{axis-1}, S).
    grid = [batch] + [graph.dim(past_cache, d) for d in range(1, axis)] + [count]
    blocks = graph.binary("mul", graph.arange(graph.product([batch, inner])), _tensor(graph, size, (1,)))
    blocks = graph.reshape(blocks, graph.shape_from(grid[:-1] + [1]))
    rows_of_positions = batch if write_indices is not None else 1  # without write indices every batch row has the same
    placed = graph.reshape(positions, graph.shape_from([rows_of_positions] + [1] * (axis - 1) + [count]))
    tail = [graph.dim(past_cache, d) for d in range(axis + 1, rank)]
    if grid_is_too_deep(grid):
        rows, update = graph.grid_as_one_axis(graph.binary("add", blocks, placed), grid, update, tail)
    else:
        rows = graph.reshape(graph.binary("add", blocks, placed), graph.shape_from(grid + [1]))
    if all(isinstance(d, int) and d > 0 for d in tail):
        flat_shape = (-1,) + tuple(tail)
    else:  # -1 cannot be inferred next to a 0 (an empty row)
        flat_shape = graph.shape_from([graph.product(grid[:-1] + [size])] + tail, infer=False)
    written = graph.scatter(graph.reshape(past_cache, flat_shape), rows, update, "nd")
    cache_shape = graph.shape_of(past_cache)
    return graph.reshape(written, cache_shape if all(d >= 0 for d in cache_shape) else graph.shape_tensor(past_cache))


def lower_node(graph: TensorRTGraph | OnnxGraph, node: OpNode, tensor: Callable[[str], trt.ITensor | Value]) -> trt.ITensor | Value:
    """A model's TensorScatter or CacheScatter node (a :class:`trt_scatter.model.node.OpNode`) lowered on ``graph``;
    ``tensor(name)``: the graph's value of an input."""
    indices = tensor("write_indices") if "write_indices" in node.inputs else None
    return lower_tensor_scatter(graph, tensor("past_cache"), tensor("update"), indices,
                                node.attribute("axis", DEFAULT_AXIS), node.attribute("mode", "linear"))


def default_input(graph: TensorRTGraph | OnnxGraph, node: OpNode, tensor: Callable[[str], trt.ITensor | Value], name: str) -> trt.ITensor | Value:
    """An optional input where a node leaves it out and the AOT form (whose inputs are fixed) needs it: write_indices,
    zeros, one per batch row (every row writes from position 0, as the spec says); a constant where the batch is static."""
    return graph.binary("mul", graph.arange(graph.dim(tensor("past_cache"), 0)), graph.constant(np.zeros(1, INT64)))


def _max(graph, dim, value):
    return max(dim, value) if isinstance(dim, int) else graph.binary("max", dim, graph.as_tensor(value))


def _tensor(graph, dim, shape):
    """A dimension (int or 1-element tensor) as an int64 tensor of ``shape`` (all ones)."""
    if not is_tensor(dim):
        return graph.constant(np.full(shape, dim, INT64))
    return graph.reshape(dim, shape)
