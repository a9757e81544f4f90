"""Test helpers for the plugin tests: ONNX models with SliceScatter / ScatterUpdate nodes, engine builds, call logs.

The models follow the ONNX contract of trt-scatter (domain ``trt_scatter`` with an opset import,
inputs in spec order, output of data's shape and type); constant parameters are initializers,
which TensorRT's ONNX parser turns into constant inputs of the plugin.
"""

import logging

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from trt_scatter import plugins
from trt_scatter.backend import tensorrt
from trt_scatter.log import trt_logger

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


def _model(node, inputs, initializers, output_shape, dtype):
    graph = helper.make_graph(
        [node], node.op_type.lower(), inputs, [_value_info("output", dtype, output_shape)], initializer=initializers
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)])
    onnx.checker.check_model(model, full_check=True)
    return model


def slice_scatter_model(data_shape, updates_shape, start, stop, step, axes=None, dtype="float32", param_dtype="int64", **attrs):
    """``SliceScatter(data, updates, start, stop, step[, axes])`` with data/updates as graph inputs (str dims are dynamic)."""
    params = {"start": start, "stop": stop, "step": step} | ({} if axes is None else {"axes": axes})
    node = helper.make_node("SliceScatter", ["data", "updates", *params], ["output"], domain=DOMAIN, **attrs)
    inputs = [_value_info("data", dtype, data_shape), _value_info("updates", dtype, updates_shape)]
    return _model(node, inputs, [_tensor(name, v, param_dtype) for name, v in params.items()], data_shape, dtype)


def scatter_update_model(data_shape, indices, updates_shape, axis, dtype="float32", index_dtype="int64", axis_dtype="int64", **attrs):
    """``ScatterUpdate(data, indices, updates, axis)`` with data/updates as graph inputs, indices/axis constant."""
    node = helper.make_node("ScatterUpdate", ["data", "indices", "updates", "axis"], ["output"], domain=DOMAIN, **attrs)
    inputs = [_value_info("data", dtype, data_shape), _value_info("updates", dtype, updates_shape)]
    initializers = [_tensor("indices", indices, index_dtype), _tensor("axis", axis, axis_dtype)]
    return _model(node, inputs, initializers, data_shape, dtype)


def build(model, profile=None, aliasing=False):
    """Parses ``model`` with TensorRT's ONNX parser and builds it; returns the network and the plan (``None`` if the build failed).

    ``profile`` maps input names to (min, opt, max) shapes for dynamic inputs; ``aliasing``
    enables the preview feature that in-place plugin I/O needs.
    """
    trt = tensorrt()
    plugins.register()
    builder = trt.Builder(trt_logger())
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

    def arguments(self, method, plugin=None):
        return [args for name, called, args, _ in self if called == method and plugin in (None, name)]


def _summary(method, args):
    if method == "supports_format_combination":
        pos, in_out, num_inputs = args
        return pos, tuple(desc.desc.type for desc in in_out[: pos + 1]), tuple(desc.desc.format for desc in in_out[: pos + 1]), num_inputs
    if method == "configure_plugin":
        return tuple(tuple(desc.desc.dims) for desc in args[0]), tuple((tuple(d.min), tuple(d.max)) for d in args[0])
    return args


def record_calls(monkeypatch):
    """Wraps the plugin methods TensorRT calls so that each call lands in the returned :class:`CallLog`."""
    from trt_scatter.plugins.base import ScatterPlugin

    log = CallLog()
    for method in RECORDED:
        original = getattr(ScatterPlugin, method)

        def wrapper(self, *args, _original=original, _method=method):
            result = _original(self, *args)
            log.append((self.NAME, _method, _summary(_method, args), result))
            return result

        monkeypatch.setattr(ScatterPlugin, method, wrapper)
    return log


def trt_messages(caplog, level=logging.WARNING):
    return [record.getMessage() for record in caplog.records if record.name == "trt_scatter" and record.levelno >= level]
