"""Test helpers for the plugin tests: ONNX models with SliceScatter / ScatterUpdate nodes, engine builds, call logs.

The models follow the ONNX contract of trt-scatter (domain ``trt_scatter`` with an opset import,
inputs in spec order, output of data's shape and type); constant parameters are initializers,
which TensorRT's ONNX parser turns into constant inputs of the plugin.
"""

import contextlib
import ctypes
import functools
import gc
import logging
import os
import shutil
import traceback

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from trt_scatter import onnx_models, oracle, plugins
from trt_scatter.dtypes import BFLOAT16
from trt_scatter.ops import OPS, SCATTER_UPDATE, SLICE_SCATTER
from trt_scatter.backend import tensorrt
from trt_scatter.backend import trt_logger
from trt_scatter.backend import new_builder

DOMAIN = "trt_scatter"

# ONNX element types whose TensorRT counterparts the plugins take (TensorRT-RTX parses these as I/O).
ONNX_TYPES = {
    "float32": TensorProto.FLOAT,
    "float16": TensorProto.FLOAT16,
    "bfloat16": TensorProto.BFLOAT16,
    "int8": TensorProto.INT8,
    "int32": TensorProto.INT32,
    "int64": TensorProto.INT64,
    "bool": TensorProto.BOOL,
    "uint8": TensorProto.UINT8,
}


def _value_info(name, dtype, shape):
    return helper.make_tensor_value_info(name, ONNX_TYPES[dtype], list(shape))


def _tensor(name, values, dtype):
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def _model(op, inputs, dtype, attributes):
    """``op``'s node (onnx_models.node_model), checked as ONNX's full checker checks it (the ops' schemas registered)."""
    model = onnx_models.node_model(op, inputs, attributes, dtype=_np_dtype(dtype))
    onnx.checker.check_model(model, full_check=True)
    return model


def _np_dtype(dtype):
    return BFLOAT16 if dtype == "bfloat16" else np.dtype(dtype)


def slice_scatter_model(data_shape, updates_shape, start, stop, step, axes=None, dtype="float32", param_dtype="int64", **attrs):
    """``SliceScatter(data, updates, start, stop, step[, axes])`` with data/updates as graph inputs (str dims are dynamic)."""
    params = {"start": start, "stop": stop, "step": step} | ({} if axes is None else {"axes": axes})
    inputs = {"data": (data_shape, _np_dtype(dtype)), "updates": (updates_shape, _np_dtype(dtype))}
    return _model(SLICE_SCATTER, inputs | {name: np.asarray(v, dtype=param_dtype) for name, v in params.items()}, dtype, attrs)


def scatter_update_model(data_shape, indices, updates_shape, axis, dtype="float32", index_dtype="int64", axis_dtype="int64", **attrs):
    """``ScatterUpdate(data, indices, updates, axis)`` with data/updates as graph inputs, indices/axis constant."""
    inputs = {"data": (data_shape, _np_dtype(dtype)), "indices": np.asarray(indices, dtype=index_dtype),
              "updates": (updates_shape, _np_dtype(dtype)), "axis": np.asarray(axis, dtype=axis_dtype)}
    return _model(SCATTER_UPDATE, inputs, dtype, attrs)


def build(model, profile=None, aliasing=False):
    """Parses ``model`` with TensorRT's ONNX parser and builds it; returns the network and the plan (``None`` if the build failed).

    ``profile`` maps input names to (min, opt, max) shapes for dynamic inputs; ``aliasing``
    enables the preview feature that in-place plugin I/O needs.
    """
    trt = tensorrt()
    plugins.register()
    builder = new_builder()
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, trt_logger())
    if not parser.parse(model.SerializeToString()):
        errors = [str(parser.get_error(i)) for i in range(parser.num_errors)]
        raise AssertionError(f"ONNX parser failed: {errors}")
    config = builder.create_builder_config()
    if aliasing:
        config.set_preview_feature(trt.PreviewFeature.ALIASED_PLUGIN_IO_10_03, True)
    if profile:
        optimization_profile = builder.create_optimization_profile()
        for name, shapes in profile.items():
            optimization_profile.set_shape(name, *shapes)
        config.add_optimization_profile(optimization_profile)
    return network, builder.build_serialized_network(network, config)


RECORDED = (
    "get_output_data_types",
    "get_output_shapes",
    "get_aliased_input",
    "supports_format_combination",
    "configure_plugin",
    "get_workspace_size",
    "get_valid_tactics",
    "on_shape_change",
    "attach_to_context",
    "get_fields_to_serialize",
    "clone",
    "enqueue",
)


class CallLog(list):
    """What TensorRT asked of the plugins: ``(plugin name, method, arguments summary, result)`` in call order."""

    def methods(self, plugin=None):
        return [method for name, method, _, _ in self if plugin in (None, name)]

    def results(self, method, plugin=None):
        return [result for name, called, _, result in self if called == method and plugin in (None, name)]

    def format_answers_are_linear_only(self):
        """True if every format combination TensorRT asked about was accepted exactly when it was all LINEAR."""
        linear = tensorrt().TensorFormat.LINEAR
        answers = [(all(f == linear for f in formats), accepted) for (_, _, formats, _), accepted in
                   zip(self.arguments("supports_format_combination"), self.results("supports_format_combination"))]
        return bool(answers) and all(expected == accepted for expected, accepted in answers)

    def arguments(self, method, plugin=None):
        return [args for name, called, args, _ in self if called == method and plugin in (None, name)]

    def enqueued_only_while_timing(self, plugin=None):
        """True if a build enqueued the plugins only as TensorRT may: not at all without a GPU (nothing
        runs), and with one only in the BUILD phase (full TensorRT times plugins on arbitrary inputs)."""
        from conftest import HAS_GPU

        phases = [phase for (phase,) in self.arguments("enqueue", plugin)]
        if not HAS_GPU:
            return not phases
        return all(phase == tensorrt().TensorRTPhase.BUILD for phase in phases)


def _summary(method, args):
    if method == "supports_format_combination":
        pos, in_out, num_inputs = args
        return pos, tuple(desc.desc.type for desc in in_out[: pos + 1]), tuple(desc.desc.format for desc in in_out[: pos + 1]), num_inputs
    if method == "configure_plugin":
        return tuple(tuple(desc.desc.dims) for desc in args[0]), tuple((tuple(d.min), tuple(d.max)) for d in args[0])
    return args


def _result(method, result):
    if method == "get_fields_to_serialize":  # the collection's data lives only as long as the plugin
        return FieldSnapshot(result)
    return result


class FieldSnapshot(dict):
    """The fields of a ``PluginFieldCollection`` copied out (name -> (type, array)), as a plan stores them."""

    def __init__(self, collection):
        super().__init__({field.name: (field.type, np.array(field.data)) for field in collection})

    def collection(self):
        """A fresh ``PluginFieldCollection`` of these fields (keep this snapshot alive while using it)."""
        trt = tensorrt()
        self._fields = [trt.PluginField(name, data, kind) for name, (kind, data) in self.items()]
        return trt.PluginFieldCollection(self._fields)


def record_calls(monkeypatch):
    """Wraps the plugin methods TensorRT calls so that each call lands in the returned :class:`CallLog`."""
    from trt_scatter.plugins.base import ScatterPlugin

    log = CallLog()
    for method in RECORDED:
        original = getattr(ScatterPlugin, method)

        def wrapper(self, *args, _original=original, _method=method):
            result = _original(self, *args)
            summary = (self.phase,) if _method == "enqueue" else _summary(_method, args)
            log.append((self.NAME, _method, summary, _result(_method, result)))
            return result

        monkeypatch.setattr(ScatterPlugin, method, wrapper)
    return log


def trt_messages(caplog, level=logging.WARNING):
    return [record.getMessage() for record in caplog.records if record.name == "trt_scatter" and record.levelno >= level]


# ---- direct calls of the plugin methods ------------------------------------------------------

def trt_type(dtype):
    """The TensorRT ``DataType`` of a NumPy dtype (bfloat16 included)."""
    trt = tensorrt()
    name = np.dtype(dtype).name
    return {
        "float32": trt.DataType.FLOAT,
        "float16": trt.DataType.HALF,
        "bfloat16": trt.DataType.BF16,
        "int8": trt.DataType.INT8,
        "int32": trt.DataType.INT32,
        "int64": trt.DataType.INT64,
        "bool": trt.DataType.BOOL,
        "uint8": trt.DataType.UINT8,
    }[name]


def tensor_desc(shape, dtype, format=None):
    """A ``PluginTensorDesc``; ``dtype`` is a NumPy dtype or a TensorRT ``DataType``."""
    trt = tensorrt()
    desc = trt.PluginTensorDesc()
    desc.dims = trt.Dims(list(shape))
    desc.type = dtype if isinstance(dtype, trt.DataType) else trt_type(dtype)
    desc.format = trt.TensorFormat.LINEAR if format is None else format
    return desc


def dynamic_desc(shape, dtype, format=None, min=None, max=None):
    trt = tensorrt()
    desc = trt.DynamicPluginTensorDesc()
    desc.desc = tensor_desc(shape, dtype, format)
    desc.min = trt.Dims(list(min if min is not None else shape))
    desc.max = trt.Dims(list(max if max is not None else shape))
    return desc


def _host_view(address, shape, dtype):
    """A writable NumPy view of host memory at ``address`` (what a device pointer is to the fake kernels)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    if count == 0:
        return np.empty(shape, dtype)
    buffer = (ctypes.c_char * (count * dtype.itemsize)).from_address(address)
    return np.frombuffer(buffer, dtype=dtype).reshape(shape)


class HostKernels:
    """Stands in for ``trt_scatter.plugins.kernels`` with the same launch API, on host memory.

    Pointers are addresses of NumPy arrays. Like the real kernels it moves elements as
    unsigned integers of ``element_size`` bytes and reads the parameters with the item sizes
    it is given, so a wrong shape, size or pointer from ``enqueue`` gives a wrong output;
    the values themselves come from the oracle. ``errors`` is what the error flag counts.
    """

    def __init__(self, debug=False):
        self.debug = debug
        self.launches = []
        self.prepared = []

    def debug_enabled(self):
        return self.debug

    def prepare(self, kernel, element_size, index_itemsize=None):
        self.prepared.append((kernel, element_size, index_itemsize))

    def check_error_flag(self, error_flag, stream):
        return int(_host_view(error_flag, (), np.uint32))

    def _prepare(self, name, arguments):
        self.launches.append((name, arguments))
        kind = np.dtype(f"u{arguments['element_size']}")
        output = _host_view(arguments["output"], arguments["data_shape"], kind)
        if arguments["data"]:
            output[...] = _host_view(arguments["data"], arguments["data_shape"], kind)
        return output, kind

    def _finish(self, arguments, output, compute):
        try:
            output[...] = compute(output.copy())
            errors = 0
        except oracle.ScatterInputError:
            errors = 1
        if arguments["error_flag"]:
            _host_view(arguments["error_flag"], (), np.uint32)[...] = errors

    def launch_slice_scatter(self, *, output, data, updates, start, stop, step, axes, num_axes, data_shape,
                             updates_shape, element_size, param_itemsize, axes_itemsize, error_flag, stream):
        arguments = dict(locals())
        del arguments["self"]
        output, kind = self._prepare("slice_scatter", arguments)

        def ints(address, itemsize):
            return _host_view(address, (num_axes,), f"i{itemsize}").tolist()

        start, stop, step = (ints(address, param_itemsize) for address in (start, stop, step))
        axes = ints(axes, axes_itemsize) if axes else None
        updates = _host_view(updates, updates_shape, kind)
        self._finish(arguments, output, lambda data: oracle.slice_scatter(data, updates, start, stop, step, axes))

    def launch_scatter_update(self, *, output, data, indices, updates, axis, data_shape, indices_shape, element_size,
                              index_itemsize, axis_itemsize, error_flag, stream, updates_shape):
        arguments = dict(locals())
        del arguments["self"]
        output, kind = self._prepare("scatter_update", arguments)
        indices = _host_view(indices, indices_shape, f"i{index_itemsize}")
        axis = int(_host_view(axis, (), f"i{axis_itemsize}"))
        updates = _host_view(updates, updates_shape, kind)
        self._finish(arguments, output, lambda data: oracle.scatter_update(data, indices, updates, axis))


def use_host_kernels(monkeypatch, debug=False):
    """Makes ``from trt_scatter.plugins import kernels`` (in enqueue) return a :class:`HostKernels`, whose
    launches the ops' kernel modules (``plugins/<key>.py``) then call."""
    import sys

    import trt_scatter.plugins
    from trt_scatter.plugins import scatter_update, slice_scatter

    kernels = HostKernels(debug)
    monkeypatch.setitem(sys.modules, "trt_scatter.plugins.kernels", kernels)
    monkeypatch.setattr(trt_scatter.plugins, "kernels", kernels, raising=False)
    monkeypatch.setattr(slice_scatter, "launch_slice_scatter", kernels.launch_slice_scatter)
    monkeypatch.setattr(scatter_update, "launch_scatter_update", kernels.launch_scatter_update)
    return kernels


def enqueue(plugin, arrays, output=None, workspace=None, shape_change=True):
    """Runs ``plugin.enqueue`` on host arrays (inputs in spec order); returns the output array.

    ``output`` may be ``arrays[0]`` itself to act as TensorRT's aliased (in-place) I/O.
    ``shape_change``: first call ``on_shape_change`` with the arrays' shapes, as TensorRT does
    before an enqueue with new shapes.
    """
    output = np.empty_like(arrays[0]) if output is None else output
    workspace = np.full((), 7, np.uint32) if workspace is None else workspace
    input_desc = [tensor_desc(array.shape, array.dtype) for array in arrays]
    output_desc = [tensor_desc(output.shape, output.dtype)]
    if shape_change:
        plugin.on_shape_change(input_desc, output_desc)
    plugin.enqueue(
        input_desc,
        output_desc,
        [array.ctypes.data for array in arrays],
        [output.ctypes.data],
        workspace.ctypes.data,
        0,
    )
    return output


def fp8_slice_scatter_model():
    """float32 I/O, QuantizeLinear to FP8 E4M3 -> SliceScatter -> DequantizeLinear: FP8 reaches the plugin."""
    nodes = [helper.make_node("QuantizeLinear", [name, "scale", "zero"], [f"{name}_fp8"]) for name in ("data", "updates")]
    nodes.append(helper.make_node("SliceScatter", ["data_fp8", "updates_fp8", "start", "stop", "step"], ["sliced"], domain=DOMAIN))
    nodes.append(helper.make_node("DequantizeLinear", ["sliced", "scale", "zero"], ["output"]))
    initializers = [_tensor("scale", 1.0, np.float32), helper.make_tensor("zero", TensorProto.FLOAT8E4M3FN, [], [0.0])]
    initializers += [_tensor(name, [value], np.int64) for name, value in (("start", 0), ("stop", 4), ("step", 2))]
    graph = helper.make_graph(
        nodes, "fp8", [_value_info("data", "float32", [4, 5]), _value_info("updates", "float32", [2, 5])],
        [_value_info("output", "float32", [4, 5])], initializer=initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(DOMAIN, 1)])
    onnx.checker.check_model(model, full_check=True)
    return model


def run(model, feed, aliasing=False):
    """Builds ``model`` and runs it once with polygraphy (full TensorRT and a GPU); returns the outputs by name."""
    from polygraphy.backend.trt import EngineFromBytes, TrtRunner

    _, plan = build(model, aliasing=aliasing)
    assert plan is not None, "engine build failed (see the TensorRT log)"
    with TrtRunner(EngineFromBytes(bytes(plan))) as runner:
        return {name: np.array(value) for name, value in runner.infer(feed).items()}


def random_array(rng, shape, dtype):
    """Random bytes as an array of ``dtype`` ("bfloat16" included; bools are 0/1)."""
    dtype = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(0, 256, (*shape, dtype.itemsize), dtype=np.uint8).view(dtype).reshape(shape)


def chained_model():
    """``SliceScatter(data, updates, ...)`` with ``inplace=1`` feeding ``ScatterUpdate(..., indices, rows, axis)``."""
    nodes = [
        helper.make_node("SliceScatter", ["data", "updates", "start", "stop", "step", "axes"], ["sliced"], domain=DOMAIN, inplace=1),
        helper.make_node("ScatterUpdate", ["sliced", "indices", "rows", "axis"], ["output"], domain=DOMAIN),
    ]
    initializers = [_tensor(name, values, np.int32) for name, values in (("start", [1]), ("stop", [4]), ("step", [2]), ("axes", [1]))]
    initializers += [_tensor("indices", [2], np.int64), _tensor("axis", [0], np.int64)]
    inputs = [_value_info("data", "float16", [3, 4]), _value_info("updates", "float16", [3, 2]), _value_info("rows", "float16", [1, 4])]
    graph = helper.make_graph(nodes, "chain", inputs, [_value_info("output", "float16", [3, 4])], initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)])
    onnx.checker.check_model(model, full_check=True)
    return model


@contextlib.contextmanager
def cpu_kernels():
    """The real ``plugins/kernels.py`` launch code driving the kernels' CPU build (``tests/kernel_shim``).

    Debug mode is on, so ``enqueue`` also reads the error counter back through the real ``check_error_flag``.
    """
    from kernel_shim import host

    from trt_scatter.plugins import kernels

    if shutil.which("g++") is None:
        pytest.skip("needs g++ to run the kernels on the CPU")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(kernels, "device", host.ShimDevice(host.load(host.shared_library())))
        monkeypatch.setenv("TRT_SCATTER_DEBUG", "1")
        yield kernels


def forked(test):
    """Runs a test that parses or builds with plugins in a forked child process; its failure is re-raised here.

    TensorRT-RTX 1.7.1 bug (scripts/rtx_plugin_heap_bug.py): once a network whose ONNX parser hosted
    a Python plugin is destroyed, a process that keeps creating Python plugin objects while it
    allocates other memory corrupts its heap and aborts later ("double free or corruption",
    "malloc_consolidate(): invalid chunk size"). Keeping parses out of the pytest process keeps the
    plugin objects the other tests create safe. (CUDA does not survive fork: GPU tests do not use this.)
    """

    @functools.wraps(test)
    def run(*args, **kwargs):
        if not hasattr(os, "fork"):
            return test(*args, **kwargs)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: run the test, report its failure through the pipe, never return to pytest
            gc.freeze()  # the parent's objects are left out of this process's collections: walking them would copy every page they are on
            os.close(read)
            try:
                test(*args, **kwargs)
                report = b""
            except BaseException:
                report = traceback.format_exc().encode() or b"failed"
            with os.fdopen(write, "wb") as pipe:
                pipe.write(report)
            os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            report = pipe.read()
        _, status = os.waitpid(pid, 0)
        if report:
            raise AssertionError("in the forked build process:\n" + report.decode(errors="replace"))
        if status:
            raise AssertionError(f"the forked build process died (wait status {status})")

    return run


def reduce_model(op_type, data_shape, indices_shape, updates_shape, dtype="float32", index_dtype="int64", indices=None, **attrs):
    """``ScatterElementsReduce`` or ``ScatterNDReduce(data, indices, updates)`` with every input a graph input (str dims are
    dynamic), or ``indices`` an initializer of these values."""
    index = (indices_shape, np.dtype(index_dtype)) if indices is None else np.asarray(indices, dtype=index_dtype)
    inputs = {"data": (data_shape, _np_dtype(dtype)), "indices": index, "updates": (updates_shape, _np_dtype(dtype))}
    return _model(OPS[op_type], inputs, dtype, attrs)


def enqueue_with_workspace(plugin, arrays, output=None):
    """:func:`enqueue` with a workspace of the size the plugin asks for (its inputs' shapes as the largest)."""
    descs = [dynamic_desc(array.shape, array.dtype) for array in arrays]
    workspace = np.zeros(max(plugin.get_workspace_size(descs, []), 4), np.uint8)
    return enqueue(plugin, arrays, output=output, workspace=workspace)


def mean_pool_model(dtype="float32"):
    """global_mean_pool as the dynamo exporter writes it: a count (ScatterElementsReduce) and a sum (ScatterNDReduce) of x's
    rows per graph, into zeros sized by a value (the largest graph index + 1), which TensorRT cannot bound; x of ``dtype``."""
    def constant(name, value):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value), name))

    nodes = [constant("one", np.array([1])), constant("four", np.array([4])), constant("ones", np.array([1], dtype)),
             constant("last", np.array([-1])), helper.make_node("ReduceMax", ["batch"], ["largest"], keepdims=1),
             helper.make_node("Add", ["largest", "one"], ["graphs"]), helper.make_node("Concat", ["graphs", "four"], ["sums_shape"], axis=0),
             helper.make_node("ConstantOfShape", ["graphs"], ["no_counts"], value=numpy_helper.from_array(np.zeros(1, dtype))),
             helper.make_node("ConstantOfShape", ["sums_shape"], ["no_sums"], value=numpy_helper.from_array(np.zeros(1, dtype))),
             helper.make_node("Shape", ["batch"], ["nodes"]), helper.make_node("Expand", ["ones", "nodes"], ["each"]),
             helper.make_node("ScatterElementsReduce", ["no_counts", "batch", "each"], ["counts"], domain="trt_scatter"),
             helper.make_node("Unsqueeze", ["batch", "last"], ["rows"]),
             helper.make_node("ScatterNDReduce", ["no_sums", "rows", "x"], ["sums"], domain="trt_scatter")]
    graph = helper.make_graph(nodes, "mean_pool", [_value_info("x", dtype, ["n", 4]), _value_info("batch", "int64", ["n"])],
                              [helper.make_tensor_value_info(name, ONNX_TYPES[dtype], None) for name in ("sums", "counts")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
