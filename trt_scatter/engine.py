"""Builds TensorRT engines from trt-scatter's example networks or from ONNX files.

Thin compositions of polygraphy's loaders (``CreateNetwork``, ``NetworkFromOnnxPath``,
``CreateConfig``, ``EngineBytesFromNetwork``), so an engine built here is built exactly as
``polygraphy convert`` would build it. The TensorRT backend is resolved first
(:func:`trt_scatter.backend.tensorrt`) so that polygraphy uses the same one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import tempfile
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from trt_scatter import backend, dtypes, ops
from trt_scatter.backend import no_collection_inside_tensorrt, tensorrt
from trt_scatter.log import logger, warn
from trt_scatter.profile_log import profile_breaks

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    import onnx
    import tensorrt as trt
    from numpy.typing import ArrayLike

    from trt_scatter.model import Model


@dataclasses.dataclass
class TensorInfo:
    name: str
    dtype: str
    shape: tuple


@dataclasses.dataclass
class BuildSummary:
    """What a build produced: the network's I/O and size, the build time, the engine size."""

    name: str
    inputs: list
    outputs: list
    num_layers: int
    build_seconds: float
    engine_bytes: int

    def lines(self) -> Iterator[str]:
        yield f"network  {self.name}: {self.num_layers} layers"
        for kind, tensors in (("input ", self.inputs), ("output", self.outputs)):
            for t in tensors:
                yield f"{kind}   {t.name}: {t.dtype} {_shape(t.shape)}"
        yield f"engine   {self.engine_bytes / 1024:.1f} KiB, built in {self.build_seconds:.2f} s"


def _shape(shape):
    return "[" + ", ".join("?" if d < 0 else str(d) for d in shape) + "]"


def network_from_example(name: str, profile_shapes: dict[str, tuple[Sequence[int], Sequence[int], Sequence[int]]], strongly_typed: bool = True, **params: Any) -> Callable[[], tuple[trt.Builder, trt.INetworkDefinition]]:
    """A loader ``() -> (builder, network)`` of an example network.

    Loading adds the example's optimization-profile shapes to ``profile_shapes`` for inputs it
    has none for (so shapes the caller put there win). ``params`` go to the example
    (``dtype``, ``index_dtype``, ``dynamic``, op parameters). ``strongly_typed=False`` (for ``fp16``/``bf16``
    builds on full TensorRT 10.x; TensorRT 11.x and TensorRT-RTX networks are strongly typed whatever it says) lets
    TensorRT choose layer precisions.
    """
    tensorrt()
    from polygraphy.backend.trt import CreateNetwork

    from trt_scatter.networks.examples import EXAMPLES

    check_example_name(name)
    for key in ("dtype", "index_dtype"):
        if key in params:
            try:
                np.dtype(params[key])
            except TypeError:
                raise ValueError(f"example {name!r}: {key} {params[key]!r} is not a NumPy element type") from None
            try:
                dtypes.to_tensorrt(params[key])
            except TypeError as err:  # float64, uint16...: the network could not be made
                raise ValueError(f"example {name!r}: {key} {np.dtype(params[key]).name}: {err}") from None
    if params.get("dynamic") and profile_shapes:
        from trt_scatter.networks.examples import check_profile

        for input_name, shapes in profile_shapes.items():  # each entry's own rules first: the example's relations build on them
            check_profile_order(input_name, shapes)
            check_profile_sizes(input_name, shapes)
        check_profile(name, profile_shapes, **params)

    def load():
        with no_collection_inside_tensorrt():
            builder, network = CreateNetwork(strongly_typed=strongly_typed)()
        for input_name, shapes in EXAMPLES[name](network, **params).items():
            profile_shapes.setdefault(input_name, shapes)
        return builder, network

    load.example = name  # build_engine's message for a profile left out says where an example's comes from
    return load


def check_example_name(name: str) -> None:
    """A ValueError unless ``name`` is an example network's, naming the closest one (a typo) and every one."""
    import difflib

    from trt_scatter.networks.examples import EXAMPLES

    if name not in EXAMPLES:
        close = difflib.get_close_matches(str(name).lower(), sorted(EXAMPLES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown example network {name!r}{hint}; known: {', '.join(sorted(EXAMPLES))}")


def check_input_ranks(proto: onnx.ModelProto) -> None:
    """A ValueError naming the first graph input without a shape: TensorRT's parser needs every input's rank, and
    without it fails on the first node that reads it in words of its own."""
    from trt_scatter.model import fed_inputs

    for value in fed_inputs(proto.graph):
        if value.type.HasField("tensor_type") and not value.type.tensor_type.HasField("shape"):
            raise ValueError(f"input {value.name!r} has no shape in the model: TensorRT needs the rank of every input "
                             "(give it a shape, with named dimensions where they vary)")


def check_tensorrt_ranks(proto: onnx.ModelProto) -> None:
    """A ValueError naming the first graph input or output of more dimensions than TensorRT's tensors have
    (``Dims.MAX_DIMS``, 8): its parser fails on it in words of its own."""
    from trt_scatter.model import declared_size, fed_inputs, printable

    most = tensorrt().Dims.MAX_DIMS
    for kind, values in (("input", fed_inputs(proto.graph)), ("output", proto.graph.output)):
        for value in values:
            dims = value.type.tensor_type.shape.dim if value.type.HasField("tensor_type") else ()
            if len(dims) > most:
                shape = [declared_size(d, "?") for d in dims]
                raise ValueError(f"{kind} {printable(repr(value.name))} has {len(dims)} dimensions, and TensorRT's tensors have at most {most} "
                                 f"(shape {shape})")


def network_from_onnx(model: Model | onnx.ModelProto | str | os.PathLike, plugins: bool = False, strongly_typed: bool = True, aot: bool = False) -> Callable[[], tuple[trt.Builder, trt.INetworkDefinition, trt.OnnxParser]]:
    """A loader ``() -> (builder, network, parser)`` of an ONNX model (a path, an ``onnx.ModelProto`` or a
    :class:`~trt_scatter.model.Model`, read once); ``plugins`` registers trt-scatter's plugins first.

    The model is validated first (:func:`trt_scatter.passes.validate.validate`, once per Model), as every command
    does: TensorRT shows the plugins no constant, so a mistake in one would build into an engine that silently skips
    writes, and TensorRT's own scatter layer does not check an index when it runs.
    With ``plugins``, ONNX's own nodes that a plugin serves become its nodes first (:mod:`trt_scatter.passes.plugins`).
    ``strongly_typed``: as for :func:`network_from_example`.
    ``aot``: the ``trt_scatter`` nodes (and ONNX's own nodes a plugin serves) go to the AOT plugins instead
    (:mod:`trt_scatter.plugins.aot`, full TensorRT >= 10.9): registered first, the nodes' attributes written by
    :mod:`trt_scatter.passes.aot`.
    The engine then runs without Python.
    """
    tensorrt()
    from trt_scatter.model import as_model, node_label

    from trt_scatter.passes.validate import validate

    model = as_model(model)
    check_input_ranks(model.proto)
    check_tensorrt_ranks(model.proto)
    validate(model)
    if aot:
        from trt_scatter.passes.aot import to_aot
        from trt_scatter.plugins import aot as aot_plugins

        from trt_scatter.passes.plugins import to_plugins

        plugged = to_plugins(model)  # the Model itself where no node changed: validated once, not again
        converted = to_aot(model if plugged is model.proto else plugged)  # what the model cannot be in the AOT form, before what TensorRT lacks
        _check_plugin_types(model, converted)
        aot_plugins.register()
        return _network_from_proto(converted, model.path, strongly_typed=strongly_typed, model=model)
    node = aot_node(model.proto)
    if node is not None:
        raise ValueError(f"{model.name}: {node_label(node)} names trt-scatter's AOT plugins "
                         "(plugin_namespace='trt_scatter', aot=1): build it with --aot (full TensorRT >= 10.9), or, for the Python "
                         "plugins, build the model as it was before the AOT form (to_aot, export's aot=True) with --plugins")
    proto = model.proto
    _check_io_types(proto)
    if plugins:
        from trt_scatter.passes.plugins import to_plugins
        from trt_scatter.plugins import register

        register()
        proto = to_plugins(model)  # ONNX's own nodes that a plugin runs in TensorRT's place
        if proto is not model.proto:
            validate(proto)
        _check_plugin_types(model, proto)
        if backend.is_rtx():
            _check_rtx_aliasing(model.name, proto)
    elif model.trt_scatter_ops():
        raise ValueError(f"{model.name} has trt-scatter plugin nodes ({', '.join(model.trt_scatter_ops())}): register the plugins (--plugins; "
                         "from Python, plugins=True), or, for a runtime without them, make standard ONNX ops of them (trt-scatter lower)")
    else:
        from trt_scatter.passes.plugins import served

        replaced = served(model)
        if replaced:  # nodes TensorRT's own parser refuses, which a plugin builds
            raise ValueError(_served_by_a_plugin(model, replaced))
    return _network_from_proto(_for_the_parser(proto), model.path, strongly_typed=strongly_typed, model=model)


def _served_by_a_plugin(model, replaced) -> str:
    """Why ``model`` needs the plugins: its first node that a plugin serves (``replaced``:
    :func:`~trt_scatter.passes.plugins.served`), in the main graph or else in an If, Loop or Scan body at any depth; in a
    body TensorRT-RTX builds no plugin either, so there the words say so."""
    from trt_scatter.model import nested_nodes, node_label

    def is_served(node):
        return bool(node.output) and node.output[0] in replaced

    main = next((node for node in model.proto.graph.node if is_served(node)), None)
    node, label, holder = (main, node_label(main), None) if main is not None else next(nested_nodes(model.proto.graph, is_served))
    plugin = replaced[node.output[0]]
    why = f" ({plugin.doc_string})" if plugin.doc_string else ""
    where = "" if holder is None else f", in a subgraph of {holder},"
    then = ("TensorRT-RTX builds no plugin in an If, Loop or Scan body: build it with full TensorRT and --plugins" if holder is not None and backend.is_rtx()
            else "trt-scatter's plugins build: add --plugins")
    return f"{model.name}: {label}{where} is one TensorRT builds wrong or not at all{why}, and {then} (plugins=True)"


#: The trip count of a Loop that has none (:func:`_for_the_parser`): the most TensorRT's int32 count holds below 2**31 - 1,
#: which its ONNX parser takes for "no count".
LOOP_TRIP_LIMIT = 2**31 - 2


def _for_the_parser(proto):
    """``proto``, or a copy without what TensorRT mishandles in a valid model: the trailing optional inputs a
    ``trt_scatter`` node gives as "" (left out; the parser calls the node invalid); where a ``trt_scatter`` node of
    the main graph computes nothing an output depends on, every such node (TensorRT-RTX drops the layer and frees its
    plugin twice: an abort; TensorRT would drop the others itself); and int8 constants that a node other than a plugin
    reads (a value broadcast into an int8 cache), which TensorRT takes for quantized ones and refuses anywhere but
    before a plugin or a dequantization: they become int32 constants and a Cast to int8. A ``trt_scatter`` node's
    attributes left to their defaults are written out: the parser warns of each one it does not find ("the engine may
    fail to build"), though the plugin's default is the op's. A ``Loop`` whose ``cond`` input is left out (true, by the
    spec) gets a constant true one: the parser does not register the body's condition input then, and a body that
    reads it failed to parse ("Node input was not registered"). A ``Loop`` (at any depth) whose ``cond`` is a graph input
    reads it through an ``Identity``: TensorRT-RTX's parser named the network's input after the body's condition input,
    so the engine had no input of the model's name. A ``Loop`` whose trip count is left out or a constant of at least
    2**31 - 1 (how exporters write "no count") and whose body reads its iteration number gets the count
    :data:`LOOP_TRIP_LIMIT`: the parser takes such a count for none and then does not register the iteration number. A
    ``Slice`` without ``axes`` (its first len(starts) axes) whose ``starts`` is a constant gets them written out:
    TensorRT-RTX's parser took every axis of the data and refused a valid node ("starts misaligns with axes")."""
    import onnx

    from trt_scatter.model import all_graphs, all_nodes, fed_inputs, fresh_name, graph_names, live_names, subgraphs
    from trt_scatter.model.files import constant_tensors
    from trt_scatter.model.graph import shadowed_in

    def condition_left_out(node):
        return node.op_type == "Loop" and node.domain in ops.DEFAULT_DOMAINS and len(node.input) > 1 and not node.input[1]

    constants = dict(constant_tensors(proto.graph))

    def axes_left_out(node):
        """The number of starts of a Slice (opset 10 on) without ``axes`` whose ``starts`` is a constant, else 0."""
        if node.op_type != "Slice" or node.domain not in ops.DEFAULT_DOMAINS or len(node.input) < 3 or (len(node.input) > 3 and node.input[3]):
            return 0
        return onnx.numpy_helper.to_array(constants[node.input[1]]).size if node.input[1] in constants else 0

    def uncounted(node):
        """Whether ``node`` is a Loop without a count the parser keeps whose body reads its iteration number."""
        if node.op_type != "Loop" or node.domain not in ops.DEFAULT_DOMAINS or not node.input:
            return False
        if node.input[0]:  # a count: one the parser takes for none is a constant
            count = onnx.numpy_helper.to_array(constants[node.input[0]]) if node.input[0] in constants else None
            if count is None or count.size != 1 or int(count.reshape(())) <= LOOP_TRIP_LIMIT:
                return False
        body = next(subgraphs(node))
        return bool(body.input) and any(body.input[0].name in inner.input for inner in all_nodes(body))

    def left_out(node):
        """``{name: default}`` of the attributes a trt_scatter node leaves out."""
        given = {attribute.name for attribute in node.attribute}
        op = ops.op_of(node) if ops.is_trt_scatter(node) else None
        return {} if op is None else {name: attribute.default for name, attribute in op.attributes.items() if name not in given}

    live = live_names(proto.graph.node, [value.name for value in proto.graph.output])
    needed = [any(output in live for output in node.output) for node in proto.graph.node]
    dead_write = any(ops.is_trt_scatter(node) and not keep for node, keep in zip(proto.graph.node, needed))
    padded = any(ops.is_trt_scatter(node) and node.input and not node.input[-1] for node in all_nodes(proto.graph))
    defaulted = any(left_out(node) for node in all_nodes(proto.graph))
    quantized = _int8_constants_read_as_numbers(proto.graph)
    unconditioned = any(condition_left_out(node) for node in all_nodes(proto.graph))
    unlimited = any(uncounted(node) for node in all_nodes(proto.graph))
    sliced = any(axes_left_out(node) for node in all_nodes(proto.graph))
    inputs = {value.name for value in fed_inputs(proto.graph)}

    def conditions_fed(graph):
        """The Loops of ``graph`` (at any depth) whose ``cond`` is one of the graph inputs (not a body's own of that name)."""
        hidden = shadowed_in(graph)
        return [node for node in all_nodes(graph) if node.op_type == "Loop" and node.domain in ops.DEFAULT_DOMAINS and len(node.input) > 1
                and node.input[1] in inputs and node.input[1] not in hidden.get(id(node), ())]

    fed_conditions = bool(conditions_fed(proto.graph))
    if not any((padded, dead_write, defaulted, quantized, unconditioned, fed_conditions, unlimited, sliced)):
        return proto
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    for node in all_nodes(copy.graph):
        while ops.is_trt_scatter(node) and node.input and not node.input[-1]:
            node.input.pop()
        node.attribute.extend(onnx.helper.make_attribute(name, default) for name, default in left_out(node).items())
    if dead_write:
        kept = [node for node, keep in zip(copy.graph.node, needed) if keep]
        del copy.graph.node[:]
        copy.graph.node.extend(kept)
    taken = set().union(*(graph_names(each) for each in all_graphs(copy.graph)))  # the new names avoid a body's names too
    if quantized:
        _widen_int8_constants(copy.graph, quantized, taken)
    if unconditioned:
        true = fresh_name("loop_condition_true", taken)
        copy.graph.initializer.append(onnx.numpy_helper.from_array(np.array(True), true))  # the main graph's: every body sees it
        for node in all_nodes(copy.graph):
            if condition_left_out(node):
                node.input[1] = true
    if unlimited:
        limit = fresh_name("loop_trip_limit", taken)
        copy.graph.initializer.append(onnx.numpy_helper.from_array(np.array(LOOP_TRIP_LIMIT, np.int64), limit))  # every body sees it
        for node in all_nodes(copy.graph):
            if uncounted(node):
                node.input[0] = limit
    if sliced:
        axes = {}  # number of starts -> the name of its axes, [0, ..., n - 1]: the main graph's, which every body sees
        for node in all_nodes(copy.graph):
            if count := axes_left_out(node):
                if count not in axes:
                    axes[count] = fresh_name(f"slice_axes_{count}", taken)
                    copy.graph.initializer.append(onnx.numpy_helper.from_array(np.arange(count, dtype=np.int64), axes[count]))
                if len(node.input) > 3:
                    node.input[3] = axes[count]
                else:
                    node.input.append(axes[count])
    if fed_conditions:
        renamed = {}
        for node in conditions_fed(copy.graph):
            if node.input[1] not in renamed:
                renamed[node.input[1]] = fresh_name(f"{node.input[1]}_for_loop", taken)
            node.input[1] = renamed[node.input[1]]
        passes = [onnx.helper.make_node("Identity", [name], [read], name=fresh_name(f"{name}_identity", taken)) for name, read in renamed.items()]
        nodes = passes + list(copy.graph.node)
        del copy.graph.node[:]
        copy.graph.node.extend(nodes)
    return copy


def _int8_constants_read_as_numbers(graph):
    """Names of the main graph's int8 constants (initializers held in the model, ``Constant`` nodes' ``value``) that a
    node other than a plugin node or a (De)QuantizeLinear reads, in the main graph or a body, and of its int8
    ConstantOfShape fills."""
    from onnx import TensorProto

    from trt_scatter.model import all_nodes

    int8 = {init.name for init in graph.initializer if init.data_type == TensorProto.INT8 and init.data_location != TensorProto.EXTERNAL}
    int8 |= {node.output[0] for node in graph.node if node.op_type in _INT8_FILLS and node.output
             and any(a.name == "value" and a.t.data_type == TensorProto.INT8 for a in node.attribute)}
    fills = {node.output[0] for node in graph.node if node.op_type == "ConstantOfShape" and node.output} & int8  # refused anywhere
    return fills | {name for node in all_nodes(graph) if not ops.is_trt_scatter(node) and node.op_type not in ("QuantizeLinear", "DequantizeLinear")
                    for name in node.input if name in int8}


#: nodes that make an int8 constant from a ``value`` attribute (a ConstantOfShape of int8 is refused even before a plugin)
_INT8_FILLS = ("Constant", "ConstantOfShape")


def _widen_int8_constants(graph, names, taken):
    """Each constant of ``names`` as an int32 constant of a new name (not in ``taken``, the model's names) and a Cast to
    int8 under its own name, first."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from trt_scatter.model import fresh_name

    nodes = []
    inputs = [value for value in graph.input if value.name not in names]  # an input an initializer fills is a constant
    if len(inputs) != len(graph.input):
        del graph.input[:]
        graph.input.extend(inputs)
    for init in [init for init in graph.initializer if init.name in names]:
        wide = fresh_name(f"{init.name}_int32", taken)
        graph.initializer.remove(init)
        graph.initializer.append(numpy_helper.from_array(numpy_helper.to_array(init).astype(np.int32), wide))
        nodes.append(helper.make_node("Cast", [wide], [init.name], to=TensorProto.INT8, name=fresh_name(f"{init.name}_cast", taken)))
    for node in graph.node:
        nodes.append(node)
        if node.op_type in _INT8_FILLS and node.output and node.output[0] in names:
            value, name = next(a for a in node.attribute if a.name == "value"), node.output[0]
            node.output[0] = wide = fresh_name(f"{name}_int32", taken)
            value.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(value.t).astype(np.int32), value.t.name))
            nodes.append(helper.make_node("Cast", [wide], [name], to=TensorProto.INT8, name=fresh_name(f"{name}_cast", taken)))
    del graph.node[:]
    graph.node.extend(nodes)


def _check_rtx_aliasing(name, proto):
    """TensorRT-RTX fails to build (an internal assertion, or an invalid engine) a plugin aliased with a data tensor
    that another node reads or that is a graph output, where full TensorRT inserts a copy (``getAliasedInput``:
    "TensorRT may insert copies to facilitate this capability", NvInferRuntime.h): refused here in one line."""
    from trt_scatter.model import all_graphs, node_label
    from trt_scatter.model.graph import overwrite_conflict, value_readers

    for graph in all_graphs(proto.graph):
        readers = None
        for index, node in enumerate(graph.node):
            if _writes_in_place(node) and node.input:
                readers = value_readers(graph) if readers is None else readers
                conflict = overwrite_conflict(graph, node, readers)
                if conflict:
                    raise ValueError(f"{name}: {node_label(node, index)}: inplace=1 writes into data ({node.input[0]!r}), which "
                                     f"{conflict}: TensorRT-RTX cannot build that (full TensorRT copies data there); set inplace=0")


#: ONNX element types TensorRT has no DataType for: STRING, INT16, UINT16, UINT32, UINT64, COMPLEX64, COMPLEX128.
_NOT_IN_TENSORRT = (8, 5, 4, 12, 13, 14, 15)


def _check_plugin_types(model, proto):
    """No plugin node of ``proto`` (the model's, its nodes served by plugins) writes uint8 data: TensorRT takes uint8
    tensors only at the network's inputs and outputs, there only from an identity or a cast (and an identity after the
    plugin leaves a uint8 tensor inside the network): it refused the build in words of its own network checks."""
    from trt_scatter.model import node_label

    for index, node in enumerate(proto.graph.node):
        if ops.is_trt_scatter(node) and node.input and model.tensors.dtype(node.input[0]) == np.uint8:
            raise ValueError(f"{model.name}: {node_label(node, index)} writes uint8 data, which TensorRT takes only at the network's "
                             "inputs and outputs, and there only from an identity or a cast, not a plugin: keep the tensor as int8 (the same bytes)")


def _check_io_types(model):
    """TensorRT has no float64: its ONNX parser makes such a graph input or output float32, without a word. Other
    types it has not (uint16, uint32, uint64, int16...) its parser refuses without naming the input: refused here."""
    from onnx import TensorProto, helper

    from trt_scatter.log import warn

    weights = {init.name for init in model.graph.initializer}
    for kind, values in (("input", model.graph.input), ("output", model.graph.output)):
        for value in values:
            elem_type = value.type.tensor_type.elem_type
            if elem_type == TensorProto.DOUBLE:
                warn(f"graph {kind} {value.name!r} is float64, which TensorRT has not: the engine takes and gives float32 there")
            elif value.name in weights:  # an initializer an old exporter lists as an input too: the parser names it
                continue
            elif elem_type in _NOT_IN_TENSORRT:
                raise ValueError(f"graph {kind} {value.name!r} is {helper.tensor_dtype_to_string(elem_type).removeprefix('TensorProto.').lower()}, "
                                 "which TensorRT has no type for")
            elif kind == "input" and not elem_type:
                raise ValueError(f"graph input {value.name!r} has no tensor element type: TensorRT takes typed tensors only")


def _network_from_proto(proto, path=None, strongly_typed=True, model=None):
    """A loader like polygraphy's ``NetworkFromOnnxBytes`` for a model already read: TensorRT's parser gets the
    serialized ``proto`` and ``path``, the file it was read from, where its external weights are found (the
    parser opens only those; the model's own file is not read again). ``model``, the
    :class:`~trt_scatter.model.Model` it came from, is kept as the loader's ``model``: :func:`build_engine` checks
    its constants against the shape profile."""

    def load():
        from polygraphy.backend.trt import CreateNetwork
        from polygraphy.backend.trt import util as trt_util

        with no_collection_inside_tensorrt():
            builder, network = CreateNetwork(strongly_typed=strongly_typed)()
        parser = tensorrt().OnnxParser(network, trt_util.get_trt_logger())
        with _parser_path(path) as parser_path:
            success = parser.parse(proto.SerializeToString(), parser_path)
        trt_util.check_onnx_parser_errors(parser, success)
        return builder, network, parser

    load.model = model
    return load


@contextlib.contextmanager
def _parser_path(path):
    """The model's path as TensorRT's parser takes it (a UTF-8 string; it reads external weights from the path's
    folder). A folder whose name is not UTF-8 (bytes the file system allows) is given as the parser can open it:
    through a descriptor of it, ``/proc/self/fd/<n>/<any name>``."""
    if path is None:
        yield None
        return
    path = os.path.abspath(path)
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:  # os.fsdecode's surrogates: not UTF-8 on disk
        folder = os.open(os.path.dirname(path), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            yield f"/proc/self/fd/{folder}/model.onnx"
        finally:
            os.close(folder)
        return
    yield path


def aot_node(model: onnx.ModelProto) -> onnx.NodeProto | None:
    """The first ``trt_scatter`` node of ``model`` (an ``onnx.ModelProto``) that names the AOT plugins (namespace
    ``trt_scatter``, as :mod:`trt_scatter.passes.aot` writes it): only those serve it. None if there is none."""
    from onnx import helper

    from trt_scatter.model import all_nodes
    from trt_scatter.ops import AOT_ATTRIBUTES, is_trt_scatter

    for node in all_nodes(model.graph):  # If/Loop bodies included
        namespace = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "plugin_namespace"), b"")
        namespace = namespace.decode(errors="replace") if isinstance(namespace, bytes) else namespace
        if is_trt_scatter(node) and namespace == AOT_ATTRIBUTES["plugin_namespace"]:
            return node
    return None


def needs_aliased_plugin_io(model: onnx.ModelProto) -> bool:
    """True if a ``trt_scatter`` node of ``model`` (an ``onnx.ModelProto``) has ``inplace=1``: its plugin
    then aliases its output with data, which the builder allows only with ``PreviewFeature.ALIASED_PLUGIN_IO_10_03``."""
    from trt_scatter.model import all_nodes

    return any(_writes_in_place(node) for node in all_nodes(model.graph))  # If/Loop bodies included


def _writes_in_place(node):
    """Whether ``node`` is a ``trt_scatter`` node with ``inplace=1`` (its plugin aliases its output with data)."""
    from trt_scatter.ops import is_trt_scatter

    return is_trt_scatter(node) and any(attribute.name == "inplace" and attribute.i == 1 for attribute in node.attribute)


def build_engine(load_network: Callable[[], tuple[trt.Builder, trt.INetworkDefinition] | tuple[trt.Builder, trt.INetworkDefinition, trt.OnnxParser]], profile_shapes: dict[str, tuple[Sequence[int], Sequence[int], Sequence[int]]] | None = None, *, fp16: bool = False, bf16: bool = False, timing_cache: str | os.PathLike | None = None, progress: bool = False, name: str = "network", aliased_plugin_io: bool = False, feeds: Sequence[dict[str, ArrayLike]] | None = None,
                 save_timing_cache: str | os.PathLike | None = None) -> tuple[bytes, BuildSummary]:
    """Builds a serialized engine; returns ``(engine_bytes, BuildSummary)``.

    ``timing_cache``: a timing cache file to start from, and to save to unless ``save_timing_cache`` names
    another file.

    ``feeds`` (a list of ``{input name: array}``, e.g. ``trt-scatter check``'s inputs): where
    ``profile_shapes`` says nothing, a dynamic input gets a profile of its fed shapes and an input
    whose values set shapes (a shape tensor, e.g. a KV cache's position) one of its fed values, so
    the engine takes exactly those feeds.

    ``aliased_plugin_io`` enables the preview feature that plugins with ``inplace=1``
    (:func:`needs_aliased_plugin_io`), and the AOT plugins, need. ``fp16``/``bf16`` need a weakly
    typed network (full TensorRT 10.x, ``strongly_typed=False`` in the loader): TensorRT 11.x and
    TensorRT-RTX have no such builder flags.
    ``profile_shapes`` maps input names to ``(min, opt, max)`` and is read after the network
    loads; dynamic inputs not in it fail with a message naming them, before TensorRT is asked.
    """
    if not callable(load_network):
        raise TypeError(f"build_engine: load_network is a network loader, such as network_from_onnx(model) or "
                        f"network_from_example(name, profile_shapes) (got {type(load_network).__name__})")
    if profile_shapes is not None and not isinstance(profile_shapes, Mapping):
        raise TypeError(f"build_engine: profile_shapes maps input names to (min, opt, max) shapes (got {type(profile_shapes).__name__})")
    for what, path in (("timing_cache", timing_cache), ("save_timing_cache", save_timing_cache)):
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"build_engine: {what} is a file path (got {type(path).__name__})")
    check_timing_cache(timing_cache)
    timing_cache, save_timing_cache = (None if path is None else os.fspath(path) for path in (timing_cache, save_timing_cache))  # polygraphy adds ".lock"
    saved = save_timing_cache if save_timing_cache is not None else timing_cache
    if saved is not None and not os.path.isdir(os.path.dirname(os.path.abspath(saved))):
        raise ValueError(f"{'save_timing_cache' if save_timing_cache is not None else 'timing_cache'} {os.fspath(saved)!r}: its folder does "
                         "not exist, and the timing cache is saved there after the build")
    if saved is not None and saved == timing_cache and os.path.isfile(timing_cache) and os.path.getsize(timing_cache):
        real = os.path.realpath(timing_cache)  # a link's target is replaced (in its own folder: os.replace moves no file across devices)
        with tempfile.TemporaryDirectory(dir=os.path.dirname(real)) as folder, tensorrt_warnings() as heard:  # replaced only where TensorRT read it
            new = os.path.join(folder, "timing.cache")
            built = build_engine(load_network, profile_shapes, fp16=fp16, bf16=bf16, timing_cache=timing_cache, progress=progress, name=name,
                                 aliased_plugin_io=aliased_plugin_io, feeds=feeds, save_timing_cache=new)
            unread = timing_cache_unread(heard)
            if unread:
                warn(f"timing_cache {os.fspath(timing_cache)!r} was not read ({unread}): the engine was built without it, and the file is "
                     "left as it was")
            elif os.path.exists(new):
                os.replace(new, real)
        return built
    trt = tensorrt()
    from polygraphy.backend.trt import CreateConfig, EngineBytesFromNetwork, Profile
    from polygraphy.exception import PolygraphyException

    for flag, wanted in (("FP16", fp16), ("BF16", bf16)):
        if wanted and not hasattr(trt.BuilderFlag, flag):
            raise ValueError(
                f"{backend.name()} {trt.__version__} has no BuilderFlag.{flag}: its networks are strongly typed, "
                f"so give the tensors that type instead (an example network: --dtype {'float16' if flag == 'FP16' else 'bfloat16'}; "
                f"an ONNX model: its inputs and weights in that type)"
            )

    loaded = load_network()  # (builder, network) or, from ONNX, (builder, network, parser): kept whole, the parser owns weights
    if not (isinstance(loaded, tuple) and len(loaded) in (2, 3) and isinstance(loaded[0], trt.Builder) and isinstance(loaded[1], trt.INetworkDefinition)):
        got = f"({', '.join(type(item).__name__ for item in loaded)})" if isinstance(loaded, tuple) else type(loaded).__name__
        raise TypeError("build_engine: the loader must return (builder, network), or (builder, network, parser) as polygraphy's "
                        f"NetworkFromOnnxPath does (got {got})")
    network = loaded[1]
    if not network.num_outputs:
        raise ValueError("build_engine: the network marks no output (network.mark_output(tensor)): TensorRT builds no engine without one")
    inputs = [_info(network.get_input(i)) for i in range(network.num_inputs)]
    outputs = [_info(network.get_output(i)) for i in range(network.num_outputs)]
    profile_shapes = dict(profile_shapes or {})
    given = dict(profile_shapes)
    unknown = sorted(set(profile_shapes) - {t.name for t in inputs})
    if unknown:
        raise ValueError(f"shape profile names no input of the network: {', '.join(unknown)}")
    for input_name, shapes in profile_shapes.items():
        check_profile_order(input_name, shapes)
    shape_inputs = [network.get_input(i).name for i in range(network.num_inputs) if network.get_input(i).is_shape_tensor]
    for tensor in inputs if feeds else ():
        fed = [np.asarray(feed[tensor.name]) for feed in feeds if tensor.name in feed]
        if tensor.name not in profile_shapes and fed and (tensor.name in shape_inputs or any(d < 0 for d in tensor.shape)):
            seen = np.array([array.reshape(-1) if tensor.name in shape_inputs else array.shape for array in fed])
            low, high = tuple(int(v) for v in seen.min(axis=0)), tuple(int(v) for v in seen.max(axis=0))
            profile_shapes[tensor.name] = (low, high, high)
    for tensor in inputs:  # what TensorRT would refuse only after the parse, as a failure of its own
        if tensor.name in profile_shapes:
            (_check_value_counts if tensor.name in shape_inputs else _check_profile_fits)(tensor, profile_shapes[tensor.name])
    _check_named_dimensions(network, profile_shapes, shape_inputs)
    missing = [t.name for t in inputs if any(d < 0 for d in t.shape) and t.name not in profile_shapes]
    if missing:
        example = ("; for an example network, pass build_engine the dict given to network_from_example, which its loader fills in"
                   if getattr(load_network, "example", None) else "")
        raise ValueError(f"dynamic input(s) {', '.join(missing)} need --min/--opt/--max shapes (from Python: (min, opt, max) for each "
                         f"in profile_shapes{example})")
    # An input whose values set shapes (a KV cache's position, when PyTorch broadcasts the new tokens to
    # the slice it writes) needs the range of its values, or polygraphy would pin it to 1 in the engine.
    unranged = [name for name in shape_inputs if name not in profile_shapes]
    if unranged:
        raise ValueError(f"input(s) {', '.join(unranged)} set shapes in the network: give the range of their values "
                         f"with --min/--opt/--max NAME:[V,...] (e.g. --min {unranged[0]}:[0] --opt {unranged[0]}:[1] --max {unranged[0]}:[64])")
    model = getattr(load_network, "model", None)  # network_from_onnx's: constants the profile puts out of range in every run
    if model is not None and given:  # the profile given, not one made of feeds: each feed ran in the reference as it is
        from trt_scatter.passes.validate import validate_profile

        validate_profile(model, given)
    profiles = None
    if profile_shapes or any(literal_pattern(t.name) != t.name for t in inputs):
        # every input, the static ones at their shape: polygraphy's default profile would name them unescaped
        static = {t.name: (t.shape,) * 3 for t in inputs if t.name not in profile_shapes and t.name not in shape_inputs}
        profile = Profile()
        for input_name, (low, opt, high) in {**profile_shapes, **static}.items():
            profile.add(literal_pattern(input_name), min=low, opt=opt, max=high)
        profiles = [profile]
    config = CreateConfig(
        fp16=fp16,
        bf16=bf16,
        profiles=profiles,
        load_timing_cache=timing_cache,
        progress_monitor=_progress_monitor(trt) if progress else None,
    )
    if aliased_plugin_io:
        config = with_aliased_plugin_io(config)
    start = time.perf_counter()
    _refused_plugin_shapes()  # forgets earlier refusals: a failed build names its own
    bounds = {t.name: (t.shape,) * 3 if t.name in shape_inputs else profile_shapes.get(t.name, (t.shape,) * 3) for t in inputs}
    # it logs throughout the build: through trt-scatter's logger for a network of new_builder(), through polygraphy's for
    # one of TensorRT's ONNX parser
    with no_collection_inside_tensorrt(), profile_breaks() as breaks, tensorrt_warnings(breaks.take):
        try:
            engine = bytes(EngineBytesFromNetwork(loaded, config=config, save_timing_cache=saved)())  # raises if TensorRT fails
        except PolygraphyException:
            refused_shapes = _refused_plugin_shapes()
            if refused_shapes:  # TensorRT says only that the plugin's "output shape computation failed": the rule it broke
                raise ValueError(refused_shapes[-1]) from None
            broken = breaks.first(bounds)
            if broken:
                raise ValueError(broken) from None
            raise
    broken = breaks.first(bounds)
    if broken:  # TensorRT-RTX builds an engine whose rules fail at a bound of its profile, saying so only in its log
        raise ValueError(broken)
    seconds = time.perf_counter() - start
    summary = BuildSummary(name, inputs, outputs, network.num_layers, seconds, len(engine))
    logger.info("built %s in %.2f s (%d bytes)", name, seconds, len(engine))
    return engine, summary


@contextlib.contextmanager
def tensorrt_warnings(take: Callable[[str], Any] | None = None) -> Iterator[list[str]]:
    """The warnings and errors TensorRT logs during the block (through polygraphy's logger, which prints each one once),
    each also given to ``take`` as it comes (a :class:`~trt_scatter.profile_log.Breaks`'s)."""
    from polygraphy.logger import G_LOGGER

    heard, originals = [], {name: getattr(G_LOGGER, name) for name in ("warning", "error")}

    def listening(log):
        def listen(message, *args, **kwargs):
            heard.append(message if isinstance(message, str) else "")
            if take is not None:
                take(heard[-1])
            return log(message, *args, **kwargs)

        return listen

    for name, log in originals.items():
        setattr(G_LOGGER, name, listening(log))
    try:
        yield heard
    finally:
        for name, log in originals.items():
            setattr(G_LOGGER, name, log)


NO_CUDA_DRIVER = "TensorRT reads a timing cache only where a CUDA driver runs"  #: why none was read, where no CUDA driver runs


def timing_cache_unread(heard: Sequence[str]) -> str | None:
    """Why TensorRT read no timing cache, from what it said (:func:`tensorrt_warnings`), or None where it read it: a file
    that is no timing cache of this TensorRT, or none read for want of a CUDA driver (cudaError 35)."""
    if not any("failed to deserialize timing cache" in line.lower() for line in heard):
        return None
    if any("cudaError 35" in line for line in heard):
        return NO_CUDA_DRIVER
    return "it is not a timing cache this TensorRT can read"


def check_timing_cache(path: str | os.PathLike | None, what: str = "timing_cache") -> None:
    """A timing cache (``what``: the argument that names it) is a regular file or none yet: it is read, then written, and
    reading a folder fails inside polygraphy, a device or a fifo may never end."""
    if path is not None and os.path.exists(path) and not os.path.isfile(path):
        raise ValueError(f"{what} {str(path)!r} is not a regular file: it is read, then written: give a file path")


def _refused_plugin_shapes():
    """What trt-scatter's plugins refused of the shapes TensorRT gave them since the last call, if they are loaded."""
    import sys

    kernels = sys.modules.get("trt_scatter.plugins.kernels")  # not imported where no plugin is: nothing to say
    return kernels.refused_shapes() if kernels is not None else []


def literal_pattern(name: str) -> str:
    """``name`` as an ``fnmatch`` pattern that matches it alone: polygraphy's ``Profile`` matches its keys to input names
    as patterns, where ``past_key_values[0]`` names no input (``[0]`` is a set of characters) and ``x*`` names several."""
    return "".join(f"[{char}]" if char in "[]*?" else char for char in name)


def _check_named_dimensions(network, profile_shapes, shape_inputs):
    """Dimensions that share a name (the model's ``dim_param``, such as an edge count E) of one size at each
    bound of the profile: TensorRT refuses other profiles only when it builds, in the words of its shape machine."""
    first = {}  # name -> (input, axis) where the name was first seen in the profile
    for i in range(network.num_inputs):
        tensor = network.get_input(i)
        if tensor.name not in profile_shapes or tensor.name in shape_inputs or not hasattr(tensor, "get_dimension_name"):
            continue
        for axis in range(len(tensor.shape)):
            name = tensor.get_dimension_name(axis)
            if not name:
                continue
            seen = first.setdefault(name, (tensor.name, axis))
            for bound, shape, other in zip(("min", "opt", "max"), profile_shapes[tensor.name], profile_shapes[seen[0]]):
                if shape[axis] != other[seen[1]]:
                    raise ValueError(f"dimension '{name}' is {other[seen[1]]} in {seen[0]}'s --{bound} shape {list(other)} "
                                     f"and {shape[axis]} in {tensor.name}'s {list(shape)}: the model names both '{name}', so they "
                                     f"must be equal")


def check_profile_order(name: str, shapes: Sequence[Sequence[int]]) -> None:
    """A profile's entry for input ``name``: three shapes (or, for an input whose values set shapes, value ranges) of
    integers, of one rank, with min <= opt <= max in each dimension."""
    if (isinstance(shapes, (str, bytes)) or not hasattr(shapes, "__len__") or len(shapes) != 3
            or not all(hasattr(shape, "__len__") and not isinstance(shape, (str, bytes)) for shape in shapes)):
        raise ValueError(f"input {name!r}: a profile gives (min, opt, max), three shapes, or for an input whose values set "
                         f"shapes three lists of values (got {shapes!r})")
    low, opt, high = (list(shape) for shape in shapes)
    if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in low + opt + high):
        raise ValueError(f"input {name!r}: a profile's shapes hold integers (got {low}, {opt}, {high})")
    if not len(low) == len(opt) == len(high) or not all(a <= b <= c for a, b, c in zip(low, opt, high)):
        raise ValueError(f"input {name!r} needs min <= opt <= max of equal rank, got {low}, {opt}, {high}")


def _check_value_counts(tensor, values):
    """The profile's (min, opt, max) of an input whose values set shapes are value ranges: one value per element."""
    count = math.prod(tensor.shape) if all(d >= 0 for d in tensor.shape) else None
    wrong = [(which, len(given)) for which, given in zip(("min", "opt", "max"), values) if count is not None and len(given) != count]
    if wrong:
        which, length = wrong[0]
        raise ValueError(f"input '{tensor.name}': its values set shapes, so --min/--opt/--max give its values, one for each of its {count} "
                         f"element{'s' if count != 1 else ''} (shape {tuple(tensor.shape)}): --{which} gives {length}")


def check_profile_sizes(name: str, shapes: Sequence[Sequence[int]]) -> None:
    """The profile's (min, opt, max) shapes of input ``name`` hold sizes: none below 0, and shapes of at most
    :data:`~trt_scatter.model.files.MAX_ELEMENTS` elements (a larger dimension reached TensorRT's profile as another size)."""
    from trt_scatter.model.files import MAX_ELEMENTS

    given = ", ".join(f"{which} {list(shape)}" for which, shape in zip(("min", "opt", "max"), shapes))
    if any(d < 0 for shape in shapes for d in shape):
        raise ValueError(f"input '{name}': a profile's dimensions are sizes, at least 0 (got {given})")
    if math.prod(int(d) for d in shapes[-1]) > MAX_ELEMENTS:
        raise ValueError(f"input '{name}': the profile's max shape has more than {MAX_ELEMENTS} elements, TensorRT's most for one tensor (got {given})")


def _check_profile_fits(tensor, shapes):
    """The profile's (min, opt, max) shapes of an input have its rank and its static dimensions, none negative."""
    given = ", ".join(f"{which} {list(shape)}" for which, shape in zip(("min", "opt", "max"), shapes))
    check_profile_sizes(tensor.name, shapes)
    if not tensor.shape and any(shapes):  # NAME:[V] is the range of a shape input's values; this scalar is none
        raise ValueError(f"input '{tensor.name}': a scalar whose values set no shapes in this network (an export that broadcasts "
                         f"to a run-time slice makes a position do so, this one does not): leave it out of --min/--opt/--max (got {given})")
    if any(len(shape) != len(tensor.shape) for shape in shapes):
        raise ValueError(f"input '{tensor.name}': rank {len(tensor.shape)} in the model, the profile's shapes have rank "
                         f"{', '.join(sorted({str(len(shape)) for shape in shapes if len(shape) != len(tensor.shape)}))}")
    for axis, dim in enumerate(tensor.shape):
        for which, shape in zip(("min", "opt", "max"), shapes):
            if dim >= 0 and shape[axis] != dim:
                raise ValueError(f"input '{tensor.name}': dimension {axis} is {dim} in the model, the profile's {which} shape has "
                                 f"{shape[axis]} (got {given})")


def aliased_plugin_io_feature() -> trt.PreviewFeature:
    """``PreviewFeature.ALIASED_PLUGIN_IO_10_03``, which plugins with ``inplace=1`` (and the AOT
    plugins) need. It arrived in TensorRT 10.3, with ``IPluginV3OneBuildV2``: an older TensorRT is
    refused by a ValueError naming it."""
    trt = tensorrt()
    feature = getattr(trt.PreviewFeature, "ALIASED_PLUGIN_IO_10_03", None)
    if feature is None:
        raise ValueError(
            f"{backend.name()} {trt.__version__} has no PreviewFeature.ALIASED_PLUGIN_IO_10_03: "
            "plugins with inplace=1 need TensorRT 10.3 or newer (or use inplace=0)"
        )
    return feature


def default_preview_features() -> list[str]:
    """The names of the preview features that a new builder config of this TensorRT enables (TensorRT-RTX 1.7.1:
    RUNTIME_ACTIVATION_RESIZE_10_10): a list given to polygraphy's ``CreateConfig`` turns every other one off."""
    trt = tensorrt()
    config = backend.new_builder().create_builder_config()
    return [name for name, feature in trt.PreviewFeature.__members__.items() if config.get_preview_feature(feature)]


def has_gpu() -> bool:
    """Whether a CUDA driver with a GPU is here to run an engine (TensorRT-RTX builds one on the CPU all the same)."""
    from trt_scatter.plugins.cuda import CudaUnavailableError, driver  # imports neither CUDA nor TensorRT until called

    try:
        driver()
    except CudaUnavailableError:  # no cuda-python, no driver library, or cuInit failed
        return False
    return True


def with_aliased_plugin_io(create_config: Callable[[trt.Builder, trt.INetworkDefinition], trt.IBuilderConfig]) -> Callable[[trt.Builder, trt.INetworkDefinition], trt.IBuilderConfig]:
    """A config loader ``(builder, network) -> IBuilderConfig``: ``create_config``'s config (e.g.
    polygraphy's ``CreateConfig``) with :func:`aliased_plugin_io_feature` enabled. Only that feature
    changes: TensorRT's defaults stay as they are."""
    feature = aliased_plugin_io_feature()

    def load(builder, network):
        config = create_config(builder, network)
        config.set_preview_feature(feature, True)
        return config

    return load


def _info(tensor):
    return TensorInfo(tensor.name, dtypes.tensorrt_name(tensor.dtype), tuple(tensor.shape))


def _progress_monitor(trt):
    """A TensorRT progress monitor that prints each build phase as it starts, indented by depth."""

    class ProgressMonitor(trt.IProgressMonitor):
        def __init__(self):
            trt.IProgressMonitor.__init__(self)
            self._depth = 0

        def phase_start(self, phase_name, parent_phase, num_steps):
            print(f"{'  ' * self._depth}{phase_name} ({num_steps} steps)", flush=True)
            self._depth += 1

        def phase_finish(self, phase_name):
            self._depth = max(0, self._depth - 1)

        def step_complete(self, phase_name, step):
            return True

    return ProgressMonitor()
