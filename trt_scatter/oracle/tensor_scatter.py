"""TensorScatter-24 (ONNX): write each sequence's new entries into a KV cache, at its own position.

``past_cache`` has shape ``(B, D1, ..., M, ..., Dn)`` with ``M`` (the largest sequence length) on
``axis``; ``update`` has the same shape but ``S <= M`` on that axis; ``write_indices`` (optional,
shape ``(B,)``, zeros where left out) is where each batch row's update starts. From the spec's text::

    for prefix in ndindex(past_cache.shape[:axis]):          # prefix[0] is the batch row b
        for s in range(S):
            position = write_indices[b] + s                   # mode "circular": modulo M
            present_cache[(*prefix, position)] = update[(*prefix, s)]

Rules (the spec's, and onnxruntime's where the spec says nothing): ``axis`` in [-r, r-1] and not
the batch axis 0 (so rank >= 2); ``update`` has the cache's shape off ``axis`` and at most ``M``
on it; ``write_indices`` is a 1-D integer tensor of ``B`` values, each at least 0 (onnxruntime
refuses negative ones in both modes) and, in ``linear`` mode, at most ``M - S``, so that the
update fits; in ``circular`` mode a position wraps modulo ``M`` (a write index of any size). No
two positions of a batch row are equal (``S <= M``), so every write lands on its own element.

Difference from ``onnx.reference`` (1.23.2): on every valid input they agree (a test checks it),
and it also runs what the spec forbids: an ``axis`` of 0 or out of range (it takes the axis modulo
the rank) and negative linear write indices (Python's indexing counts them from the end).
onnx's reference before its PR #8353 wrapped every coordinate modulo ``M`` in circular mode, the
batch row too (the spec's pseudocode said so then); this oracle wraps the position only, as the
spec's text says.

The ``trt_scatter`` op ``CacheScatter`` is this op with int32 or int64 write indices (ONNX's takes
int64 only), served by a plugin; it takes ONNX's own TensorScatter nodes that TensorRT's parser
cannot build (:func:`from_standard`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from trt_scatter.oracle import rules

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike

    from trt_scatter.model.node import OpNode

OP = "tensor_scatter"
DEFAULT_AXIS = -2
MODES = ("linear", "circular")
#: What TensorRT's ONNX parser builds itself (one IKVCacheUpdateLayer): see :func:`from_standard`.
TENSORRT_KV_CACHE = {"rank": 4, "axis": 2, "mode": "linear", "types": ("float32", "float16", "bfloat16")}


def check_mode(mode: str | bytes) -> str:
    """``mode`` (a str or bytes) as one of :data:`MODES`."""
    mode = mode.decode(errors="replace") if isinstance(mode, bytes) else mode
    if mode not in MODES:
        raise rules.ScatterInputError(OP, "mode", f"must be one of {', '.join(repr(m) for m in MODES)}", repr(mode))
    return mode


UPDATE_SHAPE = "past_cache's shape off the axis"  #: the rule's words, for the builder's assertion too


def check_tensor_scatter(cache_shape: Sequence[int | None], update_shape: Sequence[int | None], write_indices_shape: Sequence[int | None] | None = None, axis: int = DEFAULT_AXIS) -> int:
    """Checks the shapes and ``axis`` (dimensions -1 or None: not known, they fit); returns ``axis`` in [1, rank-1]."""
    rules.check_rank_at_least(OP, "past_cache", cache_shape, 2)
    rank = len(cache_shape)
    given, axis = axis, rules.normalize_axis(OP, "axis", axis, rank, data="past_cache")
    if axis == 0:
        raise rules.ScatterInputError(OP, "axis", f"must not be the batch axis 0 (of 'past_cache' of rank {rank})", given)
    expected = tuple(cache_shape[:axis]) + (-1,) + tuple(cache_shape[axis + 1 :])
    rules.check_shape(OP, "update", update_shape, expected, UPDATE_SHAPE)
    size, count = cache_shape[axis], update_shape[axis]
    if rules.is_known(size) and rules.is_known(count) and count > size:
        raise rules.ScatterInputError(OP, "update", f"must have at most past_cache's {size} entries on axis {axis} (sequence_length <= max_sequence_length)", count)
    if write_indices_shape is not None:
        rules.check_shape(OP, "write_indices", write_indices_shape, (cache_shape[0],), "one write index per batch row: (batch_size,)")
    return axis


def check_write_indices(write_indices: ArrayLike, size: int | None, count: int | None, mode: str) -> None:
    """Each write index at least 0, and at most ``size - count`` in linear mode (the update must fit). ``size`` and
    ``count`` may be None (not known before a run): then only what fails for every value is refused."""
    values = np.asarray(write_indices)
    if values.size == 0:
        return
    low, high = int(values.min()), int(values.max())
    if low < 0:
        raise rules.ScatterInputError(OP, "write_indices", "values must be >= 0", low)
    if mode != "linear" or size is None:
        return
    if count is None and high > size:  # even an empty update would not fit
        raise rules.ScatterInputError(OP, "write_indices", f"values must be at most max_sequence_length = {size}, less sequence_length, in linear mode "
                                      "(the update must fit)", high)
    if count is not None and high > size - count:
        raise rules.ScatterInputError(OP, "write_indices", f"values must be at most max_sequence_length - sequence_length = {size} - {count} in linear mode (the update must fit)", high)


def positions(write_indices: ArrayLike | None, batch: int, count: int, size: int, mode: str) -> np.ndarray:
    """The cache positions ``(batch, count)`` that each batch row's ``count`` entries go to (int64).

    Circular positions wrap modulo ``size`` in exact integer arithmetic, ``(w mod M + s) mod M``, as no
    ``w + s`` may overflow. The write indices must have been checked (:func:`check_write_indices`).
    """
    starts = np.zeros(batch, np.int64) if write_indices is None else np.asarray(write_indices).reshape(-1)
    offsets = np.arange(count, dtype=np.int64)
    if mode == "circular" and size:  # the remainder in the indices' own type: a uint64 past int64's range stays exact
        return ((starts % size).astype(np.int64)[:, None] + offsets[None, :]) % size
    return starts.astype(np.int64)[:, None] + offsets[None, :]  # linear: at most size - count, checked


def tensor_scatter(past_cache: ArrayLike, update: ArrayLike, write_indices: ArrayLike | None = None, axis: int = DEFAULT_AXIS, mode: str | bytes = "linear") -> np.ndarray:
    """Returns a copy of ``past_cache`` with ``update`` written on ``axis`` from each batch row's write index."""
    cache, update = rules.as_array(OP, "past_cache", past_cache), rules.as_array(OP, "update", update)
    rules.check_data_type(OP, "past_cache", cache.dtype)
    rules.check_same_type(OP, "update", update.dtype, cache.dtype, other="past_cache")
    mode = check_mode(mode)
    indices = None
    if write_indices is not None:
        indices = rules.as_index_array(OP, "write_indices", write_indices)
        rules.check_index_type(OP, "write_indices", indices.dtype)
    axis = check_tensor_scatter(cache.shape, update.shape, None if indices is None else indices.shape, axis)
    size, count = cache.shape[axis], update.shape[axis]
    if indices is not None:
        check_write_indices(indices, size, count, mode)
    out = cache.copy()
    if count == 0:
        return out
    written = np.moveaxis(out, axis, 1)  # a view: (B, M, ...) with the sequence axis second
    batch = cache.shape[0]
    rows = np.arange(batch)[:, None]
    written[rows, positions(indices, batch, count, size, mode)] = np.moveaxis(update, axis, 1)
    return out


def evaluate(inputs: dict[str, np.ndarray], attributes: dict[str, Any]) -> np.ndarray:
    """A TensorScatter or CacheScatter node's output (``inputs`` by name; ``inplace`` changes no value)."""
    return tensor_scatter(inputs["past_cache"], inputs["update"], inputs.get("write_indices"),
                          axis=attributes.get("axis", DEFAULT_AXIS), mode=attributes.get("mode", "linear"))


def node_attributes(node: OpNode) -> tuple[int, str]:
    """``(axis, mode)`` of a node (an :class:`~trt_scatter.model.node.OpNode`), the spec's defaults where left out."""
    return node.attribute("axis", DEFAULT_AXIS), node.attribute("mode", "linear")


def check_attributes(node: OpNode) -> None:
    """What TensorRT's parser reads of the node wherever it lies (a branch that never runs too): a mode of the two."""
    check_mode(node_attributes(node)[1])


def check_node(node: OpNode) -> None:
    """The rules a model shows before it runs: the mode, the axis, shapes that fit (where known), constant
    write indices in range."""
    axis, mode = node_attributes(node)
    mode = check_mode(mode)
    cache, update = node.shape("past_cache"), node.shape("update")
    if cache is None:
        return
    if update is None:
        update = (-1,) * len(cache)
    axis = check_tensor_scatter(cache, update, node.shape("write_indices"), axis)
    indices = node.constant("write_indices")
    if indices is not None and indices.dtype.kind in "iu":
        known = [dim if rules.is_known(dim) else None for dim in (cache[axis], update[axis])]
        check_write_indices(indices, *known, mode)


def repeated_target(node: OpNode | rules.Known) -> str | None:
    """None: each batch row writes its own run of positions, at most the cache's size on the axis long, so no
    two writes meet (circular mode wraps a run, never onto itself)."""
    return None


def from_standard(node: OpNode) -> dict[str, Any] | None:
    """ONNX's own TensorScatter ``node`` (an :class:`~trt_scatter.model.node.OpNode`) as a CacheScatter node, or
    ``None`` where TensorRT's ONNX parser builds it itself.

    TensorRT's parser makes a TensorScatter one ``IKVCacheUpdateLayer`` (TensorRT-RTX 1.7.1, TensorRT 11)
    for a 4-D cache written on axis -2 in linear mode, of float32, float16 or bfloat16, with a static length
    on that axis (others fail its parse: "The KV cache tensor must have a static sequence length
    dimension"), whose cache is a graph input that no other node reads and whose output a graph output
    (others fail its build: "The cache tensor must be a network input", "The output tensor must be a
    network output"; a cache that two layers update: "Input index already mapped to an output_index"), and
    holds elements (an empty cache fails its build inside Myelin: "CHECK(root_ten->is_update_tensor()) failed").
    Every other node goes to the plugin, which takes any rank, axis, mode and element type.
    """
    axis, mode = node_attributes(node)
    why = _not_tensorrts(node, axis, mode)
    if why is None:
        return None
    return {"inputs": list(node.node.input), "attributes": {"axis": int(axis), "mode": str(mode), "inplace": 0}, "why": why}


def _not_tensorrts(node, axis, mode):
    """Why TensorRT's KV-cache layer cannot build ``node`` (the first of :func:`from_standard`'s conditions it breaks,
    in words), or None where it can."""
    cache, dtype = node.shape("past_cache"), node.dtype("past_cache")
    graph = node.tensors.model.graph
    wanted = TENSORRT_KV_CACHE
    reasons = (
        (lambda: cache is not None and len(cache) == wanted["rank"], f"its KV-cache layer takes a {wanted['rank']}-D cache"),
        (lambda: -len(cache) <= axis < len(cache) and axis % len(cache) == wanted["axis"], f"its KV-cache layer writes axis {wanted['axis'] - wanted['rank']}"),
        (lambda: mode == wanted["mode"], f"its KV-cache layer writes in {wanted['mode']} mode"),
        (lambda: dtype is not None and np.dtype(dtype).name in wanted["types"], f"its KV-cache layer takes {', '.join(wanted['types'])}"),
        (lambda: cache[axis % len(cache)] >= 0, "its KV-cache layer needs a static length on the axis"),
        (lambda: 0 not in cache, "its KV-cache layer fails on a cache with no elements"),
        (lambda: node.inputs["past_cache"] in {value.name for value in graph.input}, "its KV-cache layer needs a cache that is a graph input"),
        (lambda: sum(node.inputs["past_cache"] in other.input for other in graph.node) == 1, "its KV-cache layer needs a cache no other node reads"),
        (lambda: node.node.output[0] in {value.name for value in graph.output}, "its KV-cache layer needs an output that is a graph output"),
    )
    return next((words for holds, words in reasons if not holds()), None)


def tensorrt_failure(words: str) -> str | None:
    """Why TensorRT's KV-cache layer failed to build a TensorScatter node that :func:`from_standard` left to it, where
    TensorRT's ``words`` say (TensorRT-RTX 1.7.1: Myelin's internal check on an empty cache); None otherwise."""
    if "is_update_tensor()" in words:
        return ("TensorRT's KV-cache layer, which builds ONNX's TensorScatter, fails on a past_cache with no elements: give shapes whose "
                "past_cache has a size of at least 1 in each dimension")
    return None


# ---- valid inputs (trt_scatter.inputs): shape relations, capacity, write index generator


def _axis(node, rank):
    """The node's axis in [0, rank-1], or None where it is out of range (the oracle's check names that)."""
    axis = node.attribute("axis", DEFAULT_AXIS)
    return axis % rank if -rank <= axis < rank else None


def input_relations(shapes: Any, node: OpNode) -> None:
    """The update has the cache's dims off the axis and at most its dim on it, less the largest constant write index in
    linear mode (a free cache length written at run-time positions holds two updates, so that the positions vary);
    write_indices has (batch,)."""
    cache, update = shapes.shape(node, "past_cache"), shapes.shape(node, "update")
    if cache is None:
        return
    rules.check_rank_at_least(OP, "past_cache", cache, 2)
    axis = _axis(node, len(cache))
    indices = shapes.shape(node, "write_indices")
    if indices is not None and len(indices) == 1:
        shapes.equal(indices[0], cache[0])
    if update is None or len(update) != len(cache) or axis is None:
        return  # nothing to merge; the oracle's check names a wrong rank or axis
    for dim, (a, b) in enumerate(zip(cache, update)):
        if dim != axis:
            shapes.equal(a, b)
    written, _ = shapes.index_values(node, "write_indices")
    linear = node_attributes(node)[1] == "linear"  # circular wraps: any position fits
    past = int(written.max()) if written is not None and written.size and linear else 0
    if written is None and "write_indices" in node.inputs and linear:  # positions drawn at run time: room to vary
        shapes.leave_room([update[axis]], [cache[axis]])
    shapes.bounds.append(([update[axis]], [cache[axis]], max(past, 0)))  # the last constant position's update fits too


def input_capacity(plan: Any, node: OpNode) -> int | None:
    """How many positions a write index can address: the cache's dimension on the axis."""
    cache = plan.shape(node, "past_cache")
    axis = _axis(node, len(cache)) if cache else None
    return None if axis is None else cache[axis]


def plan_inputs(plan: Any, node: OpNode, rng: np.random.Generator) -> None:
    """Write indices fed by a graph input: per batch row, a position where the update fits (linear), or any
    non-negative one, past the end too (circular: it wraps)."""
    cache, update = plan.shape(node, "past_cache"), plan.shape(node, "update")
    name = plan.fed(node, "write_indices")
    axis, mode = node_attributes(node)
    mode = check_mode(mode)
    if cache is not None and update is not None:
        check_tensor_scatter(cache, update, plan.shape(node, "write_indices"), axis)
    if name is None:
        return
    if cache is None or update is None:
        raise plan.unknown_shape(node, "past_cache" if cache is None else "update")
    axis = check_tensor_scatter(cache, update, None, axis)
    size, count, batch = cache[axis], update[axis], cache[0]

    def generate(rng):
        if mode == "circular":
            return rng.integers(0, 3 * max(size, 1), size=batch)
        return rng.integers(0, size - count + 1, size=batch)

    plan.generators[name] = (node, generate)
