"""The rules the specs put on inputs, checked in one place.

The oracle calls these on arrays; the network builders call the same functions at build time
on whatever they know (shapes with unknown dimensions, constant start/stop/step/axes), so a bad
input fails with the same message before TensorRT is called. Shape arguments are tuples of
ints in which a negative value or ``None`` means "not known yet": such a dimension satisfies
every rule it takes part in.

Every broken rule raises :class:`ScatterInputError`; its message reads
``"<op>: '<input>' <rule> (got <value>)"``.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import TYPE_CHECKING, Any

import numpy as np

from trt_scatter.dtypes import BFLOAT16

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from numpy.typing import ArrayLike, DTypeLike


class ScatterInputError(ValueError):
    """An input breaks a rule of its op's spec. The message names the op, the input, the rule and the value."""

    def __init__(self, op: str, input_name: str, rule: str, value: Any) -> None:
        self.op, self.input_name, self.rule, self.value = op, input_name, rule, value
        super().__init__(f"{op}: '{input_name}' {rule} (got {value})")

    def __reduce__(self):
        """Pickled as it is (message and fields), not by calling ``__init__`` with the message: ``trt-scatter build``
        builds in a child process, which sends its error back pickled, and so do process pools."""
        return _unpickled, (type(self), self.args, self.__dict__)


def _unpickled(cls, args, fields):
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(fields)
    return error


def is_known(dim: int | None) -> bool:
    return dim is not None and dim >= 0


def dims_match(a: int | None, b: int | None) -> bool:
    """True unless both dimensions are known and differ."""
    return not (is_known(a) and is_known(b)) or a == b


def shapes_match(a: Sequence[int | None], b: Sequence[int | None]) -> bool:
    return len(a) == len(b) and all(dims_match(x, y) for x, y in zip(a, b))


def type_name(dtype: DTypeLike) -> object:
    """How a message names an element type: NumPy's name, text by its Python type (NumPy's ``<U1`` names no type a
    user wrote)."""
    dtype = np.dtype(dtype)
    return {"U": "str", "S": "bytes"}.get(dtype.kind, dtype)


def check_data_type(op: str, name: str, dtype: DTypeLike) -> None:
    """``name`` holds elements: a type the oracle computes with (bool, signed/unsigned ints, floats of 16 to 64 bits,
    bfloat16; not float8 nor the 4-bit types, which NumPy alone lacks)."""
    dtype = np.dtype(dtype)
    if (dtype.kind not in "biuf" or dtype.itemsize > 8) and dtype != BFLOAT16:  # float128 (longdouble) no runtime has
        raise ScatterInputError(op, name, "must have one of the element types bool, int8 to int64, uint8 to uint64, float16, bfloat16, float32 and float64", type_name(dtype))


def check_same_type(op: str, name: str, dtype: DTypeLike, data_dtype: DTypeLike, other: str = "data") -> None:
    """``name`` must have the element type of ``other`` (``data``, or the input whose type an index input shares)."""
    if np.dtype(dtype) != np.dtype(data_dtype):
        raise ScatterInputError(op, name, f"must have the element type of '{other}' ({type_name(data_dtype)})", type_name(dtype))


def check_type_in(op: str, name: str, dtype: DTypeLike, allowed: Sequence[str]) -> None:
    """``name`` must have one of the element types ``allowed`` (names, e.g. ``("int32", "int64")``)."""
    if np.dtype(dtype).name not in allowed:
        raise ScatterInputError(op, name, f"must be {' or '.join(allowed)}", type_name(dtype))


def check_choice(op: str, name: str, value: object, choices: Sequence[str]) -> None:
    """``name`` must be one of ``choices`` (a builder's ``impl``, a mode)."""
    if not isinstance(value, str) or value not in choices:
        raise ScatterInputError(op, name, f"must be one of {', '.join(repr(c) for c in choices)}", repr(value))


def check_index_type(op: str, name: str, dtype: DTypeLike) -> None:
    """Index inputs (indices, start/stop/step/axes, axis) must be integers."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu":
        raise ScatterInputError(op, name, "must have an integer element type", type_name(dtype))


def check_rank_at_least(op: str, name: str, shape: Sequence[int | None], minimum: int) -> None:
    if len(shape) < minimum:
        raise ScatterInputError(op, name, f"must have rank >= {minimum}", f"shape {show_shape(shape)}")


def normalize_axis(op: str, name: str, axis: int | np.integer, rank: int, data: str = "data") -> int:
    """``axis`` in [-rank, rank-1] -> [0, rank-1]; ``data`` names the input whose rank it is."""
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise ScatterInputError(op, name, "must be an integer", repr(axis))
    axis = int(axis)
    if not -rank <= axis < rank:
        raise ScatterInputError(op, name, f"must be in [{-rank}, {rank - 1}] for '{data}' of rank {rank}", axis)
    return axis % rank


def check_shape(op: str, name: str, shape: Sequence[int | None], expected: Sequence[int | None], why: str) -> None:
    if not shapes_match(tuple(shape), tuple(expected)):
        raise ScatterInputError(op, name, f"must have shape {show_shape(expected)} ({why})", f"shape {show_shape(shape)}")


def check_indices_can_exist(op: str, name: str, entries_shape: Sequence[int | None], dims: Sequence[tuple[int, int | None]],
                            shape: Sequence[int | None] | None = None) -> None:
    """No index value lies in [0, s-1] (or [-s, s-1]) when s == 0: then ``name`` (of ``shape``, where it is not
    ``entries_shape``) must have no entries (``entries_shape``: the shape that counts them). A shape rule, so that
    builders refuse at build time what would otherwise be a write into an empty dimension."""
    empty = [axis for axis, dim in dims if dim == 0]
    if empty and all(is_known(d) for d in entries_shape) and all(entries_shape):
        shown = tuple(entries_shape if shape is None else shape)
        raise ScatterInputError(op, name, f"must be empty: data's dimension {empty[0]} has size 0, so no index is in range", f"shape {shown}")


def check_indices_in_range(op: str, name: str, indices: np.ndarray, dims: Sequence[int | None], allow_negative: bool) -> None:
    """Every value along the last axis of ``indices`` (grouped by ``dims``) must index ``dims``.

    ``indices`` has shape (..., len(dims)) with one column per dimension, or any shape when
    ``dims`` has one entry. Allowed values are [0, s-1], or [-s, s-1] with ``allow_negative``.
    """
    if indices.size == 0:
        return
    columns = indices.reshape(-1, len(dims))
    for column, dim in enumerate(dims):
        where = f" in column {column}" if len(dims) > 1 else ""
        if not is_known(dim):
            low = int(columns[:, column].min())
            if low < 0 and not allow_negative:  # out of [0, s-1] whatever the size
                raise ScatterInputError(op, name, f"values{where} must not be negative, as [0, s-1] holds none", low)
            continue
        # One column at a time: NumPy reduces a (n, k) array along axis 0 about 10x slower than
        # its k columns one by one (measured in bench/bench_oracle.py, scatter_nd with k=2).
        values = columns[:, column]
        low, high = int(values.min()), int(values.max())
        lowest = -dim if allow_negative else 0
        if low < lowest or high >= dim:
            bad = low if low < lowest else high
            raise ScatterInputError(
                op, name, f"values{where} must be in [{lowest}, {dim - 1}] for a dimension of size {dim}", bad
            )


@contextlib.contextmanager
def indices_checked_by_numpy(op: str, name: str, indices: np.ndarray, dims: Sequence[int | None]) -> Iterator[None]:
    """Runs a NumPy fancy-index write whose own bounds check enforces the rule [-s, s-1] on ``indices``.

    NumPy accepts exactly [-s, s-1] per indexed dimension and raises ``IndexError`` otherwise,
    so checking first would only add two passes over ``indices`` (1.2-1.5x on large inputs, see
    bench/bench_oracle.py). The explicit check still words the error, and runs first for
    unsigned indices, which NumPy would wrap around to negatives. Write only into a private copy:
    on error the block may have written part of it.
    """
    if indices.dtype.kind != "i":
        check_indices_in_range(op, name, indices, dims, allow_negative=True)
    try:
        yield
    except IndexError:
        check_indices_in_range(op, name, indices, dims, allow_negative=True)
        raise


# ---- the shape rules a standard scatter shares with its reduction op


def check_elements_shapes(op: str, data_shape: Sequence[int | None], indices_shape: Sequence[int | None], updates_shape: Sequence[int | None], axis: int) -> int:
    """ScatterElements' shape and ``axis`` rules, which ScatterElementsReduce shares (``op`` names the op in messages);
    returns ``axis`` in [0, rank-1]."""
    check_rank_at_least(op, "data", data_shape, 1)
    rank = len(data_shape)
    axis = normalize_axis(op, "axis", axis, rank)
    if len(indices_shape) != rank:
        raise ScatterInputError(op, "indices", f"must have the rank of 'data' ({rank})", f"shape {show_shape(indices_shape)}")
    for dim, (index_dim, data_dim) in enumerate(zip(indices_shape, data_shape)):
        if dim != axis and is_known(index_dim) and is_known(data_dim) and index_dim > data_dim:
            raise ScatterInputError(
                op, "indices", f"dimension {dim} must be at most data's ({data_dim}) off the axis", f"shape {show_shape(indices_shape)}"
            )
    check_shape(op, "updates", updates_shape, indices_shape, ELEMENT_UPDATES_SHAPE)
    check_indices_can_exist(op, "indices", indices_shape, [(axis, data_shape[axis])])
    return axis


#: The shape rules of updates, in the words the oracle's messages and the builders' run-time assertions share.
ELEMENT_UPDATES_SHAPE = "the shape of 'indices'"
ND_UPDATES_SHAPE = "indices.shape[:-1] + data.shape[indices.shape[-1]:]"


def check_nd_shapes(op: str, data_shape: Sequence[int | None], indices_shape: Sequence[int | None], updates_shape: Sequence[int | None]) -> None:
    """ScatterND's shape rules, which ScatterNDReduce shares (``op`` names the op in messages)."""
    check_rank_at_least(op, "data", data_shape, 1)
    check_rank_at_least(op, "indices", indices_shape, 1)
    k = indices_shape[-1]
    if is_known(k) and k > len(data_shape):
        raise ScatterInputError(
            op, "indices", f"last dimension must be at most the rank of 'data' ({len(data_shape)})", f"shape {show_shape(indices_shape)}"
        )
    if not is_known(k):
        return
    expected = tuple(indices_shape[:-1]) + tuple(data_shape[k:])
    check_shape(op, "updates", updates_shape, expected, ND_UPDATES_SHAPE)
    check_indices_can_exist(op, "indices", indices_shape[:-1], list(enumerate(data_shape[:k])), indices_shape)


def check_vector(op: str, name: str, shape: Sequence[int | None]) -> None:
    """``name`` (start, stop, step, axes) must be a 1-D tensor; ``shape`` may hold unknown dimensions."""
    if len(shape) != 1:
        raise ScatterInputError(op, name, "must be a 1-D tensor", f"shape {show_shape(shape)}")


def as_array(op: str, name: str, values: ArrayLike, **kwargs: Any) -> np.ndarray:
    """``np.asarray(values, **kwargs)``, but a ragged nested list (rows of different lengths), which NumPy refuses in
    its own words, is the broken rule named."""
    try:
        return np.asarray(values, **kwargs)
    except ValueError as error:
        if "inhomogeneous" not in str(error):
            raise
        raise ScatterInputError(op, name, "must be a rectangular array: its nested lists of one length at each level", "a ragged list") from None


def _as_64_bit(op, name, array):
    """An object array of Python ints as int64 (or uint64, the values of an integer tensor can be), else the error
    naming the value of the largest magnitude."""
    for dtype in (np.int64, np.uint64):
        try:
            return as_array(op, name, array.tolist(), dtype=dtype)
        except OverflowError:
            continue
    raise ScatterInputError(op, name, "values must fit in int64 or uint64 (an integer tensor's)", max(array.ravel(), key=abs))


def _python_ints(values):
    """Whether ``values`` is a Python int or a non-empty (nested) list or tuple of them (bools aside)."""
    if isinstance(values, (list, tuple)):
        return bool(values) and all(_python_ints(value) for value in values)
    return isinstance(values, int) and not isinstance(values, bool)


def as_index_array(op: str, name: str, values: ArrayLike) -> np.ndarray:
    """An integer input as an array: Python ints as int64, or as uint64 where one of them needs it (NumPy would make
    float64 of ``[2**63, 0]`` and an object array of ``2**64``, and the type would be the rule said broken)."""
    if _python_ints(values):
        return _as_64_bit(op, name, as_array(op, name, values, dtype=object))
    array = as_array(op, name, values)
    if array.dtype.kind == "O" and array.size and all(isinstance(v, int) and not isinstance(v, bool) for v in array.ravel()):
        return _as_64_bit(op, name, array)  # Python ints NumPy held as objects: those of no 64-bit type are the broken rule
    return array


def as_int_vector(op: str, name: str, values: ArrayLike) -> list[int]:
    """A 1-D integer input (start, stop, step, axes) as a list of Python ints (exact for any int64)."""
    if values is None:
        raise ScatterInputError(op, name, "must be given (1-D integers)", None)
    array = as_index_array(op, name, values)
    if array.dtype.kind in "OSU":  # a string or an object: its type is the broken rule, not its shape
        check_index_type(op, name, array.dtype)
    if array.ndim == 0 and array.dtype.kind in "iu":
        raise ScatterInputError(op, name, "must be a 1-D tensor", f"a scalar {array.item()}")
    check_vector(op, name, array.shape)
    if array.size:
        check_index_type(op, name, array.dtype)
    return [int(v) for v in array.tolist()]


def known_vector(op: str, name: str, value: ArrayLike | None, shape: Sequence[int | None] | None) -> list[int] | int:
    """A 1-D parameter (start, stop, step, axes) as a model knows it before it runs: its values (a list)
    where ``value`` (an array or None) is constant, else the length of ``shape`` (-1 where not known)."""
    if value is not None:
        return as_int_vector(op, name, value)
    if shape is None:
        return -1
    check_vector(op, name, shape)
    return shape[0]


_NON_NEGATIVE_DRAWS = contextvars.ContextVar("non_negative_draws", default=False)


@contextlib.contextmanager
def non_negative_draws() -> Iterator[None]:
    """For its duration, :func:`some_negative` leaves every index in [0, s-1]: the data loader draws an input that
    several nodes take so, for a node whose rule takes no negative index (ScatterUpdate's, beside a ScatterND's)."""
    token = _NON_NEGATIVE_DRAWS.set(True)
    try:
        yield
    finally:
        _NON_NEGATIVE_DRAWS.reset(token)


def some_negative(rng: np.random.Generator, indices: np.ndarray, sizes: ArrayLike) -> np.ndarray:
    """About half of ``indices`` (in [0, s-1], ``sizes`` s broadcasting) in their negative form i - s, which
    ONNX's ScatterElements/ScatterND allow: the same targets, and engines get checked on both forms (none in
    :func:`non_negative_draws`)."""
    if _NON_NEGATIVE_DRAWS.get():
        return indices
    return np.where(rng.random(indices.shape) < 0.5, indices - sizes, indices)


#: What every spec says of two writes to one element, without a reduction: a warning's reason.
UNDEFINED = "the result is undefined (every spec leaves it so, and TensorRT's may differ from run to run)"


def repeats(targets: np.ndarray) -> np.ndarray:
    """The pairs ``(i, j)`` of positions of the 1-D ``targets`` with one value, ``i < j`` next to each other among that
    value's positions, by ascending value: an array of shape ``(pairs, 2)``."""
    order = np.argsort(targets, kind="stable")
    ordered = targets[order]
    repeated = np.flatnonzero(ordered[1:] == ordered[:-1])
    return np.stack([order[repeated], order[repeated + 1]], axis=1)


def differing(rows: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """For each pair ``(i, j)`` of :func:`repeats`, whether rows ``i`` and ``j`` of ``rows`` (what each position writes,
    one row each) hold other bits: a target written twice with the same bits ends the same in any order (-0.0 is not
    0.0; a NaN is itself)."""
    first, second = (np.ascontiguousarray(rows[pairs[:, side]]).reshape(len(pairs), -1) for side in (0, 1))
    return (first.view(np.uint8).reshape(len(pairs), -1) != second.view(np.uint8).reshape(len(pairs), -1)).any(axis=1)


class Known:
    """Arrays as what a model shows of a node (``constant``, ``shape``, ``attribute``): the per-op checks that
    read a model's node read the values of a run through this."""

    def __init__(self, inputs: dict[str, np.ndarray], attributes: dict[str, Any]) -> None:
        self.inputs, self._attributes = inputs, attributes

    def constant(self, name: str) -> np.ndarray | None:
        return self.inputs.get(name)

    def shape(self, name: str) -> tuple[int, ...] | None:
        return None if name not in self.inputs else tuple(np.shape(self.inputs[name]))

    def attribute(self, name: str, default: Any = None) -> Any:
        value = self._attributes.get(name, default)
        return value.decode() if isinstance(value, bytes) else value


def show_shape(shape: Sequence[int | str | None]) -> str:
    """A shape as a tuple prints it: a dynamic dimension by its name where it has one (a model's ``N``), ``?`` where
    it is not known (None or -1)."""
    return "(" + ", ".join(d if isinstance(d, str) else str(d) if is_known(d) else "?" for d in shape) + ("," if len(shape) == 1 else "") + ")"
