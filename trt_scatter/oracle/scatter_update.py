"""ScatterUpdate-3 (OpenVINO): write whole slices of ``data`` along one axis.

For ``data`` of shape [d_0, ..., d_n], ``indices`` of any shape I (a 0-D index included) and
``updates`` of shape ``[d_0, ..., d_{axis-1}] + I + [d_{axis+1}, ..., d_n]``::

    out[..., indices[m, ..., p], ...] = updates[..., m, ..., p, ...]   # indices at position axis

Index values must lie in [0, s-1] with s = data.shape[axis]: the spec raises on negative or
too-large values, and so does this oracle. ``axis`` is a scalar or a one-element 1-D tensor in
[-r, r-1]. Duplicate indices are undefined in the spec; this oracle keeps whichever write NumPy
performs last, and no test may rely on it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from trt_scatter.oracle import rules

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike

    from trt_scatter.model.node import OpNode

OP = "scatter_update"


def axis_value(axis: ArrayLike) -> int:
    """``axis`` given as an int, a 0-D array or a one-element 1-D array (an input, in the spec), as a Python int."""
    if axis is None:
        raise rules.ScatterInputError(OP, "axis", "must be given (an integer)", None)
    array = rules.as_index_array(OP, "axis", axis)
    if array.ndim > 1 or array.size != 1:
        raise rules.ScatterInputError(OP, "axis", "must be a scalar or a 1-D tensor with one element", f"shape {array.shape}")
    rules.check_index_type(OP, "axis", array.dtype)
    return int(array.reshape(()))


UPDATES_SHAPE = "data.shape[:axis] + indices.shape + data.shape[axis+1:]"  #: the rule's words, for the builder's assertion too


def check_scatter_update(data_shape: Sequence[int | None], indices_shape: Sequence[int | None], updates_shape: Sequence[int | None], axis: int) -> int:
    """Checks shapes and ``axis``; returns ``axis`` in [0, rank-1]."""
    rules.check_rank_at_least(OP, "data", data_shape, 1)
    axis = rules.normalize_axis(OP, "axis", axis, len(data_shape))
    expected = tuple(data_shape[:axis]) + tuple(indices_shape) + tuple(data_shape[axis + 1 :])
    rules.check_shape(OP, "updates", updates_shape, expected, UPDATES_SHAPE)
    rules.check_indices_can_exist(OP, "indices", indices_shape, [(axis, data_shape[axis])])
    return axis


def check_axis_shape(shape: Sequence[int | None]) -> None:
    """``axis`` of this shape (-1: unknown dimension, which may still be 1) can hold its one value."""
    axis_value(np.broadcast_to(np.int64(0), [dim if rules.is_known(dim) else 1 for dim in shape]))


def check_scatter_update_static(data_shape: Sequence[int | None] | None, indices_shape: Sequence[int | None] | None, updates_shape: Sequence[int | None] | None, axis: int | None = None) -> int | None:
    """Checks a ScatterUpdate on what is known before it runs: in a model, or while TensorRT builds.

    ``axis``: its value, or ``None`` when it is not known; then the shapes must fit the spec for at
    least one axis of data. ``data_shape`` is ``None`` where not even data's rank is known (nothing
    to check then). Returns ``axis`` in [0, rank-1], or ``None``.
    """
    if data_shape is None or indices_shape is None or updates_shape is None:
        if data_shape is not None:
            rules.check_rank_at_least(OP, "data", data_shape, 1)
            return None if axis is None else rules.normalize_axis(OP, "axis", axis, len(data_shape))
        return None
    if axis is not None:
        return check_scatter_update(data_shape, indices_shape, updates_shape, axis)
    failures = []
    for candidate in range(max(len(data_shape), 1)):
        try:
            check_scatter_update(data_shape, indices_shape, updates_shape, candidate)
            return None
        except rules.ScatterInputError as err:
            failures.append(err)
    shaped = [err for err in failures if err.input_name != "updates"]  # the shapes fit that axis; another rule failed
    if len(failures) == 1 or shaped:
        raise (shaped or failures)[0]
    raise rules.ScatterInputError(
        OP,
        "updates",
        "must have shape data.shape[:axis] + indices.shape + data.shape[axis+1:] for some axis of 'data'",
        f"shape {updates_shape} with data {data_shape} and indices {indices_shape}",
    )


def scatter_update(data: ArrayLike, indices: ArrayLike, updates: ArrayLike, axis: ArrayLike) -> np.ndarray:
    """Returns a copy of ``data`` with the slices at ``indices`` along ``axis`` replaced by ``updates``."""
    data, indices, updates = rules.as_array(OP, "data", data), rules.as_index_array(OP, "indices", indices), rules.as_array(OP, "updates", updates)
    rules.check_data_type(OP, "data", data.dtype)
    rules.check_same_type(OP, "updates", updates.dtype, data.dtype)
    rules.check_index_type(OP, "indices", indices.dtype)
    axis = check_scatter_update(data.shape, indices.shape, updates.shape, axis_value(axis))
    rules.check_indices_in_range(OP, "indices", indices, (data.shape[axis],), allow_negative=False)

    out = data.copy()
    out[(slice(None),) * axis + (indices,)] = updates
    return out


def evaluate(inputs: dict[str, np.ndarray], attributes: dict[str, Any]) -> np.ndarray:
    """A ScatterUpdate node's output (``inputs`` by name; ``inplace`` changes no value)."""
    return scatter_update(inputs["data"], inputs["indices"], inputs["updates"], inputs["axis"])


def check_node(node: OpNode) -> None:
    """The rules a model shows before it runs: shapes that fit the spec (for the constant axis, or for some
    axis), constant indices in [0, s-1] (the spec says others raise)."""
    axis_constant = node.constant("axis")
    axis = None
    if axis_constant is not None:
        axis = axis_value(axis_constant)
    elif node.shape("axis") is not None:
        check_axis_shape(node.shape("axis"))
    data = node.shape("data")
    axis = check_scatter_update_static(data, node.shape("indices"), node.shape("updates"), axis)
    indices = node.constant("indices")
    if indices is not None and axis is not None:
        rules.check_indices_in_range(OP, "indices", indices, (data[axis],), allow_negative=False)


def repeated_target(node: OpNode | rules.Known) -> str | None:
    """Where constant indices name one slice twice (undefined in the spec), else None. Where ``updates`` are known too
    (a run's), only a slice named twice that gets other values (other bits: -0.0 is not 0.0) is undefined; one that
    gets the same values each time (``index_fill``) is not."""
    indices = node.constant("indices")
    if indices is None or indices.size < 2:
        return None
    flat = indices.reshape(-1).astype(np.int64)
    pairs = rules.repeats(flat)  # positions naming one slice, the earlier first
    if not len(pairs):
        return None
    differing = _differing_pairs(node, indices, pairs)
    if differing is not None:
        pairs = pairs[differing]
    if not len(pairs):
        return None
    first, second = (int(position) for position in pairs[0])
    return f"'indices' names slice {int(flat[first])} twice (elements {first} and {second})"


def _differing_pairs(node, indices, pairs):
    """For each pair of positions of the (flattened) ``indices``, whether the known ``updates`` give their slices other
    bits; None where updates are not known or do not fit the indices (a model's shapes not yet checked)."""
    updates, axis = node.constant("updates"), node.constant("axis")
    if updates is None or axis is None:
        return None
    rank = updates.ndim - indices.ndim + 1  # data's
    axis = axis_value(axis)
    if rank < 1 or not -rank <= axis < rank:
        return None
    axis %= rank
    if updates.shape[axis : axis + indices.ndim] != indices.shape:
        return None
    trailing = int(np.prod(updates.shape[axis + indices.ndim :]))  # not -1: updates may be empty
    return rules.differing(np.moveaxis(updates.reshape(updates.shape[:axis] + (indices.size, trailing)), axis, 0), pairs)


# ---- valid inputs (trt_scatter.inputs): shape relations, capacity, index generator


def crowded(plan: Any, node: OpNode) -> str | None:
    """Where ``indices`` has more elements than data's axis has rows, so that some repeat whatever their values (and
    the updates they write then differ, but by chance): that, in words, for the data loader's message."""
    data, indices = plan.shape(node, "data"), plan.shape(node, "indices")
    if data is None or indices is None:
        return None
    axis = _constant_axis(plan, node, len(data))
    count = math.prod(indices)
    return f"'indices' has {count} elements for the {data[axis]} rows of data's axis {axis}" if count > data[axis] else None


def _constant_axis(plan, node, rank):
    axis = plan.constant(node, "axis")
    if axis is None:
        raise rules.ScatterInputError(OP, "axis", "must be a constant (initializer or Constant node) for generated inputs", node.inputs["axis"])
    return rules.normalize_axis(OP, "axis", axis_value(axis), rank)


def input_relations(shapes: Any, node: OpNode) -> None:
    data, indices, updates = (shapes.shape(node, n) for n in ("data", "indices", "updates"))
    if data is None or indices is None:
        return
    axis = _constant_axis(shapes.plan, node, len(data))
    shapes.equal_shapes(updates, list(data[:axis]) + list(indices) + list(data[axis + 1 :]))
    shapes.bounds.append((list(indices), [data[axis]]))
    shapes.leave_room(list(indices), [data[axis]])  # some of data stays
    values, wrapped = shapes.index_values(node, "indices")
    shapes.takes(node, axis, values, negative=wrapped)  # the spec takes none, but a wrap reads them from the end


def input_capacity(plan: Any, node: OpNode) -> int | None:
    """How many targets the indices can address: data's dimension on the axis."""
    data, axis = plan.shape(node, "data"), plan.constant(node, "axis")
    if not data or axis is None or not -len(data) <= axis_value(axis) < len(data):
        return None
    return data[axis_value(axis) % len(data)]


def plan_inputs(plan: Any, node: OpNode, rng: np.random.Generator) -> None:
    data, indices, updates = (plan.shape(node, n) for n in ("data", "indices", "updates"))
    name = plan.fed(node, "indices")
    axis = None if data is None else _constant_axis(plan, node, len(data))
    plan.check_known(node, check_scatter_update, name, data, indices, updates, axis)
    if name is None:
        return
    size, count = data[axis], math.prod(indices)
    if count > size:
        raise rules.ScatterInputError(OP, "indices", f"must have at most {size} elements for distinct indices", f"shape {indices}")
    plan.generators[name] = (node, lambda rng, shape=indices: rng.choice(size, size=count, replace=False).reshape(shape))
