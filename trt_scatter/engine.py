"""Builds TensorRT engines from trt-scatter's example networks or from ONNX files.

Thin compositions of polygraphy's loaders (``CreateNetwork``, ``NetworkFromOnnxPath``,
``CreateConfig``, ``EngineBytesFromNetwork``), so an engine built here is built exactly as
``polygraphy convert`` would build it. The TensorRT backend is resolved first
(:func:`trt_scatter.backend.tensorrt`) so that polygraphy uses the same one.
"""

import dataclasses
import time

import numpy as np

from trt_scatter import backend
from trt_scatter.backend import tensorrt
from trt_scatter.log import logger


@dataclasses.dataclass
class TensorInfo:
    name: str
    dtype: str
    shape: tuple


@dataclasses.dataclass
class BuildSummary:
    """What a build produced: the network's I/O and size, the build time, the engine size."""

    name: str
    inputs: list
    outputs: list
    num_layers: int
    build_seconds: float
    engine_bytes: int

    def lines(self):
        yield f"network  {self.name}: {self.num_layers} layers"
        for kind, tensors in (("input ", self.inputs), ("output", self.outputs)):
            for t in tensors:
                yield f"{kind}   {t.name}: {t.dtype} {_shape(t.shape)}"
        yield f"engine   {self.engine_bytes / 1024:.1f} KiB, built in {self.build_seconds:.2f} s"


def _shape(shape):
    return "[" + ", ".join("?" if d < 0 else str(d) for d in shape) + "]"


def network_from_example(name, profile_shapes, strongly_typed=True, **params):
    """A loader ``() -> (builder, network)`` of an example network.

    Loading adds the example's optimization-profile shapes to ``profile_shapes`` for inputs it
    has none for (so shapes the caller put there win). ``params`` go to the example
    (``dtype``, ``index_dtype``, ``dynamic``, op parameters). ``strongly_typed=False`` (full
    TensorRT 10.x only, for ``fp16``/``bf16`` builds) lets TensorRT choose layer precisions.
    """
    tensorrt()
    from polygraphy.backend.trt import CreateNetwork

    from trt_scatter.networks.examples import EXAMPLES

    if name not in EXAMPLES:
        raise ValueError(f"unknown example network {name!r}; known: {', '.join(sorted(EXAMPLES))}")

    def load():
        builder, network = CreateNetwork(strongly_typed=strongly_typed)()
        for input_name, shapes in EXAMPLES[name](network, **params).items():
            profile_shapes.setdefault(input_name, shapes)
        return builder, network

    return load


def network_from_onnx(path, plugins=False, strongly_typed=True, aot=False):
    """A loader ``() -> (builder, network, parser)`` of an ONNX file; ``plugins`` registers trt-scatter's plugins first.

    Validate the model first (:func:`trt_scatter.passes.validate.validate`): TensorRT shows the
    plugins no constant, so a mistake in one would build into an engine that silently skips writes.
    ``strongly_typed``: as for :func:`network_from_example`.
    ``aot``: the ``trt_scatter`` nodes go to the AOT plugins instead (:mod:`trt_scatter.plugins.aot`,
    full TensorRT >= 10.9): registered first, the nodes' attributes written by :mod:`trt_scatter.passes.aot`
    (the model then reaches the parser as bytes). The engine then runs without Python.
    """
    tensorrt()
    from polygraphy.backend.trt import NetworkFromOnnxPath

    if aot:
        from polygraphy.backend.onnx import BytesFromOnnx
        from polygraphy.backend.trt import NetworkFromOnnxBytes

        from trt_scatter.passes.aot import ToAotPlugins
        from trt_scatter.plugins import aot as aot_plugins

        aot_plugins.register()
        return NetworkFromOnnxBytes(BytesFromOnnx(ToAotPlugins(str(path))), strongly_typed=strongly_typed)
    from trt_scatter.passes.validate import node_label, read_model

    model = read_model(path)  # its nodes only: no tensor data is read
    node = aot_node(model)
    if node is not None:
        raise ValueError(f"{path}: {node_label(node)} names trt-scatter's AOT plugins "
                         "(plugin_namespace='trt_scatter', aot=1): build it with --aot (full TensorRT >= 10.9), or export it "
                         "without aot=True for the Python plugins")
    if plugins:
        from trt_scatter.plugins import register

        register()
    else:
        from trt_scatter.ops import trt_scatter_ops

        plugin_ops = trt_scatter_ops(model)
        if plugin_ops:
            raise ValueError(f"{path} has trt-scatter plugin nodes ({', '.join(plugin_ops)}): register the plugins (--plugins)")
    return NetworkFromOnnxPath(str(path), strongly_typed=strongly_typed)


def aot_node(model):
    """The first ``trt_scatter`` node of ``model`` (an ``onnx.ModelProto``) that names the AOT plugins (namespace
    ``trt_scatter``, as :mod:`trt_scatter.passes.aot` writes it): only those serve it. None if there is none."""
    from onnx import helper

    from trt_scatter.ops import AOT_ATTRIBUTES, is_trt_scatter
    from trt_scatter.passes.validate import all_nodes

    for node in all_nodes(model.graph):  # If/Loop bodies included
        namespace = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "plugin_namespace"), b"")
        namespace = namespace.decode(errors="replace") if isinstance(namespace, bytes) else namespace
        if is_trt_scatter(node) and namespace == AOT_ATTRIBUTES["plugin_namespace"]:
            return node
    return None


def needs_aliased_plugin_io(model):
    """True if a ``trt_scatter`` node of ``model`` (an ``onnx.ModelProto``) has ``inplace=1``: its plugin
    then aliases its output with data, which the builder allows only with ``PreviewFeature.ALIASED_PLUGIN_IO_10_03``."""
    from trt_scatter.ops import is_trt_scatter
    from trt_scatter.passes.validate import all_nodes

    return any(
        attribute.name == "inplace" and attribute.i == 1
        for node in all_nodes(model.graph)  # If/Loop bodies included
        if is_trt_scatter(node)
        for attribute in node.attribute
    )


def build_engine(load_network, profile_shapes=None, *, fp16=False, bf16=False, timing_cache=None, progress=False, name="network", aliased_plugin_io=False, feeds=None):
    """Builds a serialized engine; returns ``(engine_bytes, BuildSummary)``.

    ``feeds`` (a list of ``{input name: array}``, e.g. ``trt-scatter check``'s inputs): where
    ``profile_shapes`` says nothing, a dynamic input gets a profile of its fed shapes and an input
    whose values set shapes (a shape tensor, e.g. a KV cache's position) one of its fed values, so
    the engine takes exactly those feeds.

    ``aliased_plugin_io`` enables the preview feature that plugins with ``inplace=1``
    (:func:`needs_aliased_plugin_io`), and the AOT plugins, need. ``fp16``/``bf16`` need a weakly
    typed network (full TensorRT 10.x, ``strongly_typed=False`` in the loader): TensorRT 11.x and
    TensorRT-RTX have no such builder flags.
    ``profile_shapes`` maps input names to ``(min, opt, max)`` and is read after the network
    loads; dynamic inputs not in it fail with a message naming them, before TensorRT is asked.
    """
    trt = tensorrt()
    from polygraphy.backend.trt import CreateConfig, EngineBytesFromNetwork, Profile

    for flag, wanted in (("FP16", fp16), ("BF16", bf16)):
        if wanted and not hasattr(trt.BuilderFlag, flag):
            raise ValueError(
                f"{backend.name()} {trt.__version__} has no BuilderFlag.{flag}: its networks are strongly typed, "
                f"so give the inputs that type instead (e.g. --dtype {'float16' if flag == 'FP16' else 'bfloat16'})"
            )

    loaded = load_network()  # (builder, network) or, from ONNX, (builder, network, parser): kept whole, the parser owns weights
    network = loaded[1]
    inputs = [_info(network.get_input(i)) for i in range(network.num_inputs)]
    outputs = [_info(network.get_output(i)) for i in range(network.num_outputs)]
    profile_shapes = dict(profile_shapes or {})
    unknown = sorted(set(profile_shapes) - {t.name for t in inputs})
    if unknown:
        raise ValueError(f"shape profile names no input of the network: {', '.join(unknown)}")
    shape_inputs = [network.get_input(i).name for i in range(network.num_inputs) if network.get_input(i).is_shape_tensor]
    for tensor in inputs if feeds else ():
        fed = [np.asarray(feed[tensor.name]) for feed in feeds if tensor.name in feed]
        if tensor.name not in profile_shapes and fed and (tensor.name in shape_inputs or any(d < 0 for d in tensor.shape)):
            seen = np.array([array.reshape(-1) if tensor.name in shape_inputs else array.shape for array in fed])
            low, high = tuple(int(v) for v in seen.min(axis=0)), tuple(int(v) for v in seen.max(axis=0))
            profile_shapes[tensor.name] = (low, high, high)
    for tensor in inputs:  # what TensorRT would refuse only after the parse, as a failure of its own
        if tensor.name in profile_shapes and tensor.name not in shape_inputs:
            _check_profile_fits(tensor, profile_shapes[tensor.name])
    missing = [t.name for t in inputs if any(d < 0 for d in t.shape) and t.name not in profile_shapes]
    if missing:
        raise ValueError(f"dynamic input(s) {', '.join(missing)} need --min/--opt/--max shapes")
    # An input whose values set shapes (a KV cache's position, when PyTorch broadcasts the new tokens to
    # the slice it writes) needs the range of its values, or polygraphy would pin it to 1 in the engine.
    unranged = [name for name in shape_inputs if name not in profile_shapes]
    if unranged:
        raise ValueError(f"input(s) {', '.join(unranged)} set shapes in the network: give the range of their values "
                         f"with --min/--opt/--max NAME:[V,...] (e.g. --min {unranged[0]}:[0] --opt {unranged[0]}:[1] --max {unranged[0]}:[64])")
    profiles = None
    if profile_shapes:
        profile = Profile()
        for input_name, (low, opt, high) in profile_shapes.items():
            profile.add(input_name, min=low, opt=opt, max=high)
        profiles = [profile]
    config = CreateConfig(
        fp16=fp16,
        bf16=bf16,
        profiles=profiles,
        load_timing_cache=timing_cache,
        progress_monitor=_progress_monitor(trt) if progress else None,
    )
    if aliased_plugin_io:
        config = with_aliased_plugin_io(config)
    start = time.perf_counter()
    engine = bytes(EngineBytesFromNetwork(loaded, config=config, save_timing_cache=timing_cache)())  # raises if TensorRT fails
    seconds = time.perf_counter() - start
    summary = BuildSummary(name, inputs, outputs, network.num_layers, seconds, len(engine))
    logger.info("built %s in %.2f s (%d bytes)", name, seconds, len(engine))
    return engine, summary


def _check_profile_fits(tensor, shapes):
    """The profile's (min, opt, max) shapes of an input have its rank and its static dimensions."""
    given = ", ".join(f"{which} {list(shape)}" for which, shape in zip(("min", "opt", "max"), shapes))
    if any(len(shape) != len(tensor.shape) for shape in shapes):
        raise ValueError(f"input '{tensor.name}': rank {len(tensor.shape)} in the model, the profile's shapes have rank "
                         f"{', '.join(sorted({str(len(shape)) for shape in shapes if len(shape) != len(tensor.shape)}))}")
    for axis, dim in enumerate(tensor.shape):
        for which, shape in zip(("min", "opt", "max"), shapes):
            if dim >= 0 and shape[axis] != dim:
                raise ValueError(f"input '{tensor.name}': dimension {axis} is {dim} in the model, the --{which} shape has "
                                 f"{shape[axis]} (got {given})")


def aliased_plugin_io_feature():
    """``PreviewFeature.ALIASED_PLUGIN_IO_10_03``, which plugins with ``inplace=1`` (and the AOT
    plugins) need. It arrived in TensorRT 10.3, with ``IPluginV3OneBuildV2``: an older TensorRT is
    refused by a ValueError naming it."""
    trt = tensorrt()
    feature = getattr(trt.PreviewFeature, "ALIASED_PLUGIN_IO_10_03", None)
    if feature is None:
        raise ValueError(
            f"{backend.name()} {trt.__version__} has no PreviewFeature.ALIASED_PLUGIN_IO_10_03: "
            "plugins with inplace=1 need TensorRT 10.3 or newer (or use inplace=0)"
        )
    return feature


def with_aliased_plugin_io(create_config):
    """A config loader ``(builder, network) -> IBuilderConfig``: ``create_config``'s config (e.g.
    polygraphy's ``CreateConfig``) with :func:`aliased_plugin_io_feature` enabled. Only that feature
    changes: TensorRT's defaults stay as they are."""
    feature = aliased_plugin_io_feature()

    def load(builder, network):
        config = create_config(builder, network)
        config.set_preview_feature(feature, True)
        return config

    return load


def _info(tensor):
    return TensorInfo(tensor.name, dtype_name(tensor.dtype), tuple(tensor.shape))


def dtype_name(trt_dtype):
    """NumPy's name for a TensorRT ``DataType`` (``float32``, ``int64``, ``bfloat16``, ...), or
    TensorRT's own name in lower case for types trt-scatter does not move (``fp8``, ``int4``)."""
    from trt_scatter.networks.graph import numpy_dtype

    try:
        return numpy_dtype(trt_dtype).name
    except TypeError:
        return str(trt_dtype).rsplit(".", 1)[-1].lower()


def _progress_monitor(trt):
    """A TensorRT progress monitor that prints each build phase as it starts, indented by depth."""

    class ProgressMonitor(trt.IProgressMonitor):
        def __init__(self):
            trt.IProgressMonitor.__init__(self)
            self._depth = 0

        def phase_start(self, phase_name, parent_phase, num_steps):
            print(f"{'  ' * self._depth}{phase_name} ({num_steps} steps)", flush=True)
            self._depth += 1

        def phase_finish(self, phase_name):
            self._depth = max(0, self._depth - 1)

        def step_complete(self, phase_name, step):
            return True

    return ProgressMonitor()
