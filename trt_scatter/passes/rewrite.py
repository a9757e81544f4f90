"""Rewrite the scatter patterns PyTorch's ONNX exporters write into ``trt_scatter`` plugin nodes.

For users who only have an ONNX file. PyTorch writes ``slice_scatter``, slice assignment,
``select_scatter``, ``index_copy`` and ``index_put`` as standard ops that cost TensorRT extra full
passes over the tensor or a coordinate per element, and its writes that combine as scatters with a
reduction, which TensorRT builds nondeterministically or not at all; each pattern below becomes one
``trt_scatter`` node (for masked writes, a ``Where``) computing the same values:

- ``Transpose(perm) -> ScatterND -> Transpose(perm^-1)`` around data and updates (the dynamo
  exporter's write on an axis other than 0) and a plain ``ScatterND``, whose indices are
  ``Unsqueeze(Slice(Range(0, dim), start, stop, step), -1)`` (a slice, bounds known at run time
  included), ``Unsqueeze(index, -1)`` (an index list; negative indices are wrapped first, as
  ScatterND reads them), or a constant (after folding the nodes that compute it from constants
  and static shapes): a grid of arithmetic progressions (a strided slice on one or more axes,
  the TorchScript exporter's full coordinate tensors) or one index list along one axis;
- ``ScatterElements`` whose indices are a constant (or a constant expanded) that varies along its
  axis only, with updates that span data's other axes: a slice or an index list along that axis; and
  the TorchScript exporter's ``index_copy`` (a KV cache's write): ``Expand(Unsqueeze(I))`` of a 1-D
  run-time ``I`` placed on the axis, the same index list (negative indices wrapped);
- ``ScatterND`` (between Transposes or not) whose index rows are ``(b, pos[b])`` for every batch row
  ``b`` (``Concat`` of an ``arange`` over the batch and a position vector, also each ``Expand``-ed to the shape of
  their sum where the vector's dimension is the batch's symbol, or a constant of that form):
  a write of each batch row at its own position, one ``trt_scatter::CacheScatter`` (TensorScatter-24); also rows
  ``(b, pos[b] + t)`` for t < T (a prefill, each batch row's T tokens from its own position: ``_batch_spans``);
- masked writes, ``ScatterND(X, Transpose(NonZero(M)), U)`` (``x[mask] = v``, ``masked_scatter``):
  a ``Where`` on the mask, with the values broadcast (``U`` an ``Expand`` of values that do not vary
  along the written elements; or a row written through a row mask, which PyTorch's TorchScript
  translation gives one value per masked element, too few once two rows are masked), computed element by
  element from the masked elements (``x[mask] += v``: ``U`` an elementwise ``F(GatherND(X, NonZero(M)), v)``
  becomes ``F(X, v)``), or gathered in order (``U`` the first rows of a source, taken at ``CumSum(M) - 1``),
  so that no NonZero (data-dependent shapes, and none at all in TensorRT-RTX) remains; with a reduction add or mul
  (``index_put((mask,), v, accumulate=True)``), a ``Where`` of ``X + values`` or ``X * values``;
- ``SliceScatter(D, SliceScatter(Slice(D, s), Y, t), s)`` on different axes: one SliceScatter over
  both (the dynamo exporter hands a write over several axes over as nested writes);
- a chain of SliceScatters that writes batch row ``b`` of D at position ``P[b]`` with ``K[b]``, once for
  every row (``for b in range(B): cache[b, :, pos[b]] = k[b]``, as :mod:`trt_scatter.torch` exports the
  loop with the TorchScript exporter): one CacheScatter of ``K`` at the positions ``P``.
- ``ScatterElements``/``ScatterND`` with a reduction (add, mul, min, max): ``ScatterElementsReduce``/
  ``ScatterNDReduce`` (``include_self=1``; ``include_self=0`` where its data is a plain scatter of the reduction's
  identity at the same indices, read by it alone: the dynamo exporter's ``scatter_reduce(include_self=False)``,
  whose fill repeats targets); a ScatterElements along axis 0 whose indices are an index
  list expanded over data's other axes (PyTorch's ``scatter_add`` of ``index.view(-1, 1).expand_as(src)``,
  PyG's aggregations): ScatterNDReduce over those rows; ``Add(X, Scatter(zeros of X's shape, I, U))`` (the
  TorchScript exporter's ``index_put(accumulate=True)`` and ``index_add``, which ONNX leaves undefined where I
  repeats): the scatter into X with reduction add, PyTorch's sum.

First, an ``If`` whose condition the model's static shapes decide is replaced by the branch it takes: PyTorch's
TorchScript exporter guards ``scatter_reduce`` and ``gather`` with ``If(Size(Shape(x)) == 0)`` (a 0-D input),
whose branches give outputs of different ranks, so that shape inference can tell no rank past it.

A write of a whole tensor becomes an Identity of the updates. Everything else is left as it was,
and the report says why: point indices, indices known only at run time from something
else, repeated or out-of-range constant indices (undefined or an error in ONNX). Nothing is
rewritten on a guess: the shapes that make a pattern exact (the Range's length, the updates
spanning data) are checked from constants, static shapes and shared symbolic dimensions.

:func:`rewrite` is the function, :class:`RewriteToTrtScatter` the polygraphy loader, and
``trt-scatter rewrite IN.onnx OUT.onnx [--report]`` the command::

    model, report = rewrite(onnx.load("model.onnx"))
    print("\\n".join(report.lines()))
    network = NetworkFromOnnxBytes(BytesFromOnnx(RewriteToTrtScatter(OnnxFromPath("model.onnx"))))

It is the inverse of ``trt-scatter lower``: ``lower(rewrite(model))`` computes what ``model`` does.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from typing import TYPE_CHECKING, Any

import numpy as np
from polygraphy import util
from polygraphy.backend.base import BaseLoader

from trt_scatter import dtypes
from trt_scatter.model import all_graphs, as_model, fresh_name, nested_nodes, opset_version
from trt_scatter.model.graph import ELEMENTWISE
from trt_scatter.model.tensors import fold, infer_shapes
from trt_scatter.ops import DEFAULT_DOMAINS, DOMAIN, is_trt_scatter, op_of, register_onnx_schemas
from trt_scatter.oracle.reductions import ONNX_REDUCTIONS

if TYPE_CHECKING:
    import os
    from collections.abc import Iterator

    import onnx

    from trt_scatter.model import Model

INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)


@dataclasses.dataclass
class Change:
    """One pattern found: the node it ends in, what it was, what it became (``None`` if left) and why."""

    node: str
    pattern: str
    result: str = None
    detail: str = ""


@dataclasses.dataclass
class RewriteReport:
    """What :func:`rewrite` rewrote and what it left, with the reasons."""

    rewritten: list = dataclasses.field(default_factory=list)
    left: list = dataclasses.field(default_factory=list)

    def lines(self) -> Iterator[str]:
        for change in self.rewritten:
            yield f"rewritten  {change.node}: {change.pattern} -> {change.result}" + (f" ({change.detail})" if change.detail else "")
        for change in self.left:
            yield f"left       {change.node}: {change.pattern}: {change.detail}"
        if not self.rewritten and not self.left:
            yield "no scatter pattern in the model"


def rewrite(model: Model | onnx.ModelProto | str | os.PathLike) -> tuple[onnx.ModelProto, RewriteReport]:
    """Rewrites ``model`` (a path, an ``onnx.ModelProto`` or a :class:`~trt_scatter.model.Model`); returns
    ``(onnx.ModelProto, RewriteReport)``. The model given is not changed.
    """
    import onnx
    import onnx_graphsurgeon as gs

    register_onnx_schemas()  # so shape inference types the outputs of trt_scatter nodes already there
    loaded = as_model(model, weights=True)  # constant index tensors may be kept in external files
    original = loaded.proto
    model = _taking_decided_branches(loaded)
    try:
        inferred = infer_shapes(model)
    except Exception:  # a model ONNX cannot infer (unknown ops) keeps what it declares
        inferred = model
    from onnx_graphsurgeon.logger import G_LOGGER

    # its warnings are on its own data model: that it keeps bfloat16 as ONNX's type, that it skips an attribute type it
    # does not read (a model that keeps one is refused where a rewrite would drop it: _refuse_what_graphsurgeon_drops)
    with G_LOGGER.suppress(G_LOGGER.ERROR):
        graph = gs.import_onnx(inferred)
    rewriter = _Rewriter(graph)
    rewriter.run()
    rewriter.report.left += [Change(label, node.op_type, None, f"lies in a subgraph of {holder}; rewrite works on the main graph only")
                             for node, label, holder in nested_nodes(model.graph, _standard_scatter)]  # torch.cond exports put writes there
    if not rewriter.report.rewritten:  # left alone means left alone: not even the inferred shapes are added
        unchanged = onnx.ModelProto()
        unchanged.CopyFrom(original)
        return unchanged, rewriter.report
    _refuse_what_graphsurgeon_drops(model)
    result = gs.export_onnx(graph)
    _keep_what_graphsurgeon_drops(model, result)
    return result, rewriter.report  # onnx-graphsurgeon imports every domain the nodes use (trt_scatter at version 1)


# The attribute types onnx-graphsurgeon reads (its importer skips others, with a warning, and writes the node without them)
_GRAPHSURGEON_ATTRIBUTES = ("FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS", "STRINGS")


def _refuse_what_graphsurgeon_drops(model: onnx.ModelProto) -> None:
    """A model with an attribute onnx-graphsurgeon drops (a ``Constant``'s ``sparse_value``, an ``Optional``'s ``type``)
    is refused in one line: the rewritten model would lack it (a Constant without its value, which no runtime takes)."""
    import onnx

    from trt_scatter.model import ModelError, node_label

    for graph in all_graphs(model.graph):
        for node in graph.node:
            for attribute in node.attribute:
                kind = onnx.AttributeProto.AttributeType.Name(attribute.type)
                if kind not in _GRAPHSURGEON_ATTRIBUTES:
                    raise ModelError(f"{node_label(node)}: attribute {attribute.name!r} is of type {kind}, which trt-scatter rewrite cannot "
                                     "carry into the model it writes (onnx-graphsurgeon, which it rewrites with, drops it): give that value "
                                     "another form (a Constant's dense 'value')")


def _keep_what_graphsurgeon_drops(model: onnx.ModelProto, result: onnx.ModelProto) -> None:
    """What onnx-graphsurgeon's round trip leaves out of ``result``, taken from ``model``: its IR version, metadata, doc
    strings, domain and version; the doc string and metadata of every node it kept (the same op writing the same
    outputs), the graph's metadata, and the value infos of the tensors still there that it did not write (an
    initializer's, with the exporter's metadata) or wrote without their metadata."""
    result.ir_version = model.ir_version
    del result.metadata_props[:]
    result.metadata_props.extend(model.metadata_props)
    result.doc_string, result.domain, result.model_version = model.doc_string, model.domain, model.model_version
    result.graph.doc_string = model.graph.doc_string
    del result.graph.metadata_props[:]
    result.graph.metadata_props.extend(model.graph.metadata_props)
    kept = {(node.domain, node.op_type, tuple(node.output)): node for node in model.graph.node}
    for node in result.graph.node:
        before = kept.get((node.domain, node.op_type, tuple(node.output)))
        if before is not None:
            node.doc_string = before.doc_string or node.doc_string
            if not node.metadata_props:
                node.metadata_props.extend(before.metadata_props)
    written = {value.name: value for value in result.graph.value_info}
    present = {*(i.name for i in result.graph.initializer), *(name for node in result.graph.node for name in (*node.input, *node.output))}
    for value in model.graph.value_info:
        if value.name in written:
            if not written[value.name].metadata_props:
                written[value.name].metadata_props.extend(value.metadata_props)
        elif value.name in present:
            result.graph.value_info.append(value)


def _declare_updates(node) -> None:
    """Gives a ScatterND's or ScatterElements' updates that shape inference left without a shape the one ONNX's rule
    gives them (``indices.shape[:-1] + data.shape[k:]``; indices' shape): ONNX's Reshape before opset 14 infers none
    from a computed shape, which is how PyTorch's TorchScript exporter shapes the value of ``x[idx] = y``, and the
    lowering of the node this rewrite writes, and the data loader, need the rank. Graph inputs keep what they declare."""
    data, indices, updates = node.inputs[:3]
    if updates.shape is not None or not updates.inputs or indices.shape is None or data.shape is None:
        return
    if node.op == "ScatterND":
        if not indices.shape or not isinstance(indices.shape[-1], int):
            return
        updates.shape = list(indices.shape[:-1]) + list(data.shape[indices.shape[-1] :])
    else:
        updates.shape = list(indices.shape)
    updates.dtype = updates.dtype or data.dtype


def _standard_scatter(node: onnx.NodeProto) -> bool:
    """Whether ``node`` is ONNX's ScatterND or ScatterElements, where the patterns end."""
    return node.domain in DEFAULT_DOMAINS and node.op_type in ("ScatterND", "ScatterElements")


def _taking_decided_branches(loaded: Model) -> onnx.ModelProto:
    """``model``, or a copy in which each ``If`` of the main graph whose condition its static shapes decide is the
    nodes (and initializers) of the branch it takes, with an Identity from each of the branch's outputs to the If's,
    whose declared shapes (the other branch's, as PyTorch declares them) are dropped. An If whose branch defines a
    name defined anywhere else too (sibling scopes may reuse one) is left as it is."""
    import onnx
    from onnx import helper

    model = loaded.proto
    graph = model.graph
    if not any(node.op_type == "If" and node.domain in DEFAULT_DOMAINS for node in graph.node):
        return model
    decided = _StaticValues(model, loaded.tensors)
    nodes, inlined, initializers = [], set(), []
    for node in graph.node:
        condition = decided.value(node.input[0]) if node.op_type == "If" and node.domain in DEFAULT_DOMAINS and node.input else None
        if condition is None or np.size(condition) != 1:
            nodes.append(node)
            continue
        branch = next(a.g for a in node.attribute if a.name == ("then_branch" if bool(np.asarray(condition).reshape(())) else "else_branch"))
        if any(decided.definitions[name] > 1 for name in _defined(branch)):
            nodes.append(node)
            continue
        nodes += [*branch.node, *(helper.make_node("Identity", [inner.name], [outer]) for inner, outer in zip(branch.output, node.output) if outer)]
        initializers += branch.initializer
        inlined.update(node.output)
    if not inlined:
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    del copy.graph.node[:]
    copy.graph.node.extend(nodes)
    copy.graph.initializer.extend(initializers)
    kept = [value for value in copy.graph.value_info if value.name not in inlined]
    del copy.graph.value_info[:]
    copy.graph.value_info.extend(kept)
    for value in copy.graph.output:
        if value.name in inlined and value.type.HasField("tensor_type"):
            value.type.tensor_type.ClearField("shape")
    return copy


def _defined(graph: onnx.GraphProto) -> list[str]:
    """The names ``graph`` and its subgraphs define: node outputs, initializers, inputs."""
    return [name for inner in all_graphs(graph) for name in (*(o for n in inner.node for o in n.output if o), *(i.name for i in inner.initializer),
                                                             *(i.name for i in inner.input))]


class _StaticValues:
    """Values of the main graph's tensors that the model's static shapes decide: its initializers that are no graph
    input (an input overrides its initializer), ``Shape`` of a tensor of static shape, ``Size`` of a ``Shape`` (the
    rank), and what standard ops compute from those (:func:`~trt_scatter.model.tensors.fold`). A name a subgraph
    defines too (a sibling scope may) is not decided here."""

    def __init__(self, model, tensors):
        from onnx import numpy_helper

        graph = model.graph
        self.tensors = tensors  # the model's ModelTensors: shapes, the main graph's winning
        self.definitions = collections.Counter(_defined(graph))
        inputs = {value.name for value in graph.input}
        self.initializers = {init.name: init for init in graph.initializer if init.name not in inputs}
        self.producers = {output: node for node in graph.node for output in node.output}
        self.opset = opset_version(model)
        self._array = numpy_helper.to_array

    def value(self, name, depth=0):
        if self.definitions[name] != 1 or depth > 16:
            return None
        if name in self.initializers:
            initializer = self.initializers[name]
            return None if initializer.data_location == initializer.EXTERNAL else self._array(initializer)
        node = self.producers.get(name)
        if node is None:
            return None
        shaped = node.op_type in ("Shape", "Size") and not node.attribute  # Shape's start/end (opset 15): left to folding
        if shaped and node.op_type == "Shape":
            shape = self.tensors.shape(node.input[0])
            return np.array(shape, np.int64) if shape is not None and -1 not in shape else None
        source = self.producers.get(node.input[0]) if shaped else None
        if source is not None and source.op_type == "Shape" and not source.attribute:
            shape = self.tensors.shape(source.input[0])
            return None if shape is None else np.array(len(shape), np.int64)
        results = fold(node, [self.value(i, depth + 1) if i else None for i in node.input], self.opset)
        return None if results is None else results[list(node.output).index(name)]


class RewriteToTrtScatter(BaseLoader):
    """Polygraphy loader: rewrites the ``onnx.ModelProto`` that ``model`` is or returns (or the model at a path).

    The report of the last call is :attr:`report`.
    """

    def __init__(self, model: Any) -> None:
        self._model = model
        self.report = None

    @util.check_called_by("__call__")
    def call_impl(self) -> onnx.ModelProto:
        model, _ = util.invoke_if_callable(self._model)
        model, self.report = rewrite(model)
        return model


# ---- the rewriter -------------------------------------------------------------------------------


class _Left(Exception):
    """A pattern that cannot be rewritten exactly; the message is the reason."""


@dataclasses.dataclass
class _Write:
    """What a matched pattern writes: ``slices`` [(axis, start, stop, step)] (ints or 1-D tensors), or
    one index ``list`` along ``axis`` (an array, or a tensor that ``wrap`` says may hold negative indices),
    or each batch row at its own position along ``axis``: ``rows`` (one position per batch row, an array or
    a tensor, ``wrap`` as for ``list``), with ``spans`` from there on over as many positions as the updates have."""

    slices: list = None
    axis: int = None
    list: object = None
    wrap: bool = False
    rows: object = None
    spans: bool = False  #: with ``rows``: each batch row writes the updates' whole axis 1 from its position on (a prefill)


class _Rewriter:
    def __init__(self, graph):
        self.graph = graph
        self.report = RewriteReport()
        self._constants = {}
        self._names = {tensor for tensor in graph.tensors()} | {node.name for node in graph.nodes}
        self._created = set()  # names of the Transposes and Identities this rewrite added

    def run(self):
        matchers = {"ScatterND": self._scatter_nd, "ScatterElements": self._scatter_elements}  # the patterns, by the op they end in
        for node in list(self.graph.nodes):
            if node.domain in (None, *DEFAULT_DOMAINS) and node.op in matchers:  # onnx-graphsurgeon leaves no domain as None
                _declare_updates(node)
                add = self._accumulating_add(node)
                self._rewrite(node, matchers[node.op] if add is None else lambda node, add=add: self._accumulate(node, add, matchers[node.op]))
        self._fold_transposes()
        self.graph.cleanup().toposort()
        for node in list(self.graph.nodes):
            if is_trt_scatter(node) and node.op == "SliceScatter":
                self._fuse(node)
        self.graph.cleanup().toposort()
        for node in list(self.graph.nodes):
            if is_trt_scatter(node) and node.op == "SliceScatter" and node.inputs:
                self._fuse_rows(node)
        self.graph.cleanup().toposort()
        alive = {node.name or node.outputs[0].name for node in self.graph.nodes if node.name or node.outputs}
        self.report.left = [change for change in self.report.left if change.node in alive]  # not what only a rewritten write read

    def _rewrite(self, node, match):
        """Runs a matcher, which checks everything before it changes the graph (nodes it added before
        raising :class:`_Left` feed nothing, and the cleanup removes them)."""
        label = node.name or node.outputs[0].name
        try:
            if _feeds_a_shape(node.outputs[0]):
                raise _Left("it computes a shape (TensorRT takes shape tensors only from its own layers)")
            pattern, result, detail = match(node)
        except _Left as reason:
            self.report.left.append(Change(label, node.op, None, str(reason)))
            return
        self.report.rewritten.append(Change(label, pattern, result, detail))

    def _replace(self, node, new_node, output=None):
        """``new_node`` computes ``node``'s output (through a Transpose of ``new_node``'s own output when
        ``output`` gives one: ``(perm, name hint)``)."""
        import onnx_graphsurgeon as gs

        result = node.outputs[0]
        node.outputs.clear()
        node.inputs.clear()  # the node is gone: its inputs lose a consumer now, not at the cleanup
        self.graph.nodes.append(new_node)
        if output is None:
            new_node.outputs = [result]
            return
        perm, hint = output
        written = gs.Variable(self._name(f"{hint}_written"), dtype=result.dtype)
        new_node.outputs = [written]
        transpose = gs.Node("Transpose", name=self._name(f"{hint}_transpose"), inputs=[written], outputs=[result], attrs={"perm": list(perm)})
        self._created.add(transpose.name)
        self.graph.nodes.append(transpose)

    def _through_expand(self, node):
        """Transpose(Expand(A, shape), Q) -> Expand(Transpose(A, Q), shape permuted by Q), for an added Transpose
        and A and shape of the Expand's rank (the dynamo exporter broadcasts index_put's values under its Transposes;
        a shorter shape, which Expand broadcasts from the left, is left as it is)."""
        expand = _producer(node.inputs[0]) if node.inputs else None
        if expand is None or expand.op != "Expand" or len(expand.outputs[0].outputs) != 1 or expand.outputs[0] in self.graph.outputs:
            return False
        source, shape = expand.inputs
        perm = [int(p) for p in node.attrs["perm"]]
        if _rank(source) != len(perm) or self._length(shape) != len(perm):
            return False
        constant = self._constant(shape)
        if constant is not None:
            permuted = self._int64(constant[perm], f"{node.name}_shape")
        else:
            permuted = self._node("Gather", [shape, self._int64(perm, f"{node.name}_perm")], f"{node.name}_shape", np.int64, axis=0)
        transposed = self._node("Transpose", [source], f"{node.name}_source", _np_dtype(source), perm=perm)
        self._created.add(transposed.inputs[0].name)
        node.op, node.attrs, node.inputs = "Expand", {}, [transposed, permuted]
        self._created.discard(node.name)
        return True

    def _sink(self, node):
        """Moves an added Transpose from the data of a ``trt_scatter`` node to its output (see :meth:`_fold_transposes`)."""
        import onnx_graphsurgeon as gs

        data = node.inputs[0]
        transpose = _producer(data)
        if transpose is None or transpose.op != "Transpose" or transpose.name not in self._created or len(data.outputs) != 1 or data in self.graph.outputs:
            return False
        perm = [int(p) for p in transpose.attrs["perm"]]
        op = op_of(node)
        named = dict(zip(op.inputs, node.inputs))
        if op.axes_input is None or _rank(named[op.updates_input]) != len(perm):  # updates' axes must be data's, to transpose them back
            return False
        if not _is_empty(named.get(op.axes_input)):
            axes = _ints(self._constant(named[op.axes_input]))
        else:  # left out: its default, 0..n-1
            count = self._length(named[op.default_axes_from]) if op.default_axes_from else None
            axes = None if count is None else list(range(count))
        if axes is None:
            return False
        updates_position, axes_position = op.inputs.index(op.updates_input), op.inputs.index(op.axes_input)
        rank = len(perm)
        label = node.name
        new_axes = self._int64([perm[a + rank if a < 0 else a] for a in axes], f"{label}_axes_untransposed")
        updates = self._node("Transpose", [node.inputs[updates_position]], f"{label}_updates_untransposed", _np_dtype(node.inputs[updates_position]), perm=[int(p) for p in np.argsort(perm)])
        self._created.add(updates.inputs[0].name)
        inputs = list(node.inputs) + ([] if len(node.inputs) > axes_position else [None] * (axes_position + 1 - len(node.inputs)))
        inputs[0], inputs[updates_position], inputs[axes_position] = transpose.inputs[0], updates, new_axes
        result = node.outputs[0]
        written = gs.Variable(self._name(f"{label}_written"), dtype=result.dtype)
        node.outputs = [written]
        node.inputs = inputs
        output = gs.Node("Transpose", name=self._name(f"{label}_transpose"), inputs=[written], outputs=[result], attrs={"perm": perm})
        self._created.add(output.name)
        self.graph.nodes.append(output)
        return True

    # ---- ScatterND ------------------------------------------------------------------------------

    def _scatter_nd(self, node):
        """ScatterND, and the Transposes the dynamo exporter puts around a write on an axis other than 0.

        ``ScatterND(Transpose(X, P), I, U')`` writes X's axis P[0]: it is
        ``Transpose(write(X, Transpose(U', P^-1)), P)``. The Transposes on the updates and on the output
        then cancel against the exporter's own (see :meth:`_fold_transposes`). A constant data (the exporter
        folds a Transpose of a buffer) is transposed back here when the updates come through a Transpose.
        """
        import onnx_graphsurgeon as gs

        reduction = _attr(node, "reduction", "none")
        if reduction in _MASKED_COMBINES:  # x[mask] += v as PyTorch's exporters write index_put((mask,), v, accumulate=True)
            try:
                masked = self._masked_write(node, combine=reduction)
            except _Left:
                masked = None  # a ScatterNDReduce then, NonZero and all
            if masked is not None:
                return masked
        if reduction != "none":
            return self._reduction(node)
        masked = self._masked_write(node)
        if masked is not None:
            return masked
        transposed_data, indices, transposed_updates = node.inputs
        data_producer, updates_producer = _producer(transposed_data), _producer(transposed_updates)
        perm, data, updates = None, transposed_data, transposed_updates
        if data_producer is not None and data_producer.op == "Transpose" and data_producer.attrs.get("perm") is not None:
            perm, data = [int(p) for p in data_producer.attrs["perm"]], data_producer.inputs[0]
        elif isinstance(transposed_data, gs.Constant) and updates_producer is not None and updates_producer.op == "Transpose" and updates_producer.attrs.get("perm") is not None:
            perm = [int(p) for p in updates_producer.attrs["perm"]]
            data = self._constant_tensor(np.transpose(np.asarray(transposed_data.values), np.argsort(perm)), f"{transposed_data.name}_untransposed")
        if perm == list(range(len(perm or []))):
            perm = None
        axis_of = (lambda j: perm[j]) if perm else (lambda j: j)
        write = self._nd_indices(indices, data, transposed_data, _dims(transposed_data), axis_of)
        if perm and write.list is not None and _rank(write.list) not in (1, None):
            raise _Left("an index list of rank > 1 under a Transpose")
        label = node.name or node.outputs[0].name
        if write.rows is not None and not write.spans:  # updates (B, rest...): the one entry each batch row writes, its axis left out
            if not perm or perm[2:] == sorted(perm[2:]):  # the other axes in data's order: the entry axis goes back in place
                updates = self._unsqueeze(transposed_updates, [write.axis], f"{label}_entries", _np_dtype(transposed_updates))
            else:
                updates = self._unsqueeze(transposed_updates, [1], f"{label}_entries", _np_dtype(transposed_updates))
                updates = self._node("Transpose", [updates], f"{label}_updates", _np_dtype(transposed_updates), perm=[int(p) for p in np.argsort(perm)])
        elif perm:
            if updates_producer is not None and updates_producer.op == "Transpose" and [int(p) for p in updates_producer.attrs.get("perm", [])] == perm:
                updates = updates_producer.inputs[0]
            else:
                updates = self._node("Transpose", [transposed_updates], f"{label}_updates", _np_dtype(transposed_updates), perm=[int(p) for p in np.argsort(perm)])
                self._created.add(updates.inputs[0].name)
        new_node, detail = self._emit(node, data, updates, write)
        self._replace(node, new_node, (perm, label) if perm else None)
        return ("Transpose/ScatterND" if perm else "ScatterND"), new_node.op, detail

    def _fold_transposes(self):
        """Cancels the Transposes this rewrite added against their neighbours.

        Transpose(Transpose(A, P), Q) -> Transpose(A, P o Q), and none when that is the identity, where
        either Transpose is one this rewrite added (the user's own pairs are left as they are); and a
        write whose data comes through an added Transpose runs before it instead:
        write(Transpose(A, P), axis a, U) = Transpose(write(A, axis P[a], Transpose(U, P^-1)), P), so that
        two writes in a row meet without Transposes between them.
        """
        changed = True
        while changed:
            changed = any([self._sink(node) for node in list(self.graph.nodes) if is_trt_scatter(node) and node.inputs])
            changed = any([self._through_expand(node) for node in list(self.graph.nodes) if node.op == "Transpose" and node.name in self._created and node.inputs]) or changed
            for node in list(self.graph.nodes):
                first = _producer(node.inputs[0]) if node.op == "Transpose" and node.inputs else None
                if first is None or first.op != "Transpose" or not ({node.name, first.name} & self._created):
                    continue
                inner, outer = first.attrs.get("perm"), node.attrs.get("perm")
                if inner is None or outer is None:
                    continue
                composed = [int(inner[i]) for i in outer]
                node.inputs = [first.inputs[0]]
                if not first.outputs[0].outputs and first.outputs[0] not in self.graph.outputs:
                    first.inputs.clear()  # dead now: detached, so that consumer counts stay true
                    first.outputs.clear()
                self._created.add(node.name)
                changed = True
                if composed == list(range(len(composed))):
                    node.op, node.attrs = "Identity", {}
                else:
                    node.attrs["perm"] = composed
        for node in list(self.graph.nodes):  # the Identities left: consumers read the source directly
            if node.op != "Identity" or node.name not in self._created:
                continue
            source, result = node.inputs[0], node.outputs[0]
            if result in self.graph.outputs:  # the source's producer writes the graph output itself
                producer = _producer(source)
                if producer is None or len(source.outputs) != 1 or source in self.graph.outputs or source in self.graph.inputs:
                    continue
                node.outputs.clear()
                producer.outputs[producer.outputs.index(source)] = result
                continue
            for consumer in list(result.outputs):
                for position, tensor in enumerate(consumer.inputs):
                    if tensor is result:
                        consumer.inputs[position] = source
            node.outputs.clear()

    def _nd_indices(self, indices, data, transposed_data, dims, axis_of):
        constant = self._constant(indices)
        if constant is not None and constant.ndim and math.prod(constant.shape[:-1]) == 0:  # no row: before the batch-row forms
            raise _Left(NO_INDEX)
        rows = self._batch_rows(indices, dims, axis_of, (data, transposed_data)) or self._batch_spans(indices, dims, axis_of, (data, transposed_data))
        if rows is not None:
            return rows
        if constant is not None:
            return _grid(constant, dims, axis_of)
        sliced = self._slice_grid(indices, data, transposed_data, dims, axis_of)
        if sliced is not None:
            return sliced
        shape = _dims(indices)
        if not shape or shape[-1] != 1:
            raise _Left("indices known only at run time that are not a slice range or an index list")
        unsqueeze = _producer(indices)
        if unsqueeze is None or unsqueeze.op != "Unsqueeze" or self._unsqueeze_axes(unsqueeze) not in ([-1], [len(shape) - 1]):
            raise _Left("indices known only at run time that are not a slice range or an index list")
        inner = unsqueeze.inputs[0]
        if _dtype_kind(inner) != "i":
            raise _Left("indices of a type that is not a signed integer")
        return _Write(axis=axis_of(0), list=inner, wrap=True)

    def _slice_grid(self, indices, data, transposed_data, dims, axis_of):
        """A slice write, or None: the coordinate grid of the axes 0..k-1 that PyTorch's exporters write for
        ``x[:, a:b, c:d] = v`` where the shapes or the bounds are known only at run time.

        ``indices`` is ``Concat(Unsqueeze(C_0, -1), ..., Unsqueeze(C_k-1, -1), axis=-1)`` (one ``Unsqueeze`` for k = 1),
        each column ``C_i`` an optional ``Expand`` (the TorchScript exporter broadcasts the columns to one shape) of
        ``Reshape(R_i, [-1, 1, ..., 1])`` (rank k - i; ``R_i`` itself for the last), ``R_i`` a whole axis
        ``[0, ..., n_i - 1]`` (a constant, or ``Range(0, n_i, 1)`` of data's dimension), a ``Slice`` of one, or a constant
        progression; the last may also be an index list (run-time, or constant without a repeat) where every other axis is whole. Column i
        then varies along axis i of the grid only, so the grid is the slice's own positions: the Expands broadcast them
        to the grid's shape, and any larger shape would repeat positions, which ScatterND does not allow.
        """
        rank, concat = _rank(indices), _producer(indices)  # rank: None where shape inference lost it in the Expands' shapes
        if _rank(transposed_data) is None:
            return None
        last = concat is not None and concat.op == "Concat" and (_attr(concat, "axis", 0) == -1 or rank is not None and _attr(concat, "axis", 0) == rank - 1)
        columns = list(concat.inputs) if last else [indices]
        k = len(columns)
        if rank not in (None, k + 1) or k > _rank(transposed_data):
            return None
        slices, sources, targets, listed = [], [], [], None
        for i, column in enumerate(columns):
            unsqueeze = _producer(column)
            if unsqueeze is None or unsqueeze.op != "Unsqueeze" or self._unsqueeze_axes(unsqueeze) not in ([-1], [k]):
                return None
            positions = unsqueeze.inputs[0]
            expand = _producer(positions)
            if expand is not None and expand.op == "Expand":
                positions = expand.inputs[0]
                targets.append(expand.inputs[1])
            sources.append(positions)
            size = dims[i] if dims else None
            whole = [(data, axis_of(i)), (transposed_data, i)]
            constant = self._constant(positions)
            if constant is not None:  # a whole axis, or a strided slice, folded by the exporter from static shapes
                if constant.dtype.kind not in "iu" or constant.shape[1:] != (1,) * (k - 1 - i) or constant.ndim != k - i:
                    return None
                values = _normalized(constant.reshape(-1), size)
                progression = _progression(values)
                if progression is None and i == k - 1 and not slices and k > 1:  # x[:, [3, 0, 5]] = v (_normalized refused a repeat)
                    listed = positions
                    continue
                if progression is None:
                    return None
                if not (isinstance(size, int) and np.array_equal(values, np.arange(size))):
                    slices.append((axis_of(i), *progression))
                continue
            reshape = _producer(positions)
            reshaped = reshape is not None and reshape.op == "Reshape"
            if reshaped:
                target = _ints(self._constant(reshape.inputs[1]))
                if target is None or len(target) != k - i or target[1:] != [1] * (k - 1 - i):
                    return None
                positions = reshape.inputs[0]
            if _rank(positions) != 1 or not reshaped and i != k - 1:  # the last column alone is 1-D as it is
                return None
            if self._is_arange(positions, size, whole):
                continue
            slice_node = _producer(positions)
            if slice_node is not None and slice_node.op == "Slice" and self._is_arange(slice_node.inputs[0], size, whole):
                slices.append((axis_of(i), *self._slice_bounds(slice_node)))
            elif i == k - 1 and not slices and _dtype_kind(positions) == "i":  # x[:, :, index] = v: an index list
                listed = positions
            else:
                return None
        if not all(self._is_broadcast_shape(target, sources) for target in targets) or rank is None and k > 1 and len(targets) < k:
            return None  # the grid's rank is k only where every column is broadcast to it (or shape inference says so)
        return _Write(axis=axis_of(k - 1), list=listed, wrap=True) if listed is not None else _Write(slices=slices)

    def _past_unknown_dim_where(self, shape):
        """``s`` where ``shape`` is the ``Where(Equal(s, -c), c, s)`` the TorchScript exporter wraps a broadcast shape in
        (``c = ConstantOfShape(...)`` of a value ``>= 0``: a dimension s equals -c only where both are 0, so it changes no
        dimension); ``shape`` itself where it is no Where; ``None`` for another Where."""
        where = _producer(shape)
        if where is None or where.op != "Where":
            return shape
        equal, fill = _producer(where.inputs[0]), _producer(where.inputs[1])
        negated = _producer(equal.inputs[1]) if equal is not None and equal.op == "Equal" and equal.inputs[0] is where.inputs[2] else None
        if negated is None or negated.op != "Mul" or negated.inputs[0] is not where.inputs[1] or self._number(negated.inputs[1]) != -1:
            return None
        filled = _fill_value(fill) if fill is not None and fill.op == "ConstantOfShape" else None
        return where.inputs[2] if filled is not None and filled.size == 1 and filled.item() >= 0 else None

    def _is_broadcast_shape(self, target, columns):
        """True if ``target`` (an Expand's shape) is the shape ``columns`` broadcast to, so that the Expand repeats no
        position: a constant equal to their static broadcast shape, or ``Shape`` of an ``Add`` of them (the exporter's
        way, its constants folded into one of their broadcast shape), also through the exporter's
        :meth:`_past_unknown_dim_where`."""
        constant = self._constant(target)
        if constant is not None:
            shapes = [_dims(column) for column in columns]
            if any(shape is None or not all(isinstance(d, int) for d in shape) for shape in shapes):
                return False
            return constant.reshape(-1).tolist() == list(np.broadcast_shapes(*shapes))
        shaped = _whole_shape_of(self._past_unknown_dim_where(target))
        if shaped is None:
            return False
        leaves, pending = [], [shaped]
        while pending:
            tensor = pending.pop()
            add = _producer(tensor)
            if add is not None and add.op == "Add" and all(tensor is not column for column in columns):
                pending += add.inputs
            else:
                leaves.append(tensor)
        def split(tensors):  # the tensors computed at run time (by identity), and the broadcast shape of the constant ones
            values = [self._constant(tensor) for tensor in tensors]
            return sorted(id(t) for t, v in zip(tensors, values) if v is None), np.broadcast_shapes(*(v.shape for v in values if v is not None))

        return split(leaves) == split(columns)

    def _batch_rows(self, indices, dims, axis_of, sources):
        """A per-row write, or None: index rows ``(b, pos[b])`` for b = 0..B-1 (B data's first dimension, axis 0 of the
        data itself), as ``Concat(Unsqueeze(arange(B), -1), Unsqueeze(pos, -1), axis=-1)`` or a constant of that form."""
        shape = _dims(indices)  # None where shape inference could not follow the exporter's broadcasts
        if (shape is not None and (len(shape) != 2 or shape[-1] != 2)) or not dims or len(dims) < 2 or axis_of(0) != 0 or axis_of(1) == 0:
            return None
        batch = dims[0]
        constant = self._constant(indices)
        if constant is not None:
            if constant.dtype.kind not in "iu" or not isinstance(batch, int) or constant.shape != (batch, 2):
                return None
            if not np.array_equal(constant[:, 0], np.arange(batch)):
                return None
            positions = constant[:, 1].astype(np.int64)
            size = dims[1] if len(dims) > 1 else None
            if isinstance(size, int):
                positions = np.where(positions < 0, positions + size, positions)
            return _Write(axis=axis_of(1), rows=positions) if positions.min(initial=0) >= 0 else None
        concat = _producer(indices)
        if concat is None or concat.op != "Concat" or _attr(concat, "axis", 0) not in (-1, 1) or len(concat.inputs) != 2:
            return None
        columns = []
        for column in concat.inputs:  # each (B, 1): a constant (the exporter folds arange(B)), or Unsqueeze(1-D, -1)
            constant = self._constant(column)
            if constant is not None and constant.ndim == 2 and constant.shape[1] == 1:
                columns.append(constant.reshape(-1))
                continue
            unsqueeze = _producer(column)
            if unsqueeze is None or unsqueeze.op != "Unsqueeze" or self._unsqueeze_axes(unsqueeze) not in ([-1], [1]):
                return None
            columns.append(unsqueeze.inputs[0])
        batch_index, positions = self._before_index_broadcast(*columns, batch)
        if any(not isinstance(column, np.ndarray) and not self._is_vector(column) for column in (batch_index, positions)):
            return None
        if isinstance(positions, np.ndarray) or not self._is_arange(batch_index, batch, [(source, 0) for source in sources]) or _dtype_kind(positions) != "i":
            return None  # constant positions with a run-time batch index: not a form an exporter writes
        return _Write(axis=axis_of(1), rows=positions, wrap=True)

    def _batch_spans(self, indices, dims, axis_of, sources):
        """A per-row write of consecutive positions, or None: index rows ``(b, pos[b] + t)`` for b < B (data's first
        dimension) and t < T, as the dynamo exporter writes ``cache[arange(B)[:, None], pos[:, None] + arange(T)] = v`` (a
        prefill of T tokens, each batch row from its own position): ``Concat`` along the last axis of the batch grid
        (a constant ``b`` at ``[b, t]``, or ``arange(B)`` unsqueezed on axis 1) and ``Unsqueeze(pos, 1) + arange(T)``,
        each unsqueezed on the last axis, behind an ``Expand`` to their broadcast shape. Exact where ``pos`` has the
        batch's length (a static size or a shared symbol): the broadcast is then ``(B, T)``, and ScatterND's own rule
        gives the updates ``(B, T, ...)``."""
        shape = _dims(indices)
        if shape is not None and (len(shape) != 3 or shape[-1] != 2) or not dims or len(dims) < 2 or axis_of(0) != 0 or axis_of(1) == 0:
            return None
        concat, batch = _producer(indices), dims[0]
        if concat is None or concat.op != "Concat" or _attr(concat, "axis", 0) not in (-1, 2) or len(concat.inputs) != 2:
            return None
        grid, offsets = concat.inputs
        constant = self._constant(grid)
        if constant is not None:
            if constant.dtype.kind not in "iu" or constant.ndim != 3 or not isinstance(batch, int) or constant.shape[0] != batch or \
                    not np.array_equal(constant[..., 0], np.broadcast_to(np.arange(batch)[:, None], constant.shape[:2])):
                return None
        else:
            column = self._last_axis_source(grid)
            column = _before_expand(column)
            if column is None or not self._is_arange(self._unsqueezed_on_1(column), batch, [(source, 0) for source in sources]):
                return None
        add = self._last_axis_source(offsets)
        add = self._before_wrap(_before_expand(add), dims[1])
        node = _producer(add) if add is not None else None
        if node is None or node.op != "Add":
            return None
        for positions, steps in (node.inputs, node.inputs[::-1]):
            positions = self._unsqueezed_on_1(_through_int64_casts(positions))  # int32 positions: Cast(Unsqueeze(p, 1), int64)
            counted = self._constant(steps)
            steps_ok = (counted is not None and counted.ndim == 1 and np.array_equal(counted, np.arange(counted.size))) or self._is_arange(steps, (_dims(steps) or (None,))[0])
            if positions is not None and steps_ok and _rank(positions) == 1 and _dtype_kind(positions) == "i" and _same_dim((_dims(positions) or (None,))[0], batch):
                return _Write(axis=axis_of(1), rows=positions, wrap=True, spans=True)
        return None

    def _before_wrap(self, tensor, size):
        """``x`` where ``tensor`` is ``Mod(x, size)`` (``fmod=0``: PyTorch's ``%``, in [0, size)) by the written axis's static
        ``size``, as a ring buffer wraps a prefill's positions; else ``tensor``. Circular mode wraps each index so itself:
        ``(w mod M + t) mod M`` is ``(w + t) mod M`` for integers."""
        node = _producer(tensor) if tensor is not None else None
        if node is None or node.op != "Mod" or _attr(node, "fmod", 0) != 0 or not isinstance(size, int):
            return tensor
        tokens = (_dims(node.inputs[0]) or (None,))[-1]
        if isinstance(tokens, int) and tokens > size:  # more tokens than the cache holds: no CacheScatter (the spec forbids it)
            return tensor
        divisor = self._constant(node.inputs[1])
        return node.inputs[0] if divisor is not None and divisor.size == 1 and int(divisor.reshape(())) == size else tensor

    def _last_axis_source(self, column):
        """``X`` where ``column`` is ``Unsqueeze(X, -1)`` of a 2-D ``X``, else None."""
        node = _producer(column)
        if node is None or node.op != "Unsqueeze" or self._unsqueeze_axes(node) not in ([-1], [2]):
            return None
        return node.inputs[0]

    def _unsqueezed_on_1(self, tensor):
        """``v`` where ``tensor`` is ``Unsqueeze(v, 1)`` (or ``-1``) or ``Reshape(v, [-1, 1])`` of a 1-D ``v``, else None."""
        node = _producer(tensor)
        if node is not None and node.op == "Unsqueeze" and self._unsqueeze_axes(node) in ([1], [-1]):
            return node.inputs[0] if _rank(node.inputs[0]) == 1 else None
        if node is not None and node.op == "Reshape" and _ints(self._constant(node.inputs[1])) == [-1, 1]:
            return node.inputs[0] if _rank(node.inputs[0]) == 1 else None
        return None

    def _before_index_broadcast(self, batch_index, positions, batch):
        """The two index columns of a per-row write before the ``Expand`` the TorchScript exporter broadcasts them with,
        where it repeats nothing, so that the batch index can be recognized as an ``arange`` of the batch: a constant
        ``[batch]`` (the positions stay as expanded: the Expand's values are the write's, one position broadcast to
        every row too), or (a dynamic batch) the shape of their own broadcast, where the positions' length is the
        batch's by their symbol. Each column stays as it is where its Expand may repeat a value."""
        def unexpanded(column, others):
            node = None if isinstance(column, np.ndarray) else _producer(column)
            if node is None or node.op != "Expand" or _rank(node.inputs[0]) != 1:
                return column, None
            if _ints(self._constant(node.inputs[1])) == [batch]:
                return node.inputs[0], "constant"
            return node.inputs[0], "broadcast" if self._is_broadcast_shape(node.inputs[1], [node.inputs[0], others]) else None

        batch_source, how = unexpanded(batch_index, _before_expand(positions))
        source, position_how = unexpanded(positions, batch_source)
        own_length = not isinstance(source, np.ndarray) and _same_dim((_dims(source) or (None,))[0], batch)
        if how == "broadcast" and not (position_how == "broadcast" and own_length):
            return batch_index, positions  # broadcast at run time to a length that may not be the batch's
        return (batch_source if how else batch_index), (source if position_how == "broadcast" and own_length else positions)

    def _is_vector(self, tensor):
        """Whether ``tensor`` is 1-D: by its static shape, or an ``Expand`` of a 1-D tensor to a constant one-element shape."""
        if _rank(tensor) == 1:
            return True
        node = _producer(tensor)
        shape = self._constant(node.inputs[1]) if node is not None and node.op == "Expand" else None
        return shape is not None and shape.size == 1 and _rank(node.inputs[0]) in (0, 1)

    def _is_arange(self, tensor, size, dimensions=()):
        """True if ``tensor`` (or an array) is ``[0, 1, ..., size-1]``: a constant, or ``Range(0, n, 1)`` whose length is
        ``size`` (equal static sizes or one symbolic dimension) or whose ``n`` is the size of one of ``dimensions``,
        (tensor, axis) pairs."""
        constant = tensor if isinstance(tensor, np.ndarray) else self._constant(tensor)
        if constant is not None:
            return isinstance(size, int) and constant.ndim == 1 and np.array_equal(constant, np.arange(size))
        node = _producer(tensor)
        if node is None or node.op != "Range" or self._number(node.inputs[0]) != 0 or self._number(node.inputs[2]) != 1:
            return False
        limit = _through_int64_casts(node.inputs[1])
        if isinstance(size, int) and self._number(limit) == size:
            return True
        return _same_dim((_dims(tensor) or (None,))[0], size) or any(self._is_dimension(limit, source, axis) for source, axis in dimensions)

    def _number(self, tensor):
        """A one-element constant as an int, through the ``CastLike`` the dynamo exporter puts on Python numbers; else None."""
        node = _producer(tensor)
        if node is not None and node.op == "CastLike":
            tensor = node.inputs[0]
        return _scalar(self._constant(tensor))

    def _slice_bounds(self, node):
        """``(start, stop, step)`` of a Slice of a 1-D tensor: 1-element tensors or ints."""
        inputs = list(node.inputs) + [None] * (5 - len(node.inputs))
        starts, ends, axes, steps = inputs[1:5]
        if axes is not None and not _is_empty(axes):
            values = self._constant(axes)
            if values is None or values.reshape(-1).tolist() not in ([0], [-1]):
                raise _Left("a slice range whose Slice axes are not constant")
        step = 1
        if steps is not None and not _is_empty(steps):
            values = self._constant(steps)
            if values is None or values.size != 1 or int(values.reshape(-1)[0]) <= 0:
                raise _Left("a slice range with a step that is not a positive constant")
            step = int(values.reshape(-1)[0])
        bounds = []
        for tensor in (starts, ends):
            value = self._constant(tensor)
            bounds.append(int(value.reshape(-1)[0]) if value is not None and value.size == 1 else tensor)
        return bounds[0], bounds[1], step

    def _is_dimension(self, tensor, source, axis):
        """True if ``tensor`` is the size of ``source``'s ``axis``: ``Gather(Shape(source, start=s), i)`` with
        s + i == axis, or ``Squeeze(Shape(source, start=axis, end=axis+1))`` (or a Reshape of it)."""
        node = _producer(tensor)
        if node is not None and node.op == "Gather" and _attr(node, "axis", 0) == 0:
            offset, one_element = _scalar(self._constant(node.inputs[1])), False
        elif node is not None and node.op in ("Squeeze", "Reshape"):
            offset, one_element = 0, True
        else:
            return False
        shape = _producer(node.inputs[0])
        rank = _rank(source)
        if offset is None or shape is None or shape.op != "Shape" or shape.inputs[0] is not source or rank is None:
            return False
        start, end = (min(max(v + rank if v < 0 else v, 0), rank) for v in (_attr(shape, "start", 0), _attr(shape, "end", rank)))
        length = end - start  # of the Shape's output; Gather counts a negative index from its end
        if one_element and length != 1:
            return False
        offset = offset + length if offset < 0 else offset
        return 0 <= offset < length and start + offset == axis

    # ---- ScatterElements ------------------------------------------------------------------------

    def _scatter_elements(self, node):
        if _attr(node, "reduction", "none") != "none":
            return self._reduction(node)
        readers = node.outputs[0].outputs
        mean = self._before_identity_fill(node, "add") is not None  # zeros at the indices, then a plain write there
        if mean or (len(readers) == 1 and readers[0].op == node.op and readers[0].inputs[0] is node.outputs[0]
                    and _attr(readers[0], "reduction", "none") == "none"
                    and self._before_identity_fill(readers[0], "add") is not None):  # that fill, whose write would then look plain
            raise _Left(_DYNAMO_MEAN)
        data, indices, updates = node.inputs
        dims, update_dims = _dims(data), _dims(updates)
        if dims is None or update_dims is None or len(dims) != len(update_dims):
            raise _Left("data or updates of unknown rank")
        if any(isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(self._index_dims(indices, len(dims)), update_dims)):
            raise _Left("updates of another shape than the indices (which ONNX refuses; a slice write would run)")
        axis = _attr(node, "axis", 0)
        axis = axis + len(dims) if axis < 0 else axis
        others = [d for d in range(len(dims)) if d != axis]
        shaped_by = self._data_shape_index_list(indices, data, axis)
        if shaped_by is None and not all(_same_dim(dims[d], update_dims[d]) for d in others):
            if any(isinstance(dims[d], int) and isinstance(update_dims[d], int) for d in others if dims[d] != update_dims[d]):
                raise _Left("updates that do not span data's other axes (a write of single elements)")
            raise _Left("updates not shown to span data's other axes (dims that static shapes and shared symbols do not prove equal)")
        values = self._constant(indices)
        if values is None:
            expand = _producer(indices)
            if expand is not None and expand.op == "Expand":
                values = self._constant(expand.inputs[0])
                if values is None:
                    return self._expanded_index_list(node, expand.inputs[0], data, updates, dims, update_dims, axis, shaped_by)
            if values is None:
                raise _Left("indices known only at run time")
        if values.size == 0:
            raise _Left(NO_INDEX)
        values = values.reshape((1,) * (len(dims) - values.ndim) + values.shape)
        if values.ndim != len(dims) or not all(np.all(values == values.take([0], axis=d)) for d in others):
            raise _Left("indices that vary along other axes than the written one")
        if values.shape[axis] != update_dims[axis]:
            raise _Left("indices broadcast along the written axis, or updates of unknown size there")
        listed = np.moveaxis(values, axis, 0).reshape(values.shape[axis], -1)[:, 0]
        write = _grid(listed.reshape(-1, 1), (dims[axis],), lambda j: axis)
        new_node, detail = self._emit(node, data, updates, write)
        self._replace(node, new_node)
        return "ScatterElements", new_node.op, detail

    def _index_dims(self, indices, rank):
        """The dims of ``indices``, ints where known: as declared or inferred, or else those of an Expand of a known shape
        (a 1 there keeps its input's size), the exporters' way of writing an index list over other axes."""
        dims = list(_dims(indices) or (None,) * rank)
        expand = _producer(indices)
        if expand is None or expand.op != "Expand" or len(dims) != rank:
            return dims
        target, given = self._constant(expand.inputs[1]), _dims(expand.inputs[0])
        if target is None or given is None or target.size > rank or len(given) > rank:
            return dims
        target = [1] * (rank - target.size) + [int(t) for t in target.reshape(-1)]
        given = [1] * (rank - len(given)) + list(given)
        return [d if isinstance(d, int) else (g if t == 1 else t) for d, t, g in zip(dims, target, given)]

    def _data_shape_index_list(self, indices, data, axis):
        """The index list ``I`` where ``indices`` is ``Expand(..., shape)`` with ``shape`` data's shape with ``len(I)`` on
        ``axis``: ``ScatterElements(Shape(data), [axis], Shape(I))``, possibly behind the exporter's ``Where(Equal(s, -1),
        1, s)`` (:meth:`_past_unknown_dim_where`), which changes no shape (the TorchScript exporter's ``index_copy``). Then
        the indices, and so the updates (ONNX gives them one shape), span data's other axes, whatever shapes inference
        could not tell. Else ``None``."""
        expand = _producer(indices)
        if expand is None or expand.op != "Expand":
            return None
        shape = self._past_unknown_dim_where(expand.inputs[1])
        scatter = _producer(shape)
        if scatter is None or scatter.op != "ScatterElements" or _attr(scatter, "axis", 0) != 0 or _attr(scatter, "reduction", "none") != "none":
            return None
        of_data, position, of_list = (_producer(tensor) for tensor in scatter.inputs)
        rank = len(_dims(data) or ())
        if of_data is None or of_list is None or of_data.op != "Shape" or of_list.op != "Shape" or of_data.attrs or of_list.attrs:
            return None
        if of_data.inputs[0] is not data or _ints(self._constant(scatter.inputs[1])) not in ([axis], [axis - rank]):
            return None
        return of_list.inputs[0] if _rank(of_list.inputs[0]) == 1 else None

    def _expanded_index_list(self, node, unsqueezed, data, updates, dims, update_dims, axis, shaped_by=None):
        """ScatterElements whose indices are ``Expand(Unsqueeze(I, every axis but axis), shape)`` of a 1-D run-time ``I``
        (the TorchScript exporter's ``index_copy``): index ``I[j]`` for every position ``j`` on the axis, the index list
        ``I`` there, where the updates have ``len(I)`` entries on the axis (else the Expand would repeat an index): the
        shapes say so, or ``shaped_by`` is ``I`` (:meth:`_data_shape_index_list`)."""
        unsqueeze = _producer(unsqueezed)
        rank = len(dims)
        if unsqueeze is None or unsqueeze.op != "Unsqueeze" or _rank(unsqueeze.inputs[0]) != 1:
            raise _Left("indices known only at run time")
        axes = self._unsqueeze_axes(unsqueeze)
        if axes is None or sorted(a % rank for a in axes) != [d for d in range(rank) if d != axis]:
            raise _Left("indices known only at run time that are not an index list expanded along the axis")
        index_list = unsqueeze.inputs[0]
        fits = shaped_by is index_list or _same_dim((_dims(index_list) or (None,))[0], update_dims[axis])
        if not fits or _dtype_kind(index_list) != "i":
            raise _Left("an index list whose length is not the updates' on the axis (or of a type that is not a signed integer)")
        new_node, detail = self._emit(node, data, updates, _Write(axis=axis, list=index_list, wrap=True))
        self._replace(node, new_node)
        return "ScatterElements of an expanded index list", new_node.op, detail

    # ---- masked writes ---------------------------------------------------------------------------

    def _masked_write(self, node, combine=None):
        """``ScatterND(X, Transpose(NonZero(M), [1, 0]), U)`` as a ``Where`` on M (``None`` where it is not that form):
        ``U`` an Expand of values that do not vary along the written elements (``x[mask] = v``), or the first rows of a
        source ``S`` in order (``masked_scatter``), gathered at ``CumSum(M) - 1``. M must span data's leading axes.
        ``combine`` (``"add"``, ``"mul"``): a ScatterND with that reduction, ``Where(M, X + values, X)`` (or ``*``: NonZero
        names each element once, so each combines with its value once)."""
        data, indices, updates = node.inputs
        transpose = _producer(indices)
        if transpose is None or transpose.op != "Transpose" or [int(p) for p in transpose.attrs.get("perm", [])] != [1, 0]:
            return None
        nonzero = _producer(transpose.inputs[0])
        if nonzero is None or nonzero.op != "NonZero":
            return None
        mask = nonzero.inputs[0]
        dims, mask_dims = _dims(data), _dims(mask)
        if dims is None or mask_dims is None or not self._spans(mask, data, len(mask_dims)):
            raise _Left("a masked write whose mask does not span data's leading axes (or of unknown shape)")
        label = node.name or node.outputs[0].name
        rank, tail = len(dims), len(dims) - len(mask_dims)
        values, how = self._broadcast_values(updates, mask, tail, rank), "values broadcast"
        if values is None:
            values, how = self._row_in_every_masked_row(updates, mask, dims), "a row in every masked row"
        if values is None:
            values, how = self._computed_from_masked(updates, mask, data), "values computed from the masked elements"
        if values is None:
            values, how = self._gathered_values(updates, mask, label), "values in order"
        if values is None:
            raise _Left("a masked write whose values are neither broadcast, nor computed element by element from the masked "
                        "elements, nor a source's first rows")
        condition = mask if _np_dtype(mask) == np.bool_ else self._node("Cast", [mask], f"{label}_mask", np.bool_, to=dtypes.to_onnx(np.bool_))
        if tail:
            condition = self._unsqueeze(condition, list(range(len(mask_dims), rank)), f"{label}_mask_b", np.bool_)
        if combine is not None:
            op_type, done = _MASKED_COMBINES[combine]
            values, how = self._node(op_type, [data, values], f"{label}_combined", _np_dtype(data)), f"{how}, {done}"
        where = self._replaced_by("Where", node, [condition, values, data], f"{label}_where")
        return "NonZero/ScatterND (a masked write)", where.op, how

    def _spans(self, mask, data, count):
        """True if ``mask``'s shape is data's first ``count`` dimensions: equal static or symbolic dimensions, or an Expand
        to ``Shape(data)`` (the TorchScript exporter's form)."""
        dims, mask_dims = _dims(data), _dims(mask)
        if count > len(dims):
            return False
        if all(_same_dim(a, b) for a, b in zip(mask_dims, dims[:count])):
            return True
        expand = _producer(mask)
        return count == len(dims) and expand is not None and expand.op == "Expand" and _whole_shape_of(expand.inputs[1]) is data

    def _broadcast_values(self, updates, mask, tail, rank):
        """``V`` where ``U`` is ``Expand(V, shape)`` (or a Reshape of it) and each written element's value is V broadcast
        against data (NumPy's right-aligned broadcasting), else None: V a scalar; or, U being (n,) + the ``tail`` axes the
        mask does not cover, V of at most ``tail`` axes (or a leading 1); or, the mask an ``Expand(Unsqueeze(M0))`` over
        V's trailing axes (the dynamo exporter's ``x[mask] = v``, with U that V repeated per True element of M0, flat)."""
        node = _producer(updates)
        reshaped = node is not None and node.op == "Reshape"
        if reshaped:
            node = _producer(node.inputs[0])
        if node is None or node.op != "Expand":
            return None
        values = node.inputs[0]
        shape = _dims(values)
        if shape is None:
            return None
        if all(d == 1 for d in shape):
            return values  # one value for every element
        if not reshaped and (len(shape) <= tail or (len(shape) == tail + 1 and shape[0] == 1)):
            return values
        spread = self._spread_mask(mask, rank) if tail == 0 else None
        return values if spread is not None and spread[1] == rank - len(shape) else None

    def _spread_mask(self, mask, rank):
        """``(M0, k)`` where the mask is ``Expand(Unsqueeze(M0, [k, ..., rank - 1]))``: a mask of data's first k axes spread
        over the others (both exporters write ``x[M0] = v`` so); else None."""
        expand = _producer(mask)
        unsqueeze = _producer(expand.inputs[0]) if expand is not None and expand.op == "Expand" else None
        axes = self._unsqueeze_axes(unsqueeze) if unsqueeze is not None and unsqueeze.op == "Unsqueeze" else None
        if axes is None or sorted(a % rank for a in axes) != list(range(rank - len(axes), rank)):
            return None
        return unsqueeze.inputs[0], rank - len(axes)

    def _row_in_every_masked_row(self, updates, mask, dims):
        """``V`` where the mask is ``Expand(Unsqueeze(M0), Shape(X))`` over data's trailing axes and ``U`` is
        ``Slice(Reshape(V, [-1]), [0], n, [0])`` with V of those trailing axes' shape (leading 1s aside): PyTorch's
        TorchScript translation of ``x[M0] = V``, which gives V's elements one per masked element. That is V in the one
        masked row, and too few values (a failure) for more; ``Where(mask, V, X)`` computes the same where the model
        runs, and eager PyTorch's V in every masked row where it would fail. None for another form."""
        slice_node = _producer(updates)
        reshape = _producer(slice_node.inputs[0]) if slice_node is not None and slice_node.op == "Slice" else None
        spread = self._spread_mask(mask, len(dims))
        if reshape is None or reshape.op != "Reshape" or _ints(self._constant(reshape.inputs[1])) != [-1] or spread is None:
            return None
        values, (row_mask, leading) = reshape.inputs[0], spread
        value_dims, mask_dims = _dims(values), _dims(row_mask)
        trailing = list(dims[leading:])
        if value_dims is None or mask_dims is None or not 1 <= len(mask_dims) == leading or not all(isinstance(d, int) for d in trailing):
            return None
        while value_dims and value_dims[0] == 1 and len(value_dims) > len(trailing):
            value_dims = value_dims[1:]
        return values if list(value_dims) == trailing else None

    def _computed_from_masked(self, updates, mask, data):
        """``F(Y, c)`` where ``U`` is (through Reshape, Expand and a Slice of its first elements, which keep its elements in
        order) ``F(GatherND(Y, I), c)``: F elementwise, I the coordinates of the mask's True elements (``NonZero`` of the
        mask, or of the row mask it spreads) and Y of data's shape, so that U holds F of the masked elements in order
        (``x[mask] += v``, ``x[mask] = y[mask] * 2``); every other input of F (``c``) must not vary along the masked
        elements (a scalar, or at most the axes the mask leaves). F applied to Y whole is then the value of every
        masked element, and no NonZero is left to compute it. None for another form."""
        rank = len(_dims(data))
        masks = [mask]
        spread, expand = self._spread_mask(mask, rank), _producer(mask)
        if spread is not None:
            masks.append(spread[0])
        if expand is not None and expand.op == "Expand" and _rank(expand.inputs[0]) == rank:  # of data's rank: the same mask
            masks.append(expand.inputs[0])  # (one of lower rank, broadcast on the left, would mask trailing axes)
        tensor = self._in_order(updates)
        sources, masked, leaves = {}, set(), []
        if self._elementwise_of_masked(tensor, masks, data, sources, masked, leaves, budget=[_ELEMENTWISE_NODES]) != "masked":
            return None
        masked_axes = {len(_dims(mask_used)) for _, mask_used in sources.values()}
        if len(masked_axes) != 1:
            return None
        own = rank - masked_axes.pop()  # the axes the mask leaves: each masked element's own
        if not all(len(dims) <= own or (len(dims) == own + 1 and dims[0] == 1) for dims in map(_dims, leaves)):
            return None
        return self._unmasked(tensor, sources, masked)

    def _in_order(self, updates):
        """F where ``U`` holds F's elements in order as the exporters write it: ``Slice(Reshape(F, [-1]), [0], end, [0])``
        (TorchScript: F's first ``end`` elements) or ``Reshape(Expand(F, S), [-1])`` (dynamo; either part may be left
        out). Only these: a Slice or Expand inside F (``x[mask][:1]``, broadcast back) is part of what F computes."""
        node = _producer(updates)
        if node is not None and self._first_elements(node):
            flat = _producer(node.inputs[0])
            return flat.inputs[0] if flat is not None and flat.op == "Reshape" and _ints(self._constant(flat.inputs[1])) == [-1] else updates
        return _before_expand(node.inputs[0] if node is not None and node.op == "Reshape" else updates)

    def _elementwise_of_masked(self, tensor, masks, data, sources, masked, leaves, budget):
        """``"masked"`` if ``tensor`` is computed element by element (at most ``budget`` nodes) from masked gathers
        (recorded in ``sources``: the gather's id -> (Y, the mask)) and other tensors of known shape (recorded in
        ``leaves``), ``"other"`` if it reads no masked gather, None if it reads one otherwise. ``masked`` collects the ids
        of the tensors that read one."""
        producer = _producer(tensor)
        kind = "other"
        if producer is not None and producer.op == "GatherND":
            found = self._masked_source(producer, masks, data)
            if found is not None:
                sources[id(producer)], kind = found, "masked"
        elif producer is not None and producer.op in _TRAPS_ON_INTEGERS and _dtype_kind(tensor) != "f":
            return None  # F runs on the unmasked elements too, where an integer division may be by zero (a trap on a CPU)
        elif producer is not None and producer.op in ELEMENTWISE and len(producer.outputs) == 1 and budget[0] > 0:
            budget[0] -= 1
            inputs = [t for t in producer.inputs if not _is_empty(t)]
            kinds = [self._elementwise_of_masked(t, masks, data, sources, masked, leaves, budget) for t in inputs]
            if None in kinds:
                return None
            if "masked" in kinds:
                if any(_dims(t) is None for t, k in zip(inputs, kinds) if k == "other"):
                    return None
                leaves.extend(t for t, k in zip(inputs, kinds) if k == "other")
                kind = "masked"
        elif producer is not None and producer.op in ELEMENTWISE:
            return None  # too long a computation to follow: left as it is
        if kind == "masked":
            masked.add(id(tensor))
        return kind

    def _unmasked(self, tensor, sources, masked):
        """A copy of the elementwise computation of ``tensor`` with each masked gather replaced by its source: F of the
        whole tensor."""
        producer = _producer(tensor)
        if id(producer) in sources:
            return sources[id(producer)][0]
        inputs = [self._unmasked(t, sources, masked) if id(t) in masked else t for t in producer.inputs]
        label = producer.name or tensor.name
        return self._node(producer.op, inputs, f"{label}_unmasked", _np_dtype(tensor), **producer.attrs)

    def _first_elements(self, node):
        """True for ``Slice(S, [0], end, [0])`` (step 1): S's first ``end`` elements along axis 0, in order."""
        if node.op != "Slice" or len(node.inputs) < 4:
            return False
        steps = node.inputs[4] if len(node.inputs) > 4 else None
        return (_ints(self._constant(node.inputs[1])) == [0] and _ints(self._constant(node.inputs[3])) == [0]
                and (steps is None or _is_empty(steps) or _ints(self._constant(steps)) == [1]))

    def _masked_source(self, gather, masks, data):
        """``(Y, M)`` where ``gather`` is ``GatherND(Y, I)`` (batch_dims 0) of the True elements of M, one of ``masks``, in
        order (I from ``Transpose(NonZero(M), [1, 0])``, through the Squeeze, Expand and Unsqueeze around the dynamo
        exporter's one index), with Y of data's shape; else None."""
        source, index = gather.inputs
        if gather.attrs.get("batch_dims", 0) != 0:
            return None
        node = _producer(index)
        while node is not None and (node.op in ("Squeeze", "Unsqueeze", "Expand", "Identity") or (node.op == "Max" and len(node.inputs) == 1)):
            node = _producer(node.inputs[0])
        if node is None or node.op != "Transpose" or [int(p) for p in node.attrs.get("perm", [])] != [1, 0]:
            return None
        nonzero = _producer(node.inputs[0])
        if nonzero is None or nonzero.op != "NonZero" or not any(nonzero.inputs[0] is mask for mask in masks):
            return None
        data_dims, source_dims, index_dims = _dims(data), _dims(source), _dims(index)
        mask_dims, gathered_dims = _dims(nonzero.inputs[0]), _dims(gather.outputs[0])
        if None in (source_dims, index_dims, mask_dims, gathered_dims):
            return None
        same_shape = source is data or (len(source_dims) == len(data_dims) and all(map(_same_dim, source_dims, data_dims)))
        rows_of_coordinates = len(index_dims) == 2 and index_dims[1] == len(mask_dims)
        if not same_shape or not rows_of_coordinates or len(gathered_dims) != 1 + len(data_dims) - len(mask_dims):
            return None
        return source, nonzero.inputs[0]

    def _gathered_values(self, updates, mask, label):
        """``S[max(CumSum(M) - 1, 0)]`` reshaped to data's shape, where ``U`` is ``Slice(S, [0], n, [0])`` (the first rows
        of ``S``, a Reshape of the source to ``(-1,) + tail``): element p of the mask takes the row its rank among
        the True elements picks; None for another form. S gets a row of zeros at its end first: the elements before
        the first True one read row 0, and S may have none (nothing masked, and S computed from the masked rows)."""
        node = _producer(updates)
        if node is None or not self._first_elements(node):
            return None
        source = node.inputs[0]
        dtype = _np_dtype(source)
        if dtype is None:
            return None
        flat = self._node("Reshape", [mask, self._int64([-1], f"{label}_flat")], f"{label}_mask_flat", _np_dtype(mask))
        counts = self._node("Cast", [flat], f"{label}_mask_counts", np.int64, to=dtypes.to_onnx(np.int64))
        ranks = self._node("CumSum", [counts, self._int64(0, f"{label}_cumsum_axis")], f"{label}_ranks", np.int64)
        zero_row = self._int64(0, f"{label}_zero")  # Where, not Max: Max takes int64 from opset 12 only
        rows = self._node("Where", [self._node("Greater", [ranks, zero_row], f"{label}_ranked", np.bool_),
                                    self._node("Sub", [ranks, self._int64(1, f"{label}_one")], f"{label}_rows0", np.int64), zero_row],
                          f"{label}_rows", np.int64)
        source_shape = self._node("Shape", [source], f"{label}_source_shape", np.int64)
        tail = self._node("Slice", [source_shape, self._int64([1], f"{label}_tail_start"), self._int64([INT64_MAX], f"{label}_tail_end")],
                          f"{label}_source_tail", np.int64)
        zero_shape = self._node("Concat", [self._int64([1], f"{label}_zero_rows"), tail], f"{label}_zero_shape", np.int64, axis=0)
        zero = self._node("ConstantOfShape", [zero_shape], f"{label}_zero_row", np.float32)  # float zeros: every opset has them
        if dtype != np.float32:
            zero = self._node("Cast", [zero], f"{label}_zero_row_cast", dtype, to=dtypes.to_onnx(dtype))
        padded = self._node("Concat", [source, zero], f"{label}_source_padded", dtype, axis=0)
        gathered = self._node("Gather", [padded, rows], f"{label}_gathered", dtype, axis=0)
        shape = self._node("Shape", [mask], f"{label}_mask_shape", np.int64)
        full = self._node("Concat", [shape, tail], f"{label}_values_shape", np.int64, axis=0)
        # allowzero: a mask with an empty axis past the first (x of shape (1, 0)) gives a 0 that is a size, not a copy
        zeros = {"allowzero": 1} if (self.graph.opset or 14) >= 14 else {}
        return self._node("Reshape", [gathered, full], f"{label}_values", dtype, **zeros)

    def _replaced_by(self, op_type, node, inputs, name, **attributes):
        """A standard node computing ``node``'s output from ``inputs``, in its place."""
        import onnx_graphsurgeon as gs

        new_node = gs.Node(op_type, name=self._name(name), inputs=inputs, attrs=attributes)
        self._replace(node, new_node)
        return new_node


    # ---- scatters with a reduction ------------------------------------------------------------

    def _accumulating_add(self, node):
        """The ``Add(X, node)`` that alone reads a ScatterND/ScatterElements without a reduction whose data is zeros of
        X's shape (``ConstantOfShape(Shape(X))``, or a constant of zeros of X's static shape), else ``None``: PyTorch's
        TorchScript exporter writes ``index_put(accumulate=True)`` and ``index_add`` so, which sums nothing where
        indices repeat (ONNX leaves such a scatter undefined; onnxruntime keeps one update)."""
        result = node.outputs[0]
        add = result.outputs[0] if len(result.outputs) == 1 and result not in self.graph.outputs else None
        if _attr(node, "reduction", "none") != "none" or add is None or add.op != "Add" or add.domain not in (None, *DEFAULT_DOMAINS) or len(add.inputs) != 2:
            return None
        zeros, like = node.inputs[0], next(tensor for tensor in add.inputs if tensor is not result)  # result has one reader: the other input
        if self._each_target_once(node, like):  # a write then, as the patterns above make it (a slice, an index list)
            return None
        filled = _producer(zeros)
        if filled is not None and filled.op == "ConstantOfShape":
            return add if _whole_shape_of(filled.inputs[0]) is like and not np.any(_fill_value(filled)) else None
        values, dims = self._constant(zeros), _dims(like)
        static = dims is not None and all(isinstance(d, int) for d in dims)
        return add if values is not None and static and values.shape == dims and not values.any() else None

    def _each_target_once(self, node, like):
        """Whether ``node``'s indices are constants that write each element of ``like`` once at most (negative ones
        read against its static dims): nothing then repeats that a sum would combine."""
        indices, dims = self._constant(node.inputs[1]), _dims(like)
        if indices is None or indices.ndim == 0 or dims is None:
            return False
        nd = node.op == "ScatterND"
        axis = _attr(node, "axis", 0)
        sizes = dims[: indices.shape[-1]] if nd else dims[axis : axis + 1 or None]
        if (indices < 0).any():
            if not all(isinstance(d, int) for d in sizes):
                return False  # where -1 lands is known only when it runs
            indices = np.where(indices < 0, indices + np.asarray(sizes, np.int64), indices)
        if nd and not indices.shape[-1]:  # rows of no index: each writes all of data
            return math.prod(indices.shape[:-1]) <= 1
        if nd:
            rows = indices.reshape(-1, indices.shape[-1])
            return len(np.unique(rows, axis=0)) == len(rows)
        return not (np.diff(np.sort(indices, axis=axis), axis=axis) == 0).any()

    def _accumulate(self, node, add, match):
        """``Add(X, Scatter(zeros, I, U))`` -> the scatter into X with reduction add (:meth:`_reduction`): what ``Add``
        computes where I repeats no target, and the sum PyTorch computes where it does."""
        result, sum_ = node.outputs[0], add.outputs[0]
        like = next(tensor for tensor in add.inputs if tensor is not result)
        node.inputs[0], node.attrs["reduction"] = like, "add"
        add.inputs.clear()
        add.outputs.clear()
        node.outputs = [sum_]
        pattern, op, detail = match(node)  # with reduction add: a masked Where or _reduction, neither of which leaves it
        return f"Add({pattern} of zeros)", op, f"{detail}, into the Add's other input: the sum PyTorch computes where indices repeat"

    def _reduction(self, node):
        """ScatterElements/ScatterND with a reduction -> ScatterElementsReduce/ScatterNDReduce (``include_self=1``, as
        ONNX combines); a ScatterElements along axis 0 whose indices are an index list expanded over data's other
        axes (PyTorch's ``index.view(-1, 1).expand_as(src)``) -> ScatterNDReduce of those rows (its kernel sorts
        rows, not elements)."""
        reduction = _attr(node, "reduction")
        if reduction not in ONNX_REDUCTIONS:
            raise _Left(f"reduction={reduction} (not one of ONNX's)")
        data, indices, updates = node.inputs
        label = node.name or node.outputs[0].name
        before_fill = self._before_identity_fill(node, reduction)
        attributes = {"reduction": reduction, "include_self": 1 if before_fill is None else 0}
        data = data if before_fill is None else before_fill
        if node.op == "ScatterND":
            new_node = self._plugin("ScatterNDReduce", label, [data, indices, updates], **attributes)
            detail = f"reduction {reduction}"
        else:
            dims = _dims(data)
            axis = _attr(node, "axis", 0)
            axis = axis + len(dims) if dims is not None and axis < 0 else axis
            rows = self._index_rows(node, axis, label)
            if rows is not None:
                new_node = self._plugin("ScatterNDReduce", label, [data, rows, updates], **attributes)
                detail = f"reduction {reduction}, rows of an index list broadcast over the other axes"
            else:
                new_node = self._plugin("ScatterElementsReduce", label, [data, indices, updates], axis=axis, **attributes)
                detail = f"reduction {reduction}, axis {axis}"
        self._replace(node, new_node)
        if before_fill is not None:
            return f"{node.op} of a {node.op} that fills the reduction's identity", new_node.op, f"{detail}, include_self=0: PyTorch's include_self=False"
        return node.op, new_node.op, detail

    def _before_identity_fill(self, node, reduction):
        """``X`` where ``node``'s data is ``Scatter(X, I, F)`` of the same op, axis and indices ``I``, with ``F`` one value
        everywhere, the reduction's identity (0 for add, 1 for mul, the lowest value for max, the highest for min), and
        its output read by ``node`` alone: the dynamo exporter's ``scatter_reduce(include_self=False)``, whose plain
        fill repeats targets (TensorRT's IScatterLayer refuses more indices than data on the axis). Else None."""
        fill = _producer(node.inputs[0])
        if fill is None or fill.op != node.op or fill.domain not in (None, *DEFAULT_DOMAINS) or _attr(fill, "reduction", "none") != "none":
            return None
        written = fill.outputs[0]
        if fill.inputs[1] is not node.inputs[1] or _attr(fill, "axis", 0) != _attr(node, "axis", 0):
            return None
        if len(written.outputs) != 1 or written in self.graph.outputs:
            return None
        value = self._one_value(fill.inputs[2])
        if value is None:
            return None
        dtype = value.dtype
        lowest, highest = (-np.inf, np.inf) if dtype.kind == "f" else (np.iinfo(dtype).min, np.iinfo(dtype).max) if dtype.kind in "iu" else (None, None)
        identity = {"add": 0, "mul": 1, "max": lowest, "min": highest}.get(reduction)
        return fill.inputs[0] if identity is not None and value == identity else None

    def _one_value(self, tensor):
        """The one value every element of ``tensor`` holds (a ``ConstantOfShape``'s, or a constant's), else None."""
        producer = _producer(tensor)
        values = _fill_value(producer) if producer is not None and producer.op == "ConstantOfShape" else self._constant(tensor)
        if values is None or values.size == 0 or not (values == values.reshape(-1)[0]).all():
            return None
        return values.reshape(-1)[0]

    def _index_rows(self, node, axis, label):
        """The (E, 1) index rows of a ScatterElements whose indices are ``Expand(e, shape)``, ``e`` of shape (E, 1, ..., 1),
        with updates spanning data off axis 0 (so each update row has one target row); ``None`` otherwise."""
        data, indices, updates = node.inputs
        expand = _producer(indices)
        if axis != 0 or expand is None or expand.op != "Expand":
            return None
        source = expand.inputs[0]
        dims, source_dims, index_dims = _dims(data), _dims(source), _dims(indices)
        shaped_like = _whole_shape_of(expand.inputs[1])
        if shaped_like is not None:
            index_dims = _dims(shaped_like)  # expand_as(t): the dims of t, which inference may not carry through
        if None in (dims, source_dims, index_dims) or not len(dims) == len(source_dims) == len(index_dims):
            return None
        if any(d != 1 for d in source_dims[1:]) or not _same_dim(source_dims[0], index_dims[0]):
            return None
        if not all(_same_dim(dims[d], index_dims[d]) for d in range(1, len(dims))):
            return None
        if len(source_dims) == 2:
            return source
        return self._node("Reshape", [source, self._int64([-1, 1], f"{label}_rows_shape")], f"{label}_rows", _np_dtype(source) or np.int64)

    # ---- nodes --------------------------------------------------------------------------------

    def _emit(self, node, data, updates, write):
        """``(new node, detail)`` for a matched write."""
        import onnx_graphsurgeon as gs

        label = node.name or node.outputs[0].name
        if write.slices is not None and not write.slices:
            return gs.Node("Identity", name=self._name(f"{label}_whole"), inputs=[updates]), "a write of the whole tensor"
        if write.slices is not None:
            params = [self._params([s[k] for s in write.slices], f"{label}_{name}") for k, name in ((1, "start"), (2, "stop"), (3, "step"))]
            axes = self._int64([s[0] for s in write.slices], f"{label}_axes")
            detail = "axes " + ", ".join(str(s[0]) for s in write.slices)
            return self._plugin("SliceScatter", label, [data, updates, *params, axes]), detail
        if write.rows is not None:
            positions = write.rows
            if isinstance(positions, np.ndarray):
                positions = self._int64(positions, f"{label}_positions")
            else:
                positions = self._as_int64(self._wrapped(positions, data, write.axis, label) if write.wrap else positions, f"{label}_positions")
            detail = f"axis {write.axis}, one position per batch row" + (", the updates' tokens from there on, circular" if write.spans else "") + (
                ", negative positions wrapped" if write.wrap else "")
            # A span in circular mode: (w mod M + t) mod M is ONNX's wrap of each index w + t in [-M, M) (linear mode would
            # refuse a span from a negative start across 0); a decode position is one index, wrapped above.
            return self._plugin("CacheScatter", label, [data, updates, positions], axis=write.axis, mode="circular" if write.spans else "linear"), detail
        indices = write.list
        if isinstance(indices, np.ndarray):
            indices = self._int64(indices, f"{label}_indices")
        elif write.wrap:
            indices = self._wrapped(indices, data, write.axis, label)
        detail = f"axis {write.axis}" + (", negative indices wrapped" if write.wrap else "")
        return self._plugin("ScatterUpdate", label, [data, indices, updates, self._int64([write.axis], f"{label}_axis")]), detail

    def _plugin(self, op_type, label, inputs, **attributes):
        import onnx_graphsurgeon as gs

        return gs.Node(op_type, name=self._name(f"{label}_{op_type}"), domain=DOMAIN, inputs=inputs, attrs={**attributes, "inplace": 0})

    def _wrapped(self, indices, data, axis, label):
        """``indices + size`` where that makes a negative index one in range (below ``-size`` it stays as it was, so that
        the rule it breaks names the value given): ``Where(Less(i + s, 0), i, Where(Less(i, 0), i + s, i))`` with
        ``s = Cast(Gather(Shape(data), axis))`` (:func:`trt_scatter.torch.writes.wrapped`)."""
        size = _dims(data)[axis] if _dims(data) else None
        dtype = _np_dtype(indices) or np.int64
        if isinstance(size, int):
            size = self._constant_tensor(np.array(size, dtype), f"{label}_size")
        else:
            shape = self._node("Shape", [data], f"{label}_shape", np.int64)
            size = self._node("Gather", [shape, self._constant_tensor(np.array(axis, np.int64), f"{label}_axis_index")], f"{label}_size", np.int64, axis=0)
            if dtype != np.int64:
                size = self._node("Cast", [size], f"{label}_size_cast", dtype, to=dtypes.to_onnx(dtype))
        negative = self._node("Less", [indices, self._constant_tensor(np.array(0, dtype), f"{label}_zero")], f"{label}_negative", np.bool_)
        shifted = self._node("Add", [indices, size], f"{label}_shifted", dtype)
        below = self._node("Less", [shifted, self._constant_tensor(np.array(0, dtype), f"{label}_zero_shifted")], f"{label}_below", np.bool_)
        wrapped = self._node("Where", [below, indices, self._node("Where", [negative, shifted, indices], f"{label}_in_range", dtype)],
                             f"{label}_wrapped", dtype)
        wrapped.shape = indices.shape
        return wrapped

    def _params(self, values, name):
        """A 1-D int64 tensor of ints and 1-element tensors (a constant when all are ints)."""
        if all(isinstance(v, int) for v in values):
            return self._int64(values, name)
        pieces = [self._int64([v], f"{name}_{i}") if isinstance(v, int) else self._as_int64(v, f"{name}_{i}") for i, v in enumerate(values)]
        if len(pieces) == 1:
            return pieces[0]
        return self._node("Concat", pieces, name, np.int64, axis=0)

    def _as_int64(self, tensor, name):
        dtype = _np_dtype(tensor)
        if dtype == np.int64:
            return tensor
        if dtype is None or dtype.kind != "i":
            raise _Left("slice bounds of a type that is not a known signed integer")
        return self._node("Cast", [tensor], name, np.int64, to=dtypes.to_onnx(np.int64))

    def _int64(self, values, name):
        return self._constant_tensor(np.asarray(values, dtype=np.int64), name)

    def _constant_tensor(self, array, name):
        import onnx_graphsurgeon as gs

        return gs.Constant(self._name(name), np.asarray(array))

    def _node(self, op_type, inputs, name, dtype, **attributes):
        import onnx_graphsurgeon as gs

        output = gs.Variable(self._name(name), dtype=np.dtype(dtype))
        self.graph.nodes.append(gs.Node(op_type, name=self._name(f"{name}_node"), inputs=inputs, outputs=[output], attrs=attributes))
        return output

    def _unsqueeze(self, tensor, axes, name, dtype):
        """``Unsqueeze(tensor, axes)``: its axes an input from opset 13, an attribute before."""
        if (self.graph.opset or 13) >= 13:
            return self._node("Unsqueeze", [tensor, self._int64(axes, f"{name}_axes")], name, dtype)
        return self._node("Unsqueeze", [tensor], name, dtype, axes=list(axes))

    def _name(self, hint):
        return fresh_name(hint, self._names)

    def _unsqueeze_axes(self, node):
        if "axes" in node.attrs:
            return [int(a) for a in node.attrs["axes"]]
        values = self._constant(node.inputs[1]) if len(node.inputs) > 1 else None
        return None if values is None else [int(a) for a in values.reshape(-1)]

    # ---- nested SliceScatter ---------------------------------------------------------------------

    def _fuse(self, outer):
        """SliceScatter(D, SliceScatter(Slice(D, s), Y, t), s) on different axes -> SliceScatter(D, Y, s + t)."""
        label = outer.name or outer.outputs[0].name
        data, middle = outer.inputs[0], outer.inputs[1]
        inner = _producer(middle)
        if inner is None or not is_trt_scatter(inner) or inner.op != "SliceScatter" or len(middle.outputs) != 1 or middle in self.graph.outputs:
            return
        view = _producer(inner.inputs[0])
        if view is None or view.op != "Slice" or view.inputs[0] is not data:
            return
        rank = len(_dims(data) or ()) or None
        outer_params, inner_params = self._slice_params(outer, rank), self._slice_params(inner, rank)
        view_params = self._slice_params(view, rank, onnx_slice=True)
        if None in (outer_params, inner_params, view_params) or not self._same_params(outer_params, view_params):
            return
        if set(outer_params[3]) & set(inner_params[3]):
            return
        try:
            params = [self._params(list(outer_params[k]) + list(inner_params[k]), f"{label}_fused_{name}") for k, name in ((0, "start"), (1, "stop"), (2, "step"))]
        except _Left:
            return
        axes = self._int64(list(outer_params[3]) + list(inner_params[3]), f"{label}_fused_axes")
        outer.inputs = [data, inner.inputs[1], *params, axes]
        self.report.rewritten.append(Change(label, "SliceScatter of a SliceScatter", "SliceScatter", f"axes {', '.join(map(str, outer_params[3] + inner_params[3]))}"))

    # ---- per-row SliceScatters -------------------------------------------------------------------

    def _fuse_rows(self, head):
        """``head`` and the SliceScatters after it that each write one batch row at a run-time position (see
        :meth:`_row_write`), every row once, into one CacheScatter; nothing where they are not that chain."""
        data = head.inputs[0]
        dims = _dims(data)
        if not dims or not isinstance(dims[0], int) or len(dims) < 2:
            return
        first = self._row_write(head, dims)
        producer = _producer(data)
        if first is None or (producer is not None and is_trt_scatter(producer) and producer.op == "SliceScatter" and self._row_write(producer, dims)):
            return  # not a per-row write, or not the chain's first
        chain, writes = [head], [first]
        while len(chain) < dims[0]:
            readers = [n for n in chain[-1].outputs[0].outputs if n.op != "Shape"]
            if len(readers) != 1 or chain[-1].outputs[0] in self.graph.outputs or readers[0].inputs[0] is not chain[-1].outputs[0]:
                return
            write = self._row_write(readers[0], dims) if is_trt_scatter(readers[0]) and readers[0].op == "SliceScatter" else None
            if write is None:
                return
            chain.append(readers[0])
            writes.append(write)
        rows, axes, positions, values = zip(*writes)
        if sorted(rows) != list(range(dims[0])) or len(set(axes)) != 1 or any(p is not positions[0] for p in positions) \
                or any(v is not values[0] for v in values):
            return
        axis, source, values = axes[0], positions[0], values[0]
        label = chain[-1].name or chain[-1].outputs[0].name
        for node in chain[:-1]:  # the rows in between are only read for their shape: data's
            for reader in list(node.outputs[0].outputs):
                if reader.op == "Shape":
                    reader.inputs[0] = data
        update = self._unsqueeze(values, [axis], f"{label}_rows", _np_dtype(values))
        positions = self._as_int64(self._wrapped(source, data, axis, label), f"{label}_positions")
        new_node = self._plugin("CacheScatter", label, [data, update, positions], axis=axis, mode="linear")
        self._replace(chain[-1], new_node)
        for node in chain[:-1]:
            node.inputs.clear()
            node.outputs.clear()
        self.report.rewritten.append(Change(label, f"SliceScatter per batch row x {len(chain)}", "CacheScatter",
                                            f"axis {axis}, one position per batch row, negative positions wrapped"))

    def _row_write(self, node, dims):
        """``(b, axis, P, K)`` where ``node`` writes batch row ``b`` of data at position ``P[b]`` along ``axis`` with
        ``K[b]``: axes [0, axis], steps 1, starts ``Concat([b], Reshape(w))`` and stops ``Concat([b + 1], Reshape(w + 1))``
        for ``w`` the position ``Gather(P, b)`` with negative values wrapped, updates ``Unsqueeze(Gather(K, b), [0, axis])``
        with K and P of B rows; else None."""
        inputs = list(node.inputs) + [None] * (6 - len(node.inputs))
        _, updates, starts, stops, steps, axes = inputs[:6]
        axes, steps = _ints(self._constant(axes)), _ints(self._constant(steps))
        if axes is None or len(axes) != 2 or axes[0] != 0 or not 0 < axes[1] < len(dims) or steps != [1, 1]:
            return None
        axis, batch = axes[1], dims[0]
        begin, end = self._row_bounds(starts), self._row_bounds(stops)
        if begin is None or end is None or end[0] != begin[0] + 1:
            return None
        row, position = begin
        added = _producer(_root(end[1]))
        if added is None or added.op != "Add" or _root(added.inputs[0]) is not _root(position) or self._number(added.inputs[1]) != 1:
            return None
        gathered = self._wrapped_source(_root(position), axis)
        unsqueeze = _producer(updates)
        if gathered is None or unsqueeze is None or unsqueeze.op != "Unsqueeze" or sorted(self._unsqueeze_axes(unsqueeze) or []) != [0, axis]:
            return None
        picked = _producer(unsqueeze.inputs[0])
        for gather, expected_rank in ((gathered, 1), (picked, len(dims) - 1)):
            if gather is None or gather.op != "Gather" or _attr(gather, "axis", 0) != 0 or self._number(gather.inputs[1]) != row:
                return None
            source_dims = _dims(gather.inputs[0])
            if source_dims is None or len(source_dims) != expected_rank or source_dims[0] != batch:
                return None
        rest = tuple(d for j, d in enumerate(dims) if j not in (0, axis))
        if tuple(_dims(picked.inputs[0])[1:]) != rest:
            return None
        return row, axis, gathered.inputs[0], picked.inputs[0]

    def _row_bounds(self, tensor):
        """``(b, w)`` where ``tensor`` is ``Concat([b], Reshape(w, [1]))`` (a constant batch row, a run-time position)."""
        concat = _producer(tensor)
        if concat is None or concat.op != "Concat" or len(concat.inputs) != 2:
            return None
        row = _ints(self._constant(concat.inputs[0]))
        return (row[0], concat.inputs[1]) if row is not None and len(row) == 1 and self._constant(concat.inputs[1]) is None else None

    def _wrapped_source(self, position, axis):
        """The ``Gather`` G under ``Where(Less(Add(G, size), 0), G, Where(Less(G, 0), Add(G, size), G))``, the wrap of a
        negative position that :mod:`trt_scatter.torch` writes (:func:`trt_scatter.torch.writes.wrapped`), or under its
        inner ``Where`` alone (else None)."""
        where = _producer(position)
        if where is None or where.op != "Where":
            return None
        outer_condition, inner = _producer(where.inputs[0]), _producer(where.inputs[2])
        if outer_condition is not None and outer_condition.op == "Less" and inner is not None and inner.op == "Where":
            if (inner.inputs[2] is not where.inputs[1] or outer_condition.inputs[0] is not inner.inputs[1]
                    or self._number(outer_condition.inputs[1]) != 0):
                return None
            where = inner  # the outer Where keeps what lies below -size as it was
        condition, added, kept = (_producer(t) if i < 2 else t for i, t in enumerate(where.inputs))
        gathered = _producer(kept)
        if condition is None or condition.op != "Less" or added is None or added.op != "Add" or gathered is None:
            return None
        if condition.inputs[0] is not kept or added.inputs[0] is not kept or self._number(condition.inputs[1]) != 0:
            return None
        size = _producer(added.inputs[1])  # the size the wrap adds: the cache's on the axis
        shape = _producer(size.inputs[0]) if size is not None and size.op == "Gather" else None
        if shape is None or shape.op != "Shape" or self._number(size.inputs[1]) != axis or shape.attrs:
            return None
        return gathered

    def _slice_params(self, node, rank, onnx_slice=False):
        """``(starts, stops, steps, axes)`` of a SliceScatter (or a Slice): lists of ints or 1-element
        tensors, axes normalized ints; ``None`` where steps or axes are not positive constants."""
        first = 1 if onnx_slice else 2
        inputs = list(node.inputs[first:]) + [None] * 4
        starts, stops = inputs[0], inputs[1]
        axes, steps = (inputs[2], inputs[3]) if onnx_slice else (inputs[3], inputs[2])
        count = self._length(starts)
        if count is None:
            return None
        axes = list(range(count)) if axes is None or _is_empty(axes) else _ints(self._constant(axes))
        steps = [1] * count if steps is None or _is_empty(steps) else _ints(self._constant(steps))
        if axes is None or steps is None or any(s <= 0 for s in steps) or (rank is None and any(a < 0 for a in axes)):
            return None
        axes = [a + rank if a < 0 else a for a in axes]
        bounds = []
        for tensor in (starts, stops):
            constant = self._constant(tensor)
            bounds.append(_ints(constant) if constant is not None else ([tensor] if count == 1 else None))
        if None in bounds:
            return None
        return bounds[0], bounds[1], steps, axes

    def _length(self, tensor):
        constant = self._constant(tensor)
        if constant is not None:
            return constant.size
        dims = _dims(tensor)
        return dims[0] if dims and len(dims) == 1 and isinstance(dims[0], int) else None

    def _same_params(self, a, b):
        return all(len(x) == len(y) and all(_same_value(p, q) for p, q in zip(x, y)) for x, y in zip(a, b))

    # ---- constants ------------------------------------------------------------------------------

    def _constant(self, tensor):
        """The value of ``tensor`` if constants and static shapes fix it (folding the nodes between), else ``None``."""
        import onnx_graphsurgeon as gs

        if tensor is None or _is_empty(tensor):
            return None
        if isinstance(tensor, gs.Constant):
            return np.asarray(tensor.values)
        if tensor.name not in self._constants:
            self._constants[tensor.name] = None  # while evaluating: a cycle reads as "not constant"
            self._constants[tensor.name] = self._fold(tensor)
        return self._constants[tensor.name]

    def _fold(self, tensor):
        from onnx_graphsurgeon.exporters.onnx_exporter import OnnxExporter

        node = _producer(tensor)
        if node is None or node.domain not in (None, *DEFAULT_DOMAINS) or len(node.outputs) != 1:
            return None
        if node.op == "Shape":
            dims = _dims(node.inputs[0])
            if dims is None or not all(isinstance(d, int) for d in dims):
                return None
            return np.array(dims, np.int64)[_attr(node, "start", 0) : _attr(node, "end", None)]
        inputs = [self._constant(t) if not _is_empty(t) else None for t in node.inputs]
        if any(value is None for value, t in zip(inputs, node.inputs) if not _is_empty(t)):
            return None
        results = fold(OnnxExporter.export_node(node), inputs, self.graph.opset)
        return None if results is None else results[0]


# ---- constant index analysis -------------------------------------------------------------------

NO_INDEX = "no index (the node writes nothing)"
_DYNAMO_MEAN = ("a plain write into zeros at the same indices, as the dynamo exporter writes scatter_reduce(mean): the last update of "
                "a target wins where PyTorch's mean averages them (trt_scatter.torch.export writes the mean)")


def _grid(values, dims, axis_of):
    """A :class:`_Write` for constant ScatterND ``indices`` (shape S + [k]) into data of static ``dims`` (None if not known).

    ``axis_of(j)`` is the axis of the data the write goes to for the indices' axis j (Transposes).
    """
    if values.ndim < 2 or values.dtype.kind not in "iu":
        raise _Left("constant indices of rank < 2")
    if values.size == 0:  # no row, or rows of no coordinate, each of which writes all of data
        raise _Left(NO_INDEX if values.shape[-1] or not math.prod(values.shape[:-1]) else "index rows of no coordinate (each writes all of data)")
    k = values.shape[-1]
    dims = tuple(dims) if dims is not None else (None,) * k
    if k == 1 and values.ndim > 2:
        return _Write(axis=axis_of(0), list=_index_list(_normalized(values[..., 0], dims[0])))
    if values.ndim - 1 != k:
        raise _Left("constant indices that are single points, not a slice or an index list")
    lists = [values[(0,) * j + (slice(None),) + (0,) * (k - 1 - j) + (j,)] for j in range(k)]
    grid = np.stack(np.meshgrid(*lists, indexing="ij"), axis=-1) if k > 1 else lists[0].reshape(-1, 1)
    if grid.shape != values.shape or not np.array_equal(grid, values):
        raise _Left("constant indices that are single points, not a slice or an index list")
    slices, listed = [], []
    for j, values_j in enumerate(lists):
        size = dims[j] if j < len(dims) else None
        normalized = _normalized(values_j, size)
        if isinstance(size, int) and np.array_equal(normalized, np.arange(size)):
            continue  # the whole axis
        progression = _progression(normalized)
        if progression is not None:
            slices.append((axis_of(j), *progression))
        else:
            listed.append((axis_of(j), normalized))
    if not listed:
        return _Write(slices=slices)
    if len(listed) == 1 and not slices:
        return _Write(axis=listed[0][0], list=_index_list(listed[0][1]))
    raise _Left("constant indices that slice some axes and list others")


def _normalized(values, size):
    """Distinct constant index values, with ``size`` added to negative ones (checked in [-size, size-1]) when the
    size is known; of one sign when it is not (a slice can count from the end, a mix cannot be ordered)."""
    values = values.astype(np.int64)
    if values.size == 0:
        raise _Left(NO_INDEX)
    if len(np.unique(values)) != values.size:
        raise _Left("repeated constant indices (which element wins is undefined)")
    if isinstance(size, int):
        if values.min() < -size or values.max() >= size:
            raise _Left(f"constant indices out of range for a dimension of {size}")
        return np.where(values < 0, values + size, values)
    if values.min() < 0 <= values.max():
        raise _Left("negative and non-negative constant indices into a dimension of unknown size")
    return values


def _index_list(values):
    """ScatterUpdate's indices: in [0, s-1] only."""
    if values.min() < 0:
        raise _Left("negative constant indices into a dimension of unknown size (not a slice)")
    return values


def _progression(values):
    """``(start, stop, step)`` of the slice that takes ``values`` (1-D, not empty, all of one sign) in order, or ``None``."""
    values = values.reshape(-1)
    step = int(values[1] - values[0]) if values.size > 1 else 1
    if step == 0 or not np.array_equal(values, values[0] + step * np.arange(values.size)):
        return None
    start = int(values[0])
    stop = int(values[-1]) + step
    if step > 0 and start < 0 <= stop:
        stop = INT64_MAX  # the slice runs to the end: a stop of 0 would count from the start
    if step < 0 and start >= 0 > stop:
        stop = INT64_MIN  # the slice runs to the first element: a negative stop would count from the end
    return start, stop, step


# ---- small helpers -------------------------------------------------------------------------------


# Inputs that TensorRT reads as shape tensors (what a plugin cannot compute): op -> input positions.
#: a masked ScatterND's reduction -> the op that combines in its Where, and what the report says
_MASKED_COMBINES = {"add": ("Add", "added to data"), "mul": ("Mul", "multiplied into data")}
_TRAPS_ON_INTEGERS = frozenset({"Div", "Mod", "Pow"})  # integer division by 0, a negative integer power: not run on every element
_ELEMENTWISE_NODES = 64  # the most elementwise nodes followed from a masked write's values to the masked gathers

SHAPE_INPUTS = {
    "Reshape": {1}, "Expand": {1}, "ConstantOfShape": {0}, "Tile": {1}, "Slice": {1, 2, 3, 4}, "Range": {0, 1, 2},
    "Resize": {2, 3}, "Upsample": {1}, "Pad": {1, 3}, "Unsqueeze": {1}, "Squeeze": {1}, "Split": {1}, "TopK": {1},
    "OneHot": {1}, "ReduceSum": {1}, "ReduceMean": {1}, "ReduceMax": {1}, "ReduceMin": {1}, "ReduceProd": {1},
}


def _feeds_a_shape(tensor, limit=10000):
    """True if ``tensor`` reaches, through any nodes, an input that TensorRT reads as a shape tensor."""
    seen, frontier = set(), [tensor]
    while frontier and len(seen) < limit:
        current = frontier.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for consumer in current.outputs:
            if any(t is current and i in SHAPE_INPUTS.get(consumer.op, ()) for i, t in enumerate(consumer.inputs)):
                return True
            if consumer.op not in ("Shape", "Size"):  # these read no value
                frontier.extend(consumer.outputs)
    return False


def _same_value(a, b):
    """Equal ints, or tensors that are one run-time value reshaped (the dynamo exporter gives a SymInt to a Slice
    through an Unsqueeze and to a SliceScatter through a Reshape)."""
    if isinstance(a, int) or isinstance(b, int):
        return a == b
    return _root(a) is _root(b)


def _root(tensor):
    node = _producer(tensor)
    while node is not None and node.op in ("Reshape", "Unsqueeze", "Squeeze", "Identity"):
        tensor = node.inputs[0]
        node = _producer(tensor)
    return tensor


def _whole_shape_of(tensor):
    """The tensor whose whole shape ``tensor`` is (``Shape(t)``, no start or end), else ``None``."""
    node = _producer(tensor)
    if node is None or node.op != "Shape" or node.attrs.get("start", 0) != 0 or node.attrs.get("end") is not None:
        return None
    return node.inputs[0]


def _producer(tensor):
    return tensor.inputs[0] if tensor is not None and len(tensor.inputs) == 1 else None


def _is_empty(tensor):
    return tensor is None or (getattr(tensor, "name", "") == "" and not getattr(tensor, "inputs", None))


def _attr(node, name, default=None):
    value = node.attrs.get(name, default)
    return value.decode() if isinstance(value, bytes) else value


def _dims(tensor):
    """Static shape: ints, symbolic names (str), ``None`` for unknown; ``None`` if the rank is not known."""
    shape = getattr(tensor, "shape", None)
    if shape is None:
        return None
    return tuple(d if isinstance(d, (int, np.integer)) and d >= 0 else (d if isinstance(d, str) and d else None) for d in shape)


def _rank(value):
    """The rank of an array or a tensor; for one without a shape (added by this pass), its Transpose's."""
    if isinstance(value, np.ndarray):
        return value.ndim
    dims = _dims(value)
    if dims is None and _producer(value) is not None and _producer(value).op == "Transpose" and "perm" in _producer(value).attrs:
        return len(_producer(value).attrs["perm"])
    return None if dims is None else len(dims)


def _fill_value(node):
    """A ``ConstantOfShape``'s value as an array (its ``value`` attribute, a onnx-graphsurgeon Constant or an array;
    0 where it has none, as ONNX says)."""
    value = node.attrs.get("value")
    return np.asarray(getattr(value, "values", 0 if value is None else value))


def _before_expand(tensor):
    """``X`` where ``tensor`` is ``Expand(X, shape)``, else ``tensor`` itself (an array or None too)."""
    node = None if isinstance(tensor, np.ndarray) else _producer(tensor)
    return node.inputs[0] if node is not None and node.op == "Expand" else tensor


def _through_int64_casts(tensor):
    """``tensor`` before the Casts to int64 that produce it, which keep an integer's value (a Cast to bool, float16 or
    int8 would not: a dimension through one is another number)."""
    while True:
        node = _producer(tensor)
        if node is None or not (node.op == "Cast" and _attr(node, "to", None) == dtypes.to_onnx(np.int64)
                                or node.op == "CastLike" and _np_dtype(node.inputs[1]) == np.int64) or _dtype_kind(node.inputs[0]) not in ("i", "u"):
            return tensor
        tensor = node.inputs[0]


def _same_dim(a, b):
    return a is not None and a == b


def _scalar(value):
    return int(value.reshape(-1)[0]) if value is not None and value.size == 1 else None


def _ints(value):
    return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


def _np_dtype(tensor):
    """The NumPy type of an onnx-graphsurgeon tensor (which holds a NumPy dtype, or ONNX's type where NumPy has none)."""
    dtype = getattr(tensor, "dtype", None)
    if dtype is None:
        return None
    if isinstance(dtype, (int, np.integer)):
        return dtypes.from_onnx(int(dtype))
    try:
        return np.dtype(dtype)
    except TypeError:
        return None


def _dtype_kind(tensor):
    dtype = _np_dtype(tensor)
    return dtype.kind if dtype is not None else None


def extremes_from_zero(graph: onnx.GraphProto) -> Iterator[str]:
    """A warning for each pair of max (min) reductions that is torch_geometric's ONNX-export branch of
    ``scatter(reduce="max")`` (SAGEConv's, ``global_max_pool``'s...), which it takes when ``torch.onnx.is_in_onnx_export()``,
    as under the TorchScript exporter: zeros, first reduced with the smallest (largest) value of ``src`` broadcast, then
    with ``src`` itself (by the same index, which a dynamic export broadcasts to each one's shape apart). That gives 0 where eager PyTorch gives a negative maximum (a positive
    minimum). The export computes what that branch says (and the rewrite keeps it); the dynamo exporter takes the eager
    branch. The lines name the node, after the rewrite (its reduction nodes are trt_scatter's)."""
    from onnx import helper, numpy_helper

    from trt_scatter.oracle.reductions import reduction_of

    producers = {output: node for node in graph.node for output in node.output}
    initializers = {init.name: init for init in graph.initializer}

    def zeros(tensor):
        """Whether ``tensor`` is a constant of zeros (read only for the reductions' data: a model's weights stay unread)."""
        if tensor in initializers:
            return not numpy_helper.to_array(initializers[tensor]).any()
        node = producers.get(tensor)
        return node is not None and (node.op_type == "ConstantOfShape" and all(not numpy_helper.to_array(a.t).any() for a in node.attribute)
                                     or node.op_type == "Constant" and any(a.name == "value" and not numpy_helper.to_array(a.t).any()
                                                                           for a in node.attribute))

    def reduced(node):
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        reduction = reduction_of(attributes.get("reduction", b""))
        usable = node.domain == "trt_scatter" and reduction in ("max", "min") and attributes.get("include_self", 1) == 1 and len(node.input) >= 3
        return reduction if usable else None

    def source(tensor, kept=("Identity",)):
        """``tensor`` before the ops ``kept`` that pass it on (PyTorch's own export leaves a chain of Identity nodes where
        the rewrite took its If nodes' branches)."""
        while producers.get(tensor) is not None and producers[tensor].op_type in kept:
            tensor = producers[tensor].input[0]
        return tensor

    def extreme_of(tensor, op_type, depth=4):
        """The tensor whose extreme (``op_type``: ReduceMin or ReduceMax) ``tensor`` broadcasts, within a few nodes."""
        node = producers.get(source(tensor))
        if node is None or depth < 0:
            return None
        if node.op_type == op_type:
            return source(node.input[0])
        return next((found for found in (extreme_of(t, op_type, depth - 1) for t in node.input) if found is not None), None)

    for second in graph.node:
        first = producers.get(source(second.input[0])) if second.input else None
        reduction = reduced(second)
        if first is None or reduction is None or reduced(first) != reduction or not zeros(source(first.input[0])):
            continue
        updates = source(second.input[2], ("Slice", "Identity"))  # a dynamic export's fit to the index
        if extreme_of(first.input[2], "ReduceMin" if reduction == "max" else "ReduceMax") == updates:
            which, sign = ("negative maximum", "below") if reduction == "max" else ("positive minimum", "above")
            yield (f"{second.op_type} node {second.name or second.output[0]!r} starts its targets at 0 and the "
                   f"{'smallest' if reduction == 'max' else 'largest'} value of its updates, as torch_geometric's scatter(reduce={reduction!r}) "
                   f"does under the TorchScript exporter (its ONNX-export branch): a target whose values all lie {sign} 0 gets 0 where "
                   f"eager PyTorch gives their {which}"
                   + ("; a softmax over it (torch_geometric's, GATConv's attention) comes out near 0 where scores lie far below 0"
                      if reduction == "max" else ""))
