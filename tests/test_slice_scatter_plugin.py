"""The SliceScatter plugin: build-phase methods called directly, enqueue on host memory, real engine builds.

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
from trt_scatter.plugins.base import ELEMENT_TYPES, PluginError, fields_to_keep
from trt_scatter.ops import SLICE_SCATTER
from trt_scatter.plugins.base import plugin_class

SliceScatterPlugin = plugin_class(SLICE_SCATTER)

trt = tensorrt()
# Plugin objects for the many-example tests, made at import (see plugin_models.forked for why few are made later).
PLUGINS = {inplace: SliceScatterPlugin(inplace) for inplace in (False, True)}
DTYPES = ["float32", "float16", "bfloat16", "int8", "int32", "int64", "bool", "uint8"]
BOUND = st.one_of(st.integers(-7, 7), st.sampled_from([2**31 - 1, -(2**31), 2**63 - 1, -(2**63)]))


@st.composite
def slice_scatters(draw, max_rank=3):
    """Valid SliceScatter inputs: data shape, updates shape, start, stop, step, axes (or None)."""
    rank = draw(st.integers(1, max_rank))
    data_shape = tuple(draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))
    if draw(st.booleans()):
        count, axes = draw(st.integers(0, rank)), None
        sliced = list(range(count))
    else:
        sliced = draw(st.permutations(range(rank)))[: draw(st.integers(0, rank))]
        count = len(sliced)
        axes = [axis - rank if draw(st.booleans()) else axis for axis in sliced]
    start = draw(st.lists(BOUND, min_size=count, max_size=count))
    stop = draw(st.lists(BOUND, min_size=count, max_size=count))
    step = draw(st.lists(st.integers(-3, 3).filter(bool), min_size=count, max_size=count))
    updates_shape = list(data_shape)
    for axis, begin, end, stride in zip(sliced, start, stop, step):
        updates_shape[axis] = oracle.slice_geometry(begin, end, stride, data_shape[axis])[1]
    return data_shape, tuple(updates_shape), start, stop, step, axes


def param_shapes(start, axes):
    return [(len(start),)] * 3 + ([] if axes is None else [(len(axes),)])


# ---- build-time shape checks (the oracle's rules on what shapes decide) ------------------------


@given(slice_scatters(), st.data())
def test_check_shapes_accepts_what_the_oracle_accepts(case, data):
    data_shape, updates_shape, start, stop, step, axes = case
    hide = lambda shape: tuple(-1 if data.draw(st.booleans()) else dim for dim in shape)
    shapes = [data_shape, updates_shape] + param_shapes(start, axes)
    SliceScatterPlugin.check_shapes(shapes)
    SliceScatterPlugin.check_shapes([hide(shape) for shape in shapes])


@given(slice_scatters(), st.integers(0, 2), st.integers(1, 3))
def test_check_shapes_rejection_agrees_with_the_oracle(case, axis, grow):
    """Grow an updates dimension: if the plugin rejects at build time, the oracle rejects those shapes for the drawn values too."""
    data_shape, updates_shape, start, stop, step, axes = case
    updates_shape = list(updates_shape)
    updates_shape[axis % len(updates_shape)] += grow
    shapes = [data_shape, tuple(updates_shape)] + param_shapes(start, axes)
    try:
        SliceScatterPlugin.check_shapes(shapes)
    except ScatterInputError as err:
        assert err.op == "slice_scatter" and err.input_name == "updates"
        with pytest.raises(ScatterInputError):
            oracle.check_slice_scatter(data_shape, tuple(updates_shape), start, stop, step, axes)


@pytest.mark.parametrize(
    "shapes, input_name, rule",
    [
        ([(4, 5), (4, 6), (1,), (1,), (1,)], "updates", "must have shape (?, 5)"),
        ([(4, 5), (4, 5, 1), (1,), (1,), (1,)], "updates", "must have shape (?, 5)"),
        ([(4, 5), (4, 5), (1, 1), (1,), (1,)], "start", "must be a 1-D tensor (got shape (1, 1))"),
        ([(4, 5), (4, 5), (1,), (1,), ()], "step", "must be a 1-D tensor (got shape ())"),
        ([(4, 5), (4, 5), (1,), (2,), (1,)], "start/stop/step", "must have equal lengths"),
        ([(4, 5), (4, 5), (1,), (1,), (1,), (2,)], "start/stop/step/axes", "must have equal lengths"),
        ([(4, 5), (4, 5), (3,), (3,), (3,)], "start", "must have at most 2 entries for 'data' of rank 2 where 'axes' is not given"),
        ([(4, 5), (4, 5), (3,), (3,), (3,), (3,)], "axes", "must have at most 2 entries"),
        ([(), (), (0,), (0,), (0,)], "data", "must have rank >= 1"),
    ],
)
def test_check_shapes_names_input_and_rule(shapes, input_name, rule):
    with pytest.raises(ScatterInputError) as caught:
        SliceScatterPlugin.check_shapes(shapes)
    assert caught.value.input_name == input_name
    assert rule in str(caught.value) and str(caught.value).startswith("slice_scatter: ")


def test_configure_plugin_and_on_shape_change_check_shapes():
    plugin = SliceScatterPlugin()
    good = [((-1, 5), "float32"), ((-1, 5), "float32"), ((1,), "int64"), ((1,), "int64"), ((1,), "int64")]
    bounds = {"min": (1, 5), "max": (8, 5)}
    plugin.configure_plugin([models.dynamic_desc(s, t, **(bounds if i < 2 else {})) for i, (s, t) in enumerate(good)], [])
    # the profile's max: updates of 6 columns into data of 5 (TensorRT would build it, and the plugin write nothing there)
    wide = [models.dynamic_desc(s, t, **({"min": (1, 5), "max": (8, 6 if i else 5)} if i < 2 else {})) for i, (s, t) in enumerate([((-1, 5), "float32"), ((-1, -1), "float32"), *good[2:]])]
    with pytest.raises(ScatterInputError, match="'updates' must have shape"):
        plugin.configure_plugin(wide, [])
    bad = [((4, 5), "float32"), ((2, 6), "float32"), ((1,), "int64"), ((1,), "int64"), ((1,), "int64")]
    with pytest.raises(ScatterInputError, match="'updates' must have shape"):
        plugin.configure_plugin([models.dynamic_desc(s, t) for s, t in bad], [])
    with pytest.raises(ScatterInputError, match="'updates' must have shape"):
        plugin.on_shape_change([models.tensor_desc(s, t) for s, t in bad], [])
    with pytest.raises(PluginError, match=r"takes inputs \(data, updates, start, stop, step\[, axes\]\), got 3"):
        plugin.configure_plugin([models.dynamic_desc(s, t) for s, t in good[:3]], [])


# ---- formats and types ------------------------------------------------------------------------


def _accepts(types, pos, format=None, num_inputs=5):
    in_out = [models.dynamic_desc((2,), t, format if i == pos else None) for i, t in enumerate(types)]
    return SliceScatterPlugin().supports_format_combination(pos, in_out, num_inputs)


I32, I64, F32, F16 = trt.DataType.INT32, trt.DataType.INT64, trt.DataType.FLOAT, trt.DataType.HALF


@pytest.mark.parametrize(
    "types, pos, expected",
    [
        ([F16], 0, True),
        ([trt.DataType.INT4], 0, False),
        ([trt.DataType.FP4], 0, False),
        ([I64], 0, True),
        ([F16, F16], 1, True),
        ([F16, F32], 1, False),
        ([F16, F16, I32], 2, True),
        ([F16, F16, F32], 2, False),
        ([F16, F16, I32, I32], 3, True),
        ([F16, F16, I32, I64], 3, False),
        ([F16, F16, I64, I64, I64], 4, True),
        ([F16, F16, I64, I64, I32], 4, False),
        ([F16, F16, I32, I32, I32, F16], 5, True),  # without axes, pos 5 is the output
        ([F16, F16, I32, I32, I32, F32], 5, False),
    ],
)
def test_supports_format_combination(types, pos, expected):
    assert _accepts(types, pos) is expected


def test_supports_format_combination_with_axes_and_formats():
    six = [F16, F16, I32, I32, I32, I64]  # axes may differ from start/stop/step
    assert _accepts(six, 5, num_inputs=6) and not _accepts(six[:5] + [F16], 5, num_inputs=6)
    assert _accepts(six + [F16], 6, num_inputs=6) and not _accepts(six + [I64], 6, num_inputs=6)
    assert not _accepts([F16], 0, format=trt.TensorFormat.CHW32)
    assert not _accepts([F16, F16, I32], 2, format=trt.TensorFormat.HWC8)


def test_supports_format_combination_keeps_the_types_the_network_declared():
    """Once the layer is added, only the declared types are accepted: no weakly typed network runs this data movement in another type."""
    plugin = SliceScatterPlugin()
    plugin.get_output_data_types([F16, F16, I32, I32, I32])
    declared = [models.dynamic_desc((2,), t) for t in (F16, F16, I32, I32, I32, F16)]
    assert all(plugin.supports_format_combination(pos, declared, 5) for pos in range(6))
    other = [models.dynamic_desc((2,), t) for t in (F32, F32, I64, I64, I64, F32)]  # consistent, but not what was declared
    for pos in range(6):
        assert not plugin.supports_format_combination(pos, other, 5), pos
        assert SliceScatterPlugin().supports_format_combination(pos, other, 5), pos  # what an undeclared plugin accepts


def test_element_types_are_every_byte_sized_type():
    sizes = {dtype: dtype.itemsize for dtype in trt.DataType.__members__.values()}
    assert set(ELEMENT_TYPES) == {dtype for dtype, size in sizes.items() if size in (1, 2, 4, 8)}
    assert {trt.DataType.FLOAT, trt.DataType.HALF, trt.DataType.BF16, trt.DataType.INT8, trt.DataType.INT32,
            trt.DataType.INT64, trt.DataType.BOOL, trt.DataType.UINT8, trt.DataType.FP8} <= set(ELEMENT_TYPES)


def test_output_type_and_workspace():
    plugin = SliceScatterPlugin()
    assert plugin.get_output_data_types([trt.DataType.BF16, trt.DataType.BF16, I32, I32, I32]) == [trt.DataType.BF16]
    assert plugin.get_workspace_size([], []) == 4  # the kernels' error counter
    assert plugin.get_valid_tactics() == []


# ---- fields, clone, in-place --------------------------------------------------------------------


def _fields(plugin):
    return {field.name: field.data.tolist() for field in plugin.get_fields_to_serialize()}


@pytest.mark.parametrize("inplace", [0, 1])
def test_fields_round_trip_through_the_creator(inplace):
    creator = plugins.register()["SliceScatter"]
    kept = fields_to_keep({"inplace": inplace})  # a collection does not own its fields' arrays
    built = creator.create_plugin("s", trt.PluginFieldCollection(kept), trt.TensorRTPhase.BUILD)
    assert _fields(built) == {"inplace": [inplace]}
    assert built.get_aliased_input(0) == (0 if inplace else -1)
    runtime = creator.create_plugin("s", built.get_fields_to_serialize(), trt.TensorRTPhase.RUNTIME)
    assert isinstance(runtime, SliceScatterPlugin) and runtime.phase == trt.TensorRTPhase.RUNTIME
    assert _fields(runtime) == _fields(built) and runtime.get_aliased_input(0) == built.get_aliased_input(0)


@pytest.mark.parametrize("inplace", [0, 1])
def test_serialized_fields_stay_valid_while_the_plugin_lives(inplace):
    """A PluginFieldCollection does not own its arrays; freed ones would be overwritten by the next allocations."""
    plugin = SliceScatterPlugin(inplace)
    fields = plugin.get_fields_to_serialize()
    overwrite = [np.full(1, 9, np.int32) for _ in range(2000)]
    assert [(field.name, field.data.tolist()) for field in fields] == [("inplace", [inplace])] and overwrite


def test_clone_and_attach_to_context_copy_fields():
    plugin = SliceScatterPlugin(inplace=True, phase=trt.TensorRTPhase.BUILD)
    for copy in (plugin.clone(), plugin.attach_to_context(None)):
        assert copy is not plugin and type(copy) is SliceScatterPlugin
        assert copy.inplace and copy.phase == trt.TensorRTPhase.BUILD and copy.get_aliased_input(0) == 0
        assert (copy.plugin_name, copy.plugin_version, copy.plugin_namespace, copy.num_outputs) == ("SliceScatter", "1", "", 1)
    assert plugin.get_capability_interface(trt.PluginCapabilityType.BUILD) is plugin


# ---- enqueue (host stand-in for the kernels) ------------------------------------------------------


@given(slice_scatters(), st.sampled_from(["float32", "float16", "bfloat16", "int8", "int64", "bool"]),
       st.sampled_from(["int32", "int64"]), st.sampled_from(["int32", "int64"]), st.booleans(), st.integers(0, 2**32 - 1))
def test_enqueue_passes_what_the_kernel_needs(case, dtype, param_dtype, axes_dtype, inplace, seed):
    data_shape, updates_shape, start, stop, step, axes = case
    limits = np.iinfo(param_dtype)  # clamping to int32 keeps the geometry: dims are tiny
    start, stop = ([min(max(v, limits.min), limits.max) for v in values] for values in (start, stop))
    rng = np.random.default_rng(seed)
    tensor, updates = models.random_array(rng, data_shape, dtype), models.random_array(rng, updates_shape, dtype)
    arrays = [tensor.copy(), updates] + [np.array(v, param_dtype) for v in (start, stop, step)]
    if axes is not None:
        arrays.append(np.array(axes, axes_dtype))
    expected = oracle.slice_scatter(tensor, updates, start, stop, step, axes)
    with pytest.MonkeyPatch.context() as monkeypatch:
        kernels = models.use_host_kernels(monkeypatch)
        output = models.enqueue(PLUGINS[inplace], arrays, output=arrays[0] if inplace else None)
    np.testing.assert_array_equal(output.view(np.uint8), expected.view(np.uint8))
    assert [(name, launch["data"] == 0) for name, launch in kernels.launches] == ([("slice_scatter", inplace)] if expected.size else [])


@pytest.fixture(scope="module")
def cpu_kernels():
    with models.cpu_kernels() as kernels:
        yield kernels


@settings(max_examples=40)
@given(slice_scatters(), st.sampled_from(["float32", "float16", "int8", "int64", "bool"]),
       st.sampled_from(["int32", "int64"]), st.booleans(), st.integers(0, 2**32 - 1))
def test_enqueue_through_the_real_kernels_on_the_cpu(cpu_kernels, case, dtype, param_dtype, inplace, seed):
    data_shape, updates_shape, start, stop, step, axes = case
    limits = np.iinfo(param_dtype)
    start, stop = ([min(max(v, limits.min), limits.max) for v in values] for values in (start, stop))
    rng = np.random.default_rng(seed)
    tensor, updates = models.random_array(rng, data_shape, dtype), models.random_array(rng, updates_shape, dtype)
    arrays = [tensor.copy(), updates] + [np.array(v, param_dtype) for v in (start, stop, step)]
    if axes is not None:
        arrays.append(np.array(axes, "int64"))
    output = models.enqueue(PLUGINS[inplace], arrays, output=arrays[0] if inplace else None)
    expected = oracle.slice_scatter(tensor, updates, start, stop, step, axes)
    np.testing.assert_array_equal(output.view(np.uint8), expected.view(np.uint8))


def test_real_kernels_count_a_slice_that_does_not_fit(cpu_kernels):
    data, updates = np.zeros((4, 5), np.float32), np.ones((3, 5), np.float32)
    params = [np.array([0], np.int32), np.array([4], np.int32), np.array([2], np.int32)]
    with pytest.raises(PluginError, match=r"SliceScatter: .*nothing was written \(error count 1\)"):
        models.enqueue(SliceScatterPlugin(), [data, updates] + params)


def test_debug_count_is_not_read_while_the_stream_is_captured(cpu_kernels):
    """In a CUDA-graph capture the launch has not run and synchronizing is illegal: no read, no error."""
    data, updates = np.zeros((4, 5), np.float32), np.ones((3, 5), np.float32)
    params = [np.array([0], np.int32), np.array([4], np.int32), np.array([2], np.int32)]
    cpu_kernels.device.calls.clear()  # the device is shared by the module's tests
    cpu_kernels.device.capturing = True
    try:
        models.enqueue(SliceScatterPlugin(), [data, updates] + params)
    finally:
        cpu_kernels.device.capturing = False
    assert [call[0] for call in cpu_kernels.device.calls] == ["memset", "memcpy", "launch"]  # no sync
    with pytest.raises(PluginError, match=r"error count 1"):
        models.enqueue(SliceScatterPlugin(), [data, updates] + params)


def test_on_shape_change_loads_the_kernel_before_enqueue(monkeypatch):
    """Compiling in the first enqueue could land inside a user's CUDA-graph capture: on_shape_change does it."""
    kernels = models.use_host_kernels(monkeypatch)
    plugin = SliceScatterPlugin()
    shapes = [((4, 5), "float16"), ((2, 5), "float16")] + [((1,), "int32")] * 3
    plugin.on_shape_change([models.tensor_desc(shape, dtype) for shape, dtype in shapes], [])
    assert kernels.prepared == [("slice_scatter", 2, None)] and kernels.launches == []


def test_enqueue_in_debug_mode_raises_on_counted_errors(monkeypatch):
    kernels = models.use_host_kernels(monkeypatch, debug=True)
    data, updates = np.zeros((4, 5), np.float32), np.ones((3, 5), np.float32)  # start:stop:step selects 2 rows, not 3
    params = [np.array([0], np.int64), np.array([4], np.int64), np.array([2], np.int64)]
    with pytest.raises(PluginError, match=r"SliceScatter: .*updates' shape \(3, 5\).*nothing was written \(error count 1\)"):
        models.enqueue(SliceScatterPlugin(), [data, updates] + params)
    assert len(kernels.launches) == 1 and kernels.launches[0][1]["error_flag"] != 0
    kernels.debug = False
    models.enqueue(SliceScatterPlugin(), [data, updates] + params)  # not counted (nobody would read it), not raised
    assert kernels.launches[1][1]["error_flag"] == 0


def test_enqueue_uses_the_shapes_of_the_last_shape_change(monkeypatch):
    """TensorRT calls on_shape_change before an enqueue with new shapes, so enqueue reuses what was
    read then (reading descriptors is most of its Python time); without one it reads them itself."""
    kernels = models.use_host_kernels(monkeypatch)
    plugin = SliceScatterPlugin()

    def arrays(rows):
        data, updates = np.arange(rows * 5, dtype=np.float32).reshape(rows, 5), -np.ones((rows // 2, 5), np.float32)
        return [data, updates] + [np.array([v], np.int64) for v in (0, rows, 2)]

    for rows, shape_change in ((6, False), (4, True), (8, True)):
        inputs = arrays(rows)
        output = models.enqueue(plugin, inputs, shape_change=shape_change)
        np.testing.assert_array_equal(output, oracle.slice_scatter(*inputs))
        assert kernels.launches[-1][1]["data_shape"] == (rows, 5)
    bad = arrays(4)[:2] + [np.zeros((1, 1), np.int64)] * 3  # 2-D start/stop/step: refused
    with pytest.raises(oracle.ScatterInputError):
        plugin.on_shape_change([models.tensor_desc(a.shape, a.dtype) for a in bad], [])
    inputs = arrays(6)
    models.enqueue(plugin, inputs, shape_change=False)  # nothing left of the (8, 5) shapes: reads these
    assert kernels.launches[-1][1]["data_shape"] == (6, 5)


def test_enqueue_skips_empty_outputs(monkeypatch):
    kernels = models.use_host_kernels(monkeypatch, debug=True)
    data = np.zeros((0, 5), np.float32)
    params = [np.array([0], np.int64), np.array([4], np.int64), np.array([2], np.int64)]
    assert models.enqueue(SliceScatterPlugin(), [data, data] + params).shape == (0, 5)
    assert kernels.launches == []


# ---- real engine builds through TensorRT-RTX's ONNX parser -----------------------------------------

BUILDABLE = [dtype for dtype in DTYPES if dtype != "uint8"]


@pytest.fixture
def calls(monkeypatch):
    return models.record_calls(monkeypatch)


@pytest.mark.parametrize("param_dtype", ["int32", "int64"])
@pytest.mark.parametrize("dtype", BUILDABLE)
@models.forked
def test_engine_builds_for_element_and_index_types(calls, dtype, param_dtype):
    model = models.slice_scatter_model([4, 5], [2, 5], [0], [4], [2], dtype=dtype, param_dtype=param_dtype)
    _, plan = models.build(model)
    assert plan is not None and plan.nbytes > 0
    element, index = models.trt_type(np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else dtype), models.trt_type(param_dtype)
    asked = calls.arguments("supports_format_combination")
    assert {pos for pos, *_ in asked} == set(range(6))
    assert all(types[0] == element and all(f == trt.TensorFormat.LINEAR for f in formats) for _, types, formats, _ in asked)
    last = max(asked, key=lambda args: args[0])[1]
    assert last == (element, element, index, index, index, element)
    assert calls.format_answers_are_linear_only()
    assert calls.results("get_workspace_size") and set(calls.results("get_workspace_size")) == {4}


@models.forked
def test_engine_build_call_sequence(calls):
    _, plan = models.build(models.slice_scatter_model([4, 5], [4, 2], [1], [-1], [2], axes=[-1]))
    assert plan is not None and plan.nbytes > 0
    methods = calls.methods("SliceScatter")
    first = {method: methods.index(method) for method in reversed(methods)}
    order = ["get_output_data_types", "get_output_shapes", "get_aliased_input", "supports_format_combination",
             "configure_plugin", "get_workspace_size", "get_fields_to_serialize"]
    assert [first[method] for method in order] == sorted(first[method] for method in order)
    assert calls.enqueued_only_while_timing("SliceScatter")  # no GPU: none; full TensorRT: timing, in BUILD
    assert "attach_to_context" not in methods  # no execution context while building
    assert calls.arguments("configure_plugin")[0][0] == ((4, 5), (4, 2), (1,), (1,), (1,), (1,))


@models.forked
def test_engine_builds_with_fp8_between_quantize_and_dequantize(calls):
    _, plan = models.build(models.fp8_slice_scatter_model())
    assert plan is not None and plan.nbytes > 0
    assert trt.DataType.FP8 in {types[0] for _, types, _, _ in calls.arguments("supports_format_combination")}


@models.forked
def test_uint8_is_refused_by_tensorrt_rtx_itself(calls, caplog):
    """The plugin accepts uint8, but TensorRT(-RTX) allows uint8 only on network I/O fed by casts/identities."""
    assert _accepts([trt.DataType.UINT8], 0) and _accepts([trt.DataType.UINT8] * 2, 1)
    _, plan = models.build(models.slice_scatter_model([4, 5], [2, 5], [0], [4], [2], dtype="uint8"))
    assert plan is None
    assert any("UInt8" in message for message in models.trt_messages(caplog, logging.ERROR))


@models.forked
def test_engine_builds_with_dynamic_shapes(calls):
    model = models.slice_scatter_model(["n", 5], ["m", 5], [0], [-1], [2])
    profile = {"data": ((1, 5), (4, 5), (8, 5)), "updates": ((1, 5), (2, 5), (4, 5))}
    _, plan = models.build(model, profile=profile)
    assert plan is not None and plan.nbytes > 0
    dims, bounds = calls.arguments("configure_plugin")[0]
    assert dims[:2] == ((-1, 5), (-1, 5)) and bounds[:2] == (((1, 5), (8, 5)), ((1, 5), (4, 5)))


@models.forked
def test_bad_shapes_fail_the_parse_with_the_oracle_message(capfd):
    with pytest.raises(AssertionError, match="ONNX parser failed"):
        models.build(models.slice_scatter_model([4, 5], [2, 6], [0], [4], [2]))
    assert "slice_scatter: 'updates' must have shape (?, 5)" in capfd.readouterr().err


@models.forked
def test_in_place_needs_the_aliasing_preview_feature(calls, caplog):
    model = models.slice_scatter_model([4, 5], [2, 5], [0], [4], [2], inplace=1)
    _, plan = models.build(model, aliasing=True)
    assert plan is not None and plan.nbytes > 0
    assert 0 in calls.results("get_aliased_input")
    caplog.clear()
    _, plan = models.build(model, aliasing=False)
    assert plan is None
    assert any("ALIASED_PLUGIN_IO_10_03" in message for message in models.trt_messages(caplog, logging.ERROR))


@models.forked
def test_fields_survive_the_engine_build(calls):
    _, plan = models.build(models.slice_scatter_model([4, 5], [2, 5], [0], [4], [2], inplace=1), aliasing=True)
    assert plan is not None and b"SliceScatter" in bytes(plan) and b"inplace" in bytes(plan)
    serialized = calls.results("get_fields_to_serialize", "SliceScatter")
    assert serialized
    creator = plugins.register()["SliceScatter"]
    for fields in serialized:
        runtime = creator.create_plugin("SliceScatter", fields.collection(), trt.TensorRTPhase.RUNTIME)
        assert runtime.inplace and _fields(runtime) == {"inplace": [1]}


# ---- full TensorRT + GPU: run engines and compare with the oracle -----------------------------------


@needs_gpu
@needs_full_tensorrt
@pytest.mark.parametrize("inplace", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "int8"])
def test_engine_output_matches_oracle(dtype, inplace):
    rng = np.random.default_rng(0)
    data = rng.integers(-50, 50, (6, 7)).astype(dtype)
    updates = rng.integers(-50, 50, (3, 7)).astype(dtype)
    model = models.slice_scatter_model([6, 7], [3, 7], [-1], [-7], [-2], dtype=dtype, inplace=inplace)
    outputs = models.run(model, {"data": data, "updates": updates}, aliasing=bool(inplace))
    np.testing.assert_array_equal(outputs["output"], oracle.slice_scatter(data, updates, [-1], [-7], [-2]))
