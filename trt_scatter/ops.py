"""The ``trt_scatter`` ONNX ops: the contract between models, TensorRT's ONNX parser and the plugins.

A node ``SliceScatter`` or ``ScatterUpdate`` in the domain ``trt_scatter`` (version 1, imported by
the model) becomes the plugin of the same name when TensorRT's ONNX parser reads the model after
:func:`trt_scatter.plugins.register`; every other part of trt-scatter (model writers, validation,
lowering, rewriting, the exporters, the data loader, the plugins themselves) reads what such a node
takes from here, so the contract is written once:

=================  ==================================================  =========================
op type            inputs (``[...]`` optional)                          attributes
=================  ==================================================  =========================
``SliceScatter``   data, updates, start, stop, step[, axes]             ``inplace`` (int 0 or 1)
``ScatterUpdate``  data, indices, updates, axis                         ``inplace`` (int 0 or 1)
=================  ==================================================  =========================

``data``, ``updates`` and the output share one element type; the index inputs are int32 or int64,
and those an :attr:`OpSignature.index_groups` entry ties together share one type (start, stop and
step do). ``inplace=1`` lets the plugin write into data's buffer (TensorRT's aliased plugin I/O).
A node with the attributes :data:`AOT_ATTRIBUTES` (``plugin_namespace="trt_scatter"``, ``aot=1``)
goes to the ahead-of-time plugins of :mod:`trt_scatter.plugins.aot` instead of the Python ones
(TensorRT >= 10.9; ``trt_scatter.passes.aot`` writes them, and ``axes`` where SliceScatter lacks it).
The semantics are the oracle's (:mod:`trt_scatter.oracle`); this module holds no rule about values.
"""

import dataclasses

DOMAIN = "trt_scatter"
VERSION = 1
ATTRIBUTES = {"inplace": (0, 1)}  #: attribute -> allowed int values; the first is the default
INDEX_TYPES = ("int32", "int64")  #: element types of the index inputs (NumPy names)
#: Attributes that TensorRT's ONNX parser reads from a plugin node (onnx-tensorrt importerUtils.cpp,
#: ``createPlugin``, 10.9+): the plugin's namespace, and ``aot=1`` for its AOT implementation.
AOT_ATTRIBUTES = {"plugin_namespace": DOMAIN, "aot": 1}


@dataclasses.dataclass(frozen=True)
class OpSignature:
    """What one ``trt_scatter`` op takes.

    ``inputs``: input names in order; those after the first ``min_inputs`` are optional.
    ``index_inputs``: each index input -> the index input whose type it must share (itself when free).
    ``oracle``: the name of its function in :mod:`trt_scatter.oracle`.
    """

    name: str
    inputs: tuple
    min_inputs: int
    index_inputs: dict
    oracle: str

    @property
    def element_inputs(self):
        """The inputs that hold elements (data, updates): they share the output's type."""
        return tuple(name for name in self.inputs if name not in self.index_inputs)

    def usage(self):
        """``SliceScatter(data, updates, start, stop, step[, axes])``."""
        optional = "".join(f"[, {name}]" for name in self.inputs[self.min_inputs :])
        return f"{self.name}({', '.join(self.inputs[: self.min_inputs])}{optional})"


SLICE_SCATTER = OpSignature(
    name="SliceScatter",
    inputs=("data", "updates", "start", "stop", "step", "axes"),
    min_inputs=5,
    index_inputs={"start": "start", "stop": "start", "step": "start", "axes": "axes"},
    oracle="slice_scatter",
)
SCATTER_UPDATE = OpSignature(
    name="ScatterUpdate",
    inputs=("data", "indices", "updates", "axis"),
    min_inputs=4,
    index_inputs={"indices": "indices", "axis": "axis"},
    oracle="scatter_update",
)
OPS = {op.name: op for op in (SLICE_SCATTER, SCATTER_UPDATE)}


def is_trt_scatter(node):
    """True for a node of the ``trt_scatter`` domain (an ``onnx.NodeProto`` or an onnx-graphsurgeon ``Node``)."""
    return node.domain == DOMAIN
