"""ScatterND (ONNX) = TensorRT ``IScatterLayer`` in ``ScatterMode.ND`` = OpenVINO ScatterNDUpdate-3.

``indices`` has shape (..., k) with k <= rank(data); each row of k numbers addresses one element
(k = r) or one slice (k < r) of ``data``, and ``updates`` has shape
``indices.shape[:-1] + data.shape[k:]``::

    out[indices[i]] = updates[i]      # for every i in indices.shape[:-1]

Index values lie in [-s_j, s_j-1] with s_j = data.shape[j] (negative counts from the end, as
ONNX runtimes accept; OpenVINO-3 asks for [0, s_j-1], a subset). Duplicate rows are undefined in
every spec; this oracle keeps whichever write NumPy performs last, and no test may rely on it.
"""

import math

import numpy as np

from trt_scatter.oracle import rules

OP = "scatter_nd"


def check_scatter_nd(data_shape, indices_shape, updates_shape):
    """Checks the shapes of ScatterND's inputs."""
    rules.check_rank_at_least(OP, "data", data_shape, 1)
    rules.check_rank_at_least(OP, "indices", indices_shape, 1)
    k = indices_shape[-1]
    if rules.is_known(k) and k > len(data_shape):
        raise rules.ScatterInputError(
            OP, "indices", f"last dimension must be at most the rank of 'data' ({len(data_shape)})", f"shape {tuple(indices_shape)}"
        )
    if not rules.is_known(k):
        return
    expected = tuple(indices_shape[:-1]) + tuple(data_shape[k:])
    rules.check_shape(OP, "updates", updates_shape, expected, "indices.shape[:-1] + data.shape[indices.shape[-1]:]")
    rules.check_indices_can_exist(OP, "indices", indices_shape[:-1], list(enumerate(data_shape[:k])))


def scatter_nd(data, indices, updates):
    """Returns a copy of ``data`` with ``updates`` written at the elements or slices that ``indices`` address."""
    data, indices, updates = np.asarray(data), np.asarray(indices), np.asarray(updates)
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
