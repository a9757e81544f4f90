"""The rules the specs put on inputs, checked in one place.

The oracle calls these on arrays; the network builders call the same functions at build time
on whatever they know (shapes with unknown dimensions, constant start/stop/step/axes), so a bad
input fails with the same message before TensorRT is called. Shape arguments are tuples of
ints in which a negative value or ``None`` means "not known yet": such a dimension satisfies
every rule it takes part in.

Every broken rule raises :class:`ScatterInputError`; its message reads
``"<op>: '<input>' <rule> (got <value>)"``.
"""

import contextlib

import numpy as np


class ScatterInputError(ValueError):
    """An input breaks a rule of its op's spec. The message names the op, the input, the rule and the value."""

    def __init__(self, op, input_name, rule, value):
        self.op, self.input_name, self.rule, self.value = op, input_name, rule, value
        super().__init__(f"{op}: '{input_name}' {rule} (got {value})")


def is_known(dim):
    return dim is not None and dim >= 0


def dims_match(a, b):
    """True unless both dimensions are known and differ."""
    return not (is_known(a) and is_known(b)) or a == b


def shapes_match(a, b):
    return len(a) == len(b) and all(dims_match(x, y) for x, y in zip(a, b))


def _bfloat16():
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


BFLOAT16 = _bfloat16()


def check_data_type(op, name, dtype):
    """``name`` holds elements: any numeric type (bool, signed/unsigned ints, floats, bfloat16)."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "biuf" and dtype != BFLOAT16:
        raise ScatterInputError(op, name, "must have a numeric element type", dtype)


def check_same_type(op, name, dtype, data_dtype, other="data"):
    """``name`` must have the element type of ``other`` (``data``, or the input whose type an index input shares)."""
    if np.dtype(dtype) != np.dtype(data_dtype):
        raise ScatterInputError(op, name, f"must have the element type of '{other}' ({np.dtype(data_dtype)})", np.dtype(dtype))


def check_type_in(op, name, dtype, allowed):
    """``name`` must have one of the element types ``allowed`` (names, e.g. ``("int32", "int64")``)."""
    if np.dtype(dtype).name not in allowed:
        raise ScatterInputError(op, name, f"must be {' or '.join(allowed)}", np.dtype(dtype))


def check_index_type(op, name, dtype):
    """Index inputs (indices, start/stop/step/axes, axis) must be integers."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu":
        raise ScatterInputError(op, name, "must have an integer element type", dtype)


def check_rank_at_least(op, name, shape, minimum):
    if len(shape) < minimum:
        raise ScatterInputError(op, name, f"must have rank >= {minimum}", f"shape {tuple(shape)}")


def normalize_axis(op, name, axis, rank):
    """``axis`` in [-rank, rank-1] -> [0, rank-1]."""
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise ScatterInputError(op, name, "must be an integer", repr(axis))
    axis = int(axis)
    if not -rank <= axis < rank:
        raise ScatterInputError(op, name, f"must be in [{-rank}, {rank - 1}] for 'data' of rank {rank}", axis)
    return axis % rank


def check_shape(op, name, shape, expected, why):
    if not shapes_match(tuple(shape), tuple(expected)):
        raise ScatterInputError(op, name, f"must have shape {_show(expected)} ({why})", f"shape {_show(shape)}")


def check_indices_can_exist(op, name, entries_shape, dims):
    """No index value lies in [0, s-1] (or [-s, s-1]) when s == 0: then ``name`` must have no
    entries (``entries_shape``: the shape that counts them). A shape rule, so that builders
    refuse at build time what would otherwise be a write into an empty dimension."""
    empty = [axis for axis, dim in dims if dim == 0]
    if empty and all(is_known(d) for d in entries_shape) and all(entries_shape):
        raise ScatterInputError(op, name, f"must be empty: data's dimension {empty[0]} has size 0, so no index is in range", f"shape {tuple(entries_shape)}")


def check_indices_in_range(op, name, indices, dims, allow_negative):
    """Every value along the last axis of ``indices`` (grouped by ``dims``) must index ``dims``.

    ``indices`` has shape (..., len(dims)) with one column per dimension, or any shape when
    ``dims`` has one entry. Allowed values are [0, s-1], or [-s, s-1] with ``allow_negative``.
    """
    if indices.size == 0:
        return
    columns = indices.reshape(-1, len(dims))
    for column, dim in enumerate(dims):
        if not is_known(dim):
            continue
        # One column at a time: NumPy reduces a (n, k) array along axis 0 about 10x slower than
        # its k columns one by one (measured in bench/bench_oracle.py, scatter_nd with k=2).
        values = columns[:, column]
        low, high = int(values.min()), int(values.max())
        lowest = -dim if allow_negative else 0
        if low < lowest or high >= dim:
            bad = low if low < lowest else high
            where = f" in column {column}" if len(dims) > 1 else ""
            raise ScatterInputError(
                op, name, f"values{where} must be in [{lowest}, {dim - 1}] for a dimension of size {dim}", bad
            )


@contextlib.contextmanager
def indices_checked_by_numpy(op, name, indices, dims):
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


def check_vector(op, name, shape):
    """``name`` (start, stop, step, axes) must be a 1-D tensor; ``shape`` may hold unknown dimensions."""
    if len(shape) != 1:
        raise ScatterInputError(op, name, "must be a 1-D tensor", f"shape {_show(shape)}")


def as_int_vector(op, name, values):
    """A 1-D integer input (start, stop, step, axes) as a list of Python ints (exact for any int64)."""
    array = np.asarray(values)
    if array.ndim == 0 and array.dtype.kind in "iu":
        raise ScatterInputError(op, name, "must be a 1-D tensor", f"a scalar {array.item()}")
    check_vector(op, name, array.shape)
    if array.size:
        check_index_type(op, name, array.dtype)
    return [int(v) for v in array.tolist()]


def _show(shape):
    return "(" + ", ".join(str(d) if is_known(d) else "?" for d in shape) + ("," if len(shape) == 1 else "") + ")"
