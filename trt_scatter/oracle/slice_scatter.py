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


def slice_shape(data_shape, start, stop, step, axes):
    """The shape ``updates`` must have: ``data_shape`` with each sliced axis (``axes`` in [0, r-1]) cut
    to its slice's length, -1 where data's dimension is not known."""
    shape = list(data_shape)
    for axis, begin, end, stride in zip(axes, start, stop, step):
        dim = data_shape[axis]
        shape[axis] = slice_geometry(begin, end, stride, dim)[1] if rules.is_known(dim) else -1
    return tuple(shape)


def check_slice_scatter(data_shape, updates_shape, start, stop, step, axes=None):
    """Checks a SliceScatter's inputs (start/stop/step/axes as int lists); returns the axes in [0, r-1].

    ``updates_shape`` is checked only where the data dimension of a sliced axis is known.
    """
    rules.check_rank_at_least(OP, "data", data_shape, 1)
    rank = len(data_shape)
    if axes is None:
        axes = list(range(len(start)))
    _check_lengths({"start": len(start), "stop": len(stop), "step": len(step), "axes": len(axes)})
    axes = [rules.normalize_axis(OP, "axes", axis, rank) for axis in axes]
    if len(set(axes)) != len(axes):
        raise rules.ScatterInputError(OP, "axes", "must not repeat an axis", axes)
    _check_step(step)

    expected = slice_shape(data_shape, start, stop, step, axes)
    rules.check_shape(OP, "updates", updates_shape, expected, "data's shape with each sliced axis cut to its slice's length")
    return axes


def _check_lengths(lengths):
    if len(set(lengths.values())) != 1:
        raise rules.ScatterInputError(OP, "start/stop/step/axes", "must have equal lengths", lengths)


def _check_step(step):
    if 0 in step:
        raise rules.ScatterInputError(OP, "step", "must not contain 0", list(step))


def check_slice_scatter_static(data_shape, updates_shape, start, stop, step, axes=None):
    """Checks a SliceScatter on what is known before it runs: in a model, or while TensorRT builds.

    Each of ``start``/``stop``/``step``/``axes`` is a list of ints (its values are known) or an int:
    the length of a 1-D tensor whose values are not known, -1 if not even that is; ``axes=None``
    means the default axes. ``data_shape`` is ``None`` where not even data's rank is known. What is
    not known may take any value, so only what fails for every such value is refused:
    :func:`check_slice_scatter` runs with stand-ins for the unknown values (0 for start, 1 for stop
    and step, axes 0, 1, ...) on a ``data_shape`` whose dimensions they may slice are unknown.
    """
    params = {"start": start, "stop": stop, "step": step} | ({} if axes is None else {"axes": axes})
    lengths = {name: len(v) if isinstance(v, list) else v for name, v in params.items()}
    known = [n for n in lengths.values() if rules.is_known(n)]
    if data_shape is None:  # rank unknown: only the rules that need no shape
        if len(known) == len(lengths):
            _check_lengths(lengths)
        if isinstance(step, list):
            _check_step(step)
        return
    rank = len(data_shape)
    if not known:  # how many axes are sliced is not known: any dimension of updates may differ
        check_slice_scatter((-1,) * rank, updates_shape, [], [], [])
        return
    if axes is not None and not isinstance(axes, list) and lengths["axes"] > rank:
        rule = f"must have at most {rank} entries (distinct axes of 'data')"
        raise rules.ScatterInputError(OP, "axes", rule, lengths["axes"])
    stand_ins = {"start": 0, "stop": 1, "step": 1}
    values = {}
    for name, value in params.items():
        count = lengths[name] if rules.is_known(lengths[name]) else known[0]
        values[name] = value if isinstance(value, list) else list(range(count)) if name == "axes" else [stand_ins[name]] * count
    if all(isinstance(v, list) for v in params.values()):
        check_slice_scatter(data_shape, updates_shape, **values)
        return
    if axes is not None and not isinstance(axes, list):
        cut = range(rank)  # any axis may be sliced
    else:
        cut = [a % rank for a in values.get("axes", range(len(values["start"]))) if -rank <= a < rank]
    data_free = tuple(-1 if axis in cut else dim for axis, dim in enumerate(data_shape))
    check_slice_scatter(data_free, updates_shape, **values)


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
