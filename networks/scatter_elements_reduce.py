"""ScatterElementsReduce in a TensorRT network (the plugin) and in standard ONNX (the lowering).

TensorRT has no layer for it: ``IScatterLayer`` has no reduction (TensorRT 10.x, 11.x and TensorRT-RTX),
and TensorRT's ONNX parser refuses ScatterElements with one on TensorRT-RTX and hands it to NVIDIA's
``scatterElementsPlugin`` on full TensorRT (float atomics: sums differ from run to run). So in a network
this op is its plugin (``impl="plugin"``, full TensorRT's ``add_plugin_v3``; through ONNX on any
TensorRT), and ``impl="native"`` is refused in one line.

The lowering (:func:`lower_node`, run by ``trt-scatter lower`` and by ``check`` without a GPU) writes
ONNX's ScatterElements with the reduction, the composition of
:meth:`~trt_scatter.networks.graph._Composites.scatter_reduce` for ``mean`` and ``include_self=0``, so
onnxruntime runs it. Indices are wrapped and clamped into [0, s-1] first, as the other lowerings do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from trt_scatter.networks.graph import INT64, TensorRTGraph
from trt_scatter.oracle import reductions, rules
from trt_scatter.oracle.scatter_elements_reduce import OP, check_node, check_scatter_elements_reduce

if TYPE_CHECKING:
    from collections.abc import Callable

    import tensorrt as trt

    from trt_scatter.model.node import OpNode
    from trt_scatter.networks.graph import OnnxGraph, Value

IMPLS = ("plugin", "native")
LOWERING_OPSET = 18  #: the default-domain opset of the lowering: ScatterElements/ScatterND reductions min and max


def add_scatter_elements_reduce(network: trt.INetworkDefinition, data: trt.ITensor, indices: trt.ITensor, updates: trt.ITensor, axis: int = 0, reduction: str = "add", include_self: int = 1, impl: str = "plugin") -> trt.ITensor:
    """Adds ScatterElementsReduce(data, indices, updates) to ``network``; returns the output ITensor.

    ``impl="plugin"``: the plugin layer (needs full TensorRT's ``add_plugin_v3``; on TensorRT-RTX, use an ONNX
    node). ``impl="native"`` is refused: no TensorRT layer combines repeated targets.
    """
    graph = TensorRTGraph(network, OP)
    graph.check_arguments(OP, dict(data=data, indices=indices, updates=updates), dict(axis=axis))
    graph.check_fixed_values(check_node, dict(data=data, indices=indices, updates=updates), dict(axis=axis))
    rules.check_choice(OP, "impl", impl, IMPLS)
    if impl == "native":
        return lower_scatter_elements_reduce(graph, data, indices, updates, axis, reduction, include_self)
    axis, reduction, include_self = check(graph, data, indices, updates, axis, reduction, include_self)  # as the plugin's fields take them
    graph.check_plugin_index_types(OP, {"indices": indices})
    from trt_scatter.plugins import add_plugin_layer

    fields = {"axis": axis, "reduction": reduction, "include_self": include_self}
    return add_plugin_layer(network, "ScatterElementsReduce", [data, indices, updates], fields)


def check(graph: TensorRTGraph | OnnxGraph, data: trt.ITensor | Value, indices: trt.ITensor | Value, updates: trt.ITensor | Value, axis: int, reduction: str, include_self: int) -> tuple[int, str, int]:
    """The oracle's rules on what is known at build time; returns ``axis`` in [0, r-1], ``reduction`` (a str) and
    ``include_self`` (an int)."""
    reduction, include_self = reductions.check_attributes(OP, reduction, include_self, graph.dtype_of(data))
    rules.check_same_type(OP, "updates", graph.dtype_of(updates), graph.dtype_of(data))
    rules.check_index_type(OP, "indices", graph.dtype_of(indices))
    return check_scatter_elements_reduce(graph.shape_of(data), graph.shape_of(indices), graph.shape_of(updates), axis), reduction, include_self


def lower_scatter_elements_reduce(graph: TensorRTGraph | OnnxGraph, data: trt.ITensor | Value, indices: trt.ITensor | Value, updates: trt.ITensor | Value, axis: int = 0, reduction: str = "add", include_self: int = 1) -> trt.ITensor | Value:
    """The lowering on ``graph`` (an ``OnnxGraph``; a ``TensorRTGraph`` refuses it in one line)."""
    axis, reduction, include_self = check(graph, data, indices, updates, axis, reduction, include_self)
    graph.check_scatter_reduction(OP, reduction)
    if graph.dtype_of(indices) not in (np.int32, np.int64):  # ScatterElements' index types
        indices = graph.cast(indices, INT64)
    indices = graph.indices_in_range(OP, indices, data, [axis], negative=True)
    return graph.scatter_reduce(data, indices, updates, "element", reduction, include_self, axis=axis)


def lower_node(graph: TensorRTGraph | OnnxGraph, node: OpNode, tensor: Callable[[str], trt.ITensor | Value]) -> trt.ITensor | Value:
    """A model's ScatterElementsReduce node (a :class:`trt_scatter.model.node.OpNode`) lowered on ``graph``."""
    attributes = node.attributes()
    return lower_scatter_elements_reduce(graph, tensor("data"), tensor("indices"), tensor("updates"), attributes["axis"],
                                         attributes["reduction"], attributes["include_self"])
