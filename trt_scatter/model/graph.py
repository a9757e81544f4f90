"""Walking an ONNX graph and naming what is in it: the vocabulary every pass and message shares.

- :func:`all_nodes` / :func:`indexed_nodes` / :func:`subgraphs`: the nodes of a graph and of its
  If/Loop/Scan bodies, in order;
- :func:`node_label`: how every message names a node (``SliceScatter node 'write_kv'``);
- :func:`graph_names` / :func:`fresh_name`: the names a pass that adds nodes must avoid, and new ones;
- :func:`value_readers` / :func:`overwrite_conflict`: who reads a tensor's values, and what an in-place write of it would clobber;
- :func:`opset_version`: the version at which a model imports a domain;
- :class:`ModelError`: a model's mistake, one line naming the node (or the file), the rule and the value.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from trt_scatter.ops import DEFAULT_DOMAINS, is_trt_scatter

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

    import onnx


class ModelError(ValueError):
    """A model breaks a rule that trt-scatter checks before TensorRT runs, or is no model trt-scatter
    can read. The message is one line naming the node (:func:`node_label`) or the file, the input or
    attribute, the rule and the value."""


def opset_version(model: onnx.ModelProto, domain: str = "") -> int | None:
    """The version at which ``model`` imports ``domain`` (ONNX's own by default), or ``None``."""
    names = DEFAULT_DOMAINS if domain in DEFAULT_DOMAINS else (domain,)
    return next((opset.version for opset in model.opset_import if opset.domain in names), None)


def subgraphs(node: onnx.NodeProto) -> Iterator[onnx.GraphProto]:
    """The graphs ``node`` holds in its attributes (If branches, Loop and Scan bodies)."""
    return (graph for _, graph in named_subgraphs(node))


def named_subgraphs(node: onnx.NodeProto) -> Iterator[tuple[str, onnx.GraphProto]]:
    """``(attribute name, graph)`` for each graph ``node`` holds (``then_branch``, ``else_branch``, ``body``)."""
    for attribute in node.attribute:
        for graph in attribute.graphs:
            yield attribute.name, graph
        if attribute.HasField("g"):
            yield attribute.name, attribute.g


def all_graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """``graph`` and every graph its nodes hold (If/Loop/Scan bodies), nested ones included, outermost first."""
    yield graph
    for node in graph.node:
        for subgraph in subgraphs(node):
            yield from all_graphs(subgraph)


def all_nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    """The nodes of ``graph`` and of its subgraphs (If/Loop/Scan bodies), in order."""
    return (node for _, node in indexed_nodes(graph))


def indexed_nodes(graph: onnx.GraphProto) -> Iterator[tuple[int, onnx.NodeProto]]:
    """``(index, node)`` for :func:`all_nodes`, ``index`` being the node's position in its own graph
    (If/Loop/Scan bodies count from 0): how :func:`node_label` numbers a node without a name."""
    for index, node in enumerate(graph.node):
        yield index, node
        for subgraph in subgraphs(node):
            yield from indexed_nodes(subgraph)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: object) -> str:
    """``text`` with control characters (ANSI escapes, newlines) shown as escapes: a name from a model
    cannot draw on the terminal or cut a one-line message short."""
    return _CONTROL.sub(lambda match: match.group().encode("unicode_escape").decode(), str(text))


def declared_size(dim: onnx.TensorShapeProto.Dimension, dynamic: int | str | None = None) -> int | str | None:
    """A declared dimension's size; ``dynamic`` (None unless given) for a dynamic one: named, unset, or negative (some
    exporters write -1 for a size they do not know, and TensorRT's parser takes it for a dynamic dimension)."""
    return dim.dim_value if dim.HasField("dim_value") and dim.dim_value >= 0 else dynamic


def declared_dims(value: onnx.ValueInfoProto) -> list[int | str | None] | None:
    """A value's declared dimensions: sizes, a dynamic one's name or None; None where it declares no shape."""
    if not value.type.HasField("tensor_type") or not value.type.tensor_type.HasField("shape"):
        return None
    return [declared_size(d, d.dim_param or None) for d in value.type.tensor_type.shape.dim]


def node_label(node: onnx.NodeProto, index: int | None = None) -> str:
    """How every message names a node: ``SliceScatter node 'write_kv'``; one without a name by its
    position ``index`` in its graph (where the caller knows it) and its first output."""
    op_type = printable(node.op_type)
    if node.name:
        return f"{op_type} node '{printable(node.name)}'"
    where = ([] if index is None else [f"#{index}"]) + ([f"(output {printable(repr(node.output[0]))})"] if node.output else [])
    return " ".join([f"{op_type} node", *where])


def fed_inputs(graph: onnx.GraphProto) -> list[onnx.ValueInfoProto]:
    """``graph``'s inputs that a run feeds: those no initializer fills (ONNX lists an initializer among the inputs too,
    from IR version 3 on, as a default one may override)."""
    initializers = {init.name for init in graph.initializer}
    return [value for value in graph.input if value.name not in initializers]


def constant_inputs(graph: onnx.GraphProto) -> list[str]:
    """The names of ``graph``'s inputs that an initializer fills (the others are :func:`fed_inputs`)."""
    initializers = {init.name for init in graph.initializer}
    return [value.name for value in graph.input if value.name in initializers]


def fed_constant(name: str) -> str:
    """Why a run refuses a value fed for input ``name``, one of :func:`constant_inputs`: trt-scatter takes its value from
    the model, as TensorRT's ONNX parser does (and polygraphy drops a value fed for it without a word)."""
    return (f"input {name!r} has an initializer, so its value is a constant (as TensorRT's ONNX parser takes it): leave it "
            "out of the inputs, or remove the initializer to feed it")


def drop_initialized_inputs(model: onnx.ModelProto) -> None:
    """Removes from ``model``'s inputs (in place) those an initializer fills. trt-scatter takes their values as constants,
    as TensorRT's ONNX parser does, and a pass that folded one into the nodes it wrote must not leave onnxruntime free
    to take another value for it (only IR version 3 and older, which lists every initializer among the inputs, keeps them)."""
    if model.ir_version <= 3:
        return
    fed = fed_inputs(model.graph)
    if len(fed) != len(model.graph.input):
        del model.graph.input[:]
        model.graph.input.extend(fed)


#: ops that compute each output element from the inputs' elements at the same (broadcast) position: their output's shape
#: is the inputs' broadcast shape, and applied to a whole tensor they give at each masked element what they gave for the
#: masked elements alone (rewrite's masked writes)
ELEMENTWISE = frozenset({
    "Abs", "Acos", "Acosh", "Add", "And", "Asin", "Asinh", "Atan", "Atanh", "BitShift", "BitwiseAnd", "BitwiseNot", "BitwiseOr",
    "BitwiseXor", "Cast", "CastLike", "Ceil", "Celu", "Clip", "Cos", "Cosh", "Div", "Elu", "Equal", "Erf", "Exp", "Floor", "Gelu",
    "Greater", "GreaterOrEqual", "HardSigmoid", "HardSwish", "Identity", "IsInf", "IsNaN", "LeakyRelu", "Less", "LessOrEqual", "Log",
    "Max", "Mean", "Min", "Mish", "Mod", "Mul", "Neg", "Not", "Or", "Pow", "PRelu", "Reciprocal", "Relu", "Round", "Selu", "Sigmoid",
    "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqrt", "Sub", "Sum", "Tan", "Tanh", "ThresholdedRelu", "Where", "Xor",
})


def keeps_values(node: onnx.NodeProto) -> bool:
    """Whether ``node``'s first output holds its first input's values (Cast, CastLike, Identity): int32 indices reach
    ONNX's ScatterND through a Cast, and a message or a generated input names the tensor before it."""
    return node.op_type in ("Cast", "CastLike", "Identity") and node.domain in DEFAULT_DOMAINS and len(node.input) > 0


#: ops that read an input for its shape or type only -> that input's position (None: every input)
SHAPE_READERS = {"Shape": None, "Size": None, "EyeLike": None, "RandomUniformLike": None, "RandomNormalLike": None, "CastLike": 1}


def live_names(nodes: Sequence[onnx.NodeProto], outputs: Iterable[str]) -> set[str]:
    """The tensor names the graph ``outputs`` depend on through ``nodes`` (in topological order), themselves included;
    a node reads what its subgraphs read of outer names too."""
    live = set(outputs)
    for node in reversed(nodes):
        if any(name in live for name in node.output):
            live |= _reads(node)
    return live


def _reads(node):
    names = set(node.input)
    for subgraph in subgraphs(node):
        for inner in subgraph.node:
            names |= _reads(inner)
    return names


def value_readers(graph: onnx.GraphProto) -> dict[str, list[onnx.NodeProto]]:
    """Each tensor name of ``graph`` -> the nodes that read its values, in order. A node that reads only its shape or
    type is left out (:data:`SHAPE_READERS`, and a node whose results only such nodes read: the TorchScript exporter
    slices a cache to broadcast new tokens to the slice's shape); a trt_scatter node always counts, and so does an
    If or Loop whose body uses the tensor by name."""
    outputs = {output.name for output in graph.output}
    consumers = {}  # name -> [(node, input position, or -1 for a body's use)]
    for node in graph.node:
        for position, name in enumerate(node.input):
            consumers.setdefault(name, []).append((node, position))
        for body in subgraphs(node):
            for name in dict.fromkeys(_names_used(body)):
                consumers.setdefault(name, []).append((node, -1))

    def shape_only(node, position, depth=0):
        if node.op_type in SHAPE_READERS and position >= 0:
            return SHAPE_READERS[node.op_type] in (None, position)
        users = [user for output in node.output for user in consumers.get(output, [])]
        return (position >= 0 and depth < 8 and bool(users) and not any(o in outputs for o in node.output)
                and all(shape_only(user, at, depth + 1) for user, at in users))

    readers = {}
    for name, uses in consumers.items():
        nodes = [node for node, position in uses if is_trt_scatter(node) or not shape_only(node, position)]
        readers[name] = list({id(node): node for node in nodes}.values())
    return readers


def _names_used(body):
    """Every name a body (and the bodies in it) reads or outputs: an outer tensor is used by its name."""
    for graph in all_graphs(body):
        for node in graph.node:
            yield from node.input
        yield from (output.name for output in graph.output)


def overwrite_conflict(graph: onnx.GraphProto, node: onnx.NodeProto, readers: dict[str, list[onnx.NodeProto]] | None = None) -> str | None:
    """Why ``node`` (of ``graph``) should not write into the buffer of its first input (``inplace=1``), or None: that
    tensor is a graph output, another node reads its values, ``node`` reads it twice, or it is an enclosing
    graph's (``graph`` a body). ``readers``: :func:`value_readers` of ``graph``, where the caller has it."""
    name = node.input[0]
    readers = value_readers(graph) if readers is None else readers
    others = [other for other in readers.get(name, []) if other is not node]
    if any(output.name == name for output in graph.output):
        return "is a graph output"
    if others:
        return f"is read by {node_label(others[0], list(graph.node).index(others[0]))} too"
    if list(node.input).count(name) > 1:
        return "is read by this node twice"
    if not any(name == value.name for value in (*graph.input, *graph.initializer)) and not any(name in n.output for n in graph.node):
        return "belongs to the graph around this If or Loop body"
    return None


def nested_nodes(graph: onnx.GraphProto, wanted: Callable[[onnx.NodeProto], bool]) -> Iterator[tuple[onnx.NodeProto, str, str]]:
    """``(node, its label, label of the node of its graph that holds it)`` for each node that ``wanted`` picks in a
    subgraph of ``graph`` (an If branch, a Loop or Scan body, at any depth), in order: the nodes a pass of the main
    graph does not reach."""
    for index, holder in enumerate(graph.node):
        for subgraph in subgraphs(holder):
            for inner_index, inner in enumerate(subgraph.node):
                if wanted(inner):
                    yield inner, node_label(inner, inner_index), node_label(holder, index)
            yield from nested_nodes(subgraph, wanted)


def nested_trt_scatter_node(graph: onnx.GraphProto) -> tuple[str, str] | None:
    """``(label of the node, label of the node of its graph that holds it)`` for the first ``trt_scatter`` node in a
    subgraph of ``graph`` (an If branch, a Loop or Scan body, at any depth); None where there is none."""
    found = next(nested_nodes(graph, is_trt_scatter), None)
    return None if found is None else found[1:]


def own_names(graph: onnx.GraphProto) -> set[str]:
    """The names a subgraph declares as its inputs or initializers: inside it (and the graphs it holds) such a name is
    that tensor, not an outer graph's of the same name (a Loop body's carried value may be named like a model input)."""
    return {value.name for value in graph.input} | {init.name for init in graph.initializer}


def names_made_in(graph: onnx.GraphProto) -> set[str]:
    """The tensors ``graph`` itself makes: its inputs, initializers and its nodes' outputs (not those of the graphs it holds)."""
    return own_names(graph) | {name for node in graph.node for name in node.output if name}


class NodeKeyed(dict):
    """A dict keyed by ``id(node)`` that holds its nodes: protobuf (upb) hands out a new Python object for a node once
    the last one is gone, whose id may be another node's; while one is held, every walk of the graph gets that one."""

    def __init__(self) -> None:
        super().__init__()
        self.nodes: list[onnx.NodeProto] = []

    def add(self, nodes: Iterable[onnx.NodeProto], value: Any) -> None:
        for node in nodes:
            self.nodes.append(node)
            self[id(node)] = value


def around_nodes(graph: onnx.GraphProto, own: Callable[[onnx.GraphProto], Any], outside: Any) -> NodeKeyed:
    """``{id(node): what the subgraphs around it own}`` for each node of every subgraph of ``graph``, at any depth: from
    ``outside`` (for ``graph`` itself) each subgraph adds ``own(subgraph)`` (a set or a dict: ``|``, an inner graph's
    winning). The dict holds the nodes (:class:`NodeKeyed`), so that a later walk of ``graph`` finds them by id."""
    found = NodeKeyed()

    def walk(outer, around):
        for holder in outer.node:
            for subgraph in subgraphs(holder):
                inside = around | own(subgraph)
                found.add(subgraph.node, inside)
                walk(subgraph, inside)

    walk(graph, outside)
    return found


def shadowed_in(graph: onnx.GraphProto) -> dict[int, set[str]]:
    """``{id(node): names}`` for each node of every subgraph of ``graph``, at any depth: the outer graphs' names that the
    subgraphs around the node declare as their own (:func:`own_names`). Nodes of ``graph`` itself have none."""
    return around_nodes(graph, own_names, set())


def graph_names(graph: onnx.GraphProto) -> set[str]:
    """Every node and tensor name of ``graph``: the names a pass that adds nodes must avoid."""
    names = {name for node in graph.node for name in (node.name, *node.input, *node.output)}
    names |= {init.name for init in graph.initializer}
    names |= {value.name for value in (*graph.input, *graph.output, *graph.value_info)}
    return names


def fresh_name(hint: str, taken: set[str]) -> str:
    """``hint``, or ``hint_1``, ``hint_2``... whichever ``taken`` (a set of names) lacks first; adds it to ``taken``."""
    name, counter = hint, 0
    while name in taken:
        counter += 1
        name = f"{hint}_{counter}"
    taken.add(name)
    return name


def functions_hold_scatters(model: onnx.ModelProto) -> bool:
    """True where a model-local function's body holds a node of trt-scatter's ops or of ONNX's scatter ops, which the
    passes and the plugins would not see there (they walk the main graph and its subgraphs)."""
    from trt_scatter.ops import op_of

    return any(is_trt_scatter(node) or op_of(node) is not None for function in model.functions for node in function.node)


def trt_scatter_ops(model: onnx.ModelProto) -> list[str]:
    """The op types of the ``trt_scatter`` nodes of ``model`` (an ``onnx.ModelProto``), If/Loop bodies
    included, sorted: empty for a model that needs none of trt-scatter's plugins."""
    return sorted({node.op_type for node in all_nodes(model.graph) if is_trt_scatter(node)})
