"""What an ONNX model says about its tensors before anything runs: constant values, static shapes, element types.

Every pass (and the data loader) asks the same three questions of a tensor name, so they are
answered here once per model (:attr:`trt_scatter.model.Model.tensors`)::

    tensors = ModelTensors(model)
    tensors.constant("step")   # np.ndarray, or None if the value is not fixed by the model
    tensors.shape("data")      # (4, -1, 8): -1 for a dimension that is not known; None if the rank is not
    tensors.symbolic_shape("data")  # (4, "seq", None): symbolic dimensions by name (dim_param)
    tensors.dtype("updates")   # np.dtype, or None if not known

Constants are initializers and ``Constant`` nodes (``value``, ``value_int(s)``, ``value_float(s)``)
of the main graph and of every If/Loop/Scan body (one table serves every scope; a body may name its own inputs like an
outer tensor, and two sibling graphs, an If's branches, may each make a tensor of one name: :meth:`ModelTensors.within`
answers for their nodes then), and small integer tensors that standard ops compute from them alone (a ``Cast``
or ``Unsqueeze`` of a constant, :func:`fold`); one kept in external data has a value once read
(:meth:`trt_scatter.model.Model.read` reads the index constants from the model's folder; nothing
is read from the working directory), and its shape and type in any case. Shapes and types come
from the constants, the graph's inputs, outputs and ``value_info``, and one run of ONNX shape
inference (a model it cannot read keeps what it declares). The ``trt_scatter`` ops' schemas are
registered first (:func:`trt_scatter.ops.register_onnx_schemas`), so that run gives their outputs
data's type and shape and carries on past them: one run, however many scatter nodes a model chains.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from trt_scatter import dtypes
from trt_scatter.model.graph import DEFAULT_DOMAINS, all_graphs, declared_dims, names_made_in, opset_version, own_names
from trt_scatter.ops import is_trt_scatter, register_onnx_schemas

if TYPE_CHECKING:
    from collections.abc import Sequence

    import onnx

#: The most elements a folded constant may take in or give out (:func:`fold`): index values, even a
#: coordinate per element as PyTorch's TorchScript exporter writes them, not weights.
FOLD_LIMIT = 1 << 24
#: Standard ops whose outputs are not a function of their inputs.
_NOT_FOLDED = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli"}


def fold(node: onnx.NodeProto, values: Sequence[np.ndarray | None], opset: int | None) -> list[np.ndarray] | None:
    """The outputs of one standard ONNX ``node`` (a ``NodeProto``) on constant inputs ``values`` (a list in
    the node's input order, ``None`` for an input left out) by ONNX's evaluator at default-domain
    ``opset``; ``None`` where it cannot say (an op it lacks, randomness, subgraphs, more than
    :data:`FOLD_LIMIT` elements in or out). The one constant folder of trt-scatter."""
    from onnx import AttributeProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    if (node.domain not in DEFAULT_DOMAINS or node.op_type in _NOT_FOLDED
            or any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute)):  # fmt: skip
        return None
    given = {name: value for name, value in zip(node.input, values) if name}
    if any(value is None for value in given.values()) or sum(np.size(value) for value in given.values()) > FOLD_LIMIT:
        return None
    outputs = [name for name in node.output if name]
    alone = helper.make_node(node.op_type, list(node.input), list(node.output))
    alone.attribute.extend(node.attribute)
    graph = helper.make_graph([alone], "fold", [], [helper.make_tensor_value_info(name, 0, None) for name in outputs],
                              initializer=[numpy_helper.from_array(np.asarray(value), name) for name, value in given.items()])
    opsets = [] if opset is None else [helper.make_opsetid("", opset)]
    try:
        with np.errstate(all="ignore"):  # a constant Div by 0 folds as NumPy computes it, without NumPy's lines of warning
            results = [np.asarray(value) for value in ReferenceEvaluator(helper.make_model(graph, opset_imports=opsets)).run(outputs, {})]
    except Exception:  # an op the evaluator lacks, values it refuses: not known here
        return None
    return results if all(result.size <= FOLD_LIMIT for result in results) else None


class ModelTensors:
    """Constant values, shapes and element types of the tensors of ``model`` (an ``onnx.ModelProto``)."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        graphs = list(all_graphs(model.graph))
        self._constant_protos = {init.name: init for graph in reversed(graphs) for init in graph.initializer}  # the main graph's win
        for graph in graphs:
            self._constant_protos.update(_constant_nodes(graph))
        self._producers = {output: node for graph in graphs for node in graph.node for output in node.output if output}
        self._graph_inputs = {value.name for value in model.graph.input}
        self._constants = {}
        self._types = _value_types(model)
        self._scopes = None  # the names each graph from the main one to this view's makes, once a subgraph asks (within)

    def within(self, graph: onnx.GraphProto) -> ModelTensors:
        """These tensors as the nodes of ``graph``, a subgraph (an If branch, a Loop or Scan body) of this one's graph,
        see them: a name it declares as its own input or initializer (:func:`~trt_scatter.model.graph.own_names`) is
        that tensor, of the type and shape ``graph`` declares, not the outer tensor of the same name, whether the main graph
        or an enclosing subgraph made it (ONNX's checker takes a Loop body's carried value named like a model input); a
        tensor its nodes make is theirs, not a sibling graph's of the same name (both branches of an If may make a
        ``start``). Where ``graph`` names none of the outer names and makes none a sibling makes, the view shares this
        object's tables."""
        if self._scopes is None:
            self._scopes = (names_made_in(self.model.graph),)
        made_here = names_made_in(graph)
        shadowing = {name for name in own_names(graph) if any(name in scope for scope in self._scopes)}
        shadowing |= {init.name for init in graph.initializer if self._constant_protos.get(init.name) is not init}  # a sibling's of one name
        producers = {output: node for node in graph.node for output in node.output if output}
        constants = _constant_nodes(graph)
        # a tensor a sibling graph (the other If branch) also makes: the tables hold one graph's node of that name
        remade = {name for name, node in producers.items()
                  if self._producers.get(name) is not node or self._constant_protos.get(name) is not constants.get(name)}
        inner = object.__new__(ModelTensors)
        inner.__dict__.update(self.__dict__)
        inner._scopes = (*self._scopes, made_here)
        if not shadowing and not remade:
            return inner
        own = {init.name: init for init in graph.initializer if init.name in shadowing} | {name: constants[name] for name in remade if name in constants}
        inner._constant_protos = {name: proto for name, proto in self._constant_protos.items() if name not in shadowing | remade} | own
        inner._producers = {name: node for name, node in self._producers.items() if name not in shadowing} | {name: producers[name] for name in remade}
        inner._constants = {}  # what the outer tensors fold to may differ inside
        if not shadowing:
            return inner
        inner._graph_inputs = self._graph_inputs - shadowing  # a body's input: its shape may change from one iteration to the next
        inner._types = {name: known for name, known in self._types.items() if name not in shadowing}
        inner._types.update(_declared_in([value for value in graph.input if value.name in shadowing]))
        return inner

    def constant(self, name: str) -> np.ndarray | None:
        """The value of ``name`` if the model fixes it, else ``None``: an initializer, a ``Constant``
        node, or a small integer tensor that standard ops compute from such values alone (:meth:`_folded`)."""
        if name not in self._constants:
            self._constants[name] = None  # while it is computed: a cycle is no constant
            value = _to_array(self._constant_protos.get(name))
            if value is None and name in self._producers and name not in self._constant_protos:
                value = self._folded(self._producers[name], name)
            self._constants[name] = value
        return self._constants[name]

    def shape_free(self, name: str) -> np.ndarray | None:
        """The values of ``name`` in every run, where no shape sets them: a constant (:meth:`constant`), a Where whose two
        branches are the same constant or whose condition is one, or a Cast or Identity of such; else ``None``. PyTorch's
        exporters wrap an index that may be negative, ``Where(i + n < 0, i, Where(i < 0, i + n, i))`` with ``n`` a
        dimension: ``i`` in every run where ``i >= 0``, whatever ``n``."""
        value = self.constant(name)
        node = self._producers.get(name)
        if value is not None or node is None or node.op_type not in ("Where", "Cast", "Identity") or node.domain not in DEFAULT_DOMAINS:
            return value
        if node.op_type != "Where":  # the values as they are (a Cast of an index: to an index type, which holds them)
            return self.shape_free(node.input[0])
        condition = self.constant(node.input[0])
        if condition is not None and (condition.all() or not condition.any()):
            return self.shape_free(node.input[1 if condition.all() else 2])
        taken, other = self.shape_free(node.input[1]), self.shape_free(node.input[2])
        return taken if taken is not None and other is not None and taken.shape == other.shape and np.array_equal(taken, other) else None

    def unwrapped(self, name: str) -> tuple[np.ndarray, str] | None:
        """``(i, n)``: the index values ``i`` (shape-free, :meth:`shape_free`) and the tensor ``n`` of the dimension, where
        ``name`` is PyTorch's wrap of ``i`` over it, ``Where(i + n < 0, i, Where(i < 0, i + n, i))``: every value in
        [-n, n) counts, the negative ones from the end. ``None`` for anything else."""
        outer = self._producers.get(name)
        if outer is None or outer.op_type != "Where" or outer.domain not in DEFAULT_DOMAINS or len(outer.input) != 3:
            return None
        given, inner = self.shape_free(outer.input[1]), self._producers.get(outer.input[2])
        if given is None or inner is None or inner.op_type != "Where" or len(inner.input) != 3:
            return None
        test, shifted = self.constant(inner.input[0]), self._producers.get(inner.input[1])  # i < 0 (an exporter folds it), i + n
        if test is None:
            less = self._producers.get(inner.input[0])
            test = None if less is None or less.op_type != "Less" or not _equal(self.shape_free(less.input[0]), given) else given < 0
        below = self._producers.get(outer.input[0])  # i + n < 0, of the same sum
        if (test is None or not np.array_equal(test, given < 0) or not _equal(self.shape_free(inner.input[2]), given)
                or below is None or below.op_type != "Less" or below.input[0] != inner.input[1]
                or shifted is None or shifted.op_type != "Add" or len(shifted.input) != 2):
            return None
        addends = [(name, self.shape_free(name)) for name in shifted.input]
        dimension = [name for name, value in addends if value is None]  # i and a dimension, not a constant
        return (given, dimension[0]) if len(dimension) == 1 and any(_equal(value, given) for _, value in addends) else None

    def _folded(self, node, name):
        """The value of the integer output ``name`` of ``node``, folded (:func:`fold`) from constant inputs, or
        ``None``. Exporters leave such chains (``step = Cast(Constant)``, ``indices = Unsqueeze(9)``); what they
        compute is what TensorRT will, so index values are known before it runs. Integer and boolean outputs only:
        index values and conditions, not weights."""
        dtype = self._types.get(name, (None, None))[0]
        if dtype is None or dtype.kind not in "iub":  # and booleans: an If's condition
            return None
        if node.op_type in ("Shape", "Size") and node.domain in DEFAULT_DOMAINS and node.input and self.constant(node.input[0]) is None:
            return self._of_static_shape(node)
        values = [self.constant(input_name) if input_name else None for input_name in node.input]
        results = fold(node, values, opset_version(self.model))
        return None if results is None else dict(zip([n for n in node.output if n], results)).get(name)

    def _of_static_shape(self, node):
        """A ``Shape`` (its ``start``/``end``: negative counts from the end, both clamped to the rank, as slicing does) or
        ``Size`` of a graph input or a constant whose shape the model fixes: what TensorRT, too, builds as a constant.
        ``None`` otherwise, also for a tensor a node computes: its declared shape (``value_info``) may be stale, and a
        run gives the real one (onnxruntime warns and goes on)."""
        if node.input[0] not in self._constant_protos and node.input[0] not in self._graph_inputs:
            return None
        shape = self.shape(node.input[0])
        if shape is None or -1 in shape:
            return None
        if node.op_type == "Size":
            return np.array(math.prod(shape), np.int64)
        bounds = {attribute.name: attribute.i for attribute in node.attribute if attribute.name in ("start", "end")}
        return np.array(shape[bounds.get("start", 0) : bounds.get("end", len(shape))], np.int64)

    def shape(self, name: str) -> tuple[int, ...] | None:
        """The static shape of ``name`` as a tuple (-1 for each dimension not known), or ``None`` if its rank is not known."""
        dims = self.symbolic_shape(name)
        return None if dims is None else tuple(d if isinstance(d, int) else -1 for d in dims)

    def symbolic_shape(self, name: str) -> tuple[int | str | None, ...] | None:
        """The shape of ``name`` with each dimension an int, the name of a symbolic dimension (``dim_param``:
        dimensions of one name have one size), or ``None`` if not known; ``None`` if the rank is not known."""
        value = self.constant(name)
        if value is not None:
            return tuple(value.shape)
        tensor = _tensor_of(self._constant_protos.get(name))
        if tensor is not None:  # a constant whose value is not here (external data): its dims are
            return tuple(tensor.dims)
        return self._types.get(name, (None, None))[1]

    def dtype(self, name: str) -> np.dtype | None:
        """The NumPy element type of ``name`` (bfloat16 from ml_dtypes), or ``None`` if not known."""
        value = self.constant(name)
        if value is not None:
            return value.dtype
        tensor = _tensor_of(self._constant_protos.get(name))
        if tensor is not None:
            return dtypes.from_onnx(tensor.data_type)
        return self._types.get(name, (None, None))[0]


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
        return None  # numpy_helper would look in the working directory; Model.read reads index constants from the model's
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
    """``{name: (dtype or None, shape or None)}`` from what ``model`` declares and what one run of ONNX
    shape inference infers; outputs of ``trt_scatter`` nodes it could not type get their data's."""

    register_onnx_schemas()  # ONNX's inference then types trt_scatter outputs and goes on past them
    known = _declared(model)
    try:
        known.update(_declared(infer_shapes(model, data_prop=True, weights=False)))
    except Exception:  # a broken graph: keep what is declared
        pass
    for node in model.graph.node:  # in graph order, so chains of scatters are typed in one pass
        if is_trt_scatter(node) and node.input and len(node.output) == 1 and node.output[0] not in known and node.input[0] in known:
            known[node.output[0]] = known[node.input[0]]
    return known


#: Protobuf serializes at most 2 GiB: a model with this many bytes of initializers (a margin left for the rest) is
#: written with its weights in an external file.
SERIALIZE_LIMIT = 2**31 - 2**26
LARGE_INITIALIZER = 1 << 20  #: bytes: weights, never a shape or an index list that inference must read


def tensor_bytes(tensor: onnx.TensorProto) -> int:
    """About the bytes ``tensor`` takes in a serialized model, without protobuf's ``ByteSize``, which refuses a tensor over
    2 GiB (an LLM's embedding): its elements' bytes where it holds them (raw or typed) in a type NumPy knows."""
    import onnx

    dtype = dtypes.from_onnx(tensor.data_type)
    if tensor.data_location == onnx.TensorProto.EXTERNAL or dtype is None:
        return tensor.ByteSize()  # a reference to a file, or strings: small, or sized by protobuf
    return math.prod(tensor.dims) * dtype.itemsize


def model_bytes(model: onnx.ModelProto) -> int:
    """The bytes of the main graph's initializers and ``Constant`` values (:func:`tensor_bytes`): what decides whether
    protobuf can serialize the model (:data:`SERIALIZE_LIMIT`)."""
    values = [_value_of(node) for node in model.graph.node]
    return sum(tensor_bytes(tensor) for tensor in (*model.graph.initializer, *(value for value in values if value is not None)))


def infer_shapes(model: onnx.ModelProto, data_prop: bool = False, weights: bool = True) -> onnx.ModelProto:
    """``onnx.shape_inference.infer_shapes(model)`` on a copy whose main-graph initializers and ``Constant`` values over
    :data:`LARGE_INITIALIZER` bytes keep their name, type and shape but not their data (inference reads the values of
    shape inputs only), which come back afterwards unless ``weights`` is False: inference serializes the model, which
    protobuf refuses past 2 GiB, and with the weights it copies them several times over (a 1.5 GB model took 6-8x its
    weights in memory)."""
    import onnx

    graph = model.graph
    constants = [_value_of(node) for node in graph.node]
    if all(tensor_bytes(value) <= LARGE_INITIALIZER for value in (*graph.initializer, *(v for v in constants if v is not None))):
        return onnx.shape_inference.infer_shapes(model, data_prop=data_prop)
    light = onnx.ModelProto()
    _copy_fields(model, light, skip=("graph",))
    _copy_fields(graph, light.graph, skip=("initializer", "node"))
    stripped_initializers, stripped_nodes = [], []
    for index, initializer in enumerate(graph.initializer):
        if tensor_bytes(initializer) > LARGE_INITIALIZER:
            stripped_initializers.append(index)
            light.graph.initializer.add(name=initializer.name, data_type=initializer.data_type, dims=initializer.dims)
        else:
            light.graph.initializer.append(initializer)
    for index, (node, value) in enumerate(zip(graph.node, constants)):
        light.graph.node.append(node)
        if value is not None and tensor_bytes(value) > LARGE_INITIALIZER:
            stripped_nodes.append(index)
            stub = next(a for a in light.graph.node[index].attribute if a.name == "value").t
            stub.Clear()
            stub.MergeFrom(onnx.TensorProto(name=value.name, data_type=value.data_type, dims=value.dims))
    inferred = onnx.shape_inference.infer_shapes(light, data_prop=data_prop)
    if weights:
        for index in stripped_initializers:
            inferred.graph.initializer[index].CopyFrom(graph.initializer[index])
        for index in stripped_nodes:
            inferred.graph.node[index].CopyFrom(graph.node[index])
    return inferred


def _value_of(node):
    """The tensor of a ``Constant`` node's ``value`` attribute, else None."""
    if node.op_type != "Constant" or node.domain not in DEFAULT_DOMAINS:
        return None
    return next((attribute.t for attribute in node.attribute if attribute.name == "value"), None)


def _copy_fields(source, target, skip):
    for field, value in source.ListFields():
        if field.name in skip:
            continue
        if field.is_repeated:
            getattr(target, field.name).extend(value)
        elif field.type == field.TYPE_MESSAGE:
            getattr(target, field.name).CopyFrom(value)
        else:
            setattr(target, field.name, value)


def _constant_nodes(graph):
    """``{output: value attribute}`` of the ``Constant`` nodes of ``graph`` itself (not of the graphs it holds)."""
    return {node.output[0]: node.attribute[0] for node in graph.node
            if node.op_type == "Constant" and node.domain in DEFAULT_DOMAINS and len(node.output) == 1 and len(node.attribute) == 1}


def _declared(model):
    values = [value for graph in reversed(list(all_graphs(model.graph))) for value in (*graph.value_info, *graph.output, *graph.input)]
    return _declared_in(values)  # the main graph's, and a graph's inputs, win


def _declared_in(values):
    """``{name: (dtype, shape or None)}`` of the value infos ``values`` that declare a tensor type, the last one of a name winning."""
    types = {}
    for value in values:
        if value.type.HasField("tensor_type"):
            shape = declared_dims(value)
            types[value.name] = (dtypes.from_onnx(value.type.tensor_type.elem_type), None if shape is None else tuple(shape))
    return types


def _equal(value, other):
    return value is not None and np.array_equal(value, other)
