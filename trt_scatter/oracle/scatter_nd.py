"""ScatterND (ONNX) = TensorRT ``IScatterLayer`` in ``ScatterMode.ND`` = OpenVINO ScatterNDUpdate-3.

``indices`` has shape (..., k) with k <= rank(data); each row of k numbers addresses one element
(k = r) or one slice (k < r) of ``data``, and ``updates`` has shape
``indices.shape[:-1] + data.shape[k:]``::

    out[indices[i]] = updates[i]      # for every i in indices.shape[:-1]

Index values lie in [-s_j, s_j-1] with s_j = data.shape[j] (negative counts from the end, as
ONNX runtimes accept; OpenVINO-3 asks for [0, s_j-1], a subset). Duplicate rows are undefined in
every spec; this oracle keeps whichever write NumPy performs last, and no test may rely on it.

With a ``reduction`` (add, mul: opset 16; min, max: opset 18) duplicates are defined: the node computes
:mod:`.scatter_nd_reduce` with ``include_self=1``, in that module's order.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from trt_scatter.oracle import reductions, rules
from trt_scatter.oracle.scatter_nd_reduce import check_shapes_and_indices, scatter_nd_reduce
from trt_scatter.oracle.scatter_nd_reduce import index_bound as index_bound, input_capacity as input_capacity  # the same targets, whether rows repeat or not
from trt_scatter.oracle.scatter_nd_reduce import input_relations as reduce_input_relations, plan_inputs as reduce_plan_inputs

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike

    from trt_scatter.model.node import OpNode

OP = "scatter_nd"


def check_scatter_nd(data_shape: Sequence[int | None], indices_shape: Sequence[int | None], updates_shape: Sequence[int | None], op: str = OP) -> None:
    """Checks the shapes of ScatterND's inputs (``op`` names the op in messages: ScatterNDReduce has these rules too)."""
    rules.check_nd_shapes(op, data_shape, indices_shape, updates_shape)


def scatter_nd(data: ArrayLike, indices: ArrayLike, updates: ArrayLike) -> np.ndarray:
    """Returns a copy of ``data`` with ``updates`` written at the elements or slices that ``indices`` address."""
    data, indices, updates = rules.as_array(OP, "data", data), rules.as_index_array(OP, "indices", indices), rules.as_array(OP, "updates", updates)
    rules.check_data_type(OP, "data", data.dtype)
    rules.check_same_type(OP, "updates", updates.dtype, data.dtype)
    rules.check_index_type(OP, "indices", indices.dtype)
    check_scatter_nd(data.shape, indices.shape, updates.shape)
    k = indices.shape[-1]

    out = data.copy()
    rows = indices.reshape(math.prod(indices.shape[:-1]), k)  # not (-1, k): NumPy cannot infer -1 when k == 0
    if k == 0:  # every row addresses all of data
        if rows.shape[0]:
            out[...] = updates.reshape((rows.shape[0],) + data.shape)[-1]
        return out
    with rules.indices_checked_by_numpy(OP, "indices", indices, data.shape[:k]):
        out[tuple(rows.T)] = updates.reshape((rows.shape[0],) + data.shape[k:])
    return out


scatter_nd_update = scatter_nd


def evaluate(inputs: dict[str, np.ndarray], attributes: dict[str, Any]) -> np.ndarray:
    """A ScatterND node's output (``inputs`` by name; a ``reduction``: ScatterNDReduce's semantics with ``include_self=1``)."""
    reduction = reductions.reduction_of(attributes.get("reduction") or "none")
    if reduction != "none":
        reduction = reductions.check_reduction(OP, reduction, tuple(reductions.ONNX_REDUCTIONS))
        return scatter_nd_reduce(inputs["data"], inputs["indices"], inputs["updates"], reduction=reduction, include_self=1, op=OP)
    return scatter_nd(inputs["data"], inputs["indices"], inputs["updates"])


def check_node(node: OpNode) -> None:
    """The rules a model shows before it runs: a reduction ONNX defines (of numbers, not bool), shapes that fit
    where they are known, constant indices in [-s, s-1] for each known dimension they index (ONNX calls others
    an error, and TensorRT's IScatterLayer does not check them at run time)."""
    check_attributes(node)
    check_shapes_and_indices(node, OP)


def check_attributes(node: OpNode) -> None:
    """What TensorRT's parser reads of the node wherever it lies (a branch that never runs too): a reduction ONNX
    defines, of numbers (not bool)."""
    reductions.check_onnx_reduction(OP, node.attribute("reduction", "none"), node.dtype("data"))


def repeated_target(node: OpNode | rules.Known) -> str | None:
    """Where two rows of constant indices write one element or slice (undefined without a reduction), else None. Where
    ``updates`` are known too (a run's), only a target that two rows give other values (other bits) is undefined; one
    that gets the same values each time (a lowering's fill of the reduction's identity) is not."""
    indices, data = node.constant("indices"), node.shape("data")
    if indices is None or data is None or indices.ndim == 0 or _reduces(node):
        return None
    k = indices.shape[-1]
    dims = data[:k]
    if k > len(data) or not all(rules.is_known(d) and d > 0 for d in dims):
        return None
    count = math.prod(indices.shape[:-1])
    rows = indices.reshape(count, k).astype(np.int64) % np.array(dims, np.int64)  # not (-1, k): k may be 0
    pairs = rules.repeats(np.ravel_multi_index(tuple(rows.T), dims) if k else np.zeros(count, np.int64))
    updates = node.constant("updates")
    if len(pairs) and updates is not None and updates.shape == indices.shape[:-1] + tuple(data[k:]):
        pairs = pairs[rules.differing(updates.reshape(count, -1), pairs)]  # not (count, -1) where count is 0: no pairs then
    if not len(pairs):
        return None
    first, second = (int(position) for position in pairs[0])
    target = tuple(rows[first].tolist()) if k else "all of data"  # k = 0: each row writes all of it
    return f"rows {first} and {second} of 'indices' both write {target}"


def distinct_targets(node: OpNode) -> bool:
    """Whether valid inputs must address each target once: yes (a repeat is undefined), unless the node reduces."""
    return not _reduces(node)


def _reduces(node):
    return reductions.reduction_of(node.attribute("reduction", "none")) != "none"


# ---- valid inputs (trt_scatter.inputs): shape relations, capacity, index generator


def input_relations(shapes: Any, node: OpNode) -> None:
    """scatter_nd_reduce's relations, and rows no more than the targets (distinct rows, unless the node reduces)."""
    if _reduces(node):
        return reduce_input_relations(shapes, node)
    reduce_input_relations(shapes, node, OP)
    data, indices = shapes.shape(node, "data"), shapes.shape(node, "indices")
    if data is not None and indices is not None:
        targets = list(data[: shapes.of(indices[-1])])
        shapes.bounds.append((list(indices[:-1]), targets))
        shapes.leave_room(list(indices[:-1]), targets)  # some of data stays


def crowded(plan: Any, node: OpNode) -> str | None:
    """Where ``indices`` has more rows than data has targets for them, so that some repeat whatever their values:
    that, in words, for the data loader's message (a reduction combines repeats: none)."""
    data, indices = plan.shape(node, "data"), plan.shape(node, "indices")
    if _reduces(node) or data is None or not indices or indices[-1] > len(data):
        return None
    rows, targets = math.prod(indices[:-1]), math.prod(data[: indices[-1]])
    return f"'indices' has {rows} rows for data's {targets} targets" if rows > targets else None


def plan_inputs(plan: Any, node: OpNode, rng: np.random.Generator) -> None:
    if _reduces(node):
        return reduce_plan_inputs(plan, node, rng)
    data, indices, updates = (plan.shape(node, n) for n in ("data", "indices", "updates"))
    name = plan.fed(node, "indices")
    plan.check_known(node, check_scatter_nd, name, data, indices, updates)
    if name is None:
        return
    k = indices[-1]
    capacity, rows = math.prod(data[:k]), math.prod(indices[:-1])
    if rows > capacity:
        raise rules.ScatterInputError(OP, "indices", f"must have at most {capacity} rows for distinct rows", f"shape {indices}")

    def generate(rng, shape=indices):
        flat = rng.choice(capacity, size=rows, replace=False)
        coordinates = np.stack(np.unravel_index(flat, data[:k]), axis=-1) if k else np.zeros((rows, 0), np.int64)
        return rules.some_negative(rng, coordinates.reshape(shape), np.array(data[:k], np.int64))

    plan.generators[name] = (node, generate)
