"""Refuse a model whose ``trt_scatter`` nodes break a rule that can be seen before TensorRT runs.

TensorRT hands a plugin its constant inputs (initializers, ``Constant`` nodes) only as device
buffers, so a step of 0 or an index out of range in a model's constants would reach the kernels,
which skip what they cannot write: the engine builds and silently does nothing. trt-scatter can
read those constants, so it checks every ``trt_scatter`` node first, with the oracle's rules:

- the node: an op of the domain (:mod:`trt_scatter.ops`), imported at version 1, one output,
  its inputs (no missing one, none too many), its attributes (``inplace``, the int 0 or 1; any
  other is an error, not ignored);
- element types: data numeric, updates (and the output) of data's type, index inputs int32 or
  int64, start/stop/step of one type;
- shapes and constant values (:mod:`.tensors`): the oracle's ``check_*`` rules on what is known
  (step 0, repeated or out-of-range axes, parameters of different lengths, updates that do not
  fit the slice or the indices, ScatterUpdate indices outside [0, s-1], which its spec says raise).

ONNX's own ``ScatterND`` and ``ScatterElements`` nodes get one check too: constant indices outside
[-s, s-1] of a known dimension, which ONNX calls an error and TensorRT's ``IScatterLayer`` does not
check at run time (the network builders clamp for that reason; a parsed node is not clamped).

The first broken rule raises :class:`ModelError`, whose message is one line naming the node, the
input or attribute, the rule and the value::

    SliceScatter node 'write_kv': slice_scatter: 'step' must not contain 0 (got [0])

:func:`validate` is the function; :class:`ValidateTrtScatter` the polygraphy loader::

    network = NetworkFromOnnxPath(ValidateTrtScatter("model.onnx"))           # a path passes through
    model = ValidateTrtScatter(OnnxFromPath("model.onnx"))()                  # so does a ModelProto
"""

import os

from polygraphy import util
from polygraphy.backend.base import BaseLoader

from trt_scatter import ops
from trt_scatter.log import first_line
from trt_scatter.oracle import rules
from trt_scatter.oracle.rules import ScatterInputError
from trt_scatter.oracle.scatter_update import axis_value, check_axis_shape, check_scatter_update_static
from trt_scatter.oracle.slice_scatter import check_slice_scatter_static
from trt_scatter.passes.tensors import DEFAULT_DOMAINS, ModelTensors, opset_version

# The first bytes of a serialized TensorRT engine: full TensorRT's plans start b"ftrt" (as
# torch-tensorrt's checks read them), TensorRT-RTX 1.7's b"vtrt" (seen in its plans).
ENGINE_MAGICS = (b"ftrt", b"vtrt")


class ModelError(ValueError):
    """A model breaks a rule that trt-scatter checks before TensorRT runs. The message is one line
    naming the node (:func:`node_label`), the input or attribute, the rule and the value."""


def node_label(node, index=None):
    """How every message names a node: ``SliceScatter node 'write_kv'``; one without a name by its
    position ``index`` in its graph (where the caller knows it) and its first output."""
    if node.name:
        return f"{node.op_type} node '{node.name}'"
    where = ([] if index is None else [f"#{index}"]) + ([f"(output {node.output[0]!r})"] if node.output else [])
    return " ".join([f"{node.op_type} node", *where])


def subgraphs(node):
    """The graphs ``node`` holds in its attributes (If branches, Loop and Scan bodies)."""
    for attribute in node.attribute:
        yield from attribute.graphs
        if attribute.HasField("g"):
            yield attribute.g


def validate(model, tensors=None):
    """Checks every ``trt_scatter`` node of ``model`` (a path or an ``onnx.ModelProto``); returns the ModelProto unchanged.

    Raises :class:`ModelError` for the first broken rule (a path that is no ONNX model included).
    ``tensors``: the model's :class:`ModelTensors`, where the caller has them already (shape
    inference need not run twice); otherwise they are read only for a model with scatter nodes.
    """
    if isinstance(model, (str, os.PathLike)):
        model = load_model(model)
    version = opset_version(model, ops.DOMAIN)
    for index, node in indexed_nodes(model.graph):
        if ops.is_trt_scatter(node):
            tensors = tensors or ModelTensors(model)
            _Node(node, index, tensors).check(version)
        elif node.op_type in STANDARD_SCATTERS and node.domain in DEFAULT_DOMAINS and len(node.input) >= 2:
            tensors = tensors or ModelTensors(model)
            _check_standard_scatter_indices(node, index, tensors)
    return model


STANDARD_SCATTERS = {"ScatterND": "scatter_nd", "ScatterElements": "scatter_elements"}  #: ONNX's own scatter ops, by the oracle's names


def _check_standard_scatter_indices(node, index, tensors):
    """Constant indices of ONNX's ScatterND/ScatterElements in [-s, s-1] for each known dimension they index."""
    from onnx import helper

    indices, data = tensors.constant(node.input[1]), tensors.shape(node.input[0])
    if indices is None or data is None or indices.dtype.kind not in "iu" or indices.ndim == 0:
        return  # other mistakes (types, shapes) are TensorRT's parser's to report
    op = STANDARD_SCATTERS[node.op_type]
    try:
        if node.op_type == "ScatterND":
            if indices.shape[-1] > len(data):
                return  # more index columns than data has axes: the parser says so
            dims = data[: indices.shape[-1]]
        else:
            axis = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "axis"), 0)
            dims = (data[rules.normalize_axis(op, "axis", axis, len(data))],)
        rules.check_indices_in_range(op, "indices", indices, dims, allow_negative=True)
    except ScatterInputError as err:
        raise ModelError(f"{node_label(node, index)}: {err}") from None


class ValidateTrtScatter(BaseLoader):
    """A polygraphy loader: validates the model (:func:`validate`) and returns what it wraps unchanged.

    ``model``: a path, an ``onnx.ModelProto``, or a loader of either (e.g. ``OnnxFromPath``). A
    path stays a path, so this composes with ``NetworkFromOnnxPath`` (which reads external data
    itself) as well as with loaders that take a ModelProto.
    """

    def __init__(self, model):
        self._model = model

    @util.check_called_by("__call__")
    def call_impl(self):
        model, _ = util.invoke_if_callable(self._model)
        validate(model)
        return model


def load_model(path, external_data=False):
    """Reads an ONNX model (:func:`read_model`). Of the tensors kept in external files it reads only
    the integer ones (:func:`_read_index_constants`); the others (weights) have no value here, and
    validation treats them as values it does not know. ``external_data``: all of them read
    (:func:`read_external_data`), for running the model."""
    model = read_model(path)
    if external_data:
        read_external_data(model, path)
    else:
        _read_index_constants(model, os.path.dirname(os.path.abspath(path)))
    return model


def read_model(path):
    """Reads an ONNX model without the data of its external tensors (:func:`external_tensors`),
    refusing by name what is not one (missing, a folder, empty, a TensorRT engine, other bytes)
    and external files that are not beside it or are too short."""
    import onnx
    from google.protobuf.message import DecodeError

    path = os.fspath(path)
    if os.path.isdir(path):
        raise ModelError(f"{path!r} is a directory, not an ONNX model")
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as err:
        raise ModelError(f"cannot read ONNX model {path!r}: {err.strerror or err}") from None
    if not head:
        raise ModelError(f"{path!r} is empty, not an ONNX model")
    if head in ENGINE_MAGICS:
        raise ModelError(f"{path!r} is a serialized TensorRT engine, not an ONNX model")
    try:
        model = onnx.load(path, load_external_data=False)  # GBs of weights need not load
    except (DecodeError, ValueError, RuntimeError, OSError) as err:
        raise ModelError(f"{path!r} is not an ONNX model ({first_line(err)})") from None
    if not model.HasField("graph") or not model.ir_version:
        raise ModelError(f"{path!r} is not an ONNX model (no graph or IR version)")
    _check_external_files(model, path)
    return model


def external_tensors(model):
    """The tensors ``model`` keeps in external files (initializers and ``Constant`` values, subgraphs included)."""
    from onnx.external_data_helper import uses_external_data

    return [tensor for _, tensor in _constant_tensors(model.graph) if uses_external_data(tensor)]


def read_external_data(model, path):
    """Reads into ``model`` the external data of its tensors from the folder of ``path`` (the model's
    file), wherever the process runs from; a ModelError naming the file if one cannot be read."""
    folder = os.path.dirname(os.path.abspath(path))
    for tensor in external_tensors(model):
        try:
            _load_external(tensor, folder)
        except Exception as err:  # onnx raises ValidationError, OSError... for a missing or short file
            raise ModelError(f"cannot read the external data of {os.fspath(path)!r}: {first_line(err)}") from None


def _check_external_files(model, path):
    """Every file that holds a tensor of the model is beside it and long enough (TensorRT's parser
    would fail on it with its own words, as if the model were wrong)."""
    from onnx.external_data_helper import ExternalDataInfo

    folder = os.path.dirname(os.path.abspath(path))
    for name, tensor in _constant_tensors(model.graph):
        if tensor.data_location != tensor.EXTERNAL:
            continue
        info = ExternalDataInfo(tensor)
        file = os.path.join(folder, info.location)
        if not os.path.isfile(file):
            raise ModelError(f"{os.fspath(path)!r} keeps tensor {name!r} in {info.location!r}, which is not in {folder!r}")
        size, offset = os.path.getsize(file), info.offset or 0
        if info.length and size < offset + info.length:
            raise ModelError(f"{os.fspath(path)!r} keeps tensor {name!r} in {info.location!r}, which holds {size} bytes, not the {info.length} from offset {offset}")


def _read_index_constants(model, folder):
    """Reads, from ``folder`` (the model's own), the external data of the model's int32/int64
    tensors and keeps them in the model: ``onnx.save(..., save_as_external_data=True)`` moves
    every tensor over 1 KiB out (128 int64 indices), and a constant index out of range must be
    refused wherever trt-scatter runs from; shapes computed from integer constants (a Reshape's
    target) are known then too. Weights (floats) stay where they are. A file that is not there
    leaves the tensor's value unknown."""
    from onnx import TensorProto

    for tensor in external_tensors(model):
        if tensor.data_type in (TensorProto.INT32, TensorProto.INT64):
            try:
                _load_external(tensor, folder)
            except Exception:  # onnx raises ValidationError, OSError... for a file that is missing or too short
                continue


def _load_external(tensor, folder):
    """Reads ``tensor``'s external data from ``folder`` into the tensor itself, which then keeps it."""
    from onnx import TensorProto
    from onnx.external_data_helper import load_external_data_for_tensor

    load_external_data_for_tensor(tensor, folder)
    tensor.data_location = TensorProto.DEFAULT
    del tensor.external_data[:]


def _constant_tensors(graph):
    """``(tensor name, TensorProto)`` of the initializers and ``Constant`` values of ``graph`` and its subgraphs."""
    for init in graph.initializer:
        yield init.name, init
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            for attribute in node.attribute:
                if attribute.name == "value":
                    yield node.output[0], attribute.t
        for subgraph in subgraphs(node):
            yield from _constant_tensors(subgraph)


def all_nodes(graph):
    """The nodes of ``graph`` and of its subgraphs (If/Loop/Scan bodies), in order."""
    return (node for _, node in indexed_nodes(graph))


def indexed_nodes(graph):
    """``(index, node)`` for :func:`all_nodes`, ``index`` being the node's position in its own graph
    (If/Loop/Scan bodies count from 0): how :func:`node_label` numbers a node without a name."""
    for index, node in enumerate(graph.node):
        yield index, node
        for subgraph in subgraphs(node):
            yield from indexed_nodes(subgraph)


class _Node:
    """One ``trt_scatter`` node under check: each rule it breaks becomes a ModelError naming it."""

    def __init__(self, node, index, tensors):
        self.node, self.tensors = node, tensors
        self.label = node_label(node, index)
        self.op = ops.OPS.get(node.op_type)

    def error(self, detail):
        return ModelError(f"{self.label}: {detail}")

    def check(self, version):
        try:
            self._check_node(version)
            inputs = self._inputs()
            self._check_types(inputs)
            if self.op is ops.SLICE_SCATTER:
                self._check_slice_scatter(inputs)
            else:
                self._check_scatter_update(inputs)
        except ScatterInputError as err:
            raise self.error(str(err)) from None

    # -- the node itself

    def _check_node(self, version):
        node = self.node
        if self.op is None:
            raise self.error(f"domain '{ops.DOMAIN}' has no op '{node.op_type}' (its ops: {', '.join(ops.OPS)})")
        if version != ops.VERSION:
            got = "no opset import for it" if version is None else version
            raise self.error(f"the model must import the domain '{ops.DOMAIN}' at version {ops.VERSION}, the only one there is (got {got})")
        if len(node.output) != 1 or not node.output[0]:
            raise self.error(f"must have 1 output (got {len(node.output)}: {list(node.output)})")
        for attribute in node.attribute:
            self._check_attribute(attribute)

    def _check_attribute(self, attribute):
        from onnx import AttributeProto, helper

        allowed = ops.ATTRIBUTES.get(attribute.name)
        value = helper.get_attribute_value(attribute)
        if isinstance(value, bytes):
            value = value.decode(errors="replace")
        if attribute.name in ops.AOT_ATTRIBUTES:  # written by trt_scatter.passes.aot for the AOT plugins
            wanted = ops.AOT_ATTRIBUTES[attribute.name]
            if value != wanted or attribute.type != (AttributeProto.STRING if isinstance(wanted, str) else AttributeProto.INT):
                raise self.error(f"attribute '{attribute.name}' must be {wanted!r} for trt-scatter's AOT plugins (got {value!r})")
            return
        if allowed is None:
            known = ", ".join(f"'{name}'" for name in ops.ATTRIBUTES)
            raise self.error(f"attribute '{attribute.name}' is not an attribute of {self.op.name} (its attributes: {known}) (got {value!r})")
        if attribute.type != AttributeProto.INT or value not in allowed:
            choices = " or ".join(str(v) for v in allowed)
            raise self.error(f"attribute '{attribute.name}' must be the int {choices} (got {value!r})")

    def _inputs(self):
        """``{input name: tensor name}`` of the inputs given (an empty name is an input left out)."""
        op, given = self.op, list(self.node.input)
        if len(given) > len(op.inputs):
            raise self.error(f"takes at most {len(op.inputs)} inputs: {op.usage()} (got {len(given)})")
        for position, name in enumerate(op.inputs[: op.min_inputs]):
            if position >= len(given) or not given[position]:
                raise self.error(f"input '{name}' is missing: {op.usage()} (got {len(given)} inputs: {given})")
        return {name: tensor for name, tensor in zip(op.inputs, given) if tensor}

    # -- element types

    def _check_types(self, inputs):
        name = self.op.oracle
        dtype = {input_name: self.tensors.dtype(tensor) for input_name, tensor in inputs.items()}
        data = dtype["data"]
        if data is not None:
            rules.check_data_type(name, "data", data)
        for input_name, leader in self.op.index_inputs.items():
            if dtype.get(input_name) is None:
                continue
            rules.check_type_in(name, input_name, dtype[input_name], ops.INDEX_TYPES)
            if leader != input_name and dtype.get(leader) is not None:
                rules.check_same_type(name, input_name, dtype[input_name], dtype[leader], other=leader)
        others = [(n, dtype.get(n)) for n in self.op.element_inputs if n != "data"] + [("output", self.tensors.dtype(self.node.output[0]))]
        for input_name, other in others:
            if data is not None and other is not None:
                rules.check_same_type(name, input_name, other, data)

    # -- shapes and constant values

    def _param(self, name, tensor):
        """A 1-D parameter: its values (a list) if constant, else its length (-1 if not known)."""
        value = self.tensors.constant(tensor)
        if value is not None:
            return rules.as_int_vector(self.op.oracle, name, value)
        shape = self.tensors.shape(tensor)
        if shape is None:
            return -1
        rules.check_vector(self.op.oracle, name, shape)
        return shape[0]

    def _check_slice_scatter(self, inputs):
        data = self.tensors.shape(inputs["data"])
        updates = self.tensors.shape(inputs["updates"])
        if data is not None and updates is None:
            updates = (-1,) * len(data)  # rank unknown: it matches whatever data asks
        params = {name: self._param(name, inputs[name]) for name in ("start", "stop", "step", "axes") if name in inputs}
        check_slice_scatter_static(data, updates, **params)

    def _check_scatter_update(self, inputs):
        name = self.op.oracle
        axis_constant = self.tensors.constant(inputs["axis"])
        axis = None
        if axis_constant is not None:
            axis = axis_value(axis_constant)
        elif self.tensors.shape(inputs["axis"]) is not None:
            check_axis_shape(self.tensors.shape(inputs["axis"]))
        data = self.tensors.shape(inputs["data"])
        axis = check_scatter_update_static(data, self.tensors.shape(inputs["indices"]), self.tensors.shape(inputs["updates"]), axis)
        indices = self.tensors.constant(inputs["indices"])
        if indices is not None and axis is not None:
            rules.check_indices_in_range(name, "indices", indices, (data[axis],), allow_negative=False)
