"""Network builders: functions that add a scatter op to an existing ``INetworkDefinition``.

Each returns the op's output ``ITensor`` and checks, before TensorRT is called, every rule of the
oracle that the shapes and constants known at build time can break (raising
:class:`trt_scatter.ScatterInputError` with the oracle's message).

- :func:`add_scatter_elements`, :func:`add_scatter_nd`: ``IScatterLayer`` (ELEMENT / ND mode).
- :func:`add_slice_scatter`, :func:`add_scatter_update`, :func:`add_tensor_scatter`: ``impl="native"``
  lowers them to stock TensorRT layers (any TensorRT, including TensorRT-RTX); ``impl="plugin"`` adds the plugin.
- :func:`add_scatter_elements_reduce`, :func:`add_scatter_nd_reduce`: the plugin only (no TensorRT layer
  combines repeated targets); their lowerings write standard ONNX with a reduction.

Each op's builder is ``networks/<key>.py`` (:func:`module`, by the op's key in :mod:`trt_scatter.ops`).
Every builder is written once against :mod:`trt_scatter.networks.graph`, whose ONNX backend
lets onnxruntime run the very same construction (the ``lower_*`` functions).
:mod:`trt_scatter.networks.examples` holds one example network per op, from the ``EXAMPLE`` its
module declares (:class:`~trt_scatter.networks.example.Example`).

Element types (TensorRT-RTX 1.7.1.116, built on the CPU): ``IScatterLayer`` builds with data of
float32, float16, bfloat16, int8, int32, int64 and bool, in both modes, with int32 or int64
indices (other integer index types are cast to them). uint8 is refused (TensorRT allows uint8 only at network I/O
and casts, so the builders raise a ``ScatterInputError``, a ``ValueError``, saying to cast around the op) and so is fp8.

Negative indices: TensorRT does not document them for ``IScatterLayer`` and no engine can run
here to find out, so ScatterElements/ScatterND wrap them (``where(i < 0, i + s, i)``) before
the scatter and engines match the ONNX semantics of the oracle. ScatterUpdate forbids them (the
spec), SliceScatter computes its own non-negative row numbers.

Out-of-range index values (which the oracle rejects, but which no layer can reject at run
time): the builders refuse them where a constant layer of the network makes the indices
(``TensorRTGraph.check_fixed_values``, the oracle's ``check_node``), and otherwise the builders
and lowerings clamp user indices into the indexed dimension, so an engine
never writes outside its output; what such an input produces is unspecified. Clamping has no
target in a dimension of size 0: non-empty indices into one are refused at build time where
the size is known (the oracle's shape rule); where it is known only at run time, the TensorRT
network asserts that the indices are then empty (``IAssertionLayer``; the ONNX form cannot).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from trt_scatter.networks.scatter_elements import add_scatter_elements, lower_scatter_elements
from trt_scatter.networks.scatter_elements_reduce import add_scatter_elements_reduce, lower_scatter_elements_reduce
from trt_scatter.networks.scatter_nd import add_scatter_nd, lower_scatter_nd
from trt_scatter.networks.scatter_nd_reduce import add_scatter_nd_reduce, lower_scatter_nd_reduce
from trt_scatter.networks.scatter_update import add_scatter_update, lower_scatter_update
from trt_scatter.networks.slice_scatter import add_slice_scatter, lower_slice_scatter
from trt_scatter.networks.tensor_scatter import add_tensor_scatter, lower_tensor_scatter

if TYPE_CHECKING:
    from types import ModuleType

    from trt_scatter.ops import Op

__all__ = [
    "add_scatter_elements",
    "add_scatter_elements_reduce",
    "add_scatter_nd",
    "add_scatter_nd_reduce",
    "add_scatter_update",
    "add_slice_scatter",
    "add_tensor_scatter",
    "lower_scatter_elements",
    "lower_scatter_elements_reduce",
    "lower_scatter_nd",
    "lower_scatter_nd_reduce",
    "lower_scatter_update",
    "lower_slice_scatter",
    "lower_tensor_scatter",
    "module",
]


def module(op: Op) -> ModuleType:
    """The network module of ``op`` (a :class:`trt_scatter.ops.Op`): ``trt_scatter.networks.<op.key>``.
    A ``trt_scatter`` op's module has ``lower_node(graph, node, tensor)``: its native lowering of a
    model's node, which :mod:`trt_scatter.passes.lower` calls. A module may declare ``EXAMPLE``, the
    op's example network (:mod:`trt_scatter.networks.examples`)."""
    return importlib.import_module(f"{__name__}.{op.key}")
