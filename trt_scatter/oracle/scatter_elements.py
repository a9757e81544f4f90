"""ScatterElements (ONNX) = TensorRT ``IScatterLayer`` in ``ScatterMode.ELEMENT``.

For every position ``p`` of ``indices`` (rank r, like ``data``)::

    out[p[0], ..., indices[p], ..., p[r-1]] = updates[p]      # indices[p] replaces p[axis]

``indices`` and ``updates`` have the same shape; off the axis their dimensions are at most
data's. Index values lie in [-s, s-1] with s = data.shape[axis] (negative counts from the end,
as in ONNX). Duplicate targets are undefined in ONNX and TensorRT; this oracle keeps whichever
write NumPy's fancy assignment performs last, and no test may rely on it.
"""

import numpy as np

from trt_scatter.oracle import rules

OP = "scatter_elements"


def check_scatter_elements(data_shape, indices_shape, updates_shape, axis):
    """Checks shapes and ``axis``; returns ``axis`` in [0, rank-1]."""
    rules.check_rank_at_least(OP, "data", data_shape, 1)
    rank = len(data_shape)
    axis = rules.normalize_axis(OP, "axis", axis, rank)
    if len(indices_shape) != rank:
        raise rules.ScatterInputError(OP, "indices", f"must have the rank of 'data' ({rank})", f"shape {tuple(indices_shape)}")
    for dim, (index_dim, data_dim) in enumerate(zip(indices_shape, data_shape)):
        if dim != axis and rules.is_known(index_dim) and rules.is_known(data_dim) and index_dim > data_dim:
            raise rules.ScatterInputError(
                OP, "indices", f"dimension {dim} must be at most data's ({data_dim}) off the axis", f"shape {tuple(indices_shape)}"
            )
    rules.check_shape(OP, "updates", updates_shape, indices_shape, "the shape of 'indices'")
    rules.check_indices_can_exist(OP, "indices", indices_shape, [(axis, data_shape[axis])])
    return axis


def scatter_elements(data, indices, updates, axis=0):
    """Returns a copy of ``data`` with ``updates`` written at ``indices`` along ``axis``."""
    data, indices, updates = np.asarray(data), np.asarray(indices), np.asarray(updates)
    rules.check_data_type(OP, "data", data.dtype)
    rules.check_same_type(OP, "updates", updates.dtype, data.dtype)
    rules.check_index_type(OP, "indices", indices.dtype)
    axis = check_scatter_elements(data.shape, indices.shape, updates.shape, axis)

    out = data.copy()
    # Open grid over indices' own extent (it may be smaller than data's), indices on the axis.
    target = list(np.ogrid[tuple(slice(n) for n in indices.shape)])
    target[axis] = indices
    with rules.indices_checked_by_numpy(OP, "indices", indices, (data.shape[axis],)):
        out[tuple(target)] = updates
    return out
