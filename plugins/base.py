"""The TensorRT ``IPluginV3`` plugin of every ``trt_scatter`` op, one class for all of them.

Every op copies ``data`` to the output and writes ``updates`` into part of it, so one class holds
the whole plugin protocol (core, build and runtime capabilities, as NVIDIA's Python plugin
samples do) and :func:`plugin_class` makes each op's plugin from two things: the op's contract
(:class:`trt_scatter.ops.Op`: its name, inputs and types) and its kernel module (``plugins/<key>.py``:
the shape rules it checks at build time, the oracle's, and how it launches its kernel).

Plugin fields (``get_fields_to_serialize``, ``creator.create_plugin``) are the op's ONNX attributes
(:attr:`trt_scatter.ops.Op.attributes`): int attributes as INT32 fields, string ones as CHAR
fields, each checked against the op's contract. Every op has:

- ``inplace`` (int, 0 or 1, default 0). With 1 the plugin asks TensorRT to alias its output
  with ``data`` (``IPluginV3OneBuildV2.get_aliased_input``), so the kernel writes only
  ``updates``; TensorRT then needs the builder flag ``PreviewFeature.ALIASED_PLUGIN_IO_10_03``
  and fails the build with its own error without it. With 0 the kernel first copies ``data``
  to the output on the stream. In-place is opt-in because it needs that preview feature and
  because TensorRT must then treat ``data`` as consumed by the plugin.

Formats: ``data``, ``updates`` and the output share one element type, the one the network
declared for them (any TensorRT type of 1, 2, 4 or 8 bytes where the kernels move bytes; the
types an op's kernel module lists in ``ELEMENT_TYPES`` where it computes, as the reductions do);
index inputs are int32 or int64 as declared; everything LINEAR.

Workspace: the kernels' error counter (4 bytes), and after it, 256-byte aligned, what an op's kernel
module asks for with ``workspace_size`` (the reductions' sort) for the largest shapes of the profile.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import numpy as np

from trt_scatter import dtypes
from trt_scatter.backend import tensorrt
from trt_scatter.log import logger
from trt_scatter.oracle.rules import ScatterInputError
from trt_scatter.plugins.kernels import WORKSPACE_UNSIZED, PluginError, module, report_counted_error, report_refused_shapes

if TYPE_CHECKING:
    from collections.abc import Sequence

    from trt_scatter.ops import Op

trt = tensorrt()

PLUGIN_VERSION = "1"
PLUGIN_NAMESPACE = ""
ERROR_FLAG_BYTES = 4  # the kernels' error counter lives in the workspace
KERNEL_WORKSPACE_OFFSET = 256  # a kernel module's own workspace (workspace_size) follows the counter, aligned

# TensorRT < 10.3 has no IPluginV3OneBuildV2: such plugins cannot alias, so inplace=1 is refused there.
_BUILD_INTERFACE = getattr(trt, "IPluginV3OneBuildV2", trt.IPluginV3OneBuild)
CAN_ALIAS = _BUILD_INTERFACE is not trt.IPluginV3OneBuild

INDEX_DATA_TYPES = tuple(getattr(trt.DataType, name.upper()) for name in dtypes.INDEX_TYPES)  #: dtypes.INDEX_TYPES as TensorRT's


def _sized(dtype):
    try:
        size = dtype.itemsize
    except (TypeError, ValueError):  # bindings that cannot size a type
        return None
    return int(size) if size in (1, 2, 4, 8) else None


# Sized once: ``DataType.itemsize`` is a Python function in some bindings (5 us, on every enqueue).
_ELEMENT_SIZES = {dtype: size for dtype in trt.DataType.__members__.values() if (size := _sized(dtype))}
ELEMENT_TYPES = tuple(_ELEMENT_SIZES)


def element_size(dtype: trt.DataType) -> int | None:
    """Bytes per element of a TensorRT ``DataType``, or ``None`` for types the kernels cannot move (sub-byte, unknown)."""
    return _ELEMENT_SIZES.get(dtype)


def expr_shape(dims_exprs: trt.DimsExprs) -> tuple[int, ...]:
    """A ``DimsExprs`` as a shape tuple, -1 where the dimension is not a build-time constant."""
    return tuple(dim.get_constant_value() if dim.is_constant() else -1 for dim in dims_exprs)


#: The bound TensorRT gives a dimension it cannot bound (INT64_MAX).
UNBOUNDED = 2**63 - 1


def dims_shape(dims: trt.Dims) -> tuple[int, ...]:
    """A ``Dims`` (-1 for dynamic dimensions) as a shape tuple.

    By index: iterating a ``Dims`` costs about 4 us (its iterator ends on an exception), indexing
    about 1 us, and ``enqueue`` reads several on every inference (bench/bench_enqueue_overhead.py).
    """
    return tuple(map(dims.__getitem__, range(len(dims))))


@functools.lru_cache(maxsize=None)
def plugin_class(op: Op) -> type[ScatterPlugin]:
    """The plugin class of ``op`` (a ``trt_scatter`` :class:`~trt_scatter.ops.Op`), made once."""
    return type(f"{op.name}Plugin", (ScatterPlugin,), {"OP": op, "KERNEL": module(op)})


class ScatterPlugin(trt.IPluginV3, trt.IPluginV3OneCore, _BUILD_INTERFACE, trt.IPluginV3OneRuntime):
    """Base of the trt-scatter plugins; :func:`plugin_class` makes one subclass per op.

    ``OP``: the op's :class:`trt_scatter.ops.Op` (its name is the plugin's name, its inputs, which
    are optional, which index inputs share a type). Every input that is not an index input, and the
    output, share ``data``'s type.

    ``KERNEL``: the op's kernel module (``plugins/<key>.py``): ``check_shapes(shapes, **attributes)`` (shapes
    as tuples, -1 = unknown; the op's attributes but inplace) raises the oracle's ``ScatterInputError`` for
    shapes the op forbids; ``launch_args(shapes, itemsizes, types=..., **attributes)`` is what ``launch``
    needs, including ``data_shape`` and ``element_size`` (``types``: the inputs' element types by position,
    NumPy's names); ``launch(args, inputs, output, data, error_flag, stream)`` launches the kernel on the
    device pointers (``data`` is 0 when the output already holds it); ``describe_errors(count, shapes)`` says
    what the kernel counted. Optional: ``ELEMENT_TYPES`` (NumPy's names of the element types its kernel takes;
    default: every type of 1, 2, 4 or 8 bytes, as the kernels that move bytes take) and
    ``workspace_size(shapes, itemsizes, **attributes)`` (bytes of workspace its launches need for the
    largest shapes the profile allows; ``launch`` then gets ``workspace=``, a device address).
    """

    OP = None
    KERNEL = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.NAME, cls.INPUTS = cls.OP.name, cls.OP.inputs
        cls.MIN_INPUTS, cls.INDEX_INPUTS = cls.OP.min_inputs, cls.OP.index_inputs
        cls.WORKSPACE = hasattr(cls.KERNEL, "workspace_size")
        kernel_types = getattr(cls.KERNEL, "ELEMENT_TYPES", None)
        cls.ELEMENT_TYPES = ELEMENT_TYPES if kernel_types is None else tuple(getattr(trt.DataType, dtypes.ELEMENT_TYPES[name]) for name in kernel_types)

    @classmethod
    def check_shapes(cls, shapes: Sequence[Sequence[int]], bound: str = "", node: str = "", **attributes: int | str) -> None:
        """The op's build-time rules on its inputs' shapes (-1 = unknown), for its ``attributes`` (defaults where left out);
        a refusal names the profile's ``bound`` (smallest, largest) and the ``node`` the plugin serves, where known."""
        try:
            cls.KERNEL.check_shapes(shapes, **attributes)
        except ScatterInputError as err:
            plugin = f"{cls.NAME} plugin of node {node!r}" if node else f"{cls.NAME} plugin"
            report_refused_shapes(f"the profile's {bound + ' ' if bound else ''}shapes break a plugin's rule: {plugin}, input shapes "
                                  f"{[tuple(shape) for shape in shapes]}: {err}")
            raise

    def __init__(self, inplace: bool | int = False, phase: Any = None, **attributes: Any) -> None:
        trt.IPluginV3.__init__(self)
        trt.IPluginV3OneCore.__init__(self)
        _BUILD_INTERFACE.__init__(self)
        trt.IPluginV3OneRuntime.__init__(self)
        self.plugin_name = self.NAME
        self.plugin_version = PLUGIN_VERSION
        self.plugin_namespace = PLUGIN_NAMESPACE
        self.num_outputs = 1
        self.inplace = bool(inplace)
        #: the op's other attributes (the kernel module's ``launch_args`` reads them), defaults applied
        self.attributes = {name: attributes.get(name, a.default) for name, a in self.OP.attributes.items() if name != "inplace"}
        self.phase = phase
        self._building = phase == trt.TensorRTPhase.BUILD  # read by every enqueue: comparing the enum costs ~1 us
        self._launch_args = None  # from the last on_shape_change
        self.declared_types = None  # the input types the network declared (get_output_data_types)
        self.node = ""  # the name the creator was given (create_plugin): an ONNX model's node

    # ---- IPluginV3 --------------------------------------------------------------------------

    def get_capability_interface(self, type: trt.PluginCapabilityType) -> trt.IPluginCapability:
        return self

    def clone(self) -> ScatterPlugin:
        copy = type(self)(self.inplace, self.phase, **self.attributes)
        copy.declared_types, copy.node = self.declared_types, self.node
        return copy

    # ---- build -----------------------------------------------------------------------------

    def get_output_data_types(self, input_types: list[trt.DataType]) -> list[trt.DataType]:
        # The first call has the types the network declared (TensorRT asks when the layer is added,
        # as NVIDIA's aliased_io_plugin sample relies on): the only ones supports_format_combination
        # accepts, so that a weakly typed network cannot run this data movement in another type.
        if self.declared_types is None:
            self.declared_types = list(input_types)
        return [input_types[0]]

    def get_output_shapes(self, inputs: list[trt.DimsExprs], shape_inputs: list[trt.DimsExprs], expr_builder: trt.IExprBuilder) -> list[trt.DimsExprs]:
        self._check_input_count(len(inputs))
        self.check_shapes([expr_shape(dims) for dims in inputs], node=self.node, **self.attributes)
        return [trt.DimsExprs(inputs[0])]

    def supports_format_combination(self, pos: int, in_out: list[trt.DynamicPluginTensorDesc], num_inputs: int) -> bool:
        desc = in_out[pos].desc
        if desc.format != trt.TensorFormat.LINEAR:
            return False
        if self.declared_types is not None and desc.type != self.declared_types[pos if pos < num_inputs else 0]:
            return False
        name = self.INPUTS[pos] if pos < num_inputs else "output"
        if name not in self.INDEX_INPUTS:
            return desc.type == in_out[0].desc.type if pos else desc.type in self.ELEMENT_TYPES
        leader = self.INPUTS.index(self.INDEX_INPUTS[name])
        return desc.type == in_out[leader].desc.type if leader != pos else desc.type in INDEX_DATA_TYPES

    def configure_plugin(self, inputs: list[trt.DynamicPluginTensorDesc], outputs: list[trt.DynamicPluginTensorDesc]) -> None:
        self._check_input_count(len(inputs))
        if self.WORKSPACE:  # sized from INT64_MAX, the workspace would be a size TensorRT cannot allocate, or one that wraps
            unbounded = [name for name, desc in zip(self.INPUTS, inputs)
                         if name in self.KERNEL.WORKSPACE_INPUTS and any(dim >= UNBOUNDED for dim in dims_shape(desc.max))]
            if unbounded:  # raised here, it fails the build (TensorRT goes on past an exception in get_workspace_size)
                message = (f"{self.NAME} plugin: TensorRT cannot bound the shape of {' and '.join(repr(n) for n in unbounded)} (computed "
                           f"from values, e.g. by a ScatterElements on a Shape), {WORKSPACE_UNSIZED}: give "
                           f"{'them shapes' if len(unbounded) > 1 else 'it a shape'} TensorRT can bound (a graph input, a Shape, "
                           "a Concat of Shape slices)")
                report_refused_shapes(message)
                raise PluginError(message)
        self.check_shapes([dims_shape(desc.desc.dims) for desc in inputs], node=self.node, **self.attributes)
        for bound in ("min", "max"):  # the profile's bounds, each a set of shapes the engine takes (a 17-token update into 16 slots)
            shapes = [dims_shape(getattr(desc, bound)) for desc in inputs]
            # TensorRT gives them once it knows the profile, and bounds it cannot know (a shape computed by a ScatterElements
            # on a Shape, as PyTorch exports index_fill) as INT64_MIN and INT64_MAX: those are checked at run time only.
            if all(0 <= dim < UNBOUNDED for shape in shapes for dim in shape):
                self.check_shapes(shapes, bound={"min": "smallest", "max": "largest"}[bound], node=self.node, **self.attributes)

    def get_workspace_size(self, inputs: list[trt.DynamicPluginTensorDesc], outputs: list[trt.DynamicPluginTensorDesc]) -> int:
        if not self.WORKSPACE:
            return ERROR_FLAG_BYTES
        shapes = [dims_shape(desc.max) for desc in inputs]  # the largest the profile allows
        itemsizes = [element_size(desc.desc.type) for desc in inputs]
        return KERNEL_WORKSPACE_OFFSET + self.KERNEL.workspace_size(shapes, itemsizes, **self.attributes)

    def get_aliased_input(self, output_index: int) -> int:
        return 0 if self.inplace and output_index == 0 else -1

    def get_valid_tactics(self) -> list[int]:
        return []

    # ---- runtime ---------------------------------------------------------------------------

    def on_shape_change(self, inputs: list[trt.PluginTensorDesc], outputs: list[trt.PluginTensorDesc]) -> None:
        # TensorRT calls this before the first enqueue and whenever input shapes change, so
        # enqueue need not read the descriptors again (about 2 us each, on every inference).
        # Shapes that fail the check leave nothing behind for an enqueue to reuse.
        self._launch_args = None
        self.check_shapes([dims_shape(desc.dims) for desc in inputs], node=self.node, **self.attributes)
        self._launch_args = args = self.launch_args(inputs)
        # Compile and load the kernel here, not in the first enqueue, which a user may capture into a CUDA graph.
        from trt_scatter.plugins import kernels

        kernels.prepare(self.OP.key, args["element_size"], args.get("index_itemsize"))

    def attach_to_context(self, resource_context: trt.IPluginResourceContext) -> ScatterPlugin:
        return self.clone()

    def set_tactic(self, tactic: int) -> None:
        pass

    def get_fields_to_serialize(self) -> trt.PluginFieldCollection:
        # A PluginFieldCollection points into its fields' arrays without owning them, and TensorRT reads
        # it after this returns: keep both alive as long as the plugin.
        fields = fields_to_keep({"inplace": int(self.inplace), **self.attributes})
        self._serialized = (fields, trt.PluginFieldCollection(fields))
        return self._serialized[1]

    def enqueue(self, input_desc: list[trt.PluginTensorDesc], output_desc: list[trt.PluginTensorDesc], inputs: list[int], outputs: list[int], workspace: int, stream: int) -> None:
        # Full TensorRT times enqueue while it builds, on inputs of arbitrary values and possibly for
        # several type combinations after one on_shape_change: then read the descriptors each time
        # (a stale element size would copy the wrong length) and count nothing (no value is wrong).
        args = self._launch_args if self._launch_args is not None and not self._building else self.launch_args(input_desc)
        if 0 in args["data_shape"]:  # the output has no elements
            return
        from trt_scatter.plugins import kernels

        # When TensorRT aliased the output with data (inplace=1) the data is already there.
        data = 0 if inputs[0] == outputs[0] else inputs[0]
        # The kernels count skipped writes only when someone reads the count: in debug mode.
        error_flag = workspace if kernels.debug_enabled() and not self._building else 0
        if self.WORKSPACE:
            self.KERNEL.launch(args, inputs, outputs[0], data, error_flag, stream, workspace=workspace + KERNEL_WORKSPACE_OFFSET)
        else:
            self.KERNEL.launch(args, inputs, outputs[0], data, error_flag, stream)
        if error_flag:
            count = kernels.check_error_flag(error_flag, stream)
            if count:
                shapes = [dims_shape(desc.dims) for desc in input_desc]
                message = f"{self.NAME}: {self.KERNEL.describe_errors(count, shapes)} (TRT_SCATTER_DEBUG=1)"
                report_counted_error(message)  # TensorRT prints the exception, but no caller can catch it
                raise PluginError(message)

    # ---- helpers ---------------------------------------------------------------------------

    def launch_args(self, input_desc: Sequence[trt.PluginTensorDesc]) -> dict[str, Any]:
        """What the kernel module's ``launch`` needs, read from the tensor descriptors."""
        shapes, itemsizes = [dims_shape(desc.dims) for desc in input_desc], [element_size(desc.type) for desc in input_desc]
        types = [dtypes.tensorrt_name(desc.type) for desc in input_desc]
        return self.KERNEL.launch_args(shapes, itemsizes, types=types, **self.attributes)

    def _check_input_count(self, count):
        if not self.MIN_INPUTS <= count <= len(self.INPUTS):
            raise PluginError(f"{self.NAME}: takes inputs {self.OP.usage()[len(self.NAME):]}, got {count}")


class ScatterPluginCreator(trt.IPluginCreatorV3One):
    """Creates one op's plugin (:func:`plugin_class`) from its fields (the op's attributes); registered under the op's name."""

    def __init__(self, op: Op) -> None:
        trt.IPluginCreatorV3One.__init__(self)
        self.plugin_class = plugin_class(op)
        self.fields = dict(op.attributes)  # plugin fields = ONNX node attributes
        self.name = op.name
        self.plugin_version = PLUGIN_VERSION
        self.plugin_namespace = PLUGIN_NAMESPACE
        self._field_names = [trt.PluginField(name, *_empty_field(attribute)) for name, attribute in self.fields.items()]
        self.field_names = trt.PluginFieldCollection(self._field_names)

    def create_plugin(self, name: str, field_collection: trt.PluginFieldCollection, phase: trt.TensorRTPhase) -> ScatterPlugin:
        names = [field.name for field in field_collection]
        twice = sorted({field for field in names if names.count(field) > 1})
        if twice:  # which value would win is not the user's to guess
            raise PluginError(f"{self.name}: plugin field(s) {twice} given more than once")
        unknown = sorted(set(names) - set(self.fields))
        if unknown:
            raise PluginError(f"{self.name}: unknown plugin field(s) {unknown}; known: {list(self.fields)}")
        values = {field.name: _field_value(self.name, field, self.fields[field.name]) for field in field_collection}
        attributes = {field: values.get(field, attribute.default) for field, attribute in self.fields.items()}
        inplace = bool(attributes.pop("inplace"))
        if inplace and not CAN_ALIAS:
            raise PluginError(
                f"{self.name}: inplace=1 needs IPluginV3OneBuildV2 (TensorRT >= 10.3), which "
                f"{trt.__name__} {trt.__version__} lacks; use inplace=0"
            )
        logger.debug("creating %s plugin %r (inplace=%d, %s, phase=%s)", self.name, name, inplace, attributes, phase)
        plugin = self.plugin_class(inplace, phase, **attributes)
        plugin.node = name  # the layer's name, an ONNX model's node name: the plugin's refusals name it
        return plugin


def fields_to_keep(values: dict[str, int | str]) -> list[trt.PluginField]:
    """``PluginField``s for ``{name: int or str}`` (INT32, or CHAR bytes); the caller keeps the list alive as long
    as a collection of them is used. A TypeError names a field of another type."""
    return [trt.PluginField(name, *_field_data(name, value)) for name, value in values.items()]


def _field_data(name, value):
    if isinstance(value, str):
        return np.frombuffer(value.encode(), dtype=np.int8).copy(), trt.PluginFieldType.CHAR
    if not isinstance(value, (int, np.integer)):  # int(0.7) would be a silent 0
        raise TypeError(f"plugin field {name!r} must be an int or a str (got {value!r})")
    limits = np.iinfo(np.int32)  # an INT32 field, as TensorRT's ONNX parser passes ONNX's int attributes
    if not limits.min <= int(value) <= limits.max:
        raise ValueError(f"plugin field {name!r} must fit in int32 (got {int(value)})")
    return np.array([int(value)], dtype=np.int32), trt.PluginFieldType.INT32


def _empty_field(attribute):
    """A field's declaration for ``field_names``: no data, the type of the attribute's default."""
    kind = trt.PluginFieldType.CHAR if isinstance(attribute.default, str) else trt.PluginFieldType.INT32
    return np.array([], dtype=np.int8 if kind == trt.PluginFieldType.CHAR else np.int32), kind


def _field_value(plugin, field, attribute):
    """A plugin field (from TensorRT's parser: an ONNX attribute) as the attribute's value, checked against the op's
    contract (:class:`trt_scatter.ops.Attribute`): an int attribute is one integer of an integer field that fits in
    int32 (so that the plugin can give it back, see :func:`fields_to_keep`), a string one a CHAR field. The field's
    declared type decides, not its bytes: CHAR b"2" is no axis of 50, nor INT32 [109, 97, 120] the string 'max'."""
    choices = " or ".join(map(str, attribute.allowed)) if attribute.allowed else attribute.describe()
    string = isinstance(attribute.default, str)
    if field.type not in ((trt.PluginFieldType.CHAR,) if string else _INTEGER_FIELDS):
        kinds = "a CHAR field" if string else "an INT8, INT16, INT32 or INT64 field"
        raise PluginError(f"{plugin}: plugin field '{field.name}' must be {choices}, in {kinds} (got a field of type {field.type.name})")
    values = np.asarray(field.data).reshape(-1)
    if string:
        value = bytes(values.astype(np.uint8)).decode(errors="replace").rstrip("\0")
    else:
        value = int(values[0]) if values.size == 1 else None
    if value is None or not attribute.admits(value):
        raise PluginError(f"{plugin}: plugin field '{field.name}' must be {choices} (got {value if string else values!r})")
    limits = np.iinfo(np.int32)
    if not string and not limits.min <= value <= limits.max:
        raise PluginError(f"{plugin}: plugin field '{field.name}' must fit in int32, as the plugin gives it back (got {value})")
    return value


_INTEGER_FIELDS = (trt.PluginFieldType.INT8, trt.PluginFieldType.INT16, trt.PluginFieldType.INT32, trt.PluginFieldType.INT64)
