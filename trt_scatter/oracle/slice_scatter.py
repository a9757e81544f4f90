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

import numpy as np

from trt_scatter.oracle import rules

OP = "slice_scatter"


def slice_geometry(start, stop, step, dim):
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


def check_slice_scatter(data_shape, updates_shape, start, stop, step, axes=None):
    """Checks a SliceScatter's inputs (start/stop/step/axes as int lists); returns the axes in [0, r-1].

    ``updates_shape`` is checked only where the data dimension of a sliced axis is known.
    """
    rules.check_rank_at_least(OP, "data", data_shape, 1)
    rank = len(data_shape)
    if axes is None:
        axes = list(range(len(start)))
    lengths = {"start": len(start), "stop": len(stop), "step": len(step), "axes": len(axes)}
    if len(set(lengths.values())) != 1:
        raise rules.ScatterInputError(OP, "start/stop/step/axes", "must have equal lengths", lengths)
    axes = [rules.normalize_axis(OP, "axes", axis, rank) for axis in axes]
    if len(set(axes)) != len(axes):
        raise rules.ScatterInputError(OP, "axes", "must not repeat an axis", axes)
    if 0 in step:
        raise rules.ScatterInputError(OP, "step", "must not contain 0", list(step))

    expected = list(data_shape)
    for axis, begin, end, stride in zip(axes, start, stop, step):
        dim = data_shape[axis]
        expected[axis] = slice_geometry(begin, end, stride, dim)[1] if rules.is_known(dim) else -1
    rules.check_shape(OP, "updates", updates_shape, expected, "data's shape with each sliced axis cut to its slice's length")
    return axes


def slice_scatter(data, updates, start, stop, step, axes=None):
    """Returns a copy of ``data`` with ``updates`` written into the slice ``start:stop:step`` over ``axes``."""
    data, updates = np.asarray(data), np.asarray(updates)
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
