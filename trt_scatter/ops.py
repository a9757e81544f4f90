"""The ``trt_scatter`` ONNX ops: the contract between models, TensorRT's ONNX parser and the plugins.

A node ``SliceScatter`` or ``ScatterUpdate`` in the domain ``trt_scatter`` (version 1, imported by
the model) becomes the plugin of the same name when TensorRT's ONNX parser reads the model after
:func:`trt_scatter.plugins.register`; every other part of trt-scatter (model writers, validation,
lowering, rewriting, the exporters, the data loader, the plugins themselves) reads what such a node
takes from here, so the contract is written once:

=================  ==================================================  =========================
op type            inputs (``[...]`` optional)                          attributes
=================  ==================================================  =========================
``SliceScatter``   data, updates, start, stop, step[, axes]             ``inplace`` (int 0 or 1)
``ScatterUpdate``  data, indices, updates, axis                         ``inplace`` (int 0 or 1)
=================  ==================================================  =========================

``data``, ``updates`` and the output share one element type; the index inputs are int32 or int64,
and those an :attr:`OpSignature.index_groups` entry ties together share one type (start, stop and
step do). ``inplace=1`` lets the plugin write into data's buffer (TensorRT's aliased plugin I/O).
A node with the attributes :data:`AOT_ATTRIBUTES` (``plugin_namespace="trt_scatter"``, ``aot=1``)
goes to the ahead-of-time plugins of :mod:`trt_scatter.plugins.aot` instead of the Python ones
(TensorRT >= 10.9; ``trt_scatter.passes.aot`` writes them, and ``axes`` where SliceScatter lacks it).
The semantics are the oracle's (:mod:`trt_scatter.oracle`); this module holds no rule about values.
"""

import dataclasses

DOMAIN = "trt_scatter"
VERSION = 1
ATTRIBUTES = {"inplace": (0, 1)}  #: attribute -> allowed int values; the first is the default
INDEX_TYPES = ("int32", "int64")  #: element types of the index inputs (NumPy names)
#: Attributes that TensorRT's ONNX parser reads from a plugin node (onnx-tensorrt importerUtils.cpp,
#: ``createPlugin``, 10.9+): the plugin's namespace, and ``aot=1`` for its AOT implementation.
AOT_ATTRIBUTES = {"plugin_namespace": DOMAIN, "aot": 1}


@dataclasses.dataclass(frozen=True)
class OpSignature:
    """What one ``trt_scatter`` op takes.

    ``inputs``: input names in order; those after the first ``min_inputs`` are optional.
    ``index_inputs``: each index input -> the index input whose type it must share (itself when free).
    ``oracle``: the name of its function in :mod:`trt_scatter.oracle`.
    """

    name: str
    inputs: tuple
    min_inputs: int
    index_inputs: dict
    oracle: str

    @property
    def element_inputs(self):
        """The inputs that hold elements (data, updates): they share the output's type."""
        return tuple(name for name in self.inputs if name not in self.index_inputs)

    def usage(self):
        """``SliceScatter(data, updates, start, stop, step[, axes])``."""
        optional = "".join(f"[, {name}]" for name in self.inputs[self.min_inputs :])
        return f"{self.name}({', '.join(self.inputs[: self.min_inputs])}{optional})"


SLICE_SCATTER = OpSignature(
    name="SliceScatter",
    inputs=("data", "updates", "start", "stop", "step", "axes"),
    min_inputs=5,
    index_inputs={"start": "start", "stop": "start", "step": "start", "axes": "axes"},
    oracle="slice_scatter",
)
SCATTER_UPDATE = OpSignature(
    name="ScatterUpdate",
    inputs=("data", "indices", "updates", "axis"),
    min_inputs=4,
    index_inputs={"indices": "indices", "axis": "axis"},
    oracle="scatter_update",
)
OPS = {op.name: op for op in (SLICE_SCATTER, SCATTER_UPDATE)}


def is_trt_scatter(node):
    """True for a node of the ``trt_scatter`` domain (an ``onnx.NodeProto`` or an onnx-graphsurgeon ``Node``)."""
    return node.domain == DOMAIN


def trt_scatter_ops(model):
    """The op types of the ``trt_scatter`` nodes of ``model`` (an ``onnx.ModelProto``), If/Loop bodies
    included, sorted: empty for a model that needs none of trt-scatter's plugins."""
    from trt_scatter.passes.validate import all_nodes

    return sorted({node.op_type for node in all_nodes(model.graph) if is_trt_scatter(node)})


def register_onnx_schemas():
    """Registers the ops' ONNX schemas (from :data:`OPS`) with ``onnx.defs``; idempotent.

    Then ``onnx.checker.check_model(model, full_check=True)`` checks ``trt_scatter`` nodes like
    standard ones (input count, types, the ``inplace`` attribute), ONNX shape inference gives
    their output data's type and shape, and onnxscript (``torch.onnx.export(dynamo=True)``)
    can call them (it raises a ``SchemaError`` for a custom op it finds no schema for).
    """
    import onnx
    import onnx.defs

    for signature in OPS.values():
        if not onnx.defs.has(signature.name, DOMAIN):
            onnx.defs.register_schema(_onnx_schema(signature, onnx))


def _onnx_schema(signature, onnx):
    from onnx.defs import OpSchema

    def parameter(name, type_str, optional=False):
        option = OpSchema.FormalParameterOption.Optional if optional else OpSchema.FormalParameterOption.Single
        return OpSchema.FormalParameter(name, type_str, param_option=option)

    # Element types: every tensor type the ONNX in use knows, but strings and complex numbers.
    identity = onnx.defs.get_schema("Identity").type_constraints[0].allowed_type_strs
    elements = [t for t in identity if t.startswith("tensor(") and t not in ("tensor(string)", "tensor(complex64)", "tensor(complex128)")]
    # One type variable per index group (start/stop/step share one), so the checker ties them as ops.py says.
    groups = {}
    for name, group in signature.index_inputs.items():
        groups.setdefault(group, f"I{len(groups)}")
    types = {name: groups[group] for name, group in signature.index_inputs.items()}
    inputs = [parameter(name, types.get(name, "T"), optional=i >= signature.min_inputs) for i, name in enumerate(signature.inputs)]
    constraints = [("T", elements, "data, updates and the output")]
    constraints += [(variable, [f"tensor({name})" for name in INDEX_TYPES], f"index inputs {', '.join(n for n, g in types.items() if g == variable)}") for variable in groups.values()]
    attributes = [OpSchema.Attribute(name, onnx.helper.make_attribute(name, allowed[0]), f"int, one of {allowed}") for name, allowed in ATTRIBUTES.items()]
    # The AOT form's attributes (trt_scatter.passes.aot), optional: the checker must know them too.
    attributes += [OpSchema.Attribute(name, OpSchema.AttrType.STRING if isinstance(value, str) else OpSchema.AttrType.INT,
                                      f"{value!r} for trt-scatter's AOT plugins", required=False) for name, value in AOT_ATTRIBUTES.items()]  # fmt: skip
    schema = OpSchema(
        signature.name, DOMAIN, VERSION, f"trt-scatter's {signature.usage()}: the oracle's {signature.oracle} (trt_scatter.oracle).",
        inputs=inputs, outputs=[parameter("output", "T")], type_constraints=constraints, attributes=attributes,
    )
    if hasattr(schema, "set_type_and_shape_inference_function"):  # onnx >= 1.16
        schema.set_type_and_shape_inference_function(_output_is_data)
    return schema


def _output_is_data(context):
    """Shape inference: the output has data's type and shape."""
    data = context.get_input_type(0)
    if data is not None and data.HasField("tensor_type"):
        context.set_output_type(0, data)
