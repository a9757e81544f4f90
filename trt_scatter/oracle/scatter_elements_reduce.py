"""ScatterElementsReduce (trt_scatter): ONNX's ScatterElements with a reduction, PyTorch's ``scatter_reduce``.

For every position ``p`` of ``indices`` (rank r, like ``data``; ``updates`` has indices' shape, and off the
axis both are at most data's), the update ``updates[p]`` combines into the element::

    out[p[0], ..., indices[p], ..., p[r-1]]         # indices[p] replaces p[axis]

with ``reduction`` (``add``, ``mul``, ``min``, ``max``, ``mean``) and ``include_self`` (1: data's own
value is the first operand; 0: the first update is, as ``scatter_reduce(..., include_self=False)``).
Several updates into one element combine in ascending position of ``p`` (C order): the order and the
arithmetic are :mod:`~trt_scatter.oracle.reductions`' (this module maps positions to target elements).
``reduction`` in add/mul/min/max with ``include_self=1`` is ONNX's ScatterElements (opsets 16, 18) with
that order fixed; ``mean`` and ``include_self=0`` are PyTorch's. Index values lie in [-s, s-1] with
s = data.shape[axis]; others raise here (the kernels skip and count them).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from trt_scatter import ops
from trt_scatter.oracle import reductions, rules

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike

    from trt_scatter.model.node import OpNode

OP = "scatter_elements_reduce"
DEFAULTS = {name: attribute.default for name, attribute in ops.OPS["ScatterElementsReduce"].attributes.items()}


def check_scatter_elements_reduce(data_shape: Sequence[int | None], indices_shape: Sequence[int | None], updates_shape: Sequence[int | None], axis: int) -> int:
    """Checks shapes and ``axis`` (ScatterElements' rules); returns ``axis`` in [0, rank-1]."""
    return rules.check_elements_shapes(OP, data_shape, indices_shape, updates_shape, axis)


def scatter_elements_reduce(data: ArrayLike, indices: ArrayLike, updates: ArrayLike, axis: int = 0, reduction: str = "add", include_self: int = 1, op: str = OP) -> np.ndarray:
    """Returns a copy of ``data`` with ``updates`` combined into the elements ``indices`` address along ``axis``.
    ``op`` names the op in messages (ONNX's ScatterElements with a reduction runs this too)."""
    data, indices, updates = rules.as_array(op, "data", data), rules.as_index_array(op, "indices", indices), rules.as_array(op, "updates", updates)
    reduction, include_self = reductions.check_arguments(op, data, indices, updates, reduction, include_self)
    axis = rules.check_elements_shapes(op, data.shape, indices.shape, updates.shape, axis)
    size = data.shape[axis]
    rules.check_indices_in_range(op, "indices", indices, (size,), allow_negative=True)
    coordinates = list(np.indices(indices.shape, sparse=True))
    positions = indices.astype(np.int64)  # in range, checked: unsigned ones fit too
    coordinates[axis] = np.where(positions < 0, positions + size, positions)
    targets = np.ravel_multi_index(tuple(np.broadcast_arrays(*coordinates)), data.shape) if indices.size else np.zeros(0, np.int64)
    out = reductions.reduce_rows(data.reshape(-1, 1), targets.reshape(-1), updates.reshape(-1, 1), reduction, include_self)
    return out.reshape(data.shape)


def evaluate(inputs: dict[str, np.ndarray], attributes: dict[str, Any]) -> np.ndarray:
    """A node's output: ``inputs`` by name, ``attributes`` as the node has them (the op's defaults for the others)."""
    values = {**DEFAULTS, **{name: value for name, value in attributes.items() if name in DEFAULTS}}
    return scatter_elements_reduce(inputs["data"], inputs["indices"], inputs["updates"], axis=values["axis"],
                                   reduction=values["reduction"], include_self=values["include_self"])


def check_node(node: OpNode) -> None:
    """The rules a model shows before it runs: a number type (not bool), shapes that fit, an axis of data, constant
    indices in [-s, s-1] where s is known."""
    dtype = node.dtype("data")
    if dtype is not None:
        reductions.check_element_type(OP, "data", dtype)
    check_shapes_and_indices(node)


def check_shapes_and_indices(node: OpNode, op: str = OP) -> None:
    """ScatterElements' rules on a node (this op's and ONNX's ScatterElements, ``op`` naming it): shapes that fit and
    an axis of data where the shapes are known, constant indices in [-s, s-1] where s is known."""
    data, indices, updates = node.shape("data"), node.shape("indices"), node.shape("updates")
    if data is None or indices is None or updates is None:
        return
    axis = rules.check_elements_shapes(op, data, indices, updates, node.attribute("axis", 0))
    constant = node.constant("indices")
    if constant is not None and constant.dtype.kind in "iu":
        rules.check_indices_in_range(op, "indices", constant, (data[axis],), allow_negative=True)


def from_standard(node: OpNode) -> dict[str, Any] | None:
    """ONNX's ScatterElements with ``reduction`` add, mul, min or max (an :class:`~trt_scatter.model.node.OpNode`)
    as this op's node (``include_self=1``: ONNX combines with data's value); ``None`` for one without a reduction,
    which TensorRT builds itself."""
    reduction = reductions.reduction_of(node.attribute("reduction", "none"))
    if reduction not in reductions.ONNX_REDUCTIONS:
        return None
    return {"inputs": [node.inputs[name] for name in ("data", "indices", "updates")],
            "attributes": {"axis": int(node.attribute("axis", 0)), "reduction": reduction, "include_self": 1, "inplace": 0}, "why": reductions.TENSORRT_REDUCTIONS}


def repeated_target(node: OpNode | rules.Known) -> str | None:
    """None: updates into one target combine, in the order the oracle defines, so a repeat is no warning."""
    return None


def distinct_targets(node: OpNode) -> bool:
    """Whether valid inputs need indices that address each element once: never, duplicates combine."""
    return False


# ---- valid inputs (trt_scatter.inputs): shape relations, capacity, index generator


def input_relations(shapes: Any, node: OpNode) -> None:
    data, indices, updates = (shapes.shape(node, n) for n in ("data", "indices", "updates"))
    if data is not None:
        rules.check_rank_at_least(OP, "data", data, 1)
    shapes.equal_shapes(indices, updates)
    if data is None or indices is None or len(data) != len(indices):
        return
    axis = node.attribute("axis", 0)
    for dim, (a, b) in enumerate(zip(indices, data)):
        if dim != axis % len(data):  # off the axis indices are at most data's; along it, any length (repeats combine)
            shapes.bounds.append(([a], [b]))
    shapes.takes(node, axis % len(data), shapes.index_values(node, "indices")[0])


def input_capacity(plan: Any, node: OpNode) -> int | None:
    """How many targets the indices can address along the axis: data's dimension there."""
    data, axis = plan.shape(node, "data"), node.attribute("axis", 0)
    return data[axis % len(data)] if data and -len(data) <= axis < len(data) else None


def plan_inputs(plan: Any, node: OpNode, rng: np.random.Generator) -> None:
    data, indices, updates = (plan.shape(node, n) for n in ("data", "indices", "updates"))
    axis = node.attribute("axis", 0)
    name = plan.fed(node, "indices")
    plan.check_known(node, check_scatter_elements_reduce, name, data, indices, updates, axis)
    if name is None:
        return
    size = data[rules.normalize_axis(OP, "axis", axis, len(data))]
    plan.generators[name] = (node, lambda rng, shape=indices: random_indices(rng, shape, size))


def random_indices(rng: np.random.Generator, shape: Sequence[int], size: int) -> np.ndarray:
    """Indices in [0, size-1] drawn with repetition (a target may get several updates), about half of them in
    their negative form: valid for a reduction whatever they repeat."""
    if math.prod(shape) and not size:
        raise rules.ScatterInputError(OP, "indices", "must be empty: data has no element along the axis", f"shape {shape}")
    values = rng.integers(0, max(size, 1), size=shape)
    return rules.some_negative(rng, values, size)
