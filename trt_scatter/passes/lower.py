"""Replace every ``trt_scatter`` node of a model by its native lowering in standard ONNX ops.

A model with ``trt_scatter`` nodes runs only where trt-scatter's plugins are
registered. Lowered, it runs in onnxruntime, in TensorRT without Python (its ONNX parser), in any
ONNX runtime. Each node becomes the construction of :mod:`trt_scatter.networks` written by its
ONNX backend (:class:`~trt_scatter.networks.graph.OnnxGraph`): the same code that adds TensorRT
layers in ``impl="native"``, so what the tests prove of one holds for the other::

    lowered = lower(onnx.load("model.onnx"))                       # a new ModelProto
    lowered = LowerTrtScatter(OnnxFromPath("model.onnx"))()       # the polygraphy loader

The pass, in order:

1. :func:`~trt_scatter.passes.validate.validate` the model: a node that breaks a rule is refused
   with the validator's one line (node, input, rule, value).
2. Upgrade a default-domain opset below :data:`OPSET` (what the lowerings need: Reshape's
   ``allowzero``), or below an op's ``LOWERING_OPSET`` (the reduction ops: 18) with ONNX's version converter, its local
   functions inlined first (the converter drops them), or refuse in one line if it cannot.
3. Replace each node in place, in the main graph and in every If branch and Loop or Scan body (the new initializers
   in the node's own graph), by nodes and initializers named ``<node name>/<op>_<n>`` whose last
   output keeps the node's output name, so every consumer, graph output and ``value_info`` stays
   as it was. Parameters the model holds as constants (initializers, ``Constant`` nodes) give
   constant geometry; parameters computed at run time (graph inputs, other nodes' outputs) give
   geometry computed by the graph (see :mod:`trt_scatter.networks.slice_scatter`); run-time
   ``axes`` or ``axis`` give a lowering that writes element by element (one int64 destination per
   updated element). What a lowering cannot take (a tensor of unknown rank) is refused in one line
   naming the node and the input.
4. Drop what only the replaced nodes read (initializers and nodes that computed a parameter the
   lowering does not need, such as a ``stop`` computed from the write position, whose length
   updates give), and the ``trt_scatter`` opset import; raise the IR version if the opset needs
   a newer one. Nodes whose outputs nothing read before the pass stay. Graph inputs an initializer fills are
   dropped from the inputs: trt-scatter, like TensorRT's ONNX parser, takes them as constants, and the lowering may
   have folded their values.

The result passes ``onnx.checker.check_model(full_check=True)``. Other nodes, initializers,
inputs, outputs and metadata are kept as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from polygraphy import util
from polygraphy.backend.base import BaseLoader

from trt_scatter import networks, ops
from trt_scatter.log import first_line, logger
from trt_scatter.model import ModelError, all_graphs, as_model, drop_initialized_inputs, graph_names, live_names, opset_version, subgraphs
from trt_scatter.model.node import OpNode
from trt_scatter.networks.graph import OnnxGraph, Value
from trt_scatter.oracle.rules import ScatterInputError
from trt_scatter.passes.validate import validate

if TYPE_CHECKING:
    import os

    import onnx

    from trt_scatter.model import Model

#: The default-domain opset the lowerings need (Reshape with ``allowzero``, so that an empty
#: dimension is a size and not "copy this dimension").
OPSET = 14


def lower(model: Model | onnx.ModelProto | str | os.PathLike) -> onnx.ModelProto:
    """``model`` (a path, an ``onnx.ModelProto`` or a :class:`~trt_scatter.model.Model`, left unchanged) with
    every ``trt_scatter`` node replaced by its native lowering; returns a new ``ModelProto`` (the model's
    own if it has no such node). A path's external data is read in, so that the result saves anywhere (references to
    the input's data file, relative to its folder, would not). Raises :class:`ModelError`."""
    import onnx

    model = as_model(model, weights=True)
    validate(model)  # once per Model
    if not model.trt_scatter_ops():
        return model.proto
    needed = max([OPSET] + [getattr(networks.module(ops.OPS[name]), "LOWERING_OPSET", OPSET) for name in model.trt_scatter_ops()])
    lowered = _with_opset(model.proto, needed)  # the same tensors with the same values, shapes and types
    _lower_graph(lowered.graph, model.tensors, set().union(*(graph_names(graph) for graph in all_graphs(lowered.graph))))
    kept = [opset for opset in lowered.opset_import if opset.domain != ops.DOMAIN]
    del lowered.opset_import[:]
    lowered.opset_import.extend(kept)
    if opset_version(lowered) != opset_version(model.proto):  # an IR version old enough for the model's opset stays
        lowered.ir_version = max(lowered.ir_version, onnx.helper.find_min_ir_version_for(list(lowered.opset_import), True))
    drop_initialized_inputs(lowered)  # constants now, maybe folded into the lowering
    lowered.ir_version = max(lowered.ir_version, 4)  # IR 3 asked every initializer to be a graph input too, the lowering's constants included
    lowered.graph.name = lowered.graph.name or "lowered"  # ONNX's checker wants one (runtimes do not)
    return lowered


class LowerTrtScatter(BaseLoader):
    """A polygraphy loader: the model (a path, a ``ModelProto``, or a loader of either, e.g.
    ``OnnxFromPath``) with its ``trt_scatter`` nodes lowered (:func:`lower`)::

        session = SessionFromOnnx(BytesFromOnnx(LowerTrtScatter(OnnxFromPath("model.onnx"))))
    """

    def __init__(self, model: Any) -> None:
        self._model = model

    @util.check_called_by("__call__")
    def call_impl(self) -> onnx.ModelProto:
        model, _ = util.invoke_if_callable(self._model)
        return lower(model)


def _lower_graph(graph, tensors, taken):
    """Replaces the trt_scatter nodes of ``graph`` and of the subgraphs its nodes hold (If branches, Loop and Scan bodies,
    at any depth) by their lowerings, in place; ``tensors``: what the model says of the tensors the graph's nodes see
    (:meth:`ModelTensors.within <trt_scatter.model.ModelTensors.within>` for a subgraph); ``taken``: every name of
    the model, which the new names avoid and join."""
    for node in graph.node:
        for subgraph in subgraphs(node):
            _lower_graph(subgraph, tensors.within(subgraph), taken)
    if any(ops.is_trt_scatter(node) for node in graph.node):
        _replace_nodes(graph, *_lowered_nodes(graph, tensors, taken))


def _lowered_nodes(graph, tensors, taken):
    """The graph's nodes with each trt_scatter node replaced by its lowering's, and the lowerings' initializers."""
    nodes, initializers = [], []
    for index, node in enumerate(graph.node):
        if not ops.is_trt_scatter(node):
            nodes.append(node)
            continue
        builder = OnnxGraph(prefix=f"{node.name or node.output[0]}/", taken=taken)
        lowered = OpNode(node, index, tensors)
        try:
            output = networks.module(lowered.op).lower_node(builder, lowered, lambda name, node=lowered: _value(node, name))
        except ScatterInputError as err:
            raise lowered.error(err) from None
        builder.bind(output, node.output[0])  # consumers, graph outputs and value_info keep the name
        nodes.extend(builder.nodes)
        initializers.extend(builder.live_initializers())
        logger.debug("lowered %s node %r into %d nodes", node.op_type, node.name, len(builder.nodes))
    return nodes, initializers


def _replace_nodes(graph, nodes, initializers):
    """Puts ``nodes`` and the new ``initializers`` in ``graph``, without what only the replaced nodes
    read (a stop computed from pos, constant parameters); what nothing read before stays, and so does what it reads
    (a replaced node whose output nothing reads drops its constants too: its lowering reads others)."""
    read = {name for node in graph.node for name in node.input}
    ends = {value.name for value in graph.output} | {name for node in graph.node for name in node.output if name and name not in read}
    initialized = {init.name for init in graph.initializer}
    fed = {value.name for value in graph.input if value.name not in initialized}  # an initializer listed as an input is a constant
    dropped = live_names(graph.node, ends) - live_names(nodes, ends) - fed
    for index in reversed([i for i, init in enumerate(graph.initializer) if init.name in dropped]):  # in place: the weights
        del graph.initializer[index]  # are not copied (a list of them extended back would hold each twice for a while)
    graph.initializer.extend(initializers)
    kept_info = [value for value in graph.value_info if value.name not in dropped]
    kept_inputs = [value for value in graph.input if value.name not in dropped]
    for field, values in ((graph.node, [n for n in nodes if not (n.output and set(n.output) <= dropped)]), (graph.input, kept_inputs),
                          (graph.value_info, kept_info)):  # fmt: skip
        del field[:]
        field.extend(values)


def _value(node, name):
    """Input ``name`` of ``node`` as a tensor of the lowering's graph (its name, type and static shape; where only
    the rank is known, from an input of the same rank (``op.same_rank``: PyTorch's TorchScript exports leave some
    unshaped), every dimension unknown; where an element input's type is unknown, as an op of another domain leaves
    it, the type of the op's other element inputs or output)."""
    tensor = node.inputs[name]
    shape = node.tensors.shape(tensor)
    if shape is None and name in node.op.same_rank:
        ranks = [len(known) for other in node.op.same_rank if other in node.inputs and (known := node.tensors.shape(node.inputs[other])) is not None]
        shape = (-1,) * ranks[0] if ranks else None
    if shape is None:
        raise ScatterInputError(node.op.key, name, "must have a known rank for the lowering", f"tensor {tensor!r} of unknown shape")
    dtype = node.tensors.dtype(tensor)
    if dtype is None and name in node.op.element_inputs:  # made by an op of another domain: the op's element inputs share one type
        dtype = next((known for other in [*node.op.element_inputs, "output"] if (known := node.dtype(other)) is not None), None)
        if dtype is None:
            raise ScatterInputError(node.op.key, name, "must have a known element type for the lowering (or another element input or "
                                    "the output one)", f"tensor {tensor!r} of unknown type")
    return Value(tensor, dtype, shape)


def _with_opset(model, needed=OPSET):
    """A copy of ``model`` whose default-domain opset is at least ``needed``: :data:`OPSET`, or what the lowering
    of an op in the model needs (its networks module's ``LOWERING_OPSET``: ScatterElements' and ScatterND's
    reductions min and max arrive in opset 18)."""
    import onnx
    from onnx import version_converter

    version = opset_version(model)
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    if version is None:
        copy.opset_import.append(onnx.helper.make_opsetid("", needed))
        return copy
    if version >= needed:
        return copy
    if copy.functions:  # ONNX's converter drops a model's local functions and leaves the nodes that call them: inline them
        import onnx.inliner

        try:
            copy = onnx.inliner.inline_local_functions(copy)
        except Exception as err:  # onnx raises its C++ errors bare
            raise ModelError(f"the model imports opset {version} of the default domain; the lowering needs {needed}, and its local "
                             f"functions, which ONNX's version converter drops, cannot be inlined first ({first_line(err)})") from None
        if copy.functions:  # the inliner skips a function of another default-domain opset, silently
            left = ", ".join(sorted(f"{function.domain}:{function.name}" for function in copy.functions))
            raise ModelError(f"the model imports opset {version} of the default domain; the lowering needs {needed}, and its local "
                             f"functions ({left}), which ONNX's version converter drops, cannot be inlined first: onnx's inliner takes "
                             "only functions that import the model's own default-domain opset")
    try:
        converted = version_converter.convert_version(copy, needed)
    except Exception as err:  # the converter raises bare RuntimeErrors from C++
        raise ModelError(f"the model imports opset {version} of the default domain; the lowering needs {needed}, and ONNX's version converter cannot upgrade it ({first_line(err)})") from None
    logger.info("lower: upgraded the default-domain opset from %d to %d (what the lowerings need)", version, needed)
    _keep_declared_shapes(copy.graph, converted.graph)
    return converted


def _keep_declared_shapes(declared, converted):
    """The converter infers shapes, naming each dimension the model leaves unnamed (``unk__0``): ``converted`` keeps the
    types ``declared`` gives its inputs and outputs, and only its value infos."""
    types = {value.name: value.type for value in (*declared.input, *declared.output)}
    for value in (*converted.input, *converted.output):
        if value.name in types:
            value.type.CopyFrom(types[value.name])
    del converted.value_info[:]
    converted.value_info.extend(declared.value_info)
