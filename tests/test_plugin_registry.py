"""trt_scatter.plugins.register(), the TensorRT-RTX library fix, add_plugin_layer and the creators' fields."""

import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import needs_full_tensorrt

import plugin_models as models

from trt_scatter import backend, plugins
from trt_scatter.plugins.base import PluginError
from trt_scatter.ops import OPS, SCATTER_UPDATE, SLICE_SCATTER
from trt_scatter.plugins.base import plugin_class

ScatterUpdatePlugin, SliceScatterPlugin = plugin_class(SCATTER_UPDATE), plugin_class(SLICE_SCATTER)

trt = backend.tensorrt()
needs_rtx = pytest.mark.skipif(not backend.is_rtx(), reason="the library fix and the missing add_plugin_v3 are TensorRT-RTX's")


def _ours(registry):
    return [(c.name, c.plugin_version, c.plugin_namespace) for c in registry.all_creators if c.name in plugins.PLUGIN_NAMES]


def test_register_is_idempotent():
    first = plugins.register()
    second = plugins.register()
    assert set(first) == set(OPS) == {"SliceScatter", "ScatterUpdate", "ScatterElementsReduce", "ScatterNDReduce", "CacheScatter"}
    assert all(first[name] is second[name] for name in first)
    assert sorted(_ours(trt.get_plugin_registry())) == sorted((name, "1", "") for name in OPS)


def test_register_reads_the_debug_switch_so_an_unusual_value_is_named_where_no_kernel_runs(monkeypatch, caplog):
    """TRT_SCATTER_DEBUG was read only when a plugin launched its kernel: on a machine without a GPU, build --plugins and
    check with TRT_SCATTER_DEBUG=2 gave no word of the value taken as on."""
    from trt_scatter import log

    monkeypatch.setenv("TRT_SCATTER_DEBUG", "2")
    monkeypatch.setattr(log, "_warned_flags", set())
    plugins.register()
    assert "TRT_SCATTER_DEBUG='2' is not one of 1/true/yes/on (on) or 0/false/no/off (off): taken as on" in caplog.text


def test_registry_hands_out_our_creators():
    creators = plugins.register()
    for name in plugins.PLUGIN_NAMES:
        found = trt.get_plugin_registry().get_creator(name, "1", "")
        assert found is not None and found.name == name and found.plugin_version == "1" and found.plugin_namespace == ""
        assert [field.name for field in creators[name].field_names] == list(OPS[name].attributes)  # the op's attributes
    assert [field.name for field in creators["ScatterNDReduce"].field_names] == ["reduction", "include_self", "inplace"]


def test_register_keeps_creators_already_in_the_registry(monkeypatch):
    """A second copy of the module state (e.g. a reloaded package) reuses the registered creators instead of failing."""
    first = plugins.register()
    monkeypatch.setattr(plugins, "_creators", {})
    again = plugins.register()
    assert all(again[name] is first[name] for name in first)
    assert len(_ours(trt.get_plugin_registry())) == len(OPS)


def test_inplace_needs_the_v2_build_interface(monkeypatch):
    from trt_scatter.plugins import base

    monkeypatch.setattr(base, "CAN_ALIAS", False)
    fields = base.fields_to_keep({"inplace": 1})
    with pytest.raises(PluginError, match=r"SliceScatter: inplace=1 needs IPluginV3OneBuildV2 \(TensorRT >= 10.3\)"):
        plugins.register()["SliceScatter"].create_plugin("s", trt.PluginFieldCollection(fields), trt.TensorRTPhase.BUILD)


def test_importing_the_package_needs_no_tensorrt():
    code = "import sys, trt_scatter.plugins; print([m for m in ('tensorrt', 'tensorrt_rtx') if m in sys.modules])"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"inplace": np.array([2], np.int32)}, "plugin field 'inplace' must be 0 or 1 (got array([2]"),
        ({"inplace": np.array([1, 0], np.int32)}, "plugin field 'inplace' must be 0 or 1"),
        ({"inplace": np.array([0.5], np.float32)}, "plugin field 'inplace' must be 0 or 1"),
        ({"stride": np.array([1], np.int32)}, "unknown plugin field(s) ['stride']; known: ["),
    ],
)
def test_create_plugin_rejects_bad_fields(fields, message):
    kinds = {np.dtype(np.int32): trt.PluginFieldType.INT32, np.dtype(np.float32): trt.PluginFieldType.FLOAT32}
    kept = [trt.PluginField(name, value, kinds[value.dtype]) for name, value in fields.items()]
    for name, creator in plugins.register().items():
        with pytest.raises(PluginError) as caught:
            creator.create_plugin(name, trt.PluginFieldCollection(kept), trt.TensorRTPhase.BUILD)
        assert str(caught.value).startswith(f"{name}: ") and message in str(caught.value)


@pytest.mark.parametrize("kind", ["FLOAT16", "BF16", "FP8", "FLOAT32", "DIMS", "CHAR"])
def test_an_int_field_of_another_type_is_refused_by_its_type(kind):
    """The field's declared type decides: reading a FLOAT16, BF16, FP8 or DIMS field's data raised an AttributeError
    naming nothing, inside TensorRT's parser; a CHAR field's bytes were read as the int."""
    field = trt.PluginField("inplace", np.array([1], np.int8), getattr(trt.PluginFieldType, kind))
    for name, creator in plugins.register().items():
        with pytest.raises(PluginError) as caught:
            creator.create_plugin(name, trt.PluginFieldCollection([field]), trt.TensorRTPhase.BUILD)
        assert str(caught.value) == (f"{name}: plugin field 'inplace' must be 0 or 1, in an INT8, INT16, INT32 or INT64 field "
                                     f"(got a field of type {kind})")


@pytest.mark.parametrize(
    "op, field, message",
    [
        ("CacheScatter", ("axis", np.frombuffer(b"2", np.int8).copy(), "CHAR"),
         "CacheScatter: plugin field 'axis' must be an int, in an INT8, INT16, INT32 or INT64 field (got a field of type CHAR)"),
        ("ScatterElementsReduce", ("reduction", np.array([109, 97, 120], np.int32), "INT32"),  # the bytes of 'max'
         "ScatterElementsReduce: plugin field 'reduction' must be add or mul or min or max or mean, in a CHAR field (got a field of type INT32)"),
        ("CacheScatter", ("axis", np.array([2**40], np.int64), "INT64"),
         "CacheScatter: plugin field 'axis' must fit in int32, as the plugin gives it back (got 1099511627776)"),
        ("ScatterElementsReduce", ("axis", np.array([-2**31 - 1], np.int64), "INT64"),
         "ScatterElementsReduce: plugin field 'axis' must fit in int32, as the plugin gives it back (got -2147483649)"),
    ],
)
def test_a_field_is_read_as_its_declared_type_and_must_fit_what_the_plugin_gives_back(op, field, message):
    name, data, kind = field
    kept = [trt.PluginField(name, data, getattr(trt.PluginFieldType, kind))]
    with pytest.raises(PluginError) as caught:
        plugins.register()[op].create_plugin("p", trt.PluginFieldCollection(kept), trt.TensorRTPhase.BUILD)
    assert str(caught.value) == message


def test_a_string_field_of_no_allowed_value_is_shown_as_the_string():
    field = trt.PluginField("mode", np.frombuffer(b"bogus", np.int8).copy(), trt.PluginFieldType.CHAR)
    with pytest.raises(PluginError) as caught:
        plugins.register()["CacheScatter"].create_plugin("p", trt.PluginFieldCollection([field]), trt.TensorRTPhase.BUILD)
    assert str(caught.value) == "CacheScatter: plugin field 'mode' must be linear or circular (got 'bogus')"


def test_an_int_field_of_any_integer_type_and_a_char_field_give_the_plugin_its_values():
    kept = [trt.PluginField("axis", np.array([-1], np.int64), trt.PluginFieldType.INT64),
            trt.PluginField("reduction", np.frombuffer(b"max", np.int8).copy(), trt.PluginFieldType.CHAR),
            trt.PluginField("include_self", np.array([0], np.int8), trt.PluginFieldType.INT8)]
    plugin = plugins.register()["ScatterElementsReduce"].create_plugin("p", trt.PluginFieldCollection(kept), trt.TensorRTPhase.BUILD)
    assert plugin.attributes == {"axis": -1, "reduction": "max", "include_self": 0}


@models.forked
def test_bad_inplace_attribute_fails_the_onnx_parse_with_our_message(capfd):
    with pytest.raises(AssertionError, match="Could not create the plugin"):
        models.build(models.scatter_update_model([4, 5], [1], [1, 5], 0, inplace=2))
    assert "ScatterUpdate: plugin field 'inplace' must be 0 or 1" in capfd.readouterr().err


def test_create_plugin_defaults_to_copying():
    creators = plugins.register()
    slice_plugin = creators["SliceScatter"].create_plugin("s", trt.PluginFieldCollection(), trt.TensorRTPhase.BUILD)
    update_plugin = creators["ScatterUpdate"].create_plugin("u", trt.PluginFieldCollection(), trt.TensorRTPhase.BUILD)
    assert isinstance(slice_plugin, SliceScatterPlugin) and isinstance(update_plugin, ScatterUpdatePlugin)
    assert slice_plugin.get_aliased_input(0) == update_plugin.get_aliased_input(0) == -1


# ---- the TensorRT-RTX packaging fix -------------------------------------------------------------


def test_fix_creates_the_link_once(tmp_path):
    (tmp_path / "libtensorrt_rtx.so.1").write_bytes(b"\x7fELF")
    link = plugins.fix_rtx_library_link(str(tmp_path))
    assert link == str(tmp_path / "libtensorrt_rtx.so")
    assert os.readlink(link) == "libtensorrt_rtx.so.1" and open(link, "rb").read() == b"\x7fELF"
    assert plugins.fix_rtx_library_link(str(tmp_path)) == link
    assert sorted(os.listdir(tmp_path)) == ["libtensorrt_rtx.so", "libtensorrt_rtx.so.1"]


def test_fix_says_which_link_to_create_when_it_cannot(tmp_path, monkeypatch):
    (tmp_path / "libtensorrt_rtx.so.1").write_bytes(b"")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "symlink", refuse)
    with pytest.raises(PluginError) as caught:
        plugins.fix_rtx_library_link(str(tmp_path))
    assert f"ln -s libtensorrt_rtx.so.1 {tmp_path / 'libtensorrt_rtx.so'}" in str(caught.value)
    assert os.listdir(tmp_path) == ["libtensorrt_rtx.so.1"]


def test_fix_cleans_up_when_the_rename_fails(tmp_path, monkeypatch):
    (tmp_path / "libtensorrt_rtx.so.1").write_bytes(b"")
    monkeypatch.setattr(os, "replace", lambda *args: (_ for _ in ()).throw(OSError(30, "Read-only file system")))
    with pytest.raises(PluginError, match="Read-only file system"):
        plugins.fix_rtx_library_link(str(tmp_path))
    assert os.listdir(tmp_path) == ["libtensorrt_rtx.so.1"]


def test_fix_needs_the_library(tmp_path):
    with pytest.raises(PluginError, match="libtensorrt_rtx.so.1 is not in"):
        plugins.fix_rtx_library_link(str(tmp_path))


@needs_rtx
def test_register_fixed_the_installed_tensorrt_rtx():
    plugins.register()
    link = os.path.join(plugins.rtx_library_folder(), "libtensorrt_rtx.so")
    assert os.path.realpath(link) == os.path.realpath(link + ".1")


# ---- add_plugin_layer ------------------------------------------------------------------------------


@needs_rtx
@pytest.mark.parametrize("op_name", plugins.PLUGIN_NAMES)
def test_add_plugin_layer_on_rtx_points_to_onnx_and_native(op_name):
    network = trt.Builder(trt.Logger()).create_network(0)
    data = network.add_input("data", trt.DataType.FLOAT, (4,))
    with pytest.raises(PluginError) as caught:
        plugins.add_plugin_layer(network, op_name, [data])
    message = str(caught.value)
    assert message.startswith(f"{op_name}: tensorrt_rtx")
    assert "add_plugin_v3" in message and f"'{op_name}' node" in message
    assert ("impl='native'" in message) == (op_name not in ("ScatterElementsReduce", "ScatterNDReduce"))  # no TensorRT layer reduces


def test_add_plugin_layer_rejects_unknown_ops():
    with pytest.raises(PluginError, match="unknown plugin 'Scatter'; known: SliceScatter, ScatterUpdate, ScatterElementsReduce, ScatterNDReduce, CacheScatter$"):
        plugins.add_plugin_layer(object(), "Scatter", [])


class _NetworkWithPluginV3:
    """The part of full TensorRT's INetworkDefinition that add_plugin_layer uses."""

    def __init__(self):
        self.added = []

    def add_plugin_v3(self, inputs, shape_inputs, plugin):
        self.added.append((inputs, shape_inputs, plugin, [(f.name, f.data.tolist()) for f in plugin.get_fields_to_serialize()]))
        return self

    def get_output(self, index):
        return ("output", index)


@pytest.mark.parametrize("fields, inplace", [(None, False), ({"inplace": 1}, True)])
def test_add_plugin_layer_adds_a_v3_plugin(fields, inplace):
    network = _NetworkWithPluginV3()
    assert plugins.add_plugin_layer(network, "ScatterUpdate", ("d", "i", "u", "a"), fields) == ("output", 0)
    (inputs, shape_inputs, plugin, serialized), = network.added
    assert inputs == ["d", "i", "u", "a"] and shape_inputs == []
    assert isinstance(plugin, ScatterUpdatePlugin) and plugin.phase == trt.TensorRTPhase.BUILD
    assert serialized == [("inplace", [int(inplace)])]


@needs_full_tensorrt
def test_add_plugin_layer_builds_with_full_tensorrt():
    builder = trt.Builder(trt.Logger())
    network = builder.create_network(0)
    data = network.add_input("data", trt.DataType.FLOAT, (4, 5))
    updates = network.add_input("updates", trt.DataType.FLOAT, (2, 5))
    params = [network.add_constant((1,), trt.Weights(np.array([v], np.int64))).get_output(0) for v in (0, 4, 2)]
    output = plugins.add_plugin_layer(network, "SliceScatter", [data, updates, *params])
    network.mark_output(output)
    assert tuple(output.shape) == (4, 5)
    assert builder.build_serialized_network(network, builder.create_builder_config()) is not None


@needs_rtx
def test_a_plugin_builder_refused_on_rtx_leaves_the_network_as_it_was():
    """The builders ask whether the plugin layer can be added before they add the constants of its inputs."""
    from trt_scatter.networks import add_scatter_update, add_slice_scatter

    network = trt.Builder(trt.Logger()).create_network(0)
    data, updates = network.add_input("data", trt.DataType.FLOAT, (4, 3)), network.add_input("updates", trt.DataType.FLOAT, (2, 3))
    indices = network.add_input("indices", trt.DataType.INT64, (2,))
    with pytest.raises(PluginError, match="^SliceScatter: .* INetworkDefinition.add_plugin_v3"):
        add_slice_scatter(network, data, updates, [0], [2], [1], [0], impl="plugin")
    with pytest.raises(PluginError, match="^ScatterUpdate: .* INetworkDefinition.add_plugin_v3"):
        add_scatter_update(network, data, indices, updates, 0, impl="plugin")
    assert network.num_layers == 0
