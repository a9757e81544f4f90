"""What full TensorRT 10.x/11.x does differently from TensorRT-RTX on a CPU, and how trt-scatter meets it.

Each item was read in NVIDIA's sources (NVIDIA/TensorRT release/10.0 to 10.16, 11.0, 11.1:
python/src/infer/pyCore.cpp, pyPlugin.cpp, pyGraph.cpp, include/NvInfer.h, NvInferRuntime.h,
samples/python/python_plugin, samples/python/aliased_io_plugin). What can be shown here runs here,
on TensorRT-RTX or against a stand-in of the bindings; what needs full TensorRT and a GPU has a test
that skips with the reason and would confirm it there.
"""

import os
import subprocess
import sys
import types

import numpy as np
import pytest
from conftest import HAS_GPU, needs_full_tensorrt, needs_gpu

import plugin_models as models
from trt_scatter import backend, oracle, plugins
from trt_scatter.plugins.base import PluginError
from trt_scatter.ops import SCATTER_UPDATE, SLICE_SCATTER
from trt_scatter.plugins.base import plugin_class

ScatterUpdatePlugin, SliceScatterPlugin = plugin_class(SCATTER_UPDATE), plugin_class(SLICE_SCATTER)

trt = backend.tensorrt()
BUILD, RUNTIME = trt.TensorRTPhase.BUILD, trt.TensorRTPhase.RUNTIME
F32, F16, I32, I64 = trt.DataType.FLOAT, trt.DataType.HALF, trt.DataType.INT32, trt.DataType.INT64
full_tensorrt_10 = pytest.mark.skipif(
    backend.always_strongly_typed(), reason="needs full TensorRT 10.x (BuilderFlag.FP16: weakly typed networks)"
)


def _params(*values, dtype=np.int64):
    return [np.array([v], dtype) for v in values]


# ---- enqueue while TensorRT builds -------------------------------------------------------------
# Full TensorRT times enqueue during the build (samples/python/python_plugin/circ_pad_plugin_multi_tactic.py
# logs "Timing tactic" from enqueue in TensorRTPhase.BUILD), with inputs of arbitrary values, for
# each format combination it tries: IPluginV3OneRuntime::onShapeChange is called "once per profile".


def test_build_phase_enqueue_reads_its_descriptors_not_the_last_shape_change(monkeypatch):
    kernels = models.use_host_kernels(monkeypatch)
    plugin = SliceScatterPlugin(phase=BUILD)
    f32 = [np.zeros((4, 5), np.float32), np.ones((2, 5), np.float32)] + _params(0, 4, 2)
    plugin.on_shape_change([models.tensor_desc(a.shape, a.dtype) for a in f32], [])
    f16 = [a.astype(np.float16) for a in f32[:2]] + f32[2:]  # the builder times another type combination
    output = models.enqueue(plugin, f16, shape_change=False)
    assert kernels.launches[-1][1]["element_size"] == 2  # not the cached 4: a copy of the wrong length
    np.testing.assert_array_equal(output, oracle.slice_scatter(*f16))


def test_runtime_enqueue_reuses_what_on_shape_change_read(monkeypatch):
    kernels = models.use_host_kernels(monkeypatch)
    plugin = SliceScatterPlugin(phase=RUNTIME)
    f32 = [np.zeros((4, 5), np.float32), np.ones((2, 5), np.float32)] + _params(0, 4, 2)
    plugin.on_shape_change([models.tensor_desc(a.shape, a.dtype) for a in f32], [])
    models.enqueue(plugin, [np.zeros((6, 5), np.float32), np.ones((3, 5), np.float32)] + _params(0, 6, 2), shape_change=False)
    assert kernels.launches[-1][1]["data_shape"] == (4, 5)  # the cache, as TensorRT's contract allows at run time


@pytest.mark.parametrize("plugin_class, arrays", [
    (SliceScatterPlugin, [np.zeros((4, 5), np.float32), np.ones((3, 5), np.float32)] + _params(0, 4, 2)),
    (ScatterUpdatePlugin, [np.zeros((4, 5), np.float32), np.array([9], np.int64), np.ones((1, 5), np.float32), np.array(0)]),
])
def test_build_phase_enqueue_never_raises_from_the_debug_count(monkeypatch, plugin_class, arrays):
    """Arbitrary timing inputs make the kernels skip writes: in BUILD nothing is counted, at run time it fails by name."""
    kernels = models.use_host_kernels(monkeypatch, debug=True)
    plugins.counted_errors()
    models.enqueue(plugin_class(phase=BUILD), arrays)
    assert kernels.launches[-1][1]["error_flag"] == 0 and plugins.counted_errors() == []
    with pytest.raises(PluginError, match=f"^{plugin_class.OP.name}: .*TRT_SCATTER_DEBUG=1"):
        models.enqueue(plugin_class(phase=RUNTIME), arrays)
    (message,) = plugins.counted_errors()  # what `trt-scatter check` prints: TensorRT swallows the exception
    assert message.startswith(f"{plugin_class.OP.name}: ")
    assert plugins.counted_errors() == []


# ---- supports_format_combination: the declared types only ---------------------------------------
# A weakly typed 10.x network built with FP16 allowed may pick any type a plugin accepts; NVIDIA's
# aliased_io_plugin sample records the types get_output_data_types is given and accepts only those.


def _accepts(plugin, types, pos, num_inputs=5):
    return plugin.supports_format_combination(pos, [models.dynamic_desc((2,), t) for t in types], num_inputs)


def test_format_combinations_keep_the_declared_types():
    plugin = SliceScatterPlugin(phase=BUILD)
    assert _accepts(plugin, [F16], 0)  # before any declaration: any type the kernels move
    assert plugin.get_output_data_types([F32, F32, I32, I32, I32]) == [F32]
    plugin.get_output_data_types([F16, F16, I32, I32, I32])  # a later call does not change the declaration
    for copy in (plugin, plugin.clone()):
        assert _accepts(copy, [F32], 0) and not _accepts(copy, [F16], 0)
        assert _accepts(copy, [F32, F32, I32], 2) and not _accepts(copy, [F32, F32, I64], 2)
        assert _accepts(copy, [F32, F32, I32, I32, I32, F32], 5) and not _accepts(copy, [F32, F32, I32, I32, I32, F16], 5)


# ---- strongly typed networks ---------------------------------------------------------------------
# TensorRT 11.0/11.1 (pyCore.cpp) have no BuilderFlag.FP16/BF16, and NvInfer.h deprecates
# NetworkDefinitionCreationFlag::kSTRONGLY_TYPED: "Strongly typed mode is always enabled. This flag
# is retained for API compatibility but is ignored." 10.0-10.16 have both flags.


def test_engine_networks_are_strongly_typed_unless_precision_flags_are_asked():
    from trt_scatter import engine

    flag = trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED
    _, network = engine.network_from_example("slice_scatter", {})()
    assert network.get_flag(flag)


@full_tensorrt_10
@needs_gpu
def test_fp16_build_keeps_the_plugin_in_the_declared_type(tmp_path):
    """--fp16 (weakly typed) must not turn a float32 SliceScatter into a lossy float16 one."""
    from polygraphy.backend.trt import EngineFromBytes, TrtRunner

    model = models.slice_scatter_model([4, 5], [2, 5], [0], [4], [2])
    path = tmp_path / "f32.onnx"
    path.write_bytes(model.SerializeToString())
    engine_path = tmp_path / "f32.engine"
    result = _trt_scatter("build", path, "--plugins", "--fp16", "-o", engine_path)
    assert result.returncode == 0, result.stderr
    data = np.full((4, 5), 1 + 2**-20, np.float32)  # not a float16 value
    updates = np.full((2, 5), 3 + 2**-20, np.float32)
    with TrtRunner(EngineFromBytes(engine_path.read_bytes())) as runner:
        output = runner.infer({"data": data, "updates": updates})["output"]
    np.testing.assert_array_equal(output, oracle.slice_scatter(data, updates, [0], [4], [2]))


# ---- aliased plugin I/O: PreviewFeature.ALIASED_PLUGIN_IO_10_03 appears in 10.3 --------------------


def test_aliased_plugin_io_before_10_3_is_refused_by_name(monkeypatch):
    from trt_scatter import engine

    old = types.SimpleNamespace(PreviewFeature=types.SimpleNamespace(), __version__="10.2.0", __name__="tensorrt")
    monkeypatch.setattr(engine, "tensorrt", lambda: old)
    monkeypatch.setattr(backend, "tensorrt", lambda: old)
    with pytest.raises(ValueError, match=r"has no PreviewFeature.ALIASED_PLUGIN_IO_10_03: plugins with inplace=1 need TensorRT 10.3"):
        engine.with_aliased_plugin_io(lambda builder, network: None)


def test_only_models_with_inplace_nodes_need_aliased_plugin_io():
    from trt_scatter.engine import needs_aliased_plugin_io

    assert needs_aliased_plugin_io(models.slice_scatter_model([4, 5], [2, 5], [0], [4], [2], inplace=1))
    assert not needs_aliased_plugin_io(models.slice_scatter_model([4, 5], [2, 5], [0], [4], [2], inplace=0))
    assert not needs_aliased_plugin_io(models.slice_scatter_model([4, 5], [2, 5], [0], [4], [2]))


# ---- add_plugin_v3 returns None where TensorRT refuses the layer (pyGraph.cpp: a raw pointer) --------


def test_add_plugin_layer_refuses_a_none_layer(monkeypatch):
    class Refusing:
        def add_plugin_v3(self, inputs, shape_inputs, plugin):
            return None

    monkeypatch.setattr(plugins, "register", lambda: {"SliceScatter": types.SimpleNamespace(create_plugin=lambda *a: object())})
    monkeypatch.setattr(backend, "tensorrt", lambda: types.SimpleNamespace(
        PluginFieldCollection=lambda fields: fields, TensorRTPhase=trt.TensorRTPhase, __version__="10.13",
        PluginField=trt.PluginField, PluginFieldType=trt.PluginFieldType))
    with pytest.raises(PluginError, match=r"^SliceScatter: TensorRT refused the plugin layer \(add_plugin_v3 returned None"):
        plugins.add_plugin_layer(Refusing(), "SliceScatter", [])


# ---- on full TensorRT and a GPU ---------------------------------------------------------------------


def _trt_scatter(*args, env=None):
    command = [sys.executable, "-m", "trt_scatter.cli", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=600)


@needs_full_tensorrt
@needs_gpu
def test_build_with_debug_on_survives_the_timing_enqueues(tmp_path):
    """TRT_SCATTER_DEBUG=1 while full TensorRT times the plugins on arbitrary values: the build succeeds, quietly."""
    path = tmp_path / "su.onnx"
    path.write_bytes(models.scatter_update_model([64, 32], [3], [3, 32], [0]).SerializeToString())
    result = _trt_scatter("build", path, "--plugins", "-o", tmp_path / "su.engine", env={"TRT_SCATTER_DEBUG": "1"})
    assert result.returncode == 0 and result.stderr == "", result.stderr


@needs_full_tensorrt
@needs_gpu
def test_check_enables_aliased_io_for_inplace_models_and_passes(tmp_path):
    path = tmp_path / "inplace.onnx"
    path.write_bytes(models.slice_scatter_model([6, 5], [3, 5], [0], [6], [2], inplace=1).SerializeToString())
    result = _trt_scatter("check", path)
    assert result.returncode == 0 and "PASS output: tensorrt vs oracle" in result.stdout, result.stdout + result.stderr


@needs_full_tensorrt
@needs_gpu
def test_check_names_the_op_whose_kernel_skipped_writes(tmp_path):
    """indices fed at run time (not a constant validation can see) out of range: the count fails the check by name."""
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("ScatterUpdate", ["data", "indices", "updates", "axis"], ["output"], domain="trt_scatter")
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [4, 5]), helper.make_tensor_value_info("indices", TensorProto.INT64, [1]),
         helper.make_tensor_value_info("updates", TensorProto.FLOAT, [1, 5])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [4, 5])],
        initializer=[helper.make_tensor("axis", TensorProto.INT64, [], [0])],
    )
    path = tmp_path / "fed.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)]), path)
    from polygraphy.json import save_json

    save_json([{"data": np.zeros((4, 5), np.float32), "indices": np.array([7]), "updates": np.ones((1, 5), np.float32)}], tmp_path / "in.json")
    result = _trt_scatter("check", path, "--load-inputs", tmp_path / "in.json")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL ScatterUpdate: 1 'indices' value(s) outside [0, s-1]" in result.stdout


def test_no_enqueue_while_building_without_a_gpu_is_an_rtx_fact():
    """Without a GPU nothing can run, so the build-call tests assert no enqueue there; with one (full
    TensorRT times plugins) they assert that every enqueue of the build came in the BUILD phase."""
    log = models.CallLog([("SliceScatter", "enqueue", (BUILD,), None)])
    assert log.enqueued_only_while_timing() == HAS_GPU
    assert models.CallLog([("SliceScatter", "enqueue", (RUNTIME,), None)]).enqueued_only_while_timing() is False
    assert models.CallLog([]).enqueued_only_while_timing()
