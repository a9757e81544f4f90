"""A reference for whole models: ONNX's own evaluator, with the scatter ops from the oracle.

Every op that ``onnx.reference.ReferenceEvaluator`` implements runs as ONNX defines it, at the
opsets the model imports; the four scatter ops run :mod:`trt_scatter.oracle` (looked up at call
time, so the oracle stays the one source of their semantics): the ``trt_scatter`` nodes
(``SliceScatter``, ``ScatterUpdate``), and ONNX's ``ScatterElements``/``ScatterND`` without a
reduction (the oracle has none; with one, ONNX's evaluator runs them). A model that mixes MatMul,
Conv or Sigmoid with plugin nodes runs here as it is, on any machine::

    from trt_scatter.reference import Reference

    outputs = Reference("model.onnx").run({"data": data, "updates": updates, ...})  # name -> array

``trt-scatter check`` compares with it, and ``polygraphy run --pluginref`` runs it once
trt-scatter is installed (:class:`trt_scatter.polygraphy_ext.ReferenceRunner`).
"""

import os

import numpy as np
from onnx.reference.op_run import OpRun
from onnx.reference.ops.op_scatter_elements import ScatterElements as _OnnxScatterElements
from onnx.reference.ops.op_scatternd import ScatterND as _OnnxScatterND

from trt_scatter import oracle
from trt_scatter.ops import DOMAIN, OPS
from trt_scatter.oracle.rules import ScatterInputError


class NodeInputError(ScatterInputError):
    """The oracle's :class:`~trt_scatter.oracle.ScatterInputError`, its message led by the node that got
    the inputs (``"ScatterUpdate node 'update': scatter_update: 'indices' ..."``; ``node``: that label)."""

    def __init__(self, node, err):
        from trt_scatter.passes.validate import node_label

        super().__init__(err.op, err.input_name, err.rule, err.value)
        self.node = node_label(node)  # the evaluator does not say where the node is in its graph
        self.args = (f"{self.node}: {err}",)


def _naming_the_node(run):
    """``run`` (an op's ``_run``) with the oracle's errors raised as :class:`NodeInputError`."""

    def named(self, *args, **kwargs):
        try:
            return run(self, *args, **kwargs)
        except ScatterInputError as err:  # the oracle's own: the scatter ops run no other node
            raise NodeInputError(self.onnx_node, err) from None

    return named


def run_trt_scatter(op_type, inputs):
    """The output of a ``trt_scatter`` node of ``op_type`` by its oracle function; ``inputs`` in the
    node's order (:data:`trt_scatter.ops.OPS`), ``None`` for an optional one left out."""
    signature = OPS[op_type]
    named = {name: value for name, value in zip(signature.inputs, inputs) if value is not None}
    return getattr(oracle, signature.oracle)(**named)


class _TrtScatterOp(OpRun):
    """A ``trt_scatter`` node run by its oracle function (``inplace`` and the AOT form's attributes
    change no value)."""

    op_domain = DOMAIN

    @_naming_the_node
    def _run(self, *inputs, inplace=None, aot=None, plugin_namespace=None):
        return (run_trt_scatter(self.onnx_node.op_type, inputs),)


def _no_reduction(reduction):
    return reduction in (None, "none", b"none")


class ScatterElements(_OnnxScatterElements):
    """ONNX's ScatterElements by the oracle; with a reduction, by ONNX's evaluator."""

    op_domain = ""

    @_naming_the_node
    def _run(self, data, indices, updates, axis=None, reduction=None):
        if not _no_reduction(reduction):
            return super()._run(data, indices, updates, axis=axis, reduction=reduction)
        return (oracle.scatter_elements(data, indices, updates, axis=axis or 0),)


class ScatterND(_OnnxScatterND):
    """ONNX's ScatterND by the oracle; with a reduction, by ONNX's evaluator."""

    op_domain = ""

    @_naming_the_node
    def _run(self, data, indices, updates, reduction=None):
        if not _no_reduction(reduction):
            return super()._run(data, indices, updates, reduction=reduction)
        return (oracle.scatter_nd(data, indices, updates),)


# onnx.reference matches a custom op by its class name and op_domain.
REFERENCE_OPS = [type(name, (_TrtScatterOp,), {}) for name in OPS] + [ScatterElements, ScatterND]


def _default_domain_as_empty(model):
    """``model``, or a copy of it that names the default domain "" where it says "ai.onnx" (the same
    domain to ONNX; its evaluator knows only "")."""
    import onnx

    from trt_scatter.passes.validate import all_nodes

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


class Reference:
    """Runs an ONNX model (a path or an ``onnx.ModelProto``) with :data:`REFERENCE_OPS` for the scatter ops.

    The evaluator is made once per instance; :meth:`run` takes a feed dict and returns
    ``{output name: array}``. The oracle's :class:`~trt_scatter.oracle.ScatterInputError` reaches the
    caller as a :class:`NodeInputError` (a ScatterInputError) naming the node, the op, the input
    and the rule.
    """

    def __init__(self, model):
        from onnx.reference import ReferenceEvaluator

        from trt_scatter.passes.validate import load_model

        if isinstance(model, (str, os.PathLike)):
            model = load_model(model, external_data=True)  # a file that is no model: one ModelError line
        self.model = model  #: the ModelProto it runs, as given or read
        self.evaluator = ReferenceEvaluator(_default_domain_as_empty(model), new_ops=REFERENCE_OPS)
        self._defaults = {init.name for init in model.graph.initializer}  # inputs an initializer fills when not fed

    @property
    def input_names(self):
        return list(self.evaluator.input_names)

    @property
    def output_names(self):
        return list(self.evaluator.output_names)

    def run(self, feeds):
        """``{output name: array}`` for ``feeds`` (``{input name: array}``: every input without an
        initializer, and nothing else, so that a misspelt name is an error, not an input left out)."""
        names = self.input_names
        known = ", ".join(names)
        for name in feeds:
            if name not in names:
                raise ValueError(f"Reference.run: {name!r} is not an input of the model (its inputs: {known})")
        for name in names:
            if name not in feeds and name not in self._defaults:
                raise ValueError(f"Reference.run: no feed for the model's input {name!r} (its inputs: {known})")
        values = self.evaluator.run(None, {name: np.asarray(value) for name, value in feeds.items()})
        return dict(zip(self.output_names, values))
