"""NumPy reference implementations of trt-scatter's ops: the one source of truth for their semantics.

Each function takes NumPy arrays, never mutates them, returns a new array of data's shape and
dtype, and raises :class:`ScatterInputError` (a ``ValueError``) for any input its spec forbids.
The ``check_*`` functions hold each op's rules on shapes and constants, for the network builders.
"""

from trt_scatter.oracle.rules import ScatterInputError
from trt_scatter.oracle.scatter_elements import check_scatter_elements, scatter_elements
from trt_scatter.oracle.scatter_nd import check_scatter_nd, scatter_nd, scatter_nd_update
from trt_scatter.oracle.scatter_update import check_scatter_update, scatter_update
from trt_scatter.oracle.slice_scatter import check_slice_scatter, slice_geometry, slice_scatter, slice_shape

__all__ = [
    "ScatterInputError",
    "check_scatter_elements",
    "check_scatter_nd",
    "check_scatter_update",
    "check_slice_scatter",
    "scatter_elements",
    "scatter_nd",
    "scatter_nd_update",
    "scatter_update",
    "slice_geometry",
    "slice_scatter",
    "slice_shape",
]
