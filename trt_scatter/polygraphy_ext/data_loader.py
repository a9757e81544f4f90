"""Valid inputs for models that contain scatter ops, as a polygraphy data loader.

polygraphy's default ``DataLoader`` fills every input with random values, which breaks scatter
ops: indices land out of range or repeat (undefined results), and SliceScatter's parameters do
not match its updates. :class:`ScatterDataLoader` reads the model instead:

1. Checks: :func:`~trt_scatter.passes.validate.validate` for the ``trt_scatter`` nodes, and every
   node input must exist. A model it cannot serve is refused with one line naming the node and
   the rule (the oracle's :class:`~trt_scatter.oracle.ScatterInputError` wording).
2. Shapes. Each free graph input dimension is a symbol; ONNX shape inference carries the symbols
   to every scatter node, whose shape relations are equalities (updates = indices for
   ScatterElements...), solved by merging symbols. Free symbols take ``DEFAULT_DIM``, then grow or
   shrink to leave room for distinct indices. Given shapes and static dims are fixed values.
3. Values, per iteration from ``(seed, iteration)``: distinct indices (about half of
   ScatterElements' and ScatterND's in their negative form), SliceScatter start/stop/step (and
   axes) whose slice has exactly the updates' shape, in all the forms the spec allows, fitting
   whichever of them the model holds as constants; random values for every other input. An
   integer input that reaches an index input through other ops (``stop = pos + T``) gets random
   values until the whole-model reference (:class:`trt_scatter.reference.Reference`, the oracle's
   rules) accepts them with distinct targets; so does an input that several scatter nodes take
   (drawn for the node whose indices address the fewest elements, then checked for all).

Use it from Python as an iterable of feed dicts (like polygraphy's ``DataLoader``), from
``polygraphy run`` with ``--trt-scatter-inputs``, or as polygraphy documents data-loader scripts:
``--data-loader-script`` naming this file of the installed package (its ``load_data`` serves the
model of that ``polygraphy run``, which trt-scatter's extension tells it)::

    polygraphy run model.onnx --onnxrt --pluginref \\
        --data-loader-script "$(python -c 'import trt_scatter.polygraphy_ext.data_loader as m; print(m.__file__)')"
"""

import math
import os
from collections import OrderedDict

import numpy as np

from trt_scatter import ops, oracle
from trt_scatter.log import first_line
from trt_scatter.oracle import rules
from trt_scatter.oracle.rules import ScatterInputError
from trt_scatter.oracle.scatter_update import axis_value
from trt_scatter.oracle.slice_scatter import check_slice_scatter_static
from trt_scatter.passes.tensors import DEFAULT_DOMAINS, ModelTensors
from trt_scatter.passes.validate import STANDARD_SCATTERS, ModelError, load_model, node_label, validate

DEFAULT_DIM = 4
TRIES = 100  # random values tried for an input that reaches index inputs through other ops

# What the running `polygraphy run` was given, as ScatterDataLoader's arguments; filled by the extension's argument group.
RUN_ARGS = {}


class ScatterDataLoader:
    """An iterable of ``iterations`` feed dicts (name -> NumPy array) of valid inputs for ``model``.

    Args:
        model: path of an ONNX model, or an ``onnx.ModelProto``.
        seed: the same seed gives the same inputs.
        input_shapes: ``{input name: shape}`` (or polygraphy ``TensorMetadata``) for dynamic inputs.
        iterations: how many feed dicts to yield.

    A model it cannot serve raises a ``ValueError`` (a ``ScatterInputError`` or ``ModelError``)
    with one line naming the node or input and the rule, on first use.
    """

    def __init__(self, model, seed=1, input_shapes=None, iterations=1):
        self.model = model
        self.seed = seed
        self.input_shapes = _as_shape_dict(input_shapes)
        self.iterations = iterations
        self.input_metadata = None  # polygraphy's Comparator sets this; the model decides instead
        self._plan = None

    def __len__(self):
        return self.iterations

    def __getitem__(self, iteration):
        if not 0 <= iteration < self.iterations:
            raise IndexError(iteration)
        if self._plan is None:
            self._plan = _Plan(_load(self.model), self.input_shapes, np.random.default_rng([self.seed]))
        return self._plan.feed(np.random.default_rng([self.seed, iteration]))

    def __iter__(self):
        return (self[i] for i in range(self.iterations))

    def shapes(self):
        """``{input name: shape}`` of the generated inputs (for TensorRT optimization profiles)."""
        return {name: tuple(array.shape) for name, array in self[0].items()}


def load_data():
    """Entry for ``polygraphy run --data-loader-script``: valid inputs for the model being run."""
    # polygraphy loads this file as a new module: read what the extension recorded in the package's copy
    from trt_scatter.polygraphy_ext.data_loader import RUN_ARGS

    if not RUN_ARGS.get("model"):
        raise ValueError("trt-scatter load_data: no model: use it as `polygraphy run MODEL --data-loader-script ...` with trt-scatter installed (its extension names the model)")
    return ScatterDataLoader(**RUN_ARGS)  # the extension recorded the loader's arguments, polygraphy's defaults applied


def _load(model):
    return load_model(model, external_data=True) if isinstance(model, (str, os.PathLike)) else model  # weights: the reference may run it


def _as_shape_dict(input_shapes):
    if not input_shapes:
        return {}
    # polygraphy TensorMetadata maps names to (dtype, shape) tuples with a .shape
    return {name: tuple(int(d) for d in getattr(meta, "shape", meta)) for name, meta in input_shapes.items()}


def _scatter_op(node):
    """The oracle's name of the scatter op ``node`` runs (validated ``trt_scatter`` nodes, ONNX's two), or ``None``."""
    if node.domain == ops.DOMAIN:
        return ops.OPS[node.op_type].oracle
    return STANDARD_SCATTERS.get(node.op_type) if node.domain in DEFAULT_DOMAINS else None


class _Node:
    """A scatter node under planning: its inputs by name (traced back through Cast/Identity), its label."""

    def __init__(self, node, index, origin):
        self.op = _scatter_op(node)
        names = ops.OPS[node.op_type].inputs if node.domain == ops.DOMAIN else ("data", "indices", "updates")
        self.inputs = {name: tensor for name, tensor in zip(names, node.input) if tensor}
        self.origin = {name: origin(tensor) for name, tensor in self.inputs.items()}
        self.label = node_label(node, index)
        self.axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        self.axes = None  # SliceScatter: the sliced axes, once chosen
        self.fixed = {}  # SliceScatter: sliced axis -> those of its start/stop/step that are constants

    def error(self, err):
        return ModelError(f"{self.label}: {err}")


class _Plan:
    """Shapes and value generators for every graph input of one model, fixed once per loader."""

    def __init__(self, model, given, rng):
        self.model, graph = model, model.graph
        self.tensors = ModelTensors(model)
        validate(model, self.tensors)
        initializers = {init.name for init in graph.initializer}
        # name -> (dtype, declared dims: int, str or None; None if the rank is not declared)
        self.inputs = OrderedDict((value.name, (self.tensors.dtype(value.name), self.tensors.symbolic_shape(value.name)))
                                  for value in graph.input if value.name not in initializers)
        _check_wiring(graph, self.inputs.keys() | initializers)
        self.given = {name: self._given(name, shape) for name, shape in given.items()}
        self.producers = {out: node for node in graph.node for out in node.output}
        self.nodes = [_Node(node, index, self._origin) for index, node in enumerate(graph.node) if _scatter_op(node)]
        self.generators = {}  # graph input -> (the node it is drawn for, callable(rng) -> array)
        self.shared = {}  # generated input -> (another node that takes it, its input there)
        self.shapes, self.concrete = _Shapes(self, rng).solve()
        # An input that several nodes take is drawn for the first planned: the one whose indices
        # address the fewest elements, so that the values fit the others too, or mostly (see _search).
        for node in sorted(self.nodes, key=self._addressed):
            try:
                _STEPS[node.op][1](self, node, rng)
            except ScatterInputError as err:
                raise node.error(err) from None
        self.searched = _searched_inputs(self)
        self._reference = None

    def _given(self, name, shape):
        if name not in self.inputs:
            raise ValueError(f"input {name!r} of the given shapes is not an input of the model (its inputs: {', '.join(self.inputs)})")
        dims = self.inputs[name][1]
        if dims is None:  # the model does not say: any shape
            return tuple(shape)
        if len(shape) != len(dims) or any(isinstance(d, int) and d != g for d, g in zip(dims, shape)):
            declared = "(" + ", ".join(str(d) if d is not None else "?" for d in dims) + ")"
            raise ValueError(f"input {name!r}: the given shape {tuple(shape)} does not fit the model's {declared}")
        return tuple(shape)

    def _origin(self, name):
        """``name`` traced back through Cast/Identity (which keep shape and values): ONNX's ScatterND takes
        int64 indices only, so int32 indices reach it through a Cast and are still generated."""
        while name in self.producers and self.producers[name].op_type in ("Cast", "Identity"):
            name = self.producers[name].input[0]
        return name

    def constant(self, node, name):
        return self.tensors.constant(node.inputs[name]) if name in node.inputs else None

    def _addressed(self, node):
        """How many elements (rows, slices) ``node``'s index input can address (inf where not known)."""
        data = self.concrete.get(node.inputs["data"])
        if not data:
            return math.inf
        if node.op == "scatter_nd":
            indices = self.concrete.get(node.inputs.get("indices"))
            return math.prod(data[: indices[-1]]) if indices and indices[-1] <= len(data) else math.inf
        if node.op == "scatter_update":
            axis = self.constant(node, "axis")
            return data[axis_value(axis) % len(data)] if axis is not None and -len(data) <= axis_value(axis) < len(data) else math.inf
        if node.op == "scatter_elements":
            return data[node.axis % len(data)] if -len(data) <= node.axis < len(data) else math.inf
        return min(data)

    def fed(self, node, name):
        """The graph input behind ``node``'s input ``name`` (through Cast/Identity), if the loader generates
        it for this node; one already generated for another node is drawn for that one and kept for
        ``node`` only where it fits it too (``shared``, see :meth:`_search`)."""
        origin = node.origin.get(name)
        if origin in self.generators and self.generators[origin][0] is not node:
            self.shared.setdefault(origin, (node, name))
            return None
        return origin if origin in self.inputs else None

    def shape(self, node, name):
        return self.concrete.get(node.inputs[name]) if name in node.inputs else None

    def feed(self, rng):
        feed = OrderedDict()
        for name, (dtype, _) in self.inputs.items():
            value = self.generators[name][1](rng) if name in self.generators else _random_values(rng, self.shapes[name], dtype)
            feed[name] = np.asarray(value).astype(dtype, copy=False)
        if self.searched or self.shared:
            self._search(feed, rng)
        return feed

    def _search(self, feed, rng):
        """Values for the inputs in ``self.searched`` (random) and ``self.shared`` (drawn again by their
        generators) until the reference accepts the feed with distinct targets."""
        from trt_scatter.reference import Reference

        if self._reference is None:
            self._reference = Reference(self.model)
        bound = max([max(self.concrete.get(node.inputs["data"], ()), default=0) for node in self.nodes] + [DEFAULT_DIM])
        names = list(dict.fromkeys(name for node in self.nodes for name in node.inputs.values()))
        last = None
        for _ in range(TRIES):
            for name in self.searched:
                dtype = self.inputs[name][0]
                feed[name] = rng.integers(-bound - 1, bound + 1, size=self.shapes[name]).astype(dtype)
            draw = np.random.default_rng(rng.integers(2**63))  # one per try: start/stop/step are drawn together per rng
            for name in self.shared:
                feed[name] = np.asarray(self.generators[name][1](draw)).astype(self.inputs[name][0], copy=False)
            try:
                values = dict(zip(names, self._reference.evaluator.run(names, dict(feed))))
                if all(_distinct_targets(node, values) for node in self.nodes):
                    return
                last = "two writes to one element"
            except Exception as err:  # the oracle's rules (ScatterInputError) or another op's
                last = first_line(err)
        if self.shared:
            name, (node, key) = next(iter(self.shared.items()))
            raise node.error(f"input {name!r} is drawn for {self.generators[name][0].label} too, and none of {TRIES} draws fit both (last: {last}); give valid inputs instead (--load-inputs)")
        name, (node, key) = next(iter(self.searched.items()))
        raise node.error(f"input {name!r} gives '{key}', and none of {TRIES} random values of it gave valid inputs (last: {last}); give valid inputs instead (--load-inputs)")


def _check_wiring(graph, defined):
    """Every node input names a graph input, an initializer or an earlier node's output."""
    known = set(defined)
    for index, node in enumerate(graph.node):
        for position, name in enumerate(node.input):
            if name and name not in known:
                raise ModelError(f"{node_label(node, index)}: input {position} {name!r} is not a graph input, an initializer or an earlier node's output")
        known.update(node.output)


# -- shapes: symbols merged by the ops' equalities


class _Shapes:
    """Symbolic shapes of a model's tensors and the values of their symbols.

    The scatter ops' shape rules say which symbols are equal (a union-find), and which products of
    dims must not exceed others for distinct indices (``bounds``); constant slice parameters derive
    updates' dims from data's (``_Node.fixed``).
    """

    def __init__(self, plan, rng):
        self.plan, self.rng = plan, rng
        self.parent, self.value = {}, {}
        self.bounds = []
        self.symbolic = _symbolic_shapes(plan)  # a ModelTensors of the model with a symbol for every free input dimension

    # union-find over symbols; ints are values
    def find(self, dim):
        if isinstance(dim, str):
            while self.parent.get(dim, dim) != dim:
                dim = self.parent[dim]
        return dim

    def equal(self, a, b):
        a, b = self.find(a), self.find(b)
        if a is None or b is None or a == b or (isinstance(a, int) and isinstance(b, int)):
            return  # unknown, the same, or two values (the oracle's shape check names a conflict)
        if isinstance(a, int):
            a, b = b, a
        self.parent[a] = b

    def equal_shapes(self, a, b):
        """Each dim of shape ``a`` equals the same dim of ``b``, where both ranks are known and agree."""
        if a is not None and b is not None and len(a) == len(b):
            for x, y in zip(a, b):
                self.equal(x, y)

    def of(self, dim):
        dim = self.find(dim)
        return dim if isinstance(dim, int) or dim is None else self.value.setdefault(dim, DEFAULT_DIM)

    def free(self, dim):
        return isinstance(self.find(dim), str)

    def shape(self, node, name):
        return self.symbolic.symbolic_shape(node.inputs[name]) if name in node.inputs else None

    def solve(self):
        for node in self.plan.nodes:
            try:
                _STEPS[node.op][0](self, node)
            except ScatterInputError as err:
                raise node.error(err) from None
        for _ in range(4):  # each pass only moves values toward the bounds
            for low, high in self.bounds:
                self._fit(low, high)
        for node in self.plan.nodes:
            try:
                for axis, fixed in node.fixed.items():
                    self._derive(node, axis, fixed)
            except ScatterInputError as err:
                raise node.error(err) from None
        missing = [name for name in self.plan.inputs if self.symbolic.symbolic_shape(name) is None]
        if missing:
            raise ValueError(f"input {missing[0]!r} has no shape in the model: give it one (input_shapes, --input-shapes)")
        names = list(self.plan.inputs) + [tensor for node in self.plan.nodes for tensor in node.inputs.values()]
        symbolic = {name: self.symbolic.symbolic_shape(name) for name in names}
        concrete = {name: tuple(self.of(d) for d in dims) for name, dims in symbolic.items() if dims is not None}
        return {name: concrete[name] for name in self.plan.inputs}, {name: dims for name, dims in concrete.items() if None not in dims}

    def _size(self, dims):
        return math.prod(1 if self.of(d) is None else self.of(d) for d in dims)

    def _fit(self, low, high):
        """Makes prod(low) <= prod(high): grows a free dim of ``high``, else shrinks the free dims of ``low``."""
        if self._size(low) <= self._size(high):
            return
        roots = {self.find(d) for d in low}
        for d in high:
            root = self.find(d)
            rest = self._size([x for x in high if self.find(x) != root])
            if self.free(d) and root not in roots and rest:
                self.value[root] = -(-self._size(low) // rest)
                return
        for d in low:
            root = self.find(d)
            rest = self._size([x for x in low if self.find(x) != root])
            if self.free(d) and rest:
                self.value[root] = min(self.value[root], self._size(high) // rest)

    def _derive(self, node, axis, fixed):
        """Constant slice parameters (``fixed``: some of start/stop/step) on ``axis``: a free updates
        dim there takes a length the slice can have in data's dim (the oracle's check names a fixed one that cannot)."""
        data, updates = self.shape(node, "data")[axis], self.shape(node, "updates")[axis]
        counts = _slices_by_count(self.of(data), fixed) if self.free(updates) else ()
        if counts and self.of(updates) not in counts:
            nonzero = sorted(c for c in counts if c) or [0]
            self.value[self.find(updates)] = nonzero[int(self.rng.integers(len(nonzero)))]


def _symbolic_shapes(plan):
    """:class:`~trt_scatter.passes.tensors.ModelTensors` of the model whose graph inputs have the given
    shapes, and a fresh symbol for every other dimension that is neither a value nor a symbol: ONNX
    shape inference then carries the symbols to every scatter node."""
    import onnx

    model = onnx.ModelProto()
    model.CopyFrom(plan.model)
    for value in model.graph.input:
        shape = value.type.tensor_type.shape
        if value.name in plan.given:
            del shape.dim[:]
            shape.dim.extend(onnx.TensorShapeProto.Dimension(dim_value=size) for size in plan.given[value.name])
        for i, dim in enumerate(shape.dim):
            if value.name in plan.inputs and not dim.HasField("dim_value") and not dim.dim_param:
                dim.dim_param = f"{value.name}:{i}"
    return ModelTensors(model)


# Each op's shape relations: equalities (merged symbols), bounds for distinct indices, derived dims.


def _relations_scatter_elements(shapes, node):
    data, indices, updates = (shapes.shape(node, n) for n in ("data", "indices", "updates"))
    if data is not None:
        rules.check_rank_at_least(node.op, "data", data, 1)
    shapes.equal_shapes(indices, updates)
    for a, b in zip(indices or (), data or ()):
        shapes.bounds.append(([a], [b]))


def _relations_scatter_nd(shapes, node):
    data, indices, updates = (shapes.shape(node, n) for n in ("data", "indices", "updates"))
    if data is None or indices is None:
        return
    rules.check_rank_at_least(node.op, "data", data, 1)
    rules.check_rank_at_least(node.op, "indices", indices, 1)
    if shapes.free(indices[-1]):  # rows of unknown length address elements
        shapes.equal(indices[-1], len(data))
    k = shapes.of(indices[-1])
    shapes.equal_shapes(updates, list(indices[:-1]) + list(data[k:]))
    shapes.bounds.append((list(indices[:-1]), list(data[:k])))


def _update_axis(plan, node, rank):
    axis = plan.constant(node, "axis")
    if axis is None:
        raise ScatterInputError(node.op, "axis", "must be a constant (initializer or Constant node) for generated inputs", node.inputs["axis"])
    return rules.normalize_axis(node.op, "axis", axis_value(axis), rank)


def _relations_scatter_update(shapes, node):
    data, indices, updates = (shapes.shape(node, n) for n in ("data", "indices", "updates"))
    if data is None or indices is None:
        return
    axis = _update_axis(shapes.plan, node, len(data))
    shapes.equal_shapes(updates, list(data[:axis]) + list(indices) + list(data[axis + 1 :]))
    shapes.bounds.append((list(indices), [data[axis]]))


def _relations_slice_scatter(shapes, node):
    plan = shapes.plan
    data, updates = shapes.shape(node, "data"), shapes.shape(node, "updates")
    if data is None or updates is None or len(data) != len(updates):
        return  # nothing to merge; the oracle's check names a wrong rank
    params = {key: plan.constant(node, key) for key in ("start", "stop", "step")}
    node.axes = _slice_axes(shapes, node)
    for key in ("start", "stop", "step", "axes"):  # fed parameters: one entry per sliced axis
        if shapes.shape(node, key):
            shapes.equal(shapes.shape(node, key)[0], len(node.axes))
    for axis, (a, b) in enumerate(zip(data, updates)):
        if axis not in node.axes:
            shapes.equal(a, b)
            continue
        position = node.axes.index(axis)
        fixed = {k: int(np.atleast_1d(v)[position]) for k, v in params.items() if v is not None}
        if fixed:
            node.fixed[axis] = fixed
        shapes.bounds.append(([b], [a]))


def _slice_axes(shapes, node):
    """The sliced axes: constant, default (one per start), or, fed, chosen once to fit updates' static dims."""
    plan, rank = shapes.plan, len(shapes.shape(node, "data"))
    constant = plan.constant(node, "axes")
    if constant is not None:
        return [int(a) % rank for a in np.atleast_1d(constant)]
    lengths = [len(np.atleast_1d(plan.constant(node, k))) for k in ("start", "stop", "step") if plan.constant(node, k) is not None]
    lengths += [shapes.find(shapes.shape(node, k)[0]) for k in ("start", "stop", "step", "axes") if k in node.inputs and shapes.shape(node, k)]
    count = next((n for n in lengths if isinstance(n, int)), rank)  # unknown lengths: every axis
    if "axes" not in node.inputs:
        return list(range(count))
    if plan.fed(node, "axes") is None:
        raise ScatterInputError(node.op, "axes", "must be a constant or a graph input for generated inputs", node.inputs["axes"])
    data, updates = shapes.shape(node, "data"), shapes.shape(node, "updates")
    fixed = [i for i, (d, u) in enumerate(zip(data, updates)) if isinstance(shapes.find(d), int) and isinstance(shapes.find(u), int) and d != u]
    others = [i for i in shapes.rng.permutation(rank).tolist() if i not in fixed]
    if len(fixed) > count:
        raise ScatterInputError(node.op, "axes", f"cannot be chosen for {count} sliced axes of data {tuple(data)}", f"updates {tuple(updates)}")
    return fixed + others[: count - len(fixed)]


# -- values: per-op generators of the index inputs fed by graph inputs


def _plan_scatter_elements(plan, node, rng):
    data, indices, updates = (plan.shape(node, n) for n in ("data", "indices", "updates"))
    name = plan.fed(node, "indices")
    _check_known(node, oracle.check_scatter_elements, name, data, indices, updates, node.axis)
    if name is None:
        return
    axis = rules.normalize_axis(node.op, "axis", node.axis, len(data))
    size = data[axis]
    if indices[axis] > size:
        raise ScatterInputError(node.op, "indices", f"dimension {axis} must be at most data's ({size}) for distinct indices", f"shape {indices}")

    def generate(rng, shape=indices):
        lines = math.prod(shape[:axis] + shape[axis + 1 :])
        moved = shape[:axis] + shape[axis + 1 :] + (shape[axis],)
        # Distinct on every line: a window of one random permutation of range(size), at a random
        # cyclic shift per line (memory grows with the indices, not with lines x size).
        permutation = rng.permutation(size)
        shifts = rng.integers(0, max(size, 1), (lines, 1))
        order = permutation[(shifts + np.arange(shape[axis])) % max(size, 1)]
        return _some_negative(rng, np.moveaxis(order.reshape(moved), -1, axis), size)

    plan.generators[name] = (node, generate)


def _plan_scatter_nd(plan, node, rng):
    data, indices, updates = (plan.shape(node, n) for n in ("data", "indices", "updates"))
    name = plan.fed(node, "indices")
    _check_known(node, oracle.check_scatter_nd, name, data, indices, updates)
    if name is None:
        return
    k = indices[-1]
    capacity, rows = math.prod(data[:k]), math.prod(indices[:-1])
    if rows > capacity:
        raise ScatterInputError(node.op, "indices", f"must have at most {capacity} rows for distinct rows", f"shape {indices}")

    def generate(rng, shape=indices):
        flat = rng.choice(capacity, size=rows, replace=False)
        coordinates = np.stack(np.unravel_index(flat, data[:k]), axis=-1) if k else np.zeros((rows, 0), np.int64)
        return _some_negative(rng, coordinates.reshape(shape), np.array(data[:k], np.int64))

    plan.generators[name] = (node, generate)


def _plan_scatter_update(plan, node, rng):
    data, indices, updates = (plan.shape(node, n) for n in ("data", "indices", "updates"))
    name = plan.fed(node, "indices")
    axis = None if data is None else _update_axis(plan, node, len(data))
    _check_known(node, oracle.check_scatter_update, name, data, indices, updates, axis)
    if name is None:
        return
    size, count = data[axis], math.prod(indices)
    if count > size:
        raise ScatterInputError(node.op, "indices", f"must have at most {size} elements for distinct indices", f"shape {indices}")
    plan.generators[name] = (node, lambda rng, shape=indices: rng.choice(size, size=count, replace=False).reshape(shape))


def _plan_slice_scatter(plan, node, rng):
    keys = ("start", "stop", "step")
    data, updates = plan.shape(node, "data"), plan.shape(node, "updates")
    if data is None or updates is None or node.axes is None:
        raise _unknown_shape(node, "data" if data is None else "updates")
    constants = {k: plan.constant(node, k) for k in keys}
    fed = {k: plan.fed(node, k) for k in (*keys, "axes")}
    known = {k: rules.as_int_vector(node.op, k, v) if v is not None else len(node.axes) for k, v in constants.items()}
    check_slice_scatter_static(data, updates, **known, **({"axes": node.axes} if "axes" in node.inputs else {}))
    if fed["axes"]:
        plan.generators[fed["axes"]] = (node, lambda rng, axes=node.axes: np.array(axes))
    if all(v is not None for v in constants.values()) or any(constants[k] is None and fed[k] is None for k in keys):
        return  # nothing to draw; or computed from other tensors: searched (see _searched_inputs)
    choices = []  # per sliced axis, the (start, stop, step) that take updates' length
    for axis in node.axes:
        dim, count = data[axis], updates[axis]
        if count > dim:
            raise ScatterInputError(node.op, "updates", f"dimension {axis} must be at most data's ({dim}) to be a slice of it", count)
        fixed = node.fixed.get(axis)
        choices.append(None if not fixed else _slices_by_count(dim, fixed).get(count))
        if fixed and not choices[-1]:
            raise ScatterInputError(node.op, "start/stop/step", f"constants {fixed} cannot take {count} elements of a dimension of size {dim}", count)

    cache = {}

    def draw(rng):
        """Rows start, stop, step: drawn together, once per feed (``rng``)."""
        if cache.get("rng") is not rng:
            slices = [c[int(rng.integers(len(c)))] if c else _random_slice(rng, data[a], updates[a]) for c, a in zip(choices, node.axes)]
            cache.update(rng=rng, slices=np.array(slices, np.int64).reshape(-1, 3).T)
        return cache["slices"]

    for row, key in enumerate(keys):
        if fed[key] is not None:
            plan.generators[fed[key]] = (node, lambda rng, row=row: draw(rng)[row])


# Each op's shape relations (before the shapes are solved) and planner (generators, after).
_STEPS = {
    "scatter_elements": (_relations_scatter_elements, _plan_scatter_elements),
    "scatter_nd": (_relations_scatter_nd, _plan_scatter_nd),
    "scatter_update": (_relations_scatter_update, _plan_scatter_update),
    "slice_scatter": (_relations_slice_scatter, _plan_slice_scatter),
}


def _check_known(node, check, fed, data, indices, updates, *more):
    """The op's shape check (the oracle's) where the shapes are known; to draw ``fed`` indices, data's
    and indices' shapes must be."""
    if fed is not None and (data is None or indices is None):
        raise _unknown_shape(node, "data" if data is None else "indices")
    if None not in (data, indices, updates):
        check(data, indices, updates, *more)


def _unknown_shape(node, name):
    return ScatterInputError(node.op, name, "must have a shape the loader can tell; give the shapes of the graph inputs it is computed from", "unknown")


def _searched_inputs(plan):
    """``{input: (node, index input)}``: integer graph inputs without a generator that a scatter node's
    index input is computed from (through ops the loader does not follow)."""
    producers, searched = plan.producers, {}
    for node in plan.nodes:
        for key, tensor in node.inputs.items():
            stack, seen = [tensor] if key not in ("data", "updates") else [], set()
            while stack:
                name = stack.pop()
                if name in plan.inputs and name not in plan.generators and np.dtype(plan.inputs[name][0]).kind in "iu":
                    searched.setdefault(name, (node, key))
                seen.add(name)
                stack += [n for n in (producers[name].input if name in producers else ()) if n and n not in seen]
    return searched


def _distinct_targets(node, values):
    """Whether the index values a scatter node got write no element twice (undefined in every spec):
    the oracle, writing distinct ids for the updates, keeps all of them."""
    args = {name: np.asarray(values[tensor]) for name, tensor in node.inputs.items()}
    ids = np.arange(args["updates"].size).reshape(args["updates"].shape)
    args.update(data=np.full(args["data"].shape, -1), updates=ids, **({"axis": node.axis} if node.op == "scatter_elements" else {}))
    return bool(np.isin(ids, getattr(oracle, node.op)(**args)).all())


def _some_negative(rng, indices, sizes):
    """About half of ``indices`` (in [0, s-1]) in their negative form i - s, which ONNX's
    ScatterElements/ScatterND allow: the same targets, and engines get checked on both forms."""
    return np.where(rng.random(indices.shape) < 0.5, indices - sizes, indices)


def _random_slice(rng, dim, count):
    """A random (start, stop, step) taking ``count`` elements of a dimension ``dim``, in the forms the
    spec allows: negative start/stop, negative steps, stops past the end ("before the first element")."""
    if count == 0 or dim == 0:
        start = int(rng.integers(0, dim + 1))
        return start, start, 1
    step = int(rng.choice([s for s in (1, 2, 3, -1, -2, -3) if (count - 1) * abs(s) + 1 <= dim]))
    span = (count - 1) * abs(step)
    first = int(rng.integers(0, dim - span)) if step > 0 else int(rng.integers(span, dim))
    start = first - dim if rng.random() < 0.3 else first
    stop = first + count * step
    if stop < 0:
        stop = -dim - 1 - int(rng.integers(0, 3))
    elif stop < dim and rng.random() < 0.3:
        stop -= dim
    return start, stop, step


def _slices_by_count(dim, fixed, limit=300_000):
    """``{count: [(start, stop, step), ...]}`` over the values the spec allows for the parameters not in
    ``fixed`` (start/stop in [-dim-1, dim], steps +-1..3), by searching them with the oracle's geometry."""
    values = range(-dim - 1, dim + 1)
    starts = [fixed["start"]] if "start" in fixed else values
    stops = [fixed["stop"]] if "stop" in fixed else values
    steps = [fixed["step"]] if "step" in fixed else (1, 2, 3, -1, -2, -3)
    if len(starts) * len(stops) * len(steps) > limit:
        raise ScatterInputError("slice_scatter", "start/stop/step", "mix constants and fed values on too large a dimension to search; feed all three", dim)
    by_count = {}
    for start in starts:
        for stop in stops:
            for step in steps:
                by_count.setdefault(oracle.slice_geometry(start, stop, step, dim)[1], []).append((start, stop, step))
    return by_count


def _random_values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "u":
        return rng.integers(0, 16, size=shape)
    if dtype.kind == "i":
        return rng.integers(-8, 8, size=shape)
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)  # bfloat16/float16 convert from this
