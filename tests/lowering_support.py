"""Test helpers for the networks/ONNX tests: run an ONNX model in onnxruntime, build TensorRT engines on the CPU.

No machine here runs a TensorRT engine, so the TensorRT side of a test builds a serialized
engine (TensorRT-RTX builds on the CPU) and inspects the network; values are checked by
running the same lowering's ONNX form in onnxruntime against the oracle.
"""

import numpy as np
import onnx
import pytest

import trt_scatter.plugins as plugins
from trt_scatter.backend import tensorrt
from trt_scatter.backend import trt_logger
from trt_scatter.backend import new_builder

INT32_MAX, INT32_MIN = 2**31 - 1, -(2**31)
INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)


def run_onnx(model, feeds):
    """Checks ``model`` fully, runs it in onnxruntime on the CPU, returns output "output"."""
    import onnxruntime

    onnx.checker.check_model(model, full_check=True)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(["output"], feeds)[0]


def new_network():
    builder = new_builder()
    return builder, builder.create_network(0)


def add_input(network, name, dtype, shape):
    from trt_scatter.dtypes import to_tensorrt

    return network.add_input(name, to_tensorrt(dtype), tuple(shape))


def build(builder, network, profile=None):
    """Builds a serialized engine; fails the test unless it is non-empty. ``profile``: name -> (min, opt, max)."""
    config = builder.create_builder_config()
    if profile:
        optimization_profile = builder.create_optimization_profile()
        for name, (low, opt, high) in profile.items():
            optimization_profile.set_shape(name, low, opt, high)
        config.add_optimization_profile(optimization_profile)
    plan = builder.build_serialized_network(network, config)
    assert plan is not None and plan.nbytes > 0, "TensorRT built no engine (see the log above)"
    return plan


def builds_or_refuses(load, profile, message):
    """``build_engine(load, profile)`` builds an engine where ``message`` is None, else refuses with exactly ``message``."""
    import re

    from trt_scatter.engine import build_engine

    if message is None:
        assert build_engine(load, profile)[0]
        return
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        build_engine(load, profile)


def parse_onnx(model):
    """A TensorRT network parsed from ``model`` by TensorRT's ONNX parser; fails the test on parser errors."""
    trt = tensorrt()
    builder, network = new_network()
    parser = trt.OnnxParser(network, trt_logger())
    if not parser.parse(model.SerializeToString()):
        errors = [str(parser.get_error(i)) for i in range(parser.num_errors)]
        pytest.fail("ONNX parser: " + "; ".join(errors))
    return builder, network, parser


def layers(network):
    return [network.get_layer(i) for i in range(network.num_layers)]


def scatter_layers(network):
    """The network's IScatterLayers, cast to their class (mode, axis)."""
    trt = tensorrt()
    found = []
    for layer in layers(network):
        if layer.type == trt.LayerType.SCATTER:
            layer.__class__ = trt.IScatterLayer
            found.append(layer)
    return found


def profile_for(network, low, opt, high):
    """An optimization profile for every dynamic input of ``network`` from name -> shape dicts."""
    profile = {}
    for i in range(network.num_inputs):
        tensor = network.get_input(i)
        if any(d < 0 for d in tensor.shape):
            profile[tensor.name] = (low[tensor.name], opt[tensor.name], high[tensor.name])
    return profile


def symbolic(shape, dynamic, prefix):
    """``shape`` with the dimensions flagged in ``dynamic`` as symbolic names (for ONNX) / -1 (for TensorRT)."""
    onnx_shape = tuple(f"{prefix}{i}" if flag else d for i, (d, flag) in enumerate(zip(shape, dynamic)))
    trt_shape = tuple(-1 if flag else d for d, flag in zip(shape, dynamic))
    return onnx_shape, trt_shape


def values(rng, shape, dtype):
    """Distinct-looking values of ``dtype`` (for bool: random)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    return np.asarray(rng.integers(-100, 100, size=shape)).astype(dtype)


@pytest.fixture
def plugin_calls(monkeypatch):
    """Replaces trt_scatter.plugins.add_plugin_layer (RTX cannot add plugin layers) by a recorder, and lets the
    builders' question whether it can (require_plugin_layers) pass."""
    calls = []

    def add_plugin_layer(network, op_name, inputs, fields=None):
        calls.append((op_name, list(inputs), fields))
        return inputs[0]

    monkeypatch.setattr(plugins, "add_plugin_layer", add_plugin_layer, raising=False)
    monkeypatch.setattr(plugins, "require_plugin_layers", lambda network, op_name: None, raising=False)
    return calls
