"""A reference for whole models: ONNX's own evaluator, with the ``trt_scatter`` ops from the oracle.

Every op that ``onnx.reference.ReferenceEvaluator`` implements runs as ONNX defines it; the
``trt_scatter`` nodes (``SliceScatter``, ``ScatterUpdate``) run :mod:`trt_scatter.oracle`, looked
up at call time, so the oracle stays the one source of their semantics. A model that mixes MatMul,
Conv or Sigmoid with plugin nodes runs here as it is, on any machine::

    from trt_scatter.reference import Reference

    outputs = Reference("model.onnx").run({"data": data, "updates": updates, ...})  # name -> array
"""

import os

import numpy as np
from onnx.reference.op_run import OpRun

from trt_scatter import oracle
from trt_scatter.ops import DOMAIN, OPS


class _TrtScatterOp(OpRun):
    """A ``trt_scatter`` node run by its oracle function (``inplace`` and the AOT form's attributes
    change no value)."""

    op_domain = DOMAIN

    def _run(self, *inputs, inplace=None, aot=None, plugin_namespace=None):
        signature = OPS[self.onnx_node.op_type]
        named = {name: value for name, value in zip(signature.inputs, inputs) if value is not None}
        return (getattr(oracle, signature.oracle)(**named),)


# onnx.reference matches a custom op by its class name and op_domain.
REFERENCE_OPS = [type(name, (_TrtScatterOp,), {}) for name in OPS]


class Reference:
    """Runs an ONNX model (a path or an ``onnx.ModelProto``) with :data:`REFERENCE_OPS` for the ``trt_scatter`` nodes.

    The evaluator is made once per instance; :meth:`run` takes a feed dict and returns
    ``{output name: array}``. The oracle's :class:`~trt_scatter.oracle.ScatterInputError` reaches the
    caller unchanged, naming the op, the input and the rule.
    """

    def __init__(self, model):
        from onnx.reference import ReferenceEvaluator

        self.evaluator = ReferenceEvaluator(os.fspath(model) if isinstance(model, os.PathLike) else model, new_ops=REFERENCE_OPS)

    @property
    def output_names(self):
        return list(self.evaluator.output_names)

    def run(self, feeds):
        values = self.evaluator.run(None, {name: np.asarray(value) for name, value in feeds.items()})
        return dict(zip(self.output_names, values))
