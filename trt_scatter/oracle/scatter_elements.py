"""ScatterElements (ONNX) = TensorRT ``IScatterLayer`` in ``ScatterMode.ELEMENT``.

For every position ``p`` of ``indices`` (rank r, like ``data``)::

    out[p[0], ..., indices[p], ..., p[r-1]] = updates[p]      # indices[p] replaces p[axis]

``indices`` and ``updates`` have the same shape; off the axis their dimensions are at most
data's. Index values lie in [-s, s-1] with s = data.shape[axis] (negative counts from the end,
as in ONNX). Duplicate targets are undefined in ONNX and TensorRT; this oracle keeps whichever
write NumPy's fancy assignment performs last, and no test may rely on it.

With a ``reduction`` (add, mul: opset 16; min, max: opset 18) duplicates are defined: the node computes
:mod:`.scatter_elements_reduce` with ``include_self=1``, in that module's order.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from trt_scatter.oracle import reductions, rules
from trt_scatter.oracle.scatter_elements_reduce import check_shapes_and_indices, scatter_elements_reduce
from trt_scatter.oracle.scatter_elements_reduce import input_relations as reduce_input_relations, plan_inputs as reduce_plan_inputs
from trt_scatter.oracle.scatter_elements_reduce import input_capacity as input_capacity  # the same targets, whether indices repeat or not

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike

    from trt_scatter.model.node import OpNode

OP = "scatter_elements"


def check_scatter_elements(data_shape: Sequence[int | None], indices_shape: Sequence[int | None], updates_shape: Sequence[int | None], axis: int, op: str = OP) -> int:
    """Checks shapes and ``axis``; returns ``axis`` in [0, rank-1]. ``op`` names the op in messages (ScatterElementsReduce
    has these rules too)."""
    return rules.check_elements_shapes(op, data_shape, indices_shape, updates_shape, axis)


def scatter_elements(data: ArrayLike, indices: ArrayLike, updates: ArrayLike, axis: int = 0) -> np.ndarray:
    """Returns a copy of ``data`` with ``updates`` written at ``indices`` along ``axis``."""
    data, indices, updates = rules.as_array(OP, "data", data), rules.as_index_array(OP, "indices", indices), rules.as_array(OP, "updates", updates)
    rules.check_data_type(OP, "data", data.dtype)
    rules.check_same_type(OP, "updates", updates.dtype, data.dtype)
    rules.check_index_type(OP, "indices", indices.dtype)
    axis = check_scatter_elements(data.shape, indices.shape, updates.shape, axis)

    out = data.copy()
    # Open grid over indices' own extent (it may be smaller than data's), indices on the axis.
    target = list(np.ogrid[tuple(slice(n) for n in indices.shape)])
    target[axis] = indices
    with rules.indices_checked_by_numpy(OP, "indices", indices, (data.shape[axis],)):
        out[tuple(target)] = updates
    return out


def evaluate(inputs: dict[str, np.ndarray], attributes: dict[str, Any]) -> np.ndarray:
    """A ScatterElements node's output: ``inputs`` by name, ``attributes`` as the node has them (axis,
    reduction: ScatterElementsReduce's semantics with ``include_self=1``)."""
    reduction = reductions.reduction_of(attributes.get("reduction") or "none")
    if reduction != "none":
        reduction = reductions.check_reduction(OP, reduction, tuple(reductions.ONNX_REDUCTIONS))
        return scatter_elements_reduce(inputs["data"], inputs["indices"], inputs["updates"], axis=attributes.get("axis", 0),
                                       reduction=reduction, include_self=1, op=OP)
    return scatter_elements(inputs["data"], inputs["indices"], inputs["updates"], axis=attributes.get("axis", 0))


def check_node(node: OpNode) -> None:
    """The rules a model shows before it runs: a reduction ONNX defines (of numbers, not bool), shapes that fit
    where they are known, constant indices in [-s, s-1] where s is known (ONNX calls others an error, and
    TensorRT's IScatterLayer does not check them at run time)."""
    check_attributes(node)
    check_shapes_and_indices(node, OP)


def check_attributes(node: OpNode) -> None:
    """What TensorRT's parser reads of the node wherever it lies (a branch that never runs too): a reduction ONNX
    defines, of numbers (not bool)."""
    reductions.check_onnx_reduction(OP, node.attribute("reduction", "none"), node.dtype("data"))


def repeated_target(node: OpNode | rules.Known) -> str | None:
    """Where two elements of constant indices on one line along the axis write one element (undefined without a
    reduction), else None. Where ``updates`` are known too (a run's), only an element that gets two other values
    (other bits) is undefined; one that gets the same value each time (a lowering's fill of the reduction's identity)
    is not."""
    indices, data = node.constant("indices"), node.shape("data")
    if indices is None or data is None or indices.ndim != len(data) or _reduces(node):
        return None
    try:
        axis = rules.normalize_axis(OP, "axis", node.attribute("axis", 0), len(data))
    except rules.ScatterInputError:
        return None
    if not rules.is_known(data[axis]) or data[axis] <= 0 or indices.size == 0:
        return None
    size = data[axis]
    lines = np.moveaxis(indices.astype(np.int64) % size, axis, -1).reshape(-1, indices.shape[axis])
    pairs = rules.repeats((np.arange(len(lines))[:, None] * size + lines).reshape(-1))  # a target: a position on a line
    updates = node.constant("updates")
    if len(pairs) and updates is not None and updates.shape == indices.shape:
        pairs = pairs[rules.differing(np.moveaxis(updates, axis, -1).reshape(-1, 1), pairs)]
    if not len(pairs):
        return None
    line, at = divmod(int(pairs[0, 0]), indices.shape[axis])
    return f"two elements of 'indices' on one line along axis {axis} (line {line}) both write position {int(lines[line, at])}"


def distinct_targets(node: OpNode) -> bool:
    """Whether valid inputs must address each target once: yes (a repeat is undefined), unless the node reduces."""
    return not _reduces(node)


def _reduces(node):
    return reductions.reduction_of(node.attribute("reduction", "none")) != "none"


# ---- valid inputs (trt_scatter.inputs): shape relations, capacity, index generator


def input_relations(shapes: Any, node: OpNode) -> None:
    if _reduces(node):
        return reduce_input_relations(shapes, node)
    data, indices, updates = (shapes.shape(node, n) for n in ("data", "indices", "updates"))
    if data is not None:
        rules.check_rank_at_least(OP, "data", data, 1)
    shapes.equal_shapes(indices, updates)
    axis = node.attribute("axis", 0)
    on_axis = axis % len(data) if data and -len(data) <= axis < len(data) else None
    for position, (a, b) in enumerate(zip(indices or (), data or ())):
        shapes.bounds.append(([a], [b]))
        if position == on_axis:
            shapes.leave_room([a], [b])  # some of data stays
    if on_axis is not None:
        shapes.takes(node, on_axis, shapes.index_values(node, "indices")[0])


def crowded(plan: Any, node: OpNode) -> str | None:
    """Where ``indices`` is longer on the axis than data, so that each of its lines repeats a target whatever its
    values: that, in words, for the data loader's message (a reduction combines repeats: none)."""
    data, indices = plan.shape(node, "data"), plan.shape(node, "indices")
    if _reduces(node) or data is None or indices is None or len(indices) != len(data) or not math.prod(indices):
        return None
    axis = rules.normalize_axis(OP, "axis", node.attribute("axis", 0), len(data))
    return f"'indices' has {indices[axis]} elements on axis {axis} for data's {data[axis]}" if indices[axis] > data[axis] else None


def plan_inputs(plan: Any, node: OpNode, rng: np.random.Generator) -> None:
    if _reduces(node):
        return reduce_plan_inputs(plan, node, rng)
    data, indices, updates = (plan.shape(node, n) for n in ("data", "indices", "updates"))
    axis = node.attribute("axis", 0)
    name = plan.fed(node, "indices")
    plan.check_known(node, check_scatter_elements, name, data, indices, updates, axis)
    if name is None:
        return
    axis = rules.normalize_axis(OP, "axis", axis, len(data))
    size = data[axis]
    if indices[axis] > size:
        raise rules.ScatterInputError(OP, "indices", f"dimension {axis} must be at most data's ({size}) for distinct indices", f"shape {indices}")

    def generate(rng, shape=indices):
        lines = math.prod(shape[:axis] + shape[axis + 1 :])
        moved = shape[:axis] + shape[axis + 1 :] + (shape[axis],)
        # Distinct on every line: a window of one random permutation of range(size), at a random
        # cyclic shift per line (memory grows with the indices, not with lines x size).
        permutation = rng.permutation(size)
        shifts = rng.integers(0, max(size, 1), (lines, 1))
        order = permutation[(shifts + np.arange(shape[axis])) % max(size, 1)]
        return rules.some_negative(rng, np.moveaxis(order.reshape(moved), -1, axis), size)

    plan.generators[name] = (node, generate)
