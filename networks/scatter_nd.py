"""ScatterND (ONNX) = ScatterNDUpdate-3 (OpenVINO) in a TensorRT network: ``IScatterLayer`` in ND mode.

Negative indices: as for ScatterElements, the builder maps [-s_j, -1] to [0, s_j-1] with
``where(indices < 0, indices + dims, indices)`` (``dims`` = data.shape[:k] broadcast along the
last axis of indices) so that the engine matches the oracle whatever TensorRT does with them,
then clamps each column to [0, s_j-1] so that forbidden values never write outside the output.
The last dimension of indices (k) must be known when the network is built. Indices of
another integer type than the backend's ScatterND takes (TensorRT: int32/int64; ONNX: int64)
are cast to int64 first.
"""

from trt_scatter.networks.graph import INT64, TensorRTGraph
from trt_scatter.oracle import rules
from trt_scatter.oracle.scatter_nd import OP, check_scatter_nd


def add_scatter_nd(network, data, indices, updates):
    """Adds ScatterND(data, indices, updates) to ``network``; returns the output ITensor."""
    graph = TensorRTGraph(network)
    graph.check_arguments(OP, dict(data=data, indices=indices, updates=updates))
    return lower_scatter_nd(graph, data, indices, updates)


def lower_scatter_nd(graph, data, indices, updates):
    """The builder on ``graph`` (a :class:`~trt_scatter.networks.graph.TensorRTGraph` or ``OnnxGraph``)."""
    rules.check_data_type(OP, "data", graph.dtype_of(data))
    rules.check_same_type(OP, "updates", graph.dtype_of(updates), graph.dtype_of(data))
    rules.check_index_type(OP, "indices", graph.dtype_of(indices))
    data_shape, indices_shape = graph.shape_of(data), graph.shape_of(indices)
    check_scatter_nd(data_shape, indices_shape, graph.shape_of(updates))
    k = indices_shape[-1]
    if not rules.is_known(k):
        raise rules.ScatterInputError(OP, "indices", "last dimension must be known when the network is built", f"shape {indices_shape}")
    if graph.dtype_of(indices) not in graph.ND_INDEX_TYPES:
        indices = graph.cast(indices, INT64)
    if k:
        indices = graph.indices_in_range(OP, indices, data, range(k), negative=True)
    return graph.scatter(data, indices, updates, "nd")
