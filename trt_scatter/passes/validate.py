"""Refuse a model whose scatter nodes break a rule that can be seen before TensorRT runs.

TensorRT hands a plugin its constant inputs (initializers, ``Constant`` nodes) only as device
buffers, so a step of 0 or an index out of range in a model's constants would reach the kernels,
which skip what they cannot write: the engine builds and silently does nothing. trt-scatter can
read those constants, so it checks the model first, every If/Loop/Scan body included:

- the graph: an IR version and default-domain opset the installed onnx knows; it has outputs; each domain is
  imported at one version; every graph input and initializer has a name
  of its own; every node input is a graph input, an initializer, an earlier node's output or (in a
  body) a name of an enclosing graph; no tensor is written twice; every graph output is written
  (a cycle, a duplicate output or a dangling input would reach TensorRT's parser as its own error);
  no node gives an attribute twice (TensorRT reads the first, ONNX's evaluator the last) or refers to
  a function's attribute outside a function; no trt-scatter op type in another domain (TensorRT's
  parser finds plugins by op type alone), unless it calls a function of the model's;
- sizes: no graph input with a dimension of an empty name (built as 0), and no graph input or output
  with a dimension or a volume of :data:`MAX_ELEMENTS` or more (TensorRT's limit: it would build such an
  input with a dimension of 0);
- every node of a registered op (:mod:`trt_scatter.ops`):

  - a ``trt_scatter`` node, against the op's contract: an op of the domain, imported at version 1,
  one output, its inputs (no missing one, none too many), its attributes (each one the op has, with
  an allowed value; any other is an error, not ignored); element types: data numeric, updates (and
  the output) of data's type, index inputs int32 or int64, those the contract ties of one type;
- ONNX's own scatter nodes: their inputs and outputs as ONNX's schema counts them, index inputs int32 or
  int64, updates (and the output) of data's type; no scatter input a graph input without an element type;
- every op's node (ONNX's ScatterND and ScatterElements too), against its oracle's rules on what
  the model shows (``check_node`` of :mod:`trt_scatter.oracle`): step 0, repeated or out-of-range
  axes, parameters of different lengths, updates that do not fit, indices out of range...

The first broken rule raises :class:`~trt_scatter.model.ModelError`, whose message is one line
naming the node, the input or attribute, the rule and the value::

    SliceScatter node 'write_kv': slice_scatter: 'step' must not contain 0 (got [0])

Each node is checked once, against the model's :class:`~trt_scatter.model.ModelTensors` (one run
of shape inference): validation is linear in the nodes. :func:`validate` is the function;
:class:`ValidateTrtScatter` the polygraphy loader::

    network = NetworkFromOnnxPath(ValidateTrtScatter("model.onnx"))           # a path passes through
    model = ValidateTrtScatter(OnnxFromPath("model.onnx"))()                  # so does a ModelProto
"""

from __future__ import annotations

from polygraphy import util
from polygraphy.backend.base import BaseLoader

import math
from typing import TYPE_CHECKING, Any, NamedTuple

from trt_scatter import dtypes, networks, ops, oracle
from trt_scatter.log import warn, warnings_dropped
from trt_scatter.model import (Model, ModelError, as_model, declared_size, fresh_name, graph_names, named_subgraphs, node_label, opset_version,
                               printable, subgraphs)
from trt_scatter.model.files import MAX_ELEMENTS
from trt_scatter.model.node import OpNode
from trt_scatter.oracle import reductions, rules
from trt_scatter.oracle.rules import ScatterInputError

if TYPE_CHECKING:
    import os
    from collections.abc import Sequence

    import onnx

    from trt_scatter.model.tensors import ModelTensors


__all__ = ["ModelError", "ValidateTrtScatter", "validate", "validate_profile"]


def validate(model: Model | onnx.ModelProto | str | os.PathLike) -> onnx.ModelProto:
    """Checks every scatter node of ``model`` (a path, an ``onnx.ModelProto`` or a :class:`~trt_scatter.model.Model`);
    returns the ModelProto unchanged. Raises :class:`ModelError` for the first broken rule (a path that is no
    ONNX model included). A Model is checked once: it remembers that it was (``validated``)."""
    model = as_model(model)
    if model.validated:
        return model.proto
    graph = model.proto.graph
    if not graph.output:
        raise ModelError(f"graph {printable(repr(graph.name))} has no outputs: nothing would be computed (TensorRT builds no network without one)")
    _check_structure(graph, set())
    _check_sizes(graph)
    imported = {}  # domain -> versions ("" and "ai.onnx" are one domain; onnx.compose repeats imports at one version)
    for opset in model.proto.opset_import:
        imported.setdefault("" if opset.domain in ops.DEFAULT_DOMAINS else opset.domain, set()).add(opset.version)
    twice = next((domain for domain, versions in imported.items() if len(versions) > 1), None)
    if twice is not None:
        raise ModelError(f"the model imports domain {printable(repr(twice))} at versions {sorted(imported[twice])}: one version at most")
    facts = _ModelFacts(
        tensors=model.tensors,
        version=opset_version(model.proto, ops.DOMAIN),
        onnx_version=opset_version(model.proto, ""),
        untyped={value.name for value in graph.input if not value.type.tensor_type.elem_type} - {init.name for init in graph.initializer},
        functions={(function.domain, function.name) for function in model.proto.functions},  # a call of the model's own function
    )
    _check_versions(model.proto, facts.onnx_version)
    for index, node, runs, where, tensors in _nodes_that_may_run(graph, model.tensors):
        try:
            _check_node(facts._replace(tensors=tensors), node, index, runs, where)
        except ModelError as err:
            if not where:
                raise
            raise ModelError(f"{err} ({where})") from None
    model.validated = True
    return model.proto


class _ModelFacts(NamedTuple):
    """What :func:`validate` reads of the whole model once, for each node's rules."""

    tensors: ModelTensors
    version: int | None  # of trt-scatter's domain
    onnx_version: int | None
    untyped: set[str]  # graph inputs without an element type
    functions: set[tuple[str, str]]  # (domain, name) of the model's own functions


def _check_node(facts, node, index, runs, where):
    """One node's rules (:func:`validate`): its attributes, its op's contract or ONNX's schema, its input types, and the
    oracle's rules where it may run (a repeated target warned of)."""
    _check_attributes_once(node, index)
    _check_standard_inputs(node, index, facts.onnx_version)
    if ops.is_trt_scatter(node):
        _check_contract(node, index, facts.version)
    elif node.op_type in ops.OPS and node.domain not in (ops.DOMAIN, *ops.DEFAULT_DOMAINS) and (node.domain, node.op_type) not in facts.functions:
        raise ModelError(f"{node_label(node, index)}: is in domain {printable(repr(node.domain))}, where TensorRT's parser, which finds plugins by "
                         f"op type alone, would build it as trt-scatter's {node.op_type}: trt-scatter's ops are in domain '{ops.DOMAIN}'")
    op = ops.op_of(node)
    if op is not None and not op.is_plugin and facts.onnx_version is not None:
        _check_schema(node, index, facts.onnx_version)
    if op is None or (not op.is_plugin and len(node.input) < 2):
        return
    untyped_input = next((name for name in node.input if name in facts.untyped), None)
    if untyped_input is not None:  # its rules would read NumPy's default, float64
        raise ModelError(f"{node_label(node, index)}: input {printable(repr(untyped_input))} is a graph input without a tensor element type")
    checked = OpNode(node, index, facts.tensors, op)
    try:
        _check_types(checked)
        if runs:
            oracle.module(op).check_node(checked)
        elif hasattr(oracle.module(op), "check_attributes"):  # a branch that never runs: TensorRT's parser still reads it
            oracle.module(op).check_attributes(checked)
    except ScatterInputError as err:
        raise checked.error(err) from None
    repeat = runs and oracle.module(op).repeated_target(checked)
    if repeat:
        warn(f"{checked.label}: {repeat}: {rules.UNDEFINED}" + (f" ({where})" if where else ""))


def validate_profile(model: Model | onnx.ModelProto | str | os.PathLike, profile: dict[str, tuple[Sequence[int], Sequence[int], Sequence[int]]]) -> None:
    """Refuses constant indices that a shape profile (``profile``: input name -> ``(min, opt, max)``) puts out of range
    in every run: an index of 7 into a graph input's dimension that the profile bounds by 4 would be skipped by the
    plugin each time. Raises :class:`ModelError` naming the shapes.

    Each node is checked whose data is a graph input of dynamic shape (or the output of writes into one), or whose
    other input that sets the index's range is such an input (a static cache's update of a dynamic length): the nodes
    TensorRT builds with a plugin, standard ones served by plugins included, with the inputs that are some node's data
    at their largest shapes and the others at their smallest: an index's range only grows with data and shrinks with what else the node reads (a longer
    update leaves fewer places to start a write). A rule broken there is raised only where it is one of a constant
    index's values (with the values 0 instead, the node passes; a non-negative index that PyTorch's exporters wrap in
    ``Where`` for negative values counts as the constant it stays) and each other input whose shape decides the index's
    range (:attr:`Op.index_range_from <trt_scatter.ops.Op.index_range_from>`: a cache write's update, a slice's
    updates) is a constant, of static shape, or a graph input so set; all else (shapes that the profile's bounds of
    several inputs make together but no run does) is left to the plugins' checks of each run's shapes. Inputs of
    static shape are left as they are: a profile gives those (a KV cache's position) a range of values. Inputs the
    profile gives one shape (min and max equal) are static to the engine: the whole model is validated with them at
    that shape first. A profile the model contradicts (a rank, a static dimension) is left to the build, which names
    it."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    from trt_scatter.passes.plugins import to_plugins

    model = as_model(model)
    dynamic = {value.name: [declared_size(dim) for dim in value.type.tensor_type.shape.dim]
               for value in model.proto.graph.input if value.name in profile}
    dynamic = {name: dims for name, dims in dynamic.items() if None in dims}
    if not dynamic or not all(len(shape) == len(dims) and all(dim in (None, size) for dim, size in zip(dims, shape))
                              for name, dims in dynamic.items() for shape in profile[name]):
        return  # shapes the model contradicts (a rank, a static dimension): the build names them in its own words
    if _named_dims_disagree(model.proto.graph, {name: profile[name] for name in dynamic}):
        return  # the build names the dimension and both inputs
    pinned = {name for name in dynamic if tuple(profile[name][0]) == tuple(profile[name][2])}  # one shape in every run
    if pinned:
        fixed = _at_shapes(model.proto, {name: profile[name][0] for name in pinned})
        try:
            with warnings_dropped():  # what it says of the model itself was said once
                validate(Model(fixed, model.path, model.external, model.weights))
        except ModelError as err:
            shapes = ", ".join(f"{name} {list(profile[name][0])}" for name in sorted(pinned))
            raise ModelError(f"at the one shape the profile gives {'each of ' if len(pinned) > 1 else ''}{shapes}: {err}") from None
    # The nodes TensorRT builds with a plugin (standard ones a plugin serves too), checked as the model writes them, so that
    # a refusal names the user's op; to_plugins keeps the nodes' order.
    served = list(to_plugins(model).graph.node)
    plugin_nodes = {index for index, node in enumerate(served) if ops.is_trt_scatter(node) and node.input}
    # ONNX's own nodes that TensorRT's layers build (TensorScatter in the form its importer takes) have the same shape
    # rules as the plugin that serves the op elsewhere: checked at the bounds too
    plugin_keys = {op.key for op in ops.OPS.values()}  # ops with a kernel module, whose check_shapes holds the op's shape rules
    layer_ops = {index: op for index, node in enumerate(served) if (op := ops.op_of(node)) is not None and not op.is_plugin}
    _check_shapes_at_bounds(model, profile, dynamic, served, plugin_nodes | {index for index, op in layer_ops.items() if op.key in plugin_keys},
                            layer_ops)
    written = {served[index].input[0] for index in plugin_nodes}
    ranges = {index: _range_setting(served[index]) for index in plugin_nodes}  # what else sets each index's range
    if not (written | {name for names in ranges.values() for name in names}) & set(dynamic):
        return
    at = {name: profile[name][2 if name in written else 0] for name in dynamic}  # data largest, the rest smallest
    as_given = (set(dynamic) - written) | pinned  # not written into (at their smallest), or pinned: a run has them so with the largest data
    bounded = _at_shapes(model.proto, at)
    tensors = Model(bounded, model.path, model.external, model.weights).tensors
    shapes = ", ".join(f"{name} {list(at[name])}" for name in sorted(at))

    inferred = []  # the model's shapes as inference gives them (a declared shape may be stale): worked out if needed

    def static(name):
        """Whether tensor ``name`` has one shape in every run."""
        if not inferred:
            inferred.append(Model(_at_shapes(model.proto, {}), model.path, model.external, model.weights).tensors)
        return -1 not in (inferred[0].shape(name) or (-1,))

    written_by = {served[index].output[0]: served[index].input[0] for index in plugin_nodes if served[index].output}
    producers = {output: node for node in model.proto.graph.node for output in node.output if output}

    def start(name):
        """The data a chain of writes starts from (a write's output has its data's shape)."""
        while name in written_by:
            name = written_by[name]
        return name

    def reading(checked, values):
        """``checked`` (a node of ``bounded``) reading these index values (input name -> array) instead of its own:
        itself where it reads them already, else the node in a copy of ``bounded`` that holds them as constants."""
        if all(np.array_equal(tensors.constant(checked.inputs[name]), value) for name, value in values.items()):
            return checked
        copy = onnx.ModelProto()
        copy.CopyFrom(bounded)
        taken, target = graph_names(copy.graph), copy.graph.node[checked.index]
        for name, value in values.items():
            tensor = checked.inputs[name]
            swapped = fresh_name(f"{tensor}_fixed", taken)
            copy.graph.initializer.append(numpy_helper.from_array(value.astype(tensors.dtype(tensor) or value.dtype), swapped))
            target.input[:] = [swapped if each == tensor else each for each in target.input]
        return OpNode(target, checked.index, Model(copy, model.path, model.external, model.weights).tensors)

    def wrapped_as_given(name):
        """The values of PyTorch's wrap of a negative index (:meth:`ModelTensors.unwrapped`) in every run, where the
        dimension it wraps over is one of written data's, here at its largest, and each value is non-negative or below
        minus that: such a value stays as given at every smaller size too (``index_fill(1, [-5], 0)`` into at most 4)."""
        wrap = model.tensors.unwrapped(name)
        if wrap is None:
            return None
        values, dimension = wrap
        chain, source = [], producers.get(dimension)
        while source is not None and source.op_type in ("Gather", "Squeeze", "Unsqueeze", "Reshape", "Cast", "Identity"):
            chain.append(source)
            source = producers.get(source.input[0])
        if source is None or source.op_type != "Shape" or start(source.input[0]) not in written:
            return None
        dims = tensors.shape(start(source.input[0]))  # a write's output has its data's shape (its Shape is folded nowhere)
        if dims is None or -1 in dims:
            return None
        ends = {attribute.name: attribute.i for attribute in source.attribute}
        largest = np.array(dims[ends.get("start", 0) : ends.get("end", len(dims))])
        for node in reversed(chain):  # Shape, then the Gather of one dimension (the others keep the values)
            if node.op_type == "Gather":
                taken = tensors.constant(node.input[1])
                if taken is None or not largest.size:
                    return None
                largest = np.take(largest, taken)
        if largest.size != 1:
            return None
        return values if ((values >= 0) | (values < -int(largest.reshape(-1)[0]))).all() else None

    for index, node in enumerate(bounded.graph.node):
        if index not in plugin_nodes:
            continue
        checked = OpNode(node, index, tensors)
        others = ranges[index]
        if start(node.input[0]) not in dynamic and not set(others) & set(dynamic):
            continue  # data and what else sets the index's range have one shape: validation has checked them
        if not all(name in as_given or model.tensors.constant(name) is not None or static(name) for name in others):
            continue
        # each index's values in every run, where no shape sets them (folding at these shapes misses a wrap of the
        # index into a write's output: a Shape of a tensor a node computes is folded nowhere)
        fixed = {name: model.tensors.shape_free(checked.inputs[name]) for name in checked.op.index_inputs if name in checked.inputs}
        fixed = {name: value for name, value in fixed.items() if value is not None}
        for name in (name for name in checked.op.index_inputs if name in checked.inputs and name not in fixed):
            stays = wrapped_as_given(checked.inputs[name])
            if stays is not None:
                fixed[name] = stays
        try:
            oracle.module(checked.op).check_node(reading(checked, fixed))
        except ScatterInputError as err:
            if err.input_name not in fixed:
                continue  # values that change with the shapes (a negative index wrapped): the plugin checks each run's
            try:
                oracle.module(checked.op).check_node(reading(checked, {**fixed, err.input_name: np.zeros_like(fixed[err.input_name])}))
            except ScatterInputError:
                continue  # a rule of shapes, not of the index's values
            raise ModelError(f"in every run the profile allows, as at its largest data and smallest other inputs ({shapes}): "
                             f"{checked.error(err)}") from None


def _range_setting(node):
    """The tensors of ``node`` (a scatter) besides its data whose shapes set its index's range
    (:attr:`Op.index_range_from <trt_scatter.ops.Op.index_range_from>`: a cache write's update, a slice's updates)."""
    op = ops.op_of(node)
    positions = [op.inputs.index(name) for name in op.index_range_from]
    return [node.input[position] for position in positions if position < len(node.input) and node.input[position]]


def _named_dims_disagree(graph, profile):
    """Whether two inputs' dimensions of one name (``dim_param``) get different sizes at one of the profile's bounds."""
    for bound in range(3):
        sizes = {}
        for value in graph.input:
            for dim, size in zip(value.type.tensor_type.shape.dim, profile.get(value.name, ((),) * 3)[bound]):
                if dim.dim_param and sizes.setdefault(dim.dim_param, size) != size:
                    return True
    return False


def _check_shapes_at_bounds(model, profile, dynamic, served, checked_nodes, layer_ops):
    """Each of ``checked_nodes``' shape rules (its kernel module's ``check_shapes``, as the plugin's ``configure_plugin`` checks
    them; for ONNX's own node that a TensorRT layer builds, those of the plugin that serves its op elsewhere; and, at opt
    only, where its index inputs are constants or graph inputs, the oracle's rules of the shapes those values set, such
    as updates unlike a constant slice, which the plugin refuses in each such run: the engine would be tuned to runs
    that write nothing. At the smallest and largest shapes those may break while the runs between keep them, a slice's
    length following data's) at the profile's smallest shapes, all inputs together, then at its opt and its largest: refused here, before TensorRT runs,
    in the plugin's words and the bound's. TensorRT-RTX aborts the build process after a plugin refuses shapes in some
    networks (three reduction nodes and a smallest data of 0 rows), so the plugin's own refusal could end in a crash
    instead of the rule. Only nodes whose every input is a graph input or has dimensions that are numbers or a graph input's
    named dimensions: those are the profile's bounds in TensorRT too (a dimension computed from several inputs has bounds
    of its own there).

    ``layer_ops`` (index -> op), ONNX's own scatter nodes that TensorRT's layers build, are then held to every rule of the oracle at
    each bound, constant indices included, and to what the layer itself adds (the op's network module's ``check_layer``,
    as IScatterLayer's indices no longer than data on the axis): TensorRT's scatter layer checks no index when it runs, so a constant index
    that the smallest shapes put out of range would be read out of bounds there (a plugin skips and counts it). Only
    those the profile bounds whose indices are constants or graph inputs: indices computed from shapes would take, at
    a bound, sizes of several inputs that no run has together."""
    from trt_scatter.plugins.kernels import module

    named = {dim.dim_param for value in model.proto.graph.input for dim in value.type.tensor_type.shape.dim if dim.dim_param}
    fed = {value.name for value in model.proto.graph.input}  # a graph input's shape, named dims or not, is the profile's

    def bounded_by_the_profile(index):
        return all(name in fed or (shape := model.tensors.symbolic_shape(name)) is not None and all(isinstance(d, int) or d in named for d in shape)
                   for name in served[index].input if name)

    exact = [index for index in sorted(checked_nodes) if bounded_by_the_profile(index)]
    # index values that no shape sets (constants, or graph inputs, whose values no bound gives): one computed from shapes
    # takes, at a bound, the sizes of several inputs that no run may have together (a KV cache's past and new lengths)
    layer_nodes = [OpNode(served[index], index, model.tensors, op) for index, op in sorted(layer_ops.items()) if bounded_by_the_profile(index)]

    def index_values_known(node):
        """Whether each index input is a constant or a graph input (values no bound sets)."""
        return all(node.inputs[name] in fed or model.tensors.constant(node.inputs[name]) is not None for name in node.op.index_inputs if name in node.inputs)

    layer_nodes = [node for node in layer_nodes if index_values_known(node)]
    valued = {index for index in exact if index_values_known(OpNode(served[index], index, model.tensors))}
    tuned = {name: tuple(profile[name][1]) for name in dynamic}  # opt: the shapes the engine is tuned to run
    checked = []  # the bounds' shapes checked so far: opt is often the largest, and each costs a shape inference
    for bound, label in ((0, "smallest"), (1, "opt"), (2, "largest")) if exact or layer_nodes else ():  # opt: the shapes the engine is tuned to run
        at = {name: tuple(profile[name][bound]) for name in dynamic}
        if at in checked:
            continue
        checked.append(at)
        tensors = Model(_at_shapes(model.proto, at), model.path, model.external, model.weights).tensors
        for index in exact:
            node = OpNode(served[index], index, tensors)
            shapes = [tensors.shape(name) for name in served[index].input if name]
            if any(shape is None or -1 in shape for shape in shapes):
                continue  # a shape inference cannot tell: the plugin checks what TensorRT gives it
            plugin = ops.is_trt_scatter(served[index])  # else ONNX's own node, its attributes as given (the kernel's defaults are ONNX's)
            attributes = node.attributes() if plugin else {attribute.name: node.attribute(attribute.name) for attribute in served[index].attribute}
            attributes.pop("inplace", None)
            try:
                module(node.op).check_shapes(shapes, **attributes)
                if index in valued and at == tuned:  # the oracle's rules of shapes that index values set (a constant slice's)
                    _check_shape_rules(node)
            except ScatterInputError as err:  # named as the user wrote it (a standard ScatterND a plugin serves)
                written_as = OpNode(model.proto.graph.node[index], index, model.tensors).label
                raise ModelError(f"the profile's {label} shapes break {'a plugin' if plugin else 'the op'}'s rule: {written_as}, input shapes "
                                 f"{[tuple(shape) for shape in shapes]}: {err}") from None
        for as_given in layer_nodes:
            node = OpNode(as_given.node, as_given.index, tensors, as_given.op)
            check_layer = getattr(networks.module(node.op), "check_layer", None)  # what TensorRT's own layer adds to the op
            for whose, check in (("the op's", oracle.module(node.op).check_node), ("TensorRT's layer's", check_layer)):
                try:
                    if check is not None:
                        check(node)
                except ScatterInputError as err:
                    shapes = [None if (shape := tensors.shape(name)) is None else tuple(shape) for name in node.node.input if name]
                    raise ModelError(f"the profile's {label} shapes break {whose} rule: {node.label}, input shapes {shapes}: {err}") from None


def _check_shape_rules(node):
    """``node``'s oracle rules that its inputs' shapes break (``updates`` unlike a constant slice); a rule of an index's
    values is left to the plugin, which skips and counts the writes it refuses in a run, the rest of the run written."""
    try:
        oracle.module(node.op).check_node(node)
    except ScatterInputError as err:
        if err.input_name not in node.op.index_inputs:
            raise


def _at_shapes(proto, shapes):
    """A copy of ``proto`` whose graph inputs named in ``shapes`` (name -> shape) have those shapes, and whose declared
    shapes of computed tensors and outputs are dropped (their types kept): written at the export's sizes, they may be
    stale, and shape inference works them out again from the inputs. Constants keep theirs."""
    import onnx

    fixed = onnx.ModelProto()
    fixed.CopyFrom(proto)
    for value in fixed.graph.input:
        if value.name in shapes:
            for dim, size in zip(value.type.tensor_type.shape.dim, shapes[value.name]):
                dim.Clear()
                dim.dim_value = int(size)
    constants = {init.name for init in fixed.graph.initializer} | {name for node in fixed.graph.node if node.op_type == "Constant" for name in node.output}
    for value in (*fixed.graph.value_info, *fixed.graph.output):
        if value.type.HasField("tensor_type") and value.name not in constants:  # a constant's shape is its own (dynamo declares
            value.type.tensor_type.ClearField("shape")                          # them, and inference read a Slice's axes as absent)
    return fixed


class ValidateTrtScatter(BaseLoader):
    """A polygraphy loader: validates the model (:func:`validate`) and returns what it wraps unchanged.

    ``model``: a path, an ``onnx.ModelProto``, or a loader of either (e.g. ``OnnxFromPath``). A
    path stays a path, so this composes with ``NetworkFromOnnxPath`` (which reads external data
    itself) as well as with loaders that take a ModelProto.
    """

    def __init__(self, model: Any) -> None:
        self._model = model

    @util.check_called_by("__call__")
    def call_impl(self) -> Model | onnx.ModelProto | str | os.PathLike:
        model, _ = util.invoke_if_callable(self._model)
        validate(model)
        return model


def _nodes_that_may_run(graph, tensors, runs=True, where="", depth=0):
    """``(index, node, runs, where, tensors)`` for each node as :func:`~trt_scatter.model.indexed_nodes` gives them, ``runs`` False
    in the branch of an ``If`` whose condition the model's constants and static shapes decide against: it never runs, so
    the values it would write are no mistake (PyTorch's exports guard a 0-D case so: ``If(Size(Shape(x)) == 0)``), while
    TensorRT's parser still reads its nodes, their attributes and types. ``where``: "" in the main graph, else the
    subgraph and the node that holds it (``in the then_branch of If node 'guard'``, and how deep that node lies), for
    messages: a node's index counts in its own subgraph, and a subgraph's node may share its name with another's.
    ``tensors``: as the node's graph sees them (:meth:`~trt_scatter.model.tensors.ModelTensors.within`)."""
    for index, node in enumerate(graph.node):
        yield index, node, runs, where, tensors
        condition = tensors.constant(node.input[0]) if node.op_type == "If" and node.domain in ops.DEFAULT_DOMAINS and node.input else None
        never = None if condition is None or condition.size != 1 else ("else_branch" if condition.item() else "then_branch")
        for name, subgraph in named_subgraphs(node):
            inside = f"in the {printable(name)} of {node_label(node, index)}" + (f", itself {depth} subgraph(s) deep" if depth else "")
            yield from _nodes_that_may_run(subgraph, tensors.within(subgraph), runs and name != never, inside, depth + 1)


def _check_versions(proto, onnx_version):
    """The model's IR version and default-domain opset are ones the installed onnx knows: past them its schemas, shape
    inference and checker would read the model by older rules (a model of a newer onnx: upgrade onnx)."""
    import onnx
    import onnx.defs

    newest = onnx.defs.onnx_opset_version()
    if onnx_version is not None and onnx_version > newest:
        raise ModelError(f"the model imports opset {onnx_version} of the default domain; onnx {onnx.__version__}, installed here, knows opsets "
                         f"up to {newest} (a model of a newer onnx: upgrade onnx)")
    if proto.ir_version > onnx.IR_VERSION:
        raise ModelError(f"the model has IR version {proto.ir_version}; onnx {onnx.__version__}, installed here, knows IR versions up to "
                         f"{onnx.IR_VERSION} (a model of a newer onnx: upgrade onnx)")


def _check_attributes_once(node, index):
    """No attribute given twice (ONNX's checker refuses it; TensorRT reads the first, ONNX's evaluator the last), none
    that refers to a function's attribute (``ref_attr_name``) outside a function: it has no value there, and no sparse
    constant (TensorRT's parser refuses it; as a sparse initializer, trt-scatter reads none)."""
    if node.op_type == "Constant" and node.domain in ops.DEFAULT_DOMAINS and any(attribute.name == "sparse_value" for attribute in node.attribute):
        raise ModelError(f"{node_label(node, index)}: attribute 'sparse_value': trt-scatter reads no sparse constants (nor does TensorRT's "
                         "parser): give the value as a dense one ('value')")

    referring = next((attribute for attribute in node.attribute if attribute.ref_attr_name), None)
    if referring is not None:
        raise ModelError(f"{node_label(node, index)}: attribute '{printable(referring.name)}' refers to a function's attribute "
                         f"({printable(repr(referring.ref_attr_name))}) outside any function, where it has no value")
    names = [attribute.name for attribute in node.attribute]
    for name in dict.fromkeys(name for name in names if names.count(name) > 1):
        values = [_value(a) for a in node.attribute if a.name == name]
        shown = ", ".join(map(repr, values))
        raise ModelError(f"{node_label(node, index)}: attribute '{printable(name)}' is given {len(values)} times ({printable(shown)}): once at most")


def _check_structure(graph, outer):
    """Every graph input and initializer has a name of its own, every node input is defined before it is read
    (``outer``: the names of the enclosing graphs), no tensor is written twice, every graph output is written;
    bodies likewise, with this graph's names as theirs."""
    for kind, values in (("input", graph.input), ("initializer", graph.initializer)):
        names = [value.name for value in values]
        if "" in names:
            raise ModelError(f"graph {printable(repr(graph.name))}: {kind} #{names.index('')} has no name")
        repeated = next((name for name in names if names.count(name) > 1), None)
        if repeated is not None:
            raise ModelError(f"graph {printable(repr(graph.name))}: {kind} {printable(repr(repeated))} is listed {names.count(repeated)} times: a name names one tensor")
    if graph.sparse_initializer:
        raise ModelError(f"graph {printable(repr(graph.name))}: sparse initializer {printable(repr(graph.sparse_initializer[0].values.name))}: "
                         "trt-scatter reads no sparse initializers: store it as a dense one")
    filled = {init.name: init for init in graph.initializer}
    for value in graph.input:  # an input an initializer fills: TensorRT's parser takes the initializer, onnxruntime refuses both
        init, declared = filled.get(value.name), value.type.tensor_type
        if init is None:
            continue
        where = f"graph {printable(repr(graph.name))}: input {printable(repr(value.name))}"
        if declared.elem_type and init.data_type != declared.elem_type:
            raise ModelError(f"{where} is declared {dtypes.onnx_name(declared.elem_type)} and its initializer holds "
                             f"{dtypes.onnx_name(init.data_type)}: one tensor has one type")
        dims = [declared_size(dim) for dim in declared.shape.dim]
        if declared.HasField("shape") and (len(dims) != len(init.dims) or any(d is not None and d != size for d, size in zip(dims, init.dims))):
            raise ModelError(f"{where} is declared of shape {tuple('?' if d is None else d for d in dims)} and its initializer holds "
                             f"shape {tuple(init.dims)}: one tensor has one shape")
    known = set(outer) | {value.name for value in graph.input} | set(filled)
    producers = {output: (index, node) for index, node in enumerate(graph.node) for output in node.output if output}
    written = {}
    for index, node in enumerate(graph.node):
        for position, name in enumerate(node.input):
            if name and name not in known:
                later = producers.get(name)
                if later is None:
                    raise ModelError(f"{node_label(node, index)}: input {position} {printable(repr(name))} is not a graph input, an initializer or an earlier node's output")
                raise ModelError(f"{node_label(node, index)}: input {position} {printable(repr(name))} is read before it is written, by a later node, "
                                 f"{node_label(later[1], later[0])} (the graph has a cycle, or is not sorted)")
        for subgraph in subgraphs(node):
            _check_structure(subgraph, known)
        for name in (output for output in node.output if output):
            if name in written or name in known - set(outer):
                first = f"{node_label(written[name][1], written[name][0])}" if name in written else "a graph input or initializer"
                raise ModelError(f"{node_label(node, index)}: output {printable(repr(name))} is written by {first} too: a tensor has one writer")
            written[name] = (index, node)
            known.add(name)
    for value in graph.output:
        if value.name not in known:
            raise ModelError(f"graph output {printable(repr(value.name))} of graph {printable(repr(graph.name))} is written by no node, input or initializer")


def _check_sizes(graph):
    """No graph input has a dimension of an empty name (TensorRT's parser builds it as 0) or a negative size other than
    -1 (which some exporters write for a dynamic one), and no graph input or output a dimension or a volume of
    :data:`MAX_ELEMENTS` or more."""
    for value in graph.input:
        for axis, dim in enumerate(value.type.tensor_type.shape.dim):
            if dim.HasField("dim_value") and dim.dim_value < -1:  # -1: a dynamic one, as some exporters write it
                raise ModelError(f"graph input {printable(repr(value.name))}: dimension {axis} is {dim.dim_value}: a size is 0 or more "
                                 "(leave it unset, or name it, for a dynamic one)")
            if dim.HasField("dim_param") and not dim.dim_param:
                raise ModelError(f"graph input {printable(repr(value.name))}: dimension {axis} has an empty name (dim_param ''), which TensorRT "
                                 "builds as 0: name it, or leave it unset, for a dynamic one")
    for kind, values in (("input", graph.input), ("output", graph.output)):
        for value in values:
            dims = [size for size in (declared_size(d) for d in value.type.tensor_type.shape.dim) if size is not None]
            if any(d > MAX_ELEMENTS for d in dims) or math.prod(dims) > MAX_ELEMENTS:
                shape = [declared_size(d, d.dim_param or "?") for d in value.type.tensor_type.shape.dim]
                raise ModelError(f"graph {kind} {printable(repr(value.name))} has shape {shape}: TensorRT takes at most {MAX_ELEMENTS} elements per tensor")


def _check_contract(node, index, version):
    """A ``trt_scatter`` node against its op's contract (:class:`trt_scatter.ops.Op`)."""
    from trt_scatter.model import node_label

    label = node_label(node, index)
    op = ops.op_of(node) if node.domain == ops.DOMAIN else ops.op_of(node) or ops.OPS.get(node.op_type)
    if op is None:
        raise ModelError(f"{label}: domain '{ops.DOMAIN}' has no op '{node.op_type}' (its ops: {', '.join(ops.OPS)})")
    if node.domain == ops.DOMAIN and version != ops.VERSION:  # in ONNX's own domain, TensorRT maps it by op type alone
        got = "no opset import for it" if version is None else version
        raise ModelError(f"{label}: the model must import the domain '{ops.DOMAIN}' at version {ops.VERSION}, the only one there is (got {got})")
    if len(node.output) != 1 or not node.output[0]:
        raise ModelError(f"{label}: must have 1 output (got {len(node.output)}: {list(node.output)})")
    for attribute in node.attribute:
        _check_attribute(op, label, attribute)
    given = list(node.input)
    if len(given) > len(op.inputs):
        raise ModelError(f"{label}: takes at most {len(op.inputs)} inputs: {op.usage()} (got {len(given)})")
    for position, name in enumerate(op.inputs[: op.min_inputs]):
        if position >= len(given) or not given[position]:
            raise ModelError(f"{label}: input '{name}' is missing: {op.usage()} (got {len(given)} inputs: {given})")
    _check_aot_form(node, op, label)


def _check_aot_form(node, op, label):
    """A node for the AOT plugins (any of :data:`~trt_scatter.ops.AOT_ATTRIBUTES`) is whole, as
    :func:`trt_scatter.passes.aot.to_aot` writes it: TensorRT hands an AOT plugin the node's attributes and inputs by
    position, so one left out would shift the others (or end in a KeyError inside TensorRT's plugin class)."""
    names = {attribute.name for attribute in node.attribute}
    if not names & set(ops.AOT_ATTRIBUTES):
        return
    missing = [f"attribute '{name}'" for name in (*ops.AOT_ATTRIBUTES, *op.attributes) if name != "inplace" and name not in names]
    missing += [f"input '{name}'" for position, name in enumerate(op.inputs) if position >= len(node.input) or not node.input[position]]
    if missing:
        raise ModelError(f"{label}: a node for trt-scatter's AOT plugins has every attribute (but inplace) and input of {op.name}, as "
                         f"trt_scatter.passes.aot.to_aot writes them: TensorRT hands them to the plugin by position (missing: {', '.join(missing)})")


def _check_schema(node, index, version):
    """ONNX's own scatter node against ONNX's schema at the model's opset: the op exists there and has each of
    the node's attributes (TensorRT's parser reads ``reduction`` on a ScatterElements-13, which onnxruntime
    refuses)."""
    import onnx.defs

    label = node_label(node, index)
    try:
        schema = onnx.defs.get_schema(node.op_type, version, "")
    except onnx.defs.SchemaError:
        raise ModelError(f"{label}: ONNX has no {node.op_type} at opset {version}, the model's "
                         f"(it arrives in opset {_since(node.op_type)})") from None
    if schema.deprecated:  # Scatter from opset 11: onnxruntime refuses the model, ONNX's checker too
        op = ops.op_of(node)
        same = next((other.name for other in ops.STANDARD_OPS.values() if other.key == op.key and other is not op), None)
        instead = f": write it as {same}, which computes the same" if same else ""
        raise ModelError(f"{label}: ONNX deprecates {node.op_type} from opset {schema.since_version}, and the model's is {version}{instead}")
    if not schema.min_input <= len(node.input) <= schema.max_input or len(node.output) != 1:
        takes = schema.min_input if schema.min_input == schema.max_input else f"{schema.min_input} to {schema.max_input}"
        raise ModelError(f"{label}: {node.op_type} takes {takes} inputs and gives 1 output (got {len(node.input)} inputs, {len(node.output)} outputs)")
    _check_required_inputs(label, node, schema)
    for attribute in node.attribute:
        if attribute.name in schema.attributes:
            _check_attribute_kind(label, attribute, schema.attributes[attribute.name].type)
            continue
        since = _since(node.op_type, attribute.name)
        if since:
            raise ModelError(f"{label}: {node.op_type} at opset {version}, the model's, has no attribute '{attribute.name}' "
                             f"(it arrives in opset {since})")
        raise ModelError(f"{label}: {node.op_type} has no attribute '{attribute.name}' (its attributes: "
                         f"{', '.join(sorted(schema.attributes))})")
    reduction = next((attribute.s.decode(errors="replace") for attribute in node.attribute if attribute.name == "reduction"), "none")
    since = reductions.ONNX_REDUCTIONS.get(reduction)
    if since is not None and version < since:  # PyTorch's TorchScript exporter writes amax/amin so at opsets 16 and 17
        raise ModelError(f"{label}: {node.op_type} at opset {version}, the model's, has no reduction '{reduction}' "
                         f"(it arrives in opset {since}): export at opset {since} or later, or let trt-scatter rewrite make it the "
                         "reduction op's node")


def _check_required_inputs(label, node, schema, remedy=""):
    """No input that ``schema`` (the node's op in ONNX) requires has an empty name, which leaves it out: PyTorch's
    TorchScript exporter writes such nodes (an ``Add`` of two empty names), which TensorRT's parser calls an invalid
    node and ONNX's evaluator fails on with words about types."""
    import onnx.defs

    for position, name in enumerate(node.input):
        formal = schema.inputs[min(position, len(schema.inputs) - 1)] if schema.inputs else None
        if not name and formal is not None and formal.option != onnx.defs.OpSchema.FormalParameterOption.Optional:
            raise ModelError(f"{label}: input '{formal.name}' is missing (input {position} has an empty name): {node.op_type} takes "
                             f"{', '.join(schema_input.name for schema_input in schema.inputs)}{remedy}")


def _check_standard_inputs(node, index, version):
    """A node of ONNX's own ops, other than the scatters, that the model's opset knows: :func:`_check_required_inputs`
    (other ops are TensorRT's and ONNX's checker's to judge)."""
    import onnx.defs

    if "" not in node.input or node.domain not in ops.DEFAULT_DOMAINS or version is None or ops.op_of(node) is not None:
        return  # the scatter ops' own nodes: _check_schema
    try:
        schema = onnx.defs.get_schema(node.op_type, version, "")
    except onnx.defs.SchemaError:
        return
    _check_required_inputs(node_label(node, index), node, schema, "; the exporter that wrote the model left it out (PyTorch's TorchScript "
                           "exporter does for x[..., idx] = y, which trt_scatter.torch.export writes as one write)")


def _check_attribute_kind(label, attribute, kind):
    """An attribute of ONNX's own node is of the kind its schema says, and holds a value of that kind (TensorRT reads
    an INT-typed attribute's ``i``, 0 where it is not set)."""
    from onnx import AttributeProto

    field = {AttributeProto.INT: "i", AttributeProto.FLOAT: "f", AttributeProto.STRING: "s"}.get(kind)
    if attribute.type == kind and (field is None or attribute.HasField(field)):
        return
    held = ", ".join(f.name for f, _ in attribute.ListFields() if f.name not in ("name", "type")) or "nothing"
    wanted = {AttributeProto.INT: "an int", AttributeProto.FLOAT: "a float", AttributeProto.STRING: "a string"}.get(kind, AttributeProto.AttributeType.Name(kind))
    raise ModelError(f"{label}: attribute '{printable(attribute.name)}' must be {wanted} (got an attribute typed "
                     f"{AttributeProto.AttributeType.Name(attribute.type)} that holds {held})")


def _since(op_type, attribute=None):
    """The first opset whose ``op_type`` (with ``attribute``, where given) ONNX defines, or None."""
    import onnx.defs

    versions = [schema.since_version for schema in onnx.defs.get_all_schemas_with_history()
                if schema.name == op_type and schema.domain == "" and (attribute is None or attribute in schema.attributes)]
    return min(versions, default=None)


def _check_attribute(op, label, attribute):
    from onnx import AttributeProto

    contract = op.attributes.get(attribute.name)
    value = _value(attribute)
    if attribute.name in ops.AOT_ATTRIBUTES:  # written by trt_scatter.passes.aot for the AOT plugins
        wanted = ops.AOT_ATTRIBUTES[attribute.name]
        if value != wanted or attribute.type != (AttributeProto.STRING if isinstance(wanted, str) else AttributeProto.INT):
            raise ModelError(f"{label}: attribute '{attribute.name}' must be {wanted!r} for trt-scatter's AOT plugins (got {value!r})")
        return
    if contract is None:
        known = ", ".join(f"'{name}'" for name in op.attributes)
        raise ModelError(f"{label}: attribute '{attribute.name}' is not an attribute of {op.name} (its attributes: {known}) (got {value!r})")
    kind = AttributeProto.STRING if isinstance(contract.default, str) else AttributeProto.INT
    if attribute.type == kind and not attribute.HasField("s" if kind == AttributeProto.STRING else "i"):  # its type says so, its value is elsewhere
        value = _Shown(f"no {'string' if kind == AttributeProto.STRING else 'int'} value: {', '.join(f.name for f, _ in attribute.ListFields() if f.name not in ('name', 'type')) or 'none'} set")
        raise ModelError(f"{label}: attribute '{attribute.name}' must be {contract.describe()} (got {value!r})")
    if attribute.type != kind or not contract.admits(value):
        raise ModelError(f"{label}: attribute '{attribute.name}' must be {contract.describe()} (got {value!r})")


def _value(attribute):
    """An attribute's value: strings decoded; a tensor, a graph... as its kind (their repr runs over many lines)."""
    from onnx import AttributeProto, helper

    value = helper.get_attribute_value(attribute)
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if not isinstance(value, (int, float, str, list)):
        return _Shown(f"a {AttributeProto.AttributeType.Name(attribute.type).lower()}")
    return value


class _Shown(str):
    """A value shown as it is in a message (``{value!r}`` without quotes)."""

    def __repr__(self):
        return str(self)


def _schema_types(node, position):
    """The element type names ONNX's schema of a standard ``node`` (at the model's opset) takes for its input at
    ``position``: ScatterND's indices and TensorScatter's write_indices are int64 only (TensorRT's parser takes
    int32 too, but onnxruntime and ONNX's checker refuse the model)."""
    import onnx.defs

    schema = onnx.defs.get_schema(node.node.op_type, opset_version(node.tensors.model, "") or onnx.defs.onnx_opset_version(), "")
    formal = schema.inputs[position].type_str
    allowed = next((c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == formal), [formal])
    return tuple(text.removeprefix("tensor(").removesuffix(")") for text in allowed)


def _check_types(node):
    """Element types against the contract: data numeric (a ``trt_scatter`` op's; ONNX's own ops take what their
    schema takes), the element inputs and the output of data's type, index inputs int32 or int64 (ONNX's own ops:
    what their schema takes), an index input of its leader's type; the output of data's shape where both are known."""
    op, name = node.op, node.op.key
    data = node.dtype(op.data_input)
    if data is not None and op.is_plugin:
        rules.check_data_type(name, op.data_input, data)
    for input_name, leader in op.index_inputs.items():
        if node.dtype(input_name) is None:
            continue
        allowed = ops.INDEX_TYPES if op.is_plugin else _schema_types(node, op.inputs.index(input_name))
        if not op.is_plugin and node.dtype(input_name).kind == "i" and node.dtype(input_name).name not in allowed:  # a cast keeps signed values
            # PyTorch's exporters write int32 indices into ONNX's own scatters from int32 tensors, which ONNX forbids
            raise ScatterInputError(name, input_name, f"must be {' or '.join(allowed)} in ONNX's {node.node.op_type}: cast it (an exporter "
                                    "wrote another type), or export with trt_scatter.torch.export, whose ops take int32",
                                    rules.type_name(node.dtype(input_name)))
        rules.check_type_in(name, input_name, node.dtype(input_name), allowed)
        if leader != input_name and node.dtype(leader) is not None:
            rules.check_same_type(name, input_name, node.dtype(input_name), node.dtype(leader), other=leader)
    for input_name in [n for n in op.element_inputs if n != op.data_input] + ["output"]:
        if data is not None and node.dtype(input_name) is not None:
            rules.check_same_type(name, input_name, node.dtype(input_name), data, other=op.data_input)
    data_shape, output_shape = node.shape(op.data_input), node.shape("output")
    if data_shape is not None and output_shape is not None:  # every scatter's output is data written into
        rules.check_shape(name, "output", output_shape, data_shape, f"{op.data_input}'s shape")
