"""Valid inputs for models that contain scatter ops, as a polygraphy data loader.

polygraphy's default ``DataLoader`` fills every input with random values, which breaks scatter
ops: indices land out of range or repeat (undefined results), and SliceScatter's parameters do
not match its updates. :class:`ScatterDataLoader` reads the model instead: it finds the scatter
nodes, sees which graph inputs feed their indices, updates and slice parameters, resolves their
shapes (given shapes > static dims > ``DEFAULT_DIM``, the same value for the same named dim) and
generates, per iteration from ``(seed, iteration)``:

- ScatterElements: indices distinct along ``axis`` on every line (no two writes hit one element);
- ScatterND: distinct index rows;
- (both: about half of the values in their negative form, i - s, which ONNX allows)
- ScatterUpdate: distinct indices in [0, s-1] (its spec allows no negative ones);
- SliceScatter: start/stop/step (and axes) whose slice has exactly the updates' shape, with
  negative forms and negative steps, respecting whichever of them the model holds as constants;
- every other input: random values of its type.

Use it from Python as an iterable of feed dicts (like polygraphy's ``DataLoader``), or from
``polygraphy run`` with ``--trt-scatter-inputs`` (the trt-scatter extension) or
``--data-loader-script`` pointing at this file: :func:`load_data` reads the model (and
``--seed``/``--input-shapes``) of the running ``polygraphy run``, or ``TRT_SCATTER_MODEL``.
"""

import itertools
import math
import os
from collections import OrderedDict
from types import SimpleNamespace

import numpy as np

from trt_scatter import oracle
from trt_scatter.oracle import rules
from trt_scatter.oracle.rules import ScatterInputError
from trt_scatter.oracle.scatter_update import axis_value

DEFAULT_DIM = 4
MODEL_ENV_VAR = "TRT_SCATTER_MODEL"
SEED_ENV_VAR = "TRT_SCATTER_SEED"

# What the running `polygraphy run` was given; filled by the extension's argument group.
RUN_ARGS = {}


class ScatterDataLoader:
    """An iterable of ``iterations`` feed dicts (name -> NumPy array) of valid inputs for ``model``.

    Args:
        model: path of an ONNX model, or an ``onnx.ModelProto``.
        seed: the same seed gives the same inputs.
        input_shapes: ``{input name: shape}`` (or polygraphy ``TensorMetadata``) for dynamic inputs.
        iterations: how many feed dicts to yield.
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

    model = os.environ.get(MODEL_ENV_VAR) or RUN_ARGS.get("model")
    if not model:
        raise ValueError(
            f"trt-scatter load_data: no model: run it under `polygraphy run MODEL` with the trt-scatter extension "
            f"installed, or set {MODEL_ENV_VAR}=path/to/model.onnx"
        )
    seed = RUN_ARGS.get("seed")
    if seed is None:
        seed = int(os.environ.get(SEED_ENV_VAR, "1"))
    return ScatterDataLoader(model, seed=seed, input_shapes=RUN_ARGS.get("input_shapes"), iterations=RUN_ARGS.get("iterations") or 1)


def _load(model):
    import onnx

    return onnx.load(os.fspath(model)) if isinstance(model, (str, os.PathLike)) else model


def _as_shape_dict(input_shapes):
    if not input_shapes:
        return {}
    # polygraphy TensorMetadata maps names to (dtype, shape) tuples with a .shape
    return {name: tuple(int(d) for d in getattr(meta, "shape", meta)) for name, meta in input_shapes.items()}


class _Plan:
    """Shapes and value generators for every graph input of one model, fixed once per loader."""

    def __init__(self, model, input_shapes, rng):
        from onnx import helper, numpy_helper

        graph = model.graph
        self.constants = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
        for node in graph.node:
            if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
                self.constants[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)

        self.inputs = OrderedDict()  # name -> (dtype, declared shape with None/str for dynamic dims)
        for value in graph.input:
            if value.name in self.constants:
                continue
            tensor_type = value.type.tensor_type
            dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor_type.shape.dim]
            self.inputs[value.name] = (helper.tensor_dtype_to_np_dtype(tensor_type.elem_type), dims)

        self.given = dict(input_shapes)
        self.named_dims = {}
        self.shapes = {}  # graph input name -> resolved shape
        self.known = {}  # tensor name -> shape from ONNX shape inference
        self.generators = {}  # graph input name -> callable(rng) -> array
        nodes = [_follow_casts(graph, n) for n in graph.node if n.op_type in _OPS]
        driven = {name for n in nodes for name in list(n.input)[1:] if name in self.inputs}
        self.data_hints = {node.input[0]: _data_hints(self, node) for node in reversed(nodes) if node.input[0] in self.inputs}
        for name in self.inputs:
            if name not in driven:
                self.shapes[name] = self._resolve(name, self.inputs[name][1], hints=self.data_hints.get(name))
        self.known = self._infer_shapes(model)
        for node in nodes:
            data_shape = self._shape_of(node.input[0])
            if data_shape is None:
                raise ValueError(
                    f"{_describe(node)}: cannot tell the shape of its 'data' ({node.input[0]!r}); "
                    "give the shapes of the graph inputs it is computed from"
                )
            _OPS[node.op_type](self, node, tuple(data_shape), rng)
            self.known[node.output[0]] = tuple(data_shape)
        for name in self.inputs:  # inputs fed only to non-scatter inputs of scatter nodes
            self.shapes.setdefault(name, self._resolve(name, self.inputs[name][1]))
        _refuse_unfollowed_indices(self, graph)

    def feed(self, rng):
        feed = OrderedDict()
        for name, (dtype, _) in self.inputs.items():
            generate = self.generators.get(name)
            value = generate(rng) if generate else _random_values(rng, self.shapes[name], dtype)
            feed[name] = np.asarray(value).astype(dtype, copy=False)
        return feed

    # Shapes

    def _resolve(self, name, dims, bounds=None, hints=None):
        """A concrete shape for input ``name``: given > static > named dim > hint > min(DEFAULT_DIM, bound).

        ``hints`` (for a scatter node's data) holds per dim ``(exact, at_least)`` read off the static
        dims of the node's indices and updates, so that a free dim fits them.
        """
        if name in self.given:
            return self._given(name, dims)
        shape = []
        for index, dim in enumerate(dims):
            bound = bounds[index] if bounds is not None else None
            exact, at_least = hints[index] if hints is not None else (None, 0)
            if isinstance(dim, int):
                shape.append(dim)
            elif isinstance(dim, str) and dim in self.named_dims:
                shape.append(self.named_dims[dim])
            else:
                value = exact if exact is not None else max(DEFAULT_DIM if bound is None else min(DEFAULT_DIM, bound), at_least)
                if isinstance(dim, str):
                    self.named_dims[dim] = value
                shape.append(value)
        return tuple(shape)

    def _given(self, name, dims):
        shape = tuple(self.given[name])
        if len(shape) != len(dims) or any(isinstance(d, int) and d != g for d, g in zip(dims, shape)):
            declared = "(" + ", ".join(str(d) if d is not None else "?" for d in dims) + ")"
            raise ValueError(f"input {name!r}: the given shape {shape} does not fit the model's {declared}")
        self._name_dims(dims, shape)
        return shape

    def _infer_shapes(self, model):
        import onnx

        model = onnx.ModelProto.FromString(model.SerializeToString())
        for value in model.graph.input:
            if value.name in self.shapes:
                for dim, size in zip(value.type.tensor_type.shape.dim, self.shapes[value.name]):
                    dim.Clear()
                    dim.dim_value = size
        try:
            model = onnx.shape_inference.infer_shapes(model)
        except Exception:  # custom-domain ops or odd graphs: use what is known without inference
            pass
        known = {}
        for value in list(model.graph.value_info) + list(model.graph.output) + list(model.graph.input):
            dims = value.type.tensor_type.shape.dim
            if value.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims):
                known[value.name] = tuple(d.dim_value for d in dims)
        for name, array in self.constants.items():
            known[name] = array.shape
        return known

    def _input_to_generate(self, node, position):
        """The graph input at ``position`` of ``node`` if the loader should generate it, else None."""
        if position >= len(node.input) or not node.input[position]:
            return None
        name = node.input[position]
        if name not in self.inputs or name in self.generators:
            return None
        return name

    def _shape_of(self, name):
        """The shape of a constant, a planned graph input or an inferred tensor; None if unknown."""
        if name in self.constants:
            return self.constants[name].shape
        if name in self.shapes:
            return self.shapes[name]
        return self.known.get(name)

    def _updates(self, node, position, expected):
        """Fixes the shape of the updates input at ``position`` to ``expected`` if the loader generates it."""
        name = self._input_to_generate(node, position)
        if name is not None:
            declared = self.inputs[name][1]
            if name in self.given:
                shape = self._given(name, declared)
            elif len(declared) == len(expected):
                shape = tuple(d if isinstance(d, int) else e for d, e in zip(declared, expected))
            else:  # a rank the op cannot take: the op's shape check names it
                shape = self._resolve(name, declared)
            self._name_dims(declared, shape)
            self.shapes[name] = shape
        return self._shape_of(node.input[position])

    def _name_dims(self, declared, shape):
        for dim, size in zip(declared, shape):
            if isinstance(dim, str):
                self.named_dims.setdefault(dim, size)

    def _indices(self, node, position, bound, rank=None, exact=None):
        """Resolves the shape of the indices input at ``position``; returns (its name if the loader
        generates it else None, its shape). Free dims are at most ``bound`` (an int or one per dim)
        and take the ``exact`` values the static dims of the updates fix."""
        name = self._input_to_generate(node, position)
        if name is None:
            return None, self._shape_of(node.input[position])
        dims = self.inputs[name][1]
        if rank is not None and len(dims) != rank:
            dims = [None] * rank
        hints = [(e, 0) for e in exact] if exact is not None and len(exact) == len(dims) else None
        shape = self._resolve(name, dims, bound if isinstance(bound, tuple) else [bound] * len(dims), hints)
        self._name_dims(dims, shape)
        self.shapes[name] = shape
        return name, shape

    def _static_dims(self, node, position):
        """The dims of ``node``'s input at ``position`` that are known before planning (None where not)."""
        if position >= len(node.input) or not node.input[position]:
            return None
        name = node.input[position]
        if name in self.constants:
            return self.constants[name].shape
        if name in self.given:
            return tuple(self.given[name])
        return tuple(d if isinstance(d, int) else None for d in self.inputs[name][1]) if name in self.inputs else None

    def _constant(self, node, position):
        if position >= len(node.input) or not node.input[position]:
            return None
        return self.constants.get(node.input[position])


# Where each op reads index-like values (indices, axis, start/stop/step/axes).
_INDEX_POSITIONS = {"ScatterElements": (1,), "ScatterND": (1,), "ScatterUpdate": (1, 3), "SliceScatter": (2, 3, 4, 5)}


def _follow_casts(graph, node):
    """``node`` with each input traced back through Cast/Identity (which keep shape and values), so an
    input that reaches the op through a Cast (ONNX ScatterND takes int64 indices only) is still generated."""
    producers = {out: n for n in graph.node for out in n.output}

    def origin(name):
        while name in producers and producers[name].op_type in ("Cast", "Identity"):
            name = producers[name].input[0]
        return name

    return SimpleNamespace(
        op_type=node.op_type, name=node.name, output=list(node.output), attribute=node.attribute,
        input=[origin(name) if name else name for name in node.input],
    )  # fmt: skip


def _refuse_unfollowed_indices(plan, graph):
    """An integer graph input that reaches a scatter op's indices through other ops (a lowered graph)
    would get random values: refuse, naming the input, instead of feeding out-of-range indices."""
    consumers = {}
    for node in graph.node:
        for position, name in enumerate(node.input):
            consumers.setdefault(name, []).append((node, position))
    for name, (dtype, _) in plan.inputs.items():
        if name in plan.generators or np.dtype(dtype).kind not in "iu":
            continue
        frontier, seen, path = [name], {name}, []
        while frontier:
            tensor = frontier.pop()
            for node, position in consumers.get(tensor, []):
                if position in _INDEX_POSITIONS.get(node.op_type, ()):
                    raise ValueError(
                        f"input {name!r} reaches the index input {position} of {_describe(node)} through ops "
                        f"the loader does not follow ({', '.join(sorted(set(path)))}: a lowered graph?); "
                        "give valid inputs instead (polygraphy --load-inputs / trt-scatter check --load-inputs, "
                        "e.g. saved by `trt-scatter check --save-inputs` on the plugin or ONNX-op model)"
                    )
                path.append(node.op_type)
                for out in node.output:
                    if out not in seen:
                        seen.add(out)
                        frontier.append(out)


def _data_hints(plan, node):
    """Per dim of ``node``'s data: (the value the static dims of its indices/updates fix, a lower bound)."""
    data_dims = plan.inputs[node.input[0]][1]
    rank = len(data_dims)
    hints = [(None, 0)] * rank

    indices, updates = plan._static_dims(node, 1), plan._static_dims(node, 2 if node.op_type != "SliceScatter" else 1)
    if node.op_type == "ScatterElements":
        for shape in (indices, updates):
            if shape is not None and len(shape) == rank:
                hints = [(None, max(low, d or 0)) for (_, low), d in zip(hints, shape)]
    elif node.op_type == "ScatterUpdate":
        axis = plan._constant(node, 3)
        if axis is None or indices is None or updates is None or not -rank <= int(np.asarray(axis).reshape(-1)[0]) < rank:
            return hints
        axis = int(np.asarray(axis).reshape(-1)[0]) % rank
        count = math.prod(d or 1 for d in indices)
        if len(updates) == rank - 1 + len(indices):
            hints = [(u, 0) for u in updates[:axis]] + [(None, count)] + [(u, 0) for u in updates[axis + len(indices) :]]
    elif node.op_type == "ScatterND":
        if indices is not None and indices and updates is not None:
            k = indices[-1] if indices[-1] is not None else rank  # as _plan_scatter_nd picks it
            trailing = list(updates[len(indices) - 1 :])
            if k <= rank and len(trailing) == rank - k:
                # room for distinct rows: the free leading dims share what the static ones lack
                lead = [i if i is not None else u for i, u in zip(indices[:-1], updates)]
                rows = math.prod(d or 1 for d in lead)
                free = [i for i in range(k) if not isinstance(data_dims[i], int)]
                lacking = rows / math.prod(d for d in data_dims[:k] if isinstance(d, int))
                at_least = math.ceil(lacking ** (1 / len(free)) - 1e-9) if free else 0
                hints = [(None, at_least)] * k + [(u, 0) for u in trailing]
    elif node.op_type == "SliceScatter":
        axes = plan._constant(node, 5)
        start = plan._constant(node, 2)
        if updates is not None and len(updates) == rank:
            sliced = set()
            if axes is not None:
                sliced = {int(a) % rank for a in np.atleast_1d(axes) if -rank <= int(a) < rank}
            elif start is not None:
                sliced = set(range(len(np.atleast_1d(start))))
            else:
                sliced = set(range(rank))  # unknown: every dim may be sliced, so updates give lower bounds only
            hints = [(None, u or 0) if i in sliced else (u, 0) for i, u in enumerate(updates)]
    return hints


# Per-op planning: each resolves the shapes of the inputs it drives and installs their generators.


def _plan_scatter_elements(plan, node, data_shape, rng):
    op = "scatter_elements"
    axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
    axis = rules.normalize_axis(op, "axis", axis, len(data_shape))
    name, indices_shape = plan._indices(node, 1, bound=data_shape, rank=len(data_shape), exact=plan._static_dims(node, 2))
    if indices_shape is None:  # computed inside the graph: nothing to plan
        return
    plan._updates(node, 2, indices_shape)
    _check_if_known(oracle.check_scatter_elements, data_shape, indices_shape, plan._shape_of(node.input[2]), axis)
    if name is None:
        return
    size = data_shape[axis]
    if indices_shape[axis] > size:
        raise ScatterInputError(op, "indices", f"dimension {axis} must be at most data's ({size}) for distinct indices", f"shape {indices_shape}")

    def generate(rng, shape=indices_shape):
        lines = math.prod(shape[:axis] + shape[axis + 1 :])
        moved = shape[:axis] + shape[axis + 1 :] + (shape[axis],)
        # Distinct on every line: a window of one random permutation of range(size), at a random
        # cyclic shift per line (memory grows with the indices, not with lines x size).
        permutation = rng.permutation(size)
        shifts = rng.integers(0, max(size, 1), (lines, 1))
        order = permutation[(shifts + np.arange(shape[axis])) % max(size, 1)]
        return _some_negative(rng, np.moveaxis(order.reshape(moved), -1, axis), size)

    plan.generators[name] = generate


def _plan_scatter_nd(plan, node, data_shape, rng):
    name = plan._input_to_generate(node, 1)
    if name is None:
        indices_shape = plan._shape_of(node.input[1])
    else:
        declared = plan.inputs[name][1]
        given = plan.given.get(name)
        # k (rows' length) from the model or the given shape; unknown k addresses elements
        k = given[-1] if given else declared[-1] if declared and isinstance(declared[-1], int) else len(data_shape)
        capacity = math.prod(data_shape[: min(k, len(data_shape))])
        updates = plan._static_dims(node, 2)
        leading = len(declared) - 1
        exact = list(updates[:leading]) + [k] if updates is not None and len(updates) >= leading >= 0 else None
        name, indices_shape = plan._indices(node, 1, bound=max(capacity, 1), exact=exact)
        indices_shape = tuple(indices_shape[:-1]) + (k,) if indices_shape else (k,)
        plan.shapes[name] = indices_shape
        rows = math.prod(indices_shape[:-1])
        if k <= len(data_shape) and rows > capacity:
            raise ScatterInputError("scatter_nd", "indices", f"must have at most {capacity} rows for distinct rows", f"shape {indices_shape}")

        def generate(rng, shape=indices_shape):
            flat = rng.choice(capacity, size=rows, replace=False)
            coordinates = np.stack(np.unravel_index(flat, data_shape[:k]), axis=-1) if k else np.zeros((rows, 0), np.int64)
            return _some_negative(rng, coordinates.reshape(shape), np.array(data_shape[:k], np.int64))

        plan.generators[name] = generate
    if indices_shape is None:  # computed inside the graph (a lowered graph): nothing to plan
        return
    k = indices_shape[-1]
    plan._updates(node, 2, tuple(indices_shape[:-1]) + tuple(data_shape[k:]))
    _check_if_known(oracle.check_scatter_nd, data_shape, indices_shape, plan._shape_of(node.input[2]))


def _plan_scatter_update(plan, node, data_shape, rng):
    op = "scatter_update"
    axis = plan._constant(node, 3)
    if axis is None:
        raise ScatterInputError(op, "axis", "must be a constant (initializer or Constant node) for generated inputs", node.input[3])
    axis = rules.normalize_axis(op, "axis", axis_value(axis), len(data_shape))
    size = data_shape[axis]
    updates = plan._static_dims(node, 2)
    declared = plan.inputs[node.input[1]][1] if node.input[1] in plan.inputs else ()
    exact = updates[axis : axis + len(declared)] if updates is not None and len(updates) == len(data_shape) - 1 + len(declared) else None
    name, indices_shape = plan._indices(node, 1, bound=size, exact=exact)
    if name is not None:
        count = math.prod(indices_shape)
        if count > size:
            raise ScatterInputError(op, "indices", f"must have at most {size} elements for distinct indices", f"shape {indices_shape}")
        plan.generators[name] = lambda rng, shape=indices_shape: rng.choice(size, size=count, replace=False).reshape(shape)
    if indices_shape is None:  # computed inside the graph: nothing to plan
        return
    expected = tuple(data_shape[:axis]) + tuple(indices_shape) + tuple(data_shape[axis + 1 :])
    plan._updates(node, 2, expected)
    _check_if_known(oracle.check_scatter_update, data_shape, indices_shape, plan._shape_of(node.input[2]), axis)


def _plan_slice_scatter(plan, node, data_shape, rng):
    op = "slice_scatter"
    rank = len(data_shape)
    params = {key: plan._constant(node, position) for position, key in enumerate(("start", "stop", "step", "axes"), start=2)}
    inputs = {key: plan._input_to_generate(node, position) for position, key in enumerate(("start", "stop", "step", "axes"), start=2)}
    if inputs["axes"] is None and params["axes"] is None and len(node.input) > 5 and node.input[5]:
        raise ScatterInputError(op, "axes", "must be a constant or a graph input for generated inputs", node.input[5])
    for key in ("start", "stop", "step"):
        if params[key] is None and inputs[key] is None:
            raise ScatterInputError(op, key, "must be a constant or a graph input for generated inputs", node.input[2 + ("start", "stop", "step").index(key)])

    # How many axes are sliced: a constant's length, else a static input length, else all of them.
    lengths = [len(np.atleast_1d(v)) for v in params.values() if v is not None]
    lengths += [plan.inputs[n][1][0] for n in inputs.values() if n and plan.inputs[n][1] and isinstance(plan.inputs[n][1][0], int)]
    lengths += [plan.given[n][0] for n in inputs.values() if n and n in plan.given and plan.given[n]]
    count_axes = lengths[0] if lengths else rank
    updates_name = plan._input_to_generate(node, 1)
    updates_dims = plan.given.get(updates_name) or (plan.inputs[updates_name][1] if updates_name else plan._shape_of(node.input[1]))
    all_constant = all(params[k] is not None for k in ("start", "stop", "step"))
    all_fed = all(params[k] is None for k in ("start", "stop", "step"))
    if params["axes"] is not None:
        axes = [rules.normalize_axis(op, "axes", int(a), rank) for a in np.atleast_1d(params["axes"])]
    elif inputs["axes"] is not None:
        axes = _fed_axes(rng, data_shape, updates_dims, count_axes, params if all_constant else None)
    else:
        axes = list(range(count_axes))

    # The slice's length on each sliced axis: fixed by constants, else by the updates' static dims,
    # else random (at least 1, so the slice is not empty).
    counts, choices = [], []  # choices: per axis, the (start, stop, step) that fit constants and count
    for i, axis in enumerate(axes):
        dim = data_shape[axis]
        fixed = {k: int(np.atleast_1d(params[k])[i]) for k in ("start", "stop", "step") if params[k] is not None}
        wanted = updates_dims[axis] if updates_dims is not None and len(updates_dims) == rank and isinstance(updates_dims[axis], int) else None
        if all_constant:
            counts.append(oracle.slice_geometry(fixed["start"], fixed["stop"], fixed["step"], dim)[1])
        elif all_fed:
            if wanted is not None and wanted > dim:
                raise ScatterInputError(op, "updates", f"dimension {axis} must be at most data's ({dim}) to be a slice of it", wanted)
            counts.append(wanted if wanted is not None else int(rng.integers(1, dim + 1)) if dim else 0)
        else:
            by_count = _slices_by_count(dim, fixed)
            if wanted is None:
                wanted = int(rng.choice([c for c in by_count if c] or [0]))
            if wanted not in by_count:
                raise ScatterInputError(op, "start/stop/step", f"constants {fixed} cannot take {wanted} elements of a dimension of size {dim}", wanted)
            counts.append(wanted)
            choices.append(by_count[wanted])
    expected = list(data_shape)
    for axis, count in zip(axes, counts):
        expected[axis] = count
    plan._updates(node, 1, tuple(expected))

    def generate_params(rng):
        values = {k: [] for k in ("start", "stop", "step")}
        for i, (axis, count) in enumerate(zip(axes, counts)):
            if choices:  # mixed constants and fed values: one of the fitting slices
                start, stop, step = choices[i][int(rng.integers(len(choices[i])))]
            else:
                start, stop, step = _random_slice(rng, data_shape[axis], count)
            values["start"].append(start), values["stop"].append(stop), values["step"].append(step)
        values["axes"] = axes
        return values

    cache = {}

    def generator(key):
        def generate(rng):
            # start/stop/step/axes are drawn together once per feed; rng identity marks the feed
            if cache.get("rng") is not rng:
                cache["rng"], cache["values"] = rng, generate_params(rng)
            return np.asarray(cache["values"][key])

        return generate

    for key, name in inputs.items():
        if name is not None:
            plan.shapes[name] = (len(axes),)
            plan.generators[name] = generator(key)
    if all_constant:
        oracle.check_slice_scatter(
            data_shape, plan._shape_of(node.input[1]),
            *(rules.as_int_vector(op, k, params[k]) for k in ("start", "stop", "step")), axes,
        )  # fmt: skip


def _fed_axes(rng, data_shape, updates_dims, count, constants, tries=100_000):
    """Random distinct axes for a fed ``axes`` input that fit the updates' static dims: an unsliced
    axis keeps data's dim, a sliced one takes at most data's dim, or exactly what the ``constants``
    start/stop/step (all three, or None) take at its position."""
    rank = len(data_shape)
    static = list(updates_dims) if updates_dims is not None and len(updates_dims) == rank else [None] * rank

    def fits(axes):
        for axis, (dim, wanted) in enumerate(zip(data_shape, static)):
            if not isinstance(wanted, int):
                continue
            if axis not in axes:
                if wanted != dim:
                    return False
            elif constants is not None:
                slice_params = (int(np.atleast_1d(constants[k])[axes.index(axis)]) for k in ("start", "stop", "step"))
                if oracle.slice_geometry(*slice_params, dim)[1] != wanted:
                    return False
            elif wanted > dim:
                return False
        return True

    for axes in itertools.islice(itertools.permutations(rng.permutation(rank).tolist(), count), tries):
        if fits(list(axes)):
            return list(axes)
    raise ScatterInputError("slice_scatter", "axes", f"cannot be chosen for {count} sliced axes of data {tuple(data_shape)}", f"updates {tuple(static)}")


def _check_if_known(check, *shapes_and_more):
    """Runs an op's shape check unless a shape is unknown (computed inside the graph)."""
    if all(shape is not None for shape in shapes_and_more[:3]):
        check(*shapes_and_more)


def _some_negative(rng, indices, sizes):
    """About half of ``indices`` (in [0, s-1]) in their negative form i - s, which ONNX's
    ScatterElements/ScatterND allow: the same targets, and engines get checked on both forms."""
    return np.where(rng.random(indices.shape) < 0.5, indices - sizes, indices)


def _random_slice(rng, dim, count):
    """A random (start, stop, step) taking ``count`` elements of a dimension ``dim``, in the forms the
    spec allows: negative start/stop, negative steps, stops past the end ("before the first element")."""
    if count == 0 or dim == 0:
        start = int(rng.integers(0, dim + 1))
        return _checked(start, start, 1, dim, count)
    step = int(rng.choice([s for s in (1, 2, 3, -1, -2, -3) if (count - 1) * abs(s) + 1 <= dim]))
    span = (count - 1) * abs(step)
    first = int(rng.integers(0, dim - span)) if step > 0 else int(rng.integers(span, dim))
    start = first - dim if rng.random() < 0.3 else first
    stop = first + count * step
    if stop < 0:
        stop = -dim - 1 - int(rng.integers(0, 3))
    elif stop < dim and rng.random() < 0.3:
        stop -= dim
    return _checked(start, stop, step, dim, count)


def _slices_by_count(dim, fixed, limit=300_000):
    """``{count: [(start, stop, step), ...]}`` over the values the spec allows for the parameters not in
    ``fixed`` (start/stop in [-dim-1, dim], steps +-1..3), by searching them with the oracle's geometry."""
    values = range(-dim - 1, dim + 1)
    starts = [fixed["start"]] if "start" in fixed else values
    stops = [fixed["stop"]] if "stop" in fixed else values
    steps = [fixed["step"]] if "step" in fixed else (1, 2, 3, -1, -2, -3)
    if 0 in steps:
        raise ScatterInputError("slice_scatter", "step", "must not contain 0", 0)
    if len(starts) * len(stops) * len(steps) > limit:
        raise ScatterInputError(
            "slice_scatter", "start/stop/step", "mix constants and fed values on too large a dimension to search; feed all three", dim
        )
    by_count = {}
    for start in starts:
        for stop in stops:
            for step in steps:
                by_count.setdefault(oracle.slice_geometry(start, stop, step, dim)[1], []).append((start, stop, step))
    return by_count


def _checked(start, stop, step, dim, count):
    taken = oracle.slice_geometry(start, stop, step, dim)[1]
    if taken != count:  # a bug here, not in the model: the constructions above are exact
        raise AssertionError(f"slice ({start}, {stop}, {step}) takes {taken} of {dim}, not {count}")
    return start, stop, step


def _random_values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "u":
        return rng.integers(0, 16, size=shape)
    if dtype.kind == "i":
        return rng.integers(-8, 8, size=shape)
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)  # bfloat16/float16 convert from this


def _describe(node):
    return f"{node.op_type} node {node.name or node.output[0]!r}"


_OPS = {
    "ScatterElements": _plan_scatter_elements,
    "ScatterND": _plan_scatter_nd,
    "ScatterUpdate": _plan_scatter_update,
    "SliceScatter": _plan_slice_scatter,
}
