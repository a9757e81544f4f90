"""What SliceScatter and ScatterUpdate share as TensorRT ``IPluginV3`` plugins.

Both ops copy ``data`` to the output and write ``updates`` into part of it, so one class holds
the whole plugin protocol (core, build and runtime capabilities, as NVIDIA's Python plugin
samples do) and each op module only says what differs: its input names and types, the shape
rules it checks at build time (the oracle's ``check_*`` functions, the one source of truth) and
how it calls its kernel.

Plugin fields (``get_fields_to_serialize``, ``creator.create_plugin``, ONNX node attributes):

- ``inplace`` (int, 0 or 1, default 0). With 1 the plugin asks TensorRT to alias its output
  with ``data`` (``IPluginV3OneBuildV2.get_aliased_input``), so the kernel writes only
  ``updates``; TensorRT then needs the builder flag ``PreviewFeature.ALIASED_PLUGIN_IO_10_03``
  and fails the build with its own error without it. With 0 the kernel first copies ``data``
  to the output on the stream. In-place is opt-in because it needs that preview feature and
  because TensorRT must then treat ``data`` as consumed by the plugin.

Formats: ``data``, ``updates`` and the output share one element type, the one the network
declared for them (any TensorRT type of 1, 2, 4 or 8 bytes: the kernels move bytes); index inputs
are int32 or int64 as declared; everything LINEAR.
"""

import numpy as np

from trt_scatter import ops
from trt_scatter.backend import tensorrt
from trt_scatter.log import logger
from trt_scatter.plugins import PluginError, report_counted_error

trt = tensorrt()

PLUGIN_VERSION = "1"
PLUGIN_NAMESPACE = ""
FIELDS = tuple(ops.ATTRIBUTES)  # plugin fields = ONNX node attributes
ERROR_FLAG_BYTES = 4  # the kernels' error counter lives in the workspace

# TensorRT < 10.3 has no IPluginV3OneBuildV2: such plugins cannot alias, so inplace=1 is refused there.
_BUILD_INTERFACE = getattr(trt, "IPluginV3OneBuildV2", trt.IPluginV3OneBuild)
CAN_ALIAS = _BUILD_INTERFACE is not trt.IPluginV3OneBuild

INDEX_TYPES = tuple(getattr(trt.DataType, name.upper()) for name in ops.INDEX_TYPES)


def _sized(dtype):
    try:
        size = dtype.itemsize
    except (TypeError, ValueError):  # bindings that cannot size a type
        return None
    return int(size) if size in (1, 2, 4, 8) else None


# Sized once: ``DataType.itemsize`` is a Python function in some bindings (5 us, on every enqueue).
_ELEMENT_SIZES = {dtype: size for dtype in trt.DataType.__members__.values() if (size := _sized(dtype))}
ELEMENT_TYPES = tuple(_ELEMENT_SIZES)
_INT32 = trt.DataType.INT32


def element_size(dtype):
    """Bytes per element of a TensorRT ``DataType``, or ``None`` for types the kernels cannot move (sub-byte, unknown)."""
    return _ELEMENT_SIZES.get(dtype)


def index_size(dtype):
    return 4 if dtype == _INT32 else 8


def expr_shape(dims_exprs):
    """A ``DimsExprs`` as a shape tuple, -1 where the dimension is not a build-time constant."""
    return tuple(dim.get_constant_value() if dim.is_constant() else -1 for dim in dims_exprs)


def dims_shape(dims):
    """A ``Dims`` (-1 for dynamic dimensions) as a shape tuple.

    By index: iterating a ``Dims`` costs about 4 us (its iterator ends on an exception), indexing
    about 1 us, and ``enqueue`` reads several on every inference (bench/bench_enqueue_overhead.py).
    """
    return tuple(map(dims.__getitem__, range(len(dims))))


class ScatterPlugin(trt.IPluginV3, trt.IPluginV3OneCore, _BUILD_INTERFACE, trt.IPluginV3OneRuntime):
    """Base of the trt-scatter plugins. Subclasses set ``SIGNATURE`` and the op hooks.

    ``SIGNATURE``: the op's :class:`trt_scatter.ops.OpSignature` (its name is the plugin's name,
    its inputs, which are optional, which index inputs share a type). Every input that is not an
    index input, and the output, share ``data``'s type.

    ``KERNEL``: the kernel that ``launch`` runs, loaded ahead in ``on_shape_change``.

    Op hooks: ``check_shapes(shapes)`` (classmethod; shapes as tuples, -1 = unknown) raises the
    oracle's ``ScatterInputError`` for shapes the op forbids; ``launch_args(input_desc)`` reads what
    the op's ``kernels.launch_*`` needs from the tensor descriptors (shapes, element and index
    sizes) as keyword arguments, including ``data_shape``; ``launch(kernels, args, inputs, output,
    data, error_flag, stream)`` calls ``kernels.launch_*`` with them and the device pointers
    (``data`` is 0 when the output already holds it); ``describe_errors(count, input_desc)`` says
    what the kernel counted.
    """

    SIGNATURE = None
    KERNEL = None  # the kernel's name in plugins.kernels ("slice_scatter", "scatter_update")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.NAME, cls.INPUTS = cls.SIGNATURE.name, cls.SIGNATURE.inputs
        cls.MIN_INPUTS, cls.INDEX_INPUTS = cls.SIGNATURE.min_inputs, cls.SIGNATURE.index_inputs

    def __init__(self, inplace=False, phase=None):
        trt.IPluginV3.__init__(self)
        trt.IPluginV3OneCore.__init__(self)
        _BUILD_INTERFACE.__init__(self)
        trt.IPluginV3OneRuntime.__init__(self)
        self.plugin_name = self.NAME
        self.plugin_version = PLUGIN_VERSION
        self.plugin_namespace = PLUGIN_NAMESPACE
        self.num_outputs = 1
        self.inplace = bool(inplace)
        self.phase = phase
        self._building = phase == trt.TensorRTPhase.BUILD  # read by every enqueue: comparing the enum costs ~1 us
        self._launch_args = None  # from the last on_shape_change
        self.declared_types = None  # the input types the network declared (get_output_data_types)

    # ---- IPluginV3 --------------------------------------------------------------------------

    def get_capability_interface(self, type):
        return self

    def clone(self):
        copy = type(self)(self.inplace, self.phase)
        copy.declared_types = self.declared_types
        return copy

    # ---- build -----------------------------------------------------------------------------

    def get_output_data_types(self, input_types):
        # The first call has the types the network declared (TensorRT asks when the layer is added,
        # as NVIDIA's aliased_io_plugin sample relies on): the only ones supports_format_combination
        # accepts, so that a weakly typed network cannot run this data movement in another type.
        if self.declared_types is None:
            self.declared_types = list(input_types)
        return [input_types[0]]

    def get_output_shapes(self, inputs, shape_inputs, expr_builder):
        self._check_input_count(len(inputs))
        self.check_shapes([expr_shape(dims) for dims in inputs])
        return [trt.DimsExprs(inputs[0])]

    def supports_format_combination(self, pos, in_out, num_inputs):
        desc = in_out[pos].desc
        if desc.format != trt.TensorFormat.LINEAR:
            return False
        if self.declared_types is not None and desc.type != self.declared_types[pos if pos < num_inputs else 0]:
            return False
        name = self.INPUTS[pos] if pos < num_inputs else "output"
        if name not in self.INDEX_INPUTS:
            return desc.type == in_out[0].desc.type if pos else desc.type in ELEMENT_TYPES
        leader = self.INPUTS.index(self.INDEX_INPUTS[name])
        return desc.type == in_out[leader].desc.type if leader != pos else desc.type in INDEX_TYPES

    def configure_plugin(self, inputs, outputs):
        self._check_input_count(len(inputs))
        self.check_shapes([dims_shape(desc.desc.dims) for desc in inputs])

    def get_workspace_size(self, inputs, outputs):
        return ERROR_FLAG_BYTES

    def get_aliased_input(self, output_index):
        return 0 if self.inplace and output_index == 0 else -1

    def get_valid_tactics(self):
        return []

    # ---- runtime ---------------------------------------------------------------------------

    def on_shape_change(self, inputs, outputs):
        # TensorRT calls this before the first enqueue and whenever input shapes change, so
        # enqueue need not read the descriptors again (about 2 us each, on every inference).
        # Shapes that fail the check leave nothing behind for an enqueue to reuse.
        self._launch_args = None
        self.check_shapes([dims_shape(desc.dims) for desc in inputs])
        self._launch_args = args = self.launch_args(inputs)
        # Compile and load the kernel here, not in the first enqueue, which a user may capture into a CUDA graph.
        from trt_scatter.plugins import kernels

        kernels.prepare(self.KERNEL, args["element_size"], args.get("index_itemsize"))

    def attach_to_context(self, resource_context):
        return self.clone()

    def set_tactic(self, tactic):
        pass

    def get_fields_to_serialize(self):
        # A PluginFieldCollection points into its fields' arrays without owning them, and TensorRT reads
        # it after this returns: keep both alive as long as the plugin.
        fields = fields_to_keep({"inplace": int(self.inplace)})
        self._serialized = (fields, trt.PluginFieldCollection(fields))
        return self._serialized[1]

    def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
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
        self.launch(kernels, args, inputs, outputs[0], data, error_flag, stream)
        if error_flag:
            count = kernels.check_error_flag(error_flag, stream)
            if count:
                message = f"{self.NAME}: {self.describe_errors(count, input_desc)} (TRT_SCATTER_DEBUG=1)"
                report_counted_error(message)  # TensorRT prints the exception, but no caller can catch it
                raise PluginError(message)

    # ---- helpers ---------------------------------------------------------------------------

    def _check_input_count(self, count):
        if not self.MIN_INPUTS <= count <= len(self.INPUTS):
            raise PluginError(f"{self.NAME}: takes inputs {self.SIGNATURE.usage()[len(self.NAME):]}, got {count}")


class ScatterPluginCreator(trt.IPluginCreatorV3One):
    """Creates one plugin class from its fields (``inplace``); registered under the plugin's name."""

    def __init__(self, plugin_class):
        trt.IPluginCreatorV3One.__init__(self)
        self.plugin_class = plugin_class
        self.name = plugin_class.NAME
        self.plugin_version = PLUGIN_VERSION
        self.plugin_namespace = PLUGIN_NAMESPACE
        self._field_names = [trt.PluginField(name, np.array([], dtype=np.int32), trt.PluginFieldType.INT32) for name in FIELDS]
        self.field_names = trt.PluginFieldCollection(self._field_names)

    def create_plugin(self, name, field_collection, phase):
        fields = {field.name: field.data for field in field_collection}
        unknown = sorted(set(fields) - set(FIELDS))
        if unknown:
            raise PluginError(f"{self.name}: unknown plugin field(s) {unknown}; known: {list(FIELDS)}")
        inplace = _flag(self.name, "inplace", fields.get("inplace", 0))
        if inplace and not CAN_ALIAS:
            raise PluginError(
                f"{self.name}: inplace=1 needs IPluginV3OneBuildV2 (TensorRT >= 10.3), which "
                f"{trt.__name__} {trt.__version__} lacks; use inplace=0"
            )
        logger.debug("creating %s plugin %r (inplace=%d, phase=%s)", self.name, name, inplace, phase)
        return self.plugin_class(inplace, phase)


def fields_to_keep(values):
    """``PluginField``s (int32) for ``{name: int}``; the caller keeps the list alive as long as a collection of them is used."""
    return [
        trt.PluginField(name, np.array([int(value)], dtype=np.int32), trt.PluginFieldType.INT32)
        for name, value in values.items()
    ]


def _flag(plugin, field, value):
    """A plugin field that is a flag (``inplace``): one int among those ``trt_scatter.ops.ATTRIBUTES`` allows."""
    allowed = ops.ATTRIBUTES[field]
    values = np.asarray(value).reshape(-1)
    if values.size != 1 or values.dtype.kind not in "iub" or int(values[0]) not in allowed:
        raise PluginError(f"{plugin}: plugin field '{field}' must be {' or '.join(map(str, allowed))} (got {value!r})")
    return bool(values[0])
