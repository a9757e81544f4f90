"""A reference for whole models: ONNX's own evaluator, with the scatter ops from the oracle.

Every op that ``onnx.reference.ReferenceEvaluator`` implements runs as ONNX defines it, at the
opsets the model imports; every op of the registry (:mod:`trt_scatter.ops`) runs its oracle's
``evaluate`` (:mod:`trt_scatter.oracle`, looked up at call time, so the oracle stays the one source of
their semantics): the ``trt_scatter`` nodes (``SliceScatter``, ``ScatterUpdate``, ``ScatterElementsReduce``,
``ScatterNDReduce``, ``CacheScatter``) and ONNX's ``ScatterElements``/``ScatterND`` (with a reduction too,
in the oracle's order of combination) and ``TensorScatter``. A model that mixes MatMul,
Conv or Sigmoid with plugin nodes runs here as it is, on any machine::

    from trt_scatter.reference import Reference

    outputs = Reference("model.onnx").run({"data": data, "updates": updates, ...})  # name -> array

``trt-scatter check`` compares with it, and ``polygraphy run --pluginref`` runs it once
trt-scatter is installed (:class:`trt_scatter.polygraphy_ext.ReferenceRunner`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from onnx.reference.op_run import OpRun
from onnx.reference.ops import load_op

from trt_scatter import dtypes, oracle
from trt_scatter.model import ModelError, all_nodes, as_model, declared_dims, fed_constant, indexed_nodes, node_label
from trt_scatter.model.graph import SHAPE_READERS, keeps_values
from trt_scatter.log import first_line, warn
from trt_scatter.ops import DEFAULT_DOMAINS, OPS, STANDARD_OPS, op_of
from trt_scatter.oracle import rules
from trt_scatter.oracle.rules import Known, ScatterInputError

if TYPE_CHECKING:
    import os
    from collections.abc import Sequence

    import onnx

    from numpy.typing import ArrayLike

    from trt_scatter.model import Model
    from trt_scatter.ops import Op


class NodeInputError(ScatterInputError):
    """The oracle's :class:`~trt_scatter.oracle.ScatterInputError`, its message led by the node that got
    the inputs (``"ScatterUpdate node 'update': scatter_update: 'indices' ..."``; ``node``: that label)."""

    def __init__(self, node: str, err: ScatterInputError, op: Op | None = None) -> None:
        super().__init__(err.op, err.input_name, err.rule, err.value)
        self.node = node_label(node)  # the evaluator does not say where the node is in its graph
        self.outputs = tuple(node.output)  #: the node's output names, as NodeRunError's
        self.tensor = None  #: the node's tensor of that input, where ``op`` says which
        if op is not None and err.input_name in op.inputs and op.inputs.index(err.input_name) < len(node.input):
            self.tensor = node.input[op.inputs.index(err.input_name)]
        self.args = (f"{self.node}: {err}",)

    def fed_as(self, inputs: Sequence[str], nodes: Sequence[onnx.NodeProto]) -> NodeInputError:
        """This error, naming the model's input (one of ``inputs``) that gave the broken input where its name is
        another: the name a user's feed file or profile holds. Through a Cast or Identity (ops that keep the values:
        int32 indices reach ONNX's ScatterND through a Cast) it is that input; computed from the values of one input
        alone (a KV cache's position wrapped from the end by the cache's shape), that input is its source."""
        if self.tensor is None:
            return self
        producers = {output: node for node in nodes for output in node.output}
        tensor = self.tensor
        while tensor not in inputs and tensor in producers and keeps_values(producers[tensor]):
            tensor = producers[tensor].input[0]
        if tensor in inputs:
            if tensor != self.input_name:  # the op's name for it says it already
                self.args = (f"{self.args[0]}; '{self.input_name}' is the model's input {tensor!r}",)
            return self
        sources = _value_sources(tensor, producers, set(inputs))
        if len(sources) == 1:
            self.args = (f"{self.args[0]}; '{self.input_name}' is computed from the model's input {sources.pop()!r}",)
        return self


def _value_sources(tensor, producers, inputs):
    """The model's inputs whose values ``tensor`` is computed from, not those that reach it for their shape or type
    alone (:data:`~trt_scatter.model.graph.SHAPE_READERS`)."""
    found, seen, pending = set(), set(), [tensor]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in inputs:
            found.add(name)
        elif name in producers:
            node = producers[name]
            if node.op_type in SHAPE_READERS and node.domain in DEFAULT_DOMAINS:
                shape_only = SHAPE_READERS[node.op_type]  # None: every input
                pending.extend(value for position, value in enumerate(node.input) if shape_only is not None and position != shape_only)
            else:
                pending.extend(node.input)
    return found


def run_op(op: Op, inputs: Sequence[np.ndarray | None], attributes: dict[str, Any] | None = None) -> np.ndarray:
    """The output of a node of ``op`` (a :class:`trt_scatter.ops.Op`) by its oracle: ``inputs`` in the node's
    order (``None`` for an optional one left out), ``attributes`` as the node has them."""
    named = {name: value for name, value in zip(op.inputs, inputs) if value is not None}
    return oracle.module(op).evaluate(named, attributes or {})


def _reference_op(op, domain=None):
    """An ``onnx.reference`` op class running ``op`` by its oracle, raising :class:`NodeInputError`; for
    ONNX's own ops, a subclass of ONNX's class (which declares their attributes and defaults)."""
    onnx_class = OpRun if op.is_plugin else _onnx_op(op.name)

    def _run(self, *inputs, **attributes):
        given = {name: value for name, value in attributes.items() if value is not None}
        try:
            output = run_op(op, inputs, given)
        except ScatterInputError as err:  # the oracle's own: the scatter ops run no other node
            raise NodeInputError(self.onnx_node, err, op) from None
        repeat = oracle.module(op).repeated_target(Known({name: v for name, v in zip(op.inputs, inputs) if v is not None}, given))
        if repeat and not getattr(self, "repeat_shown_by_model", lambda node: False)(self.onnx_node):
            warn(f"{node_label(self.onnx_node)}: {repeat} (in the inputs of a run): {rules.UNDEFINED}")
        return (output,)

    # onnx.reference matches a custom op by its class name and op_domain.
    return type(op.name, (onnx_class,), {"op_domain": op.domain if domain is None else domain, "_run": _run})


def _onnx_op(name):
    """ONNX's own evaluator class for op type ``name``, or ``OpRun`` where this onnx has none (TensorScatter before
    onnx 1.19): the oracle then runs every node of it."""
    try:
        return load_op("", name)
    except Exception:  # onnx.reference raises its own error types for an op it does not know
        return OpRun


def _loop_as_the_spec_runs_it():
    """ONNX's Loop op class, running a Loop as the spec says where ONNX's evaluator did not: with its ``cond`` input
    left out (true: M iterations), which it ran zero times (``while cond and ...`` with cond None); with a body input
    named like an outer tensor (a carried value named like a model input), which it read as the outer tensor, the body
    then computing from the model's input instead of the carried value; and with scan outputs, each the iterations'
    values stacked on a new first axis, which it concatenated ((2, 5) each gave (6, 5) for 3 iterations) and failed to
    make after no iteration. A model that wrote its output in such a loop failed its check against onnxruntime."""
    loop = _subgraphs_read_their_own_initializers(load_op("", "Loop"))

    def _run(self, M, cond, *initial, context=None, attributes=None, bindings=None, body=None):
        names = self.body.input_names
        feeds = {name: value for name, value in (context or {}).items() if name not in names}  # the body's inputs hide outer tensors
        carried, scans = list(initial), [[] for _ in range(self.K)]
        cond, iteration = (np.array(True) if cond is None else cond), 0
        while cond and (M is None or iteration < M):
            feeds |= dict(zip(names, [np.array(iteration, np.int64), cond, *carried]))
            outputs = self._run_body(feeds, attributes=attributes, bindings=bindings)
            cond, carried = outputs[0], list(outputs[1 : 1 + self.N])
            for scan, value in zip(scans, outputs[1 + self.N :]):
                scan.append(value)
            iteration += 1
        stacked = [np.stack(scan) if scan else _no_iteration(self, self.N + k) for k, scan in enumerate(scans)]
        return self._check_and_fix_outputs(tuple(carried + stacked))

    return type("Loop", (loop,), {"op_domain": "", "_run": _run})


def _scan_as_the_spec_runs_it():
    """ONNX's Scan op class, running a Scan as the spec says: each scan input sliced along its axis (``scan_input_axes``,
    negative ones counting from the end), forward or in reverse (``scan_input_directions``), and each scan output stacked
    along its axis, in its direction. ONNX's evaluator refused every axis and direction but the first's, so the
    reference could not check such a model (tf2onnx writes RNNs so)."""
    scan = _subgraphs_read_their_own_initializers(load_op("", "Scan"))

    def __init__(self, onnx_node, run_params):
        OpRun.__init__(self, onnx_node, run_params)  # Scan's own refuses the axes and directions

    def _run(self, *args, context=None, attributes=None, bindings=None, **_):
        count = self.num_scan_inputs
        states, xs = list(args[: len(args) - count]), args[len(args) - count :]
        axes = [_axis_of(axis, x.ndim, "scan_input_axes", f"scan input {k}") for k, (axis, x) in enumerate(zip(_per_scan(self.scan_input_axes, count), xs))]
        lengths = [x.shape[axis] for x, axis in zip(xs, axes)]
        if len(set(lengths)) > 1:
            raise ValueError(f"Scan: its scan inputs must have one length along their scan axes (got {', '.join(map(str, lengths))})")
        names = self.body.input_names
        feeds = {name: value for name, value in (context or {}).items() if name not in names}  # the body's inputs hide outer tensors
        directions, scans = _per_scan(self.scan_input_directions, count), None
        for step in range(lengths[0]):
            slices = [np.take(x, lengths[0] - 1 - step if backward else step, axis=axis) for x, axis, backward in zip(xs, axes, directions)]
            feeds |= dict(zip(names, states + slices))
            outputs = self._run_body(feeds, attributes=attributes, bindings=bindings)
            states, values = list(outputs[: len(states)]), outputs[len(states) :]
            scans = [[] for _ in values] if scans is None else scans
            for scan, value in zip(scans, values):
                scan.append(value)
        if scans is None:
            raise ValueError("Scan: its scan inputs are empty along their scan axes, so no step runs (onnxruntime refuses them too)")
        stacked = []
        for k, (scan, axis, backward) in enumerate(zip(scans, _per_scan(self.scan_output_axes, len(scans)), _per_scan(self.scan_output_directions, len(scans)))):
            axis = _axis_of(axis, scan[0].ndim + 1, "scan_output_axes", f"scan output {k}")
            stacked.append(np.stack(scan[::-1] if backward else scan, axis=axis))
        return self._check_and_fix_outputs(tuple(states + stacked))

    return type("Scan", (scan,), {"op_domain": "", "__init__": __init__, "_run": _run})


def _axis_of(axis, rank, attribute, what):
    """``axis`` of a tensor of ``rank`` counted from the front; one it does not have is refused, as onnxruntime does."""
    if not -rank <= axis < rank:
        raise ValueError(f"Scan: {attribute!r} value {axis} must be in [{-rank}, {rank - 1}] for {what} (of rank {rank})")
    return axis % rank


def _per_scan(values, count):
    """An attribute list with a value per scan input or output (``scan_input_axes``...), 0 for each it leaves out."""
    values = list(values or ())
    return values[:count] + [0] * (count - len(values))


def _no_iteration(loop, index):
    """Scan output ``index`` of op ``loop`` after no iteration: empty, of the element type and per-iteration shape that
    shape inference gives the node's output in the model (:class:`Reference` tells each op its model), 0 for each size
    it does not know, as onnxruntime makes it; in an evaluator made without :class:`Reference`, or where sibling
    subgraphs both make a tensor of the name (the model's tensors know one of them), of those the body declares."""
    model, name = getattr(loop, "reference_model", None), (loop.onnx_node.output[index:index + 1] or [""])[0]
    if model is not None and name and _made_once(model.proto.graph, name) and model.tensors.dtype(name) is not None:
        dtype, per_iteration = model.tensors.dtype(name), (model.tensors.shape(name) or (0,))[1:]
    else:
        declared = loop.body.output_types_[1 + index].tensor_type
        dtype = dtypes.from_onnx(declared.elem_type) or np.float32
        per_iteration = [dim.dim_value if dim.HasField("dim_value") else 0 for dim in declared.shape.dim]
    return np.empty((0, *(max(size, 0) for size in per_iteration)), dtype)


def _made_once(graph, name):
    """Whether one node of ``graph`` and its subgraphs makes ``name``: sibling subgraphs may each make a tensor of one name,
    of which the model's tensors (one table of names) know one."""
    return sum(name in node.output for node in all_nodes(graph)) == 1


def _ops_within(evaluator):
    """The op instances of ``evaluator`` (ONNX's ReferenceEvaluator) and of its nodes' subgraphs, at any depth."""
    for node in getattr(evaluator, "rt_nodes_", None) or ():
        yield node
        for attribute in node.onnx_node.attribute:
            yield from _ops_within(getattr(node, attribute.name, None))


def _subgraphs_read_their_own_initializers(onnx_class):
    """``onnx_class`` (If, Loop, Scan), its subgraphs reading their own initializers where an outer tensor has the name
    too, as onnxruntime does: ONNX's evaluator fed the outer tensors to a subgraph over its initializers."""
    import onnx

    def _load_attributes(self):
        onnx_class._load_attributes(self)
        for att in self.onnx_node.attribute:
            value = getattr(self, att.name, None)
            own = set(getattr(value, "rt_inits_", None) or ())
            if att.type == onnx.AttributeProto.GRAPH and own:
                setattr(self, f"_run_{att.name}", lambda context, value=value, own=own, attributes=None, bindings=None: OpRun._evaluate_subgraph(
                    {name: v for name, v in (context or {}).items() if name not in own}, value, attributes, bindings))

    return type(onnx_class.__name__, (onnx_class,), {"op_domain": "", "_load_attributes": _load_attributes})


def _gather_elements_along_any_axis():
    """ONNX's GatherElements op class, gathering with ``np.take_along_axis``: ONNX's evaluator uses ``np.choose``, which
    takes at most 64 choices, and its fallback failed along a longer axis ('cannot reshape array of size 1 into shape
    (1,4)': every check of a BERT model, which gathers from its 512 token types, failed); it also refused a negative
    axis and indices shorter than data off the axis, which onnxruntime takes. Negative indices count from the end; an
    index out of [-s, s-1] is refused, not wrapped."""
    gather = load_op("", "GatherElements")

    def _run(self, data, indices, axis=None):
        # what onnxruntime refuses is refused here too: np.take_along_axis would broadcast a data dim of 1 (or 0) to
        # longer indices, and a modulo would wrap an axis past the rank, each an answer ONNX has none for
        if indices.ndim != data.ndim:
            raise ValueError(f"GatherElements: 'indices' must have data's rank ({data.ndim}) (got rank {indices.ndim})")
        if not -data.ndim <= (axis or 0) < data.ndim:
            raise ValueError(f"GatherElements: 'axis' must be in [{-data.ndim}, {data.ndim - 1}] (got {axis})")
        axis = (axis or 0) % data.ndim
        if any(i > d for k, (i, d) in enumerate(zip(indices.shape, data.shape)) if k != axis):
            raise ValueError(f"GatherElements: 'indices' must be no longer than data {data.shape} off axis {axis} (got shape {indices.shape})")
        size = data.shape[axis]
        if indices.size and (indices.min() < -size or indices.max() >= size):
            bad = int(indices.min() if indices.min() < -size else indices.max())
            raise ValueError(f"GatherElements: 'indices' values must be in [{-size}, {size - 1}] along data's axis {axis} (got {bad})")
        within = data[tuple(slice(None) if d == axis else slice(0, indices.shape[d]) for d in range(data.ndim))]  # PyTorch's gather
        return (np.take_along_axis(within, np.where(indices < 0, indices + size, indices).astype(np.int64), axis=axis),)

    return type("GatherElements", (gather,), {"op_domain": "", "_run": _run})


#: One op class per registered op, for ``onnx.reference.ReferenceEvaluator(..., new_ops=REFERENCE_OPS)``; a
#: ``trt_scatter`` op in ONNX's own domain too (TensorRT's parser maps such a node onto the plugin as well); Loop and
#: GatherElements, If and Scan, whose ONNX classes are mended.
REFERENCE_OPS = [_reference_op(op) for op in (*OPS.values(), *STANDARD_OPS.values())] + [_reference_op(op, "") for op in OPS.values()] + [
    _loop_as_the_spec_runs_it(), _scan_as_the_spec_runs_it(), _gather_elements_along_any_axis(), _subgraphs_read_their_own_initializers(load_op("", "If"))]


def _default_domain_as_empty(model):
    """``model``, or a copy of it that names the default domain "" where it says "ai.onnx" (the same
    domain to ONNX; its evaluator knows only "")."""
    import onnx

    from trt_scatter.model import all_nodes

    if not any(opset.domain == "ai.onnx" for opset in model.opset_import):
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for opset in copy.opset_import:
        if opset.domain == "ai.onnx":
            opset.domain = ""
    for node in all_nodes(copy.graph):
        if node.domain == "ai.onnx":
            node.domain = ""
    return copy


class NodeRunError(RuntimeError):
    """Another op's failure in a run (an index out of range in a Gather...), its message led by the node's label: ONNX's
    evaluator raises the op's own error, which names no node. ``outputs``: the node's output names."""

    def __init__(self, message: str, outputs: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.outputs = tuple(outputs)


def _naming_the_node(node):
    """``node.run`` that raises :class:`NodeRunError` naming the node for an error other than the oracle's (which
    names it already, :class:`NodeInputError`)."""
    run = node.run

    def run_naming_the_node(*args, **kwargs):
        try:
            return run(*args, **kwargs)
        except (NodeInputError, NodeRunError):
            raise
        except Exception as err:
            raise NodeRunError(f"{node_label(node.onnx_node)}: {first_line(err)}", node.onnx_node.output) from err

    return run_naming_the_node


class _RepeatsTheModelShows:
    """Whether a scatter node's repeated target is one validation warns of: its indices are constants and the model's
    static shapes show the repeat. A run warns of the others, also of constant indices that repeat a target only at the
    run's shapes (``[[2], [-1]]`` into a dynamic dimension of 3). The model's shapes are worked out at the first such
    repeat only (one run of shape inference, which a large model pays in seconds)."""

    def __init__(self, loaded, constants):
        self.loaded, self.constants, self._shown = loaded, constants, None

    def __call__(self, node) -> bool:
        op = op_of(node)
        names = [node.input[op.inputs.index(name)] for name in op.index_inputs if op.inputs.index(name) < len(node.input)]
        if not names or not set(names) <= self.constants:
            return False
        if self._shown is None:
            from trt_scatter.model.node import OpNode

            self._shown = set()
            for index, each in enumerate(self.loaded.proto.graph.node):
                each_op = op_of(each)
                if each_op is not None and oracle.module(each_op).repeated_target(OpNode(each, index, self.loaded.tensors, each_op)):
                    self._shown.add(_key(each))
        return _key(node) in self._shown


def check_data_types(loaded: Model) -> None:
    """Every scatter of ``loaded`` whose data's type the model declares scatters numbers, the oracle's rule (a
    :class:`~trt_scatter.model.ModelError` where one does not): ONNX's own ops take any type (complex, string, float8),
    and a run would fail in the words of whatever met the values first."""
    from trt_scatter.model.node import OpNode

    for index, node in indexed_nodes(loaded.proto.graph):  # If and Loop bodies too, whose outer-scope names loaded.tensors knows
        op = op_of(node)
        dtype = None if op is None else OpNode(node, index, loaded.tensors, op).dtype(op.data_input)
        if dtype is not None:
            try:
                rules.check_data_type(op.key, op.data_input, dtype)
            except ScatterInputError as err:
                raise ModelError(f"the reference cannot run this model: {node_label(node, index)}: {err}") from None


def _key(node):
    return node.op_type, tuple(node.input), tuple(node.output)


class Reference:
    """Runs an ONNX model (a path, an ``onnx.ModelProto`` or a :class:`~trt_scatter.model.Model`) with
    :data:`REFERENCE_OPS` for the scatter ops.

    The evaluator is made once per instance; :meth:`run` takes a feed dict and returns
    ``{output name: array}``. The oracle's :class:`~trt_scatter.oracle.ScatterInputError` reaches the
    caller as a :class:`NodeInputError` (a ScatterInputError) naming the node, the op, the input
    and the rule.
    """

    def __init__(self, model: str | os.PathLike | onnx.ModelProto | Model) -> None:
        from onnx.reference import ReferenceEvaluator

        loaded = as_model(model, weights=True)  # a file that is no model: one ModelError line
        check_data_types(loaded)
        model = loaded.proto
        self.model = model  #: the ModelProto it runs, as given or read
        try:
            self.evaluator = ReferenceEvaluator(_default_domain_as_empty(model), new_ops=REFERENCE_OPS)
        except Exception as err:  # ONNX's evaluator refuses the model (an op it does not know, an If without a branch...)
            raise ModelError(f"the reference cannot run this model: {first_line(err)}") from None
        self._defaults = {init.name for init in model.graph.initializer}  # constants, even where the model lists them as inputs
        shown = _RepeatsTheModelShows(loaded, self._defaults | {name for node in model.graph.node if node.op_type == "Constant" for name in node.output})
        for node in getattr(self.evaluator, "rt_nodes_", None) or ():
            node.repeat_shown_by_model = shown  # validation warns of those
            node.run = _naming_the_node(node)
        for node in _ops_within(self.evaluator):
            node.reference_model = loaded  # its shapes, worked out where a Loop's scan output after no iteration needs them

    @property
    def input_names(self) -> list[str]:
        return list(self.evaluator.input_names)

    @property
    def output_names(self) -> list[str]:
        return list(self.evaluator.output_names)

    def run(self, feeds: dict[str, ArrayLike]) -> dict[str, np.ndarray]:
        """``{output name: array}`` for ``feeds`` (``{input name: array}``: every input without an
        initializer, and nothing else, so that a misspelt name is an error, not an input left out; an input with an
        initializer is a constant, as everywhere else in trt-scatter and in TensorRT's ONNX parser)."""
        if not isinstance(feeds, dict):
            raise TypeError(f"Reference.run: feeds must be a dict of input name -> array (got {type(feeds).__name__})")
        names = self.input_names
        known = ", ".join(names)
        for name in feeds:
            if name not in names:
                raise ValueError(f"Reference.run: {name!r} is not an input of the model (its inputs: {known})")
            if name in self._defaults:
                raise ValueError(f"Reference.run: {fed_constant(name)}")
        for name in names:
            if name not in feeds and name not in self._defaults:
                raise ValueError(f"Reference.run: no feed for the model's input {name!r} (its inputs: {known})")
        arrays = {name: np.asarray(value) for name, value in feeds.items()}
        for name, array in arrays.items():
            self._check_feed(name, array)
        try:
            values = self.evaluator.run(None, arrays)
        except NodeInputError as err:
            raise err.fed_as(list(arrays), self.model.graph.node) from None
        return dict(zip(self.output_names, values))

    def _check_feed(self, name, array):
        """A feed has the element type the model declares for its input (the reference would compute in the
        feed's, float64 for a float32 model), and its rank and static dimensions."""
        from trt_scatter import dtypes

        declared = next((value for value in self.model.graph.input if value.name == name), None)
        if declared is None or not declared.type.HasField("tensor_type"):
            return
        dtype = dtypes.from_onnx(declared.type.tensor_type.elem_type)
        if dtype is not None and array.dtype != dtype:
            raise ValueError(f"Reference.run: input {name!r} is {array.dtype}, the model's is {dtype}")
        dims = declared_dims(declared)
        if dims is not None and (array.ndim != len(dims) or any(isinstance(d, int) and d != n for d, n in zip(dims, array.shape))):
            raise ValueError(f"Reference.run: input {name!r} has shape {array.shape}, which does not fit the model's {rules.show_shape(dims)}")
