"""passes.lower and `trt-scatter lower`: hand-written models that mix MatMul, Conv, Sigmoid, Relu and Add
with each scatter op (tests/mixed_models.py), lowered to standard ONNX ops, run in onnxruntime against the
whole-model reference (ONNX's evaluator with the oracle for the scatter ops) on the original model."""

import numpy as np
import onnx
import onnxruntime
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import mixed_models
import onnx_fixtures as fx
from trt_scatter import oracle
from trt_scatter.ops import DOMAIN
from trt_scatter.passes.lower import OPSET, LowerTrtScatter, lower
from trt_scatter.passes.validate import ModelError
from trt_scatter.reference import Reference

CASES = list(mixed_models.all_cases())


def run_onnxruntime(model, feeds):
    import onnxruntime

    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


def assert_same(case, expected, got):
    assert expected.keys() == got.keys()
    for name in expected:
        want, have = expected[name], got[name]
        assert want.dtype == have.dtype and want.shape == have.shape, name
        if name in case.exact_outputs:
            assert np.array_equal(want, have), f"{case.name}: output {name!r} differs"
        else:  # after a Sigmoid: NumPy's exp and onnxruntime's approximation differ slightly
            np.testing.assert_allclose(have, want, rtol=1e-6, atol=1e-6)


def check_lowered(case, lowered, seeds=(0, 1, 2)):
    reference = Reference(case.model)
    for seed in seeds:
        feeds = case.feeds(np.random.default_rng(seed))
        assert_same(case, reference.run(feeds), run_onnxruntime(lowered, feeds))


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_lowered_mixed_models_equal_the_reference_in_onnxruntime(case):
    lowered = lower(case.model)
    onnx.checker.check_model(lowered, full_check=True)
    assert not any(node.domain == DOMAIN for node in lowered.graph.node)
    assert DOMAIN not in {opset.domain for opset in lowered.opset_import}
    kept = {node.name for node in case.model.graph.node if node.domain != DOMAIN} - {"end_of_write"}  # (stop: updates give the length)
    assert kept <= {node.name for node in lowered.graph.node}  # other nodes keep their names
    assert [o.name for o in lowered.graph.output] == [o.name for o in case.model.graph.output]
    assert [i.name for i in lowered.graph.input] == [i.name for i in case.model.graph.input]
    check_lowered(case, lowered)


@st.composite
def kv_caches(draw):
    B, H, D = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 4))
    S = draw(st.integers(1, 9))
    T = draw(st.integers(1, S))
    pos = draw(st.integers(0, S - T))
    if pos + T < S and draw(st.booleans()):  # the negative form, counting from the end (stop = pos + T stays negative)
        pos -= S
    index_dtype = draw(st.sampled_from([np.int32, np.int64]))
    return dict(B=B, H=H, S=S, D=D, T=T, pos=pos, E=draw(st.integers(1, 5)), index_dtype=index_dtype,
                runtime=draw(st.booleans()), dynamic=draw(st.booleans()), seed=draw(st.integers(0, 2**16)))  # fmt: skip


def kv_expected(feeds, case_args, w):
    """The KV cache written by the oracle (NumPy for MatMul, Reshape and Transpose)."""
    B, H, T, D = (case_args[k] for k in ("B", "H", "T", "D"))
    k = (feeds["x"] @ w).reshape(B, T, H, D).transpose(0, 2, 1, 3)
    pos = case_args["pos"]
    return oracle.slice_scatter(feeds["cache"], k, [pos], [pos + T], [1], [2])


@given(kv_caches())
@example(dict(B=2, H=3, S=8, D=4, T=1, pos=7, E=6, index_dtype=np.int64, runtime=True, dynamic=True, seed=0))  # the last row
@example(dict(B=1, H=1, S=4, D=2, T=4, pos=0, E=1, index_dtype=np.int32, runtime=False, dynamic=False, seed=0))  # all of it
@example(dict(B=1, H=2, S=5, D=3, T=2, pos=-3, E=2, index_dtype=np.int64, runtime=True, dynamic=False, seed=0))  # from the end
def test_lowered_kv_cache_equals_the_oracle(args):
    builder_args = {k: v for k, v in args.items() if k != "seed"}
    case = mixed_models.kv_cache(**builder_args)
    lowered = lower(case.model)
    rng = np.random.default_rng(args["seed"])
    feeds = {"x": rng.integers(-4, 5, (args["B"], args["T"], args["E"])).astype(np.float32),
             "cache": rng.integers(-4, 5, (args["B"], args["H"], args["S"], args["D"])).astype(np.float32)}  # fmt: skip
    if args["runtime"]:
        feeds["pos"] = np.array([args["pos"]], dtype=args["index_dtype"])
    w = onnx.numpy_helper.to_array(next(init for init in case.model.graph.initializer if init.name == "w"))
    got = run_onnxruntime(lowered, feeds)
    expected = kv_expected(feeds, args, w)
    assert np.array_equal(got["new_cache"], expected)
    assert np.array_equal(got["y"], np.maximum(expected, 0))
    assert np.array_equal(Reference(case.model).run(feeds)["new_cache"], expected)


@given(N=st.integers(1, 3), C=st.integers(1, 3), Hh=st.integers(1, 6), W=st.integers(1, 4), data=st.data())
def test_lowered_conv_update_equals_the_reference(N, C, Hh, W, data):
    K = data.draw(st.integers(1, Hh))
    index_dtype = data.draw(st.sampled_from([np.int32, np.int64]))
    case = mixed_models.conv_update(index_dtype, runtime=True, dynamic=data.draw(st.booleans()), N=N, C=C, Hh=Hh, W=W, K=K)
    check_lowered(case, lower(case.model), seeds=[data.draw(st.integers(0, 2**16))])


def test_a_wrong_lowering_fails(monkeypatch):
    """The comparison can fail: a lowering that writes one row further is caught."""
    import trt_scatter.networks.slice_scatter as lowering

    case = mixed_models.kv_cache(runtime=True)
    real = lowering._offsets
    monkeypatch.setattr(lowering, "_offsets", lambda graph, count, step: lowering._arith(graph, "add", real(graph, count, step), 1))
    feeds = case.feeds(np.random.default_rng(0))
    feeds["pos"] = np.array([3], np.int64)
    got = run_onnxruntime(lower(case.model), feeds)["new_cache"]
    assert not np.array_equal(got, Reference(case.model).run(feeds)["new_cache"])


def _kv_with(edit):
    model = onnx.ModelProto()
    model.CopyFrom(mixed_models.kv_cache(runtime=True).model)
    edit(model)
    return model


RUNTIME_AXES_CASES = {
    f"{name}-axes-{axes_from}-{np.dtype(index_dtype).name}-{'runtime' if runtime else 'constant'}-{'dynamic' if dynamic else 'static'}":
        mixed_models.BUILDERS[name](index_dtype=index_dtype, runtime=runtime, dynamic=dynamic, axes_from=axes_from)
    for name in ("kv_cache", "conv_update")
    for axes_from in ("input", "computed")
    for index_dtype, runtime, dynamic in ((np.int32, True, True), (np.int64, False, False), (np.int64, True, True))
} | {"conv_update-0d-axis-input": mixed_models.conv_update(index_dtype=np.int32, axes_from="input", axis_shape=())}  # fmt: skip


@pytest.mark.parametrize("name", RUNTIME_AXES_CASES)
def test_runtime_axes_are_lowered_and_equal_the_reference(name):
    """SliceScatter's axes / ScatterUpdate's axis from a graph input: the element-wise lowering. Computed by nodes from
    the data's rank (Shape of a Shape), which is static: a constant, as TensorRT builds it, and lowered as one."""
    case = RUNTIME_AXES_CASES[name]
    lowered = lower(case.model)
    onnx.checker.check_model(lowered, full_check=True)
    assert not any(node.domain == DOMAIN for node in lowered.graph.node)
    assert [i.name for i in lowered.graph.input] == [i.name for i in case.model.graph.input]
    element_wise = "Range" in {node.op_type for node in lowered.graph.node}  # one destination per element of updates
    assert element_wise == ("axes-computed" not in name or "dynamic" in name), name
    check_lowered(case, lowered, seeds=range(6))


@given(S=st.integers(1, 6), T=st.integers(1, 6), data=st.data())
def test_runtime_axes_of_a_kv_cache_equal_the_oracle(S, T, data):
    """The write position, the axis (fed 2 or -2) and the cache's length vary; the oracle gives the expected cache."""
    T = min(T, S)
    pos = data.draw(st.integers(0, S - T))
    if pos + T < S and data.draw(st.booleans()):  # the negative form (stop = pos + T stays negative)
        pos -= S
    index_dtype = data.draw(st.sampled_from([np.int32, np.int64]))
    case = mixed_models.kv_cache(index_dtype=index_dtype, runtime=True, dynamic=data.draw(st.booleans()), S=S, T=T, B=2, H=2, D=3, project=False, axes_from="input")
    axis = data.draw(st.sampled_from([2, -2]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    feeds = {"k": rng.integers(-9, 9, (2, 2, T, 3)).astype(np.float32), "cache": rng.integers(-9, 9, (2, 2, S, 3)).astype(np.float32),
             "pos": np.array([pos], index_dtype), "axes": np.array([axis], index_dtype)}  # fmt: skip
    got = run_onnxruntime(lower(case.model), feeds)["new_cache"]
    assert np.array_equal(got, oracle.slice_scatter(feeds["cache"], feeds["k"], [pos], [pos + T], [1], [axis]))


def test_an_upgraded_opset_keeps_the_declared_shapes_of_inputs_and_outputs():
    """ONNX's version converter infers shapes and names every dimension a model leaves unnamed (``unk__0``); the
    lowered model of an opset-13 model declared its output so, and added value infos of such names."""
    from trt_scatter.onnx_models import slice_scatter_model

    model = slice_scatter_model((4, 6), [1], [3], [1], axes=[0])
    model.opset_import[0].version = 13
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.shape.dim[1].Clear()  # unnamed and unknown
    lowered = lower(model)
    onnx.checker.check_model(lowered, full_check=True)
    assert [[d.dim_param or d.dim_value or None for d in v.type.tensor_type.shape.dim] for v in (*lowered.graph.input, *lowered.graph.output)] \
        == [[d.dim_param or d.dim_value or None for d in v.type.tensor_type.shape.dim] for v in (*model.graph.input, *model.graph.output)]
    assert not [v.name for v in lowered.graph.value_info if any(d.dim_param.startswith("unk__") for d in v.type.tensor_type.shape.dim)]


def test_a_write_nothing_reads_drops_its_constants_with_it():
    """A trt_scatter node whose output nothing reads is lowered in place (what nothing read before stays), and the
    constants only it read go: they stayed, unread, and onnxruntime warned of each ("Removing initializer")."""
    from trt_scatter.onnx_models import slice_scatter_model

    model = slice_scatter_model((4, 6), [1], [3], [1], axes=[0])
    (node,) = [node for node in model.graph.node if node.domain == DOMAIN]
    node.output[0] = "unread"
    model.graph.node.append(helper.make_node("Identity", ["data"], ["copy"]))
    del model.graph.output[:]
    model.graph.output.append(helper.make_tensor_value_info("copy", TensorProto.FLOAT, [4, 6]))
    lowered = lower(model)
    onnx.checker.check_model(lowered, full_check=True)
    read = {name for node in lowered.graph.node for name in node.input}
    assert [init.name for init in lowered.graph.initializer if init.name not in read] == []
    assert "unread" in {name for node in lowered.graph.node for name in node.output}  # the write itself stays, lowered


def test_what_the_lowering_cannot_take_is_refused_in_one_line():
    def zero_step(model):
        model.graph.initializer.remove(next(i for i in model.graph.initializer if i.name == "one"))
        model.graph.initializer.append(onnx.numpy_helper.from_array(np.array([0], np.int64), "one"))

    with pytest.raises(ModelError, match=r"^SliceScatter node 'write_kv': slice_scatter: 'step' must not contain 0 \(got \[0\]\)$"):
        lower(_kv_with(zero_step))  # the validator's line, before anything is lowered


def _generation_loop(steps_in_if=False):
    """A Loop over ``n`` steps whose body writes row ``new[i]`` (a model input, (4, 5)) into its carried cache (6, 5) at
    row ``i`` (SliceScatter, start computed from the iteration number) and adds ``bias`` at the rows ``idx`` (an initializer
    of the main graph) of the step's copy (ScatterElementsReduce), which it scans; ``steps_in_if``: the Loop inside the
    then-branch of an If on ``flag``, whose else-branch keeps the cache."""
    from onnx import numpy_helper

    c = lambda name, value: numpy_helper.from_array(np.asarray(value, np.int64), name)  # noqa: E731
    body_nodes = [
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        helper.make_node("Reshape", ["i", "one_dim"], ["row"]),
        helper.make_node("Add", ["row", "step"], ["row_end"]),
        helper.make_node("Gather", ["new", "i"], ["new_row"], axis=0),
        helper.make_node("Unsqueeze", ["new_row", "first"], ["new_rows"]),
        helper.make_node("SliceScatter", ["cache_in", "new_rows", "row", "row_end", "step", "first"], ["cache_out"], domain=DOMAIN, name="write_row"),
        helper.make_node("ScatterElementsReduce", ["cache_out", "idx", "bias"], ["biased"], domain=DOMAIN, name="add_bias", axis=0, reduction="add"),
    ]
    body = helper.make_graph(body_nodes, "body", [fx.info("i", [], np.int64), fx.info("cond_in", [], np.bool_), fx.info("cache_in", (6, 5))],
                             [fx.info("cond_out", [], np.bool_), fx.info("cache_out", (6, 5)), fx.info("biased", (6, 5))],
                             [c("one_dim", [1]), c("step", [1]), c("first", [0])])
    loop = helper.make_node("Loop", ["n", "", "cache"], ["final", "steps"], body=body, name="generate")
    outputs = [fx.info("final", (6, 5)), fx.info("steps", ("t", 6, 5))]
    inputs = [fx.info("n", [], np.int64), fx.info("cache", (6, 5)), fx.info("new", (4, 5)), fx.info("bias", (2, 5))]
    if steps_in_if:
        other = helper.make_graph([helper.make_node("Identity", ["cache"], ["kept"]), helper.make_node("Unsqueeze", ["cache", "zero"], ["one_step"])],
                                  "else", [], [fx.info("kept", (6, 5)), fx.info("one_step", (1, 6, 5))], [c("zero", [0])])
        loop = helper.make_node("If", ["flag"], ["final", "steps"], name="choose",
                                then_branch=helper.make_graph([loop], "then", [], [fx.info("final", (6, 5)), fx.info("steps", ("t", 6, 5))]), else_branch=other)
        inputs.append(fx.info("flag", [], np.bool_))
    graph = helper.make_graph([loop], "g", inputs, outputs, [c("idx", [[0, 1, 2, 3, 4], [5, 5, 0, 1, 2]])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(DOMAIN, 1)])


@pytest.mark.parametrize("steps_in_if", [False, True], ids=["loop", "loop in if"])
def test_nodes_in_subgraphs_are_lowered_too(steps_in_if):
    """A generation loop writes a row into its carried cache each step (SliceScatter at the iteration number) and adds a
    bias at constant rows (ScatterElementsReduce), maybe inside an If branch: every trt_scatter node of every subgraph is
    lowered (it was refused: 'lower replaces nodes of the main graph only', so `check` could not run such a model
    without the plugins), and onnxruntime computes the reference's outputs for every step count, the If either way."""
    from trt_scatter.model import all_nodes

    model = _generation_loop(steps_in_if)
    lowered = lower(model)
    onnx.checker.check_model(lowered, full_check=True)
    assert not any(node.domain == DOMAIN for node in all_nodes(lowered.graph)) and DOMAIN not in {o.domain for o in lowered.opset_import}
    rng = np.random.default_rng(0)
    for n, flag in ((0, True), (1, True), (4, True), (3, False)):
        feeds = {"n": np.array(n, np.int64), "cache": rng.standard_normal((6, 5)).astype(np.float32), "new": rng.standard_normal((4, 5)).astype(np.float32),
                 "bias": rng.standard_normal((2, 5)).astype(np.float32)} | ({"flag": np.array(flag)} if steps_in_if else {})
        expected, got = Reference(model).run(feeds), run_onnxruntime(lowered, feeds)
        for name in ("final", "steps"):
            assert expected[name].shape == got[name].shape, name
            np.testing.assert_allclose(got[name], expected[name], rtol=1e-6, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("else_start", ["Constant", "Identity"])
def test_sibling_branches_that_name_their_constants_alike_each_lower_with_their_own(else_start):
    """Both branches of an If make their SliceScatter's start and stop with Constant nodes of the same names (ONNX's
    checker takes a name in two sibling graphs): the else-branch's node wrote rows 1:3, the then-branch's constants, as
    the constants of both branches shared one table (the last Constant of a name won, and the first value folded was
    kept for every scope); ``else_start``: the else-branch's start a Constant too, or an Identity of the main graph's
    initializer, which the then-branch's Constant of that name hid."""
    const = lambda name, value: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(value, np.int64)))  # noqa: E731

    def branch(name, start, stop, start_op="Constant"):
        made = helper.make_node("Identity", ["four"], ["start"]) if start_op == "Identity" else const("start", [start])
        nodes = [made, const("stop", [stop]),
                 helper.make_node("SliceScatter", ["data", "updates", "start", "stop", "step"], [name], domain=DOMAIN, name="write")]
        return helper.make_graph(nodes, name, [], [fx.info(name, (6, 5))])

    node = helper.make_node("If", ["flag"], ["out"], then_branch=branch("then_out", 1, 3), else_branch=branch("else_out", 4, 6, else_start))
    graph = helper.make_graph([node], "g", [fx.info("flag", [], np.bool_), fx.info("data", (6, 5)), fx.info("updates", (2, 5))],
                              [fx.info("out", (6, 5))], [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("step", [1]), ("four", [4]))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(DOMAIN, 1)])
    lowered = lower(model)
    onnx.checker.check_model(lowered, full_check=True)
    rng = np.random.default_rng(0)
    for flag, rows in ((True, slice(1, 3)), (False, slice(4, 6))):
        feeds = {"flag": np.array(flag), "data": rng.standard_normal((6, 5)).astype(np.float32), "updates": rng.standard_normal((2, 5)).astype(np.float32)}
        expected = feeds["data"].copy()
        expected[rows] = feeds["updates"]
        np.testing.assert_array_equal(Reference(model).run(feeds)["out"], expected)
        np.testing.assert_array_equal(run_onnxruntime(lowered, feeds)["out"], expected, err_msg=f"flag {flag}")


def test_check_draws_inputs_for_two_loops_whose_bodies_write():
    """Two Loops, each body writing row ``i`` of its carried value (SliceScatter): the data loader that `check` uses
    ended in an internal error, KeyError: it looked the bodies' nodes up by ``id()`` of protobuf's Python wrappers,
    which protobuf frees and makes anew (another id) between two walks of the graph."""
    from trt_scatter.inputs import ScatterDataLoader

    def body():
        nodes = [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Reshape", ["i", "one"], ["row"]),
                 helper.make_node("Add", ["row", "one"], ["end"]),
                 helper.make_node("SliceScatter", ["acc", "updates", "row", "end", "one"], ["acc_out"], domain=DOMAIN, name="write")]
        return helper.make_graph(nodes, "body", [fx.info("i", [], np.int64), fx.info("c", [], np.bool_), fx.info("acc", (8, 5))],
                                 [fx.info("c_out", [], np.bool_), fx.info("acc_out", (8, 5))])

    loops = [helper.make_node("Loop", ["n", "", "cache"], ["once"], body=body(), name="first"),
             helper.make_node("Loop", ["n", "", "once"], ["twice"], body=body(), name="second")]
    graph = helper.make_graph(loops, "g", [fx.info("n", [], np.int64), fx.info("cache", (8, 5)), fx.info("updates", (1, 5))],
                              [fx.info("twice", (8, 5))], [numpy_helper.from_array(np.array([1], np.int64), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(DOMAIN, 1)])
    lowered = lower(model)
    for feeds in ScatterDataLoader(model, seed=1, iterations=2):
        np.testing.assert_array_equal(run_onnxruntime(lowered, feeds)["twice"], Reference(model).run(feeds)["twice"])


def test_an_old_opset_is_upgraded_and_dead_parameter_nodes_go():
    case = mixed_models.kv_cache(runtime=True)
    old = onnx.ModelProto()
    old.CopyFrom(case.model)
    old.opset_import[0].version = 13
    lowered = lower(old)
    assert {o.domain: o.version for o in lowered.opset_import} == {"": OPSET}
    onnx.checker.check_model(lowered, full_check=True)
    assert "end_of_write" not in {node.name for node in lowered.graph.node}  # only the SliceScatter read stop
    assert not {"one", "axes", "length"} & {init.name for init in lowered.graph.initializer}
    check_lowered(case, lowered)
    plain = mixed_models.matmul_elements().model
    assert lower(plain) is plain  # nothing to lower


def _slice_write(extra_nodes=(), extra_outputs=(), opset=17):
    """SliceScatter(data (4, 5), updates (2, 5), rows 1:3), constant parameters; ``opset=None``: no default-domain import."""
    nodes = [helper.make_node("SliceScatter", ["data", "updates", "start", "stop", "step"], ["written"], domain=DOMAIN, inplace=0), *extra_nodes]
    initializers = [onnx.numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("start", [1]), ("stop", [3]), ("step", [1]))]
    inputs = [helper.make_tensor_value_info("data", onnx.TensorProto.FLOAT, [4, 5]), helper.make_tensor_value_info("updates", onnx.TensorProto.FLOAT, [2, 5])]
    outputs = [helper.make_tensor_value_info("written", onnx.TensorProto.FLOAT, [4, 5]), *extra_outputs]
    opsets = [helper.make_opsetid(DOMAIN, 1)] + ([helper.make_opsetid("", opset)] if opset else [])
    return helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, initializers), opset_imports=opsets)


def _same_in_onnxruntime(model, lowered):
    rng = np.random.default_rng(0)
    feeds = {"data": rng.standard_normal((4, 5)).astype(np.float32), "updates": rng.standard_normal((2, 5)).astype(np.float32)}
    expected, got = Reference(model).run(feeds), run_onnxruntime(lowered, feeds)
    assert expected.keys() == got.keys()
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name])


def test_a_model_of_plugin_nodes_only_gets_the_default_domain_it_needs():
    model = _slice_write(opset=None)
    lowered = lower(model)
    assert {o.domain: o.version for o in lowered.opset_import} == {"": OPSET}
    onnx.checker.check_model(lowered, full_check=True)
    _same_in_onnxruntime(model, lowered)


def test_an_input_an_initializer_fills_is_a_constant_and_no_input_of_the_lowered_model():
    """ONNX lets a run override such an input; TensorRT's ONNX parser, and trt-scatter, take it as a constant. The lowering
    folds its value, so onnxruntime must not be left free to take another for it."""
    model = _slice_write()
    model.graph.input.append(helper.make_tensor_value_info("start", onnx.TensorProto.INT64, [1]))
    lowered = lower(model)
    assert [value.name for value in lowered.graph.input] == ["data", "updates"]
    _same_in_onnxruntime(model, lowered)  # rows 1:3, start's initial value
    with pytest.raises(ValueError, match=r"^Reference\.run: input 'start' has an initializer, so its value is a constant "):
        Reference(model).run({"data": np.zeros((4, 5), np.float32), "updates": np.ones((2, 5), np.float32), "start": np.array([2])})


def test_a_parameter_a_subgraph_reads_too_is_kept():
    """The lowering reads the constant stop no more; the If's branch still does, so it stays."""
    then = helper.make_graph([helper.make_node("Identity", ["stop"], ["chosen_then"])], "then", [], [helper.make_tensor_value_info("chosen_then", onnx.TensorProto.INT64, [1])])
    other = helper.make_graph([helper.make_node("Identity", ["start"], ["chosen_else"])], "else", [], [helper.make_tensor_value_info("chosen_else", onnx.TensorProto.INT64, [1])])
    condition = helper.make_node("Constant", [], ["flag"], value=onnx.numpy_helper.from_array(np.array(True)))
    choose = helper.make_node("If", ["flag"], ["chosen"], then_branch=then, else_branch=other)
    model = _slice_write([condition, choose], [helper.make_tensor_value_info("chosen", onnx.TensorProto.INT64, [1])])
    lowered = lower(model)
    onnx.checker.check_model(lowered, full_check=True)
    assert {"start", "stop"} <= {init.name for init in lowered.graph.initializer}
    _same_in_onnxruntime(model, lowered)


def test_an_opset_the_version_converter_cannot_upgrade_is_one_line():
    """Scan-8 with sequence lengths: ONNX's converter has no way to opset 9."""
    body = helper.make_graph([helper.make_node("Identity", ["state_in"], ["state_out"]), helper.make_node("Identity", ["element"], ["element_out"])], "body",
                             [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [5]) for n in ("state_in", "element")],
                             [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [5]) for n in ("state_out", "element_out")])
    lengths = helper.make_node("Constant", [], ["lengths"], value=onnx.numpy_helper.from_array(np.array([2], np.int32)))
    initial = helper.make_node("Constant", [], ["initial"], value=onnx.numpy_helper.from_array(np.zeros((1, 5), np.float32)))
    sequence = helper.make_node("Unsqueeze", ["updates"], ["sequence"], axes=[0])
    scan = helper.make_node("Scan", ["lengths", "initial", "sequence"], ["final", "scanned"], body=body, num_scan_inputs=1)
    model = _slice_write([lengths, initial, sequence, scan], [helper.make_tensor_value_info("scanned", onnx.TensorProto.FLOAT, None)], opset=8)
    with pytest.raises(ModelError, match=rf"^the model imports opset 8 of the default domain; the lowering needs {OPSET}, and ONNX's version converter cannot upgrade it \(.+\)$"):
        lower(model)


def test_loader_composes_with_onnx_from_path(tmp_path):
    from polygraphy.backend.onnx import OnnxFromPath

    case = mixed_models.conv_update(runtime=False)
    path = fx.save(case.model, tmp_path / "conv.onnx")
    for source in (OnnxFromPath(path), path):
        lowered = LowerTrtScatter(source)()
        assert not any(node.domain == DOMAIN for node in lowered.graph.node)
        check_lowered(case, lowered, seeds=[0])


def test_the_command_line(tmp_path):
    case = mixed_models.kv_cache(runtime=True, dynamic=True)
    path, out = fx.save(case.model, tmp_path / "kv.onnx"), tmp_path / "kv.lowered.onnx"
    result = fx.run_tool("trt-scatter", ["lower", path, out])
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"lowered 1 trt_scatter node (SliceScatter) of {path}: {out}")
    check_lowered(case, onnx.load(str(out)), seeds=[0])

    for axes_from in ("input", "computed"):  # which axis is written: known at run time only
        case = mixed_models.kv_cache(runtime=True, dynamic=True, axes_from=axes_from)
        path = fx.save(case.model, tmp_path / f"kv_{axes_from}.onnx")
        result = fx.run_tool("trt-scatter", ["lower", path, out])
        assert result.returncode == 0 and result.stdout.startswith(f"lowered 1 trt_scatter node (SliceScatter) of {path}: {out}"), result.stderr
        check_lowered(case, onnx.load(str(out)), seeds=[0, 1])

    bad = fx.save(_kv_with(lambda m: m.graph.node[4].input.__setitem__(1, "nowhere")), tmp_path / "bad.onnx")
    refused = fx.run_tool("trt-scatter", ["lower", bad, tmp_path / "x.onnx"])
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith("trt-scatter lower: error: SliceScatter node 'write_kv'")
    missing = fx.run_tool("trt-scatter", ["lower", tmp_path / "missing.onnx", tmp_path / "x.onnx"])
    assert missing.returncode == 2 and "cannot read ONNX model" in missing.stderr and missing.stderr.count("\n") == 1


def test_the_command_reads_the_models_tensors_once(tmp_path, monkeypatch):
    """Shape inference over a large model takes seconds: the lowering validates the model, the command
    does not validate it again first."""
    from trt_scatter.cli import main
    from trt_scatter.model import ModelTensors

    reads, init = [], ModelTensors.__init__
    monkeypatch.setattr(ModelTensors, "__init__", lambda self, *args, **kwargs: reads.append(1) or init(self, *args, **kwargs))
    path = fx.save(mixed_models.kv_cache(runtime=True).model, tmp_path / "kv.onnx")
    assert main(["lower", str(path), str(tmp_path / "kv.lowered.onnx")]) == 0
    assert len(reads) == 1


def test_the_command_says_when_the_lowered_model_is_not_for_tensorrt(tmp_path, capsys):
    """The reductions lower to ONNX's scatters with a reduction, which TensorRT builds wrong or not at all."""
    from trt_scatter.cli import main
    from trt_scatter.onnx_models import scatter_nd_reduce_model, slice_scatter_model

    for model, noted in ((scatter_nd_reduce_model((4, 3), (2, 1)), True), (slice_scatter_model((4, 6), [0], [4], [2], [0]), False)):
        assert main(["lower", str(fx.save(model, tmp_path / "m.onnx")), str(tmp_path / "low.onnx")]) == 0
        out = capsys.readouterr().out
        assert ("note: 1 of its nodes is an ONNX scatter with a reduction, which TensorRT builds wrong or not at all" in out) == noted, out


@pytest.mark.parametrize("axes_from", ["constant", "input", "computed"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", ["kv_cache", "conv_update"])
def test_lowered_models_build_in_tensorrt_without_plugins(name, dynamic, axes_from):
    from lowering_support import build, parse_onnx, profile_for

    case = mixed_models.BUILDERS[name](runtime=True, dynamic=dynamic, axes_from=axes_from)
    builder, network, _ = parse_onnx(lower(case.model))
    shapes = {name: feed.shape for name, feed in case.feeds(np.random.default_rng(0)).items()}
    build(builder, network, profile_for(network, shapes, shapes, shapes))


def test_a_tensor_of_unknown_rank_is_refused_by_name():
    model = mixed_models.conv_update(runtime=True).model
    model.graph.node.insert(0, helper.make_node("Mystery", ["u"], ["mystery"], domain="elsewhere", name="mystery"))
    model.graph.node[2].input[0] = "mystery"  # Sigmoid reads it: the ScatterUpdate's updates have no shape
    model.opset_import.append(helper.make_opsetid("elsewhere", 1))
    with pytest.raises(ModelError, match=r"^ScatterUpdate node 'update_rows': scatter_update: 'updates' must have a known rank for the lowering \(got tensor 'gate' of unknown shape\)$"):
        lower(model)


def test_lower_of_a_path_gives_a_model_with_its_weights_that_saves_anywhere(tmp_path):
    """lower(path) of a model with external data returned references to the input's data file, relative to the input's
    folder: saved elsewhere with onnx.save(..., save_as_external_data=True), the model pointed at a file that is not
    there, without a word. It returns the weights, as lower(onnx.load(path)) does."""
    case = mixed_models.kv_cache(runtime=True, E=64)
    (tmp_path / "model").mkdir()
    copy = onnx.ModelProto()
    copy.CopyFrom(case.model)
    onnx.save(copy, tmp_path / "model" / "kv.onnx", save_as_external_data=True, location="kv.bin", size_threshold=0)
    (tmp_path / "out").mkdir()
    onnx.save(lower(tmp_path / "model" / "kv.onnx"), tmp_path / "out" / "low.onnx", save_as_external_data=True, location="low.bin", size_threshold=0)
    assert (tmp_path / "out" / "low.bin").stat().st_size > 0
    check_lowered(case, onnx.load(str(tmp_path / "out" / "low.onnx")), seeds=[0])


def test_a_model_with_external_data_is_lowered_from_any_directory(tmp_path):
    """Every tensor of the model in an external file (weights and index constants): `lower` run from another
    folder reads them from the model's, and writes the lowered model's beside it."""
    case = mixed_models.kv_cache(runtime=True, E=64)  # weights of 3 KiB: over onnx's 1 KiB, so external in the output too
    (tmp_path / "model").mkdir()
    path = tmp_path / "model" / "kv.onnx"
    copy = onnx.ModelProto()
    copy.CopyFrom(case.model)  # onnx.save moves the tensors of the model it saves
    onnx.save(copy, path, save_as_external_data=True, location="kv.bin", size_threshold=0)
    (tmp_path / "elsewhere").mkdir()
    out = tmp_path / "out" / "kv.lowered.onnx"
    result = fx.run_tool("trt-scatter", ["lower", path, out], cwd=tmp_path / "elsewhere")
    assert result.returncode == 0, result.stderr
    check_lowered(case, onnx.load(str(out)), seeds=[0])
    size = (out.parent / "kv.lowered.onnx.data").stat().st_size
    assert size >= 64 * 12 * 4
    again = fx.run_tool("trt-scatter", ["lower", path, out])
    assert again.returncode == 0 and (out.parent / "kv.lowered.onnx.data").stat().st_size == size  # onnx appends to an existing file
    check_lowered(case, onnx.load(str(out)), seeds=[0])

    unwritable = fx.run_tool("trt-scatter", ["lower", path, "/proc/kv.lowered.onnx"])  # even root cannot create files there
    assert unwritable.returncode == 2 and unwritable.stderr.startswith("trt-scatter lower: error: cannot write output '/proc/kv.lowered.onnx'"), unwritable.stderr
    assert unwritable.stderr.count("\n") == 1


def test_a_model_over_two_gib_keeps_its_inferred_shapes(monkeypatch):
    """ONNX's shape inference serializes the model, which protobuf refuses past 2 GiB: it runs without the data of the
    large initializers, whatever the model's size (inference never reads them, and with them each inference copied the
    weights: lower, rewrite and check peaked at 6-8x the weights of a 1.5 GB model). Stood in for here: a limit of a few
    bytes, and an inference that refuses any large one."""
    from onnx import TensorProto, numpy_helper

    from trt_scatter.model import tensors
    from trt_scatter.passes.rewrite import rewrite

    real = onnx.shape_inference.infer_shapes

    refused = []

    def refusing(model, *args, **kwargs):
        values = [*model.graph.initializer, *(a.t for n in model.graph.node if n.op_type == "Constant" for a in n.attribute)]
        if any(len(value.raw_data) > tensors.LARGE_INITIALIZER for value in values):
            refused.append(model.graph.name)
            raise ValueError("Message onnx.ModelProto exceeds maximum protobuf size of 2GB")
        return real(model, *args, **kwargs)

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", refusing)
    monkeypatch.setattr(tensors, "LARGE_INITIALIZER", 64)
    weights = np.arange(32, dtype=np.float32).reshape(4, 8)
    constants = [numpy_helper.from_array(weights, "weights"), numpy_helper.from_array(np.array([[1], [3]], np.int64), "rows"),
                 *[numpy_helper.from_array(np.array(v, np.int64), k) for k, v in (("s", [0]), ("e", [2]), ("st", [1]))]]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8]), helper.make_tensor_value_info("u", TensorProto.FLOAT, [2, 8])]
    nodes = [helper.make_node("Constant", [], ["bias"], value=numpy_helper.from_array(-weights, "bias")), helper.make_node("Add", ["x", "bias"], ["x_biased"]),
             helper.make_node("Relu", ["x_biased"], ["z"]), helper.make_node("Add", ["z", "weights"], ["biased"])]  # large: an initializer and a Constant
    plugin = helper.make_model(helper.make_graph(nodes + [helper.make_node("SliceScatter", ["biased", "u", "s", "e", "st"], ["y"], domain=DOMAIN)], "g",
                                                 inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], constants),
                               opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)])
    feeds = {"x": np.ones((4, 8), np.float32), "u": -np.ones((2, 8), np.float32)}
    lowered = lower(plugin)  # refused before: "'data' must have a known rank for the lowering"
    assert [numpy_helper.to_array(i) for i in lowered.graph.initializer if i.name == "weights"][0].tolist() == weights.tolist()
    np.testing.assert_array_equal(Reference(lowered).run(feeds)["y"], Reference(plugin).run(feeds)["y"])
    standard = helper.make_model(helper.make_graph(nodes + [helper.make_node("ScatterND", ["biased", "rows", "u"], ["y"])], "g", inputs,
                                                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], constants[:2]),
                                 opset_imports=[helper.make_opsetid("", 17)])
    rewritten, report = rewrite(standard)  # left before: "data or updates of unknown rank"
    assert [n.op_type for n in rewritten.graph.node][-1] == "SliceScatter", list(report.lines())
    np.testing.assert_array_equal(Reference(rewritten).run(feeds)["y"], Reference(standard).run(feeds)["y"])
    assert not refused  # no inference was given the weights


@pytest.mark.parametrize("op_type, inputs, unshaped, attributes, feeds", [
    ("SliceScatter", ["data", "updates", "s", "e", "st"], "updates", {}, {"data": np.zeros((4, 8), np.float32), "updates": np.ones((2, 8), np.float32)}),
    ("ScatterElementsReduce", ["data", "indices", "updates"], "data", {"reduction": "max", "axis": 1},
     {"data": np.zeros((3, 4), np.float32), "indices": np.array([[0, 0], [3, 1], [2, 2]]), "updates": np.arange(6, dtype=np.float32).reshape(3, 2)}),
    ("CacheScatter", ["data", "updates", "positions"], "updates", {"axis": 1},
     {"data": np.zeros((2, 6, 3), np.float32), "updates": np.ones((2, 2, 3), np.float32), "positions": np.array([4, 1])}),
])
def test_an_input_of_unknown_rank_takes_it_from_an_input_of_the_same_rank(op_type, inputs, unshaped, attributes, feeds):
    """PyTorch's TorchScript exports leave some tensors unshaped (an If's output, a Reshape at opset 13): where the op
    requires two inputs of one rank, the known one gives the other's (the lowering refused it)."""
    from onnx import TensorProto, numpy_helper

    import onnxruntime

    declared = [helper.make_value_info(name, helper.make_tensor_type_proto(TensorProto.FLOAT if array.dtype == np.float32 else TensorProto.INT64,
                                                                            None if name == unshaped else array.shape))
                for name, array in feeds.items()]
    constants = [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in (("s", [1]), ("e", [3]), ("st", [1]))]
    node = helper.make_node(op_type, inputs, ["output"], domain=DOMAIN, **attributes)
    model = helper.make_model(helper.make_graph([node], "g", declared, [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)],
                                                constants if op_type == "SliceScatter" else []),
                              opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(DOMAIN, 1)])
    lowered = lower(model)
    got = onnxruntime.InferenceSession(lowered.SerializeToString()).run(None, feeds)[0]
    np.testing.assert_array_equal(got, Reference(model).run(feeds)["output"])


def test_a_shape_is_folded_only_where_the_model_fixes_it():
    """Shape of a graph input folds (TensorRT builds it as a constant); Shape of a computed tensor does not, for its declared
    shape (value_info) may be stale: here t is (3, 8), declared (6, 4), and the write starts at Shape(t)[0] - 2 = row 1."""
    from onnx import TensorProto, numpy_helper

    nodes = [helper.make_node("Reshape", ["z", "s"], ["t"]), helper.make_node("Shape", ["t"], ["rows"], start=0, end=1),
             helper.make_node("Sub", ["rows", "two"], ["start"]), helper.make_node("Add", ["start", "two"], ["stop"]),
             helper.make_node("SliceScatter", ["x", "u", "start", "stop", "one", "zero"], ["y"], domain=DOMAIN, name="w")]
    graph = helper.make_graph(nodes, "g", [fx.info("x", (6, 4), np.float32), fx.info("z", (24,), np.float32), fx.info("u", (2, 4), np.float32)],
                              [fx.info("y", (6, 4), np.float32)],
                              [numpy_helper.from_array(np.array(v), n) for n, v in (("s", [3, 8]), ("two", [2]), ("one", [1]), ("zero", [0]))],
                              value_info=[helper.make_tensor_value_info("t", TensorProto.FLOAT, [6, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)])
    feeds = {"x": np.zeros((6, 4), np.float32), "z": np.zeros(24, np.float32), "u": np.ones((2, 4), np.float32)}
    expected = Reference(model).run(feeds)["y"]
    assert np.nonzero(expected.any(1))[0].tolist() == [1, 2]
    np.testing.assert_array_equal(run_onnxruntime(lower(model), feeds)["y"], expected)


@pytest.mark.parametrize("opset", [11, 13, 17])
def test_a_models_local_functions_survive_the_upgrade_to_the_lowerings_opset(opset):
    """ONNX's version converter, which upgrades a model below opset 14, drops its local functions and leaves the nodes
    that call them: the lowered model no longer ran ('my.dom:Twice is not a registered function/op'). Inlined first."""
    function = helper.make_function("my.dom", "Twice", ["X"], ["Y"], [helper.make_node("Add", ["X", "X"], ["Y"])], [helper.make_opsetid("", opset)])
    nodes = [helper.make_node("Twice", ["x"], ["a"], domain="my.dom"),
             helper.make_node("SliceScatter", ["a", "u", "start", "stop", "step", "axes"], ["s"], domain="trt_scatter"),
             helper.make_node("Relu", ["s"], ["y"])]
    constants = [numpy_helper.from_array(np.array([value], np.int64), name) for name, value in (("start", 1), ("stop", 7), ("step", 2), ("axes", 0))]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 4]),
                                           helper.make_tensor_value_info("u", TensorProto.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 4])], constants)
    model = helper.make_model(graph, functions=[function], opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("my.dom", 1),
                                                                          helper.make_opsetid("trt_scatter", 1)])
    model.ir_version = 7
    lowered = lower(model)
    feeds = {"x": np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32), "u": np.ones((3, 4), np.float32)}
    np.testing.assert_array_equal(run_onnxruntime(lowered, feeds)["y"], Reference(model).run(feeds)["y"])


@pytest.mark.parametrize("scatter_inside", [False, True])
def test_local_functions_the_inliner_skips_are_refused_not_left(scatter_inside):
    """onnx's inliner silently skips a function that imports another default-domain opset than the model's: the
    converter then dropped it (a model that did not run, exit 0), or its SliceScatter stayed in it ('no trt_scatter node')."""
    body = ([helper.make_node("SliceScatter", ["X", "U", "start", "stop", "step"], ["Y"], domain="trt_scatter")] if scatter_inside
            else [helper.make_node("Add", ["X", "X"], ["Y"])])
    inputs = ["X", "U", "start", "stop", "step"] if scatter_inside else ["X"]
    function = helper.make_function("my.dom", "Body", inputs, ["Y"], body, [helper.make_opsetid("", 18), helper.make_opsetid("trt_scatter", 1)])
    constants = [numpy_helper.from_array(np.array([value], np.int64), name) for name, value in (("start", 0), ("stop", 4), ("step", 2))]
    call = helper.make_node("Body", ["x", "u", "start", "stop", "step"] if scatter_inside else ["x"], ["a"], domain="my.dom")
    nodes = [call, helper.make_node("SliceScatter", ["a", "u", "start", "stop", "step"], ["y"], domain="trt_scatter")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3]),
                                           helper.make_tensor_value_info("u", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])], constants)
    model = helper.make_model(graph, functions=[function], opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("my.dom", 1),
                                                                          helper.make_opsetid("trt_scatter", 1)])
    model.ir_version = 8
    with pytest.raises(ModelError, match=r"local functions \(my.dom:Body\).*cannot be inlined.*onnx's inliner takes only functions that "
                                         r"import the model's own default-domain opset$"):
        lower(model)


class _TensorOverTwoGiB:
    """A tensor as onnx holds one of 3 GiB: its dims and type, and a ByteSize that protobuf refuses past 2 GiB."""

    dims, data_type, data_location = [3, 2**30], TensorProto.UINT8, TensorProto.DEFAULT

    def ByteSize(self):
        raise onnx.message.EncodeError("Failed to serialize proto") if hasattr(onnx, "message") else ValueError("Failed to serialize proto")


def test_a_tensor_over_two_gib_is_sized_without_protobuf():
    """One tensor over 2 GiB (an LLM's float32 embedding) made protobuf's ByteSize raise inside shape inference, which was
    then left out: the model's types went unread and its scatter was refused for a float64 it does not hold."""
    from trt_scatter.model import tensors

    assert tensors.tensor_bytes(_TensorOverTwoGiB()) == 3 * 2**30
    for array in (np.zeros((4, 5), np.float32), np.arange(7, dtype=np.int64), np.ones(3, np.float16)):
        tensor = numpy_helper.from_array(array, "t")
        assert tensors.tensor_bytes(tensor) == array.nbytes <= tensor.ByteSize()


def test_the_lower_command_checks_a_model_too_large_to_serialize_from_its_files(tmp_path, monkeypatch, capsys):
    """ONNX's checker serializes the model it is given, which protobuf refuses past 2 GiB: `trt-scatter lower` ended in
    an internal error there, where lower() from Python wrote the model. It checks every model as written: in memory, the
    serialization, its parse and the checker's inference each took the weights again (3.5 GB for a model of 0.6). Stood
    in for: a checker that refuses any model given in memory."""
    from trt_scatter.cli import main

    real = onnx.checker.check_model

    def from_files_only(model, *args, **kwargs):
        if isinstance(model, onnx.ModelProto):
            raise ValueError("Message onnx.ModelProto exceeds maximum protobuf size of 2GB")
        return real(model, *args, **kwargs)

    case = mixed_models.kv_cache(project=False)
    saved = onnx.ModelProto()
    saved.CopyFrom(case.model)  # onnx.save points the tensors of the proto it saves at the data file
    onnx.save(saved, tmp_path / "kv.onnx", save_as_external_data=True, all_tensors_to_one_file=True, location="kv.onnx.data", size_threshold=0)
    monkeypatch.setattr(onnx.checker, "check_model", from_files_only)
    assert main(["lower", str(tmp_path / "kv.onnx"), str(tmp_path / "out" / "kv.lowered.onnx")]) == 0, capsys.readouterr().err
    monkeypatch.setattr(onnx.checker, "check_model", real)
    check_lowered(case, onnx.load(str(tmp_path / "out" / "kv.lowered.onnx")), seeds=[0])
    # A model the checker refuses (a Gemm of a vector): one line, and nothing left of the files written to check it.
    saved.graph.node.append(helper.make_node("Gemm", ["vector", "w"], ["gemm"]))
    saved.graph.input.append(helper.make_tensor_value_info("vector", TensorProto.FLOAT, [3]))
    saved.graph.initializer.append(numpy_helper.from_array(np.ones((3, 2), np.float32), "w"))
    saved.graph.output.append(helper.make_tensor_value_info("gemm", TensorProto.FLOAT, [3, 2]))
    onnx.save(saved, tmp_path / "gemm.onnx")
    capsys.readouterr()
    monkeypatch.setattr(onnx.checker, "check_model", from_files_only)
    assert main(["lower", str(tmp_path / "gemm.onnx"), str(tmp_path / "bad" / "gemm.lowered.onnx")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trt-scatter lower: error: the model does not pass ONNX's checker (") and err.count("\n") == 1, err
    assert not (tmp_path / "bad").exists()  # nothing written, and the folder it made gone


@pytest.mark.parametrize("output", ["a file there", "a link", "a FIFO", "external data"])
def test_a_lowered_model_the_checker_refuses_leaves_the_output_as_it_was(tmp_path, capsys, output):
    """The checker reads the model as written, before it takes the output's place: a refused model left no file where
    the user had one, removed a link (and the data file of its target), and deleted a device or FIFO given as the
    output (as root, /dev/null)."""
    import os
    import stat

    from trt_scatter.cli import main

    model = mixed_models.kv_cache(project=False).model
    model.graph.node.append(helper.make_node("Gemm", ["vector", "w"], ["gemm"]))  # a Gemm of a vector: the checker refuses it
    model.graph.input.append(helper.make_tensor_value_info("vector", TensorProto.FLOAT, [3]))
    model.graph.initializer.append(numpy_helper.from_array(np.ones((3, 2), np.float32), "w"))
    model.graph.output.append(helper.make_tensor_value_info("gemm", TensorProto.FLOAT, [3, 2]))
    source = tmp_path / "in" / "gemm.onnx"
    source.parent.mkdir()
    onnx.save(model, source, save_as_external_data=output == "external data", location="gemm.onnx.data", size_threshold=0)
    target = tmp_path / "out" / "low.onnx"
    target.parent.mkdir()
    if output == "a FIFO":
        os.mkfifo(target)
    else:
        target.write_bytes(b"mine")
        (tmp_path / "out" / "low.onnx.data").write_bytes(b"my data")
    given = target
    if output == "a link":
        given = tmp_path / "link.onnx"
        given.symlink_to(target)
    assert main(["lower", str(source), str(given)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trt-scatter lower: error: the model does not pass ONNX's checker (") and err.count("\n") == 1, err
    if output == "a FIFO":
        assert stat.S_ISFIFO(os.stat(target).st_mode)
    else:
        assert target.read_bytes() == b"mine" and (tmp_path / "out" / "low.onnx.data").read_bytes() == b"my data"
        assert sorted(p.name for p in target.parent.iterdir()) == ["low.onnx", "low.onnx.data"]  # no staged file left
    if output == "a link":
        assert given.is_symlink()


@pytest.mark.parametrize("custom", [False, True], ids=["standard-only", "with-a-custom-op"])
def test_lower_says_which_ops_of_other_domains_it_kept(tmp_path, capsys, custom):
    """A model with an op of its own domain beside a trt_scatter node: lower kept it, as it should, and said the output
    held "standard ONNX ops only"."""
    from trt_scatter import onnx_models
    from trt_scatter.cli import main

    model = onnx_models.slice_scatter_model((4, 6), [0], [2], [1], axes=[0])
    if custom:  # MyGelu (domain my.ops) reads the SliceScatter's output; the graph's output is its
        output = model.graph.output[0].name
        model.graph.node.append(helper.make_node("MyGelu", [output], ["gelu"], domain="my.ops"))
        model.graph.output[0].name = "gelu"
        model.opset_import.append(helper.make_opsetid("my.ops", 1))
    path, out = fx.save(model, tmp_path / "m.onnx"), tmp_path / "low.onnx"
    assert main(["lower", str(path), str(out)]) == 0
    count = len(onnx.load(out).graph.node)
    nodes = f"{count} node{'s' if count > 1 else ''}"
    kept = f"{nodes}, no trt_scatter node; of other domains: my.ops MyGelu" if custom else f"{nodes}, standard ONNX ops only"
    assert capsys.readouterr().out.splitlines()[0] == f"lowered 1 trt_scatter node (SliceScatter) of {path}: {out} ({kept})"


def test_lower_counts_the_nodes_it_lowered_in_subgraphs_and_notes_their_reductions(tmp_path, capsys):
    """The generation loop's two trt_scatter nodes lie in a Loop body: lower said "lowered no trt_scatter node" of them,
    counted the main graph's one node, and left out the note on the reduction it lowered to ONNX's own."""
    from trt_scatter.cli import main
    from trt_scatter.model import all_nodes

    path, out = fx.save(_generation_loop(), tmp_path / "m.onnx"), tmp_path / "low.onnx"
    assert main(["lower", str(path), str(out)]) == 0
    count = sum(1 for _ in all_nodes(onnx.load(out).graph))
    said = capsys.readouterr().out.splitlines()
    assert said[0] == f"lowered 2 trt_scatter nodes (ScatterElementsReduce, SliceScatter) of {path}: {out} ({count} nodes, standard ONNX ops only)"
    assert said[1].startswith("note: 1 of its nodes is an ONNX scatter with a reduction, which TensorRT builds wrong or not at all")


def _scatter_update_of_an_initialized_axis(graph_name="g", opset=18, ir_version=9):
    """A ScatterUpdate whose axis is an initializer the graph also lists among its inputs (a default a runtime may
    override; a constant to trt-scatter and TensorRT's parser)."""
    node = helper.make_node("ScatterUpdate", ["data", "indices", "updates", "axis"], ["out"], domain=DOMAIN)
    graph = helper.make_graph([node], graph_name, [helper.make_tensor_value_info("data", TensorProto.FLOAT, [4, 3]),
                                                   helper.make_tensor_value_info("updates", TensorProto.FLOAT, [2, 3]),
                                                   helper.make_tensor_value_info("axis", TensorProto.INT64, [])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4, 3])],
                              [numpy_helper.from_array(np.array([3, 1], np.int64), "indices"), numpy_helper.from_array(np.array(0, np.int64), "axis")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(DOMAIN, 1)], ir_version=ir_version)


def test_a_constant_the_lowering_folded_leaves_with_its_input_entry():
    """The axis, an initializer listed as an input, is folded into the lowering: it stayed, read by nothing, and
    onnxruntime warned "Removing initializer 'axis'. It is not used by any node"."""
    lowered = lower(_scatter_update_of_an_initialized_axis())
    read = {name for node in lowered.graph.node for name in node.input}
    assert "axis" not in read and "axis" not in {init.name for init in lowered.graph.initializer} | {value.name for value in lowered.graph.input}
    feeds = {"data": np.zeros((4, 3), np.float32), "updates": np.arange(6, dtype=np.float32).reshape(2, 3)}
    expected = feeds["data"].copy()
    expected[[3, 1]] = feeds["updates"]
    np.testing.assert_array_equal(onnxruntime.InferenceSession(lowered.SerializeToString()).run(None, feeds)[0], expected)


def test_lower_keeps_the_ir_version_where_the_opset_stays_and_names_an_unnamed_graph(tmp_path, capsys):
    """A model at opset 24 and IR 10 (which ONNX's checker takes) came out at IR 12, which runtimes that stop at 10 or
    11 refuse, though the lowering changed no opset. A graph without a name failed ONNX's checker in `lower` alone (its
    other commands take it): the lowered graph gets a name."""
    from trt_scatter.cli import main

    lowered = lower(_scatter_update_of_an_initialized_axis(opset=24, ir_version=10))
    assert lowered.ir_version == 10
    onnx.checker.check_model(lowered, full_check=True)
    assert lower(_scatter_update_of_an_initialized_axis(opset=11, ir_version=6)).ir_version >= 7  # an opset the lowering raises
    path = fx.save(_scatter_update_of_an_initialized_axis(graph_name=""), tmp_path / "unnamed.onnx")
    assert main(["lower", str(path), str(tmp_path / "low.onnx")]) == 0, capsys.readouterr().err
    assert onnx.load(tmp_path / "low.onnx").graph.name


@pytest.mark.parametrize("op_type, inputs, attributes, feeds", [
    ("SliceScatter", ["pre", "updates", "s", "e", "st"], {}, {"x": np.zeros((4, 8), np.float32), "updates": np.ones((2, 8), np.float32)}),
    ("ScatterElementsReduce", ["pre", "indices", "updates"], {"reduction": "add", "axis": 1},
     {"x": np.zeros((3, 4), np.float32), "indices": np.array([[0, 0], [3, 1], [2, 2]]), "updates": np.arange(6, dtype=np.float32).reshape(3, 2)}),
])
def test_data_of_an_unknown_element_type_takes_the_type_of_the_ops_other_element_inputs(op_type, inputs, attributes, feeds):
    """Data made by an op of another domain (onnxruntime's com.microsoft ops, a custom op) has no type shape inference
    knows: the lowering took it for float64 and refused the node ("'updates' must have the element type of 'data' (float64)")."""
    declared = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(array.dtype), array.shape) for name, array in feeds.items()]
    constants = [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in (("s", [1]), ("e", [3]), ("st", [1]))]
    nodes = [helper.make_node("MyOp", ["x"], ["pre"], domain="my.ops"), helper.make_node(op_type, inputs, ["output"], domain=DOMAIN, **attributes)]
    model = helper.make_model(helper.make_graph(nodes, "g", declared, [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)],
                                                constants if op_type == "SliceScatter" else []),
                              opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(DOMAIN, 1), helper.make_opsetid("my.ops", 1)])
    lowered = lower(model)
    for graph in (model.graph, lowered.graph):  # the custom op as what it computes here, so that both run
        custom = next(node for node in graph.node if node.op_type == "MyOp")
        custom.op_type, custom.domain = "Identity", ""
    got = onnxruntime.InferenceSession(lowered.SerializeToString()).run(None, feeds)[0]
    np.testing.assert_array_equal(got, Reference(model).run(feeds)["output"])


def test_a_constant_slice_of_dynamic_data_lowers_to_the_scatter_alone():
    """The builders' run-time assertion that updates fit the slice has no ONNX form: the lowering left the shape
    reads it gathered for it, unread, in the lowered model."""
    constants = [numpy_helper.from_array(np.array(x, np.int64), n) for n, x in (("s", [0]), ("e", [2]), ("st", [1]), ("ax", [0]))]
    graph = helper.make_graph([helper.make_node("SliceScatter", ["data", "updates", "s", "e", "st", "ax"], ["out"], domain=DOMAIN)], "g",
                              [helper.make_tensor_value_info("data", TensorProto.FLOAT, [4, "a", "b"]),
                               helper.make_tensor_value_info("updates", TensorProto.FLOAT, [2, "a", "b"])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4, "a", "b"])], constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(DOMAIN, 1)])
    assert [node.op_type for node in lower(model).graph.node] == ["ScatterND"]


def test_a_model_of_ir_version_3_lowers_to_one_that_passes_onnxs_checker():
    """IR 3 asks every initializer to be a graph input too: the lowering's own constants are not, and lower refused a
    model that passes the checker in its own words, naming a constant it had made."""
    from trt_scatter import onnx_models

    model = onnx_models.slice_scatter_model([4, 6], [0], [6], [2], [1])
    model.graph.input.extend(helper.make_tensor_value_info(init.name, init.data_type, init.dims) for init in model.graph.initializer)
    model.ir_version = 3
    onnx.checker.check_model(model, full_check=True)
    lowered = lower(model)
    onnx.checker.check_model(lowered, full_check=True)
    feeds = {"data": np.zeros((4, 6), np.float32), "updates": np.arange(12, dtype=np.float32).reshape(4, 3)}
    got = onnxruntime.InferenceSession(lowered.SerializeToString()).run(None, feeds)[0]
    np.testing.assert_array_equal(got, Reference(model).run(feeds)[model.graph.output[0].name])
