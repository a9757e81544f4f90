"""SliceScatter-15 (OpenVINO): write ``updates`` into a strided slice of a copy of ``data``.

Equivalent to the spec's NumPy snippet ``out = data.copy(); out[slices] = updates`` where, for
each ``(start, stop, step, axis)``, ``slices[axis] = slice(start, stop, step)``. Spelled out
(this module computes it explicitly so that kernels and lowerings have one formula to follow):

- ``axes`` defaults to ``[0, 1, ..., len(start)-1]``; values in [-r, r-1], unique.
- ``start``, ``stop``, ``step`` and ``axes`` have equal lengths; ``step`` has no 0.
- A negative ``start``/``stop`` counts from the end (adds the dimension ``d``), then it is
  clamped: to [0, d] for a positive step, to [-1, d-1] for a negative one (-1 meaning "before
  the first element"). INT_MAX / INT_MIN or any int64 extreme clamps the same way.
- The slice has ``max(0, ceil((stop - start) / step))`` elements ``start + i*step``.
- ``updates`` has data's shape with each sliced axis replaced by its slice's length.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import numpy as np

from trt_scatter.oracle import rules

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from numpy.typing import ArrayLike

    from trt_scatter.model.node import OpNode

OP = "slice_scatter"


def slice_geometry(start: int, stop: int, step: int, dim: int) -> tuple[int, int]:
    """``(first, count)`` of the elements ``first + i*step, i < count`` that slice ``start:stop:step`` takes from ``dim``."""
    if step > 0:
        low, high = 0, dim
    else:
        low, high = -1, dim - 1
    first = min(max(start + dim if start < 0 else start, low), high)
    last = min(max(stop + dim if stop < 0 else stop, low), high)
    span = last - first if step > 0 else first - last
    count = max(0, -(-span // abs(step)))
    return first, count


def slice_shape(data_shape: Sequence[int | None], start: Sequence[int], stop: Sequence[int], step: Sequence[int], axes: Sequence[int]) -> tuple[int, ...]:
    """The shape ``updates`` must have: ``data_shape`` with each sliced axis (``axes`` in [0, r-1]) cut
    to its slice's length, -1 where data's dimension is not known."""
    shape = list(data_shape)
    for axis, begin, end, stride in zip(axes, start, stop, step):
        dim = data_shape[axis]
        shape[axis] = slice_geometry(begin, end, stride, dim)[1] if rules.is_known(dim) else -1
    return tuple(shape)


def check_slice_scatter(data_shape: Sequence[int | None], updates_shape: Sequence[int | None], start: Sequence[int], stop: Sequence[int], step: Sequence[int], axes: Sequence[int] | None = None) -> list[int]:
    """Checks a SliceScatter's inputs (start/stop/step/axes as int lists); returns the axes in [0, r-1].

    ``updates_shape`` is checked only where the data dimension of a sliced axis is known.
    """
    rules.check_rank_at_least(OP, "data", data_shape, 1)
    rank = len(data_shape)
    if axes is None:  # the default axes, one per entry: the entries are the input to blame
        _check_lengths({"start": len(start), "stop": len(stop), "step": len(step)})
        if len(start) > rank:
            raise rules.ScatterInputError(OP, "start", f"must have at most {rank} entries for 'data' of rank {rank} where 'axes' is not given "
                                          "(the default axes are 0, 1, ..., one per entry)", len(start))
        axes = list(range(len(start)))
    _check_lengths({"start": len(start), "stop": len(stop), "step": len(step), "axes": len(axes)})
    given, axes = list(axes), [rules.normalize_axis(OP, "axes", axis, rank) for axis in axes]
    if len(set(axes)) != len(axes):
        raise rules.ScatterInputError(OP, "axes", f"must not repeat an axis (counted from the start: {axes})", given)
    _check_step(step)

    expected = slice_shape(data_shape, start, stop, step, axes)
    rules.check_shape(OP, "updates", updates_shape, expected, "data's shape with each sliced axis cut to its slice's length"
                      + _slices_cut_otherwise(data_shape, updates_shape, expected, start, stop, step, axes))
    return axes


def _slices_cut_otherwise(data_shape, updates_shape, expected, start, stop, step, axes):
    """The slices whose length ``updates`` does not have, with the values that set it: where they are computed
    (a KV cache's position), those values, not ``updates``, may be the mistake."""
    if len(updates_shape) != len(expected):
        return ""
    cut = [f"axis {axis}'s slice (start {begin}, stop {end}, step {stride}) takes {expected[axis]} of its {data_shape[axis]}"
           for axis, begin, end, stride in zip(axes, start, stop, step)
           if rules.is_known(expected[axis]) and rules.is_known(updates_shape[axis]) and updates_shape[axis] != expected[axis]]
    return "; " + "; ".join(cut) if cut else ""


def _check_lengths(lengths):
    if len(set(lengths.values())) != 1:
        raise rules.ScatterInputError(OP, "/".join(lengths), "must have equal lengths", lengths)


def _check_step(step):
    if 0 in step:
        raise rules.ScatterInputError(OP, "step", "must not contain 0", list(step))


def check_slice_scatter_static(data_shape: Sequence[int | None] | None, updates_shape: Sequence[int | None] | None, start: list[int] | int, stop: list[int] | int, step: list[int] | int, axes: list[int] | int | None = None) -> None:
    """Checks a SliceScatter on what is known before it runs: in a model, or while TensorRT builds.

    Each of ``start``/``stop``/``step``/``axes`` is a list of ints (its values are known) or an int:
    the length of a 1-D tensor whose values are not known, -1 if not even that is; ``axes=None``
    means the default axes. ``data_shape`` is ``None`` where not even data's rank is known. What is
    not known may take any value, so only what fails for every such value is refused:
    :func:`check_slice_scatter` runs with stand-ins for the unknown values (0 for start, 1 for stop
    and step, axes 0, 1, ...) on a ``data_shape`` whose dimensions they may slice are unknown.
    """
    params = {"start": start, "stop": stop, "step": step} | ({} if axes is None else {"axes": axes})
    lengths = {name: len(v) if isinstance(v, list) else v for name, v in params.items()}
    known = [n for n in lengths.values() if rules.is_known(n)]
    if data_shape is None:  # rank unknown: only the rules that need no shape
        if len(known) == len(lengths):
            _check_lengths(lengths)
        if isinstance(step, list):
            _check_step(step)
        return
    rank = len(data_shape)
    if not known:  # how many axes are sliced is not known: any dimension of updates may differ, none exceed data's
        check_slice_scatter((-1,) * rank, updates_shape, [], [], [])
        check_fits_in_data(data_shape, updates_shape, range(rank))
        return
    if axes is not None and not isinstance(axes, list) and lengths["axes"] > rank:
        rule = f"must have at most {rank} entries (distinct axes of 'data')"
        raise rules.ScatterInputError(OP, "axes", rule, lengths["axes"])
    stand_ins = {"start": 0, "stop": 1, "step": 1}
    values = {}
    for name, value in params.items():
        count = lengths[name] if rules.is_known(lengths[name]) else known[0]
        values[name] = value if isinstance(value, list) else list(range(count)) if name == "axes" else [stand_ins[name]] * count
    if all(isinstance(v, list) for v in params.values()):
        check_slice_scatter(data_shape, updates_shape, **values)
        return
    if axes is not None and not isinstance(axes, list):
        cut = range(rank)  # any axis may be sliced
    else:
        cut = [a % rank for a in values.get("axes", range(len(values["start"]))) if -rank <= a < rank]
    data_free = tuple(-1 if axis in cut else dim for axis, dim in enumerate(data_shape))
    check_slice_scatter(data_free, updates_shape, **values)
    check_fits_in_data(data_shape, updates_shape, cut)


def check_fits_in_data(data_shape: Sequence[int | None], updates_shape: Sequence[int | None] | None, axes: Iterable[int]) -> None:
    """A slice of a dimension has at most its elements, whatever start/stop/step are: on each of ``axes``
    (those that may be sliced), ``updates`` is no longer than ``data``."""
    if updates_shape is None or len(updates_shape) != len(data_shape):
        return
    axes = list(axes)
    rules.check_indices_can_exist(OP, "updates", updates_shape, [(axis, data_shape[axis]) for axis in axes])
    for axis in axes:
        dim, count = data_shape[axis], updates_shape[axis]
        if rules.is_known(dim) and rules.is_known(count) and count > dim:
            raise rules.ScatterInputError(OP, "updates", f"dimension {axis} must be at most data's ({dim}) to be a slice of it", count)


def slice_scatter(data: ArrayLike, updates: ArrayLike, start: ArrayLike, stop: ArrayLike, step: ArrayLike, axes: ArrayLike | None = None) -> np.ndarray:
    """Returns a copy of ``data`` with ``updates`` written into the slice ``start:stop:step`` over ``axes``."""
    data, updates = rules.as_array(OP, "data", data), rules.as_array(OP, "updates", updates)
    rules.check_data_type(OP, "data", data.dtype)
    rules.check_same_type(OP, "updates", updates.dtype, data.dtype)
    start, stop, step = (rules.as_int_vector(OP, name, v) for name, v in (("start", start), ("stop", stop), ("step", step)))
    if axes is not None:
        axes = rules.as_int_vector(OP, "axes", axes)
    axes = check_slice_scatter(data.shape, updates.shape, start, stop, step, axes)

    index = [slice(None)] * data.ndim
    for axis, begin, end, stride in zip(axes, start, stop, step):
        first, count = slice_geometry(begin, end, stride, data.shape[axis])
        if count == 0:  # first may be -1 here, which a NumPy slice would read as the last element
            index[axis] = slice(0, 0)
            continue
        after_last = first + count * stride
        index[axis] = slice(first, after_last if after_last >= 0 else None, stride)
    out = data.copy()
    out[tuple(index)] = updates
    return out


PARAMS = ("start", "stop", "step", "axes")


def evaluate(inputs: dict[str, np.ndarray], attributes: dict[str, Any]) -> np.ndarray:
    """A SliceScatter node's output (``inputs`` by name, axes optional; ``inplace`` changes no value)."""
    return slice_scatter(**inputs)


def check_node(node: OpNode) -> None:
    """The rules a model shows before it runs (:func:`check_slice_scatter_static` on its shapes and constants)."""
    data, updates = node.shape("data"), node.shape("updates")
    if data is not None and updates is None:
        updates = (-1,) * len(data)  # rank unknown: it matches whatever data asks
    params = {name: rules.known_vector(OP, name, node.constant(name), node.shape(name)) for name in PARAMS if name in node.inputs}
    check_slice_scatter_static(data, updates, **params)


def repeated_target(node: OpNode | rules.Known) -> str | None:
    """Never: a slice's elements are distinct."""
    return None


# ---- valid inputs (trt_scatter.inputs): shape relations, capacity, parameter generators


def input_relations(shapes: Any, node: OpNode) -> None:
    """Off the sliced axes updates' dims are data's; a sliced dim of updates is at most data's, and takes a
    length the constant parameters (if any) can give (derived once the dims have values); where the start or stop
    comes at run time, a free data dim holds two such slices, so that the slice's place varies from draw to draw
    (with data as long as updates, every valid start is 0 and a write that ignores it passes)."""
    plan = shapes.plan
    data, updates = shapes.shape(node, "data"), shapes.shape(node, "updates")
    if data is not None and updates is None and plan.fed(node, "axes") is None:
        node.axes = _input_axes(shapes, node)  # constant or default: updates' shape, known by a run only, is not needed
    if data is None or updates is None or len(data) != len(updates):
        return  # nothing to merge; the oracle's check names a wrong rank
    params = {key: plan.constant(node, key) for key in ("start", "stop", "step")}
    node.axes = _input_axes(shapes, node)
    node.fixed = {}  # sliced axis -> those of its start/stop/step that are constants
    for key in PARAMS:  # fed parameters: one entry per sliced axis
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
            shapes.derived.append((node, lambda axis=axis, fixed=fixed: _derive_length(shapes, node, axis, fixed)))
            shapes.takes(node, axis, _reach(fixed), required=False)  # clamped, not refused
        shapes.bounds.append(([b], [a]))
        if not {"start", "stop"} <= fixed.keys():
            shapes.leave_room([b], [a])  # placed at run time (cache[:, pos:pos + t] = k): room to move


def _reach(fixed):
    """The farthest position of data that a slice of constant start, stop and step reaches, as an index (negative: from
    data's end): a free dim of data holds it (``x[:, 5] = v`` needs 6, ``x[:, -6] = v`` too, ``x[:, 0:8:3]`` 7). ``None``
    where start and stop count from different ends, or one is an end marker (INT32_MAX, INT64_MAX and their negatives)."""
    start, stop, step = (fixed.get(key) for key in ("start", "stop", "step"))
    if None in (start, stop, step) or step == 0 or not all(abs(value) < _END for value in (start, stop)):
        return None
    if start < stop < 0 and step > 0:  # both from the end
        return np.array([start])
    if start < 0 or stop < 0 or (start >= stop if step > 0 else stop >= start):
        return None
    return np.array([start + (stop - 1 - start) // step * step if step > 0 else start])  # a negative step starts farthest


_END = 2**31 - 1  # a start or stop this far or farther is an end of the axis, whatever its size


def _derive_length(shapes, node, axis, fixed):
    """Constant slice parameters (``fixed``: some of start/stop/step) on ``axis``: a free updates dim there
    takes a length the slice can have in data's dim; a free data dim, where updates' length is set, grows to the
    first size whose slices take it (start 5, stop -7 and a run-time step take 3 elements of 5, none of 4; the
    oracle's check names a fixed pair that cannot)."""
    data, updates = shapes.shape(node, "data")[axis], shapes.shape(node, "updates")[axis]
    if shapes.free(data) and not shapes.free(updates) and shapes.find(data) != shapes.find(updates):
        count = shapes.of(updates)
        size = next((d for d in range(shapes.of(data), shapes.of(data) + _GROWTH) if count in slices_by_count(d, fixed)), None)
        if size is not None:
            shapes.value[shapes.find(data)] = size
    counts = slices_by_count(shapes.of(data), fixed) if shapes.free(updates) else ()
    if counts and shapes.of(updates) not in counts:
        nonzero = sorted(c for c in counts if c) or [0]
        shapes.value[shapes.find(updates)] = nonzero[int(shapes.rng.integers(len(nonzero)))]


_GROWTH = 64  # how far past its value a free data dim is grown for a slice of constant bounds to take updates' length


def _input_axes(shapes, node):
    """The sliced axes: constant, default (one per start), or, fed, chosen once to fit updates' static dims."""
    plan, rank = shapes.plan, len(shapes.shape(node, "data"))
    constant = plan.constant(node, "axes")
    if constant is not None:
        return [int(a) % rank for a in np.atleast_1d(constant)]
    lengths = [len(np.atleast_1d(plan.constant(node, k))) for k in ("start", "stop", "step") if plan.constant(node, k) is not None]
    lengths += [shapes.find(shapes.shape(node, k)[0]) for k in PARAMS if k in node.inputs and shapes.shape(node, k)]
    count = next((n for n in lengths if isinstance(n, int)), rank)  # unknown lengths: every axis
    if "axes" not in node.inputs:
        return list(range(count))
    if plan.fed(node, "axes") is None:
        raise rules.ScatterInputError(OP, "axes", "must be a constant or a graph input for generated inputs", node.inputs["axes"])
    data, updates = shapes.shape(node, "data"), shapes.shape(node, "updates")
    fixed = [i for i, (d, u) in enumerate(zip(data, updates)) if isinstance(shapes.find(d), int) and isinstance(shapes.find(u), int) and d != u]
    # then the axes whose dims may differ (two free dims not merged): one dim of data and updates (b, b) or two equal
    # numbers leave a slice no room but all of it, which the constant start/stop/step may not take
    shuffled = [i for i in shapes.rng.permutation(rank).tolist() if i not in fixed]
    others = sorted(shuffled, key=lambda i: shapes.find(data[i]) == shapes.find(updates[i]))
    if len(fixed) > count:
        raise rules.ScatterInputError(OP, "axes", f"cannot be chosen for {count} sliced axes of data {tuple(data)}", f"updates {tuple(updates)}")
    chosen = fixed + others[: count - len(fixed)]
    constants = {k: np.atleast_1d(plan.constant(node, k)) for k in ("start", "stop", "step") if plan.constant(node, k) is not None}
    if not constants or _constants_fit(shapes, data, updates, constants, chosen):
        return chosen
    # the constant slices fit some order of the axes only (start [0, 1], stop [4, -3], step [1, -2] into data (2, 4) with
    # updates (1, 4): axes [1, 0]): the first order that fits, where the static dims tell
    return next((list(axes) for axes in itertools.islice(itertools.permutations(range(rank), count), _ORDERS)
                 if _constants_fit(shapes, data, updates, constants, axes)), chosen)


_ORDERS = 40320  # the most orders of sliced axes tried (every order of 8 axes)


def _constants_fit(shapes, data, updates, constants, axes):
    """Whether sliced ``axes`` take updates' static dims: each sliced axis a length its constant parameters give in
    data's dim, each other axis data's dim."""
    for axis, (d, u) in enumerate(zip(data, updates)):
        d, u = shapes.find(d), shapes.find(u)
        if not (isinstance(d, int) and isinstance(u, int)):
            continue
        if axis not in axes:
            if d != u:
                return False
        elif u not in slices_by_count(d, {k: int(v[list(axes).index(axis)]) for k, v in constants.items()}):
            return False
    return True


def input_capacity(plan: Any, node: OpNode) -> int | None:
    """A slice's elements are distinct by construction: the smallest dimension of data bounds nothing more."""
    data = plan.shape(node, "data")
    return min(data) if data else None


def plan_inputs(plan: Any, node: OpNode, rng: np.random.Generator) -> None:
    """start/stop/step (and axes) fed by graph inputs: a slice of exactly updates' shape, in every form the
    spec allows, fitting the parameters the model holds as constants."""
    keys = ("start", "stop", "step")
    data, updates = plan.shape(node, "data"), plan.shape(node, "updates")
    if data is None or updates is None or getattr(node, "axes", None) is None:  # the axes: of data's rank, where shapes tell it
        raise plan.unknown_shape(node, "updates" if data is not None and updates is None else "data")
    constants = {k: plan.constant(node, k) for k in keys}
    fed = {k: plan.fed(node, k) for k in PARAMS}
    known = {k: rules.as_int_vector(OP, k, v) if v is not None else len(node.axes) for k, v in constants.items()}
    check_slice_scatter_static(data, updates, **known, **({"axes": node.axes} if "axes" in node.inputs else {}))
    if fed["axes"]:
        plan.generators[fed["axes"]] = (node, lambda rng, axes=node.axes: np.array(axes))
    if all(v is not None for v in constants.values()) or any(constants[k] is None and fed[k] is None for k in keys):
        return  # nothing to draw; or computed from other tensors: searched (trt_scatter.inputs)
    choices = []  # per sliced axis, the (start, stop, step) that take updates' length
    for axis in node.axes:
        dim, count = data[axis], updates[axis]
        fixed = node.fixed.get(axis)
        choices.append(None if not fixed else slices_by_count(dim, fixed).get(count))
        if fixed and not choices[-1]:
            raise rules.ScatterInputError(OP, "start/stop/step", f"constants {fixed} cannot take {count} elements of a dimension of size {dim}", count)

    cache = {}

    def draw(rng):
        """Rows start, stop, step: drawn together, once per feed (``rng``)."""
        if cache.get("rng") is not rng:
            slices = [c[int(rng.integers(len(c)))] if c else random_slice(rng, data[a], updates[a]) for c, a in zip(choices, node.axes)]
            cache.update(rng=rng, slices=np.array(slices, np.int64).reshape(-1, 3).T)
        return cache["slices"]

    for row, key in enumerate(keys):
        if fed[key] is not None:
            plan.generators[fed[key]] = (node, lambda rng, row=row: draw(rng)[row])


def random_slice(rng: np.random.Generator, dim: int, count: int) -> tuple[int, int, int]:
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


def slices_by_count(dim: int, fixed: dict[str, int], limit: int = 300_000) -> dict[int, list[tuple[int, int, int]]]:
    """``{count: [(start, stop, step), ...]}`` over the values the spec allows for the parameters not in
    ``fixed`` (start/stop in [-dim-1, dim], steps +-1..3), by searching them with :func:`slice_geometry`."""
    values = range(-dim - 1, dim + 1)
    starts = [fixed["start"]] if "start" in fixed else values
    stops = [fixed["stop"]] if "stop" in fixed else values
    steps = [fixed["step"]] if "step" in fixed else (1, 2, 3, -1, -2, -3)
    if len(starts) * len(stops) * len(steps) > limit:
        raise rules.ScatterInputError(OP, "start/stop/step", "mix constants and fed values on too large a dimension to search; feed all three", dim)
    by_count = {}
    for start in starts:
        for stop in stops:
            for step in steps:
                by_count.setdefault(slice_geometry(start, stop, step, dim)[1], []).append((start, stop, step))
    return by_count
