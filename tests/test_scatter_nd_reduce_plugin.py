"""The ScatterNDReduce plugin: shapes, workspace, enqueue through the real launch code on the CPU kernels, real engine
builds through TensorRT-RTX's ONNX parser (the shared machinery is tested in test_scatter_elements_reduce_plugin.py)."""

import numpy as np
import pytest
from conftest import needs_full_tensorrt, needs_gpu

import plugin_models as models
from reduction_helpers import assert_same
from trt_scatter.ops import SCATTER_ND_REDUCE
from trt_scatter.oracle import ScatterInputError
from trt_scatter.oracle.scatter_nd_reduce import scatter_nd_reduce
from trt_scatter.plugins import reductions
from trt_scatter.plugins.base import KERNEL_WORKSPACE_OFFSET, PluginError, plugin_class

Plugin = plugin_class(SCATTER_ND_REDUCE)
PLUGINS = {(reduction, include_self): Plugin(reduction=reduction, include_self=include_self)
           for reduction in ("add", "mul", "min", "max", "mean") for include_self in (0, 1)}


def test_check_shapes_are_scatter_nds():
    Plugin.check_shapes([(4, 5, 6), (-1, 2), (-1, 6)])
    with pytest.raises(ScatterInputError, match=r"^scatter_nd_reduce: 'updates' must have shape \(9, 6\)"):
        Plugin.check_shapes([(4, 5, 6), (9, 2), (9, 5)])


def test_workspace_sorts_the_index_rows_not_the_elements():
    inputs = [models.dynamic_desc((1000, 64), "float32"), models.dynamic_desc((10000, 1), "int64"), models.dynamic_desc((10000, 64), "float32")]
    assert Plugin().get_workspace_size(inputs, []) == KERNEL_WORKSPACE_OFFSET + reductions.Plan(10000, 1000).workspace_bytes
    assert reductions.Plan(10000, 1000).workspace_bytes < 34 * 10000  # 20 to 33 bytes per index row, not per element


@pytest.mark.parametrize(("rows", "chunk"), [(0, 64), (1, 64), (1_000_000, 64), (16384 * 128 - 1, 64), (16384 * 128, 128),
                                             (3_000_000, 128), (16384 * 256, 256), (10_000_000, 256)])
def test_the_default_sort_split_leaves_enough_chunks_to_fill_a_gpu(rows, chunk):
    """The longest chunk that leaves 16384 chunks (measured on an H200: 1M rows sort fastest in chunks of 64, 10M in
    chunks of 256), and what the workspace is sized for is what the launch runs."""
    assert reductions.default_chunk(rows) == chunk
    assert reductions.Plan(rows, 1000) == reductions.Plan(rows, 1000, chunk)


@pytest.fixture(scope="module")
def cpu_kernels():
    with models.cpu_kernels() as kernels:
        yield kernels


@pytest.mark.parametrize("reduction", ["add", "mul", "min", "max", "mean"])
@pytest.mark.parametrize("k", [0, 1, 2])
def test_enqueue_through_the_real_kernels_on_the_cpu(cpu_kernels, reduction, k):
    rng = np.random.default_rng(k)
    data = rng.standard_normal((5, 3, 4)).astype(np.float32)
    indices = rng.integers(-3, 3, (2, 6, k)).astype(np.int64)
    updates = rng.standard_normal((2, 6) + data.shape[k:]).astype(np.float32)
    for include_self in (0, 1):
        output = models.enqueue_with_workspace(PLUGINS[(reduction, include_self)], [data.copy(), indices, updates])
        assert_same(output, scatter_nd_reduce(data, indices, updates, reduction, include_self))


def test_counted_rows_out_of_range_fail_the_enqueue_in_debug_mode(cpu_kernels):
    arrays = [np.zeros((4, 2), np.int32), np.array([[1, 0], [4, 0], [0, -3]], np.int32), np.ones(3, np.int32)]
    with pytest.raises(PluginError, match=r"ScatterNDReduce: 2 'indices' row\(s\) with a value outside \[-s, s-1\]"):
        models.enqueue_with_workspace(Plugin(), arrays)


@pytest.fixture
def calls(monkeypatch):
    return models.record_calls(monkeypatch)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int8", "int64"])  # uint8: TensorRT takes it only at network I/O
@models.forked
def test_engine_builds_index_add_shaped(calls, dtype):
    model = models.reduce_model("ScatterNDReduce", ["n", 16], ["e", 1], ["e", 16], dtype=dtype, reduction="add")
    profile = {"data": ((1, 16), (8, 16), (64, 16)), "indices": ((1, 1), (20, 1), (500, 1)), "updates": ((1, 16), (20, 16), (500, 16))}
    _, plan = models.build(model, profile=profile)
    assert plan is not None and plan.nbytes > 0
    assert max(calls.results("get_workspace_size")) == KERNEL_WORKSPACE_OFFSET + reductions.Plan(500, 64).workspace_bytes


@models.forked
def test_in_place_builds_with_the_aliasing_preview_feature(calls):
    model = models.reduce_model("ScatterNDReduce", [8, 4], [5, 1], [5, 4], reduction="min", include_self=0, inplace=1)
    _, plan = models.build(model, aliasing=True)
    assert plan is not None and 0 in calls.results("get_aliased_input")


@needs_gpu
@needs_full_tensorrt
def test_engine_output_matches_oracle():
    rng = np.random.default_rng(0)
    data, updates = rng.standard_normal((50, 8)).astype(np.float32), rng.standard_normal((500, 8)).astype(np.float32)
    indices = rng.integers(0, 50, (500, 1))
    model = models.reduce_model("ScatterNDReduce", [50, 8], [500, 1], [500, 8], reduction="mean")
    outputs = models.run(model, {"data": data, "indices": indices, "updates": updates})
    assert_same(outputs["output"], scatter_nd_reduce(data, indices, updates, "mean"))
