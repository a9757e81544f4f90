"""The AOT plugins in full TensorRT >= 10.9 on a GPU (skipped elsewhere, with the reason).

Engines built with ``trt-scatter build --aot`` (and with ``plugins.aot.add_plugin_layer``) are run
in a separate Python process that imports TensorRT, NumPy and cuda-python only, never trt-scatter
and no plugin: what trtexec or Triton would do. Their outputs must equal the oracle's, and the
``data`` input buffer must be left as it was (TensorRT copies data where the aliased output may
not take it over).
"""

import subprocess
import sys

import numpy as np
import onnx
import pytest

from conftest import HAS_FULL_TENSORRT, HAS_GPU
from trt_scatter import oracle
from trt_scatter.onnx_models import scatter_update_model, slice_scatter_model


def _aot_available():
    if not (HAS_FULL_TENSORRT and HAS_GPU):
        return False
    from trt_scatter.plugins import aot

    try:
        aot.tensorrt_plugin()  # the one check of what the AOT plugins need
    except aot.PluginError:
        return False
    return True


pytestmark = pytest.mark.skipif(
    not _aot_available(),
    reason="needs full TensorRT >= 10.9 (tensorrt.plugin AOT plugins) and a GPU; TensorRT-RTX ships tensorrt_rtx.plugin only as stubs",
)

# Runs an engine with nothing but TensorRT: argv = engine, feeds (.npz), results (.npz).
RUNNER = r"""
import sys
import numpy as np
import tensorrt as trt
from cuda.bindings import runtime as cudart

def check(result):
    err, *values = result
    assert err == cudart.cudaError_t.cudaSuccess, err
    return values[0] if values else None

engine_path, feeds_path, results_path = sys.argv[1:]
engine = trt.Runtime(trt.Logger(trt.Logger.WARNING)).deserialize_cuda_engine(open(engine_path, "rb").read())
assert engine is not None, "the engine did not deserialize"
assert not any(name.startswith("trt_scatter") for name in sys.modules)
context = engine.create_execution_context()
feeds = dict(np.load(feeds_path))
names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
inputs = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
for name in inputs:
    context.set_input_shape(name, feeds[name].shape)
buffers, results = {}, {}
for name in names:
    shape = feeds[name].shape if name in inputs else tuple(context.get_tensor_shape(name))
    array = feeds[name] if name in inputs else np.empty(shape, trt.nptype(engine.get_tensor_dtype(name)))
    pointer = check(cudart.cudaMalloc(max(array.nbytes, 1)))
    if name in inputs and array.nbytes:
        check(cudart.cudaMemcpy(pointer, np.ascontiguousarray(array).ctypes.data, array.nbytes, cudart.cudaMemcpyKind.cudaMemcpyHostToDevice))
    context.set_tensor_address(name, pointer)
    buffers[name] = (pointer, array)
stream = check(cudart.cudaStreamCreate())
assert context.execute_async_v3(stream)
check(cudart.cudaStreamSynchronize(stream))
for name, (pointer, array) in buffers.items():
    out = np.empty_like(array)
    if out.nbytes:
        check(cudart.cudaMemcpy(out.ctypes.data, pointer, out.nbytes, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost))
    results[("after:" if name in inputs else "") + name] = out
np.savez(results_path, **results)
"""


def _run_without_trt_scatter(tmp_path, engine_bytes, feeds):
    engine, feeds_path, results = tmp_path / "model.engine", tmp_path / "feeds.npz", tmp_path / "results.npz"
    engine.write_bytes(engine_bytes)
    np.savez(feeds_path, **feeds)
    (tmp_path / "runner.py").write_text(RUNNER)
    done = subprocess.run([sys.executable, str(tmp_path / "runner.py"), str(engine), str(feeds_path), str(results)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    return dict(np.load(results))


def _build(path, profile=None):
    from trt_scatter import engine

    return engine.build_engine(engine.network_from_onnx(path, aot=True), profile, aliased_plugin_io=True)[0]


RNG = np.random.default_rng(3)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("axes", [None, [1]])
def test_slice_scatter_engine_runs_without_trt_scatter(tmp_path, dtype, index_dtype, axes):
    start, stop, step = [-1], [-7], [-2]  # reversed, strided: 3 of 6 columns
    model = slice_scatter_model((4, 6), start, stop, step, axes=axes, dtype=dtype, index_dtype=index_dtype)
    onnx.save(model, tmp_path / "model.onnx")
    data = RNG.integers(-100, 100, (4, 6)).astype(dtype)
    updates_shape = tuple(d.dim_value for d in model.graph.input[1].type.tensor_type.shape.dim)
    updates = RNG.integers(-100, 100, updates_shape).astype(dtype)
    results = _run_without_trt_scatter(tmp_path, _build(tmp_path / "model.onnx"), {"data": data, "updates": updates})
    np.testing.assert_array_equal(results["output"], oracle.slice_scatter(data, updates, start, stop, step, axes))
    np.testing.assert_array_equal(results["after:data"], data)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.uint8, np.int64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_scatter_update_engine_runs_without_trt_scatter(tmp_path, dtype, index_dtype):
    model = scatter_update_model((5, 3, 4), (2,), 1, dtype=dtype, index_dtype=index_dtype)
    onnx.save(model, tmp_path / "model.onnx")
    data = RNG.integers(0, 100, (5, 3, 4)).astype(dtype)
    indices = np.array([2, 0], index_dtype)
    updates = RNG.integers(0, 100, (5, 2, 4)).astype(dtype)
    results = _run_without_trt_scatter(tmp_path, _build(tmp_path / "model.onnx"),
                                       {"data": data, "indices": indices, "updates": updates})
    np.testing.assert_array_equal(results["output"], oracle.scatter_update(data, indices, updates, np.array([1], index_dtype)))
    np.testing.assert_array_equal(results["after:data"], data)


def test_dynamic_shapes_take_their_scalars_and_grid_from_the_run_time_shapes(tmp_path):
    model = slice_scatter_model(("n", 1000), [0], [1000], [3], axes=[1])
    onnx.save(model, tmp_path / "model.onnx")
    profile = {"data": ((1, 1000), (4, 1000), (64, 1000)), "updates": ((1, 334), (4, 334), (64, 334))}
    engine_bytes = _build(tmp_path / "model.onnx", profile)
    for rows in (1, 7, 64):
        data = RNG.standard_normal((rows, 1000)).astype(np.float32)
        updates = RNG.standard_normal((rows, 334)).astype(np.float32)
        results = _run_without_trt_scatter(tmp_path, engine_bytes, {"data": data, "updates": updates})
        np.testing.assert_array_equal(results["output"], oracle.slice_scatter(data, updates, [0], [1000], [3], [1]))


def test_register_puts_every_creator_in_tensorrts_registry():
    import tensorrt as trt

    from trt_scatter.plugins import aot

    from trt_scatter.ops import OPS

    assert aot.register() == {name: f"trt_scatter::{name}" for name in OPS}
    registry = trt.get_plugin_registry()
    for name in OPS:
        assert registry.get_creator(name, "1", "trt_scatter") is not None
    assert aot.register() == aot.register()  # once per process


def test_network_api_builds_the_aot_form(tmp_path):
    import tensorrt as trt
    from polygraphy.backend.trt import CreateConfig, CreateNetwork, EngineBytesFromNetwork

    from trt_scatter.plugins import aot

    builder, network = CreateNetwork(strongly_typed=True)()
    data = network.add_input("data", trt.float32, (3, 4))
    indices = network.add_input("indices", trt.int64, (2,))
    updates = network.add_input("updates", trt.float32, (3, 2))
    axis = network.add_constant((1,), trt.Weights(np.array([1], np.int64))).get_output(0)
    output = aot.add_plugin_layer(network, "ScatterUpdate", [data, indices, updates, axis])
    output.name = "output"
    network.mark_output(output)
    config = CreateConfig(preview_features=[trt.PreviewFeature.ALIASED_PLUGIN_IO_10_03])
    engine_bytes = bytes(EngineBytesFromNetwork((builder, network), config=config)())
    feeds = {"data": np.zeros((3, 4), np.float32), "indices": np.array([3, 0], np.int64), "updates": np.ones((3, 2), np.float32)}
    results = _run_without_trt_scatter(tmp_path, engine_bytes, feeds)
    np.testing.assert_array_equal(results["output"], oracle.scatter_update(feeds["data"], feeds["indices"], feeds["updates"], 1))


def test_a_node_without_its_optional_attributes_builds_and_runs(tmp_path):
    """TensorRT hands aot_impl the values of the attributes a node has, by position: a CacheScatter node with
    ``mode`` and no ``axis`` (-2 by default) builds through to_aot, which writes the default in."""
    from onnx import helper

    node = helper.make_node("CacheScatter", ["cache", "update", "write_indices"], ["output"], domain="trt_scatter", mode="circular")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("cache", onnx.TensorProto.INT32, [2, 6, 3]),
                                            helper.make_tensor_value_info("update", onnx.TensorProto.INT32, [2, 4, 3]),
                                            helper.make_tensor_value_info("write_indices", onnx.TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("output", onnx.TensorProto.INT32, [2, 6, 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)]), tmp_path / "model.onnx")
    feeds = {"cache": RNG.integers(0, 100, (2, 6, 3)).astype(np.int32), "update": RNG.integers(0, 100, (2, 4, 3)).astype(np.int32),
             "write_indices": np.array([4, 1], np.int64)}
    results = _run_without_trt_scatter(tmp_path, _build(tmp_path / "model.onnx"), feeds)
    np.testing.assert_array_equal(results["output"], oracle.tensor_scatter(feeds["cache"], feeds["update"], feeds["write_indices"], -2, "circular"))


def test_network_api_passes_the_attributes(tmp_path):
    import tensorrt as trt
    from polygraphy.backend.trt import CreateConfig, CreateNetwork, EngineBytesFromNetwork

    from trt_scatter.plugins import aot

    builder, network = CreateNetwork(strongly_typed=True)()
    data = network.add_input("data", trt.int32, (3, 4))
    indices = network.add_input("indices", trt.int64, (3, 2))
    updates = network.add_input("updates", trt.int32, (3, 2))
    output = aot.add_plugin_layer(network, "ScatterElementsReduce", [data, indices, updates], axis=1, reduction="max")
    output.name = "output"
    network.mark_output(output)
    config = CreateConfig(preview_features=[trt.PreviewFeature.ALIASED_PLUGIN_IO_10_03])
    engine_bytes = bytes(EngineBytesFromNetwork((builder, network), config=config)())
    feeds = {"data": RNG.integers(-9, 9, (3, 4)).astype(np.int32), "indices": np.array([[0, 0], [3, 1], [2, 2]], np.int64),
             "updates": RNG.integers(-9, 9, (3, 2)).astype(np.int32)}
    results = _run_without_trt_scatter(tmp_path, engine_bytes, feeds)
    np.testing.assert_array_equal(results["output"], oracle.scatter_elements_reduce(feeds["data"], feeds["indices"], feeds["updates"], 1, "max"))

