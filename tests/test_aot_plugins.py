"""plugins.aot without TensorRT: it imports, says what it needs when used, and its plain functions
(shapes -> checks, type combinations, kernel, int32 scalars, grid) are right with ints and with
symbolic expressions; the decorated functions pass tensorrt.plugin's signature checks and answer its
calls as NVIDIA's plugin classes make them, on a stand-in of that package (tests/qdp_stand_in.py);
the launch they describe, run on the CPU shim, matches the oracle. The registration on full
TensorRT >= 10.9 and a GPU: tests/test_aot_tensorrt.py.
"""

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings

import qdp_stand_in as qdp
from conftest import needs_gxx
from kernel_shim import cases, host
from trt_scatter import dtypes
from trt_scatter import oracle
from trt_scatter.plugins import slice_scatter as slice_kernel
from trt_scatter.backend import tensorrt
from trt_scatter.ops import CACHE_SCATTER, OPS, SCATTER_UPDATE, SLICE_SCATTER
from trt_scatter.oracle import ScatterInputError
from trt_scatter.plugins import PluginError, aot, kernels


# --- descriptors as tensorrt.plugin hands them over (tests/qdp_stand_in.py) ---------------------


def dtype(name):
    """A real ``DataType`` of the TensorRT in use (the registration reads its ``.name``)."""
    return getattr(tensorrt().DataType, name)


BY_SIZE = {1: "UINT8", 2: "HALF", 4: "FLOAT", 8: "INT64"}  # the kernels see only the element size


def desc(shape, type_name="FLOAT"):
    return qdp.TensorDesc(dtype(type_name), tuple(shape), tuple(shape))


def desc_of(array, index=False):
    return desc(array.shape, ("INT32" if array.dtype.itemsize == 4 else "INT64") if index else BY_SIZE[array.dtype.itemsize])


# --- import and availability -----------------------------------------------------------------


def test_imports_without_tensorrt_plugin_and_says_what_it_needs_when_used():
    code = (
        "import sys\n"
        "import trt_scatter.plugins.aot as aot\n"
        "assert 'tensorrt.plugin' not in sys.modules and 'tensorrt_rtx.plugin' not in sys.modules\n"
        "try:\n"
        "    aot.register()\n"
        "except aot.PluginError as error:\n"
        "    print('ERROR', error)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    line = out.stdout.strip()
    if line.startswith("ERROR"):  # here: TensorRT-RTX only, or a full TensorRT older than 10.9
        assert "\n" not in line and "the AOT plugins need full TensorRT >= 10.9 with its tensorrt.plugin package" in line


def test_tensorrt_plugin_refuses_tensorrt_rtx_and_old_tensorrt(monkeypatch):
    class Old:
        __version__ = "10.8.0.43"

    monkeypatch.setattr(aot.backend, "tensorrt", lambda: Old)
    monkeypatch.setattr(aot.backend, "is_rtx", lambda: True)
    monkeypatch.setattr(aot.backend, "name", lambda: "tensorrt_rtx")
    with pytest.raises(PluginError, match=r"TensorRT-RTX ships tensorrt_rtx.plugin only as stubs \(found tensorrt_rtx 10.8.0.43\)"):
        aot.tensorrt_plugin()
    monkeypatch.setattr(aot.backend, "is_rtx", lambda: False)
    with pytest.raises(PluginError, match=r"need full TensorRT >= 10.9 .* \(found tensorrt 10.8.0.43\)"):
        aot.tensorrt_plugin()
    Old.__version__ = "10.9.0.34"  # new enough, but without the AOT interfaces (_export.py: IS_AOT_ENABLED)
    with pytest.raises(PluginError, match=r"\(found tensorrt 10.9.0.34\)"):
        aot.tensorrt_plugin()


def test_plugin_ids_use_the_onnx_domain_as_namespace():
    assert [aot.plugin_id(name) for name in OPS] == ["trt_scatter::SliceScatter", "trt_scatter::ScatterUpdate", "trt_scatter::ScatterElementsReduce",
                                                     "trt_scatter::ScatterNDReduce", "trt_scatter::CacheScatter"]


# --- register: shapes -------------------------------------------------------------------------


def test_known_shape_reads_constants_and_leaves_the_rest_unknown():
    assert aot.known_shape([qdp.ShapeExpr(4), qdp.ShapeExpr(7, constant=False), qdp.ShapeExpr()]) == (4, -1, -1)


def test_output_is_data_aliased_after_the_oracles_shape_rules():
    shapes = [(4, 6), (4, 3), (1,), (1,), (1,), (1,)]
    inputs = [qdp.TensorDesc(dtype("FLOAT"), tuple(qdp.ShapeExpr(d) for d in shape)) for shape in shapes]
    assert aot.output_desc(SLICE_SCATTER, inputs).get_aliased() is inputs[0]
    fake = [qdp.TensorDesc(dtype("FLOAT"), tuple(qdp.ShapeExpr() for _ in shape)) for shape in shapes]
    assert aot.output_desc(SLICE_SCATTER, fake).get_aliased() is fake[0]  # output types are asked before shapes exist


@pytest.mark.parametrize("op, shapes, name", [
    (SLICE_SCATTER, [(4, 6), (4, 3, 1), (1,), (1,), (1,), (1,)], "updates"),
    (SLICE_SCATTER, [(4, 6), (4, 3), (1, 1), (1,), (1,), (1,)], "start"),
    (SLICE_SCATTER, [(4, 6), (4, 3), (1,), (1,), (1,), (3,)], "axes"),
    (SCATTER_UPDATE, [(4, 3), (2,), (2, 3, 1), (1,)], "updates"),
    (SCATTER_UPDATE, [(4, 3), (2,), (2, 3), (2,)], "axis"),
])
def test_shapes_the_op_forbids_fail_at_build_time(op, shapes, name):
    with pytest.raises(ScatterInputError) as caught:
        aot.output_desc(op, [qdp.TensorDesc(dtype("FLOAT"), tuple(qdp.ShapeExpr(d) for d in shape)) for shape in shapes])
    assert caught.value.input_name == name


# --- autotune: type combinations ---------------------------------------------------------------


def _expand(io_types):
    """NVIDIA's '|' grammar for one combination string (_autotune.py): position k of each
    dependent list goes together; single types stay."""
    parts = [part.strip().split("|") for part in io_types.split(",")]
    width = max(len(part) for part in parts)
    assert all(len(part) in (1, width) for part in parts)
    return [[part[k] if len(part) > 1 else part[0] for part in parts] for k in range(width)]


@pytest.mark.parametrize("op", [SLICE_SCATTER, SCATTER_UPDATE, CACHE_SCATTER])
def test_type_combinations_follow_the_op_contract(op):
    elements = ["FLOAT", "HALF", "INT8", "INT64"]
    strings = aot.type_combinations(op, elements)
    assert len(strings) == 2 ** len(set(op.index_inputs.values()))  # int32/int64 for each index group
    seen = set()
    for string in strings:
        for combination in _expand(string):
            named = dict(zip(op.inputs + ("output",), combination))
            assert len(combination) == len(op.inputs) + 1
            data = named[op.data_input]
            assert data in elements and all(named[n] == data for n in op.element_inputs + ("output",))
            for name, leader in op.index_inputs.items():
                assert named[name] == named[leader] and named[name] in ("INT32", "INT64")
            seen.add(tuple(combination))
    leaders = set(op.index_inputs.values())
    assert len(seen) == len(elements) * 2 ** len(leaders)  # every element type with every index choice


def test_element_types_are_the_kernels_sizes():
    assert set(dtypes.KERNEL_TYPES.values()) == set(kernels.ELEMENT_SIZES)
    assert aot.INDEX_SIZES == {"INT32": 4, "INT64": 8}


# --- the registration on a stand-in of tensorrt.plugin (tests/qdp_stand_in.py) -----------------


@pytest.fixture
def registered(monkeypatch):
    """plugins.aot's decorated functions, defined on the stand-in as register() defines them on full
    TensorRT; returns the (kernel, element size, index itemsize) of each PTX asked for (a stand-in
    PTX: tests/test_kernels_compile.py compiles the real one)."""
    monkeypatch.setattr(qdp, "REGISTRY", {})
    monkeypatch.setattr(qdp, "op", qdp._Op())
    compiled = []

    def aot_ptx(kernel, element_size, index_itemsize=None):
        compiled.append((kernel, element_size, index_itemsize))
        return f"_Z_{kernel}", f".version 9.0\n.entry _Z_{kernel}("

    monkeypatch.setattr(aot.cuda, "aot_ptx", aot_ptx)
    aot._define(tensorrt(), qdp)
    return compiled


def test_the_decorated_functions_pass_tensorrt_plugins_signature_checks(registered):
    assert sorted(qdp.REGISTRY) == sorted(aot.plugin_id(name) for name in OPS)
    for name, op in OPS.items():
        entry = qdp.REGISTRY[aot.plugin_id(name)]
        attributes = [name for name in op.attributes if name != "inplace"]  # the AOT form always aliases
        assert entry["inputs"] == list(op.inputs) + attributes and {"register", "autotune", "aot_impl"} <= set(entry)


@pytest.mark.parametrize("op", [SLICE_SCATTER, SCATTER_UPDATE, CACHE_SCATTER])
def test_register_gives_data_aliased_before_and_after_shapes_exist(registered, op):
    shapes = {"SliceScatter": [(4, 6), (4, 3), (1,), (1,), (1,), (1,)], "ScatterUpdate": [(4, 3), (2,), (2, 3), (1,)],
              "CacheScatter": [(2, 3, 8, 4), (2, 3, 1, 4), (2,)]}[op.name]
    attributes = {name: op.attributes[name].default for name in op.attributes if name != "inplace"}
    register = qdp.REGISTRY[aot.plugin_id(op.name)]["register"]
    for dims in ([[qdp.ShapeExpr()] * len(shape) for shape in shapes],  # get_output_data_types: fake shapes
                 [[qdp.ShapeExpr(d) for d in shape] for shape in shapes]):  # get_output_shapes
        inputs = [qdp.TensorDesc(dtype("HALF"), shape_expr) for shape_expr in dims]
        # TensorRT's _plugin_class.py calls register_function(*input_descs, **self.attrs): by name; aot_impl gets them by position
        for output in (register(*inputs, **attributes), register(*inputs, *attributes.values())):
            assert output.get_aliased() is inputs[0] and output.dtype == dtype("HALF")
    bad = [qdp.TensorDesc(dtype("HALF"), [qdp.ShapeExpr(d) for d in shape + (1,) * (i == 1)]) for i, shape in enumerate(shapes)]
    with pytest.raises(ScatterInputError, match="'updates?' must have shape"):
        register(*bad, **attributes)


@pytest.mark.parametrize("op", [SLICE_SCATTER, SCATTER_UPDATE, CACHE_SCATTER])
def test_autotune_type_names_are_datatypes_of_this_tensorrt(registered, op):
    autotune = qdp.REGISTRY[aot.plugin_id(op.name)]["autotune"]
    attributes = [op.attributes[name].default for name in op.attributes if name != "inplace"]
    combinations = autotune(*[desc((1,)) for _ in op.inputs], *attributes, (desc((1,)),))
    assert all(isinstance(c, qdp.AutoTuneCombination) for c in combinations)  # each name resolved (or raised)
    element_types = {t for c in combinations for t in c.types[0]}
    assert element_types == {dtype(name) for name in dtypes.KERNEL_TYPES if hasattr(tensorrt().DataType, name)}
    assert len(combinations) == 2 ** len(set(op.index_inputs.values()))


@pytest.mark.parametrize("op, shapes, types", [
    (SLICE_SCATTER, [(3, 1000), (3, 500), (1,), (1,), (1,), (1,)], ["HALF", "HALF", "INT32", "INT32", "INT32", "INT64"]),
    (SLICE_SCATTER, [(3, 1000), (3, 500), (1,), (1,), (1,), (1,)], ["FLOAT", "FLOAT", "INT64", "INT64", "INT64", "INT64"]),
    (SLICE_SCATTER, [(2, 5), (2, 5), (2,), (2,), (1,), (2,)], ["FLOAT", "FLOAT", "INT64", "INT64", "INT64", "INT64"]),  # lengths differ: axes_count 0
    (SCATTER_UPDATE, [(7, 9, 2), (4,), (7, 4, 2), (1,)], ["INT8", "INT64", "INT8", "INT32"]),
    (SCATTER_UPDATE, [(7, 9, 2), (4,), (7, 4, 2), (1,)], ["FLOAT", "INT64", "FLOAT", "INT64"]),
    (SCATTER_UPDATE, [(9,), (), (), (1,)], ["FLOAT", "INT64", "FLOAT", "INT64"]),  # 0-D indices and updates: the grid is a plain 1
])
def test_aot_impl_hands_tensorrt_the_integer_launch(registered, op, shapes, types):
    """What get_launch_params receives (kernel, PTX, KernelLaunchParams, SymInt32 scalars) evaluates to
    the launch the CPU tests run with ints: the registration's expressions, evaluated, are those numbers."""
    plain = [desc(shape, type_name) for shape, type_name in zip(shapes, types)]
    symbolic = [qdp.TensorDesc(d.dtype, [qdp.ShapeExpr(dim) for dim in d.shape_expr], d.shape) for d in plain]
    name, ptx, launch, scalars = qdp.get_launch_params(aot.plugin_id(op.name), symbolic, (symbolic[0].aliased(),))
    expected = aot.kernel_launch(op, plain)
    assert registered == [(expected.kernel, expected.element_size, expected.index_itemsize)]
    assert f".entry {name}(" in ptx
    assert launch == dict(grid_x=expected.grid, grid_y=1, grid_z=1, block_x=kernels.BLOCK, block_y=1, block_z=1, shared_mem=0)
    assert scalars == expected.scalars


class _Network:
    """The part of full TensorRT's INetworkDefinition that plugins.aot.add_plugin_layer uses."""

    def __init__(self, refuse=False):
        self.refuse, self.added = refuse, []

    def add_plugin(self, plugin, aot):
        self.added.append((plugin, aot))
        return None if self.refuse else type("Layer", (), {"get_output": lambda self, index: ("output", index)})()


def test_add_plugin_layer_adds_the_aot_form_and_refuses_a_none_layer(registered, monkeypatch):
    monkeypatch.setattr(aot, "tensorrt_plugin", lambda: (tensorrt(), qdp))
    monkeypatch.setattr(aot, "_registered", {name: aot.plugin_id(name) for name in OPS})  # defined by the fixture
    network = _Network()
    assert aot.add_plugin_layer(network, "ScatterUpdate", ["d", "i", "u", "a"]) == ("output", 0)
    assert network.added == [(("plugin", "trt_scatter::ScatterUpdate", ("d", "i", "u", "a"), {}), True)]
    with pytest.raises(PluginError, match=r"^ScatterUpdate \(AOT\): TensorRT refused the plugin layer"):
        aot.add_plugin_layer(_Network(refuse=True), "ScatterUpdate", ["d", "i", "u", "a"])
    with pytest.raises(PluginError, match=r"SliceScatter \(AOT\) takes all of its inputs .*give axes 0..n-1"):
        aot.add_plugin_layer(network, "SliceScatter", ["d", "u", "b", "e", "s"])


def test_add_plugin_layer_passes_every_attribute_by_name_in_order(registered, monkeypatch):
    """tensorrt.plugin's op call takes the tensors, then every attribute by name, in order (``_lib.py``): the
    ones given, the defaults for the rest; a value an attribute does not admit is one line, before TensorRT."""
    monkeypatch.setattr(aot, "tensorrt_plugin", lambda: (tensorrt(), qdp))
    monkeypatch.setattr(aot, "_registered", {name: aot.plugin_id(name) for name in OPS})
    network = _Network()
    aot.add_plugin_layer(network, "ScatterElementsReduce", ["d", "i", "u"], reduction="max", axis=1)
    aot.add_plugin_layer(network, "CacheScatter", ["c", "u", "w"])
    assert [(plugin[3], list(plugin[3])) for plugin, _ in network.added] == [
        ({"axis": 1, "reduction": "max", "include_self": 1}, ["axis", "reduction", "include_self"]),
        ({"axis": -2, "mode": "linear"}, ["axis", "mode"])]
    with pytest.raises(PluginError, match=r"^CacheScatter \(AOT\): attribute 'mode' must be one of the strings 'linear', 'circular' \(got 'wrap'\)$"):
        aot.add_plugin_layer(network, "CacheScatter", ["c", "u", "w"], mode="wrap")
    with pytest.raises(PluginError, match=r"^ScatterNDReduce \(AOT\): 'axis' is not an attribute of ScatterNDReduce"):
        aot.add_plugin_layer(network, "ScatterNDReduce", ["d", "i", "u"], axis=0)
    assert len(network.added) == 2


def test_a_node_that_leaves_an_attribute_out_gets_it_from_to_aot_and_is_refused_without(registered):
    """TensorRT hands aot_impl the values of the attributes a node has, by position: one left out would shift the
    others onto the wrong names (the tactic into 'mode'). to_aot writes them all; without, aot_impl says so."""
    from onnx import helper

    from trt_scatter.passes.aot import to_aot

    node = helper.make_node("CacheScatter", ["cache", "update", "write_indices"], ["out"], domain="trt_scatter", mode="circular")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("cache", 6, [3, 9, 5]), helper.make_tensor_value_info("update", 6, [3, 2, 5]),
                                            helper.make_tensor_value_info("write_indices", 6, [3])],
                              [helper.make_tensor_value_info("out", 6, [3, 9, 5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
    written = {a.name: helper.get_attribute_value(a) for a in to_aot(model).graph.node[-1].attribute}
    assert written == {"mode": b"circular", "axis": -2, "plugin_namespace": b"trt_scatter", "aot": 1}
    shapes, types = [(3, 9, 5), (3, 2, 5), (3,)], ["INT32", "INT32", "INT32"]
    symbolic = [qdp.TensorDesc(d.dtype, [qdp.ShapeExpr(dim) for dim in d.shape_expr], d.shape) for d in (desc(s, t) for s, t in zip(shapes, types))]
    attributes = {"axis": -2, "mode": "circular"}
    _, _, _, scalars = qdp.get_launch_params(aot.plugin_id("CacheScatter"), symbolic, (symbolic[0].aliased(),), attributes=attributes)
    assert scalars[1:3] == [1, 1]  # axis -2 of rank 3, circular
    with pytest.raises(PluginError, match=r"^CacheScatter \(AOT\): TensorRT passed the values 'circular' for the attributes axis, mode: the node "
                                          r"must give every one, defaults included \(trt_scatter.passes.aot.to_aot writes them\)$"):
        qdp.get_launch_params(aot.plugin_id("CacheScatter"), symbolic, (symbolic[0].aliased(),), attributes={"mode": "circular"})


# --- aot_impl: kernel, scalars, grid ----------------------------------------------------------


def test_slice_scatter_launch_with_ints():
    inputs = [desc((4, 6, 8), "HALF"), desc((4, 3, 8), "HALF"), desc((1,), "INT32"), desc((1,), "INT32"), desc((1,), "INT32"),
              desc((1,), "INT64")]
    launch = aot.kernel_launch(SLICE_SCATTER, inputs)
    assert (launch.kernel, launch.element_size, launch.index_itemsize) == ("slice_scatter_aot", 2, None)
    assert launch.grid == kernels.aot_grid((4, 3, 8)) == 1
    assert launch.scalars == slice_kernel.scalars(data_shape=(4, 6, 8), updates_shape=(4, 3, 8), axes_count=2,
                                                               param_itemsize=4, axes_itemsize=8)


def test_scatter_update_launch_with_ints():
    inputs = [desc((5, 300), "INT8"), desc((2, 2), "INT64"), desc((2, 2, 300), "INT8"), desc((1,), "INT32")]
    launch = aot.kernel_launch(SCATTER_UPDATE, inputs)
    assert (launch.kernel, launch.element_size, launch.index_itemsize) == ("scatter_update_aot", 1, 8)
    assert launch.grid == 5  # 1200 updated elements, 256 per block
    assert launch.scalars[:4] == [2, 2, 3, 4] and launch.scalars[4:6] == [5, 300] and launch.scalars[12:14] == [2, 2]


def test_lengths_that_differ_reach_the_kernel_as_axes_count_zero():
    inputs = [desc((4, 6)), desc((4, 6)), desc((2,), "INT64"), desc((2,), "INT64"), desc((1,), "INT64"), desc((2,), "INT64")]
    assert aot.kernel_launch(SLICE_SCATTER, inputs).scalars[1] == 0


@pytest.mark.parametrize("index, shape, name", [
    (0, qdp.Shape((-1, 6), max=(2**31, 6)), "data"),  # a profile's max too large for int32
    (1, qdp.Shape((4, -1), max=(4, 2**32)), "updates"),
    (2, (2**31,), "start"),
])
def test_aot_limits_are_checked_at_build_time_on_the_largest_shape(index, shape, name):
    inputs = [desc((4, 6)), desc((4, 6)), desc((1,), "INT64"), desc((1,), "INT64"), desc((1,), "INT64"), desc((1,), "INT64")]
    inputs[index] = qdp.TensorDesc(inputs[index].dtype, inputs[index].shape_expr, shape)
    with pytest.raises(ScatterInputError, match=rf"SliceScatter: '{name}' does not fit the AOT form \(the AOT form passes shapes as int32: "
                                                r"every dimension below 2\*\*31, rank at most 8\)"):
        aot.kernel_launch(SLICE_SCATTER, inputs)
    inputs[index] = qdp.TensorDesc(inputs[index].dtype, inputs[index].shape_expr, qdp.Shape((-1,) * len(shape), max=(2**31 - 1,) * len(shape)))
    aot.kernel_launch(SLICE_SCATTER, inputs)  # the largest that fits


def test_types_the_kernels_cannot_move_are_named():
    inputs = [desc((4, 3), "INT4"), desc((2,)), desc((2, 3), "INT4"), desc((1,), "INT32")]
    with pytest.raises(ScatterInputError, match=r"ScatterUpdate: 'data' must have an element type of 1, 2, 4 or 8 bytes for the AOT kernels \(got INT4\)"):
        aot.kernel_launch(SCATTER_UPDATE, inputs)
    inputs = [desc((4, 3)), desc((2,), "UINT8"), desc((2, 3)), desc((1,), "INT32")]
    with pytest.raises(ScatterInputError, match=r"'indices' must have type int32 or int64"):
        aot.kernel_launch(SCATTER_UPDATE, inputs)


# --- the launch the registration describes, on the CPU shim, against the oracle ---------------


def _run_described_launch(op, arrays, shim):
    """Launches what ``kernel_launch`` says for these arrays, as an engine would: data already in the
    aliased output, then the AOT kernel with the described scalars and grid."""
    inputs = [desc_of(array, index=name in op.index_inputs) for name, array in zip(op.inputs, arrays)]
    launch = aot.kernel_launch(op, inputs)
    memory = host.Memory()
    try:
        output = memory.put(arrays[0])
        pointers = [output] + [memory.put(array) for array in arrays[1:]]
        with host._using(host.ShimDevice(shim)):
            kernels.launch_aot(launch.kernel, launch.element_size, launch.index_itemsize, pointers, launch.scalars,
                                output=output, data=0, data_bytes=0, grid=launch.grid, stream=0)
        result = memory.get(output, arrays[0].dtype, arrays[0].shape)
        memory.check_guards()
    finally:
        memory.free()
    return result


@needs_gxx
@settings(max_examples=cases.scaled(0.5))
@given(case=cases.slice_scatter_cases())
def test_described_slice_scatter_launch_matches_the_oracle(shim, case):
    axes = list(range(len(case.start))) if case.axes is None else case.axes  # what passes.aot adds
    arrays = [case.data, case.updates] + [np.asarray(v, case.param_dtype) for v in (case.start, case.stop, case.step)]
    arrays.append(np.asarray(axes, case.axes_dtype))
    expected = oracle.slice_scatter(case.data, case.updates, case.start, case.stop, case.step, case.axes)
    np.testing.assert_array_equal(host.as_bits(_run_described_launch(SLICE_SCATTER, arrays, shim)), host.as_bits(expected))


@needs_gxx
@settings(max_examples=cases.scaled(0.5))
@given(case=cases.scatter_update_cases())
def test_described_scatter_update_launch_matches_the_oracle(shim, case):
    axis = case.notes["axis"]
    flat = case.indices.reshape(-1)
    in_range = (flat >= 0) & (flat < case.data.shape[axis])  # the others are skipped (the kernel tests count them)
    rows = case.updates.reshape(case.data.shape[:axis] + (flat.size,) + case.data.shape[axis + 1 :])
    axis_array = np.full(case.axis_shape, case.axis, case.axis_dtype)
    expected = oracle.scatter_update(case.data, flat[in_range], np.compress(in_range, rows, axis=axis), axis_array)
    arrays = [case.data, case.indices, case.updates, axis_array]
    np.testing.assert_array_equal(host.as_bits(_run_described_launch(SCATTER_UPDATE, arrays, shim)), host.as_bits(expected))


@pytest.mark.parametrize("shapes, types, attributes", [
    ([(4, 8, 64, 16), (4, 8, 1, 16), (4,)], ["HALF", "HALF", "INT64"], {"axis": -2, "mode": "linear"}),
    ([(3, 9, 5), (3, 2, 5), (3,)], ["INT32", "INT32", "INT32"], {"axis": 1, "mode": "circular"}),
])
def test_cache_scatter_aot_impl_passes_the_nodes_attributes(registered, shapes, types, attributes):
    """TensorRT's plugin class passes the attributes positionally after the inputs; they reach the scalars."""
    plain = [desc(shape, type_name) for shape, type_name in zip(shapes, types)]
    symbolic = [qdp.TensorDesc(d.dtype, [qdp.ShapeExpr(dim) for dim in d.shape_expr], d.shape) for d in plain]
    name, ptx, launch, scalars = qdp.get_launch_params(aot.plugin_id("CacheScatter"), symbolic, (symbolic[0].aliased(),), attributes=attributes)
    expected = aot.kernel_launch(CACHE_SCATTER, plain, attributes=attributes)
    assert registered == [("tensor_scatter_aot", expected.element_size, None)] and scalars == expected.scalars
    rank = len(shapes[0])
    assert scalars[:5] == [rank, attributes["axis"] % rank, int(attributes["mode"] == "circular"), 8 if types[2] == "INT64" else 4, shapes[0][0]]
    assert launch["grid_x"] == kernels.aot_grid(shapes[1])


@needs_gxx
@settings(max_examples=cases.scaled(0.5))
@given(case=cases.tensor_scatter_cases())
def test_described_cache_scatter_launch_matches_the_oracle(shim, case):
    if case.write_indices is None:  # the AOT form always has them (passes.aot writes the zeros in)
        case.write_indices = np.zeros(case.data.shape[0], np.int64)
    arrays = [case.data, case.update, case.write_indices]
    inputs = [desc_of(array, index=name in CACHE_SCATTER.index_inputs) for name, array in zip(CACHE_SCATTER.inputs, arrays)]
    launch = aot.kernel_launch(CACHE_SCATTER, inputs, attributes={"axis": case.axis, "mode": case.mode})
    memory = host.Memory()
    try:
        output = memory.put(case.data)
        pointers = [output, memory.put(case.update), memory.put(case.write_indices)]
        with host._using(host.ShimDevice(shim)):
            kernels.launch_aot(launch.kernel, launch.element_size, None, pointers, launch.scalars, output=output, data=0,
                               data_bytes=0, grid=launch.grid, stream=0)
        result = memory.get(output, case.data.dtype, case.data.shape)
        memory.check_guards()
    finally:
        memory.free()
    np.testing.assert_array_equal(host.as_bits(result), host.as_bits(cases.expected_tensor_scatter(case)[0]))


# --- the reduction ops: what the AOT form takes (one launch, no workspace: integer atomics) -----------------

from trt_scatter.ops import SCATTER_ELEMENTS_REDUCE, SCATTER_ND_REDUCE  # noqa: E402


@pytest.mark.parametrize("op", [SCATTER_ELEMENTS_REDUCE, SCATTER_ND_REDUCE])
def test_reductions_autotune_only_int32_and_int64(registered, op):
    autotune = qdp.REGISTRY[aot.plugin_id(op.name)]["autotune"]
    combinations = autotune(*[desc((1,)) for _ in op.inputs], "add", 1, *([0] if op is SCATTER_ELEMENTS_REDUCE else []), (desc((1,)),))
    assert {t for c in combinations for t in c.types[0]} == {dtype("INT32"), dtype("INT64")}


def test_reduction_aot_impl_gets_its_attributes_and_hands_the_integer_launch(registered):
    shapes, types = [(6, 8), (10, 1), (10, 8)], ["INT64", "INT32", "INT64"]
    plain = [desc(shape, type_name) for shape, type_name in zip(shapes, types)]
    symbolic = [qdp.TensorDesc(d.dtype, [qdp.ShapeExpr(dim) for dim in d.shape_expr], d.shape) for d in plain]
    name, ptx, launch, scalars = qdp.get_launch_params(aot.plugin_id("ScatterNDReduce"), symbolic, (symbolic[0].aliased(),),
                                                       attributes={"reduction": "max", "include_self": 1})
    assert registered == [("scatter_nd_reduce_aot", 8, 4)] and launch["grid_x"] == 1
    assert scalars == [2, 2, 2, 3] + [6, 8] + [0] * 6 + [10, 1] + [0] * 6 + [10, 8] + [0] * 6  # ranks, max, the three shapes


@pytest.mark.parametrize("types, attributes, message", [
    (["FLOAT", "INT64", "FLOAT"], {}, r"'data' must be int32 or int64 for the AOT form \(the AOT form has one kernel launch and no workspace"),
    (["INT32", "INT64", "INT32"], {"reduction": "mean"}, r"'reduction' must be add, mul, min or max for the AOT form"),
    (["INT32", "INT64", "INT32"], {"include_self": 0}, r"'include_self' must be 1 for the AOT form"),
])
def test_reduction_aot_impl_refuses_what_needs_the_ordered_sort(types, attributes, message):
    inputs = [desc(shape, type_name) for shape, type_name in zip([(6,), (4,), (4,)], types)]
    with pytest.raises(ScatterInputError, match=rf"^scatter_elements_reduce: {message}"):
        aot.kernel_launch(SCATTER_ELEMENTS_REDUCE, inputs, attributes=attributes)


def test_to_aot_refuses_a_float_reduction_node_in_one_line():
    from trt_scatter.model import ModelError
    from trt_scatter.onnx_models import scatter_nd_reduce_model
    from trt_scatter.passes.aot import to_aot

    to_aot(scatter_nd_reduce_model((4, 3), (5, 1), "min", 1, dtype=np.int32))
    with pytest.raises(ModelError) as raised:
        to_aot(scatter_nd_reduce_model((4, 3), (5, 1), "add", 1))
    assert str(raised.value).startswith("ScatterNDReduce node 'ScatterNDReduce_0': scatter_nd_reduce: 'data' must be int32 or int64 for the AOT form (")
    assert "\n" not in str(raised.value)
