"""NumPy reference implementations of trt-scatter's ops: the one source of truth for their semantics.

Each function takes NumPy arrays, never mutates them, returns a new array of data's shape and
dtype, and raises :class:`ScatterInputError` (a ``ValueError``) for any input its spec forbids.
The ``check_*`` functions hold each op's rules on shapes and constants, for the network builders.

Each op's module (:func:`module`, by the op's key in :mod:`trt_scatter.ops`) has, beside its
function and its ``check_*`` rules, what the rest of trt-scatter asks of an op without knowing
which one it is:

- ``evaluate(inputs, attributes)``: a node's output from its inputs by name and its attributes;
- ``check_node(node)``: the rules on what a model shows before it runs (a
  :class:`trt_scatter.model.node.OpNode`: constants, static shapes, types, attributes);
- ``repeated_target(node)``: where two updates write one element (or slice) that the spec leaves
  undefined, or None (validation and the reference warn);
- ``input_relations``, ``input_capacity``, ``plan_inputs``: valid inputs (:mod:`trt_scatter.inputs`); for an op whose
  indices may repeat, ``distinct_targets(node)`` (False) and ``index_bound(plan, node)`` (what every index may hold,
  [0, b); default ``input_capacity``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from trt_scatter.oracle.rules import ScatterInputError
from trt_scatter.oracle.scatter_elements import check_scatter_elements, scatter_elements
from trt_scatter.oracle.scatter_elements_reduce import check_scatter_elements_reduce, scatter_elements_reduce
from trt_scatter.oracle.scatter_nd import check_scatter_nd, scatter_nd, scatter_nd_update
from trt_scatter.oracle.scatter_nd_reduce import check_scatter_nd_reduce, scatter_nd_reduce
from trt_scatter.oracle.scatter_update import check_scatter_update, scatter_update
from trt_scatter.oracle.slice_scatter import check_slice_scatter, slice_geometry, slice_scatter, slice_shape
from trt_scatter.oracle.tensor_scatter import check_tensor_scatter, tensor_scatter

if TYPE_CHECKING:
    from types import ModuleType

    from trt_scatter.ops import Op

__all__ = [
    "ScatterInputError",
    "check_scatter_elements",
    "check_scatter_elements_reduce",
    "check_scatter_nd",
    "check_scatter_nd_reduce",
    "check_scatter_update",
    "check_slice_scatter",
    "check_tensor_scatter",
    "module",
    "scatter_elements",
    "scatter_elements_reduce",
    "scatter_nd",
    "scatter_nd_reduce",
    "scatter_nd_update",
    "scatter_update",
    "slice_geometry",
    "slice_scatter",
    "slice_shape",
    "tensor_scatter",
]


def module(op: Op) -> ModuleType:
    """The oracle module of ``op`` (a :class:`trt_scatter.ops.Op`): ``trt_scatter.oracle.<op.key>``."""
    return importlib.import_module(f"{__name__}.{op.key}")
