"""Hand a model's ``trt_scatter`` nodes to the AOT plugins: write the attributes TensorRT's ONNX parser reads.

TensorRT's ONNX parser turns a node it does not know into a plugin: it looks up a creator named
after the op type, version ``plugin_version`` (default "1") and namespace ``plugin_namespace``
(default "", then, from TensorRT 10.10, the node's domain). For a ``tensorrt.plugin`` (QDP)
creator it asks for the AOT implementation when the node says ``aot=1``, the Python (JIT) one when
it says ``aot=0``, and otherwise lets the network's PREFER_AOT/PREFER_JIT flags, or the only
implementation defined, decide (onnx-tensorrt ``importerUtils.cpp`` ``createPlugin`` and
``onnxOpCheckers.cpp`` ``FallbackPluginImporter``, TensorRT 10.9+; NVIDIA/TensorRT
``samples/python/quickly_deployable_plugins/README.md``, "ONNX model with an AOT plugin";
CHANGELOG.md 10.9 and 10.10). So, for every ``trt_scatter`` node, this pass:

- refuses, in one line, a node its op's AOT kernel cannot run (the reductions': floats, ``mean``,
  ``include_self=0``, which need the Python plugin's ordered sort and its workspace);

- sets ``plugin_namespace="trt_scatter"`` and ``aot=1`` (:data:`trt_scatter.ops.AOT_ATTRIBUTES`):
  the node then names the AOT plugins of :mod:`trt_scatter.plugins.aot` on every TensorRT >= 10.9,
  never the Python plugins (namespace "");
- drops ``inplace``: the AOT form's output is always aliased with data (see the plugin module);
- writes every other attribute the node leaves out with its default: TensorRT hands the AOT plugin the
  values of the attributes a node has, by position, so one left out would shift the rest;
- gives a node without its optional axes input its default (:attr:`trt_scatter.ops.Op.default_axes_from`:
  SliceScatter's axes are 0..n-1 for n = len(start)), as an AOT plugin's inputs are fixed: an int64
  initializer where that input is one, else ``Range(0, Size(start), 1)``; and any other optional input
  left out the default its op's lowering module writes (``default_input`` of :mod:`trt_scatter.networks`:
  CacheScatter's write indices are zeros, one per batch row), a constant where the shapes are static.

Op types, inputs and values stay as they are, so the model means what it meant (the tests run both
with :mod:`trt_scatter.reference`). Running the pass twice changes nothing more.

:func:`to_aot` is the function; :class:`ToAotPlugins` the polygraphy loader::

    model = ToAotPlugins("model.onnx")()                                  # or ToAotPlugins(OnnxFromPath(...))
    network = NetworkFromOnnxBytes(BytesFromOnnx(ToAotPlugins("model.onnx")))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from polygraphy import util
from polygraphy.backend.base import BaseLoader

from trt_scatter.model import ModelError, as_model, fresh_name, graph_names, indexed_nodes, node_label, opset_version
from trt_scatter.model.node import OpNode
from trt_scatter.ops import AOT_ATTRIBUTES, is_trt_scatter, op_of
from trt_scatter.oracle.rules import ScatterInputError

if TYPE_CHECKING:
    import os

    import onnx

    from trt_scatter.model import Model

RANGE_OPSET = 11  # Range arrives in opset 11 of the default domain


def to_aot(model: Model | onnx.ModelProto | str | os.PathLike) -> onnx.ModelProto:
    """A copy of ``model`` (a path, an ``onnx.ModelProto`` or a :class:`~trt_scatter.model.Model`) whose
    ``trt_scatter`` nodes go to the AOT plugins. The model is validated first; a ``trt_scatter`` node in an If or Loop
    body, or one the AOT kernels cannot run, is a :class:`~trt_scatter.model.ModelError`."""
    import onnx

    from trt_scatter.model.graph import nested_trt_scatter_node
    from trt_scatter.passes.validate import validate

    model = as_model(model)
    validate(model)  # a mistake the model shows, in one line, not a converted copy of it
    nested = nested_trt_scatter_node(model.proto.graph)
    if nested is not None:  # left as it is, it would name the Python plugin, in an engine meant to run without Python
        raise ModelError(f"{nested[0]}: lies in a subgraph of {nested[1]}; the AOT form takes nodes of the main graph only")
    _refuse_what_the_aot_form_cannot_run(model)
    converted = onnx.ModelProto()
    converted.CopyFrom(model.proto)
    graph = converted.graph
    initializers = {init.name: init for init in graph.initializer}
    taken = graph_names(graph)
    nodes, tensors = [], []
    for index, node in enumerate(graph.node):
        op = op_of(node) if is_trt_scatter(node) else None
        if op is not None:
            if _missing_axes(op, node):
                nodes.extend(_default_axes(converted, op, node, index, initializers, taken))
            nodes.extend(_default_inputs(converted, op, node, index, taken, tensors))
            _set_aot_attributes(node, op)
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    return converted


def _refuse_what_the_aot_form_cannot_run(model):
    """A node its op's AOT kernel cannot run (the kernel module's optional ``check_aot(node)``: the reductions'
    floats, mean and include_self=0), refused in one line naming the node, before TensorRT is asked."""
    from trt_scatter import plugins

    for index, node in indexed_nodes(model.proto.graph):
        op = op_of(node) if is_trt_scatter(node) else None
        check = getattr(plugins.module(op), "check_aot", None) if op is not None else None
        if check is not None:
            checked = OpNode(node, index, model.tensors, op)
            try:
                check(checked)
            except ScatterInputError as err:
                raise checked.error(err) from None


class ToAotPlugins(BaseLoader):
    """A polygraphy loader: the model (a path, an ``onnx.ModelProto``, or a loader of either) after :func:`to_aot`."""

    def __init__(self, model: Any) -> None:
        self._model = model

    @util.check_called_by("__call__")
    def call_impl(self) -> onnx.ModelProto:
        model, _ = util.invoke_if_callable(self._model)
        return to_aot(model)


def _missing_axes(op, node):
    """Whether ``node`` leaves out an axes input that has a default (``op.default_axes_from``)."""
    if op.default_axes_from is None:
        return False
    axes = op.inputs.index(op.axes_input)
    return len(node.input) <= axes or not node.input[axes]


def _default_inputs(model, op, node, index, taken, tensors):
    """Sets each optional input ``node`` leaves out (axes aside, see :func:`_default_axes`) to the default its op's
    lowering module computes (``default_input(graph, node, tensor, name)``); returns the nodes that compute them and
    adds their initializers. ``tensors``: a one-item cache of the model's :class:`ModelTensors`, read once if needed."""
    given = list(node.input)
    missing = [(position, name) for position, name in enumerate(op.inputs) if position >= op.min_inputs and name != op.axes_input
               and (position >= len(given) or not given[position])]  # fmt: skip
    if not missing:
        return []
    from trt_scatter import networks
    from trt_scatter.model.node import OpNode
    from trt_scatter.model.tensors import ModelTensors
    from trt_scatter.networks.graph import OnnxGraph, Value

    if not tensors:
        tensors.append(ModelTensors(model))
    graph = OnnxGraph(prefix=f"{node.name or node.output[0]}/", taken=taken)
    checked = OpNode(node, index, tensors[0], op)

    def tensor(name):
        shape = checked.shape(name)
        if shape is None:
            raise ModelError(f"{checked.label}: the AOT form needs '{missing[0][1]}', whose default follows from '{name}', of unknown rank")
        return Value(checked.inputs[name], checked.dtype(name), shape)

    for position, name in missing:
        value = networks.module(op).default_input(graph, checked, tensor, name)  # a fresh name: a node's output or an initializer
        while len(node.input) <= position:
            node.input.append("")
        node.input[position] = value.name
    read = {name for default in graph.nodes for name in default.input} | set(node.input)
    model.graph.initializer.extend(init for init in graph.initializers if init.name in read)
    return graph.nodes


def _set_aot_attributes(node, op):
    """The op's attributes, each left out written with its default: TensorRT hands an AOT plugin's ``aot_impl`` the
    values of the attributes the node has, by position (``_plugin_class.py``, ``get_launch_params``), so one left out
    would shift the others onto the wrong names. Then :data:`AOT_ATTRIBUTES`; ``inplace`` dropped."""
    from onnx import helper

    kept = [attribute for attribute in node.attribute if attribute.name not in AOT_ATTRIBUTES and attribute.name != "inplace"]
    given = {attribute.name for attribute in kept}
    defaults = [helper.make_attribute(name, attribute.default) for name, attribute in op.attributes.items()
                if name != "inplace" and name not in given]
    del node.attribute[:]
    node.attribute.extend(kept + defaults + [helper.make_attribute(name, value) for name, value in AOT_ATTRIBUTES.items()])


def _default_axes(model, op, node, index, initializers, taken):
    """Sets the node's axes input to 0..n-1, n the length of its ``op.default_axes_from`` input (SliceScatter's
    start); returns the nodes that compute it (none where that input is an initializer)."""
    from onnx import helper, numpy_helper

    start = node.input[op.inputs.index(op.default_axes_from)]
    name = fresh_name(f"{node.name or node.output[0]}_default_axes", taken)
    del node.input[op.inputs.index(op.axes_input):]
    node.input.append(name)
    if start in initializers:
        count = int(np.prod(initializers[start].dims)) if initializers[start].dims else 1
        model.graph.initializer.append(numpy_helper.from_array(np.arange(count, dtype=np.int64), name))
        return []
    _check_range_opset(model, op, node, index)
    zero, one, size = (fresh_name(f"{name}_{part}", taken) for part in ("zero", "one", "size"))
    model.graph.initializer.extend([numpy_helper.from_array(np.array(0, np.int64), zero),
                                    numpy_helper.from_array(np.array(1, np.int64), one)])
    return [helper.make_node("Size", [start], [size], name=size),
            helper.make_node("Range", [zero, size, one], [name], name=name)]


def _check_range_opset(model, op, node, index):
    version = opset_version(model)
    if version is not None and version < RANGE_OPSET:
        raise ModelError(f"{node_label(node, index)}: '{op.axes_input}' is needed by the AOT form and, {op.default_axes_from} not being a constant, "
                         f"is computed with Range, which needs default-domain opset >= {RANGE_OPSET} (got {version})")

