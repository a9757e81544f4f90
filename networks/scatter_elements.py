"""ScatterElements (ONNX) in a TensorRT network: ``IScatterLayer`` in ELEMENT mode.

Negative indices: the oracle follows ONNX and accepts [-s, s-1]; TensorRT's documentation of
``IScatterLayer`` does not say that it accepts negative indices (and no engine can run here to
find out), so the builder adds ``where(indices < 0, indices + s, indices)`` in the indices' own
type before the scatter, and the engine matches the oracle either way. It then clamps to
[0, s-1] so that values outside [-s, s-1], which ONNX forbids but no layer can reject at run
time, never write outside the output (their result is unspecified). These are elementwise
layers on the indices that TensorRT fuses into one kernel.

TensorRT's IScatterLayer (ELEMENT mode) needs ``indices.shape[axis] <= data.shape[axis]``, which
ONNX does not ask: longer indices must repeat a target, whose result is undefined anyway. The
builder refuses them by name when both dimensions are known; otherwise it adds an assertion that
TensorRT checks when the network runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from trt_scatter.networks.example import Example
from trt_scatter.networks.graph import INT64, TensorRTGraph
from trt_scatter.oracle import rules
from trt_scatter.oracle.scatter_elements import OP, check_node, check_scatter_elements

if TYPE_CHECKING:
    from collections.abc import Sequence

    import tensorrt as trt

    from trt_scatter.model.node import OpNode
    from trt_scatter.networks.graph import OnnxGraph, Value


def add_scatter_elements(network: trt.INetworkDefinition, data: trt.ITensor, indices: trt.ITensor, updates: trt.ITensor, axis: int = 0) -> trt.ITensor:
    """Adds ScatterElements(data, indices, updates, axis) to ``network``; returns the output ITensor."""
    graph = TensorRTGraph(network, OP)
    graph.check_arguments(OP, dict(data=data, indices=indices, updates=updates), dict(axis=axis))
    graph.check_fixed_values(check_node, dict(data=data, indices=indices, updates=updates), dict(axis=axis))
    return lower_scatter_elements(graph, data, indices, updates, axis)


def lower_scatter_elements(graph: TensorRTGraph | OnnxGraph, data: trt.ITensor | Value, indices: trt.ITensor | Value, updates: trt.ITensor | Value, axis: int = 0) -> trt.ITensor | Value:
    """The builder on ``graph`` (a :class:`~trt_scatter.networks.graph.TensorRTGraph` or ``OnnxGraph``)."""
    rules.check_data_type(OP, "data", graph.dtype_of(data))
    rules.check_same_type(OP, "updates", graph.dtype_of(updates), graph.dtype_of(data))
    rules.check_index_type(OP, "indices", graph.dtype_of(indices))
    axis = check_scatter_elements(graph.shape_of(data), graph.shape_of(indices), graph.shape_of(updates), axis)
    graph.check_scatter_type(OP, data)
    if graph.ELEMENT_INDICES_WITHIN_DATA_ON_AXIS:
        check_within_data_on_axis(graph.shape_of(data), graph.shape_of(indices), axis)
    if graph.dtype_of(indices) not in (np.int32, np.int64):  # the index types of IScatterLayer and ONNX
        indices = graph.cast(indices, INT64)
    checked = [i for i in range(len(graph.shape_of(data))) if i != axis or graph.ELEMENT_INDICES_WITHIN_DATA_ON_AXIS]
    given = indices
    graph.assert_shape(OP, "updates", updates, lambda: graph.dims(given), f"must have {rules.ELEMENT_UPDATES_SHAPE}")
    indices = graph.indices_in_range(OP, indices, data, [axis], negative=True)  # its assertion first: the narrower rule
    graph.assert_shape_at_most(OP, "indices", given, data, checked,
                               "dimensions must be at most data's when the network runs (on the axis too, in TensorRT's IScatterLayer)")
    return graph.scatter(data, indices, updates, "element", axis=axis)


def check_within_data_on_axis(data_shape: Sequence[int | None], indices_shape: Sequence[int | None], axis: int) -> None:
    """TensorRT's IScatterLayer takes no more indices along the axis than data has there (ONNX allows it, with repeated
    targets), where both sizes are known."""
    index_dim, data_dim = indices_shape[axis], data_shape[axis]
    if rules.is_known(index_dim) and rules.is_known(data_dim) and index_dim > data_dim:
        raise rules.ScatterInputError(
            OP, "indices", f"dimension {axis} (the axis) must be at most data's ({data_dim}) in TensorRT's IScatterLayer, "
            "which ONNX allows only with repeated targets", f"shape {rules.show_shape(indices_shape)}"
        )


def check_layer(node: OpNode) -> None:
    """What TensorRT's IScatterLayer asks of a model's ScatterElements node beyond ONNX's rules (an
    :class:`~trt_scatter.model.node.OpNode`): :func:`check_within_data_on_axis`, where the shapes are known.
    :func:`trt_scatter.passes.validate.validate_profile` holds the nodes TensorRT's parser builds with the layer to it
    at each bound of a profile (TensorRT-RTX built an engine whose profile broke it, without a word)."""
    data, indices = node.shape("data"), node.shape("indices")
    if data is not None and indices is not None and len(data) == len(indices) and data:
        check_within_data_on_axis(data, indices, rules.normalize_axis(OP, "axis", node.attribute("axis", 0), len(data)))


# ---- the example network (trt_scatter.networks.examples) ---------------------------------------


def _example_shapes(params):
    data_shape = params["data_shape"]
    indices_shape = tuple(data_shape if params["indices_shape"] is None else params["indices_shape"])
    axis = check_scatter_elements(data_shape, indices_shape, indices_shape, params["axis"])  # at a profile's bounds too (check_profile)
    check_within_data_on_axis(data_shape, indices_shape, axis)  # the example is a TensorRT network
    return {"data": data_shape, "indices": indices_shape, "updates": indices_shape}


def _example_indices(params, shapes):
    # The cookbook's pattern, (h + w) % s: each line along the axis is shifted cyclically by
    # another coordinate, so no two updates share a target.
    data_shape = shapes["data"]
    axis = rules.normalize_axis(OP, "axis", params["axis"], len(data_shape))
    grid = np.indices(shapes["indices"])
    shift = grid[-1] if axis != len(data_shape) - 1 else grid[0] if len(data_shape) > 1 else 0
    return {"indices": (grid[axis] + shift) % data_shape[axis]}


def _add_example(network, inputs, params, index_dtype):
    return add_scatter_elements(network, inputs["data"], inputs["indices"], inputs["updates"], params["axis"])


#: ``indices_shape=None``: data's shape. Values: generated (the TensorRT cookbook's ELEMENT-mode pattern).
EXAMPLE = Example(
    defaults={"data_shape": (1, 3, 4, 5), "indices_shape": None, "axis": 2},
    shapes=_example_shapes, values=_example_indices, add=_add_example,
)
