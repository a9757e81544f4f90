"""The op registry: one entry per op, the contract every part of trt-scatter reads.

An op is an ONNX op type (its inputs, which are optional, which index inputs share a type, its
attributes) and a *key*, the name of its module in each layer, side by side::

    trt_scatter/oracle/<key>.py    semantics (the oracle), the rules on inputs, valid inputs
    networks/<key>.py              network builder, native lowering (TensorRT layers and ONNX), example network
    plugins/<key>.py, <key>.cu     kernel launch, build-time checks and AOT arguments; the kernel
    tests/test_<key>_*.py          its tests

Code outside those modules looks an op up here (:func:`op_of` for a node, :data:`OPS` by name) and
finds its module in a layer by the key (``oracle.module(op)``, ``networks.module(op)``,
``plugins.module(op)``); it never branches on which op it is. Adding an op is its modules plus one
registration line below.

Two kinds of op:

- ``trt_scatter`` ops (``domain == DOMAIN``): a node of one of the op types below in the
  domain ``trt_scatter`` (version 1, imported by the model) becomes the plugin of the same name when
  TensorRT's ONNX parser reads the model after :func:`trt_scatter.plugins.register`; trt-scatter
  checks the node itself (inputs, types, attributes) and lowers it to standard ONNX:

  =========================  ==========================================  =====================================
  op type                    inputs (``[...]`` optional)                  attributes
  =========================  ==========================================  =====================================
  ``SliceScatter``           data, updates, start, stop, step[, axes]     ``inplace`` (int 0 or 1)
  ``ScatterUpdate``          data, indices, updates, axis                 ``inplace``
  ``ScatterElementsReduce``  data, indices, updates                       ``axis`` (int), ``reduction``,
                                                                          ``include_self`` (0/1), ``inplace``
  ``ScatterNDReduce``        data, indices, updates                       ``reduction``, ``include_self``,
                                                                          ``inplace``
  ``CacheScatter``           past_cache, update[, write_indices]          ``axis`` (int, -2), ``mode`` ('linear'
                                                                          or 'circular'), ``inplace``
  =========================  ==========================================  =====================================

  ``reduction`` is one of the strings add, mul, min, max, mean (default add). The two reduction ops
  *serve* ONNX's ScatterElements and ScatterND with a reduction (:attr:`Op.serves`), which TensorRT
  builds wrong or not at all: :mod:`trt_scatter.passes.plugins` hands those nodes to them.

  The element inputs (the first, written into, :attr:`Op.data_input`, and the one written,
  :attr:`Op.updates_input`) and the output share one element type; the index inputs are int32 or
  int64, and those an :attr:`Op.index_inputs` entry ties together share one type (start, stop and
  step do). ``inplace=1`` lets the plugin write into data's buffer (TensorRT's aliased plugin I/O).
  ``CacheScatter`` is ONNX's TensorScatter-24 under a name of its own: TensorRT's ONNX parser
  imports a node of op type ``TensorScatter`` with its own importer whatever its domain (which
  takes 4-D caches written on axis -2 in linear mode only), so a plugin of that name is never used.
  A node with the attributes :data:`AOT_ATTRIBUTES` (``plugin_namespace="trt_scatter"``, ``aot=1``)
  goes to the ahead-of-time plugins of :mod:`trt_scatter.plugins.aot` instead of the Python ones.
- ONNX's own ``ScatterElements`` (and ``Scatter``, its name in opsets 9 and 10), ``ScatterND`` and ``TensorScatter``
  (``domain == ""``): the oracle
  (reductions included), validation of their constant indices, the reference and valid inputs; ONNX's
  checker checks the node. A ``trt_scatter`` op that ``serves`` one of them takes its nodes where
  TensorRT cannot (:mod:`trt_scatter.passes.plugins`): ``CacheScatter`` serves ``TensorScatter``, whose
  module is its own.

The semantics are the oracle's; this module holds no rule about values.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING

from trt_scatter.dtypes import INDEX_TYPES

if TYPE_CHECKING:
    import onnx
    import onnx_graphsurgeon as gs

DOMAIN = "trt_scatter"
VERSION = 1


@dataclasses.dataclass(frozen=True)
class Attribute:
    """An attribute of a ``trt_scatter`` op (= a field of its plugin): an int or a string.

    ``default``: its value where the node leaves it out (its type is the attribute's type);
    ``allowed``: the values it may take, or ``None`` for any value of that type.
    """

    default: int | str
    allowed: tuple | None = None

    def admits(self, value: object) -> bool:
        """Whether ``value`` is a value of this attribute (of its type, and allowed)."""
        if isinstance(value, bool) or type(value) is not type(self.default):
            return False
        return self.allowed is None or value in self.allowed

    def describe(self) -> str:
        """``the int 0 or 1``, ``one of the strings 'add', 'mul'``, ``an int``: what :meth:`admits`."""
        kind = type(self.default).__name__.replace("str", "string")
        if self.allowed is None:
            return f"an {kind}" if kind == "int" else f"a {kind}"
        if kind == "int":
            return f"the int {' or '.join(map(str, self.allowed))}"
        return f"one of the strings {', '.join(repr(v) for v in self.allowed)}"


#: The attribute every trt_scatter op has: ``inplace=1`` writes into data's buffer (TensorRT's aliased plugin I/O).
INPLACE = {"inplace": Attribute(0, (0, 1))}
#: The attributes of the reduction ops: how updates combine (``mean``, ``include_self=0``: PyTorch's ``scatter_reduce``).
REDUCE = {"reduction": Attribute("add", ("add", "mul", "min", "max", "mean")), "include_self": Attribute(1, (0, 1))}
#: Attributes that TensorRT's ONNX parser reads from a plugin node (onnx-tensorrt importerUtils.cpp,
#: ``createPlugin``, 10.9+): the plugin's namespace, and ``aot=1`` for its AOT implementation.
AOT_ATTRIBUTES = {"plugin_namespace": DOMAIN, "aot": 1}
DEFAULT_DOMAINS = ("", "ai.onnx")  #: the two names of ONNX's own domain


@dataclasses.dataclass(frozen=True, eq=False)  # ops compare by identity
class Op:
    """What one op takes, and where its code is.

    ``name``: the ONNX op type. ``key``: its modules' name in every layer (see the module docstring).
    ``inputs``: input names in order; those after the first ``min_inputs`` are optional.
    ``index_inputs``: each index input -> the index input whose type it must share (itself when free).
    ``attributes``: a ``trt_scatter`` op's attributes (= plugin fields) by name (:class:`Attribute`); ONNX's
    own ops: none here, ONNX's checker checks theirs.
    ``serves``: the op type of one of ONNX's own ops whose nodes this plugin can run where TensorRT cannot
    (its oracle module's ``from_standard``, :mod:`trt_scatter.passes.plugins`).
    ``domain``: :data:`DOMAIN`, or ``""`` for ONNX's own ops (no plugin, no lowering).
    ``axes_input``: the input that names the axis or axes written along (a pass that transposes data
    moves it); ``default_axes_from``: where that input is optional, the input whose length ``n`` makes
    its default ``0..n-1``. ``kernel_index``: the input whose index type instantiates the kernel
    (``None``: the kernel reads every index type at run time). ``same_rank``: inputs whose ranks the op
    requires equal (a pass that knows one of them knows them all). ``index_range_from``: the inputs besides data
    whose shapes decide which index values are valid (a longer update leaves fewer places to start a write; a
    slice must have the updates' length).
    """

    name: str
    key: str
    inputs: tuple
    min_inputs: int
    index_inputs: dict
    attributes: dict = dataclasses.field(default_factory=lambda: dict(INPLACE))
    domain: str = DOMAIN
    axes_input: str | None = None
    default_axes_from: str | None = None
    kernel_index: str | None = None
    serves: str | None = None
    same_rank: tuple = ()
    index_range_from: tuple = ()

    @property
    def is_plugin(self) -> bool:
        """Whether this is a ``trt_scatter`` op: a TensorRT plugin, a kernel and a native lowering."""
        return self.domain == DOMAIN

    @property
    def builds_natively(self) -> bool:
        """Whether TensorRT's own layers can compute it (a builder's ``impl="native"``): not an op that reduces, as
        IScatterLayer has no reduction."""
        return "reduction" not in self.attributes

    @property
    def element_inputs(self) -> tuple:
        """The inputs that hold elements (data, updates): they share the output's type."""
        return tuple(name for name in self.inputs if name not in self.index_inputs)

    @property
    def data_input(self) -> str:
        """The input written into (``data``, ``past_cache``): the output has its shape and type."""
        return self.element_inputs[0]

    @property
    def updates_input(self) -> str:
        """The input whose elements are written (``updates``, ``update``)."""
        return self.element_inputs[1]

    def usage(self) -> str:
        """``SliceScatter(data, updates, start, stop, step[, axes])``."""
        optional = "".join(f"[, {name}]" for name in self.inputs[self.min_inputs :])
        return f"{self.name}({', '.join(self.inputs[: self.min_inputs])}{optional})"


OPS = {}  #: the ``trt_scatter`` ops by op type
STANDARD_OPS = {}  #: ONNX's own scatter ops by op type


def register(op: Op) -> Op:
    """Adds ``op`` to the registry (:data:`OPS` or :data:`STANDARD_OPS`, by its domain); returns it."""
    registry = OPS if op.is_plugin else STANDARD_OPS
    if op.name in registry:
        raise ValueError(f"op {op.name!r} is registered already")
    registry[op.name] = op
    return op


def op_of(node: onnx.NodeProto | gs.Node) -> Op | None:
    """The :class:`Op` a node runs (an ``onnx.NodeProto`` or an onnx-graphsurgeon ``Node``), or ``None``.

    A ``trt_scatter`` op's type in ONNX's own domain (where ONNX has no op of that name) is that op too:
    TensorRT's ONNX parser finds plugins by op type, whatever the domain, so such a node builds into the plugin.
    """
    op_type = getattr(node, "op_type", None) or getattr(node, "op", None)
    if node.domain == DOMAIN:
        return OPS.get(op_type)
    if (node.domain or "") not in DEFAULT_DOMAINS:
        return None
    return STANDARD_OPS.get(op_type) or (OPS.get(op_type) if not _onnx_has(op_type) else None)


def is_trt_scatter(node: onnx.NodeProto | gs.Node) -> bool:
    """True for a node of the ``trt_scatter`` domain (an ``onnx.NodeProto`` or an onnx-graphsurgeon ``Node``; an op the
    domain lacks too, which validation names), or of ONNX's own with a ``trt_scatter`` op's type (:func:`op_of`)."""
    if node.domain == DOMAIN:
        return True
    op = op_of(node)
    return op is not None and op.is_plugin


@functools.lru_cache(maxsize=None)
def _onnx_has(op_type):
    import onnx.defs

    return onnx.defs.has(op_type)


# ---- the ops: one registration line each -------------------------------------------------------

SCATTER_ELEMENTS = register(Op("ScatterElements", "scatter_elements", ("data", "indices", "updates"), 3, {"indices": "indices"},
                               attributes={}, domain=""))
SCATTER = register(Op("Scatter", "scatter_elements", ("data", "indices", "updates"), 3, {"indices": "indices"},  # opsets 9-10's
                      attributes={}, domain=""))                                                                   # ScatterElements
SCATTER_ND = register(Op("ScatterND", "scatter_nd", ("data", "indices", "updates"), 3, {"indices": "indices"}, attributes={}, domain=""))
SLICE_SCATTER = register(Op("SliceScatter", "slice_scatter", ("data", "updates", "start", "stop", "step", "axes"), 5,
                            {"start": "start", "stop": "start", "step": "start", "axes": "axes"},
                            axes_input="axes", default_axes_from="start", same_rank=("data", "updates"), index_range_from=("updates",)))
SCATTER_UPDATE = register(Op("ScatterUpdate", "scatter_update", ("data", "indices", "updates", "axis"), 4,
                             {"indices": "indices", "axis": "axis"}, axes_input="axis", kernel_index="indices"))
SCATTER_ELEMENTS_REDUCE = register(Op("ScatterElementsReduce", "scatter_elements_reduce", ("data", "indices", "updates"), 3,
                                      {"indices": "indices"}, attributes={"axis": Attribute(0), **REDUCE, **INPLACE},
                                      kernel_index="indices", serves="ScatterElements", same_rank=("data", "indices", "updates")))
SCATTER_ND_REDUCE = register(Op("ScatterNDReduce", "scatter_nd_reduce", ("data", "indices", "updates"), 3, {"indices": "indices"},
                                attributes={**REDUCE, **INPLACE}, kernel_index="indices", serves="ScatterND"))
TENSOR_SCATTER = register(Op("TensorScatter", "tensor_scatter", ("past_cache", "update", "write_indices"), 2,
                             {"write_indices": "write_indices"}, attributes={}, domain="", index_range_from=("update",)))
CACHE_SCATTER = register(Op("CacheScatter", "tensor_scatter", ("past_cache", "update", "write_indices"), 2, {"write_indices": "write_indices"},
                            attributes={"axis": Attribute(-2), "mode": Attribute("linear", ("linear", "circular")), **INPLACE}, serves="TensorScatter",
                            same_rank=("past_cache", "update"), index_range_from=("update",)))


# ---- ONNX schemas ------------------------------------------------------------------------------


def register_onnx_schemas() -> None:
    """Registers the ``trt_scatter`` ops' ONNX schemas (from :data:`OPS`) with ``onnx.defs``; idempotent.

    Then ``onnx.checker.check_model(model, full_check=True)`` checks ``trt_scatter`` nodes like
    standard ones (input count, types, the ``inplace`` attribute), ONNX shape inference gives
    their output data's type and shape, and onnxscript (``torch.onnx.export(dynamo=True)``)
    can call them (it raises a ``SchemaError`` for a custom op it finds no schema for).
    """
    import onnx.defs

    for op in OPS.values():
        if not onnx.defs.has(op.name, DOMAIN):
            onnx.defs.register_schema(_onnx_schema(op))


def _onnx_schema(op):
    import onnx
    from onnx.defs import OpSchema

    def parameter(name, type_str, optional=False):
        option = OpSchema.FormalParameterOption.Optional if optional else OpSchema.FormalParameterOption.Single
        return OpSchema.FormalParameter(name, type_str, param_option=option)

    # Element types: every tensor type the ONNX in use knows, but strings and complex numbers.
    identity = onnx.defs.get_schema("Identity").type_constraints[0].allowed_type_strs
    elements = [t for t in identity if t.startswith("tensor(") and t not in ("tensor(string)", "tensor(complex64)", "tensor(complex128)")]
    # One type variable per index group (start/stop/step share one), so the checker ties them as the Op says.
    groups = {}
    for group in op.index_inputs.values():
        groups.setdefault(group, f"I{len(groups)}")
    types = {name: groups[group] for name, group in op.index_inputs.items()}
    inputs = [parameter(name, types.get(name, "T"), optional=i >= op.min_inputs) for i, name in enumerate(op.inputs)]
    constraints = [("T", elements, "data, updates and the output")]
    constraints += [(variable, [f"tensor({name})" for name in INDEX_TYPES], f"index inputs {', '.join(n for n, g in types.items() if g == variable)}") for variable in groups.values()]
    attributes = [OpSchema.Attribute(name, onnx.helper.make_attribute(name, attribute.default), attribute.describe())
                  for name, attribute in op.attributes.items()]  # fmt: skip
    # The AOT form's attributes (trt_scatter.passes.aot), optional: the checker must know them too.
    attributes += [OpSchema.Attribute(name, OpSchema.AttrType.STRING if isinstance(value, str) else OpSchema.AttrType.INT,
                                      f"{value!r} for trt-scatter's AOT plugins", required=False) for name, value in AOT_ATTRIBUTES.items()]  # fmt: skip
    schema = OpSchema(
        op.name, DOMAIN, VERSION, f"trt-scatter's {op.usage()}: the oracle's {op.key} (trt_scatter.oracle).",
        inputs=inputs, outputs=[parameter("output", "T")], type_constraints=constraints, attributes=attributes,
    )
    if hasattr(schema, "set_type_and_shape_inference_function"):  # onnx >= 1.16
        schema.set_type_and_shape_inference_function(_output_is_data)
    return schema


def _output_is_data(context):
    """Shape inference: the output has data's type and shape."""
    data = context.get_input_type(0)
    if data is not None and data.HasField("tensor_type"):
        context.set_output_type(0, data)
