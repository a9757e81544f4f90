"""PyTorch's writes that combine, and PyG's GNN layers, through trt_scatter.torch.export with both exporters: every
scatter becomes a reduction node, the model computes what eager PyTorch does (through the reference, on the
example inputs and on the data loader's), it builds with the plugins on TensorRT-RTX, and ``trt-scatter check``
passes it against eager PyTorch's outputs.

PyTorch's own exports of these modules mostly do not build (TensorRT refuses ScatterND with a reduction, and
TensorRT-RTX ScatterElements with one) and two compute other values: dynamo's ``scatter_reduce(reduce="mean")``
is a plain ScatterElements (the last update wins), TorchScript's ``index_put(accumulate=True)`` adds a repeated index once.
"""

import functools
import logging
import warnings

import numpy as np
import pytest
import torch

import onnx_fixtures as fx
import plugin_models as models
import reduction_modules as rm
from trt_scatter import ops
from trt_scatter.inputs import ScatterDataLoader
from trt_scatter.reference import Reference

REDUCTION_OPS = {ops.SCATTER_ELEMENTS_REDUCE.name, ops.SCATTER_ND_REDUCE.name}
EXPORTERS = pytest.mark.parametrize("dynamo", [True, False], ids=["dynamo", "torchscript"])


@functools.lru_cache(maxsize=None)
def exported(name, dynamo, dynamic=False):
    """The module's export (cached per process: each costs about a second)."""
    import trt_scatter.torch as trt_scatter_torch

    module = {**rm.MODULES, **rm.MORE}[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)  # the exporters' chatter (torchvision missing, TracerWarnings)
        try:
            return trt_scatter_torch.export(module.make().eval(), module.inputs(), dynamo=dynamo, input_names=module.input_names,
                                            output_names=["output"], **(module.dynamic(dynamo) if dynamic else {}))
        finally:
            logging.disable(logging.NOTSET)


def _eager(module, feeds, seed=0):
    torch.manual_seed(seed)
    instance = module.make().eval()  # the weights the export had: the same seed, the same construction order
    with torch.no_grad():
        return instance(*(torch.from_numpy(feeds[name]) for name in module.input_names)).numpy()


def _matches_eager(module, model, feeds):
    got = Reference(model).run(feeds)["output"]
    expected = _eager(module, feeds)
    if module.exact:
        np.testing.assert_array_equal(got, expected)
    else:  # matrix products between the scatters: NumPy's and PyTorch's round differently
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.fixture(autouse=True)
def _same_weights():
    torch.manual_seed(0)  # exported() and _eager() build each module after this seed


@EXPORTERS
@pytest.mark.parametrize("name", list(rm.MODULES))
def test_the_modules_export_to_reduction_nodes_and_compute_what_eager_pytorch_does(name, dynamo):
    module = rm.MODULES[name]
    model = exported(name, dynamo)
    scatters = [node.op_type for node in model.graph.node if "Scatter" in node.op_type]
    assert scatters and set(scatters) <= REDUCTION_OPS, scatters
    assert all(node.domain == ops.DOMAIN for node in model.graph.node if "Scatter" in node.op_type)
    _matches_eager(module, model, {n: a.numpy() for n, a in zip(module.input_names, module.inputs())})
    feeds = ScatterDataLoader(model, seed=3)[0]  # valid inputs the loader makes: an edge list with repeats
    _matches_eager(module, model, feeds)


@pytest.mark.parametrize("name", list(rm.MORE))
def test_scatter_reduce_prod_amin_mean_without_self_and_per_element_indices(name):
    module = rm.MORE[name]
    model = exported(name, True)
    assert {node.op_type for node in model.graph.node if "Scatter" in node.op_type} <= REDUCTION_OPS
    _matches_eager(module, model, {n: a.numpy() for n, a in zip(module.input_names, module.inputs())})


class _IndexReduce(torch.nn.Module):
    def __init__(self, dim, reduce, include_self):
        super().__init__()
        self.dim, self.reduce, self.include_self = dim, reduce, include_self

    def forward(self, data, index, source):
        data = data.clone()
        data.index_reduce_(self.dim, index, source, self.reduce, include_self=self.include_self)  # in place, as GNN code writes it
        return data


@EXPORTERS
@pytest.mark.parametrize("dim, reduce, include_self", [(0, "amax", True), (0, "mean", False), (1, "prod", False), (-1, "amin", True)])
def test_index_reduce_is_one_reduction_node_that_computes_what_eager_pytorch_does(dim, reduce, include_self, dynamo):
    """``index_reduce`` (prod, mean, amax, amin), which neither of PyTorch's exporters translates: one node, as index_add."""
    import trt_scatter.torch as trt_scatter_torch

    module = _IndexReduce(dim, reduce, include_self)
    index = torch.tensor([0, 2, 2, 3, 0, 2])  # repeated targets, and target 1 untouched
    args = (torch.randn(4, 5), index, torch.randn(6, 5) if dim == 0 else torch.randn(4, 6))
    if dim != 0:
        args = (torch.randn(5, 4), index, torch.randn(5, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = trt_scatter_torch.export(module, args, dynamo=dynamo, input_names=["data", "index", "source"])
    written = [node.op_type for node in model.graph.node if node.domain == "trt_scatter"]
    assert written == [ops.SCATTER_ND_REDUCE.name if dim == 0 else ops.SCATTER_ELEMENTS_REDUCE.name]
    (result,) = Reference(model).run({name: arg.numpy() for name, arg in zip(["data", "index", "source"], args)}).values()
    np.testing.assert_allclose(result, module(*args).numpy(), rtol=1e-6, atol=1e-6)


@EXPORTERS
@pytest.mark.parametrize("dtype, alpha", [(torch.float32, 2.5), (torch.float32, 1.5), (torch.int64, 3), (torch.float16, -0.5), (torch.int8, 2),
                                          (torch.uint8, 3)])
def test_index_add_with_alpha_adds_alpha_times_the_source(dtype, alpha, dynamo):
    """PyTorch's own translations take only alpha=1 (dynamo's failed in pages of text); the TorchScript symbolic read
    alpha=1.5 as the int 1 and wrote index_add without it. 8-bit data is scaled in int32: TensorRT takes an int8
    constant as a quantized one, and refused the build."""
    import trt_scatter.torch as trt_scatter_torch

    class IndexAdd(torch.nn.Module):
        def forward(self, data, index, source):
            return data.index_add(0, index, source, alpha=alpha)

    args = (torch.arange(12).reshape(4, 3).to(dtype), torch.tensor([0, 2, 0]), (torch.arange(9).reshape(3, 3) + 1).to(dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = trt_scatter_torch.export(IndexAdd(), args, dynamo=dynamo, input_names=["data", "index", "source"])
    assert [node.op_type for node in model.graph.node if node.domain == "trt_scatter"] == [ops.SCATTER_ND_REDUCE.name]
    (result,) = Reference(model).run({name: arg.numpy() for name, arg in zip(["data", "index", "source"], args)}).values()
    np.testing.assert_array_equal(result, IndexAdd()(*args).numpy())
    if dtype == torch.int8:  # uint8 data a plugin writes is refused in one line (TensorRT takes uint8 only at the network's edges)
        _build(model, "index_add_int8")


class _OneIndex(torch.nn.Module):
    """``index_add``, ``index_reduce`` and ``index_put(accumulate=True)`` of an index of rank 0 or 2."""

    def __init__(self, op, dim):
        super().__init__()
        self.op, self.dim = op, dim

    def forward(self, data, index, source):
        if self.op == "index_put":
            return torch.ops.aten.index_put(data, [None] * self.dim + [index], source, True)
        return data.index_add(self.dim, index, source) if self.op == "index_add" else data.index_reduce(self.dim, index, source, "amax")


@EXPORTERS
@pytest.mark.parametrize("op, dim, index, source_shape, node", [
    ("index_add", 0, 2, (1, 3), ops.SCATTER_ND_REDUCE.name), ("index_reduce", 1, 2, (4, 1), ops.SCATTER_ELEMENTS_REDUCE.name),
    ("index_put", 1, [[0, 2], [2, -1]], (4, 2, 2), ops.SCATTER_ELEMENTS_REDUCE.name), ("index_put", 1, -2, (4,), ops.SCATTER_ELEMENTS_REDUCE.name),
], ids=["index_add-0d", "index_reduce-0d", "index_put-2d-off-the-first-axis", "index_put-0d-off-the-first-axis"])
def test_an_index_of_rank_0_or_2_is_one_reduction_node(op, dim, index, source_shape, node, dynamo):
    """A 0-d index writes one slice; a 2-D index off the first axis (repeated, negative) was left to PyTorch's TorchScript
    translation, which wrote an Add with a missing input (a model no runtime takes)."""
    import trt_scatter.torch as trt_scatter_torch

    module, args = _OneIndex(op, dim), (torch.randn(4, 3), torch.tensor(index), torch.randn(source_shape))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = trt_scatter_torch.export(module, args, dynamo=dynamo, input_names=["data", "index", "source"])
    assert [n.op_type for n in model.graph.node if n.domain == "trt_scatter"] == [node]
    (result,) = Reference(model).run({name: arg.numpy() for name, arg in zip(["data", "index", "source"], args)}).values()
    np.testing.assert_allclose(result, module(*args).numpy(), rtol=1e-6, atol=1e-6)


class _MaskedAccumulate(torch.nn.Module):
    def __init__(self, values):
        super().__init__()
        self.values = values

    def forward(self, data, mask):
        return data.index_put((mask,), self.values, accumulate=True)


@EXPORTERS
@pytest.mark.parametrize("mask, values", [
    (torch.tensor([[True, False, True, False]] * 3), torch.tensor(5.0)),
    (torch.tensor([True, False, True]), torch.tensor([1.0, 2.0, 3.0, 4.0])),
], ids=["a scalar per element", "a row per masked row"])
def test_masked_index_put_with_accumulate_adds(mask, values, dynamo):
    """x[mask] += v: PyTorch's TorchScript translation assigned v (Where(mask, v, x)) and `check` passed the wrong model;
    the dynamo exporter's kept a NonZero (which TensorRT-RTX cannot build). Both are a Where of the sum, for any mask."""
    import trt_scatter.torch as trt_scatter_torch

    data = torch.arange(12.0).reshape(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = trt_scatter_torch.export(_MaskedAccumulate(values), (data, mask), dynamo=dynamo, input_names=["data", "mask"])
    assert not {"NonZero", "ScatterND"} & {node.op_type for node in model.graph.node} and not [n for n in model.graph.node if n.domain]
    for masked in (mask, torch.zeros_like(mask), torch.ones_like(mask)):
        (result,) = Reference(model).run({"data": data.numpy(), "mask": masked.numpy()}).values()
        np.testing.assert_array_equal(result, _MaskedAccumulate(values)(data, masked).numpy())


class _BatchPositionAccumulate(torch.nn.Module):
    def forward(self, data, position, values):
        return data.index_put((torch.arange(data.shape[0]), position), values, accumulate=True)


@EXPORTERS
def test_index_put_with_a_batch_and_a_position_index_and_accumulate_adds(dynamo):
    """x[arange(b), pos] += v: a batch and a position index assign through one CacheScatter only without accumulate. With
    it, the TorchScript translation wrote that CacheScatter, which assigned: 1 + 5 came out 5."""
    import trt_scatter.torch as trt_scatter_torch

    module, data, values = _BatchPositionAccumulate(), torch.ones(2, 10, 3), torch.full((2, 3), 5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = trt_scatter_torch.export(module, (data, torch.tensor([9, 4]), values), dynamo=dynamo, input_names=["data", "position", "values"])
    assert "CacheScatter" not in {node.op_type for node in model.graph.node}
    for position in ([9, 4], [0, 0]):
        (result,) = Reference(model).run({"data": data.numpy(), "position": np.array(position), "values": values.numpy()}).values()
        np.testing.assert_array_equal(result, module(data, torch.tensor(position), values).numpy())


def test_masked_index_put_with_accumulate_and_a_value_per_element_keeps_the_stock_form_with_dynamo():
    """A value per masked row cannot be a Where: the dynamo exporter's own translation (a NonZero) adds them."""
    import trt_scatter.torch as trt_scatter_torch

    module, data, mask = _MaskedAccumulate(torch.arange(8.0).reshape(2, 4)), torch.zeros(3, 4), torch.tensor([True, False, True])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = trt_scatter_torch.export(module, (data, mask), dynamo=True, input_names=["data", "mask"])
    assert "NonZero" in {node.op_type for node in model.graph.node}
    (result,) = Reference(model).run({"data": data.numpy(), "mask": mask.numpy()}).values()
    np.testing.assert_array_equal(result, module(data, mask).numpy())


MASKED_ACCUMULATE_REFUSAL = (r"^trt_scatter.torch: index_put with a mask, accumulate=True and a value per masked element: PyTorch's "
                             r"TorchScript translation assigns instead of adding; export with dynamo=True$")


def test_masked_index_put_with_accumulate_and_a_value_per_element_is_refused_with_torchscript(capfd):
    """In one line: where a symbolic raises, the TorchScript exporter first prints its whole graph ("Torch IR graph at
    exception"), so export raises the refusal after the exporter is done."""
    import trt_scatter.torch as trt_scatter_torch

    module, args = _MaskedAccumulate(torch.ones(2, 4)), (torch.zeros(3, 4), torch.tensor([True, False, True]))
    with pytest.raises(ValueError, match=MASKED_ACCUMULATE_REFUSAL):
        trt_scatter_torch.export(module, args, dynamo=False)
    out, err = capfd.readouterr()
    assert "graph" not in out + err, out + err


class _MaskedAccumulateThenEigenvalues(_MaskedAccumulate):
    def forward(self, data, mask):
        return torch.linalg.eigvals(super().forward(data, mask)[:, :3]).real  # no TorchScript translation of eigvals


def test_a_refusal_and_a_failure_of_the_export_after_it_are_one_line():
    """The export goes on after a refusal; where it then fails too, the refusal says so, with the failure's first line,
    and without the failure's traceback chained to it."""
    import trt_scatter.torch as trt_scatter_torch

    module, args = _MaskedAccumulateThenEigenvalues(torch.ones(2, 3)), (torch.zeros(3, 3), torch.tensor([True, False, True]))
    with pytest.raises(ValueError, match=MASKED_ACCUMULATE_REFUSAL[:-1] + r"; the export also failed: UnsupportedOperatorError: .*eigvals") as refused:
        trt_scatter_torch.export(module, args, dynamo=False)
    assert refused.value.__suppress_context__ and "\n" not in str(refused.value)


def test_symbolics_a_user_registers_refuse_where_they_meet_the_write():
    """Registered for a torch.onnx.export of one's own, a symbolic raises its refusal at once: the data unwritten would be
    a wrong model."""
    import io

    import trt_scatter.torch as trt_scatter_torch

    module, args = _MaskedAccumulate(torch.ones(2, 4)), (torch.zeros(3, 4), torch.tensor([True, False, True]))
    trt_scatter_torch.register_symbolics()
    try:
        with pytest.raises(ValueError, match=MASKED_ACCUMULATE_REFUSAL):
            torch.onnx.export(module, args, io.BytesIO(), dynamo=False)
    finally:
        trt_scatter_torch.unregister_symbolics()


def test_rows_for_an_index_broadcast_over_the_row_elements_per_element_otherwise():
    """PyG's index.view(-1, 1).expand_as(src) becomes ScatterNDReduce over rows (the kernel sorts E rows, not E * F
    elements); an index per element along the last axis stays ScatterElementsReduce."""
    assert [n.op_type for n in exported("scatter_add", True).graph.node if "Scatter" in n.op_type] == ["ScatterNDReduce"]
    assert [n.op_type for n in exported("scatter_reduce_sum_last_axis", True).graph.node if "Scatter" in n.op_type] == ["ScatterElementsReduce"]


@EXPORTERS
@pytest.mark.parametrize("name", ["gcn", "sage_max", "index_put_accumulate"])
def test_dynamic_nodes_and_edges(name, dynamo):
    module = rm.MODULES[name]
    model = exported(name, dynamo, dynamic=True)
    larger = ScatterDataLoader(model, seed=5, input_shapes={"x": (11, rm.F), **({"edge_index": (2, 40)} if module.graph else
                                                                                  {"index": (40,), "source": (40, rm.F)})})[0]
    assert larger["x"].shape == (11, rm.F)
    _matches_eager(module, model, larger)


@EXPORTERS
@pytest.mark.parametrize("name", list(rm.MODULES))
def test_builds_with_the_plugins_on_tensorrt(name, dynamo):
    _build(exported(name, dynamo), name)  # exported here, built in a child process: the export stays cached


@models.forked
def _build(model, name):
    from trt_scatter import engine

    network = engine.network_from_onnx(model, plugins=True)
    plan, summary = engine.build_engine(network, name=name)
    assert plan and summary.engine_bytes > 0


@pytest.mark.parametrize("name, dynamo", [("gcn", True), ("sage_max", False), ("index_put_accumulate", False)])
def test_trt_scatter_check_passes_against_eager_pytorch(tmp_path, name, dynamo):
    """As a user checks an export: valid inputs from the data loader (saved), eager PyTorch's outputs on them as
    golden data, then ``trt-scatter check --load-inputs --load-outputs``; it builds the engine, runs the reference and
    onnxruntime on the lowered model (no GPU here), and compares both with PyTorch's outputs."""
    from polygraphy.comparator import RunResults
    from polygraphy.json import save_json

    module = rm.MODULES[name]
    path = fx.save(exported(name, dynamo), tmp_path / f"{name}.onnx")
    feeds = ScatterDataLoader(path, seed=7)[0]
    save_json([feeds], tmp_path / "inputs.json")
    RunResults([("eager-pytorch", [{"output": _eager(module, feeds)}])]).save(tmp_path / "torch.json")
    tolerance = [] if module.exact else ["--atol", "1e-6", "--rtol", "1e-5"]
    result = fx.run_tool("trt-scatter", ["check", path, "--load-inputs", tmp_path / "inputs.json", "--load-outputs", tmp_path / "torch.json",
                                         "--allow-engine-not-run", *tolerance])
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("engine: built (") and "golden outputs" in result.stdout
    assert [line for line in lines if line.startswith(("PASS", "FAIL"))] == [line for line in lines if line.startswith("PASS")]
    assert sum(line.startswith("PASS output") for line in lines) == 3  # reference and onnxruntime against PyTorch, and each other


class _IndexPutAccumulate(torch.nn.Module):
    def forward(self, x, index, values):
        return x.index_put((index,), values, accumulate=True)


class _IndexAdd(torch.nn.Module):
    def forward(self, x, index, values):
        return x.index_add(0, index, values)


@pytest.mark.parametrize("module, dynamic", [(_IndexPutAccumulate, False), (_IndexPutAccumulate, True), (_IndexAdd, True)],
                         ids=["index_put-static", "index_put-dynamic", "index_add-dynamic"])
def test_rewrite_of_pytorchs_torchscript_accumulation_sums_repeated_indices(module, dynamic):
    """PyTorch's own TorchScript export writes these as Add(x, ScatterND/ScatterElements(zeros, index, values)), which keeps
    one update of a repeated index (ONNX leaves it undefined): rewrite makes it a reduction into x, the sum eager PyTorch
    computes (index_add with static shapes PyTorch refuses to export)."""
    import io

    import onnx

    from trt_scatter.passes.rewrite import rewrite

    x, index, values = torch.arange(8.0).reshape(4, 2), torch.tensor([1, 1, 3, 0]), torch.ones(4, 2)
    axes = {"x": {0: "n"}, "index": {0: "e"}, "values": {0: "e"}} if dynamic else None
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module(), (x, index, values), buffer, dynamo=False, input_names=["x", "index", "values"], output_names=["y"],
                          dynamic_axes=axes)
    model, report = rewrite(onnx.load_from_string(buffer.getvalue()))
    assert [(change.pattern.split(" ")[0], change.result) for change in report.rewritten] in (
        [("Add(ScatterND", "ScatterNDReduce")], [("Add(ScatterElements", "ScatterElementsReduce")], [("Add(ScatterElements", "ScatterNDReduce")]), report.lines()
    assert "Add" not in [node.op_type for node in model.graph.node]
    feeds = {"x": x.numpy(), "index": index.numpy(), "values": values.numpy()}
    np.testing.assert_array_equal(Reference(model).run(feeds)["y"], module()(x, index, values).numpy())


@pytest.mark.parametrize("reduce", ["max", "min"])
@EXPORTERS
def test_pygs_export_branch_of_max_and_min_is_named_where_the_torchscript_exporter_takes_it(caplog, reduce, dynamo):
    """torch_geometric's scatter(reduce="max"/"min") takes another branch when torch.onnx.is_in_onnx_export(), which the
    TorchScript exporter sets: it starts every target at 0, so all-negative maxima (all-positive minima) come out 0. The
    export computes that branch, and says so; the dynamo exporter takes the eager branch, and equals eager PyTorch."""
    pytest.importorskip("torch_geometric")
    from torch_geometric.utils import scatter

    import trt_scatter.torch as trt_scatter_torch

    class Pool(torch.nn.Module):
        def forward(self, x, index):
            return scatter(x, index, dim=0, dim_size=3, reduce=reduce)

    x = (-1 if reduce == "max" else 1) * torch.arange(1.0, 7.0).reshape(6, 1)
    index = torch.tensor([0, 0, 1, 1, 2, 2])
    with caplog.at_level(logging.WARNING, logger="trt_scatter"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = trt_scatter_torch.export(Pool(), (x, index), dynamo=dynamo, input_names=["x", "index"], output_names=["out"])
    named = [record.message for record in caplog.records if "ONNX-export branch" in record.message]
    computed = Reference(model).run({"x": x.numpy(), "index": index.numpy()})["out"]
    eager = Pool()(x, index).numpy()
    if dynamo:
        assert not named and np.array_equal(computed, eager)
    else:
        assert len(named) == 1 and f"scatter(reduce={reduce!r})" in named[0] and not np.array_equal(computed, eager), named
        assert ("a softmax over it (torch_geometric's, GATConv's attention) comes out near 0" in named[0]) == (reduce == "max"), named
        assert np.array_equal(computed, np.zeros_like(eager))  # the branch's values, as the warning says


def test_rewrite_of_pytorchs_own_export_names_pygs_export_branch(tmp_path, capsys):
    """trt_scatter.torch.export named the branch; the rewrite of PyTorch's own TorchScript export of the same module kept
    its values (zeros for all-negative maxima) and said nothing."""
    pytest.importorskip("torch_geometric")
    from torch_geometric.nn import global_max_pool

    from trt_scatter.cli import main

    class Pool(torch.nn.Module):
        def forward(self, x, index):
            return global_max_pool(x, index, size=3)

    x, index = -torch.arange(1.0, 25.0).reshape(6, 4), torch.tensor([0, 0, 1, 1, 2, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Pool(), (x, index), tmp_path / "pool.onnx", dynamo=False, input_names=["x", "index"], output_names=["out"])
    assert main(["rewrite", str(tmp_path / "pool.onnx"), str(tmp_path / "rewritten.onnx")]) == 0
    err = capsys.readouterr().err
    named = [line for line in err.splitlines() if "ONNX-export branch" in line]
    assert len(named) == 1 and named[0].startswith("trt-scatter rewrite: warning: ScatterElementsReduce node "), err
    assert named[0].endswith("export with torch.onnx.export(dynamo=True), which takes the eager branch"), err


@pytest.mark.parametrize("dynamic", [False, True])
def test_pygs_export_branch_is_told_apart_from_a_users_max_into_zeros(caplog, dynamic):
    """global_max_pool with a dynamic number of nodes (its second reduction reads a Slice of x) is named; a user's own
    amax into zeros of values shifted by their minimum, which equals eager PyTorch, is not."""
    pytest.importorskip("torch_geometric")
    from torch_geometric.nn import global_max_pool

    import trt_scatter.torch as trt_scatter_torch

    class Pool(torch.nn.Module):
        def forward(self, x, index):
            return global_max_pool(x, index, size=3)

    class Shifted(torch.nn.Module):
        def forward(self, x, index):
            return torch.zeros(3, 4).scatter_reduce(0, index.view(-1, 1).expand_as(x), x - x.min(0).values, "amax", include_self=True)

    x, index = -torch.arange(1.0, 25.0).reshape(6, 4), torch.tensor([0, 0, 1, 1, 2, 2])
    axes = {"dynamic_axes": {"x": {0: "n"}, "index": {0: "n"}}} if dynamic else {}
    for module, named in ((Pool(), 1), (Shifted(), 0)):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="trt_scatter"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = trt_scatter_torch.export(module, (x, index), dynamo=False, input_names=["x", "index"], output_names=["out"], **axes)
        assert len([record for record in caplog.records if "ONNX-export branch" in record.message]) == named, (type(module).__name__, caplog.text)
        computed = Reference(model).run({"x": x.numpy(), "index": index.numpy()})["out"]
        assert np.array_equal(computed, module(x, index).numpy()) == (not named)
