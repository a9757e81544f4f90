"""ScatterNDReduce in a TensorRT network (the plugin) and in standard ONNX (the lowering).

As for :mod:`.scatter_elements_reduce`: ``IScatterLayer`` has no reduction and TensorRT's ONNX parser
refuses ScatterND with one ("ScatterND with reduction is not supported"), so in a network this op is its
plugin and ``impl="native"`` is refused in one line. The lowering writes ONNX's ScatterND with the
reduction (the composition of :meth:`~trt_scatter.networks.graph._Composites.scatter_reduce` for ``mean``
and ``include_self=0``), indices cast to int64 (ONNX's ScatterND takes no other), wrapped and clamped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trt_scatter.networks.graph import TensorRTGraph
from trt_scatter.networks.scatter_nd import index_rows
from trt_scatter.oracle import reductions, rules
from trt_scatter.oracle.scatter_nd_reduce import OP, check_node, check_scatter_nd_reduce

if TYPE_CHECKING:
    from collections.abc import Callable

    import tensorrt as trt

    from trt_scatter.model.node import OpNode
    from trt_scatter.networks.graph import OnnxGraph, Value

IMPLS = ("plugin", "native")
LOWERING_OPSET = 18  #: the default-domain opset of the lowering: ScatterElements/ScatterND reductions min and max


def add_scatter_nd_reduce(network: trt.INetworkDefinition, data: trt.ITensor, indices: trt.ITensor, updates: trt.ITensor, reduction: str = "add", include_self: int = 1, impl: str = "plugin") -> trt.ITensor:
    """Adds ScatterNDReduce(data, indices, updates) to ``network``; returns the output ITensor (see
    :func:`~trt_scatter.networks.scatter_elements_reduce.add_scatter_elements_reduce` for ``impl``)."""
    graph = TensorRTGraph(network, OP)
    graph.check_arguments(OP, dict(data=data, indices=indices, updates=updates))
    graph.check_fixed_values(check_node, dict(data=data, indices=indices, updates=updates))
    rules.check_choice(OP, "impl", impl, IMPLS)
    if impl == "native":
        return lower_scatter_nd_reduce(graph, data, indices, updates, reduction, include_self)
    reduction, include_self = check(graph, data, indices, updates, reduction, include_self)  # as the plugin's fields take them
    graph.check_plugin_index_types(OP, {"indices": indices})
    from trt_scatter.plugins import add_plugin_layer

    return add_plugin_layer(network, "ScatterNDReduce", [data, indices, updates], {"reduction": reduction, "include_self": include_self})


def check(graph: TensorRTGraph | OnnxGraph, data: trt.ITensor | Value, indices: trt.ITensor | Value, updates: trt.ITensor | Value, reduction: str, include_self: int) -> tuple[str, int]:
    """The oracle's rules on what is known at build time; returns ``reduction`` (a str) and ``include_self`` (an int)."""
    reduction, include_self = reductions.check_attributes(OP, reduction, include_self, graph.dtype_of(data))
    rules.check_same_type(OP, "updates", graph.dtype_of(updates), graph.dtype_of(data))
    rules.check_index_type(OP, "indices", graph.dtype_of(indices))
    check_scatter_nd_reduce(graph.shape_of(data), graph.shape_of(indices), graph.shape_of(updates))
    return reduction, include_self


def lower_scatter_nd_reduce(graph: TensorRTGraph | OnnxGraph, data: trt.ITensor | Value, indices: trt.ITensor | Value, updates: trt.ITensor | Value, reduction: str = "add", include_self: int = 1) -> trt.ITensor | Value:
    """The lowering on ``graph`` (an ``OnnxGraph``; a ``TensorRTGraph`` refuses it in one line)."""
    reduction, include_self = check(graph, data, indices, updates, reduction, include_self)
    graph.check_scatter_reduction(OP, reduction)
    return graph.scatter_reduce(data, index_rows(graph, OP, data, indices), updates, "nd", reduction, include_self)


def lower_node(graph: TensorRTGraph | OnnxGraph, node: OpNode, tensor: Callable[[str], trt.ITensor | Value]) -> trt.ITensor | Value:
    """A model's ScatterNDReduce node (a :class:`trt_scatter.model.node.OpNode`) lowered on ``graph``."""
    attributes = node.attributes()
    return lower_scatter_nd_reduce(graph, tensor("data"), tensor("indices"), tensor("updates"), attributes["reduction"],
                                   attributes["include_self"])
