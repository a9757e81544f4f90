"""Scatter with a reduction: several updates land on one target and are combined, in a defined order.

The two reduction ops (:mod:`.scatter_elements_reduce`, :mod:`.scatter_nd_reduce`) and ONNX's own
ScatterElements/ScatterND with a ``reduction`` attribute reduce to one computation on *rows*: ``data``
seen as ``T`` target rows of ``C`` elements, ``R`` update rows of ``C`` elements, and each update row's
target row. This module is that computation, once.

The order of combination (the definition; the kernels follow it exactly, floats included):

- the updates into one target combine in ascending update position (C order of ``updates``, which is
  the order of the rows), one at a time, each result rounded to the element type::

      out[t] = data[t]                      (include_self=1)
      for r in rows targeting t, ascending: out[t] = op(out[t], updates[r])

  with ``include_self=0`` the first update is the start instead of ``data[t]``; a target no update
  reaches keeps ``data[t]`` either way (as PyTorch's ``scatter_reduce`` does);
- ``op``: ``add`` (NumPy's ``add`` in the element type: integers wrap), ``mul``, ``min``/``max``
  (PyTorch's ``amin``/``amax``: an update replaces the value there if it is smaller/larger or NaN, so a
  NaN on either side wins and of two equal values, -0.0 and 0.0 included, the one already there stays;
  NumPy's ``minimum``/``maximum`` settle such ties differently per type), ``mean`` (the ``add`` above, then divided by the count of
  values combined, data's own included with ``include_self=1``: floats by true division after the count
  is rounded to the element type, integers by floor division, as PyTorch's ``scatter_reduce`` does).

Why not ``np.add.at``: NumPy documents what ``ufunc.at`` accumulates, not in which order, and
``np.add.reduceat`` sums pairwise. Here the order is guaranteed by construction: the updates are
stably sorted by target, and round ``k`` applies the ``k``-th update of every target at once, so each
round writes distinct targets (plain fancy indexing, exact) and rounds run in ascending position. Its
cost is linear in the updates plus one NumPy call per round (the most updates any one target gets).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from trt_scatter.oracle import rules

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike, DTypeLike

#: The reductions of the trt_scatter ops (``reduction`` attribute), PyTorch's names in comments.
REDUCTIONS = ("add", "mul", "min", "max", "mean")  # sum/index_add, prod, amin, amax, mean
#: The reductions ONNX's ScatterElements/ScatterND have (add, mul: opset 16; min, max: opset 18).
ONNX_REDUCTIONS = {"add": 16, "mul": 16, "min": 18, "max": 18}


def _minimum(there, update):
    return np.where(_isnan(update) | (update < there), update, there)


def _maximum(there, update):
    return np.where(_isnan(update) | (update > there), update, there)


def _isnan(values):
    return np.isnan(values) if values.dtype.kind not in "iu" else np.zeros(values.shape, bool)


_UFUNCS = {"add": np.add, "mul": np.multiply, "min": _minimum, "max": _maximum, "mean": np.add}


def reduction_of(value: str | bytes) -> str:
    """A ``reduction`` attribute as a str (ONNX's evaluator hands strings over as bytes)."""
    return value.decode() if isinstance(value, bytes) else value


def check_reduction(op: str, reduction: str | bytes, allowed: Sequence[str] = REDUCTIONS) -> str:
    reduction = reduction_of(reduction)
    if reduction not in allowed:
        raise rules.ScatterInputError(op, "reduction", f"must be one of {', '.join(repr(r) for r in allowed)}", repr(reduction))
    return reduction


#: Why ONNX's own reduction nodes go to the plugins (:func:`from_standard` of the two reduction ops).
TENSORRT_REDUCTIONS = "TensorRT-RTX's parser refuses a reduction, and full TensorRT adds with float atomics, in no fixed order"


def check_include_self(op: str, include_self: int) -> int:
    """0 or 1, as ONNX's integer attribute, or False or True, as PyTorch's ``scatter_reduce`` argument; returned as an int."""
    if not isinstance(include_self, (int, float, np.integer, np.floating, np.bool_)) or include_self not in (0, 1):  # an array, 0.5...
        raise rules.ScatterInputError(op, "include_self", "must be 0 or 1", repr(include_self))
    return int(include_self)


def check_attributes(op: str, reduction: str | bytes, include_self: int, dtype: DTypeLike) -> tuple[str, int]:
    """What a reduction node states before any value is known: its reduction, include_self, and data's type."""
    reduction, include_self = check_reduction(op, reduction), check_include_self(op, include_self)
    check_element_type(op, "data", dtype)
    return reduction, include_self


def check_onnx_reduction(op: str, reduction: str | bytes, dtype: DTypeLike | None) -> str:
    """ONNX's ScatterElements' and ScatterND's ``reduction`` (none too): one ONNX defines, of numbers (not bool) where
    data's type (``dtype``) is known; returns it."""
    reduction = check_reduction(op, reduction, ("none", *ONNX_REDUCTIONS))
    if reduction != "none" and dtype is not None:
        check_element_type(op, "data", dtype)
    return reduction


def check_element_type(op: str, name: str, dtype: DTypeLike) -> None:
    """``name`` holds values a reduction combines: numbers, not bool (no arithmetic defines add or mean on it)."""
    rules.check_data_type(op, name, dtype)
    if np.dtype(dtype) == np.bool_:
        raise rules.ScatterInputError(op, name, "must be a number type a reduction can combine (not bool)", np.dtype(dtype))


def check_arguments(op: str, data: np.ndarray, indices: np.ndarray, updates: np.ndarray, reduction: str | bytes, include_self: int) -> tuple[str, int]:
    """What both reduction ops check before their shapes: the reduction, include_self, and the three inputs' types;
    returns the reduction as a str and include_self as an int."""
    reduction, include_self = check_attributes(op, reduction, include_self, data.dtype)
    rules.check_same_type(op, "updates", updates.dtype, data.dtype)
    rules.check_index_type(op, "indices", indices.dtype)
    return reduction, include_self


def reduce_rows(data_rows: ArrayLike, targets: ArrayLike, update_rows: np.ndarray, reduction: str, include_self: int) -> np.ndarray:
    """``data_rows`` (T, C) with ``update_rows`` (R, C) combined into rows ``targets`` (R ints in [0, T)) in the
    order the module docstring defines; returns a new (T, C) array of data's dtype."""
    out = np.array(data_rows, copy=True)
    targets = np.asarray(targets, dtype=np.int64).reshape(-1)
    if targets.size == 0:
        return out
    order = np.argsort(targets, kind="stable")  # ascending target, then ascending position
    sorted_targets = targets[order]
    starts = np.flatnonzero(np.r_[True, sorted_targets[1:] != sorted_targets[:-1]])
    lengths = np.diff(np.r_[starts, targets.size])
    rank = np.arange(targets.size) - np.repeat(starts, lengths)  # position among the updates of its target
    by_rank = order[np.argsort(rank, kind="stable")]
    per_round = np.bincount(rank)
    ufunc = _UFUNCS[reduction]
    with np.errstate(all="ignore"):  # overflow to inf and integer wrap-around are the element type's own
        first = 0
        for round_index, count in enumerate(per_round):
            rows = by_rank[first : first + count]
            first += count
            chosen = targets[rows]
            if round_index == 0 and not include_self:
                out[chosen] = update_rows[rows]
            else:
                out[chosen] = ufunc(out[chosen], update_rows[rows])
        if reduction == "mean":
            touched = sorted_targets[starts]
            count = lengths.astype(np.int64) + include_self
            out[touched] = _divided(out[touched], count[:, None])
    return out


def _divided(sums, count):
    """``sums / count`` as PyTorch's mean divides: floats by true division (the count rounded to their type),
    integers by floor division (the sum as the element type holds it, the count exact)."""
    dtype = sums.dtype
    if dtype.kind in "iu":
        wide = np.dtype(np.int64 if dtype.kind == "i" else np.uint64)
        return np.floor_divide(sums.astype(wide), count.astype(wide)).astype(dtype)
    # Through float32 for the narrower floats (as the kernels convert it): exact for any count below 2**24.
    count = count.astype(np.float32).astype(dtype) if dtype.itemsize < 4 else count.astype(dtype)
    return np.divide(sums, count).astype(dtype)
