"""TensorScatter's native lowering (networks/tensor_scatter.py): the ONNX form in onnxruntime against the oracle,
the TensorRT form built by TensorRT-RTX; the lower pass; and `trt-scatter check` on models of CacheScatter and of
ONNX's own TensorScatter nodes of rank 3 to 5, several axes, both modes, per-batch positions, float32/float16/int32."""

import numpy as np
import onnx
import onnxruntime
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper

import onnx_fixtures as fx
from conftest import HAS_GPU
from trt_scatter import oracle
from trt_scatter.backend import tensorrt
from trt_scatter.networks import add_tensor_scatter
from trt_scatter.networks.graph import OnnxGraph
from trt_scatter.networks.tensor_scatter import lower_tensor_scatter
from trt_scatter.onnx_models import tensor_scatter_model
from trt_scatter.oracle import ScatterInputError
from trt_scatter.passes.lower import lower
from trt_scatter.reference import Reference


@st.composite
def lowerings(draw):
    """A TensorScatter lowering to build: shapes, axis, mode, write indices (type, or none), static or dynamic dims."""
    rank = draw(st.integers(2, 5))
    shape = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    axis = draw(st.integers(1, rank - 1))
    shape[axis] = draw(st.integers(1, 6))
    count = draw(st.integers(0, shape[axis]))
    return (tuple(shape), count, axis - rank if draw(st.booleans()) else axis, draw(st.sampled_from(["linear", "circular"])),
            draw(st.sampled_from([np.int32, np.int64, None])), draw(st.booleans()))


def _lowered_model(shape, count, axis, mode, index_dtype, dynamic):
    graph = OnnxGraph()
    normalized = axis % len(shape)
    cache_dims = [f"d{i}" if dynamic else d for i, d in enumerate(shape)]
    update_dims = list(cache_dims)
    update_dims[normalized] = "tokens" if dynamic else count
    cache, update = graph.add_input("past_cache", np.float32, cache_dims), graph.add_input("update", np.float32, update_dims)
    indices = graph.add_input("write_indices", index_dtype, [cache_dims[0]]) if index_dtype else None
    return graph.model({"output": lower_tensor_scatter(graph, cache, update, indices, axis, mode)})


@settings(max_examples=40, deadline=None)
@given(lowerings(), st.integers(0, 2**32 - 1))
def test_native_lowering_matches_oracle_in_onnxruntime(case, seed):
    shape, count, axis, mode, index_dtype, dynamic = case
    model = _lowered_model(*case)
    onnx.checker.check_model(model, full_check=True)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(seed)
    update_shape = list(shape)
    update_shape[axis] = count
    cache, update = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(update_shape).astype(np.float32)
    size = shape[axis]
    indices = rng.integers(0, (3 * size if mode == "circular" else size - count) + 1, shape[0]).astype(index_dtype) if index_dtype else None
    feeds = {"past_cache": cache, "update": update} | ({"write_indices": indices} if index_dtype else {})
    np.testing.assert_array_equal(session.run(None, feeds)[0], oracle.tensor_scatter(cache, update, indices, axis, mode))


def test_lowering_moves_only_the_update_rows_and_holds_no_index_per_element():
    """A one-token decode into a [64, 8, 4096, 128] cache: one ScatterND of 64*8 row numbers (8 bytes each)."""
    model = _lowered_model((64, 8, 4096, 128), 1, -2, "linear", np.int64, False)
    scatters = [node for node in model.graph.node if node.op_type == "ScatterND"]
    assert len(scatters) == 1 and len(model.graph.node) <= 12
    assert sum(onnx.numpy_helper.to_array(init).nbytes for init in model.graph.initializer) < 64 * 8 * 8 + 1024


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_forbidden_write_indices_write_inside_the_output(mode):
    """Indices the spec forbids cannot be refused at run time: the lowering clamps them, and writes nothing outside."""
    session = onnxruntime.InferenceSession(_lowered_model((3, 4, 2), 2, 1, mode, np.int64, True).SerializeToString(), providers=["CPUExecutionProvider"])
    cache, update = np.zeros((3, 4, 2), np.float32), np.ones((3, 2, 2), np.float32)
    output = session.run(None, {"past_cache": cache, "update": update, "write_indices": np.array([-5, 3, 2**62])})[0]
    assert output.shape == cache.shape and np.isin(output, [0, 1]).all()  # onnxruntime refuses a ScatterND row out of range
    if mode == "circular":  # only the negative index is forbidden there: clamped to 0, rows (0, 1); 2**62 mod 4 = 0
        assert output[:, :, 0].tolist() == [[1, 1, 0, 0], [1, 0, 0, 1], [1, 1, 0, 0]]


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensorrt_network_builds(dynamic, mode):
    trt = tensorrt()
    from trt_scatter.backend import new_builder

    builder = new_builder()
    network = builder.create_network(0)
    dims = (-1, 8, 16, 4) if dynamic else (2, 8, 16, 4)
    cache = network.add_input("past_cache", trt.float16, dims)
    update = network.add_input("update", trt.float16, (-1, 8, -1, 4) if dynamic else (2, 8, 3, 4))
    indices = network.add_input("write_indices", trt.int32, (-1,) if dynamic else (2,))
    network.mark_output(add_tensor_scatter(network, cache, update, indices, mode=mode))
    config = builder.create_builder_config()
    if dynamic:
        profile = builder.create_optimization_profile()
        profile.set_shape("past_cache", (1, 8, 16, 4), (2, 8, 16, 4), (4, 8, 16, 4))
        profile.set_shape("update", (1, 8, 1, 4), (2, 8, 1, 4), (4, 8, 16, 4))
        profile.set_shape("write_indices", (1,), (2,), (4,))
        config.add_optimization_profile(profile)
    assert builder.build_serialized_network(network, config) is not None


def test_a_constant_integer_cache_without_write_indices_builds():
    """The oracle's node rules run on a builder's constants (here the cache): an absent write_indices is no constant."""
    from lowering_support import add_input, build, new_network

    trt = tensorrt()
    builder, network = new_network()
    cache = network.add_constant((2, 4, 3), np.arange(24, dtype=np.int32).reshape(2, 4, 3)).get_output(0)
    update = add_input(network, "update", np.int32, (2, 2, 3))
    output = add_tensor_scatter(network, cache, update, None, axis=1)
    network.mark_output(output)
    assert tuple(output.shape) == (2, 4, 3) and output.dtype == trt.int32
    build(builder, network)
    with pytest.raises(ScatterInputError, match=r"^tensor_scatter: 'update'"):  # the same rules refuse what the oracle refuses
        add_tensor_scatter(network, cache, add_input(network, "long", np.int32, (2, 5, 3)), None, axis=1)


def test_bad_inputs_fail_before_tensorrt_with_the_oracles_message():
    trt = tensorrt()
    from trt_scatter.backend import new_builder

    network = new_builder().create_network(0)
    cache = network.add_input("past_cache", trt.float32, (2, 8, 4))
    update = network.add_input("update", trt.float32, (2, 9, 4))
    with pytest.raises(ScatterInputError, match=r"tensor_scatter: 'update' must have at most past_cache's 8 entries on axis 1"):
        add_tensor_scatter(network, cache, update, axis=1)
    indices = network.add_input("write_indices", trt.float32, (2,))
    with pytest.raises(ScatterInputError, match=r"tensor_scatter: 'write_indices' must be int32 or int64 \(got float32\)"):
        add_tensor_scatter(network, cache, cache, indices, axis=1)
    with pytest.raises(ScatterInputError, match=r"tensor_scatter: 'mode' must be one of 'linear', 'circular' \(got 'ring'\)"):
        add_tensor_scatter(network, cache, cache, axis=1, mode="ring")
    with pytest.raises(Exception, match=r"CacheScatter: tensorrt_rtx .* has no INetworkDefinition.add_plugin_v3"):
        add_tensor_scatter(network, cache, cache, axis=1, impl="plugin")


@pytest.mark.parametrize("impl", ["plugin", "standard"])
def test_lower_pass_replaces_cache_scatter_nodes_only(impl):
    model = tensor_scatter_model(("batch", 2, 6, 3), "tokens", axis=2, mode="circular", impl=impl)
    lowered = lower(model)
    if impl == "standard":
        assert lowered is model or [n.op_type for n in lowered.graph.node] == ["TensorScatter"]  # ONNX's own: nothing to lower
        return
    onnx.checker.check_model(lowered, full_check=True)
    assert "CacheScatter" not in {n.op_type for n in lowered.graph.node}
    rng = np.random.default_rng(1)
    feed = {"past_cache": rng.standard_normal((3, 2, 6, 3)).astype(np.float32), "update": rng.standard_normal((3, 2, 4, 3)).astype(np.float32),
            "write_indices": np.array([5, 0, 17])}
    session = onnxruntime.InferenceSession(lowered.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, feed)[0], Reference(model).run(feed)["output"])


# ---- `trt-scatter check` on models of several TensorScatter writes -----------------------------------

#: (cache shape, sequence length, axis, mode, element type): ranks 3-5, several axes, both modes, three types
WRITES = [
    ((2, 6, 3), 1, 1, "linear", np.float32),
    ((3, 6, 3), 4, -2, "circular", np.float16),
    ((2, 4, 8, 5), 1, -2, "circular", np.int32),
    ((2, 8, 4, 5), 3, 1, "linear", np.float16),
    ((2, 3, 4, 7, 2), 2, 3, "circular", np.float32),
    ((4, 3, 4, 7, 2), 1, -1, "linear", np.int32),
]


def _multi_write_model(standard):
    """One model, one TensorScatter write per row of WRITES (each with its own inputs and output), as CacheScatter
    nodes or as ONNX's own TensorScatter nodes (which `check` hands to the plugin where TensorRT cannot build them)."""
    nodes, inputs, outputs = [], [], []
    for i, (shape, count, axis, mode, dtype) in enumerate(WRITES):
        update_shape = list(shape)
        update_shape[axis] = count
        names = [f"cache{i}", f"update{i}", f"positions{i}"]
        inputs += [fx.info(names[0], shape, dtype), fx.info(names[1], update_shape, dtype), fx.info(names[2], [shape[0]], np.int64)]
        outputs.append(fx.info(f"written{i}", shape, dtype))
        op, domain = ("TensorScatter", "") if standard else ("CacheScatter", "trt_scatter")
        nodes.append(helper.make_node(op, names, [f"written{i}"], domain=domain, name=f"write{i}", axis=axis, mode=mode))
    graph = helper.make_graph(nodes, "kv_writes", inputs, outputs)
    opsets = [helper.make_opsetid("", 24)] + ([] if standard else [helper.make_opsetid("trt_scatter", 1)])
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


@pytest.mark.parametrize("standard", [False, True], ids=["CacheScatter", "TensorScatter"])
def test_check_passes_on_writes_of_every_rank_axis_mode_and_type(tmp_path, standard):
    path = fx.save(_multi_write_model(standard), tmp_path / "writes.onnx")
    result = fx.run_tool("trt-scatter", ["check", path, "--iterations", "2", "--allow-engine-not-run"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "engine: built" in result.stdout
    backend = "tensorrt" if HAS_GPU else "onnxruntime-lowered" if not standard else "onnxruntime"
    for i in range(len(WRITES)):
        for iteration in (0, 1):
            assert f"PASS written{i} (iteration {iteration}): {backend} vs reference: max abs diff 0 (identical)" in result.stdout


@pytest.mark.parametrize("cache_shape, update_shape", [((2, 3, 4, 5), (2, 3, 0, 5)), ((0, 3, 4, 5), (0, 3, 1, 5))])
def test_an_empty_write_builds_an_engine(cache_shape, update_shape):
    """No tokens, or no batch rows: the empty index tensors still build (TensorRT refuses empty constants)."""
    from lowering_support import add_input, build, new_network

    builder, network = new_network()
    cache, update = add_input(network, "cache", np.float32, cache_shape), add_input(network, "update", np.float32, update_shape)
    write_indices = add_input(network, "write_indices", np.int64, cache_shape[:1])
    network.mark_output(add_tensor_scatter(network, cache, update, write_indices))
    build(builder, network)


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_an_update_longer_than_the_cache_at_run_time_is_asserted_and_stays_inside_where_nothing_asserts(mode):
    """The spec forbids an update longer than the cache on the axis; with both lengths dynamic, TensorRT's network
    asserts it, and the ONNX form (no assertions) keeps every write inside the cache: circular positions taken mod M
    once (w mod M + s < 2M) left the cache for 6 entries into 4."""
    from trt_scatter.backend import new_builder

    trt = tensorrt()
    network = new_builder().create_network(0)
    cache, update = (network.add_input(name, trt.float32, (2, -1, 4)) for name in ("past_cache", "update"))
    network.mark_output(add_tensor_scatter(network, cache, update, network.add_input("write_indices", trt.int64, (2,)), axis=1, mode=mode))
    assertions = [network.get_layer(i) for i in range(network.num_layers) if network.get_layer(i).type == trt.LayerType.ASSERTION]
    for layer in assertions:
        layer.__class__ = trt.IAssertionLayer  # the bindings' way to read a layer's own attributes
    messages = [layer.message for layer in assertions]
    assert any(message.startswith("tensor_scatter: 'update' must have at most past_cache's entries on the axis") for message in messages), messages
    graph = OnnxGraph()
    output = lower_tensor_scatter(graph, graph.add_input("past_cache", np.float32, (2, -1, 4)), graph.add_input("update", np.float32, (2, -1, 4)),
                                  graph.add_input("write_indices", np.int64, (2,)), axis=1, mode=mode)
    session = onnxruntime.InferenceSession(graph.model({"output": output}).SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {"past_cache": np.zeros((2, 4, 4), np.float32), "update": np.ones((2, 6, 4), np.float32), "write_indices": np.array([0, 3])}
    (result,) = session.run(None, feeds)
    assert result.shape == (2, 4, 4) and set(np.unique(result)) <= {0.0, 1.0}


def test_a_circular_write_index_near_the_int64_limit_wraps_as_the_oracle_does():
    """w + s would overflow int64 at w = 2**63 - 1: the lowering takes w mod M first, as the oracle does (taking the sum
    mod M put the second entry into the next batch row)."""
    graph = OnnxGraph()
    output = lower_tensor_scatter(graph, graph.add_input("c", np.float32, (2, 3, 1)), graph.add_input("u", np.float32, (2, 2, 1)),
                                  graph.add_input("w", np.int64, (2,)), axis=1, mode="circular")
    session = onnxruntime.InferenceSession(graph.model({"o": output}).SerializeToString(), providers=["CPUExecutionProvider"])
    cache, update, write = np.zeros((2, 3, 1), np.float32), np.array([[[1], [2]], [[3], [4]]], np.float32), np.array([2**63 - 1, 0])
    (result,) = session.run(None, {"c": cache, "u": update, "w": write})
    np.testing.assert_array_equal(result, oracle.tensor_scatter(cache, update, write, axis=1, mode="circular"))


def test_a_cache_too_short_for_the_update_at_a_bound_is_named_by_the_caches_rule():
    """No write indices: the builder's own positions 0..S-1 are constants, which the check of a user's constant indices
    took for theirs and refused as "'indices' values must be in [0, s-1] where s is data's dimension 2": no input of the
    op has those names. The cache's own rule names it."""
    from trt_scatter.backend import new_builder
    from trt_scatter.engine import build_engine

    trt = tensorrt()

    def load():
        builder = new_builder()
        network = builder.create_network(0)
        cache, update = network.add_input("past_cache", trt.float32, (2, 3, -1, 4)), network.add_input("update", trt.float32, (2, 3, 3, 4))
        network.mark_output(add_tensor_scatter(network, cache, update, axis=2))
        return builder, network

    with pytest.raises(ValueError, match="^the profile's smallest shapes break a rule the network asserts: tensor_scatter: 'update' must have "
                                         r"at most past_cache's entries on the axis when the network runs \(sequence_length <= max_sequence_length\)$"):
        build_engine(load, {"past_cache": ((2, 3, 2, 4), (2, 3, 8, 4), (2, 3, 8, 4))})


@pytest.mark.parametrize("rows, highest, message", [
    (4, 3, "the profile's smallest shapes break a rule the network asserts: tensor_scatter: 'write_indices' values must be at most "
           "max_sequence_length - sequence_length in linear mode when the network runs (the update must fit; its constant values reach 3)"),
    (5, 3, None),
    (5, 2**63 - 1, "the network asserts a rule that no run the profile allows keeps: tensor_scatter: 'write_indices' values must be at most "
                   "max_sequence_length - sequence_length in linear mode when the network runs (the update must fit; its constant values "
                   f"reach {2**63 - 1})"),  # w + S overflows int64: compared as w <= M - S, which TensorRT folds
], ids=["a-cache-too-short-at-the-smallest", "every-bound-fits", "an-index-near-the-int64-limit"])
def test_constant_write_indices_a_profile_leaves_no_room_for_are_refused(rows, highest, message):
    """Constant write indices [3, 1] and updates of 2 positions need a cache of 5: at a bound of 4 the clamp wrote
    positions 3 and 3 (the spec says nothing of such a write), and the engine built without a word."""
    from trt_scatter.backend import new_builder

    trt = tensorrt()

    def load():
        builder = new_builder()
        network = builder.create_network(0)
        cache, update = network.add_input("past_cache", trt.float32, (2, 3, -1, 4)), network.add_input("update", trt.float32, (2, 3, 2, 4))
        starts = network.add_constant((2,), np.array([highest, 1], np.int64)).get_output(0)
        network.mark_output(add_tensor_scatter(network, cache, update, starts, axis=2, impl="native"))
        return builder, network

    profile = {"past_cache": ((2, 3, rows, 4), (2, 3, 8, 4), (2, 3, 8, 4))}
    from lowering_support import builds_or_refuses

    builds_or_refuses(load, profile, message)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_a_rank_8_cache_written_on_its_last_axis_lowers_within_tensorrts_8_dimensions(dynamic, mode):
    """Row numbers over a grid of 8 axes would be a 9-D tensor, which TensorRT (at most 8 dimensions) cannot hold: the
    grid is one axis there. The lowering computes the oracle's values in onnxruntime, and TensorRT builds it."""
    shape, count = (2, 1, 2, 1, 1, 1, 2, 6), 2
    model = _lowered_model(shape, count, -1, mode, np.int64, dynamic)
    rng = np.random.default_rng(1)
    cache, update = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape[:-1] + (count,)).astype(np.float32)
    indices = np.array([4, 1] if mode == "linear" else [5, 9])
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {"past_cache": cache, "update": update, "write_indices": indices}
    np.testing.assert_array_equal(session.run(None, feeds)[0], oracle.tensor_scatter(cache, update, indices, -1, mode))
    from lowering_support import build, parse_onnx, profile_for

    builder, network, _ = parse_onnx(model)
    shapes = {name: value.shape for name, value in feeds.items()}
    build(builder, network, profile_for(network, shapes, shapes, shapes))
    trt = tensorrt()
    from trt_scatter.backend import new_builder

    builder = new_builder()
    network = builder.create_network(0)
    out = add_tensor_scatter(network, network.add_input("past_cache", trt.float32, shape), network.add_input("update", trt.float32, update.shape),
                             network.add_input("write_indices", trt.int64, (2,)), axis=-1, mode=mode)
    network.mark_output(out)
    build(builder, network)
