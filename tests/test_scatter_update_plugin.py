"""The ScatterUpdate plugin: build-phase methods called directly, enqueue on host memory, real engine builds.

Engines are built on the CPU by TensorRT-RTX's ONNX parser, which calls the plugin's
build-phase methods for real; running engines needs full TensorRT and a GPU (skipped here).
"""

import logging

import ml_dtypes
import numpy as np
import pytest
from conftest import needs_full_tensorrt, needs_gpu
from hypothesis import given, settings
from hypothesis import strategies as st

import plugin_models as models
from trt_scatter import oracle, plugins
from trt_scatter.backend import tensorrt
from trt_scatter.oracle import ScatterInputError
from trt_scatter.plugins.base import PluginError
from trt_scatter.ops import SCATTER_UPDATE
from trt_scatter.plugins.base import plugin_class

ScatterUpdatePlugin = plugin_class(SCATTER_UPDATE)

trt = tensorrt()
# Plugin objects for the many-example tests, made at import (see plugin_models.forked for why few are made later).
PLUGINS = {inplace: ScatterUpdatePlugin(inplace) for inplace in (False, True)}
BUILDABLE = ["float32", "float16", "bfloat16", "int8", "int32", "int64", "bool"]  # uint8: see the SliceScatter tests


@st.composite
def scatter_updates(draw, max_rank=3):
    """Valid ScatterUpdate shapes: data shape, indices shape, updates shape, axis (in [-r, r-1])."""
    rank = draw(st.integers(1, max_rank))
    data_shape = draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank))
    axis = draw(st.integers(-rank, rank - 1))
    indices_shape = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    if np.prod(indices_shape) > 0:
        data_shape[axis] = max(data_shape[axis], 1)  # somewhere for the indices to point
    normalized = axis % rank
    updates_shape = tuple(data_shape[:normalized]) + indices_shape + tuple(data_shape[normalized + 1 :])
    return tuple(data_shape), indices_shape, updates_shape, axis


# ---- build-time shape checks ---------------------------------------------------------------------


@given(scatter_updates(), st.sampled_from([(), (1,), (-1,)]), st.data())
def test_check_shapes_accepts_what_the_oracle_accepts(case, axis_shape, data):
    data_shape, indices_shape, updates_shape, _ = case
    hide = lambda shape: tuple(-1 if data.draw(st.booleans()) else dim for dim in shape)
    ScatterUpdatePlugin.check_shapes([data_shape, indices_shape, updates_shape, axis_shape])
    ScatterUpdatePlugin.check_shapes([hide(data_shape), hide(indices_shape), hide(updates_shape), axis_shape])


@given(scatter_updates(), st.integers(0, 4), st.integers(1, 3))
def test_check_shapes_rejection_agrees_with_the_oracle(case, position, grow):
    """Grow an updates dimension: if the plugin rejects at build time, the oracle rejects those shapes for every axis."""
    data_shape, indices_shape, updates_shape, _ = case
    updates_shape = list(updates_shape) or [0]
    updates_shape[position % len(updates_shape)] += grow
    try:
        ScatterUpdatePlugin.check_shapes([data_shape, indices_shape, tuple(updates_shape), ()])
    except ScatterInputError as err:
        assert err.op == "scatter_update" and err.input_name in ("updates", "indices")  # indices: an axis fits, its dimension is empty
        for axis in range(-len(data_shape), len(data_shape)):
            with pytest.raises(ScatterInputError):
                oracle.check_scatter_update(data_shape, indices_shape, tuple(updates_shape), axis)


@pytest.mark.parametrize(
    "shapes, input_name, rule",
    [
        ([(4, 5), (2,), (2, 6), ()], "updates", "for some axis of 'data'"),
        ([(4, 5), (2,), (2, 5, 1), ()], "updates", "for some axis of 'data'"),
        ([(4,), (2,), (3,), ()], "updates", "must have shape (2,)"),  # rank 1: the one axis there is
        ([(4, 5), (2,), (2, 5), (2,)], "axis", "must be a scalar or a 1-D tensor with one element"),
        ([(4, 5), (2,), (2, 5), (1, 1)], "axis", "must be a scalar or a 1-D tensor with one element"),
        ([(), (2,), (2,), ()], "data", "must have rank >= 1"),
    ],
)
def test_check_shapes_names_input_and_rule(shapes, input_name, rule):
    with pytest.raises(ScatterInputError) as caught:
        ScatterUpdatePlugin.check_shapes(shapes)
    assert caught.value.input_name == input_name
    assert rule in str(caught.value) and str(caught.value).startswith("scatter_update: ")


def test_configure_plugin_and_on_shape_change_check_shapes():
    plugin = ScatterUpdatePlugin()
    good = [((-1, 5), "float32"), ((2,), "int32"), ((2, 5), "float32"), ((), "int64")]
    plugin.configure_plugin([models.dynamic_desc(s, t) for s, t in good], [])
    bad = [((4, 5), "float32"), ((2,), "int32"), ((2, 6), "float32"), ((), "int64")]
    with pytest.raises(ScatterInputError, match="'updates' must have shape"):
        plugin.configure_plugin([models.dynamic_desc(s, t) for s, t in bad], [])
    with pytest.raises(ScatterInputError, match="'updates' must have shape"):
        plugin.on_shape_change([models.tensor_desc(s, t) for s, t in bad], [])
    with pytest.raises(PluginError, match=r"takes inputs \(data, indices, updates, axis\), got 5"):
        plugin.configure_plugin([models.dynamic_desc(s, t) for s, t in good + good[:1]], [])


# ---- formats and types ------------------------------------------------------------------------

I32, I64, F32, BF16, BOOL = trt.DataType.INT32, trt.DataType.INT64, trt.DataType.FLOAT, trt.DataType.BF16, trt.DataType.BOOL


@pytest.mark.parametrize(
    "types, pos, expected",
    [
        ([BOOL], 0, True),
        ([trt.DataType.INT4], 0, False),
        ([BOOL, I32], 1, True),
        ([BOOL, I64], 1, True),
        ([BOOL, F32], 1, False),
        ([BOOL, I32, BOOL], 2, True),
        ([BF16, I32, F32], 2, False),
        ([BF16, I32, BF16, I64], 3, True),  # axis need not share indices' type
        ([BF16, I64, BF16, I32], 3, True),
        ([BF16, I64, BF16, BF16], 3, False),
        ([BF16, I64, BF16, I32, BF16], 4, True),
        ([BF16, I64, BF16, I32, F32], 4, False),
    ],
)
def test_supports_format_combination(types, pos, expected):
    in_out = [models.dynamic_desc((2,), t) for t in types]
    assert ScatterUpdatePlugin().supports_format_combination(pos, in_out, 4) is expected


def test_supports_only_linear():
    in_out = [models.dynamic_desc((2,), F32), models.dynamic_desc((2,), I32, trt.TensorFormat.CHW4)]
    assert not ScatterUpdatePlugin().supports_format_combination(1, in_out, 4)


def test_output_type_and_workspace():
    plugin = ScatterUpdatePlugin()
    assert plugin.get_output_data_types([BOOL, I32, BOOL, I64]) == [BOOL]
    assert plugin.get_workspace_size([], []) == 4


@pytest.mark.parametrize("inplace", [0, 1])
def test_fields_round_trip_through_the_creator(inplace):
    creator = plugins.register()["ScatterUpdate"]
    kept = [trt.PluginField("inplace", np.array([inplace], np.int64), trt.PluginFieldType.INT64)]  # the collection does not own it
    built = creator.create_plugin("u", trt.PluginFieldCollection(kept), trt.TensorRTPhase.BUILD)
    runtime = creator.create_plugin("u", built.get_fields_to_serialize(), trt.TensorRTPhase.RUNTIME)
    assert isinstance(runtime, ScatterUpdatePlugin) and runtime.phase == trt.TensorRTPhase.RUNTIME
    assert [f.data.tolist() for f in runtime.get_fields_to_serialize()] == [[inplace]]
    assert runtime.get_aliased_input(0) == built.get_aliased_input(0) == (0 if inplace else -1)
    assert runtime.clone().inplace == bool(inplace)


# ---- enqueue (host stand-in for the kernels) ------------------------------------------------------


@given(scatter_updates(), st.sampled_from(["float32", "float16", "bfloat16", "int8", "int32", "int64", "bool"]),
       st.sampled_from(["int32", "int64"]), st.sampled_from(["int32", "int64"]), st.sampled_from([(), (1,)]),
       st.booleans(), st.integers(0, 2**32 - 1))
def test_enqueue_passes_what_the_kernel_needs(case, dtype, index_dtype, axis_dtype, axis_shape, inplace, seed):
    data_shape, indices_shape, updates_shape, axis = case
    rng = np.random.default_rng(seed)
    tensor, updates = models.random_array(rng, data_shape, dtype), models.random_array(rng, updates_shape, dtype)
    indices = rng.integers(0, max(data_shape[axis], 1), indices_shape).astype(index_dtype)
    arrays = [tensor.copy(), indices, updates, np.full(axis_shape, axis, axis_dtype)]
    expected = oracle.scatter_update(tensor, indices, updates, axis)
    with pytest.MonkeyPatch.context() as monkeypatch:
        kernels = models.use_host_kernels(monkeypatch)
        output = models.enqueue(PLUGINS[inplace], arrays, output=arrays[0] if inplace else None)
    np.testing.assert_array_equal(output.view(np.uint8), expected.view(np.uint8))
    assert [(name, launch["data"] == 0) for name, launch in kernels.launches] == ([("scatter_update", inplace)] if expected.size else [])


@pytest.fixture(scope="module")
def cpu_kernels():
    with models.cpu_kernels() as kernels:
        yield kernels


@settings(max_examples=40)
@given(scatter_updates(), st.sampled_from(["float32", "bfloat16", "int8", "int64", "bool"]),
       st.sampled_from(["int32", "int64"]), st.sampled_from([(), (1,)]), st.booleans(), st.integers(0, 2**32 - 1))
def test_enqueue_through_the_real_kernels_on_the_cpu(cpu_kernels, case, dtype, index_dtype, axis_shape, inplace, seed):
    data_shape, indices_shape, updates_shape, axis = case
    rng = np.random.default_rng(seed)
    tensor, updates = models.random_array(rng, data_shape, dtype), models.random_array(rng, updates_shape, dtype)
    indices = rng.integers(0, max(data_shape[axis], 1), indices_shape).astype(index_dtype)
    arrays = [tensor.copy(), indices, updates, np.full(axis_shape, axis, "int32")]
    output = models.enqueue(PLUGINS[inplace], arrays, output=arrays[0] if inplace else None)
    expected = oracle.scatter_update(tensor, indices, updates, axis)
    np.testing.assert_array_equal(output.view(np.uint8), expected.view(np.uint8))


def test_real_kernels_count_indices_out_of_range(cpu_kernels):
    arrays = [np.zeros((4, 5), np.float16), np.array([1, 4, -1], np.int64), np.ones((3, 5), np.float16), np.array(0, np.int32)]
    with pytest.raises(PluginError, match=r"ScatterUpdate: 2 'indices' value\(s\) outside"):
        models.enqueue(ScatterUpdatePlugin(), arrays)


def test_on_shape_change_loads_the_kernel_before_enqueue(monkeypatch):
    kernels = models.use_host_kernels(monkeypatch)
    shapes = [((4, 5), "int8"), ((3,), "int64"), ((3, 5), "int8"), ((), "int32")]
    ScatterUpdatePlugin().on_shape_change([models.tensor_desc(shape, dtype) for shape, dtype in shapes], [])
    assert kernels.prepared == [("scatter_update", 1, 8)] and kernels.launches == []


def test_enqueue_in_debug_mode_raises_on_counted_errors(monkeypatch):
    kernels = models.use_host_kernels(monkeypatch, debug=True)
    arrays = [np.zeros((4, 5), np.float16), np.array([1, 4], np.int64), np.ones((2, 5), np.float16), np.array(0, np.int32)]
    with pytest.raises(PluginError, match=r"ScatterUpdate: 1 'indices' value\(s\) outside \[0, s-1\] .*\(4, 5\)"):
        models.enqueue(ScatterUpdatePlugin(), arrays)
    assert kernels.launches[0][1]["error_flag"] != 0
    kernels.debug = False
    models.enqueue(ScatterUpdatePlugin(), arrays)  # not counted (nobody would read it), not raised
    assert len(kernels.launches) == 2 and kernels.launches[1][1]["error_flag"] == 0


# ---- real engine builds through TensorRT-RTX's ONNX parser -----------------------------------------


@pytest.fixture
def calls(monkeypatch):
    return models.record_calls(monkeypatch)


@pytest.mark.parametrize("index_dtype, axis_dtype", [("int32", "int32"), ("int64", "int64"), ("int32", "int64")])
@pytest.mark.parametrize("dtype", BUILDABLE)
@models.forked
def test_engine_builds_for_element_and_index_types(calls, dtype, index_dtype, axis_dtype):
    model = models.scatter_update_model([4, 5], [[3], [0]], [4, 2, 1], 1, dtype=dtype, index_dtype=index_dtype, axis_dtype=axis_dtype)
    _, plan = models.build(model)
    assert plan is not None and plan.nbytes > 0
    element = models.trt_type(np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else dtype)
    asked = calls.arguments("supports_format_combination")
    last = max(asked, key=lambda args: args[0])[1]
    assert last == (element, models.trt_type(index_dtype), element, models.trt_type(axis_dtype), element)
    assert calls.format_answers_are_linear_only()
    assert calls.arguments("configure_plugin")[0][0] == ((4, 5), (2, 1), (4, 2, 1), ())


@models.forked
def test_engine_build_call_sequence(calls):
    _, plan = models.build(models.scatter_update_model([4, 5], [2, 0], [2, 5], [-2]))
    assert plan is not None and plan.nbytes > 0
    methods = calls.methods("ScatterUpdate")
    first = {method: methods.index(method) for method in reversed(methods)}
    order = ["get_output_data_types", "get_output_shapes", "get_aliased_input", "supports_format_combination",
             "configure_plugin", "get_workspace_size", "get_fields_to_serialize"]
    assert [first[method] for method in order] == sorted(first[method] for method in order)
    assert calls.enqueued_only_while_timing("ScatterUpdate")  # no GPU: none; full TensorRT: timing, in BUILD


@models.forked
def test_engine_builds_with_dynamic_shapes(calls):
    model = models.scatter_update_model(["n", 5], [1, 3], ["n", 2], 1)
    _, plan = models.build(model, profile={"data": ((1, 5), (2, 5), (6, 5)), "updates": ((1, 2), (2, 2), (6, 2))})
    assert plan is not None and plan.nbytes > 0
    dims, bounds = calls.arguments("configure_plugin")[0]
    assert dims[0] == (-1, 5) and bounds[0] == ((1, 5), (6, 5))


@models.forked
def test_bad_shapes_fail_the_parse_with_the_oracle_message(capfd):
    with pytest.raises(AssertionError, match="ONNX parser failed"):
        models.build(models.scatter_update_model([4, 5], [1, 3], [2, 6], 0))
    assert "scatter_update: 'updates' must have shape data.shape[:axis] + indices.shape" in capfd.readouterr().err


@models.forked
def test_in_place_needs_the_aliasing_preview_feature(calls, caplog):
    model = models.scatter_update_model([4, 5], [1, 3], [2, 5], 0, inplace=1)
    _, plan = models.build(model, aliasing=True)
    assert plan is not None and plan.nbytes > 0 and 0 in calls.results("get_aliased_input")
    _, plan = models.build(model, aliasing=False)
    assert plan is None
    assert any("ALIASED_PLUGIN_IO_10_03" in message for message in models.trt_messages(caplog, logging.ERROR))


@models.forked
def test_both_plugins_in_one_engine_keep_their_fields(calls):
    """SliceScatter (in place) feeding ScatterUpdate (copy): the plan holds both, each serializes its own fields."""
    model = models.chained_model()
    _, plan = models.build(model, aliasing=True)
    assert plan is not None and b"SliceScatter" in bytes(plan) and b"ScatterUpdate" in bytes(plan)
    creators = plugins.register()
    for name, inplace in (("SliceScatter", True), ("ScatterUpdate", False)):
        serialized = calls.results("get_fields_to_serialize", name)
        assert serialized
        for fields in serialized:
            assert creators[name].create_plugin(name, fields.collection(), trt.TensorRTPhase.RUNTIME).inplace is inplace


# ---- full TensorRT + GPU: run engines and compare with the oracle -----------------------------------


@needs_gpu
@needs_full_tensorrt
@pytest.mark.parametrize("inplace", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "bool"])
def test_engine_output_matches_oracle(dtype, inplace):
    rng = np.random.default_rng(0)
    data = rng.integers(0, 2, (5, 4, 3)).astype(dtype)
    updates = rng.integers(0, 2, (5, 2, 2, 3)).astype(dtype)
    indices = [[3, 0], [1, 2]]
    model = models.scatter_update_model([5, 4, 3], indices, [5, 2, 2, 3], -2, dtype=dtype, inplace=inplace)
    outputs = models.run(model, {"data": data, "updates": updates}, aliasing=bool(inplace))
    np.testing.assert_array_equal(outputs["output"], oracle.scatter_update(data, np.array(indices), updates, -2))
