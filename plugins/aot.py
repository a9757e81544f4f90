"""Ahead-of-time (AOT) plugins: the ``trt_scatter`` ops in engines that run without Python.

The Python plugins (:mod:`trt_scatter.plugins`) run their ``enqueue`` in the Python process that
registered them, so an engine holding them cannot run in trtexec, Triton or any C++ runtime.
TensorRT >= 10.9 lets a Python plugin hand over, at build time, a compiled kernel and how to launch
it; TensorRT embeds both in the engine and launches the kernel itself at run time (NVIDIA/TensorRT
``python/packaging/bindings_wheel/tensorrt/plugin/_lib.py``, ``aot_impl``; CHANGELOG.md 10.9
"Added support for Python AOT plugins"). :func:`register` defines every op that way with the
``tensorrt.plugin`` decorators, as plugins ``trt_scatter::SliceScatter``, ``trt_scatter::ScatterUpdate``,
``trt_scatter::CacheScatter``, ``trt_scatter::ScatterElementsReduce`` and ``trt_scatter::ScatterNDReduce``
(namespace = the ONNX domain; QDPs may not use the empty one):

- ``register``: the output has data's shape and type and is aliased with data
  (:func:`output_desc`), after the Python plugins' build-time shape check (the oracle's rules);
- ``autotune``: every element type of 1, 2, 4 or 8 bytes (of the op's kernel module's
  ``AOT_ELEMENT_TYPES`` where it has one: the reductions take int32 and int64), shared by data,
  updates and the output; int32 or int64 for each group of index inputs; LINEAR (:func:`type_combinations`);
- ``aot_impl``: the kernel's (mangled) name and PTX (:func:`trt_scatter.plugins.cuda.aot_ptx`), and
  its grid and int32 arguments as symbolic expressions of the input shapes (:func:`kernel_launch`,
  built on plain functions of :mod:`trt_scatter.plugins.kernels` that the CPU tests run with ints).

The kernels are the Python plugins' kernels: each .cu file has a second entry point that takes
TensorRT's AOT argument list ("scalar inputs to the kernel, located after the tensor inputs and
before the tensor outputs": ``_lib.py``, ``aot_impl``) around the same body, so every kernel test
(CPU shim, AddressSanitizer, GPU check) runs both.

Why the output is always aliased with data (``TensorDesc.aliased()``), not a fused copy-and-scatter
kernel that reads each output element from data or updates:

1. an AOT plugin gets one kernel launch and nothing else: no ``enqueue`` that could copy data
   first, no workspace, extra arguments only int8/16/32 scalars (``include/impl/
   NvInferPythonPlugin.h``: ``IPluginV3QuickAOTBuild`` has ``getKernel`` and ``getLaunchParams``;
   ``PluginArgDataType``). A fused kernel would have to be a gather, each output element finding
   its source. For ScatterUpdate that means searching ``indices`` for every output row, as there is
   no workspace for an inverse map; and with a body of its own, the tests of the Python plugins'
   kernels would no longer test the AOT ones;
2. aliasing is TensorRT's own answer: ``getAliasedInput`` "Enables read-modify-write behavior in
   plugins. TensorRT may insert copies to facilitate this capability." (``include/NvInferRuntime.h``,
   10.3+). QDPs declare it with ``TensorDesc.aliased()`` (``_tensor.py``), which the AOT plugin class
   honours (``_plugin_class.py``, ``_TemplatePluginBase.get_aliased_input``), and NVIDIA's in-place
   QDP sample builds with ``PreviewFeature.ALIASED_PLUGIN_IO_10_03``
   (``samples/python/quickly_deployable_plugins/qdp_runner.py``);
3. bytes moved: where TensorRT can hand data's buffer over (data used by nothing else, the
   KV-cache pattern these ops serve) the kernel moves 2 x |updates| bytes and nothing more; where
   TensorRT must copy, 2 x |data| + 2 x |updates| against about 2 x |data| for a fused kernel.

So: build with ``PreviewFeature.ALIASED_PLUGIN_IO_10_03`` enabled (``trt-scatter build --aot``
does). The ``inplace`` node attribute means nothing to the AOT form. The AOT kernels count no
errors (no workspace for a counter): slice geometry that does not match updates, or a bad axis,
writes nothing; out-of-range indices are skipped, silently.

Limits of the AOT form, checked at build time in ``aot_impl`` against the largest shape each
input's profile allows: :data:`trt_scatter.plugins.kernels.AOT_LIMITS`. SliceScatter's AOT form
always takes ``axes``: a QDP has a fixed list of inputs (``_validate.py`` refuses default values),
so :mod:`trt_scatter.passes.aot` gives a node without axes the default 0..n-1.

Needs full TensorRT >= 10.9 with its ``tensorrt.plugin`` package (TensorRT-RTX ships it only as
stubs), and NVRTC at build time only; importing this module needs neither: :func:`register` says
what is missing. Written against NVIDIA/TensorRT at release 11.1 (commit a892d222):
``python/packaging/bindings_wheel/tensorrt/plugin/{_lib,_plugin_class,_tensor,_autotune,_validate,
_top_level,_export}.py``, ``include/impl/NvInferPythonPlugin.h``, ``include/NvInferRuntime.h``,
``samples/python/quickly_deployable_plugins/`` and CHANGELOG.md; and Torch-TensorRT's
``examples/dynamo/nvrtc_aot_plugin.py`` (NVRTC PTX in ``aot_impl``).
"""

from __future__ import annotations

import inspect
import itertools
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from trt_scatter import backend, dtypes
from trt_scatter.log import logger
from trt_scatter.ops import DOMAIN, OPS
from trt_scatter.oracle.rules import ScatterInputError
from trt_scatter.plugins import cuda, kernels
from trt_scatter.plugins.kernels import PluginError, module, report_refused_shapes

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType

    import tensorrt as trt
    import tensorrt.plugin as trtp

    from trt_scatter.ops import Op

NAMESPACE = DOMAIN
MIN_TENSORRT = (10, 9)
INDEX_SIZES = {name.upper(): np.dtype(name).itemsize for name in dtypes.INDEX_TYPES}  #: index types by TensorRT's names -> bytes


def plugin_id(op_name: str) -> str:
    """``"trt_scatter::SliceScatter"``: how ``tensorrt.plugin`` names a plugin (namespace::name)."""
    return f"{NAMESPACE}::{op_name}"


# ---------------------------------------------------------------------------------------------
# Plain functions: descriptors in, plain values out (tested on the CPU with stand-in descriptors)


def known_shape(shape_expr: trtp.ShapeExprs) -> tuple[int, ...]:
    """A ``tensorrt.plugin`` ``ShapeExprs`` as a shape tuple, -1 for a dimension that is not a
    build-time constant (or a "fake" one: TensorRT asks for output types before shapes exist)."""
    return tuple(-1 if dim.is_fake or not dim.is_constant else dim.constant_value() for dim in shape_expr)


def output_desc(op: Op, inputs: Sequence[trtp.TensorDesc], attributes: dict[str, int | str] | None = None) -> trtp.TensorDesc:
    """The ``register`` function's body: checks the shapes TensorRT knows (the Python plugins' build-time
    check, the oracle's rules, for the node's ``attributes``), returns data's descriptor aliased with data
    (see the module docstring for why)."""
    shapes = [known_shape(desc.shape_expr) for desc in inputs]
    try:
        module(op).check_shapes(shapes, **(attributes or {}))
    except ScatterInputError as err:
        report_refused_shapes(f"{op.name} AOT plugin, input shapes {shapes}: {err}")
        raise
    return inputs[0].aliased()


def type_combinations(op: Op, element_types: Sequence[str]) -> list[str]:
    """The ``autotune`` type strings (``AutoTuneCombination`` grammar, ``_autotune.py``), one per choice
    of index types: the element inputs and the output share one of ``element_types`` ("A|B|...",
    dependent), each group of index inputs (:attr:`OpSignature.index_inputs`) one of int32/int64."""
    elements = "|".join(element_types)
    leaders = list(dict.fromkeys(op.index_inputs.values()))
    combinations = []
    for choice in itertools.product(INDEX_SIZES, repeat=len(leaders)):
        chosen = dict(zip(leaders, choice))
        types = [chosen[op.index_inputs[name]] if name in op.index_inputs else elements for name in op.inputs]
        combinations.append(", ".join(types + [elements]))
    return combinations


def largest_shape(desc: trtp.TensorDesc) -> tuple[int, ...]:
    """The largest shape an input takes: its build-time shape, or its profile's max where dynamic."""
    dims = tuple(desc.shape)
    return tuple(desc.shape.max) if any(dim < 0 for dim in dims) else dims


def _size(op, name, desc, sizes, what):
    size = sizes.get(desc.dtype.name)
    if size is None:
        raise ScatterInputError(op.name, name, f"must have {what} for the AOT kernels", desc.dtype.name)
    return size


@dataclass(frozen=True)
class KernelLaunch:
    """What ``aot_impl`` tells TensorRT, before compiling: which kernel, its grid, its int32 scalars."""

    kernel: str
    element_size: int
    index_itemsize: typing.Optional[int]
    grid: object  # int or shape expression
    scalars: list  # ints or shape expressions


def kernel_launch(op: Op, inputs: Sequence[trtp.TensorDesc], ops: Any = kernels.IntegerOps, attributes: dict[str, int | str] | None = None) -> KernelLaunch:
    """The launch of ``op``'s AOT kernel for input descriptors (``dtype``, ``shape_expr``, ``shape``):
    checks the AOT limits on each input's largest shape, then derives the scalars (the op's kernel
    module's ``aot_scalars``) and the grid from ``shape_expr`` with ``ops``
    (:class:`~trt_scatter.plugins.kernels.IntegerOps` on ints, :class:`SymbolicOps` on TensorRT's expressions)."""
    kernels.check_aot_limits(op.name, {name: largest_shape(desc) for name, desc in zip(op.inputs, inputs)})
    named = dict(zip(op.inputs, inputs))
    element_size = _size(op, op.data_input, named[op.data_input], dtypes.KERNEL_TYPES, "an element type of 1, 2, 4 or 8 bytes")
    itemsizes = {name: _size(op, name, named[name], INDEX_SIZES, f"type {' or '.join(dtypes.INDEX_TYPES)}") for name in op.inputs if name in op.index_inputs}
    shapes = {name: list(desc.shape_expr) for name, desc in named.items()}
    types = {name: dtypes.tensorrt_name(desc.dtype) for name, desc in named.items()}  # NumPy's names, by input
    values = {name: a.default for name, a in op.attributes.items() if name != "inplace"} | dict(attributes or {})
    scalars = module(op).aot_scalars(shapes, itemsizes, ops, types=types, **values)
    index_itemsize = itemsizes[op.kernel_index] if op.kernel_index else None
    return KernelLaunch(op.key + kernels.AOT_SUFFIX, element_size, index_itemsize, kernels.aot_grid(shapes[op.updates_input], ops), scalars)


class SymbolicOps:
    """:class:`~trt_scatter.plugins.kernels.IntegerOps` on ``tensorrt.plugin`` shape expressions
    (``ShapeExpr`` has ``+ - * // == <``; these use ``+ - * ==``; ``cdiv``, ``min``, ``max`` are functions of
    ``_top_level.py``).
    Ints stay ints where both operands are ints; otherwise they become constant expressions."""

    def __init__(self, trtp: Any) -> None:
        self.trtp = trtp

    def _expr(self, value):
        return self.trtp.ShapeExpr(value) if isinstance(value, int) else value

    def _binary(self, a, b, plain, symbolic):
        if isinstance(a, int) and isinstance(b, int):
            return plain(a, b)
        return symbolic(self._expr(a), b)

    def mul(self, a: int | trtp.ShapeExpr, b: int | trtp.ShapeExpr) -> int | trtp.ShapeExpr:
        return self._binary(a, b, lambda x, y: x * y, lambda x, y: x * y)

    def add(self, a: int | trtp.ShapeExpr, b: int | trtp.ShapeExpr) -> int | trtp.ShapeExpr:
        return self._binary(a, b, lambda x, y: x + y, lambda x, y: x + y)

    def eq(self, a: int | trtp.ShapeExpr, b: int | trtp.ShapeExpr) -> int | trtp.ShapeExpr:
        return self._binary(a, b, lambda x, y: int(x == y), lambda x, y: x == y)  # EQUAL: 1 or 0

    def cdiv(self, a: int | trtp.ShapeExpr, b: int | trtp.ShapeExpr) -> int | trtp.ShapeExpr:
        return self._binary(a, b, lambda x, y: -(-x // y), self.trtp.cdiv)

    def min(self, a: int | trtp.ShapeExpr, b: int | trtp.ShapeExpr) -> int | trtp.ShapeExpr:
        return self._binary(a, b, min, self.trtp.min)

    def max(self, a: int | trtp.ShapeExpr, b: int | trtp.ShapeExpr) -> int | trtp.ShapeExpr:
        return self._binary(a, b, max, self.trtp.max)


# ---------------------------------------------------------------------------------------------
# Registration (full TensorRT >= 10.9)


def tensorrt_plugin() -> tuple[ModuleType, ModuleType]:
    """``(tensorrt, tensorrt.plugin)`` of full TensorRT >= 10.9, or PluginError saying what is missing."""
    trt = backend.tensorrt()
    needed = f"the AOT plugins need full TensorRT >= {'.'.join(map(str, MIN_TENSORRT))} with its tensorrt.plugin package"
    if backend.is_rtx():
        raise PluginError(f"{needed}; TensorRT-RTX ships tensorrt_rtx.plugin only as stubs (found {backend.name()} {trt.__version__})")
    version = tuple(int(part) for part in trt.__version__.split(".")[:2] if part.isdigit())
    if version < MIN_TENSORRT or not hasattr(trt, "QuickPluginCreationRequest"):  # _export.py: IS_AOT_ENABLED
        raise PluginError(f"{needed} (found tensorrt {trt.__version__})")
    try:
        import tensorrt.plugin as trtp
    except ImportError as error:
        raise PluginError(f"{needed}: importing tensorrt.plugin failed ({error})") from error
    return trt, trtp


_registered = {}


def register() -> dict[str, str]:
    """Defines every op's AOT plugin (``trt_scatter::SliceScatter``, ``trt_scatter::ScatterUpdate`` and the others of
    :data:`OPS`) with ``tensorrt.plugin`` (once per process) and so puts their creators in TensorRT's plugin registry, where the ONNX
    parser finds them for nodes with ``plugin_namespace="trt_scatter"`` and ``aot=1``. Returns the
    plugin ids. Independent of :func:`trt_scatter.plugins.register` (the Python plugins, namespace "")."""
    trt, trtp = tensorrt_plugin()
    if not _registered:
        _define(trt, trtp)
        _registered.update({name: plugin_id(name) for name in OPS})
        logger.debug("registered the AOT plugins %s", ", ".join(_registered.values()))
    return dict(_registered)


def compiled_kernel(op: Op, inputs: Sequence[trtp.TensorDesc], trtp: ModuleType, attributes: dict[str, int | str] | None = None) -> tuple[str, str, trtp.KernelLaunchParams, trtp.SymIntExprs]:
    """The ``aot_impl`` result: (kernel name, PTX, KernelLaunchParams, SymIntExprs of int32 scalars)."""
    launch = kernel_launch(op, inputs, SymbolicOps(trtp), attributes)
    name, ptx = cuda.aot_ptx(launch.kernel, launch.element_size, launch.index_itemsize)
    params = trtp.KernelLaunchParams()
    params.grid_x = launch.grid
    params.block_x = kernels.BLOCK
    params.shared_mem = 0
    scalars = trtp.SymIntExprs.from_tuple([trtp.SymInt32(value) for value in launch.scalars])
    logger.info("%s (AOT): %s from PTX ISA %s", op.name, name, cuda.ptx_isa_version(ptx))
    return name, ptx, params, scalars


def combinations(op: Op, trt: ModuleType, trtp: ModuleType) -> list[trtp.AutoTuneCombination]:
    """The ``autotune`` result for this TensorRT's element types (those of the op's kernel module's
    ``AOT_ELEMENT_TYPES``, NumPy's names, where it has one: kernels that compute take fewer)."""
    element_types = [name for name in dtypes.KERNEL_TYPES if hasattr(trt.DataType, name)]
    only = getattr(module(op), "AOT_ELEMENT_TYPES", None)
    if only is not None:
        element_types = [name for name in element_types if name in {dtypes.ELEMENT_TYPES[numpy_name] for numpy_name in only}]
    return [trtp.AutoTuneCombination(types, "LINEAR") for types in type_combinations(op, element_types)]


def _define(trt, trtp):
    """Defines every op's ``register``, ``autotune`` and ``aot_impl`` functions (:func:`_decorated`)."""
    for op in OPS.values():
        _decorated(op, trt, trtp)


def _decorated(op, trt, trtp):
    """``op``'s three decorated functions. ``tensorrt.plugin`` reads their signatures (``_validate.py``,
    through ``inspect.signature``): the op's input names, annotated ``TensorDesc`` for ``register``, then its
    attributes (typed, ``inplace`` aside: the AOT form always aliases), then ``outputs`` (and ``tactic``);
    each gets the signature its op makes (``__signature__``)."""
    TensorDesc = trtp.TensorDesc
    Compiled = typing.Tuple[typing.Union[str, bytes], typing.Union[str, bytes], trtp.KernelLaunchParams, trtp.SymExprs]
    Combinations = typing.List[trtp.AutoTuneCombination]
    plugin = plugin_id(op.name)
    attributes = {name: type(attribute.default) for name, attribute in op.attributes.items() if name != "inplace"}

    def signed(function, names, returns=inspect.Signature.empty, tensors=inspect.Parameter.empty):
        annotations = {**dict.fromkeys(op.inputs, tensors), **attributes}
        parameters = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotations.get(name, inspect.Parameter.empty))
                      for name in names]  # fmt: skip
        function.__signature__ = inspect.Signature(parameters, return_annotation=returns)
        function.__name__ = function.__qualname__ = f"{op.key}_{function.__name__}"
        return function

    def split(args, kwargs, trailing=0):
        """TensorRT's plugin classes pass the input descriptors positionally, the attributes by name (``register``) or
        positionally (``aot_impl``: the values of the node's attributes in order, then ``trailing`` arguments, the
        outputs and the tactic; ``_plugin_class.py``): ``(inputs, attribute values)``. A node that leaves an attribute
        out would shift the values onto the wrong names: :func:`trt_scatter.passes.aot.to_aot` writes them all."""
        inputs, rest = args[: len(op.inputs)], args[len(op.inputs) : len(args) - trailing]
        values = {**dict(zip(attributes, rest)), **{name: kwargs[name] for name in attributes if name in kwargs}}
        if len(rest) + len(kwargs) != len(attributes) and (rest or trailing):
            given = ", ".join(map(repr, rest)) or "none"
            raise PluginError(f"{op.name} (AOT): TensorRT passed the values {given} for the attributes {', '.join(attributes)}: "
                              "the node must give every one, defaults included (trt_scatter.passes.aot.to_aot writes them)")
        return inputs, values

    def register(*args, **kwargs):
        return output_desc(op, *split(args, kwargs))

    def autotune(*args, **kwargs):
        return combinations(op, trt, trtp)

    def aot_impl(*args, **kwargs):
        inputs, values = split(args, kwargs, trailing=2)
        return compiled_kernel(op, inputs, trtp, values)

    names = (*op.inputs, *attributes)
    trtp.register(plugin)(signed(register, names, TensorDesc, tensors=TensorDesc))
    trtp.autotune(plugin)(signed(autotune, (*names, "outputs"), Combinations))
    trtp.aot_impl(plugin)(signed(aot_impl, (*names, "outputs", "tactic"), Compiled))


def add_plugin_layer(network: trt.INetworkDefinition, op_name: str, inputs: Sequence[trt.ITensor], **attributes: int | str) -> trt.ITensor:
    """Adds the AOT form of ``op_name`` to a full-TensorRT ``network``; returns its output tensor.

    ``inputs``: every input of the op in order (SliceScatter's ``axes`` too); ``attributes``: the op's
    attributes (``axis``, ``mode``, ``reduction``, ...), each left out taking its default (``inplace`` means
    nothing here). The builder config must enable ``PreviewFeature.ALIASED_PLUGIN_IO_10_03`` (the output is
    aliased with data).
    """
    op = OPS.get(op_name)
    if op is None:
        raise PluginError(f"add_plugin_layer: unknown plugin {op_name!r}; known: {', '.join(OPS)}")
    if len(inputs) != len(op.inputs):
        raise PluginError(f"{op_name} (AOT) takes all of its inputs ({', '.join(op.inputs)}), got {len(inputs)}"
                          + (f"; give {op.axes_input} 0..n-1 for the default" if op.default_axes_from else ""))
    values = _attribute_values(op, attributes)
    trt, trtp = tensorrt_plugin()
    register()
    plugin = getattr(getattr(trtp.op, NAMESPACE), op_name)
    layer = network.add_plugin(plugin(*inputs, **values), aot=True)  # _lib.py: every attribute, by name, in order
    if layer is None:  # pyGraph.cpp returns addPluginV3's pointer: None where TensorRT refused the layer
        raise PluginError(f"{op_name} (AOT): TensorRT refused the plugin layer (add_plugin returned None; its log says why)")
    return layer.get_output(0)


def _attribute_values(op: Op, given: dict[str, object]) -> dict[str, int | str]:
    """Every attribute of ``op`` but ``inplace``, in its order: the ``given`` value or the default; a PluginError
    naming the first unknown attribute or value an attribute does not admit."""
    for name, value in given.items():
        attribute = op.attributes.get(name)
        if attribute is None:
            raise PluginError(f"{op.name} (AOT): {name!r} is not an attribute of {op.name} (its attributes: {', '.join(op.attributes)})")
        if not attribute.admits(value):
            raise PluginError(f"{op.name} (AOT): attribute {name!r} must be {attribute.describe()} (got {value!r})")
    return {name: given.get(name, attribute.default) for name, attribute in op.attributes.items() if name != "inplace"}

