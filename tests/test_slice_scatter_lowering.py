"""SliceScatter's native lowering: its ONNX form in onnxruntime against the oracle; its TensorRT form built on the CPU."""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from lowering_support import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    add_input,
    build,
    layers,
    new_network,
    parse_onnx,
    profile_for,
    run_onnx,
    scatter_layers,
    symbolic,
    values,
)

from trt_scatter import oracle
from trt_scatter.backend import tensorrt
from trt_scatter.networks import add_slice_scatter
from trt_scatter.onnx_models import slice_scatter_model

EXTREMES = [INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, 2**62 + 5, -(2**62) - 5]
# onnxruntime takes no bfloat16 arrays from Python; TensorRT builds bfloat16 (tests/test_graph.py).
DTYPES = [np.float32, np.float16, np.int8, np.int32, np.int64, np.bool_]


@st.composite
def slice_cases(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))
    count = draw(st.integers(1, rank))
    axes = draw(st.permutations(range(rank)))[:count]
    bound = st.one_of(st.integers(-7, 7), st.sampled_from(EXTREMES))
    start = [draw(bound) for _ in axes]
    stop = [draw(bound) for _ in axes]
    step = [draw(st.one_of(st.sampled_from([-3, -2, -1, 1, 2, 3]), st.sampled_from([INT64_MAX, INT64_MIN, 2**40]))) for _ in axes]
    spelled = draw(st.sampled_from(["given", "negative", "default"]))
    if spelled == "negative":
        axes = [a - rank for a in axes]
    elif spelled == "default":
        axes = list(range(count))  # and passed as None below
    dynamic = draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
    dtype = draw(st.sampled_from(DTYPES))
    index_dtype = draw(st.sampled_from([np.int32, np.int64]))
    seed = draw(st.integers(0, 2**16))
    return shape, start, stop, step, (None if spelled == "default" else axes), dynamic, dtype, index_dtype, seed


def _updates_shape(shape, start, stop, step, axes):
    axes = range(len(start)) if axes is None else axes
    out = list(shape)
    for axis, begin, end, stride in zip(axes, start, stop, step):
        out[axis] = oracle.slice_geometry(begin, end, stride, shape[axis])[1]
    return tuple(out)


@given(slice_cases())
@example(((2, 5), [-25], [25], [2], [1], [False, False], np.float32, np.int32, 0))  # the spec's example 2
@example(((3, 5), [0, 1], [3, 5], [2, 2], None, [True, True], np.float32, np.int64, 0))  # example 3, dynamic
@example(((4, 3), [INT64_MAX], [INT64_MIN], [-1], [0], [True, False], np.float32, np.int32, 1))  # reversed, from the ends
@example(((4, 3), [INT32_MIN], [INT32_MAX], [INT64_MAX], [-1], [False, True], np.int64, np.int32, 2))  # one element
@example(((2, 3, 0), [0], [1], [1], [1], [False, False, False], np.float32, np.int64, 0))  # empty rows (no -1 beside a 0)
def test_native_lowering_matches_oracle_in_onnxruntime(case):
    shape, start, stop, step, axes, dynamic, dtype, index_dtype, seed = case
    rng = np.random.default_rng(seed)
    data = values(rng, shape, dtype)
    updates = values(rng, _updates_shape(shape, start, stop, step, axes), dtype)
    expected = oracle.slice_scatter(data, updates, start, stop, step, axes)

    data_shape, _ = symbolic(shape, dynamic, "d")
    model = slice_scatter_model(data_shape, start, stop, step, axes, dtype=dtype, index_dtype=index_dtype, impl="native")
    got = run_onnx(model, {"data": data, "updates": updates})
    assert got.dtype == expected.dtype and np.array_equal(got, expected)


def test_empty_slice_and_no_axes():
    """A slice with no element leaves data as it is; no axes at all means updates replace data."""
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    empty = np.zeros((2, 0), dtype=np.float32)
    for shape in ((2, 3), ("a", "b")):
        model = slice_scatter_model(shape, [3], [1], [1], [1], impl="native")
        assert np.array_equal(run_onnx(model, {"data": data, "updates": empty}), oracle.slice_scatter(data, empty, [3], [1], [1], [1]))
        model = slice_scatter_model(shape, [], [], [], impl="native")
        assert np.array_equal(run_onnx(model, {"data": data, "updates": -data}), oracle.slice_scatter(data, -data, [], [], []))


def _network(shape, updates_shape, start, stop, step, axes, dtype=np.float32):
    builder, network = new_network()
    data = add_input(network, "data", dtype, shape)
    updates = add_input(network, "updates", dtype, updates_shape)
    output = add_slice_scatter(network, data, updates, start, stop, step, axes)
    output.name = "output"
    network.mark_output(output)
    return builder, network


# (shape, start, stop, step, axes)
TRT_CASES = [
    ((2, 5), [-25], [25], [2], [1]),
    ((3, 5), [0, 1], [3, 5], [2, 2], None),
    ((4, 3, 2), [INT64_MAX], [INT64_MIN], [-2], [1]),
    ((4, 3, 2), [1], [4], [1], [0]),
    ((2, 3, 0), [0], [2], [1], [1]),
]


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("case", TRT_CASES, ids=["last-axis", "2-axes", "reverse", "first-axis", "empty-rows"])
def test_tensorrt_network_builds(case, dynamic):
    trt = tensorrt()
    shape, start, stop, step, axes = case
    updates_shape = _updates_shape(shape, start, stop, step, axes)
    flags = [dynamic] * len(shape)
    _, data_dims = symbolic(shape, flags, "d")
    _, updates_dims = symbolic(updates_shape, flags, "u")
    builder, network = _network(data_dims, updates_dims, start, stop, step, axes)

    (scatter,) = scatter_layers(network)
    k = max(range(len(start)) if axes is None else axes) + 1
    rows = scatter.get_input(1)  # one int64 row number per row of data.shape[k:]
    assert scatter.mode == trt.ScatterMode.ND and rows.dtype == trt.int64 and len(rows.shape) == k + 1 and rows.shape[-1] == 1
    assert len(scatter.get_input(0).shape) == len(shape) - k + 1  # data flattened over its first k axes (none if k = 1)
    assert (scatter.get_input(0).name == "data") == (k == 1)
    output = network.get_output(0)
    assert output.name == "output" and output.dtype == trt.float32 and tuple(output.shape) == data_dims
    kinds = {layer.type for layer in layers(network)}
    assert (trt.LayerType.SHAPE in kinds) == dynamic  # geometry from shape layers only when it must be
    assert trt.LayerType.PLUGIN_V3 not in kinds
    bigger = {"data": tuple(2 * d for d in shape)}
    bigger["updates"] = _updates_shape(bigger["data"], start, stop, step, axes)
    build(builder, network, profile_for(network, {"data": shape, "updates": updates_shape}, {"data": shape, "updates": updates_shape}, bigger))


def test_tensorrt_refuses_updates_of_another_shape_than_the_slice_at_run_time():
    """Dynamic dims: the index tensor is shaped from the computed slice, so TensorRT checks updates against it."""
    builder, network = _network((-1, -1), (-1, -1), [-25], [25], [2], [1])
    profile = {"data": ((2, 5), (2, 5), (2, 5)), "updates": ((2, 2), (2, 2), (2, 2))}  # the slice has 3 columns
    config = builder.create_builder_config()
    optimization_profile = builder.create_optimization_profile()
    for name, shapes in profile.items():
        optimization_profile.set_shape(name, *shapes)
    config.add_optimization_profile(optimization_profile)
    assert builder.build_serialized_network(network, config) is None


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_onnx_form_parses_and_builds_in_tensorrt(dynamic):
    shape = (3, 5)
    data_shape = ("n", "m") if dynamic else shape
    model = slice_scatter_model(data_shape, [0, 1], [3, 5], [2, 2], dtype=np.float16, index_dtype=np.int32, impl="native")
    builder, network, _ = parse_onnx(model)
    assert [layer.mode for layer in scatter_layers(network)] == [tensorrt().ScatterMode.ND]
    assert network.get_output(0).dtype == tensorrt().float16
    updates = _updates_shape(shape, [0, 1], [3, 5], [2, 2], None)
    build(builder, network, profile_for(network, {"data": shape, "updates": updates}, {"data": shape, "updates": updates}, {"data": (6, 10), "updates": (3, 5)}))


BAD = [
    # (data shape, updates shape, start, stop, step, axes)
    ((2, 5), (2, 3), [0], [5], [0], [1]),  # step 0
    ((2, 5), (2, 3), [0, 0], [5, 5], [2, 2], [1, 1]),  # repeated axis
    ((2, 5), (2, 3), [0], [5], [2], [2]),  # axis out of range
    ((2, 5), (2, 3), [0], [5, 1], [2], [1]),  # lengths differ
    ((2, 5), (2, 2), [0], [5], [2], [1]),  # updates do not fit the slice
    ((2, 5), (2, 3, 1), [0], [5], [2], [1]),  # updates of another rank
]


@pytest.mark.parametrize("bad", BAD)
def test_bad_inputs_fail_before_tensorrt_with_the_oracles_message(bad):
    shape, updates_shape, start, stop, step, axes = bad
    data, updates = np.zeros(shape, np.float32), np.zeros(updates_shape, np.float32)
    with pytest.raises(oracle.ScatterInputError) as from_oracle:
        oracle.slice_scatter(data, updates, start, stop, step, axes)
    _, network = new_network()
    with pytest.raises(oracle.ScatterInputError) as from_builder:
        add_slice_scatter(network, add_input(network, "data", np.float32, shape), add_input(network, "updates", np.float32, updates_shape), start, stop, step, axes)
    assert str(from_builder.value) == str(from_oracle.value)
    assert network.num_layers == 0


def test_bad_types_fail_before_tensorrt():
    _, network = new_network()
    data = add_input(network, "data", np.float32, (2, 5))
    with pytest.raises(oracle.ScatterInputError, match="'updates' must have the element type of 'data'"):
        add_slice_scatter(network, data, add_input(network, "updates", np.float16, (2, 3)), [0], [5], [2], [1])
    updates = add_input(network, "updates32", np.float32, (2, 3))
    with pytest.raises(oracle.ScatterInputError, match="'start' must be a 1-D tensor"):
        add_slice_scatter(network, data, updates, 0, [5], [2], [1])
    with pytest.raises(oracle.ScatterInputError, match="'step' must have an integer element type"):
        add_slice_scatter(network, data, updates, [0], [5], np.array([2.0]), [1])



# -- run-time start/stop/step: graph inputs, geometry computed by the graph


@st.composite
def runtime_cases(draw):
    case = draw(slice_cases())
    fed = draw(st.lists(st.sampled_from(["start", "stop", "step"]), min_size=1, max_size=3, unique=True))
    return case, fed


def _fed_values(values, index_dtype):
    """Parameter values as a graph input of ``index_dtype``: int64 extremes saturate to int32's, which takes the same slice of small dims."""
    bounds = np.iinfo(index_dtype)
    return np.array([min(max(v, bounds.min), bounds.max) for v in values], dtype=index_dtype)


@given(runtime_cases())
@example((((2, 3, 8, 4), [5], [6], [1], [2], [False, False, False, False], np.float32, np.int64, 0), ["start"]))  # a KV cache at pos 5
@example((((4, 3), [INT64_MAX], [INT64_MIN], [-1], [0], [True, False], np.float32, np.int64, 1), ["start", "stop", "step"]))
@example((((4, 3), [INT64_MIN], [INT64_MAX], [INT64_MIN], [-1], [False, True], np.int8, np.int64, 2), ["step"]))
@example((((2, 0, 3), [0], [1], [1], [1], [False, True, False], np.float32, np.int32, 0), ["start"]))  # an empty dimension
def test_runtime_parameters_match_the_oracle_in_onnxruntime(case):
    (shape, start, stop, step, axes, dynamic, dtype, index_dtype, seed), fed = case
    if index_dtype == np.int32:  # the values the graph sees
        start, stop, step = ([int(v) for v in _fed_values(p, np.int32)] if name in fed else p for name, p in (("start", start), ("stop", stop), ("step", step)))
    rng = np.random.default_rng(seed)
    data = values(rng, shape, dtype)
    updates = values(rng, _updates_shape(shape, start, stop, step, axes), dtype)
    expected = oracle.slice_scatter(data, updates, start, stop, step, axes)

    data_shape, _ = symbolic(shape, dynamic, "d")
    updates_shape, _ = symbolic(updates.shape, dynamic, "u")
    model = slice_scatter_model(data_shape, start, stop, step, axes, dtype=dtype, index_dtype=index_dtype, impl="native",
                                updates_shape=updates_shape, runtime=fed)  # fmt: skip
    feeds = {"data": data, "updates": updates} | {name: _fed_values(v, index_dtype) for name, v in (("start", start), ("stop", stop), ("step", step)) if name in fed}
    got = run_onnx(model, feeds)
    assert got.dtype == expected.dtype and np.array_equal(got, expected)


def test_runtime_slices_that_do_not_fit_updates_write_inside_the_output():
    """The oracle rejects a run-time slice of another length than updates'; the lowering takes updates' length and clamps."""
    data, updates = np.zeros((2, 5), np.float32), np.ones((2, 3), np.float32)
    with pytest.raises(oracle.ScatterInputError):
        oracle.slice_scatter(data, updates, [3], [5], [1], [1])  # 2 elements, updates has 3
    model = slice_scatter_model((2, 5), [0], [3], [1], [1], impl="native", runtime=["start"])
    got = run_onnx(model, {"data": data, "updates": updates, "start": np.array([3])})
    assert np.array_equal(got, oracle.slice_scatter(data, updates[:, :2], [3], [5], [1], [1]))  # columns 3, 4, 4


def test_runtime_parameters_of_another_type_shape_or_length_are_refused_by_name():
    _, network = new_network()
    data, updates = add_input(network, "data", np.float32, (2, 5)), add_input(network, "updates", np.float32, (2, 3))
    start = add_input(network, "start", np.float32, (1,))
    with pytest.raises(oracle.ScatterInputError, match="'start' must have an integer element type"):
        add_slice_scatter(network, data, updates, start, [5], [2], [1])
    wide = add_input(network, "wide", np.int64, (1, 1))
    with pytest.raises(oracle.ScatterInputError, match=r"'stop' must be a 1-D tensor \(got shape \(1, 1\)\)"):
        add_slice_scatter(network, data, updates, [0], wide, [2], [1])
    two = add_input(network, "two", np.int64, (2,))
    with pytest.raises(oracle.ScatterInputError, match="must have equal lengths"):
        add_slice_scatter(network, data, updates, two, [5], [2], [1])
    with pytest.raises(oracle.ScatterInputError, match="must have equal lengths"):
        add_slice_scatter(network, data, updates, [0], [5], [2], two)  # run-time axes
    with pytest.raises(oracle.ScatterInputError, match=r"'axes' must have an integer element type \(got float32\)"):
        add_slice_scatter(network, data, updates, [0], [5], [2], start)
    empty = add_input(network, "empty", np.float32, (2, 0))
    with pytest.raises(oracle.ScatterInputError, match=r"^slice_scatter: 'updates' must be empty: data's dimension 1 has size 0, so no index is in range \(got shape \(2, 3\)\)$"):
        add_slice_scatter(network, empty, updates, [0], [5], [2], add_input(network, "axes", np.int64, (1,)))  # whichever axis is sliced
    assert network.num_layers == 0


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_tensorrt_network_with_runtime_parameters_builds(dynamic, index_dtype):
    """A KV cache [B, H, S, D] written at a run-time position with a run-time step: elementwise layers, no plugin, no value-dependent shape."""
    trt = tensorrt()
    builder, network = new_network()
    data = add_input(network, "data", np.float16, (-1, 3, -1, 4) if dynamic else (2, 3, 8, 4))
    updates = add_input(network, "updates", np.float16, (-1, 3, -1, 4) if dynamic else (2, 3, 1, 4))
    pos, step = add_input(network, "pos", index_dtype, (1,)), add_input(network, "step", index_dtype, (1,))
    output = add_slice_scatter(network, data, updates, pos, [INT64_MAX], step, [2])
    network.mark_output(output)
    kinds = {layer.type for layer in layers(network)}
    assert trt.LayerType.PLUGIN_V3 not in kinds and trt.LayerType.ELEMENTWISE in kinds
    assert not pos.is_shape_tensor and not step.is_shape_tensor  # values never shape anything
    profile = {"data": ((1, 3, 1, 4), (2, 3, 8, 4), (4, 3, 16, 4)), "updates": ((1, 3, 1, 4), (2, 3, 1, 4), (4, 3, 2, 4))} if dynamic else None
    build(builder, network, profile)


# -- run-time axes: a graph input (or a computed tensor) decides which axes are sliced


@st.composite
def runtime_axes_cases(draw):
    """Ranks 1-5, any subset of the axes in any order (some negative), start/stop/step with
    negative steps and int64 extremes, any of them a graph input too, static and dynamic dims."""
    rank = draw(st.integers(1, 5))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank)))
    count = draw(st.integers(0, rank))
    axes = [a - rank if draw(st.booleans()) else a for a in draw(st.permutations(range(rank)))[:count]]
    bound = st.one_of(st.integers(-6, 6), st.sampled_from(EXTREMES))
    start = [draw(bound) for _ in axes]
    stop = [draw(bound) for _ in axes]
    step = [draw(st.one_of(st.sampled_from([-3, -2, -1, 1, 2, 3]), st.sampled_from([INT64_MAX, INT64_MIN, 2**40]))) for _ in axes]
    fed = ["axes"] + draw(st.lists(st.sampled_from(["start", "stop", "step"]), max_size=3, unique=True))
    dynamic = draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
    dtype = draw(st.sampled_from(DTYPES))
    index_dtype = draw(st.sampled_from([np.int32, np.int64]))
    return shape, start, stop, step, axes, fed, dynamic, dtype, index_dtype, draw(st.integers(0, 2**16))


@given(runtime_axes_cases())
@example(((2, 3, 8, 4), [5], [6], [1], [2], ["axes", "start"], [False] * 4, np.float32, np.int64, 0))  # a KV cache at pos 5
@example(((2, 3, 8, 4), [5], [6], [1], [-2], ["axes", "start"], [True, False, True, False], np.float16, np.int32, 0))
@example(((4, 3, 5), [INT64_MAX, 0], [INT64_MIN, 5], [-1, 2], [0, -1], ["axes"], [True] * 3, np.int8, np.int64, 1))  # reversed, strided
@example(((3, 4, 2, 5, 2), [1, -1, 0, 4, 0], [3, -5, 2, 0, 2], [1, -2, 1, -3, 1], [-5, 1, 4, 3, 2], ["axes", "step"], [False, True, False, True, False], np.int64, np.int32, 2))
@example(((3, 0, 2), [0], [1], [1], [0], ["axes"], [False, False, True], np.float32, np.int64, 0))  # empty data
@example(((3, 2), [], [], [], [], ["axes"], [True, True], np.bool_, np.int64, 0))  # no axis: updates replace data
@example(((3, 2), [], [], [], [], ["axes"], [False, False], np.float32, np.int32, 0))  # no axis, static data: all constant
def test_runtime_axes_match_the_oracle_in_onnxruntime(case):
    shape, start, stop, step, axes, fed, dynamic, dtype, index_dtype, seed = case
    if index_dtype == np.int32:  # the values the graph sees
        start, stop, step = ([int(v) for v in _fed_values(p, np.int32)] if name in fed else p for name, p in (("start", start), ("stop", stop), ("step", step)))
    rng = np.random.default_rng(seed)
    data = values(rng, shape, dtype)
    updates = values(rng, _updates_shape(shape, start, stop, step, [a % len(shape) for a in axes]), dtype)
    expected = oracle.slice_scatter(data, updates, start, stop, step, axes)

    data_shape, _ = symbolic(shape, dynamic, "d")
    updates_shape, _ = symbolic(updates.shape, dynamic, "u")
    model = slice_scatter_model(data_shape, start, stop, step, axes, dtype=dtype, index_dtype=index_dtype, impl="native",
                                updates_shape=updates_shape, runtime=fed)  # fmt: skip
    feeds = {"data": data, "updates": updates, "axes": np.array(axes, dtype=index_dtype)}
    feeds |= {name: _fed_values(v, index_dtype) for name, v in (("start", start), ("stop", stop), ("step", step)) if name in fed}
    got = run_onnx(model, feeds)
    assert got.dtype == expected.dtype and np.array_equal(got, expected)


def test_runtime_axes_the_spec_forbids_write_inside_the_output():
    """Repeated or out-of-range run-time axes, and slices that do not fit updates, give an unspecified
    result but never fail or write outside data: every element outside the written ones stays."""
    data, updates = np.zeros((3, 4), np.float32), np.arange(1, 7, dtype=np.float32).reshape(3, 2)
    model = slice_scatter_model(("a", "b"), [0, 0], [2, 2], [1, 1], [0, 1], impl="native", updates_shape=("a", 2), runtime=["axes"])
    for axes in ([1, 1], [7, -9], [-1, 5]):
        got = run_onnx(model, {"data": data, "updates": updates, "axes": np.array(axes)})
        assert got.shape == data.shape and set(got.ravel()) <= set(updates.ravel()) | {0.0}, axes
    model = slice_scatter_model((3, 4), [0, 2], [3, 4], [1, 1], [0, 1], impl="native", runtime=["axes", "start"])
    for start in ([0, 3], [-1, 2]):  # a slice of 1 column or of 1 row, for updates of 3 rows and 2 columns
        with pytest.raises(oracle.ScatterInputError):
            oracle.slice_scatter(data, updates, start, [3, 4], [1, 1], [0, 1])
        got = run_onnx(model, {"data": data, "updates": updates, "axes": np.array([0, 1]), "start": np.array(start)})
        assert got.shape == data.shape and set(got.ravel()) <= set(updates.ravel()) | {0.0}, start
    got = run_onnx(model, {"data": data, "updates": updates, "axes": np.array([0, 1]), "start": np.array([0, 2])})
    assert np.array_equal(got, oracle.slice_scatter(data, updates, [0, 2], [3, 4], [1, 1], [0, 1]))  # the slice fits


def test_a_wrong_runtime_axes_lowering_fails(monkeypatch):
    """The comparison can fail: destinations one element further are caught."""
    import trt_scatter.networks.graph as graph

    real = graph._Composites.scatter_flat
    monkeypatch.setattr(graph._Composites, "scatter_flat", lambda g, op, name, data, d, u: real(g, op, name, data, g.binary("add", d, g.constant(np.ones((1, 1), np.int64))), u))
    data, updates = np.zeros((3, 4), np.float32), np.ones((3, 2), np.float32)
    model = slice_scatter_model((3, 4), [0], [2], [1], [1], impl="native", runtime=["axes"])
    assert not np.array_equal(run_onnx(model, {"data": data, "updates": updates, "axes": np.array([1])}), oracle.slice_scatter(data, updates, [0], [2], [1], [1]))


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_tensorrt_network_with_runtime_axes_builds(dynamic, index_dtype):
    """A KV cache [B, H, S, D] written on a run-time axis at a run-time position: one flat ND scatter
    with an int64 destination per updated element, and no value shapes anything."""
    trt = tensorrt()
    builder, network = new_network()
    data = add_input(network, "data", np.float16, (-1, 3, -1, 4) if dynamic else (2, 3, 8, 4))
    updates = add_input(network, "updates", np.float16, (-1, 3, -1, 4) if dynamic else (2, 3, 1, 4))
    pos, axes = add_input(network, "pos", index_dtype, (1,)), add_input(network, "axes", index_dtype, (1,))
    output = add_slice_scatter(network, data, updates, pos, [INT64_MAX], [1], axes)
    network.mark_output(output)
    assert tuple(output.shape) == tuple(data.shape) and output.dtype == trt.float16
    written = [layer for layer in scatter_layers(network) if layer.get_input(2).dtype == trt.float16]
    (scatter,) = written  # the others place start and step at the axes (int64 vectors of the rank)
    assert scatter.mode == trt.ScatterMode.ND and len(scatter.get_input(0).shape) == 1
    destinations = scatter.get_input(1)
    assert destinations.dtype == trt.int64 and destinations.shape[-1] == 1  # 8 bytes per element of updates
    assert trt.LayerType.PLUGIN_V3 not in {layer.type for layer in layers(network)}
    assert not pos.is_shape_tensor and not axes.is_shape_tensor  # values never shape anything
    profile = {"data": ((1, 3, 1, 4), (2, 3, 8, 4), (4, 3, 16, 4)), "updates": ((1, 3, 1, 4), (2, 3, 1, 4), (4, 3, 2, 4))} if dynamic else None
    build(builder, network, profile)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_tensorrt_network_with_empty_runtime_axes_on_static_data_builds(index_dtype):
    """axes of shape (0,): nothing sliced, updates replace data; with static data every destination is a constant."""
    trt = tensorrt()
    builder, network = new_network()
    data, updates = add_input(network, "data", np.float32, (3, 2)), add_input(network, "updates", np.float32, (3, 2))
    empty = add_input(network, "start", index_dtype, (0,))
    axes = add_input(network, "axes", index_dtype, (0,))
    output = add_slice_scatter(network, data, updates, empty, [], [], axes)
    network.mark_output(output)
    assert tuple(output.shape) == (3, 2) and output.dtype == trt.float32
    (scatter,) = [layer for layer in scatter_layers(network) if layer.get_input(2).dtype == trt.float32]
    assert scatter.get_input(1).dtype == trt.int64
    build(builder, network)


def test_onnx_form_with_runtime_axes_parses_and_builds_in_tensorrt():
    model = slice_scatter_model(("n", 5, "m"), [0, -1], [3, -6], [2, -1], [0, 2], impl="native", updates_shape=("u", 5, "v"), runtime=["axes", "step"], index_dtype=np.int32)
    builder, network, _ = parse_onnx(model)
    low = {"data": (3, 5, 4), "updates": (2, 5, 4)}
    build(builder, network, profile_for(network, low, low, {"data": (6, 5, 8), "updates": (3, 5, 8)}))


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_rank_8_data_sliced_on_its_last_axis_lowers_within_tensorrts_8_dimensions(dynamic):
    """Every axis up to the last indexes rows: one coordinate grid of 8 axes and a row number each would be a 9-D tensor,
    which TensorRT (at most 8 dimensions) cannot hold; the grid is one axis there."""
    shape, start, stop, step, axes = (2, 1, 2, 1, 1, 1, 1, 5), [1, -1], [3, -6], [2, -2], [2, 7]
    rng = np.random.default_rng(0)
    data = values(rng, shape, np.float32)
    updates = values(rng, _updates_shape(shape, start, stop, step, axes), np.float32)
    data_shape, _ = symbolic(shape, [dynamic] * 8, "d")
    model = slice_scatter_model(data_shape, start, stop, step, axes, impl="native")
    assert np.array_equal(run_onnx(model, {"data": data, "updates": updates}), oracle.slice_scatter(data, updates, start, stop, step, axes))
    builder, network, _ = parse_onnx(model)
    feeds = {"data": shape, "updates": updates.shape}
    build(builder, network, profile_for(network, feeds, feeds, feeds))
    builder, network = new_network()
    out = add_slice_scatter(network, add_input(network, "data", np.float32, shape), add_input(network, "updates", np.float32, updates.shape),
                            start, stop, step, axes)
    network.mark_output(out)
    build(builder, network)


@pytest.mark.parametrize("updates_shape", [[f"u{i}" for i in range(8)], [1, 1, 4, 1, 1, 1, 1, 2]], ids=["dynamic updates", "static updates"])
def test_rank_8_updates_of_another_shape_but_the_same_count_are_refused_in_onnxruntime(updates_shape):
    """With the grid as one axis, a Reshape of the updates checks only their count: updates (1, 1, 4, ..., 2) for a slice
    (2, 1, 2, ..., 2) were written. The lowering asks for one row more where any dimension differs, so that Reshape
    fails as ScatterND's own shape check does on a grid of fewer axes."""
    import onnxruntime

    names = [f"d{i}" for i in range(8)]
    model = slice_scatter_model(names, [0], [2], [1], [7], impl="native", updates_shape=updates_shape)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    data = np.zeros((2, 1, 2, 1, 1, 1, 1, 5), np.float32)
    good = np.ones((2, 1, 2, 1, 1, 1, 1, 2), np.float32)
    if isinstance(updates_shape[0], str):
        assert np.array_equal(session.run(None, {"data": data, "updates": good})[0], oracle.slice_scatter(data, good, [0], [2], [1], [7]))
    with pytest.raises(Exception, match="Reshape"):  # the data's dims at run time decide the grid: the updates' fixed shape is not it
        session.run(None, {"data": data, "updates": good.reshape(1, 1, 4, 1, 1, 1, 1, 2)})
