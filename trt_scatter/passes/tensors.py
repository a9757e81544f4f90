"""What an ONNX model says about its tensors before anything runs: constant values, static shapes, element types.

Every pass (and the data loader) asks the same three questions of a tensor name, so they are
answered here once::

    tensors = ModelTensors(model)
    tensors.constant("step")   # np.ndarray, or None if the value is not fixed by the model
    tensors.shape("data")      # (4, -1, 8): -1 for a dimension that is not known; None if the rank is not
    tensors.symbolic_shape("data")  # (4, "seq", None): symbolic dimensions by name (dim_param)
    tensors.dtype("updates")   # np.dtype, or None if not known

Constants are initializers and ``Constant`` nodes (``value``, ``value_int(s)``, ``value_float(s)``)
of the main graph, and small integer tensors that standard ops compute from them alone (a ``Cast``
or ``Unsqueeze`` of a constant, folded by ONNX's evaluator); one kept in external data has a value once loaded (``validate.load_model`` loads
the index constants; nothing is read from the working directory), and its shape and type in any
case. Shapes and types come from the constants, the graph's inputs, outputs and
``value_info``, and ONNX shape inference where it works (a model it cannot read keeps what it
declares). ONNX shape inference does not know the ``trt_scatter`` ops, so their outputs are given
data's shape and type (what :mod:`trt_scatter.ops` says they have) and inference runs again from
there: tensors computed from a scatter's output are known too.

Passes that add nodes take their new names from :func:`fresh_name`, avoiding :func:`graph_names`.
"""

import os

import numpy as np

from trt_scatter.ops import is_trt_scatter
from trt_scatter.oracle.rules import BFLOAT16


DEFAULT_DOMAINS = ("", "ai.onnx")  #: the two names of ONNX's own domain


def opset_version(model, domain=""):
    """The version at which ``model`` imports ``domain`` (ONNX's own by default), or ``None``."""
    names = DEFAULT_DOMAINS if domain in DEFAULT_DOMAINS else (domain,)
    return next((opset.version for opset in model.opset_import if opset.domain in names), None)


def graph_names(graph):
    """Every node and tensor name of ``graph``: the names a pass that adds nodes must avoid."""
    names = {name for node in graph.node for name in (node.name, *node.input, *node.output)}
    names |= {init.name for init in graph.initializer}
    names |= {value.name for value in (*graph.input, *graph.output, *graph.value_info)}
    return names


def fresh_name(hint, taken):
    """``hint``, or ``hint_1``, ``hint_2``... whichever ``taken`` (a set of names) lacks first; adds it to ``taken``."""
    name, counter = hint, 0
    while name in taken:
        counter += 1
        name = f"{hint}_{counter}"
    taken.add(name)
    return name


class ModelTensors:
    """Constant values, shapes and element types of the tensors of ``model`` (an ``onnx.ModelProto`` or a path)."""

    def __init__(self, model):
        import onnx

        if isinstance(model, (str, os.PathLike)):
            model = onnx.load(os.fspath(model))
        self.model = model
        graph = model.graph
        self._constant_protos = {init.name: init for init in graph.initializer}
        for node in graph.node:
            if node.op_type == "Constant" and node.domain in DEFAULT_DOMAINS and len(node.output) == 1 and len(node.attribute) == 1:
                self._constant_protos[node.output[0]] = node.attribute[0]
        self._producers = {output: node for node in graph.node for output in node.output if output}
        self._constants = {}
        self._types = _value_types(model)

    def constant(self, name):
        """The value of ``name`` if the model fixes it, else ``None``: an initializer, a ``Constant``
        node, or a small integer tensor that standard ops compute from such values alone (:meth:`_folded`)."""
        if name not in self._constants:
            self._constants[name] = None  # while it is computed: a cycle is no constant
            value = _to_array(self._constant_protos.get(name))
            if value is None and name in self._producers and name not in self._constant_protos:
                value = self._folded(self._producers[name])
            self._constants[name] = value
        return self._constants[name]

    def _folded(self, node):
        """The value of the integer output of ``node`` that ONNX's evaluator computes from constant inputs,
        or ``None``. Exporters leave such chains (``step = Cast(Constant)``, ``indices = Unsqueeze(9)``);
        what they compute is what TensorRT will, so index values are known before it runs. Only
        integer outputs (index values, not weights) from at most :data:`FOLDED_ELEMENTS` input
        elements, of deterministic standard ops without subgraphs."""
        from onnx import AttributeProto, helper, numpy_helper
        from onnx.reference import ReferenceEvaluator

        output = next((name for name in node.output if name), None)
        dtype = self._types.get(output, (None, None))[0]
        if (node.domain not in DEFAULT_DOMAINS or node.op_type in _NOT_FOLDED or dtype is None or dtype.kind not in "iu"
                or any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute)):  # fmt: skip
            return None
        values = {name: self.constant(name) for name in node.input if name}
        if any(value is None for value in values.values()) or sum(value.size for value in values.values()) > FOLDED_ELEMENTS:
            return None
        alone = helper.make_node(node.op_type, list(node.input), list(node.output))
        alone.attribute.extend(node.attribute)
        graph = helper.make_graph([alone], "fold", [], [helper.make_tensor_value_info(output, 0, None)],
                                  initializer=[numpy_helper.from_array(value, name) for name, value in values.items()])
        version = opset_version(self.model)
        opsets = [] if version is None else [helper.make_opsetid("", version)]
        try:
            return np.asarray(ReferenceEvaluator(helper.make_model(graph, opset_imports=opsets)).run([output], {})[0])
        except Exception:  # an op the evaluator lacks, values it refuses: not known here
            return None

    def shape(self, name):
        """The static shape of ``name`` as a tuple (-1 for each dimension not known), or ``None`` if its rank is not known."""
        dims = self.symbolic_shape(name)
        return None if dims is None else tuple(d if isinstance(d, int) else -1 for d in dims)

    def symbolic_shape(self, name):
        """The shape of ``name`` with each dimension an int, the name of a symbolic dimension (``dim_param``:
        dimensions of one name have one size), or ``None`` if not known; ``None`` if the rank is not known."""
        value = self.constant(name)
        if value is not None:
            return tuple(value.shape)
        tensor = _tensor_of(self._constant_protos.get(name))
        if tensor is not None:  # a constant whose value is not here (external data): its dims are
            return tuple(tensor.dims)
        return self._types.get(name, (None, None))[1]

    def dtype(self, name):
        """The NumPy element type of ``name`` (bfloat16 from ml_dtypes), or ``None`` if not known."""
        value = self.constant(name)
        if value is not None:
            return value.dtype
        tensor = _tensor_of(self._constant_protos.get(name))
        if tensor is not None:
            return _np_dtype(tensor.data_type)
        return self._types.get(name, (None, None))[0]


#: At most this many input elements for a node folded into a constant (index values are small).
FOLDED_ELEMENTS = 1 << 16
#: Standard ops whose outputs are not a function of their inputs.
_NOT_FOLDED = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli"}


def _tensor_of(proto):
    """The TensorProto of an initializer or of a ``Constant`` node's ``value``, else ``None``."""
    from onnx import AttributeProto

    if isinstance(proto, AttributeProto):
        return proto.t if proto.name == "value" else None
    return proto


def _to_array(proto):
    """An initializer or a ``Constant`` node's attribute as an array; ``None`` for what has no plain value."""
    from onnx import numpy_helper
    from onnx.external_data_helper import uses_external_data

    if proto is None:
        return None
    tensor = _tensor_of(proto)
    if tensor is not None and uses_external_data(tensor):
        return None  # numpy_helper would look in the working directory; validate.load_model reads index constants from the model's
    try:
        if tensor is not None:
            return numpy_helper.to_array(tensor)
        plain = {"value_int": (proto.i, np.int64), "value_ints": (list(proto.ints), np.int64),
                 "value_float": (proto.f, np.float32), "value_floats": (list(proto.floats), np.float32)}
        if proto.name in plain:
            value, dtype = plain[proto.name]
            return np.array(value, dtype=dtype)
    except Exception:  # a type NumPy lacks: no value to show
        return None
    return None  # sparse_value, strings: never an index or a shape


def _value_types(model):
    """``{name: (dtype or None, shape or None)}`` from what ``model`` declares and what ONNX infers,
    with the outputs of ``trt_scatter`` nodes given their data's type and shape."""
    import onnx

    declared = _declared(model)
    scatters = [node for node in model.graph.node if is_trt_scatter(node) and node.input and len(node.output) == 1]
    given = {}  # outputs of trt_scatter nodes -> their data's (dtype, shape)
    working = model
    while True:
        try:
            known = {**declared, **_declared(onnx.shape_inference.infer_shapes(working, data_prop=True))}
        except Exception:  # no schema, a model over 2 GiB, a broken graph: keep what is declared
            known = {**declared, **given}
        added = {
            node.output[0]: known[node.input[0]]
            for node in scatters
            if node.output[0] not in known and node.input[0] in known
        }
        if not added:  # at most one round per trt_scatter node
            return known
        given.update(added)
        working = onnx.ModelProto()
        working.CopyFrom(model)
        working.graph.value_info.extend(_value_info(name, *info) for name, info in given.items())


def _declared(model):
    graph = model.graph
    types = {}
    for value in list(graph.value_info) + list(graph.output) + list(graph.input):  # inputs win
        if value.type.HasField("tensor_type"):
            tensor_type = value.type.tensor_type
            shape = None
            if tensor_type.HasField("shape"):
                shape = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor_type.shape.dim)
            types[value.name] = (_np_dtype(tensor_type.elem_type), shape)
    return types


def _np_dtype(elem_type):
    from onnx import TensorProto, helper

    if elem_type == TensorProto.UNDEFINED:
        return None
    if elem_type == TensorProto.BFLOAT16 and BFLOAT16 is not None:
        return BFLOAT16
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except Exception:
        return None


def _value_info(name, dtype, shape):
    from onnx import helper

    try:
        elem_type = helper.np_dtype_to_tensor_dtype(dtype)
    except Exception:  # None, or a type ONNX cannot name: the shape is still worth giving
        elem_type = 0
    dims = None if shape is None else [d if isinstance(d, str) or (d is not None and d >= 0) else None for d in shape]
    return helper.make_tensor_value_info(name, elem_type, dims)
