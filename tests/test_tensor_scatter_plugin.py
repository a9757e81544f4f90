"""The CacheScatter plugin (TensorScatter-24): build-phase methods called directly, enqueue through the real kernels
on the CPU, real engine builds through TensorRT-RTX's ONNX parser (CacheScatter nodes, and ONNX's own TensorScatter
nodes handed to the plugin by build --plugins). Running engines needs full TensorRT and a GPU (skipped here)."""

import re

import numpy as np
import onnx
import pytest
from conftest import needs_full_tensorrt, needs_gpu
from hypothesis import given, settings
from hypothesis import strategies as st

import plugin_models as models
from trt_scatter import oracle, plugins
from trt_scatter.backend import tensorrt
from trt_scatter.onnx_models import tensor_scatter_model
from trt_scatter.ops import CACHE_SCATTER
from trt_scatter.oracle import ScatterInputError
from trt_scatter.plugins.base import PluginError, plugin_class

CacheScatterPlugin = plugin_class(CACHE_SCATTER)
trt = tensorrt()
PLUGINS = {(inplace, mode, axis): CacheScatterPlugin(inplace, axis=axis, mode=mode)
           for inplace in (False, True) for mode in ("linear", "circular") for axis in (1, 2, -2, -1)}


@st.composite
def cache_writes(draw, max_rank=5):
    """Valid shapes and attributes: cache shape, update shape, axis (either sign, never the batch axis), mode."""
    rank = draw(st.integers(3, max_rank))
    shape = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    axis = draw(st.sampled_from([a for a in (1, 2, -2, -1) if -rank <= a < rank and a % rank]))
    shape[axis] = draw(st.integers(1, 6))
    update = list(shape)
    update[axis] = draw(st.integers(0, shape[axis]))
    return tuple(shape), tuple(update), axis, draw(st.sampled_from(["linear", "circular"]))


# ---- build-time shape checks ---------------------------------------------------------------------


@given(cache_writes(), st.booleans(), st.data())
def test_check_shapes_accepts_what_the_oracle_accepts(case, with_indices, data):
    cache, update, axis, _ = case
    shapes = [cache, update] + ([(cache[0],)] if with_indices else [])
    CacheScatterPlugin.check_shapes(shapes, axis=axis)
    hide = lambda shape: tuple(-1 if data.draw(st.booleans()) else d for d in shape)  # noqa: E731
    CacheScatterPlugin.check_shapes([hide(shape) for shape in shapes], axis=axis)


@pytest.mark.parametrize("shapes, axis, name, rule", [
    ([(2, 4, 8), (2, 4, 1, 1)], -2, "update", "must have shape (2, ?, 8)"),
    ([(2, 4, 8), (2, 5, 8)], -2, "update", "at most past_cache's 4 entries"),
    ([(2, 4, 8), (2, 1, 8), (3,)], -2, "write_indices", "must have shape (2,)"),
    ([(2, 4, 8), (2, 4, 1)], 0, "axis", "must not be the batch axis 0"),
    ([(2, 4, 8), (2, 4, 1)], 3, "axis", "must be in [-3, 2]"),
])
def test_check_shapes_names_input_and_rule(shapes, axis, name, rule):
    with pytest.raises(ScatterInputError) as caught:
        CacheScatterPlugin.check_shapes(shapes, axis=axis)
    assert caught.value.input_name == name and rule in str(caught.value)


def test_configure_plugin_and_on_shape_change_check_shapes_for_the_nodes_axis():
    plugin = CacheScatterPlugin(axis=1)
    good = [((2, 6, 4), "float16"), ((2, 1, 4), "float16"), ((2,), "int64")]
    plugin.configure_plugin([models.dynamic_desc(s, t) for s, t in good], [])
    CacheScatterPlugin(axis=-2).configure_plugin([models.dynamic_desc(s, t) for s, t in good], [])  # axis -2 is 1 here too
    with pytest.raises(ScatterInputError, match="'update' must have shape"):
        CacheScatterPlugin(axis=2).configure_plugin([models.dynamic_desc(s, t) for s, t in good], [])
    with pytest.raises(ScatterInputError, match="'update' must have shape"):
        CacheScatterPlugin(axis=2).on_shape_change([models.tensor_desc(s, t) for s, t in good], [])
    with pytest.raises(PluginError, match=r"takes inputs \(past_cache, update\[, write_indices\]\), got 1"):
        plugin.configure_plugin([models.dynamic_desc(s, t) for s, t in good[:1]], [])


# ---- formats, types, fields -----------------------------------------------------------------------

I32, I64, F16, BF16 = trt.DataType.INT32, trt.DataType.INT64, trt.DataType.HALF, trt.DataType.BF16


@pytest.mark.parametrize("types, pos, expected", [
    ([F16], 0, True),
    ([F16, F16], 1, True),
    ([F16, BF16], 1, False),
    ([F16, F16, I32], 2, True),
    ([F16, F16, I64], 2, True),
    ([F16, F16, F16], 2, False),
    ([F16, F16, I64, F16], 3, True),
    ([F16, F16, I64, BF16], 3, False),
])
def test_supports_format_combination(types, pos, expected):
    in_out = [models.dynamic_desc((2,), t) for t in types]
    assert CacheScatterPlugin().supports_format_combination(pos, in_out, 3) is expected


@pytest.mark.parametrize("inplace, axis, mode", [(0, -2, "linear"), (1, 1, "circular")])
def test_fields_round_trip_through_the_creator(inplace, axis, mode):
    creator = plugins.register()["CacheScatter"]
    from trt_scatter.plugins.base import fields_to_keep

    kept = fields_to_keep({"axis": axis, "mode": mode, "inplace": inplace})  # the collection does not own its fields
    built = creator.create_plugin("c", trt.PluginFieldCollection(kept), trt.TensorRTPhase.BUILD)
    runtime = creator.create_plugin("c", built.get_fields_to_serialize(), trt.TensorRTPhase.RUNTIME)
    assert isinstance(runtime, CacheScatterPlugin) and runtime.attributes == {"axis": axis, "mode": mode}
    assert runtime.get_aliased_input(0) == (0 if inplace else -1) and runtime.clone().attributes == built.attributes


def test_creator_refuses_a_mode_the_op_does_not_have():
    from trt_scatter.plugins.base import fields_to_keep

    kept = fields_to_keep({"mode": "ring"})
    with pytest.raises(PluginError, match=r"^CacheScatter: plugin field 'mode' must be linear or circular"):
        plugins.register()["CacheScatter"].create_plugin("c", trt.PluginFieldCollection(kept), trt.TensorRTPhase.BUILD)


# ---- enqueue through the real kernels on the CPU ----------------------------------------------------


@pytest.fixture(scope="module")
def cpu_kernels():
    with models.cpu_kernels() as kernels:
        yield kernels


@settings(max_examples=40)
@given(cache_writes(), st.sampled_from(["float32", "float16", "bfloat16", "int8", "int32", "bool"]),
       st.sampled_from(["int32", "int64", None]), st.booleans(), st.integers(0, 2**32 - 1))
def test_enqueue_through_the_real_kernels_on_the_cpu(cpu_kernels, case, dtype, index_dtype, inplace, seed):
    cache_shape, update_shape, axis, mode = case
    rng = np.random.default_rng(seed)
    cache, update = models.random_array(rng, cache_shape, dtype), models.random_array(rng, update_shape, dtype)
    size, count = cache_shape[axis], update_shape[axis]
    indices = None
    if index_dtype is not None:
        indices = rng.integers(0, (3 * size if mode == "circular" else size - count) + 1, cache_shape[0]).astype(index_dtype)
    arrays = [cache.copy(), update] + ([indices] if indices is not None else [])
    output = models.enqueue(PLUGINS[(inplace, mode, axis)], arrays, output=arrays[0] if inplace else None)
    expected = oracle.tensor_scatter(cache, update, indices, axis, mode)
    np.testing.assert_array_equal(output.view(np.uint8), expected.view(np.uint8))


def test_rows_that_do_not_fit_are_counted_and_named(cpu_kernels):
    arrays = [np.zeros((3, 2, 5, 4), np.float16), np.ones((3, 2, 2, 4), np.float16), np.array([3, 4, -1], np.int64)]
    with pytest.raises(PluginError, match=r"^CacheScatter: 2 batch row\(s\) of 'write_indices' below 0, or \(linear mode\) leaving the update"):
        models.enqueue(CacheScatterPlugin(), arrays)
    assert plugins.counted_errors()[-1].startswith("CacheScatter: 2 batch row(s)")


# ---- real engine builds through TensorRT-RTX's ONNX parser -----------------------------------------


@pytest.fixture
def calls(monkeypatch):
    return models.record_calls(monkeypatch)


@pytest.mark.parametrize("cache_shape, count, axis, mode, dtype, index_dtype", [
    ((2, 6, 3), 1, 1, "linear", np.float32, np.int64),  # rank 3
    ((2, 6, 3), 4, -2, "circular", np.float16, np.int32),
    ((2, 4, 8, 16), 1, -2, "circular", np.int32, np.int64),  # rank 4, what TensorRT's own layer cannot do
    ((2, 4, 8, 16), 4, 1, "linear", np.float16, np.int64),
    ((3, 2, 4, 8, 2), 2, 3, "linear", np.float32, np.int32),  # rank 5
    ((3, 2, 4, 8, 5), 3, -1, "circular", np.int32, np.int64),
    ((2, 4, 8), 2, 2, "linear", np.int8, None),  # no write indices
])
@models.forked
def test_engine_builds_for_ranks_axes_modes_and_types(calls, cache_shape, count, axis, mode, dtype, index_dtype):
    model = tensor_scatter_model(cache_shape, count, axis=axis, mode=mode, dtype=dtype, index_dtype=index_dtype or np.int64,
                                 write_indices=index_dtype is not None)
    _, plan = models.build(model)
    assert plan is not None and plan.nbytes > 0 and b"CacheScatter" in bytes(plan)
    update_shape = list(cache_shape)
    update_shape[axis] = count
    expected = (tuple(cache_shape), tuple(update_shape)) + (((cache_shape[0],),) if index_dtype else ())
    assert calls.arguments("configure_plugin")[0][0] == expected
    assert calls.format_answers_are_linear_only()
    (fields,) = {tuple(sorted((k, v[1].tobytes()) for k, v in f.items())) for f in calls.results("get_fields_to_serialize")}
    assert dict(fields)["mode"] == mode.encode()


@models.forked
def test_engine_builds_with_dynamic_batch_and_tokens_in_place(calls):
    model = tensor_scatter_model(("batch", 8, 64, 16), "tokens", mode="linear", dtype=np.float16, inplace=True)
    profile = {"past_cache": ((1, 8, 64, 16), (4, 8, 64, 16), (8, 8, 64, 16)),
               "update": ((1, 8, 1, 16), (4, 8, 1, 16), (8, 8, 64, 16)), "write_indices": ((1,), (4,), (8,))}
    _, plan = models.build(model, profile=profile, aliasing=True)
    assert plan is not None and 0 in calls.results("get_aliased_input")
    dims, bounds = calls.arguments("configure_plugin")[0]
    assert dims[0] == (-1, 8, 64, 16) and bounds[1] == ((1, 8, 1, 16), (8, 8, 64, 16))


@models.forked
def test_bad_shapes_fail_the_parse_with_the_oracle_message(capfd):
    model = tensor_scatter_model((2, 4, 8), 1, axis=1)
    model.graph.input[1].type.tensor_type.shape.dim[2].dim_value = 9
    with pytest.raises(AssertionError, match="ONNX parser failed"):
        models.build(model)
    assert "tensor_scatter: 'update' must have shape (2, ?, 8) (past_cache's shape off the axis)" in capfd.readouterr().err


@pytest.mark.parametrize("kwargs, layer", [
    (dict(cache_shape=(2, 4, 8, 16), sequence_length=1, mode="circular"), "PLUGIN_V3"),  # the plugin
    (dict(cache_shape=(2, 8, 16), sequence_length=2, axis=1, dtype=np.int32), "PLUGIN_V3"),
    (dict(cache_shape=(2, 4, 8, 16), sequence_length=1, dtype=np.float16), "KV_CACHE_UPDATE"),  # TensorRT's own layer
    (dict(cache_shape=(2, 4, "max_length", 16), sequence_length=1), "PLUGIN_V3"),  # TensorRT's needs a static length
    (dict(cache_shape=(0, 4, 8, 16), sequence_length=1), "PLUGIN_V3"),  # and fails inside Myelin on an empty cache
    (dict(cache_shape=(2, 4, 8, 0), sequence_length=1), "PLUGIN_V3"),
])
@models.forked
def test_standard_tensorscatter_nodes_build_with_plugins(kwargs, layer):
    from trt_scatter import engine

    model = tensor_scatter_model(**kwargs, impl="standard")
    loader = engine.network_from_onnx(model, plugins=True)
    _, network, _ = loader()
    assert layer in [str(network.get_layer(i).type).split(".")[-1] for i in range(network.num_layers)]
    shape = kwargs["cache_shape"]
    profile = {"past_cache": tuple(tuple(length if d == "max_length" else d for d in shape) for length in (4, 8, 16))} if "max_length" in shape else None
    assert engine.build_engine(loader, profile)[1].engine_bytes > 0


@models.forked
def test_two_standard_tensorscatters_of_one_cache_build_with_plugins():
    """Two TensorScatters that update one cache (each its own output): TensorRT's KV-cache layers cannot alias one
    input twice, so both go to the plugin."""
    from trt_scatter import engine

    model = tensor_scatter_model((2, 4, 8, 16), 1, impl="standard")
    graph = model.graph
    second = onnx.helper.make_node("TensorScatter", ["past_cache", "update", "write_indices"], ["second"], name="second", axis=-2)
    graph.node.append(second)
    graph.output.append(onnx.helper.make_tensor_value_info("second", onnx.TensorProto.FLOAT, [2, 4, 8, 16]))
    loader = engine.network_from_onnx(model, plugins=True)
    _, network, _ = loader()
    assert [str(network.get_layer(i).type).split(".")[-1] for i in range(network.num_layers)].count("PLUGIN_V3") == 2
    assert engine.build_engine(loader)[1].engine_bytes > 0


def test_an_empty_cache_that_tensorrts_kv_cache_layer_fails_on_is_named_with_the_node(tmp_path, capsys):
    """A dynamic cache is TensorRT's layer's whatever the profile: at shapes that leave it empty, Myelin's own words
    (an internal CHECK) were all the user got."""
    from trt_scatter.cli import main

    path = tmp_path / "cache.onnx"
    onnx.save(tensor_scatter_model(("batch", 4, 8, 16), 1, impl="standard"), path)
    shapes = {"past_cache": "[0,4,8,16]", "update": "[0,4,1,16]", "write_indices": "[0]"}
    bounds = [arg for name, shape in shapes.items() for flag in ("--min", "--opt", "--max") for arg in (flag, f"{name}:{shape}")]
    assert main(["build", str(path), "-o", str(tmp_path / "e.plan"), *bounds]) == 1
    error = capsys.readouterr().err
    assert error.startswith("trt-scatter build: error: TensorRT could not build cache: TensorScatter node 'TensorScatter_0': TensorRT's KV-cache "
                            "layer, which builds ONNX's TensorScatter, fails on a past_cache with no elements: give shapes whose past_cache has a "
                            "size of at least 1 in each dimension (TensorRT said: "), error
    assert error.count("\n") == 1


def test_a_standard_tensorscatter_tensorrt_cannot_build_names_the_flag_without_plugins():
    from trt_scatter import engine

    with pytest.raises(ValueError, match=r"^trt_scatter: TensorScatter node 'TensorScatter_0' is one TensorRT builds wrong or not at all "
                                         r"\(its KV-cache layer writes in linear mode\), and trt-scatter's plugins build: add --plugins \(plugins=True\)$"):
        engine.network_from_onnx(tensor_scatter_model((2, 4, 8, 16), 1, mode="circular", impl="standard"))


@pytest.mark.parametrize("kwargs, why", [
    (dict(cache_shape=(0, 4, 8, 16), sequence_length=1), "its KV-cache layer fails on a cache with no elements"),
    (dict(cache_shape=(2, 8, 16), sequence_length=2, axis=1), "its KV-cache layer takes a 4-D cache"),
    (dict(cache_shape=(2, 4, 8, 16), sequence_length=1, axis=1), "its KV-cache layer writes axis -2"),
    (dict(cache_shape=(2, 4, 8, 16), sequence_length=1, dtype=np.int32), "its KV-cache layer takes float32, float16, bfloat16"),
    (dict(cache_shape=(2, 4, "max_length", 16), sequence_length=1), "its KV-cache layer needs a static length on the axis"),
])
def test_why_tensorrt_cannot_build_a_standard_tensorscatter_is_said(kwargs, why):
    """An empty static cache said only that TensorRT builds it wrong or not at all."""
    from trt_scatter import engine

    with pytest.raises(ValueError, match=rf"is one TensorRT builds wrong or not at all \({re.escape(why)}\), and trt-scatter's plugins build"):
        engine.network_from_onnx(tensor_scatter_model(**kwargs, impl="standard"))


def test_build_cli_builds_a_standard_circular_tensorscatter_with_plugins(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "circular.onnx"
    onnx.save(tensor_scatter_model((2, 5, 3), 2, axis=1, mode="circular", dtype=np.int32, impl="standard"), path)
    result = subprocess.run([sys.executable, "-m", "trt_scatter.cli", "build", str(path), "--plugins", "-o", str(tmp_path / "e.plan")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert (tmp_path / "e.plan").stat().st_size > 0


# ---- full TensorRT + GPU: run engines and compare with the oracle -----------------------------------


@needs_gpu
@needs_full_tensorrt
@pytest.mark.parametrize("inplace", [0, 1])
@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_engine_output_matches_oracle(mode, inplace):
    rng = np.random.default_rng(0)
    cache, update = rng.standard_normal((3, 2, 8, 4)).astype(np.float16), rng.standard_normal((3, 2, 2, 4)).astype(np.float16)
    indices = np.array([6, 0, 3 if mode == "linear" else 13])
    model = tensor_scatter_model(cache.shape, 2, mode=mode, dtype=np.float16, inplace=bool(inplace))
    outputs = models.run(model, {"past_cache": cache, "update": update, "write_indices": indices}, aliasing=bool(inplace))
    np.testing.assert_array_equal(outputs["output"], oracle.tensor_scatter(cache, update, indices, mode=mode))
