"""ScatterND (ONNX) = ScatterNDUpdate-3 (OpenVINO) in a TensorRT network: ``IScatterLayer`` in ND mode.

Negative indices: as for ScatterElements, the builder maps [-s_j, -1] to [0, s_j-1] with
``where(indices < 0, indices + dims, indices)`` (``dims`` = data.shape[:k] broadcast along the
last axis of indices) so that the engine matches the oracle whatever TensorRT does with them,
then clamps each column to [0, s_j-1] so that forbidden values never write outside the output.
The last dimension of indices (k) must be a static size (the number of axes each row addresses). Indices of
another integer type than the backend's ScatterND takes (TensorRT: int32/int64; ONNX: int64)
are cast to int64 first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from trt_scatter.networks.example import Example
from trt_scatter.networks.graph import INT64, TensorRTGraph
from trt_scatter.oracle import rules
from trt_scatter.oracle.scatter_nd import OP, check_node, check_scatter_nd

if TYPE_CHECKING:
    import tensorrt as trt

    from trt_scatter.networks.graph import OnnxGraph, Value


def add_scatter_nd(network: trt.INetworkDefinition, data: trt.ITensor, indices: trt.ITensor, updates: trt.ITensor) -> trt.ITensor:
    """Adds ScatterND(data, indices, updates) to ``network``; returns the output ITensor."""
    graph = TensorRTGraph(network, OP)
    graph.check_arguments(OP, dict(data=data, indices=indices, updates=updates))
    graph.check_fixed_values(check_node, dict(data=data, indices=indices, updates=updates))
    return lower_scatter_nd(graph, data, indices, updates)


def lower_scatter_nd(graph: TensorRTGraph | OnnxGraph, data: trt.ITensor | Value, indices: trt.ITensor | Value, updates: trt.ITensor | Value) -> trt.ITensor | Value:
    """The builder on ``graph`` (a :class:`~trt_scatter.networks.graph.TensorRTGraph` or ``OnnxGraph``)."""
    rules.check_data_type(OP, "data", graph.dtype_of(data))
    rules.check_same_type(OP, "updates", graph.dtype_of(updates), graph.dtype_of(data))
    rules.check_index_type(OP, "indices", graph.dtype_of(indices))
    check_scatter_nd(graph.shape_of(data), graph.shape_of(indices), graph.shape_of(updates))
    graph.check_scatter_type(OP, data)
    rows = index_rows(graph, OP, data, indices)  # refuses a k known at run time only
    k = graph.shape_of(indices)[-1]
    graph.assert_shape(OP, "updates", updates, lambda: graph.dims(indices)[:-1] + graph.dims(data)[k:], f"must have the shape {rules.ND_UPDATES_SHAPE}")
    return graph.scatter(data, rows, updates, "nd")


def index_rows(graph: TensorRTGraph | OnnxGraph, op: str, data: trt.ITensor | Value, indices: trt.ITensor | Value) -> trt.ITensor | Value:
    """ScatterND's index rows (ScatterNDReduce's too: ``op`` names it) as the scatter layer takes them: of a type it
    takes, negative values wrapped, and their length ``k`` known when the network is built."""
    indices_shape = graph.shape_of(indices)
    k = indices_shape[-1]
    if not rules.is_known(k):
        raise rules.ScatterInputError(op, "indices", "last dimension must be a static size: it is the number of axes each row addresses, "
                                      "which the network or the lowered model is built for", f"shape {rules.show_shape(indices_shape)}")
    if graph.dtype_of(indices) not in graph.ND_INDEX_TYPES:
        indices = graph.cast(indices, INT64)
    return graph.indices_in_range(op, indices, data, range(k), negative=True) if k else indices


# ---- the example network (trt_scatter.networks.examples) ---------------------------------------


def _example_shapes(params):
    data_shape, indices_shape = params["data_shape"], tuple(params["indices_shape"])
    rules.check_rank_at_least(OP, "indices", indices_shape, 1)
    updates_shape = indices_shape[:-1] + data_shape[indices_shape[-1] :]
    check_scatter_nd(data_shape, indices_shape, updates_shape)  # at a profile's bounds too (check_profile)
    return {"data": data_shape, "indices": indices_shape, "updates": updates_shape}


def _example_indices(params, shapes):
    # Distinct rows: a random choice, without repeats, of data's first k coordinates.
    data_shape, indices_shape = shapes["data"], shapes["indices"]
    k = indices_shape[-1]
    rows, targets = int(np.prod(indices_shape[:-1])), int(np.prod(data_shape[:k]))
    if rows > targets:  # a repeated target's result is undefined (k = 0: each row writes the whole of data)
        raise rules.ScatterInputError(OP, "indices", f"must have at most {targets} rows for distinct rows", f"shape {indices_shape}")
    if not k:  # no coordinates: the one row writes the whole of data
        return {"indices": np.zeros(indices_shape, np.int64)}
    flat = np.random.default_rng(0).permutation(targets)[:rows]
    return {"indices": np.stack(np.unravel_index(flat, data_shape[:k]), axis=-1).reshape(indices_shape)}


def _add_example(network, inputs, params, index_dtype):
    return add_scatter_nd(network, inputs["data"], inputs["indices"], inputs["updates"])


#: Values for the defaults: ScatterNDUpdate-3, example 1. The last dimension of indices stays static
#: in the dynamic network (the builder needs k).
EXAMPLE = Example(
    defaults={"data_shape": (8,), "indices_shape": (4, 1)},
    seed_values={"data": np.arange(1, 9), "indices": np.array([[4], [3], [1], [7]]), "updates": np.array([9, 10, 11, 12])},
    shapes=_example_shapes, values=_example_indices, add=_add_example, static_dims={"indices": (-1,)},
)
