"""The reduction plugins (ScatterElementsReduce here, ScatterNDReduce beside it): build-phase methods called directly,
enqueue through the real launch code on the CPU kernels, real engine builds through TensorRT-RTX's ONNX parser."""

import numpy as np
import pytest
from conftest import needs_full_tensorrt, needs_gpu

import plugin_models as models
from reduction_helpers import assert_same
from trt_scatter import plugins
from trt_scatter.backend import tensorrt
from trt_scatter.ops import SCATTER_ELEMENTS_REDUCE
from trt_scatter.oracle import ScatterInputError
from trt_scatter.oracle.scatter_elements_reduce import scatter_elements_reduce
from trt_scatter.plugins import reductions
from trt_scatter.plugins.base import KERNEL_WORKSPACE_OFFSET, PluginError, plugin_class

Plugin = plugin_class(SCATTER_ELEMENTS_REDUCE)
trt = tensorrt()
F32, F16, BF16, I8, U8, I32, I64, BOOL = (trt.DataType.FLOAT, trt.DataType.HALF, trt.DataType.BF16, trt.DataType.INT8,
                                          trt.DataType.UINT8, trt.DataType.INT32, trt.DataType.INT64, trt.DataType.BOOL)
# Plugin objects for the enqueue tests, made at import (see plugin_models.forked for why few are made later).
PLUGINS = {(reduction, include_self, inplace): Plugin(inplace, axis=1, reduction=reduction, include_self=include_self)
           for reduction in ("add", "mul", "min", "max", "mean") for include_self in (0, 1) for inplace in (False, True)}


def test_check_shapes_names_input_and_rule():
    Plugin.check_shapes([(4, 5), (-1, 2), (-1, 2)])
    with pytest.raises(ScatterInputError, match=r"^scatter_elements_reduce: 'updates' must have shape \(6, 2\)"):
        Plugin.check_shapes([(4, 5), (6, 2), (6, 3)])
    with pytest.raises(ScatterInputError, match=r"^scatter_elements_reduce: 'indices' must have the rank of 'data' \(2\)"):
        Plugin.check_shapes([(4, 5), (6,), (6,)])


@pytest.mark.parametrize("types, pos, expected", [
    ([F32], 0, True), ([F16], 0, True), ([BF16], 0, True), ([I8], 0, True), ([U8], 0, True), ([I32], 0, True), ([I64], 0, True),
    ([BOOL], 0, False), ([trt.DataType.FP8], 0, False),  # no arithmetic on bool; no NumPy type to define fp8's
    ([F32, I32], 1, True), ([F32, I64], 1, True), ([F32, F32], 1, False), ([F32, I64, F32], 2, True), ([F32, I64, F16], 2, False),
])
def test_supports_the_types_its_kernel_combines(types, pos, expected):
    in_out = [models.dynamic_desc((2,), t) for t in types]
    assert Plugin(reduction="mean").supports_format_combination(pos, in_out, 3) is expected


def test_workspace_is_the_counter_and_the_sort_for_the_largest_shapes():
    plugin = Plugin()
    inputs = [models.dynamic_desc((-1, 5), "float32", max=(100, 5)), models.dynamic_desc((-1, 5), "int64", max=(3000, 5)),
              models.dynamic_desc((-1, 5), "float32", max=(3000, 5))]
    expected = reductions.Plan(15000, 500).workspace_bytes
    assert plugin.get_workspace_size(inputs, []) == KERNEL_WORKSPACE_OFFSET + expected and expected >= 16 * 15000


def test_fields_round_trip_through_the_creator():
    creator = plugins.register()["ScatterElementsReduce"]
    kept = [trt.PluginField("axis", np.array([-1], np.int32), trt.PluginFieldType.INT32),
            trt.PluginField("reduction", np.frombuffer(b"mean", np.int8).copy(), trt.PluginFieldType.CHAR),
            trt.PluginField("include_self", np.array([0], np.int32), trt.PluginFieldType.INT32)]
    built = creator.create_plugin("r", trt.PluginFieldCollection(kept), trt.TensorRTPhase.BUILD)
    runtime = creator.create_plugin("r", built.get_fields_to_serialize(), trt.TensorRTPhase.RUNTIME)
    assert runtime.attributes == {"axis": -1, "reduction": "mean", "include_self": 0} and runtime.clone().attributes == runtime.attributes
    kept[1] = trt.PluginField("reduction", np.frombuffer(b"sum", np.int8).copy(), trt.PluginFieldType.CHAR)
    with pytest.raises(PluginError, match="ScatterElementsReduce: plugin field 'reduction' must be add or mul or min or max or mean"):
        creator.create_plugin("r", trt.PluginFieldCollection(kept), trt.TensorRTPhase.BUILD)


@pytest.fixture(scope="module")
def cpu_kernels():
    with models.cpu_kernels() as kernels:
        yield kernels


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8", "uint8", "int32", "int64"])
@pytest.mark.parametrize("reduction", ["add", "mul", "min", "max", "mean"])
def test_enqueue_through_the_real_kernels_on_the_cpu(cpu_kernels, dtype, reduction):
    rng = np.random.default_rng(abs(hash((dtype, reduction))) % 2**32)
    data = (rng.integers(-4, 5, (3, 6)) if dtype != "uint8" else rng.integers(0, 9, (3, 6))).astype(models.random_array(rng, (), dtype).dtype)
    indices = rng.integers(-6, 6, (3, 9)).astype(np.int32)
    updates = (rng.integers(-4, 5, (3, 9)) if dtype != "uint8" else rng.integers(0, 9, (3, 9))).astype(data.dtype)
    for include_self in (0, 1):
        for inplace in (False, True):
            arrays = [data.copy(), indices, updates]
            output = models.enqueue_with_workspace(PLUGINS[(reduction, include_self, inplace)], arrays, output=arrays[0] if inplace else None)
            assert_same(output, scatter_elements_reduce(data, indices, updates, 1, reduction, include_self))


def test_counted_indices_out_of_range_fail_the_enqueue_in_debug_mode(cpu_kernels):
    arrays = [np.zeros((3, 6), np.float32), np.array([[0, 6, -7, 1]] * 3, np.int64), np.ones((3, 4), np.float32)]
    with pytest.raises(PluginError, match=r"ScatterElementsReduce: 6 'indices' value\(s\) outside \[-s, s-1\] along the axis .*\(3, 6\)"):
        models.enqueue_with_workspace(Plugin(axis=1), arrays)


# ---- real engine builds through TensorRT-RTX's ONNX parser -----------------------------------------


@pytest.fixture
def calls(monkeypatch):
    return models.record_calls(monkeypatch)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8", "int32", "int64"])
@models.forked
def test_engine_builds_with_its_workspace(calls, dtype):
    model = models.reduce_model("ScatterElementsReduce", [4, 5], [7, 5], [7, 5], dtype=dtype, axis=0, reduction="mean", include_self=0)
    _, plan = models.build(model)
    assert plan is not None and plan.nbytes > 0
    assert set(calls.results("get_workspace_size")) == {KERNEL_WORKSPACE_OFFSET + reductions.Plan(35, 20).workspace_bytes}
    assert calls.format_answers_are_linear_only() and calls.enqueued_only_while_timing()


@models.forked
def test_engine_builds_with_dynamic_shapes_and_the_workspace_of_the_largest(calls):
    model = models.reduce_model("ScatterElementsReduce", ["n", 64], ["e", 64], ["e", 64], axis=0, reduction="max")
    profile = {"data": ((1, 64), (100, 64), (1000, 64)), "indices": ((1, 64), (300, 64), (5000, 64)), "updates": ((1, 64), (300, 64), (5000, 64))}
    _, plan = models.build(model, profile=profile)
    assert plan is not None and plan.nbytes > 0
    assert max(calls.results("get_workspace_size")) == KERNEL_WORKSPACE_OFFSET + reductions.Plan(5000 * 64, 1000 * 64).workspace_bytes


@models.forked
def test_bool_is_refused_by_the_plugin(capfd):
    model = models.reduce_model("ScatterElementsReduce", [4], [2], [2], dtype="bool", reduction="max")
    _, plan = models.build(model)
    assert plan is None  # supports_format_combination takes no bool: validation says why before a build (test_validate)


@needs_gpu
@needs_full_tensorrt
@pytest.mark.parametrize("reduction", ["add", "mean", "max"])
def test_engine_output_matches_oracle(reduction):
    rng = np.random.default_rng(0)
    data, updates = rng.standard_normal((50, 8)).astype(np.float32), rng.standard_normal((500, 8)).astype(np.float32)
    indices = np.repeat(rng.integers(0, 50, (500, 1)), 8, axis=1)
    model = models.reduce_model("ScatterElementsReduce", [50, 8], [500, 8], [500, 8], axis=0, reduction=reduction, include_self=0)
    outputs = models.run(model, {"data": data, "indices": indices, "updates": updates})
    assert_same(outputs["output"], scatter_elements_reduce(data, indices, updates, 0, reduction, 0))
