"""Hand ONNX's own nodes that TensorRT cannot build, or builds wrong, to trt-scatter's plugins.

A ``trt_scatter`` op whose plugin can run some nodes of one of ONNX's own ops says so in the registry
(:attr:`trt_scatter.ops.Op.serves`), and its oracle module says which nodes and how:
``from_standard(node)`` takes the standard node (a :class:`~trt_scatter.model.node.OpNode`) and
returns ``{"inputs": [...tensor names], "attributes": {...}, "why": ...}`` for the plugin node that computes the
same output (``why``: what TensorRT would do wrong, kept as the node's ``doc_string``), or ``None`` for a node
TensorRT builds itself. This pass replaces each such node in place (same name, same output), imports the
``trt_scatter`` domain, and leaves every other node as it is;
``trt-scatter build --plugins`` and ``trt-scatter check`` run it before TensorRT parses the model::

    model = to_plugins(onnx.load("model.onnx"))               # a new ModelProto
    network = NetworkFromOnnxBytes(BytesFromOnnx(UsePlugins(OnnxFromPath("model.onnx"))))

The result means what the model meant (the tests run both with :mod:`trt_scatter.reference`) and is
validated like any model with ``trt_scatter`` nodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from polygraphy import util
from polygraphy.backend.base import BaseLoader

from trt_scatter import oracle, ops
from trt_scatter.model import as_model, indexed_nodes
from trt_scatter.model.node import OpNode

if TYPE_CHECKING:
    import os

    import onnx

    from trt_scatter.model import Model


def served(model: Model) -> dict[str, onnx.NodeProto]:
    """``{first output of a node of model.proto: its plugin node}`` for every standard node of ``model`` (a
    :class:`~trt_scatter.model.Model`) that a plugin serves; empty where TensorRT builds every node itself. Keyed by
    output name, which is the node's alone in a model: the Python objects protobuf hands out for a node may differ
    from one walk of the graph to the next, and so their ids."""
    from onnx import helper

    serving = {}  # standard op type -> the plugin ops that serve some of its nodes
    for op in ops.OPS.values():
        if op.serves:
            serving.setdefault(op.serves, []).append(op)
    replaced = {}
    for index, node in indexed_nodes(model.proto.graph):
        standard = ops.op_of(node)
        if standard is None or standard.is_plugin:
            continue
        for op in serving.get(node.op_type, ()):
            plugin = oracle.module(op).from_standard(OpNode(node, index, model.tensors, standard))
            if plugin is not None:
                replaced[node.output[0]] = helper.make_node(op.name, plugin["inputs"], list(node.output), name=node.name, domain=ops.DOMAIN,
                                                            doc_string=plugin.get("why", ""), **plugin["attributes"])
                break
    return replaced


def to_plugins(model: Model | onnx.ModelProto | str | os.PathLike) -> onnx.ModelProto:
    """``model`` (a path, an ``onnx.ModelProto`` or a :class:`~trt_scatter.model.Model`, left unchanged) with every
    standard node a plugin serves replaced by that plugin's node; the model's own ``ModelProto`` if there is none."""
    import onnx
    from onnx import helper

    model = as_model(model)
    replaced = served(model)
    if not replaced:
        return model.proto
    converted = onnx.ModelProto()
    converted.CopyFrom(model.proto)
    for _, node in indexed_nodes(converted.graph):
        if node.output and node.output[0] in replaced:
            node.CopyFrom(replaced[node.output[0]])
    if not any(opset.domain == ops.DOMAIN for opset in converted.opset_import):
        converted.opset_import.append(helper.make_opsetid(ops.DOMAIN, ops.VERSION))
    return converted


class UsePlugins(BaseLoader):
    """A polygraphy loader: the model (a path, an ``onnx.ModelProto``, or a loader of either) after :func:`to_plugins`."""

    def __init__(self, model: Any) -> None:
        self._model = model

    @util.check_called_by("__call__")
    def call_impl(self) -> onnx.ModelProto:
        model, _ = util.invoke_if_callable(self._model)
        return to_plugins(model)
