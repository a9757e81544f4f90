"""ScatterUpdate-3 (OpenVINO): write whole slices of ``data`` along one axis.

For ``data`` of shape [d_0, ..., d_n], ``indices`` of any shape I (a 0-D index included) and
``updates`` of shape ``[d_0, ..., d_{axis-1}] + I + [d_{axis+1}, ..., d_n]``::

    out[..., indices[m, ..., p], ...] = updates[..., m, ..., p, ...]   # indices at position axis

Index values must lie in [0, s-1] with s = data.shape[axis]: the spec raises on negative or
too-large values, and so does this oracle. ``axis`` is a scalar or a one-element 1-D tensor in
[-r, r-1]. Duplicate indices are undefined in the spec; this oracle keeps whichever write NumPy
performs last, and no test may rely on it.
"""

import numpy as np

from trt_scatter.oracle import rules

OP = "scatter_update"


def axis_value(axis):
    """``axis`` given as an int, a 0-D array or a one-element 1-D array, as a Python int."""
    array = np.asarray(axis)
    if array.ndim > 1 or array.size != 1:
        raise rules.ScatterInputError(OP, "axis", "must be a scalar or a 1-D tensor with one element", f"shape {array.shape}")
    rules.check_index_type(OP, "axis", array.dtype)
    return int(array.reshape(()))


def check_scatter_update(data_shape, indices_shape, updates_shape, axis):
    """Checks shapes and ``axis``; returns ``axis`` in [0, rank-1]."""
    rules.check_rank_at_least(OP, "data", data_shape, 1)
    axis = rules.normalize_axis(OP, "axis", axis, len(data_shape))
    expected = tuple(data_shape[:axis]) + tuple(indices_shape) + tuple(data_shape[axis + 1 :])
    rules.check_shape(OP, "updates", updates_shape, expected, "data.shape[:axis] + indices.shape + data.shape[axis+1:]")
    rules.check_indices_can_exist(OP, "indices", indices_shape, [(axis, data_shape[axis])])
    return axis


def check_axis_shape(shape):
    """``axis`` of this shape (-1: unknown dimension, which may still be 1) can hold its one value."""
    axis_value(np.broadcast_to(np.int64(0), [dim if rules.is_known(dim) else 1 for dim in shape]))


def check_scatter_update_static(data_shape, indices_shape, updates_shape, axis=None):
    """Checks a ScatterUpdate on what is known before it runs: in a model, or while TensorRT builds.

    ``axis``: its value, or ``None`` when it is not known; then the shapes must fit the spec for at
    least one axis of data. ``data_shape`` is ``None`` where not even data's rank is known (nothing
    to check then). Returns ``axis`` in [0, rank-1], or ``None``.
    """
    if data_shape is None or indices_shape is None or updates_shape is None:
        if data_shape is not None:
            rules.check_rank_at_least(OP, "data", data_shape, 1)
            return None if axis is None else rules.normalize_axis(OP, "axis", axis, len(data_shape))
        return None
    if axis is not None:
        return check_scatter_update(data_shape, indices_shape, updates_shape, axis)
    failures = []
    for candidate in range(max(len(data_shape), 1)):
        try:
            check_scatter_update(data_shape, indices_shape, updates_shape, candidate)
            return None
        except rules.ScatterInputError as err:
            failures.append(err)
    if len(failures) == 1:
        raise failures[0]
    raise rules.ScatterInputError(
        OP,
        "updates",
        "must have shape data.shape[:axis] + indices.shape + data.shape[axis+1:] for some axis of 'data'",
        f"shape {updates_shape} with data {data_shape} and indices {indices_shape}",
    )


def scatter_update(data, indices, updates, axis):
    """Returns a copy of ``data`` with the slices at ``indices`` along ``axis`` replaced by ``updates``."""
    data, indices, updates = np.asarray(data), np.asarray(indices), np.asarray(updates)
    rules.check_data_type(OP, "data", data.dtype)
    rules.check_same_type(OP, "updates", updates.dtype, data.dtype)
    rules.check_index_type(OP, "indices", indices.dtype)
    axis = check_scatter_update(data.shape, indices.shape, updates.shape, axis_value(axis))
    rules.check_indices_in_range(OP, "indices", indices, (data.shape[axis],), allow_negative=False)

    out = data.copy()
    out[(slice(None),) * axis + (indices,)] = updates
    return out
