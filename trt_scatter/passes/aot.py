"""Hand a model's ``trt_scatter`` nodes to the AOT plugins: write the attributes TensorRT's ONNX parser reads.

TensorRT's ONNX parser turns a node it does not know into a plugin: it looks up a creator named
after the op type, version ``plugin_version`` (default "1") and namespace ``plugin_namespace``
(default "", then, from TensorRT 10.10, the node's domain). For a ``tensorrt.plugin`` (QDP)
creator it asks for the AOT implementation when the node says ``aot=1``, the Python (JIT) one when
it says ``aot=0``, and otherwise lets the network's PREFER_AOT/PREFER_JIT flags, or the only
implementation defined, decide (onnx-tensorrt ``importerUtils.cpp`` ``createPlugin`` and
``onnxOpCheckers.cpp`` ``FallbackPluginImporter``, TensorRT 10.9+; NVIDIA/TensorRT
``samples/python/quickly_deployable_plugins/README.md``, "ONNX model with an AOT plugin";
CHANGELOG.md 10.9 and 10.10). So, for every SliceScatter and ScatterUpdate node, this pass:

- sets ``plugin_namespace="trt_scatter"`` and ``aot=1`` (:data:`trt_scatter.ops.AOT_ATTRIBUTES`):
  the node then names the AOT plugins of :mod:`trt_scatter.plugins.aot` on every TensorRT >= 10.9,
  never the Python plugins (namespace "");
- drops ``inplace``: the AOT form's output is always aliased with data (see the plugin module);
- gives a SliceScatter without ``axes`` its default, 0..n-1 for n = len(start) (an AOT plugin's
  inputs are fixed): an int64 initializer where start is one, else ``Range(0, Size(start), 1)``.

Op types, inputs and values stay as they are, so the model means what it meant (the tests run both
with :mod:`trt_scatter.reference`). Running the pass twice changes nothing more.

:func:`to_aot` is the function; :class:`ToAotPlugins` the polygraphy loader::

    model = ToAotPlugins("model.onnx")()                                  # or ToAotPlugins(OnnxFromPath(...))
    network = NetworkFromOnnxBytes(BytesFromOnnx(ToAotPlugins("model.onnx")))
"""

import os

import numpy as np
from polygraphy import util
from polygraphy.backend.base import BaseLoader

from trt_scatter.ops import AOT_ATTRIBUTES, SLICE_SCATTER, is_trt_scatter
from trt_scatter.passes.tensors import fresh_name, graph_names, opset_version
from trt_scatter.passes.validate import ModelError, node_label

RANGE_OPSET = 11  # Range arrives in opset 11 of the default domain


def to_aot(model):
    """A copy of ``model`` (an ``onnx.ModelProto`` or a path) whose ``trt_scatter`` nodes go to the AOT plugins."""
    import onnx

    if isinstance(model, (str, os.PathLike)):
        model = onnx.load(os.fspath(model))
    converted = onnx.ModelProto()
    converted.CopyFrom(model)
    graph = converted.graph
    initializers = {init.name: init for init in graph.initializer}
    taken = graph_names(graph)
    nodes = []
    for index, node in enumerate(graph.node):
        if is_trt_scatter(node):
            if node.op_type == SLICE_SCATTER.name and _missing_axes(node):
                nodes.extend(_default_axes(converted, node, index, initializers, taken))
            _set_aot_attributes(node)
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    return converted


class ToAotPlugins(BaseLoader):
    """A polygraphy loader: the model (a path, an ``onnx.ModelProto``, or a loader of either) after :func:`to_aot`."""

    def __init__(self, model):
        self._model = model

    @util.check_called_by("__call__")
    def call_impl(self):
        model, _ = util.invoke_if_callable(self._model)
        return to_aot(model)


def _missing_axes(node):
    axes = SLICE_SCATTER.inputs.index("axes")
    return len(node.input) <= axes or not node.input[axes]


def _set_aot_attributes(node):
    from onnx import helper

    kept = [attribute for attribute in node.attribute if attribute.name not in AOT_ATTRIBUTES and attribute.name != "inplace"]
    del node.attribute[:]
    node.attribute.extend(kept + [helper.make_attribute(name, value) for name, value in AOT_ATTRIBUTES.items()])


def _default_axes(model, node, index, initializers, taken):
    """Sets the node's axes input to 0..len(start)-1; returns the nodes that compute it (none for a constant start)."""
    from onnx import helper, numpy_helper

    start = node.input[SLICE_SCATTER.inputs.index("start")]
    name = fresh_name(f"{node.name or node.output[0]}_default_axes", taken)
    del node.input[SLICE_SCATTER.inputs.index("axes"):]
    node.input.append(name)
    if start in initializers:
        count = int(np.prod(initializers[start].dims)) if initializers[start].dims else 1
        model.graph.initializer.append(numpy_helper.from_array(np.arange(count, dtype=np.int64), name))
        return []
    _check_range_opset(model, node, index)
    zero, one, size = (fresh_name(f"{name}_{part}", taken) for part in ("zero", "one", "size"))
    model.graph.initializer.extend([numpy_helper.from_array(np.array(0, np.int64), zero),
                                    numpy_helper.from_array(np.array(1, np.int64), one)])
    return [helper.make_node("Size", [start], [size], name=size),
            helper.make_node("Range", [zero, size, one], [name], name=name)]


def _check_range_opset(model, node, index):
    version = opset_version(model)
    if version is not None and version < RANGE_OPSET:
        raise ModelError(f"{node_label(node, index)}: 'axes' is needed by the AOT form and, start not being a constant, "
                         f"is computed with Range, which needs default-domain opset >= {RANGE_OPSET} (got {version})")

