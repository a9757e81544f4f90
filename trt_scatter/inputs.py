"""Valid inputs for models that contain scatter ops: a data loader (polygraphy's, or any feed list's).

polygraphy's default ``DataLoader`` fills every input with random values, which breaks scatter
ops: indices land out of range or repeat (undefined results), and SliceScatter's parameters do
not match its updates. :class:`ScatterDataLoader` reads the model instead:

1. Checks: :func:`~trt_scatter.passes.validate.validate` for the ``trt_scatter`` nodes, and every
   node input must exist. A model it cannot serve is refused with one line naming the node and
   the rule (the oracle's :class:`~trt_scatter.oracle.ScatterInputError` wording).
2. Shapes. Each free graph input dimension is a symbol; ONNX shape inference carries the symbols
   to every scatter node, whose shape relations (each op's ``input_relations``, in its oracle
   module) are equalities (updates = indices for ScatterElements...), solved by merging symbols. Free symbols take ``DEFAULT_DIM``, then grow or
   shrink to leave room for distinct indices, and grow to take a constant index (one PyTorch's exporters wrap for
   negative values too: ``index_fill(1, [5], 0)`` gives at least 6 heads) or hold a slice of constant positions; a
   free data dim that indices or a run-time slice address holds them twice where that costs nothing else
   (``_Shapes.leave_room``), so that some of data stays and a position can move: shapes that a run of the model then
   refuses (another input that another op ties to that dim by name only) are drawn again without it. Given shapes
   and static dims are fixed values.
3. Values, per iteration from ``(seed, iteration)``, by each op's ``plan_inputs``: distinct indices (about half of
   ScatterElements' and ScatterND's in their negative form), SliceScatter start/stop/step (and
   axes) whose slice has exactly the updates' shape, in all the forms the spec allows, fitting
   whichever of them the model holds as constants; random values for every other input. An
   integer input that reaches an index input through other ops (``stop = pos + T``) gets random
   values until the whole-model reference (:class:`trt_scatter.reference.Reference`, the oracle's
   rules) accepts them with distinct targets; so does an input that several scatter nodes take
   (drawn for the node whose indices address the fewest elements, then checked for all). Nodes with a
   reduction take repeated targets (each op's oracle module says so: ``distinct_targets(node)``): their
   indices are drawn with repeats, and an input that reaches only such nodes (a GNN's ``edge_index``)
   gets values in [0, c), c the fewest targets they address.

Use it from Python as an iterable of feed dicts (like polygraphy's ``DataLoader``), from
``polygraphy run`` with ``--trt-scatter-inputs``, or from a data-loader script of your own
(``--data-loader-script valid_inputs.py``, as the README shows) whose ``load_data`` returns one.
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter, OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np

from trt_scatter import oracle
from trt_scatter.log import first_line, warn, warnings_dropped
from trt_scatter.model import all_nodes, as_model, declared_dims, declared_size, fed_inputs
from trt_scatter.model.graph import DEFAULT_DOMAINS, ELEMENTWISE, SHAPE_READERS, around_nodes, keeps_values, names_made_in, nested_nodes, shadowed_in, subgraphs
from trt_scatter.model.node import OpNode
from trt_scatter.model.tensors import ModelTensors
from trt_scatter.ops import op_of
from trt_scatter.oracle.rules import Known, ScatterInputError
from trt_scatter.passes.validate import validate
from trt_scatter.reference import NodeRunError

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Mapping, Sequence

    import onnx

    from trt_scatter.model import Model

DEFAULT_DIM = 4
TRIES = 100  # random values tried for an input that reaches index inputs through other ops
SHAPE_RUNS = 8  # random runs tried for the shapes of a scatter's computed inputs that shape inference cannot tell
MAX_INPUT_BYTES = 1 << 30  #: the most bytes of inputs a loader generates, all iterations together


class ScatterDataLoader:
    """An iterable of ``iterations`` feed dicts (name -> NumPy array) of valid inputs for ``model``.

    Args:
        model: path of an ONNX model, an ``onnx.ModelProto`` or a :class:`trt_scatter.model.Model`, or a loader of one
            (a callable: polygraphy's ``OnnxFromPath``), called on first use.
        seed: the same seed gives the same inputs.
        input_shapes: ``{input name: shape}`` (or polygraphy ``TensorMetadata``) for dynamic inputs.
        iterations: how many feed dicts to yield.
        value_ranges: ``{input name: (low, high)}`` (``""``: every input not named), as polygraphy's ``--val-range``, for
            the inputs no scatter rule draws (data, updates, other inputs): integers within both bounds, floats from
            low up to high. The values of an input a rule draws (:meth:`ruled_inputs`) keep to the rule.

    A model it cannot serve raises a ``ValueError`` (a ``ScatterInputError`` or ``ModelError``)
    with one line naming the node or input and the rule, on first use.
    """

    def __init__(self, model: str | os.PathLike | onnx.ModelProto | Model | Callable[[], Any], seed: int = 1, input_shapes: Mapping[str, Any] | None = None,
                 iterations: int = 1, value_ranges: Mapping[str, tuple[float, float]] | None = None) -> None:
        self.model = model
        self.seed = _count("seed", seed)
        self.input_shapes = _as_shape_dict(input_shapes)
        self.iterations = _count("iterations", iterations)
        self.value_ranges = _as_value_ranges(value_ranges)
        self.input_metadata = None  # polygraphy's Comparator sets this; the model decides instead
        self._plan = None

    def __len__(self):
        return self.iterations

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its plan (the rules' functions in it do not pickle: polygraphy run --use-subprocess sends the
        loader to its runner's child), which the same seed plans again to the same inputs."""
        return {**self.__dict__, "_plan": None}

    def __getitem__(self, iteration):
        if not 0 <= iteration < self.iterations:
            raise IndexError(iteration)
        return self._planned().feed(np.random.default_rng([self.seed, iteration]))

    def _planned(self):
        if self._plan is None:
            model = as_model(self.model() if callable(self.model) else self.model, weights=True)  # a loader (OnnxFromPath) too
            plan = _Plan(model, self.input_shapes, np.random.default_rng([self.seed]), self.value_ranges)
            if plan.roomy and not plan.runs(np.random.default_rng([self.seed, 0])):  # an op the loader knows no rule of may tie
                # the grown dim to another input's (Add(scatter, bias[n]) with n named apart): the shapes the rules alone set,
                # where a run takes those (where it fails either way, the failure is not the room's)
                bare = _Plan(model, self.input_shapes, np.random.default_rng([self.seed]), self.value_ranges, rooms=False)
                plan = bare if bare.runs(np.random.default_rng([self.seed, 0])) else plan
            _check_size(plan, self.iterations)
            self._plan = plan
            ignored = [name for name in _ruled(plan) if name in self.value_ranges]
            if ignored:  # the values each scatter node accepts decide, not a range
                warn(f"the value range for input {ignored[0]!r} (--val-range, value_ranges) is ignored: its values are drawn by the rules "
                     "of the scatter nodes it reaches")
        return self._plan

    def __iter__(self):
        return (self[i] for i in range(self.iterations))

    def onnx_model(self) -> onnx.ModelProto:
        """The model the inputs are drawn for, as the loader read it (once, on first use)."""
        return self._planned().model

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """``{input name: shape}`` of the generated inputs (for TensorRT optimization profiles)."""
        plan = self._planned()
        return {name: tuple(plan.shapes[name]) for name in plan.inputs}

    def ruled_inputs(self) -> list[str]:
        """The inputs whose values a scatter's rule draws (indices, slice parameters, what reaches them), in the model's
        order: ``value_ranges`` does not set them."""
        return _ruled(self._planned())


def _ruled(plan):
    return [name for name in plan.inputs if name in plan.generators or name in plan.searched or name in plan.shared]


def _check_size(plan, iterations):
    """The inputs fit in :data:`MAX_INPUT_BYTES` and each in TensorRT's largest tensor, before any is made."""
    from trt_scatter.model.files import MAX_ELEMENTS

    total = 0
    for name, shape in plan.shapes.items():
        count = math.prod(shape)
        if count > MAX_ELEMENTS:
            raise ValueError(f"input {name!r} of shape {tuple(shape)} has more than {MAX_ELEMENTS} elements, TensorRT's most for one tensor")
        total += count * np.dtype(plan.inputs[name][0] or np.float32).itemsize
    if total * iterations > MAX_INPUT_BYTES:
        raise ValueError(f"the inputs would take {total * iterations} bytes ({iterations} iteration(s) of {total}), more than the "
                         f"{MAX_INPUT_BYTES} the loader generates: give smaller shapes or fewer iterations")


def _count(name, value):
    """``value``, a non-negative int (a NumPy integer too, not a bool); a TypeError or ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"ScatterDataLoader: {name} must be an int (got {value!r})")
    if value < 0:
        raise ValueError(f"ScatterDataLoader: {name} must not be negative (got {value})")
    return int(value)


def _as_value_ranges(value_ranges):
    """``value_ranges`` as ``{name: (low, high)}``; a TypeError or ValueError naming what is not a range."""
    if value_ranges is None:
        return {}
    if not isinstance(value_ranges, dict):
        raise TypeError(f"ScatterDataLoader: value_ranges must be a dict of input name -> (low, high) (got {value_ranges!r})")
    for name, bounds in value_ranges.items():
        try:
            low, high = bounds
            valid = all(isinstance(bound, (int, float, np.integer, np.floating)) and not isinstance(bound, bool)
                        for bound in (low, high)) and low <= high
        except (TypeError, ValueError):
            valid = False
        if not valid:
            raise ValueError(f"ScatterDataLoader: value_ranges[{name!r}] must be (low, high) with low <= high (got {bounds!r})")
    return dict(value_ranges)


def _check_range(name, bounds, dtype):
    """``bounds`` holds values of input ``name``'s element type (an integer at least; none past its limits, which a cast
    would wrap or make infinite)."""
    dtype = np.dtype(dtype or np.float32)
    if dtype == np.bool_:
        return
    low, high = bounds
    if dtype.kind in "iu":
        low, high, limits = math.ceil(low), math.floor(high), np.iinfo(dtype)
        smallest, largest = int(limits.min), int(limits.max)
    else:
        try:
            limits = np.finfo(dtype)
        except ValueError:  # bfloat16, which only ml_dtypes (installed where it is) knows
            import ml_dtypes

            limits = ml_dtypes.finfo(dtype)
        smallest, largest = float(limits.min), float(limits.max)  # Python numbers: no cast of the bounds to the type
    if low > high or low < smallest or high > largest:
        raise ValueError(f"ScatterDataLoader: value_ranges gives input {name!r} ({dtype.name}) the range {tuple(bounds)!r}, which "
                         f"holds no {dtype.name} value or some past its limits [{smallest}, {largest}]")


def _as_shape_dict(input_shapes):
    if not input_shapes:
        return {}
    if not hasattr(input_shapes, "items"):
        raise TypeError(f"ScatterDataLoader: input_shapes must map input names to shapes (got {type(input_shapes).__name__})")
    # polygraphy TensorMetadata maps names to (dtype, shape) tuples with a .shape
    shapes = {}
    for name, meta in input_shapes.items():
        shape = getattr(meta, "shape", meta)
        if isinstance(shape, (str, bytes)) or not np.iterable(shape):
            raise TypeError(f"ScatterDataLoader: input_shapes[{name!r}] must be a sequence of ints (got {shape!r})")
        shapes[name] = tuple(_count(f"input_shapes[{name!r}] dimension", d) for d in shape)
    return shapes


class _Node(OpNode):
    """A scatter node under planning: its inputs by name, each traced back through the nodes that keep its values (``origin``)."""

    def __init__(self, node, index, tensors, origin):
        super().__init__(node, index, tensors)
        self.origin = {name: origin(tensor) for name, tensor in self.inputs.items()}


_GATHERS = ("Gather", "GatherElements", "GatherND")
_RESHAPES = ("Squeeze", "Unsqueeze", "Reshape", "Flatten", "Expand")  # keep every element's value, in another shape


class _Plan:
    """Shapes and value generators for every graph input of one model, fixed once per loader."""

    def __init__(self, model, given, rng, value_ranges, rooms=True):
        validate(model)  # once per Model
        self.rooms = rooms  # whether free data dims take room beyond what the indices address (_Shapes.leave_room)
        self.model, graph = model.proto, model.proto.graph
        self.tensors = model.tensors
        # name -> (dtype, declared dims: int, str or None; None if the rank is not declared)
        self.inputs = OrderedDict((value.name, (self.tensors.dtype(value.name), self.tensors.symbolic_shape(value.name)))
                                  for value in fed_inputs(graph))
        unknown = [name for name in value_ranges if name and name not in self.inputs]
        if unknown:
            raise ValueError(f"ScatterDataLoader: value_ranges names {unknown[0]!r}, which is not an input of the model (its inputs: "
                             f"{', '.join(self.inputs)})")
        self.value_ranges = {name: value_ranges.get(name, value_ranges.get("")) for name in self.inputs}
        booleans = [name for name in value_ranges if name and np.dtype(self.inputs[name][0] or np.float32) == np.bool_]
        if booleans:
            raise ValueError(f"ScatterDataLoader: value_ranges gives bool input {booleans[0]!r} a range: bool values have none")
        self.given = {name: self._given(name, shape) for name, shape in given.items()}
        self.producers = {out: node for node in graph.node for out in node.output}
        self.nodes = [_Node(node, index, self.tensors, self.origin) for index, node in enumerate(graph.node) if op_of(node)]
        self.nodes += self._nested_nodes(graph)
        self.generators = {}  # graph input -> (the node it is drawn for, callable(rng) -> array)
        self.shared = {}  # generated input -> (another node that takes it, its input there)
        self._solved = _Shapes(self, rng)
        self.shapes, self.concrete = self._solved.solve()
        self.roomy = self._solved.roomy
        self._shapes_by_running(rng)
        # An input that several nodes take is drawn for the first planned: the one whose indices
        # address the fewest elements, so that the values fit the others too, or mostly (see _search).
        for node in sorted(self.nodes, key=self._addressed):
            try:
                oracle.module(node.op).plan_inputs(self, node, rng)
            except ScatterInputError as err:
                raise node.error(err) from None
        self.searched, self.reached = _searched_inputs(self)
        self._plan_gathers()
        self._plan_trip_counts()
        self._reference = None
        for name, bounds in self.value_ranges.items():  # the ruled inputs' rules decide: a range of theirs is ignored
            if bounds is not None and name not in self.generators and name not in self.searched and name not in self.shared:
                _check_range(name, bounds, self.inputs[name][0])

    def _plan_gathers(self):
        """Integer graph inputs that give standard gathers' indices (``x[src]``, a message-passing layer's source nodes):
        drawn in [-s, s-1], s the least size they index in any of those gathers (a GatherND's smallest indexed
        dimension), as every element keeps its value through the shape ops between. Random values past that fail the
        run, and no search would draw them again. One a scatter's indices also reach is searched for the scatter, within
        s (``gathered``)."""
        sizes, self.gathered = {}, {}
        for node in self.model.graph.node:
            if node.op_type not in _GATHERS or node.domain not in DEFAULT_DOMAINS or len(node.input) < 2:
                continue
            name, data = node.input[1], self.concrete.get(node.input[0]) or self._solved.known(node.input[0])
            while (producer := self.producers.get(name)) is not None and (
                    keeps_values(producer) or (producer.op_type in _RESHAPES and producer.domain in DEFAULT_DOMAINS)):
                name = producer.input[0]
            if name not in self.inputs or name in self.generators or np.dtype(self.inputs[name][0]).kind not in "iu" or not data:
                continue
            attributes = {attribute.name: attribute.i for attribute in node.attribute}
            if node.op_type == "GatherND":
                depth = (self.concrete.get(node.input[1]) or self.tensors.shape(node.input[1]) or (-1,))[-1]
                batch = attributes.get("batch_dims", 0)
                dims = data[batch : batch + depth] if depth > 0 else (-1,)
            else:
                axis = attributes.get("axis", 0)
                dims = (data[axis],) if -len(data) <= axis < len(data) else (-1,)
            sizes.setdefault(name, []).append(min(dims, default=-1))
        for name, indexed in sizes.items():
            size = min(indexed)
            if name in self.searched:  # a scatter's indices too: searched for it, within the gathers' size (_search_range)
                self.gathered[name] = size
            elif size == 0 and math.prod(self.shapes[name]):  # no value indexes an empty dimension
                raise ValueError(f"input {name!r} gives a Gather's indices into a dimension of size 0 at these input shapes, so no "
                                 "value of it is valid: give shapes where that dimension is not empty (input_shapes, --input-shapes)")
            elif size > 0:  # every gather's size known (-1: not)
                signed = np.dtype(self.inputs[name][0]).kind == "i"
                self.generators[name] = (None, lambda rng, shape=self.shapes[name], size=size, signed=signed: (
                    oracle.rules.some_negative(rng, rng.integers(0, size, size=shape), size) if signed else rng.integers(0, size, size=shape)))

    def _plan_trip_counts(self):
        """Integer graph inputs that give a Loop's trip count ``M`` (through ops that keep values; the Loop in the main
        graph or in a subgraph at any depth), where nothing else draws them and the caller gives them no range: drawn in
        [0, 7]. onnxruntime runs no iteration for a negative count, but TensorRT builds no profile with one for a Loop
        with a scan output ("second input to LoopOutputNode must have non-negative value"), so `trt-scatter check` failed
        valid models on the inputs it drew."""
        hidden = shadowed_in(self.model.graph)
        loops = [node for node in all_nodes(self.model.graph) if node.op_type == "Loop" and node.domain in DEFAULT_DOMAINS and node.input]
        for loop in loops:
            name = loop.input[0]
            if name in hidden.get(id(loop), ()):
                continue  # a subgraph's own tensor
            while (producer := self.producers.get(name)) is not None and keeps_values(producer):
                name = producer.input[0]
            if name in self.inputs and np.dtype(self.inputs[name][0] or np.float32).kind in "iu" and name not in self.generators \
                    and name not in self.searched and name not in self.shared and self.value_ranges[name] is None:
                self.generators[name] = (None, lambda rng, shape=self.shapes[name]: rng.integers(0, 8, size=shape))

    def _shapes_by_running(self, rng):
        """Where static shape inference cannot tell a scatter node's data or updates shape (after a TopK with a
        computed k, a NonZero...), runs the part of the model that computes them, on random values of the graph
        inputs it reads (their shapes are known by now): the shapes of a run are the shapes to plan for."""
        unknown = [node for node in self.nodes if any(name in ("data", "updates") and tensor not in self.concrete and tensor not in self.inputs
                                                      for name, tensor in node.inputs.items())]  # fmt: skip
        # the nodes' computed index inputs too, from the same run: a length the run gives the updates (a slice at a drawn
        # position) is theirs too, where the rules would take a default for the symbol shape inference gave them; a few
        # tries, as random values may fail the part (a position past the end) where the valid ones the loader draws do not
        wanted = list(dict.fromkeys(tensor for node in unknown for tensor in node.inputs.values() if tensor not in self.inputs))
        for _ in range(SHAPE_RUNS if wanted else 0):
            values = _run_part(self, wanted, self.shapes, rng)
            if values is not None:
                self.concrete.update({name: tuple(np.shape(value)) for name, value in values.items()})
                break

    def _given(self, name, shape):
        if name not in self.inputs:
            raise GivenShapeError(f"input {name!r} of the given shapes is not an input of the model (its inputs: {', '.join(self.inputs)})")
        dims = self.inputs[name][1]
        if dims is None:  # the model does not say: any shape
            return tuple(shape)
        if len(shape) != len(dims) or any(isinstance(d, int) and d != g for d, g in zip(dims, shape)):
            raise GivenShapeError(f"input {name!r}: the given shape {tuple(shape)} does not fit the model's {oracle.rules.show_shape(dims)}")
        return tuple(shape)

    def _nested_nodes(self, graph):
        """The scatter nodes of the subgraphs (If branches, Loop and Scan bodies) that read only the main graph's tensors,
        but for their data, which may be a value the bodies around them declare with a static shape (a Loop's carried
        value, a Scan's state): their indices are drawn like any other's, so that the branch a run takes gets valid
        ones. A name a subgraph declares as its own input is not the main graph's tensor of that name
        (:func:`~trt_scatter.model.graph.shadowed_in`); one the main graph also makes is not taken for data."""
        outer, hidden, declared = names_made_in(graph), shadowed_in(graph), _body_inputs(graph)
        nodes = []
        for inner, label, holder in nested_nodes(graph, op_of):
            node = _Node(inner, None, self.tensors, self.origin)
            data = node.inputs.get(node.op.data_input)
            dims = declared[id(inner)].get(data)
            own_data = data not in outer and dims is not None and all(isinstance(d, int) for d in dims) and self.tensors.symbolic_shape(data) == tuple(dims)
            if all((name in outer and name not in hidden[id(inner)]) or (name == data and own_data) for name in inner.input if name):
                node.label = f"{label} in {holder}"
                nodes.append(node)
        return nodes

    def origin(self, name: str) -> str:
        """``name`` traced back through the nodes that keep its values (:func:`~trt_scatter.model.graph.keeps_values`):
        int32 indices that reach ONNX's ScatterND through a Cast are still generated as indices."""
        while name in self.producers and keeps_values(self.producers[name]):
            name = self.producers[name].input[0]
        return name

    def constant(self, node, name):
        return self.tensors.constant(node.inputs[name]) if name in node.inputs else None

    def _addressed(self, node):
        """How many elements (rows, slices) ``node``'s index input can address (inf where not known)."""
        capacity = oracle.module(node.op).input_capacity(self, node) if self.concrete.get(node.inputs[node.op.data_input]) else None
        return math.inf if capacity is None else capacity

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
        """The concrete shape of ``node``'s input ``name`` (``None`` where not known)."""
        return self.concrete.get(node.inputs[name]) if name in node.inputs else None

    def check_known(self, node, check, fed, data, indices, updates, *more):
        """The op's shape check (the oracle's) where the shapes are known; to draw ``fed`` indices, data's
        and indices' shapes must be."""
        if fed is not None and (data is None or indices is None):
            raise self.unknown_shape(node, "data" if data is None else "indices")
        if None not in (data, indices, updates):
            check(data, indices, updates, *more)

    @staticmethod
    def unknown_shape(node, name):
        return ScatterInputError(node.op.key, name, "must have a shape the loader can tell; give the shapes of the graph inputs it is computed from", "unknown")

    def runs(self, rng):
        """Whether the model runs (by the reference) on a feed drawn with ``rng``: a try whose warnings nobody sees (Python's
        too, which it would otherwise show once per line, so not again for the run that counts)."""
        import warnings

        from trt_scatter.reference import Reference

        try:
            with warnings_dropped(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                feed = self.feed(rng)
                if self._reference is None:
                    self._reference = Reference(self.model)
                self._reference.run(feed)
        except Exception:  # the oracle's rules or another op's: the caller decides
            return False
        return True

    def feed(self, rng):
        feed = OrderedDict()
        for name, (dtype, _) in self.inputs.items():
            value = (self.generators[name][1](rng) if name in self.generators
                     else _random_values(rng, self.shapes[name], dtype, self.value_ranges[name]))
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
        bound = max([max(self.concrete.get(node.inputs[node.op.data_input], ()), default=0) for node in self.nodes] + [DEFAULT_DIM])
        ranges = {name: self._search_range(name, bound) for name in self.searched}
        widths = {name: self._window_widths(name, *ranges[name]) for name in self.searched}
        names = list(dict.fromkeys(name for node in self.nodes for name in node.inputs.values()))
        drawn = self._value_dependents([*self.searched, *self.shared])
        feeding = {name: self._value_dependents([name]) for name in [*self.searched, *self.shared]}  # what each drawn input's values reach
        redraw = set(self.searched)  # a try keeps the inputs that fed no node that failed: independent inputs fit one by one
        blamed = Counter()  # how many tries each input fed a failing node in: the message names the most blamed
        last = None
        alike = min([TRIES, *(high - low for low, high in ranges.values())]) if ranges else 0  # tries of one value for all
        for attempt in range(TRIES + alike):
            for name in self.searched:
                if name not in redraw and attempt < TRIES:  # alike values: every input takes the try's one value, as all fit
                    continue
                dtype = self.inputs[name][0]
                if attempt < TRIES:
                    feed[name] = _random_try(rng, attempt, *ranges[name], widths[name], self.shapes[name]).astype(dtype)
                else:  # then one value for every element, those near 0 first: random values fit each row alone, so a batch
                    # of rows (a position per sequence that the model moves, pos + 1) only rarely all at once
                    feed[name] = np.full(self.shapes[name], _nearest_first(attempt - TRIES, *ranges[name]), dtype)
            draw = np.random.default_rng(rng.integers(2**63))  # one per try: start/stop/step are drawn together per rng
            for name in self.shared:  # every other try without negative indices, which another node's rule may refuse
                with oracle.rules.non_negative_draws() if attempt % 2 else contextlib.nullcontext():
                    feed[name] = np.asarray(self.generators[name][1](draw)).astype(self.inputs[name][0], copy=False)
            try:
                with warnings_dropped():  # of repeated targets in a try that is thrown away
                    values = dict(zip(names, self._reference.evaluator.run(names, dict(feed))))
                repeating = [node for node in self.nodes if _needs_distinct_targets(node) and not _distinct_targets(node, values)]
                if not repeating:
                    return
                last, failed = "two writes to one element", {name for node in repeating for name in node.node.output}
            except Exception as err:  # the oracle's rules (ScatterInputError) or another op's
                last, failed = first_line(err), set(getattr(err, "outputs", ()))
                if isinstance(err, NodeRunError) and not drawn & set(err.outputs):
                    name, (node, _) = next(iter({**self.searched, **self.shared}.items()))
                    unplanned = [other for other in self.inputs if other not in self.generators and other not in drawn
                                 and np.dtype(self.inputs[other][0]).kind in "iu" and set(err.outputs) & self._value_dependents([other])]
                    if unplanned:  # random integers the loader has no rule for (a gather's index of unknown size)
                        raise node.error(f"a run fails at values drawn for {unplanned[0]!r}, whose valid values the loader cannot tell: "
                                         f"{last}; give valid inputs (--load-inputs)") from None
                    raise node.error(f"a run fails whatever the values drawn for {name!r}: {last}; give inputs that run "
                                     f"(--load-inputs), or fix the model (an exporter may have kept a shape of its example)") from None
            blamed.update(name for name in [*self.searched, *self.shared] if feeding[name] & failed)
            redraw = {name for name in self.searched if feeding[name] & failed} or set(self.searched)
        name = max([*self.searched, *self.shared], key=lambda name: blamed[name])  # the first of the most blamed
        if name in self.shared:
            node, key = self.shared[name]
            raise node.error(f"input {name!r} is drawn for {self.generators[name][0].label} too, and none of {TRIES} draws fit both (last: {last}); give valid inputs instead (--load-inputs)")
        node, key = self.searched[name]
        crowded = getattr(oracle.module(node.op), "crowded", None)
        crowding = crowded(self, node) if crowded is not None else None
        remedy = (f"{crowding}, so some repeat whatever their values: give shapes that fit (--input-shapes), or valid inputs (--load-inputs)"
                  if crowding else "give valid inputs instead (--load-inputs)")
        raise node.error(f"input {name!r} gives '{key}', and none of {TRIES} random values of it, nor {alike} values alike in every element, "
                         f"gave valid inputs (last: {last}); {remedy}")


    def _value_dependents(self, names):
        """The tensors whose values follow from the values of the inputs ``names``. A shape reader (``Shape``, ``Size``)
        gives values that follow from them only where its input's shape does: an elementwise op's shape is its inputs'
        broadcast shape, a scatter's its data's, any other op's may follow from their values (a Slice's ends, a NonZero).
        Every output of a node with a subgraph counts, whatever its subgraph reads."""
        values, shapes = set(names), set()  # the drawn inputs keep their shapes
        for node in self.model.graph.node:
            outputs = [name for name in node.output if name]
            default, op = node.domain in DEFAULT_DOMAINS, op_of(node)
            if op is not None:  # the output has data's shape, whatever the index values (x.index_copy(2, pos, v).shape)
                if (values | shapes) & set(node.input):
                    values.update(outputs)
                if node.input[op.inputs.index(op.data_input)] in shapes:
                    shapes.update(outputs)
            elif next(subgraphs(node), None) is not None:
                values.update(outputs)
                shapes.update(outputs)
            elif default and node.op_type in SHAPE_READERS:
                position = SHAPE_READERS[node.op_type]
                read = [(name, position is None or k == position) for k, name in enumerate(node.input) if name]
                if any(name in (shapes if shape_only else values) for name, shape_only in read):
                    values.update(outputs)
                if any(name in shapes for name, _ in read):
                    shapes.update(outputs)
            elif default and node.op_type in ELEMENTWISE:
                if values & set(node.input):
                    values.update(outputs)
                if shapes & set(node.input):
                    shapes.update(outputs)
            elif (values | shapes) & set(node.input):
                values.update(outputs)
                shapes.update(outputs)
        return values

    def _window_widths(self, name, low, high):
        """The widths of :func:`_random_try`'s narrow windows for a searched input: the sizes of the dimensions of data
        of the nodes it reaches (an index must fit one of them), and 2, 4, 8, ... for those it reaches through other
        ops, up to the whole range [low, high)."""
        sizes = {size for node in self.reached.get(name, []) for size in self.concrete.get(node.inputs[node.op.data_input], ())}
        powers = {2**i for i in range(1, max(high - low, 2).bit_length())}
        return sorted(width for width in sizes | powers | {high - low} if 0 < width <= high - low)

    def _search_range(self, name, bound):
        """The values drawn for a searched input: in [0, c) where every scatter node it reaches takes repeated
        targets (a reduction: an edge list is valid as it is) and c, the least any of them takes in an index
        (its oracle module's ``index_bound``), is known; else in [-bound-1, bound], every form of index, until the
        reference accepts one. Within the size the gathers that read it index (``gathered``), too."""
        nodes, gathered = self.reached.get(name, []), self.gathered.get(name, -1)
        if gathered > 0:  # a gather reads it too (-1: a size not known)
            bound = min(bound, gathered - 1)
        if nodes and not any(_needs_distinct_targets(node) for node in nodes):
            modules = [oracle.module(node.op) for node in nodes]
            bounds = [getattr(module, "index_bound", module.input_capacity)(self, node) if self.concrete.get(node.inputs[node.op.data_input]) else None
                      for module, node in zip(modules, nodes)]
            if None not in bounds and min(bounds) > 0:
                return 0, int(min(bounds + ([gathered] if gathered > 0 else [])))
        return -bound - 1, bound + 1


def _random_try(rng, attempt, low, high, widths, shape):
    """The values of random try ``attempt`` in [low, high). Every other try is drawn in a narrower window, one of
    ``widths`` wide (the smallest first), from 0, around 0 or below 0, in turn: the dimension an index must fit may be
    far smaller than the largest, which sets [low, high). Those tries take turns at four ways to draw, as the targets
    of a write without a reduction must not repeat along some axis, and a lowered model's clamp moves an index past
    the end onto another: independent values, all distinct, each row (the last axis) distinct, each column (the first
    axis) distinct; a way the window cannot hold gives independent values."""
    if attempt % 2 == 0 or not shape:
        return rng.integers(low, high, size=shape)
    k = attempt // 2  # every width in turn, then the next way to draw, then the next place of the window
    width, k = widths[k % len(widths)], k // len(widths)
    way, place = k % 4, (k // 4) % 3
    first = max(low, (0, -(width // 2), -width)[place])  # from 0, around 0, below 0
    span = min(first + width, high) - first
    if way == 1 and math.prod(shape) <= span:
        return first + rng.choice(span, size=math.prod(shape), replace=False).reshape(shape)
    if way in (2, 3):
        moved = (*shape[1:], shape[0]) if way == 3 else tuple(shape)  # the distinct axis last
        lines, length = math.prod(moved[:-1]), moved[-1]
        if length <= span and lines * span <= MAX_DISTINCT_DRAW:
            values = (first + rng.random((lines, span)).argsort(axis=1)[:, :length]).reshape(moved)
            return np.moveaxis(values, -1, 0) if way == 3 else values
    return rng.integers(first, first + span, size=shape)


#: the most random numbers :func:`_random_try` draws to make its rows or columns distinct (lines x window)
MAX_DISTINCT_DRAW = 1 << 20


def _nearest_first(k, low, high):
    """The ``k``-th of the integers in [low, high) in the order 0, -1, 1, -2, 2, ... (``low`` again past the last)."""
    seen = -1
    for magnitude in range(max(abs(low), abs(high)) + 1):
        for value in ((0,) if magnitude == 0 else (-magnitude, magnitude)):
            if low <= value < high:
                seen += 1
                if seen == k:
                    return value
    return low


def _needs_distinct_targets(node):
    """Whether valid inputs must address each target of ``node`` once (its oracle module's ``distinct_targets``:
    a write without a reduction, whose repeats are undefined) or may repeat them (a reduction combines them)."""
    check = getattr(oracle.module(node.op), "distinct_targets", None)
    return True if check is None else check(node)


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
        self.bounds = []  # (low dims, high dims[, offset]): offset + prod(low) <= prod(high), for distinct indices, writes that fit
        self.rooms = []  # (low dims, high dims): prod(high) >= 2 prod(low) where it costs no other dim (leave_room)
        self.roomy = False  # whether a room grew some dim (the plan then checks that a run takes those shapes)
        self.taken = []  # (node, axis, size): a constant index of node's needs its data's dim there to be at least size (takes)
        self.derived = []  # (node, callable): dims that follow from others once those have values
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

    def index_values(self, node, name):
        """``(values, wrapped)``: the values of ``node``'s index input ``name`` in every run, where no shape sets them (a
        constant, or a non-negative one PyTorch's exporters wrap: ``ModelTensors.shape_free``), or as given to that
        wrap, negative ones counted from the end (``wrapped``: ``ModelTensors.unwrapped``); ``(None, False)`` else."""
        if name not in node.inputs:
            return None, False
        values = self.plan.tensors.shape_free(node.inputs[name])  # first: a wrap that folds whole is its folded values
        if values is not None:
            return values, False
        wrap = self.plan.tensors.unwrapped(node.inputs[name])
        return (None, False) if wrap is None else (wrap[0], True)

    def leave_room(self, low, high):
        """Asks that ``high``'s dims (data's) hold what ``low``'s dims (the indices', a slice's) address twice, so that a
        write leaves some of data as it was (with data as long as the indices every row is written, and a model that
        drops data would pass its golden check) and a run-time position can move. A preference, not a rule: taken after
        the rules settle, by growing a free dim of ``high`` that is none of ``low``'s, and given up where that would
        shrink another dim or break a rule (:meth:`_room_for`)."""
        self.rooms.append((low, high))

    def takes(self, node, axis, indices, negative=True, required=True):
        """Dimension ``axis`` of ``node``'s data takes every one of its constant index values ``indices`` (``negative``:
        where the op counts negative ones from its end): a free one grows to fit them (``x.index_fill(1, [5], 0)`` on
        heads of any number needs 6). ``required``: the op's rule (a slice's positions are clamped instead): a given
        shape that cannot take them is named when the shapes are solved, before any value is drawn."""
        if indices is not None and indices.size:
            need = max(int(indices.max()) + 1, -int(indices.min()) if negative else 0)  # Python ints: no overflow
            self.bounds.append(([need], [self.shape(node, node.op.data_input)[axis]]))
            if required:
                self.taken.append((node, axis, need))

    def solve(self):
        for node in self.plan.nodes:
            try:
                oracle.module(node.op).input_relations(self, node)
            except ScatterInputError as err:
                raise node.error(err) from None
        self._settle()
        for node, axis, need in self.taken if self.plan.given else ():  # where the given shapes fix the dim: a dim static
            source = node.origin.get(node.op.data_input)  # in the model that cannot take the index is the model's own mistake
            if source not in self.plan.inputs:
                continue  # data a node computes: the run names the index and the given shapes
            declared = self.plan.inputs[source][1]
            dim = self.shape(node, node.op.data_input)[axis]
            if (declared is None or not isinstance(declared[axis], int)) and not self.free(dim) and self.of(dim) < need:
                given = ", ".join(f"{name} {list(shape)}" for name, shape in self.plan.given.items())
                raise node.error(f"{node.op.key}: its constant indices need dimension {axis} of '{node.op.data_input}' to be at least "
                                 f"{need}, and the given shapes ({given}) make it {self.of(dim)}: give shapes where they fit "
                                 "(input_shapes, --input-shapes)")
        if self.plan.rooms:
            for low, high in self.rooms:
                self._room_for(low, high)
        # again until nothing moves: a slice may grow a free data dim after another node's length was taken from it,
        # or past a bound that another node's dim settled to (d indices into data of m: m grows again)
        for _ in range(len(self.derived) + 1):
            derived = dict(self.value)
            for node, derive in self.derived:
                try:
                    derive()
                except ScatterInputError as err:
                    raise node.error(err) from None
            if self.value == derived:
                break
            self._settle()
        self._fit_expanded_inputs()
        missing = [name for name in self.plan.inputs if self.symbolic.symbolic_shape(name) is None]
        if missing:
            raise ValueError(f"input {missing[0]!r} has no shape in the model: give it one (input_shapes, --input-shapes)")
        names = list(self.plan.inputs) + [tensor for node in self.plan.nodes for tensor in node.inputs.values()]
        symbolic = {name: self.symbolic.symbolic_shape(name) for name in names}
        concrete = {name: tuple(self.of(d) for d in dims) for name, dims in symbolic.items() if dims is not None}
        return {name: concrete[name] for name in self.plan.inputs}, {name: dims for name, dims in concrete.items() if None not in dims}

    def _settle(self):
        for _ in range(len(self.bounds) + 1):  # each pass only moves values toward the bounds; a chain settles a link a pass
            settled = dict(self.value)
            for bound in self.bounds:
                self._fit(*bound)
            if self.value == settled:
                break

    def _room_for(self, low, high):
        """:meth:`leave_room`'s preference, taken where it grows a free dim of ``high`` that is none of ``low``'s and the
        rules, settled again, keep every other value and hold; else the values stay as they were."""
        roots = {self.find(d) for d in low}
        free = [d for d in high if self.free(d) and self.find(d) not in roots]
        wanted = 2 * self._size(low)
        if not free or self._size(high) >= wanted:
            return
        root, before = self.find(free[0]), dict(self.value)
        rest = self._size([d for d in high if self.find(d) != root])
        if not rest:
            return
        self.value[root] = -(-wanted // rest)
        self._settle()
        kept = all(self.value.get(key, value) >= value for key, value in before.items())
        if kept and self._bounds_hold():
            self.roomy = True
        else:
            self.value = before

    def _fit_expanded_inputs(self):
        """PyTorch's exporters broadcast a slice assignment's value to the slice with an ``Expand`` to a shape they compute
        from data's dims (``x[..., 1::2] = y``: ``(n + 1) // 2``; ``x[:, 1:] = y``: ``n - 1``), so the write's rules do
        not see ``y``'s length. A free dim of a graph input that an Expand takes (through Cast/Identity, and a Reshape to
        a constant shape: ``y.view(-1)`` of a row) gets the size the Expand's shape gives it where it would not
        broadcast, worked out by running the nodes that compute that shape on two draws of random values (a shape they
        disagree on, which values set, or that holds a negative size, is left as it is); kept where every bound still
        holds."""
        plan = self.plan
        expands = []  # (Expand node, the graph input it takes, the constant shape a Reshape between them gives it or None)
        for node in plan.model.graph.node:
            if node.op_type != "Expand" or node.domain not in DEFAULT_DOMAINS or len(node.input) != 2:
                continue
            source, reshape = plan.origin(node.input[0]), None
            producer = plan.producers.get(source)
            if producer is not None and producer.op_type == "Reshape" and producer.domain in DEFAULT_DOMAINS and len(producer.input) == 2:
                reshape, source = plan.tensors.constant(producer.input[1]), plan.origin(producer.input[0])
                if reshape is None:
                    continue
            if source in plan.inputs and self.symbolic.symbolic_shape(source) is not None:
                expands.append((node, source, None if reshape is None else [int(d) for d in np.reshape(reshape, -1)]))
        before, wanted = dict(self.value), [node.input[1] for node, _, _ in expands]
        for _ in expands:  # a size set for one Expand may move another's shape
            shapes = {name: tuple(self.of(d) for d in dims) for name in plan.inputs if (dims := self.symbolic.symbolic_shape(name)) is not None}
            runs = [_run_part(plan, wanted, shapes, np.random.default_rng(seed)) or {} for seed in (0, 1)]
            targets = {name: runs[0][name].tolist() for name in runs[0] if name in runs[1] and np.array_equal(runs[0][name], runs[1][name])
                       and (runs[0][name] >= 0).all()}  # a shape that values set (two runs disagree), or a size no dim has: left to the run
            moved = False
            for node, source, reshape in expands:
                if node.input[1] not in targets:
                    continue
                dims, target = self.symbolic.symbolic_shape(source), targets[node.input[1]]
                if reshape is not None:
                    moved = self._fit_reshaped(dims, reshape, target) or moved
                    continue
                for dim, size in zip(reversed(dims), reversed(target)):
                    if self.free(dim) and size != 1 and self.of(dim) not in (1, size):
                        self.value[self.find(dim)], moved = int(size), True
            if not moved:
                break
        if not self._bounds_hold():
            self.value = before

    def _bounds_hold(self):
        """Whether the values keep every bound (``offset + prod(low) <= prod(high)``)."""
        return all((offset[0] if offset else 0) + self._size(low) <= self._size(high) for low, high, *offset in self.bounds)

    def _fit_reshaped(self, dims, reshape, target):
        """For :meth:`_fit_expanded_inputs`: sizes the one free dim of an input of ``dims`` that a Reshape to the constant
        ``reshape`` (one -1 at most, no 0) gives an Expand to ``target``, so that the -1 takes the Expand's size there (or
        the input holds the constant shape's elements); whether it moved a value."""
        roots = [self.find(d) for d in dims if self.free(d)]
        if len(roots) != 1 or 0 in reshape or reshape.count(-1) > 1 or any(self.of(d) is None for d in dims):
            return False
        fixed, rest = math.prod(d for d in reshape if d != -1), math.prod(self.of(d) for d in dims if self.find(d) != roots[0])
        if -1 in reshape:
            from_end = len(reshape) - reshape.index(-1)
            wanted = fixed * (target[-from_end] if from_end <= len(target) else 1)
        else:
            wanted = fixed
        if not rest or wanted % rest or self.of(roots[0]) == wanted // rest or (-1 in reshape and wanted == fixed):
            return False
        self.value[roots[0]] = wanted // rest
        return True

    def known(self, name):
        """The shape of any tensor ``name`` (a gather's data computed from the inputs, ``lin(x)[src]``) as far as the
        inputs' shapes set it, -1 for each other dimension; ``None`` where its rank is not known. Solved first."""
        dims = self.symbolic.symbolic_shape(name)
        if dims is None:
            return None
        roots = [self.find(d) for d in dims]
        return tuple(root if isinstance(root, int) else self.value.get(root, -1) for root in roots)

    def _size(self, dims):
        return math.prod(1 if self.of(d) is None else self.of(d) for d in dims)

    def _fit(self, low, high, offset=0):
        """Makes offset + prod(low) <= prod(high): grows a free dim of ``high``, else shrinks the free dims of ``low``."""
        if offset + self._size(low) <= self._size(high):
            return
        roots = {self.find(d) for d in low}
        for d in high:
            root = self.find(d)
            rest = self._size([x for x in high if self.find(x) != root])
            if self.free(d) and root not in roots and rest:
                self.value[root] = -(-(offset + self._size(low)) // rest)
                return
        for d in low:
            root = self.find(d)
            rest = self._size([x for x in low if self.find(x) != root])
            if self.free(d) and rest:
                self.value[root] = max(0, min(self.value[root], (self._size(high) - offset) // rest))


def _body_inputs(graph):
    """``{id(node): {name: declared dims or None}}`` for each node of every subgraph of ``graph``, at any depth: the inputs
    the subgraphs around the node declare (a Loop body's carried values, a Scan body's states and slices), an inner
    graph's declaration of a name winning."""
    return around_nodes(graph, lambda subgraph: {value.name: declared_dims(value) for value in subgraph.input}, {})


def _symbolic_shapes(plan):
    """:class:`~trt_scatter.model.ModelTensors` of the model whose graph inputs have the given
    shapes, and a fresh symbol for every other dimension that is neither a value nor a symbol: ONNX
    shape inference then carries the symbols to every scatter node."""
    import onnx

    model = onnx.ModelProto()
    model.CopyFrom(plan.model)
    bound = named_dimensions(model.graph, plan.given)
    for value in model.graph.input:
        shape = value.type.tensor_type.shape
        for dim in shape.dim:  # a named dimension a given shape sets is that size in every input that names it
            if dim.dim_param in bound:
                dim.dim_value = bound[dim.dim_param][0]
        if value.name in plan.given:
            del shape.dim[:]
            shape.dim.extend(onnx.TensorShapeProto.Dimension(dim_value=size) for size in plan.given[value.name])
        for i, dim in enumerate(shape.dim):
            if value.name in plan.inputs and declared_size(dim) is None and not dim.dim_param:
                dim.dim_param = f"{value.name}:{i}"
    return ModelTensors(model)


class GivenShapeError(ValueError):
    """A shape given for an input (``input_shapes``) that the model refuses: no input of that name, one of another
    rank or static size, or two given shapes that disagree on a named dimension."""


class NamedDimensionConflict(GivenShapeError):
    """Two shapes give one named dimension of a model two sizes: ``name``, and ``(size, input)`` of each."""

    def __init__(self, name: str, first: tuple[int, str], second: tuple[int, str]) -> None:
        self.name, self.first, self.second = name, first, second
        super().__init__(f"dimension {name!r} is {first[0]} in the given shape of input {first[1]!r} and {second[0]} in that of "
                         f"input {second[1]!r}: the model names them one dimension")

    __reduce__ = ScatterInputError.__reduce__  # pickled as it is, not by calling __init__ with the message


def named_dimensions(graph: onnx.GraphProto, shapes: dict[str, Sequence[int]]) -> dict[str, tuple[int, str]]:
    """``{dimension name: (size, input)}`` that ``shapes`` (``{input name: shape}``) give the named (symbolic) dimensions
    of ``graph``'s inputs; a name given two sizes is a :class:`NamedDimensionConflict`."""
    bound = {}
    for value in graph.input:
        if value.name not in shapes:
            continue
        for dim, size in zip(value.type.tensor_type.shape.dim, shapes[value.name]):
            if dim.dim_param:
                first = bound.setdefault(dim.dim_param, (size, value.name))
                if first[0] != size:
                    raise NamedDimensionConflict(dim.dim_param, first, (size, value.name))
    return bound


def _run_part(plan, wanted, shapes, rng):
    """``{tensor: value}`` of the ``wanted`` tensors, by the reference on the part of ``plan``'s model that computes them,
    on random values of each graph input it reads at its ``shapes``; ``None`` where a shape is not known or the reference
    cannot run the part (an op it lacks, values it refuses: the caller names what is not known)."""
    from onnx import helper

    from trt_scatter.reference import Reference

    graph, needed, nodes = plan.model.graph, set(wanted), []
    for node in reversed(graph.node):  # the nodes the wanted tensors depend on, in graph order
        if needed & set(node.output):
            nodes.insert(0, node)
            needed |= {name for name in node.input if name}
    if any(name in plan.inputs and None in shapes.get(name, (None,)) for name in needed):
        return None
    feeds = {name: np.asarray(_random_values(rng, shapes[name], dtype)).astype(dtype, copy=False)
             for name, (dtype, _) in plan.inputs.items() if name in needed}
    part = helper.make_model(helper.make_graph(nodes, "part", [value for value in graph.input if value.name in feeds],
                                               [helper.make_tensor_value_info(name, 0, None) for name in wanted],
                                               initializer=[init for init in graph.initializer if init.name in needed]),
                             opset_imports=plan.model.opset_import, ir_version=plan.model.ir_version)  # fmt: skip
    try:
        return Reference(part).run(feeds)
    except Exception:
        return None


def _searched_inputs(plan):
    """``({input: (node, index input)}, {input: [nodes]})``: integer graph inputs without a generator whose values a
    scatter node's index input follows from (:meth:`_Plan._value_dependents`: through ops the loader does not follow,
    not through a shape that stays), the first node that reads each, and every node whose index inputs it reaches. An
    input generated for one node that reaches another's index input that way (a Squeeze, a Reshape, an Add between
    them) is ``shared`` with it: drawn again until both take it."""
    candidates = [name for name, (dtype, _) in plan.inputs.items() if name in plan.generators or np.dtype(dtype).kind in "iu"]
    dependents = {name: plan._value_dependents([name]) for name in candidates}
    searched, reached = {}, {}
    for node in plan.nodes:
        for key, tensor in node.inputs.items():
            if key in node.op.element_inputs:
                continue
            for name in (name for name in candidates if tensor in dependents[name]):
                if name in plan.generators:
                    if plan.generators[name][0] is not node:
                        plan.shared.setdefault(name, (node, key))
                else:
                    searched.setdefault(name, (node, key))
                    if node not in reached.setdefault(name, []):
                        reached[name].append(node)
    return searched, reached


def _distinct_targets(node, values):
    """Whether the index values a scatter node got write no element twice with other values (undefined in every
    spec): the oracle, writing distinct ids for the updates, keeps all of them, or else the op's ``repeated_target``
    finds each element written twice given the same value (a lowering's fill of a reduction's identity)."""
    args = {name: np.asarray(values[tensor]) for name, tensor in node.inputs.items()}
    data, updates = node.op.data_input, node.op.updates_input
    ids = np.arange(args[updates].size).reshape(args[updates].shape)
    attributes = {attribute.name: node.attribute(attribute.name) for attribute in node.node.attribute}
    if np.isin(ids, oracle.module(node.op).evaluate({**args, data: np.full(args[data].shape, -1), updates: ids}, attributes)).all():
        return True
    return oracle.module(node.op).repeated_target(Known(args, attributes)) is None


def _random_values(rng, shape, dtype, bounds=None):
    """Random values of ``dtype``: within ``bounds`` (low, high) where given (integers within both, floats from low up
    to high, as polygraphy's ``--val-range``), else small ones, of both signs where the type has them."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if bounds is not None:
        low, high = bounds
        if dtype.kind in "iu":
            return rng.integers(math.ceil(low), math.floor(high), size=shape, dtype=dtype, endpoint=True)
        return rng.uniform(low, high, size=shape)  # float64: the feed's cast rounds to the input's type
    if dtype.kind == "u":
        return rng.integers(0, 16, size=shape)
    if dtype.kind == "i":
        return rng.integers(-8, 8, size=shape)
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)  # bfloat16/float16 convert from this
