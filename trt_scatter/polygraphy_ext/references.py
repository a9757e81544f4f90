"""trt-scatter's ops in polygraphy's ``pluginref`` backend, so ``polygraphy run --pluginref`` runs them.

``pluginref`` executes an ONNX graph node by node with NumPy functions from
``polygraphy.backend.pluginref.references.OP_REGISTRY``; an op without an entry stops the run.
Importing this module adds:

- ScatterElements, ScatterND, SliceScatter and ScatterUpdate, each calling :mod:`trt_scatter.oracle`
  (looked up at call time, so the oracle stays the one source of semantics);
- the standard ONNX ops that native lowerings of the scatter ops are built from (constants,
  shape arithmetic, gathers, reshapes), run by ONNX's own reference evaluator (``onnx.reference``),
  so a whole lowered graph runs on the oracle's side too. Ops polygraphy already knows keep
  polygraphy's implementation.

Importing it twice is harmless: the registry is a dict.
"""

import functools

from polygraphy.backend.pluginref.references import OP_REGISTRY, register

from trt_scatter import oracle
from trt_scatter.oracle.rules import ScatterInputError

SCATTER_OPS = ("ScatterElements", "ScatterND", "SliceScatter", "ScatterUpdate")

# Stable in signature from opset 13 on (the evaluator runs each node at the newest opset).
LOWERING_OPS = (
    "Abs", "Add", "And", "Cast", "Clip", "Concat", "Constant", "ConstantOfShape", "CumSum", "Div",
    "Equal", "Expand", "Flatten", "Gather", "GatherElements", "GatherND", "Greater", "GreaterOrEqual",
    "Less", "LessOrEqual", "Max", "Min", "Mod", "Mul", "Neg", "Not", "Or", "Range", "ReduceMax",
    "ReduceMin", "ReduceProd", "ReduceSum", "Reshape", "Shape", "Size", "Slice", "Split", "Squeeze",
    "Sub", "Tile", "Transpose", "Unsqueeze", "Where",
)  # fmt: skip


def _no_reduction(op, attrs):
    # The oracle implements plain replacement only, as IScatterLayer does.
    reduction = attrs.get("reduction", "none")
    if reduction != "none":
        raise ScatterInputError(op, "reduction", "must be 'none' (trt-scatter has no scatter reductions)", repr(reduction))


@register("ScatterElements")
def run_scatter_elements(attrs, data, indices, updates):
    _no_reduction("scatter_elements", attrs)
    return [oracle.scatter_elements(data, indices, updates, axis=attrs.get("axis", 0))]


@register("ScatterND")
def run_scatter_nd(attrs, data, indices, updates):
    _no_reduction("scatter_nd", attrs)
    return [oracle.scatter_nd(data, indices, updates)]


@register("SliceScatter")
def run_slice_scatter(attrs, data, updates, start, stop, step, axes=None):
    return [oracle.slice_scatter(data, updates, start, stop, step, axes)]


@register("ScatterUpdate")
def run_scatter_update(attrs, data, indices, updates, axis):
    return [oracle.scatter_update(data, indices, updates, axis)]


@functools.lru_cache(maxsize=None)
def _evaluator(node_bytes):
    import onnx
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(onnx.NodeProto.FromString(node_bytes))


def _run_with_onnx_reference(node, intermediate_tensors):
    import onnx_graphsurgeon as gs
    from onnx_graphsurgeon.exporters.onnx_exporter import OnnxExporter

    feeds = {}
    for tensor in node.inputs:
        if tensor.is_empty():
            continue
        feeds[tensor.name] = tensor.values if isinstance(tensor, gs.Constant) else intermediate_tensors[tensor.name]
    proto = OnnxExporter.export_node(node)
    outputs = _evaluator(proto.SerializeToString()).run(None, feeds)
    return {tensor.name: value for tensor, value in zip(node.outputs, outputs) if not tensor.is_empty()}


for _op in LOWERING_OPS:
    OP_REGISTRY.setdefault(_op, _run_with_onnx_reference)
