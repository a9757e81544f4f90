"""ScatterNDReduce (trt_scatter): ONNX's ScatterND with a reduction, PyTorch's ``index_add`` and
``index_put(accumulate=True)`` along the first axes.

``indices`` has shape (..., k) with k <= rank(data); each of its rows of k numbers addresses one element
(k = r) or one slice (k < r) of ``data``, and ``updates`` has shape ``indices.shape[:-1] + data.shape[k:]``.
Each update row combines into the slice its index row addresses::

    out[indices[i]] = reduction(out[indices[i]], updates[i])      # for every i in indices.shape[:-1]

with ``reduction`` (``add``, ``mul``, ``min``, ``max``, ``mean``) and ``include_self`` (1: data's own
values are the first operand; 0: the first update row is). Rows into one slice combine in ascending
row position (C order of ``indices.shape[:-1]``), element by element: the order and the arithmetic are
:mod:`~trt_scatter.oracle.reductions`'. add/mul/min/max with ``include_self=1`` is ONNX's ScatterND
(opsets 16, 18) with that order fixed. Index values lie in [-s_j, s_j-1]; others raise here (the kernels
skip such a row and count it).
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

OP = "scatter_nd_reduce"
DEFAULTS = {name: attribute.default for name, attribute in ops.OPS["ScatterNDReduce"].attributes.items()}


def check_scatter_nd_reduce(data_shape: Sequence[int | None], indices_shape: Sequence[int | None], updates_shape: Sequence[int | None]) -> None:
    """Checks the shapes (ScatterND's rules)."""
    rules.check_nd_shapes(OP, data_shape, indices_shape, updates_shape)


def scatter_nd_reduce(data: ArrayLike, indices: ArrayLike, updates: ArrayLike, reduction: str = "add", include_self: int = 1, op: str = OP) -> np.ndarray:
    """Returns a copy of ``data`` with the rows of ``updates`` combined into the elements or slices ``indices`` address.
    ``op`` names the op in messages (ONNX's ScatterND with a reduction runs this too)."""
    data, indices, updates = rules.as_array(op, "data", data), rules.as_index_array(op, "indices", indices), rules.as_array(op, "updates", updates)
    reduction, include_self = reductions.check_arguments(op, data, indices, updates, reduction, include_self)
    rules.check_nd_shapes(op, data.shape, indices.shape, updates.shape)
    k = indices.shape[-1]
    rows = indices.reshape(math.prod(indices.shape[:-1]), k)  # not (-1, k): k may be 0
    rules.check_indices_in_range(op, "indices", rows, data.shape[:k], allow_negative=True)  # before int64: a uint64 may not fit
    rows = rows.astype(np.int64)
    lead = data.shape[:k]
    rows = np.where(rows < 0, rows + np.array(lead, np.int64), rows)
    targets = np.ravel_multi_index(tuple(rows.T), lead) if k else np.zeros(rows.shape[0], np.int64)
    columns = math.prod(data.shape[k:])
    out = reductions.reduce_rows(data.reshape(math.prod(lead), columns), targets,
                                 updates.reshape(rows.shape[0], columns), reduction, include_self)
    return out.reshape(data.shape)


def evaluate(inputs: dict[str, np.ndarray], attributes: dict[str, Any]) -> np.ndarray:
    """A node's output: ``inputs`` by name, ``attributes`` as the node has them (the op's defaults for the others)."""
    values = {**DEFAULTS, **{name: value for name, value in attributes.items() if name in DEFAULTS}}
    return scatter_nd_reduce(inputs["data"], inputs["indices"], inputs["updates"], reduction=values["reduction"],
                             include_self=values["include_self"])


def check_node(node: OpNode) -> None:
    """The rules a model shows before it runs: a number type (not bool), shapes that fit, constant indices in
    [-s, s-1] for each known dimension they index."""
    dtype = node.dtype("data")
    if dtype is not None:
        reductions.check_element_type(OP, "data", dtype)
    check_shapes_and_indices(node)


def check_shapes_and_indices(node: OpNode, op: str = OP) -> None:
    """ScatterND's rules on a node (this op's and ONNX's ScatterND, ``op`` naming it): shapes that fit where they are
    known, constant indices in [-s, s-1] for each known dimension they index."""
    data, indices, updates = node.shape("data"), node.shape("indices"), node.shape("updates")
    if data is None or indices is None or updates is None:
        return
    rules.check_nd_shapes(op, data, indices, updates)
    constant = node.constant("indices")
    if constant is not None and constant.dtype.kind in "iu" and constant.ndim and constant.shape[-1] <= len(data):
        rules.check_indices_in_range(op, "indices", constant, data[: constant.shape[-1]], allow_negative=True)


def from_standard(node: OpNode) -> dict[str, Any] | None:
    """ONNX's ScatterND with ``reduction`` add, mul, min or max as this op's node (``include_self=1``); ``None``
    for one without a reduction, which TensorRT builds itself."""
    reduction = reductions.reduction_of(node.attribute("reduction", "none"))
    if reduction not in reductions.ONNX_REDUCTIONS:
        return None
    return {"inputs": [node.inputs[name] for name in ("data", "indices", "updates")],
            "attributes": {"reduction": reduction, "include_self": 1, "inplace": 0}, "why": reductions.TENSORRT_REDUCTIONS}


def repeated_target(node: OpNode | rules.Known) -> str | None:
    """None: updates into one target combine, in the order the oracle defines, so a repeat is no warning."""
    return None


def distinct_targets(node: OpNode) -> bool:
    """Whether valid inputs need index rows that address each slice once: never, duplicates combine."""
    return False


# ---- valid inputs (trt_scatter.inputs): shape relations, capacity, index generator


def input_relations(shapes: Any, node: OpNode, op: str = OP) -> None:
    """ScatterND's relations of shapes (ScatterND's own module adds distinct rows); ``op`` names the op in messages."""
    data, indices, updates = (shapes.shape(node, n) for n in ("data", "indices", "updates"))
    if data is None or indices is None:
        return
    rules.check_rank_at_least(op, "data", data, 1)
    rules.check_rank_at_least(op, "indices", indices, 1)
    if shapes.free(indices[-1]):  # rows of a length updates' rank sets (indices.shape[:-1] + data.shape[k:]), or elements
        k = None if updates is None else len(indices) - 1 + len(data) - len(updates)
        shapes.equal(indices[-1], k if k is not None and 0 <= k <= len(data) else len(data))
    k = shapes.of(indices[-1])
    shapes.equal_shapes(updates, list(indices[:-1]) + list(data[k:]))  # any number of rows: repeats combine
    rows = shapes.index_values(node, "indices")[0]
    if rows is not None and rows.ndim and rows.shape[-1] <= len(data):
        for column in range(rows.shape[-1]):  # column c of the rows addresses data's dimension c
            shapes.takes(node, column, rows[..., column])


def input_capacity(plan: Any, node: OpNode) -> int | None:
    """How many targets the index rows can address: the elements or slices of data's first k axes."""
    data, indices = plan.shape(node, "data"), plan.shape(node, "indices")
    return math.prod(data[: indices[-1]]) if data and indices and indices[-1] <= len(data) else None


def index_bound(plan: Any, node: OpNode) -> int | None:
    """What any column of the index rows may hold, [0, b): data's smallest dimension of its first k axes (each
    column of an index built from several inputs, ``x.index_put((i, j), v, accumulate=True)``, is one of them)."""
    data, indices = plan.shape(node, "data"), plan.shape(node, "indices")
    return min(data[: indices[-1]], default=None) if data and indices and indices[-1] <= len(data) else None


def plan_inputs(plan: Any, node: OpNode, rng: np.random.Generator) -> None:
    data, indices, updates = (plan.shape(node, n) for n in ("data", "indices", "updates"))
    name = plan.fed(node, "indices")
    plan.check_known(node, check_scatter_nd_reduce, name, data, indices, updates)
    if name is None:
        return
    k = indices[-1]
    lead = np.array(data[:k], np.int64)
    if math.prod(indices[:-1]) and k and not math.prod(data[:k]):
        raise rules.ScatterInputError(OP, "indices", "must be empty: data has no element to address", f"shape {indices}")

    def generate(rng, shape=indices):
        values = rng.integers(0, np.maximum(lead, 1), size=shape) if k else np.zeros(shape, np.int64)
        return rules.some_negative(rng, values, lead)

    plan.generators[name] = (node, generate)
