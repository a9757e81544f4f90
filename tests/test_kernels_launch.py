"""The launch code without a GPU: argument structs and kernelParams, grid sizing, checks of the
host-known arguments, the kernel cache (keys, disk round trip), and clear errors without a driver;
for the AOT entry points, the argument list (scalars, grid, limits) with ordinary integers.
Also proves that the safety nets of the kernel tests (guard bytes, AddressSanitizer) can fail."""

import ctypes
import subprocess
import sys

import numpy as np
import pytest

from conftest import HAS_GPU, needs_gxx
from kernel_shim import host
from trt_scatter.oracle import ScatterInputError
from trt_scatter.plugins import slice_scatter as slice_kernel, scatter_update as update_kernel
from trt_scatter.plugins import cuda, kernels


class RecordingDevice:
    """plugins.cuda's launch interface that records calls and keeps a copy of the packed arguments."""

    def __init__(self, args_type=None, sm_count=4):
        self.calls, self.args_type, self._sm_count, self.args = [], args_type, sm_count, None

    def kernel(self, *key):
        self.calls.append(("kernel", *key))
        return "handle", self._sm_count

    def memset_u32_async(self, *a):
        self.calls.append(("memset", *a))

    def memcpy_dtod_async(self, *a):
        self.calls.append(("memcpy", *a))

    def launch(self, function, grid, block, stream, params_address):
        self.calls.append(("launch", function, grid, block, stream))
        if isinstance(self.args_type, list):  # an AOT argument list: one ctypes type per parameter
            params = (ctypes.c_void_p * len(self.args_type)).from_address(params_address)
            self.args = [kind.from_address(params[i]).value for i, kind in enumerate(self.args_type)]
            return
        pointer = ctypes.c_void_p.from_address(params_address).value
        self.args = self.args_type.from_buffer_copy(ctypes.string_at(pointer, ctypes.sizeof(self.args_type)))


@pytest.fixture
def recording(monkeypatch):
    def use(args_type, **kw):
        device = RecordingDevice(args_type, **kw)
        monkeypatch.setattr(kernels, "device", device)
        return device

    return use


SLICE = dict(output=0x1000, data=0x2000, updates=0x3000, start=0x4000, stop=0x4100, step=0x4200, axes=0x4300,
             num_axes=2, data_shape=(4, 5, 6), updates_shape=(4, 2, 3), element_size=2, param_itemsize=8,
             axes_itemsize=4, error_flag=0x5000, stream=0x77)
UPDATE = dict(output=0x1000, data=0, indices=0x2000, updates=0x3000, axis=0x4000, data_shape=(4, 5),
              indices_shape=(3,), updates_shape=(4, 3), element_size=8, index_itemsize=4, axis_itemsize=8, error_flag=0,
              stream=0x99)


def test_slice_scatter_launch_sequence_and_packed_arguments(recording):
    device = recording(slice_kernel.SliceScatterArgs)
    slice_kernel.launch_slice_scatter(**SLICE)
    assert device.calls == [
        ("kernel", "slice_scatter", 2, None, 0x77),  # loaded in the stream's context
        ("memset", 0x5000, 0, 1, 0x77),
        ("memcpy", 0x1000, 0x2000, 4 * 5 * 6 * 2, 0x77),
        ("launch", "handle", 1, kernels.BLOCK, 0x77),
    ]
    a = device.args
    assert (a.output, a.updates, a.start, a.stop, a.step, a.axes, a.error_flag) == (0x1000, 0x3000, 0x4000, 0x4100, 0x4200, 0x4300, 0x5000)
    assert list(a.data_shape) == [4, 5, 6, 0, 0, 0, 0, 0] and list(a.updates_shape) == [4, 2, 3, 0, 0, 0, 0, 0]
    assert (a.rank, a.num_axes, a.param_itemsize, a.axes_itemsize) == (3, 2, 8, 4)


def test_in_place_and_default_axes_skip_the_copy_and_pass_null_axes(recording):
    device = recording(slice_kernel.SliceScatterArgs)
    slice_kernel.launch_slice_scatter(**{**SLICE, "data": 0, "axes": 0, "axes_itemsize": 3, "error_flag": 0})
    assert [c[0] for c in device.calls] == ["kernel", "launch"]
    assert device.args.axes is None and device.args.error_flag is None and device.args.axes_itemsize == 0


def test_data_equal_to_output_is_in_place(recording):
    device = recording(slice_kernel.SliceScatterArgs)
    slice_kernel.launch_slice_scatter(**{**SLICE, "data": SLICE["output"]})
    assert "memcpy" not in [c[0] for c in device.calls]


def test_scatter_update_packed_arguments(recording):
    device = recording(update_kernel.ScatterUpdateArgs)
    update_kernel.launch_scatter_update(**{**UPDATE, "updates_shape": (3, 5)})
    assert device.calls == [("kernel", "scatter_update", 8, 4, 0x99), ("launch", "handle", 1, kernels.BLOCK, 0x99)]
    a = device.args
    assert (a.output, a.updates, a.indices, a.axis, a.error_flag) == (0x1000, 0x3000, 0x2000, 0x4000, None)
    assert list(a.data_shape[:2]) == [4, 5] and a.indices_shape[0] == 3 and list(a.updates_shape[:2]) == [3, 5]
    assert (a.data_rank, a.indices_rank, a.updates_rank, a.axis_itemsize) == (2, 1, 2, 8)
    update_kernel.launch_scatter_update(**{**UPDATE, "indices_shape": (), "updates_shape": (4,)})
    assert device.args.updates_rank == 1 and device.args.indices_rank == 0


@needs_gxx
def test_ctypes_structs_match_the_cuda_layout():
    layout = host.layout(host.load(host.shared_library()))
    from trt_scatter.plugins.reductions import LAYOUT, ScatterReduceArgs

    assert LAYOUT.size == ctypes.sizeof(ScatterReduceArgs)  # the packed bytes are the struct's
    for struct in (slice_kernel.SliceScatterArgs, update_kernel.ScatterUpdateArgs, ScatterReduceArgs):
        assert layout[struct.__name__] == ctypes.sizeof(struct)
        for name, _ in struct._fields_:
            assert layout[f"{struct.__name__}.{name}"] == getattr(struct, name).offset, name


@pytest.mark.parametrize("elements, sm_count, blocks", [(0, 4, 1), (1, 4, 1), (256, 4, 1), (257, 4, 2), (10**9, 4, 32), (10**9, 132, 1056)])
def test_grid_size(elements, sm_count, blocks):
    assert kernels.BLOCK == 256 and kernels.BLOCKS_PER_SM == 8
    assert kernels.grid_size(elements, sm_count) == blocks


def test_grid_follows_the_work_and_the_device(recording):
    device = recording(slice_kernel.SliceScatterArgs, sm_count=1)
    slice_kernel.launch_slice_scatter(**{**SLICE, "data_shape": (1000, 6), "updates_shape": (1000, 6), "num_axes": 0})
    assert device.calls[-1][2] == 8  # 6000 elements, capped at 8 blocks per SM


@pytest.mark.parametrize(
    "change, name",
    [
        ({"element_size": 3}, "element_size"),
        ({"element_size": 16}, "element_size"),
        ({"param_itemsize": 2}, "param_itemsize"),
        ({"axes_itemsize": 1}, "axes_itemsize"),
        ({"data_shape": (2,) * 9, "updates_shape": (2,) * 9}, "data_shape"),
        ({"data_shape": ()}, "data_shape"),
        ({"updates_shape": (4, 2)}, "updates_shape"),
        ({"data_shape": (4, -5, 6)}, "data_shape"),
        ({"data_shape": (4, "5", 6)}, "data_shape"),
        ({"data_shape": (4, 5.0, 6)}, "data_shape"),
        ({"num_axes": -1}, "num_axes"),
        ({"start": 0}, "start/stop/step"),
        ({"output": None}, "output"),
        ({"updates": -5}, "updates"),
        ({"axes": 2.5}, "axes"),
        ({"output": 0}, "output"),  # null pointers the kernel or the copy would dereference
        ({"updates": 0}, "updates"),
    ],
)
@pytest.mark.parametrize("launcher", ["launch_slice_scatter", "launch_slice_scatter_aot"])
def test_bad_slice_scatter_arguments_raise_before_any_device_call(recording, change, name, launcher):
    device = recording(slice_kernel.SliceScatterArgs)
    arguments = {**SLICE, **change}
    if launcher.endswith("_aot"):
        del arguments["error_flag"]
    with pytest.raises(ScatterInputError, match=rf"{launcher}: '{name}'") as caught:
        getattr(slice_kernel if "slice" in launcher else update_kernel, launcher)(**arguments)
    assert caught.value.input_name == name and device.calls == []


@pytest.mark.parametrize(
    "change, name",
    [
        ({"element_size": 3}, "element_size"),
        ({"element_size": 16}, "element_size"),
        ({"index_itemsize": 2}, "index_itemsize"),
        ({"axis_itemsize": 16}, "axis_itemsize"),
        ({"indices_shape": (1,) * 9}, "indices_shape"),
        ({"updates_shape": (1,) * 9}, "updates_shape"),
        ({"axis": 0}, "axis"),
        ({"indices": "0x10"}, "indices"),
        ({"indices": 0}, "indices"),  # null pointers the kernel would dereference
        ({"indices": None, "indices_shape": ()}, "indices"),
        ({"output": 0}, "output"),
        ({"updates": 0}, "updates"),
        ({"updates": 0, "updates_shape": (3, 5)}, "updates"),
    ],
)
@pytest.mark.parametrize("launcher", ["launch_scatter_update", "launch_scatter_update_aot"])
def test_bad_scatter_update_arguments_raise_before_any_device_call(recording, change, name, launcher):
    device = recording(update_kernel.ScatterUpdateArgs)
    arguments = {**UPDATE, **change}
    if launcher.endswith("_aot"):
        del arguments["error_flag"]
    with pytest.raises(ScatterInputError, match=rf"{launcher}: '{name}'"):
        getattr(slice_kernel if "slice" in launcher else update_kernel, launcher)(**arguments)
    assert device.calls == []


def test_empty_tensors_may_have_null_pointers(recording):
    """TensorRT may pass null for a tensor without elements; nothing reads or writes it then."""
    device = recording(slice_kernel.SliceScatterArgs)
    slice_kernel.launch_slice_scatter(**{**SLICE, "updates": 0, "updates_shape": (4, 0, 3)})
    slice_kernel.launch_slice_scatter(**{**SLICE, "output": 0, "data": 0, "data_shape": (0, 5, 6), "updates_shape": (0, 2, 3)})
    device = recording(update_kernel.ScatterUpdateArgs)
    update_kernel.launch_scatter_update(**{**UPDATE, "indices": 0, "updates": 0, "indices_shape": (0,), "updates_shape": (4, 0)})
    update_kernel.launch_scatter_update(**{**UPDATE, "updates": 0, "updates_shape": (0, 5), "indices_shape": (0,)})
    assert [call[0] for call in device.calls].count("launch") == 2


def test_error_message_names_the_rule():
    with pytest.raises(ScatterInputError, match=r"'element_size' must be one of 1, 2, 4, 8 bytes \(got 3\)"):
        slice_kernel.slice_scatter_args(**{k: v for k, v in {**SLICE, "element_size": 3}.items() if k not in ("data", "stream")})


def test_check_error_flag_without_flag_needs_no_device(recording):
    device = recording(None)
    assert kernels.check_error_flag(0, 0x77) == 0 and device.calls == []


@pytest.mark.parametrize("value, enabled", [(None, False), ("0", False), ("1", True), ("yes", True), ("false", False)])
def test_debug_mode(monkeypatch, value, enabled):
    if value is None:
        monkeypatch.delenv("TRT_SCATTER_DEBUG", raising=False)
    else:
        monkeypatch.setenv("TRT_SCATTER_DEBUG", value)
    assert kernels.debug_enabled() is enabled


# --- the AOT entry points' argument list ---------------------------------------------------

P, INT = ctypes.c_void_p, ctypes.c_int32
SLICE_AOT_PARAMS = [P] * 6 + [INT] * (4 + 2 * kernels.MAX_RANK) + [P]
UPDATE_AOT_PARAMS = [P] * 4 + [INT] * (4 + 3 * kernels.MAX_RANK) + [P]


def _aot(arguments):
    return {key: value for key, value in arguments.items() if key != "error_flag"}


def test_slice_scatter_aot_launch_passes_inputs_scalars_then_output(recording):
    device = recording(SLICE_AOT_PARAMS)
    slice_kernel.launch_slice_scatter_aot(**_aot(SLICE))
    # TensorRT's copy of data into the aliased output first (here data != output), then one kernel
    assert device.calls == [("kernel", "slice_scatter_aot", 2, None, 0x77), ("memcpy", 0x1000, 0x2000, 4 * 5 * 6 * 2, 0x77),
                            ("launch", "handle", 1, kernels.BLOCK, 0x77)]
    # data's pointer is the output's: in an engine they are aliased
    assert device.args[:6] == [0x1000, 0x3000, 0x4000, 0x4100, 0x4200, 0x4300]
    assert device.args[6:10] == [3, 3, 8, 4]  # rank, axes_count (1 + num_axes), param_itemsize, axes_itemsize
    assert device.args[10:18] == [4, 5, 6, 0, 0, 0, 0, 0] and device.args[18:26] == [4, 2, 3, 0, 0, 0, 0, 0]
    assert device.args[26] == 0x1000
    device.calls.clear()
    slice_kernel.launch_slice_scatter_aot(**_aot({**SLICE, "axes": 0, "data": 0}))  # default axes, in place: no copy
    assert [call[0] for call in device.calls] == ["kernel", "launch"]
    assert device.args[5] is None and device.args[9] == 0  # null axes, axes_itemsize 0


def test_scatter_update_aot_launch_passes_inputs_scalars_then_output(recording):
    device = recording(UPDATE_AOT_PARAMS)
    update_kernel.launch_scatter_update_aot(**_aot({**UPDATE, "indices_shape": (3, 1), "updates_shape": (4, 3, 1)}))
    assert device.calls == [("kernel", "scatter_update_aot", 8, 4, 0x99), ("launch", "handle", 1, kernels.BLOCK, 0x99)]
    assert device.args[:4] == [0x1000, 0x2000, 0x3000, 0x4000]  # data (= output), indices, updates, axis
    assert device.args[4:8] == [2, 2, 3, 8]  # ranks of data, indices, updates; axis_itemsize
    assert device.args[8:16] == [4, 5, 0, 0, 0, 0, 0, 0]
    assert device.args[16:24] == [3, 1, 0, 0, 0, 0, 0, 0] and device.args[24:32] == [4, 3, 1, 0, 0, 0, 0, 0]
    assert device.args[32] == 0x1000


@pytest.mark.parametrize("updates_shape, blocks", [((), 1), ((0, 7), 1), ((256,), 1), ((257,), 2), ((4, 1000),  16),
                                                   ((2**20, 2**10), kernels.AOT_MAX_BLOCKS)])
def test_aot_grid(updates_shape, blocks):
    assert kernels.aot_grid(updates_shape) == blocks


def test_aot_grid_cap_is_one_wave_on_an_h100():
    # Blocks beyond the resident ones make a second wave that costs microseconds even when idle.
    assert kernels.AOT_MAX_BLOCKS <= 132 * kernels.BLOCKS_PER_SM


def test_aot_launch_uses_the_aot_grid(recording):
    device = recording(SLICE_AOT_PARAMS)
    slice_kernel.launch_slice_scatter_aot(**_aot({**SLICE, "data_shape": (1000, 6), "updates_shape": (1000, 6), "num_axes": 0}))
    assert device.calls[-1][2] == 24  # 6000 elements: no device-dependent cap below AOT_MAX_BLOCKS


@pytest.mark.parametrize("lengths, count", [([3, 3, 3, 3], 4), ([0, 0, 0, 0], 1), ([2, 2, 1, 2], 0),
                                            ([2, 3, 2, 2], 0), ([2, 2, 2, 0], 0), ([1, 1, 1], 2)])
def test_slice_scatter_axes_count_is_zero_when_lengths_differ(lengths, count):
    assert slice_kernel.axes_count_scalar(lengths) == count


@needs_gxx
def test_axes_count_zero_makes_the_aot_kernel_write_nothing():
    """The run-time answer to start/stop/step/axes of different lengths: nothing written."""
    lib, memory = host.load(host.shared_library()), host.Memory()
    data = np.arange(12, dtype=np.int32).reshape(3, 4)
    output = memory.put(data)
    scalars = slice_kernel.scalars(data_shape=(3, 4), updates_shape=(3, 4), param_itemsize=8,
                                                axes_itemsize=8, axes_count=slice_kernel.axes_count_scalar([1, 1, 1, 0]))
    params = [memory.put(np.array(v, np.int64)) for v in ([0], [4], [1])]
    with host._using(host.ShimDevice(lib)):
        kernels.launch_aot("slice_scatter_aot", 4, None, [output, memory.put(np.zeros((3, 4), np.int32)), *params, 0],
                            scalars, output=output, data=0, data_bytes=0, grid=1, stream=0)
    np.testing.assert_array_equal(memory.get(output, np.int32, (3, 4)), data)
    assert scalars[1] == 0


def test_aot_scalars_work_on_any_dimension_objects():
    """The registration passes TensorRT shape expressions: the functions only place them."""
    dims = [object() for _ in range(5)]
    scalars = update_kernel.scalars(data_shape=dims[:2], indices_shape=dims[2:3], updates_shape=dims[3:5],
                                                 axis_itemsize=4)
    assert scalars[:4] == [2, 1, 2, 4] and len(scalars) == 4 + 3 * kernels.MAX_RANK
    assert scalars[4:6] == dims[:2] and scalars[12] is dims[2] and scalars[20:22] == dims[3:5]


@pytest.mark.parametrize("shapes, name", [({"data": (2**31, 2)}, "data"), ({"data": (1, 2), "updates": (3, 2**40)}, "updates"),
                                          ({"indices": (1,) * 9}, "indices")])
def test_aot_limits_are_named_in_one_line(shapes, name):
    with pytest.raises(ScatterInputError) as caught:
        kernels.check_aot_limits("SliceScatter", shapes)
    message = str(caught.value)
    assert caught.value.input_name == name and "\n" not in message
    assert "below 2**31" in message and f"rank at most {kernels.MAX_RANK}" in message
    kernels.check_aot_limits("SliceScatter", {"data": (2**31 - 1, 1)})  # the largest that fits


def test_aot_launch_refuses_dimensions_beyond_int32(recording):
    device = recording(SLICE_AOT_PARAMS)
    with pytest.raises(ScatterInputError, match=r"launch_slice_scatter_aot: 'data_shape' does not fit the AOT form"):
        slice_kernel.launch_slice_scatter_aot(**_aot({**SLICE, "data_shape": (4, 2**31, 6)}))
    assert device.calls == []


# --- no driver -------------------------------------------------------------------------------


@pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a CUDA driver")
def test_import_works_without_a_driver_and_use_fails_clearly(tmp_path):
    code = (
        "import trt_scatter.plugins.kernels as k, trt_scatter.plugins.slice_scatter as s\n"
        "try:\n"
        "    s.launch_slice_scatter(output=1, data=0, updates=1, start=1, stop=1, step=1, axes=0, num_axes=1,"
        " data_shape=(2,), updates_shape=(1,), element_size=4, param_itemsize=8, axes_itemsize=8, error_flag=0, stream=0)\n"
        "except k.cuda.CudaUnavailableError as e:\n"
        "    print('ERROR', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ERROR the CUDA driver is unavailable:"), out.stdout


@pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a CUDA driver")
def test_driver_helpers_raise_cuda_unavailable():
    with pytest.raises(cuda.CudaUnavailableError, match="the CUDA driver is unavailable"):
        cuda.kernel("slice_scatter", 4)
    with pytest.raises(cuda.CudaUnavailableError):
        cuda.device_arch()


# --- cache -----------------------------------------------------------------------------------


@pytest.fixture
def fake_compiler(monkeypatch, tmp_path):
    compiled = []

    def compile_cubin(kernel, element_size, index_itemsize, arch):
        compiled.append((kernel, element_size, index_itemsize, arch))
        return b"\x7fELF" + bytes([element_size, arch]) * 50, f"lowered_{kernel}_{element_size}"

    monkeypatch.setattr(cuda, "compile_cubin", compile_cubin)
    monkeypatch.setattr(cuda, "_cubins", {})
    monkeypatch.setattr(cuda, "source_digest", lambda: "d1g3st")
    monkeypatch.setenv(cuda.CACHE_ENV, str(tmp_path / "cache"))
    return compiled


def test_cache_keys_separate_kernel_element_size_index_type_arch_and_source():
    keys = {cuda.cache_key(k, e, i, arch) for k, e, i in [("slice_scatter", 4, None), ("scatter_update", 4, 4), ("scatter_update", 4, 8), ("scatter_update", 2, 8)] for arch in (80, 90)}
    assert len(keys) == 8
    assert cuda.cache_key("scatter_update", 2, 8, 90).startswith("scatter_update-e2-i64-sm90-")


def test_source_digest_follows_the_sources(tmp_path, monkeypatch):
    try:
        before = cuda.source_digest()
    except cuda.CudaUnavailableError as error:
        pytest.skip(str(error))
    for name in list(cuda.SOURCES.values()) + list(cuda.HEADERS):
        (tmp_path / name).write_bytes((cuda.SOURCE_DIR / name).read_bytes())
    monkeypatch.setattr(cuda, "SOURCE_DIR", tmp_path)
    assert cuda.source_digest() == before
    (tmp_path / "scatter_common.cuh").write_bytes(b"// changed\n" + (tmp_path / "scatter_common.cuh").read_bytes())
    assert cuda.source_digest() != before


def test_disk_cache_round_trip(fake_compiler, tmp_path):
    first = cuda.cubin("scatter_update", 4, 8, 90)
    assert fake_compiler == [("scatter_update", 4, 8, 90)]
    assert cuda.cubin("scatter_update", 4, 8, 90) is first  # memory
    cuda._cubins.clear()
    assert cuda.cubin("scatter_update", 4, 8, 90) == first  # disk
    assert len(fake_compiler) == 1
    files = list((tmp_path / "cache").iterdir())
    assert [f.name for f in files] == [cuda.cache_key("scatter_update", 4, 8, 90) + ".cubin"]
    cuda.cubin("scatter_update", 4, 8, 80)
    assert len(fake_compiler) == 2  # another arch is another entry


def test_aot_ptx_is_read_from_the_disk_cache_by_a_new_process(fake_compiler, tmp_path, monkeypatch):
    compiled = []

    def compile_ptx(kernel, element_size, index_itemsize, arch):
        compiled.append((kernel, element_size, index_itemsize, arch))
        return f".version 8.0\n// {kernel} {element_size} {index_itemsize}", f"lowered_{kernel}_{element_size}"

    monkeypatch.setattr(cuda, "compile_ptx", compile_ptx)
    monkeypatch.setattr(cuda, "_aot_ptx", {})
    monkeypatch.setattr(cuda, "aot_ptx_arch", lambda: 75)
    first = cuda.aot_ptx("scatter_update_aot", 4, 8)
    assert first == ("lowered_scatter_update_aot_4", ".version 8.0\n// scatter_update_aot 4 8")
    assert cuda.aot_ptx("scatter_update_aot", 4, 8) is first and compiled == [("scatter_update_aot", 4, 8, 75)]
    cuda._aot_ptx.clear()  # what a new process holds
    assert cuda.aot_ptx("scatter_update_aot", 4, 8) == first and len(compiled) == 1
    path = tmp_path / "cache" / (cuda.cache_key("scatter_update_aot", 4, 8, 75) + ".ptx")
    assert [f.name for f in (tmp_path / "cache").iterdir()] == [path.name] and fake_compiler == []
    path.write_bytes(path.read_bytes()[:-3])  # a damaged file is compiled again
    cuda._aot_ptx.clear()
    assert cuda.aot_ptx("scatter_update_aot", 4, 8) == first and len(compiled) == 2
    assert cuda.aot_ptx("scatter_update_aot", 4, 4)[1].endswith("4 4") and len(compiled) == 3


@pytest.mark.parametrize("damage", [b"", b"garbage", cuda._MAGIC + b"name-without-image"])
def test_damaged_cache_file_is_recompiled(fake_compiler, tmp_path, damage):
    first = cuda.cubin("slice_scatter", 2, None, 75)
    cuda._cubins.clear()
    (tmp_path / "cache" / (cuda.cache_key("slice_scatter", 2, None, 75) + ".cubin")).write_bytes(damage)
    assert cuda.cubin("slice_scatter", 2, None, 75) == first
    assert len(fake_compiler) == 2


def test_unwritable_cache_still_returns_the_cubin(fake_compiler, tmp_path, monkeypatch):
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv(cuda.CACHE_ENV, str(tmp_path / "file" / "cache"))
    assert cuda.cubin("slice_scatter", 1, None, 90)[1] == "lowered_slice_scatter_1"


def test_cache_dir_default_and_overrides(monkeypatch, tmp_path):
    monkeypatch.delenv(cuda.CACHE_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cuda.cache_dir() == tmp_path / ".cache" / "trt-scatter"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cuda.cache_dir() == tmp_path / "xdg" / "trt-scatter"
    monkeypatch.setenv(cuda.CACHE_ENV, str(tmp_path / "mine"))
    assert cuda.cache_dir() == tmp_path / "mine"
    monkeypatch.setenv(cuda.CACHE_ENV, "  ")  # blank is unset, not a folder named by spaces
    assert cuda.cache_dir() == tmp_path / "xdg" / "trt-scatter"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # the XDG spec ignores a relative path
    assert cuda.cache_dir() == tmp_path / ".cache" / "trt-scatter"


def test_name_expressions():
    assert cuda.name_expression("slice_scatter", 1) == "slice_scatter<unsigned char>"
    assert cuda.name_expression("scatter_update", 8, 4) == "scatter_update<unsigned long long, int>"
    assert cuda.name_expression("slice_scatter_aot", 2) == "slice_scatter_aot<unsigned short>"
    assert cuda.name_expression("scatter_update_aot", 4, 8) == "scatter_update_aot<unsigned int, long long>"
    assert cuda.name_expression("tensor_scatter_aot", 2) == "tensor_scatter_aot<unsigned short>"
    assert cuda.name_expression("scatter_nd_reduce_aot", 2, 4) == "scatter_nd_reduce_aot<unsigned short, int>"
    assert [cuda.source_name(kernel) for kernel in cuda.KERNELS] == (["slice_scatter.cu"] * 2 + ["scatter_update.cu"] * 2 + ["scatter_elements_reduce.cu"] * 2
                                                                     + ["scatter_nd_reduce.cu"] * 2 + ["tensor_scatter.cu"] * 2)


@pytest.mark.parametrize("supported, arch", [([75, 80, 90], 75), ([80, 90, 120], 80), ([52, 61, 75, 86], 75)])
def test_aot_ptx_targets_the_oldest_architecture_tensorrt_supports(supported, arch):
    assert cuda.AOT_PTX_ARCH == 75 and cuda.aot_ptx_arch(supported) == arch


def test_aot_ptx_arch_without_a_usable_architecture_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(cuda, "nvrtc_version", lambda: (10, 0))
    with pytest.raises(cuda.CudaError, match=r"NVRTC \(10, 0\) supports no architecture >= sm_75"):
        cuda.aot_ptx_arch([52, 61, 70])


def test_aot_ptx_is_only_for_aot_entries():
    with pytest.raises(ValueError, match="'slice_scatter' is not an AOT entry point"):
        cuda.aot_ptx("slice_scatter", 4)


def test_ptx_isa_version():
    assert cuda.ptx_isa_version("//\n// Generated by NVIDIA NVVM Compiler\n.version 9.0\n.target sm_75\n") == "9.0"
    assert cuda.ptx_isa_version("no version here") is None


# --- the safety nets can fail ----------------------------------------------------------------


def _overrun_args(memory, n):
    class OverrunArgs(ctypes.Structure):
        _fields_ = [("output", ctypes.c_void_p), ("input", ctypes.c_void_p), ("n", ctypes.c_int64)]

    return OverrunArgs(memory.alloc(n), memory.put(np.arange(n, dtype=np.uint8)), n)


@needs_gxx
def test_guard_bytes_catch_a_write_past_the_end():
    lib, memory = host.load(host.shared_library()), host.Memory()
    args = _overrun_args(memory, 10)
    lib.run_overrun(ctypes.addressof(args), 1, 4)
    with pytest.raises(AssertionError, match="write outside a 10-byte buffer"):
        memory.check_guards()


@needs_gxx
def test_address_sanitizer_catches_a_write_past_the_end():
    result = host.run_under_asan("overrun")
    assert result.returncode != 0
    assert "heap-buffer-overflow" in result.stderr and "WRITE of size 1" in result.stderr
    assert "overrun went unnoticed" not in result.stdout


@pytest.mark.parametrize("device_arch, arch", [(90, 90), (86, 86), (87, 86), (89, 89), (121, 120)])
def test_cubin_arch_is_the_devices_own_or_a_compatible_one(device_arch, arch):
    assert cuda.target_arch(device_arch, supported=[75, 80, 86, 89, 90, 100, 120]) == arch


def test_cubin_arch_asks_nvrtc_what_it_supports():
    try:
        supported = cuda.nvrtc().nvrtcGetSupportedArchs()[1]
    except cuda.CudaUnavailableError as error:
        pytest.skip(str(error))
    assert cuda.target_arch(max(supported)) == max(supported)


def test_unknown_arch_major_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(cuda, "nvrtc_version", lambda: (13, 0))
    with pytest.raises(cuda.CudaError, match=r"cannot build for sm_110 \(supported: \[75, 80, 90\]\)"):
        cuda.target_arch(110, supported=[90, 80, 75])


# --- plugins.cuda's driver calls, against a fake driver module -------------------------------


class FakeDriver:
    """The slice of cuda.bindings.driver that plugins.cuda uses, recording calls (no GPU)."""

    class CUresult:
        CUDA_SUCCESS = 0
        CUDA_ERROR_INVALID_VALUE = type("R", (), {"name": "CUDA_ERROR_INVALID_VALUE", "__eq__": lambda s, o: o is s, "__hash__": object.__hash__})()
        CUDA_ERROR_INVALID_CONTEXT = 201
        CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906

    class CUstreamCaptureStatus:
        CU_STREAM_CAPTURE_STATUS_NONE = 0
        CU_STREAM_CAPTURE_STATUS_ACTIVE = 1

    class CUdevice_attribute:
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = "major"
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = "minor"
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = "sms"

    def __init__(self, context=0):
        self.calls, self.context, self.fail = [], context, set()
        self.streams = {}  # stream -> its context; others belong to the current context
        self.capture_status = {}  # stream -> cuStreamIsCapturing's answer

    def _ok(self, name, *values):
        self.calls.append(name)
        if name in self.fail:
            return (self.CUresult.CUDA_ERROR_INVALID_VALUE, *values)
        return (self.CUresult.CUDA_SUCCESS, *values)

    def cuCtxGetCurrent(self):
        return self._ok("cuCtxGetCurrent", self.context)

    def cuDeviceGet(self, ordinal):
        return self._ok("cuDeviceGet", 0)

    def cuDevicePrimaryCtxRetain(self, device):
        return self._ok("cuDevicePrimaryCtxRetain", 0xC0)

    def cuCtxSetCurrent(self, context):
        self.context = context
        return self._ok("cuCtxSetCurrent")

    def cuCtxGetDevice(self):
        return self._ok("cuCtxGetDevice", {0xC0: 0, 0xC1: 1}.get(self.context, 0))

    def cuCtxPushCurrent(self, context):
        self.previous, self.context = self.context, context
        return self._ok(f"cuCtxPushCurrent({context:#x})")

    def cuCtxPopCurrent(self):
        popped, self.context = self.context, self.previous
        return self._ok("cuCtxPopCurrent", popped)

    def cuStreamGetCtx(self, stream):
        context = self.streams.get(stream, self.context)
        if not context:  # like the legacy stream with no context current
            self.calls.append("cuStreamGetCtx")
            return (self.CUresult.CUDA_ERROR_INVALID_CONTEXT, 0)
        return self._ok("cuStreamGetCtx", context)

    def cuStreamIsCapturing(self, stream):
        status = self.capture_status.get(stream, 0)
        if status == "implicit":
            self.calls.append("cuStreamIsCapturing")
            return (self.CUresult.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, 0)
        return self._ok(f"cuStreamIsCapturing({stream:#x})", status)

    def cuDeviceGetAttribute(self, attribute, device):
        return self._ok("cuDeviceGetAttribute", {"major": 8 + device, "minor": 6 - 6 * device, "sms": 3 + device}[attribute])

    def cuModuleLoadData(self, image):
        return self._ok("cuModuleLoadData", ("module", image))

    def cuModuleGetFunction(self, module, name):
        return self._ok("cuModuleGetFunction", ("function", module[1], name))

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.launched = (f, gx, gy, gz, bx, by, bz, shared, stream, extra)
        self.packed = ctypes.string_at(ctypes.c_void_p.from_address(params).value, ctypes.sizeof(update_kernel.ScatterUpdateArgs))
        return self._ok("cuLaunchKernel")

    def cuMemsetD32Async(self, address, value, count, stream):
        return self._ok(f"cuMemsetD32Async({address:#x},{value},{count},{stream:#x})")

    def cuMemcpyDtoDAsync(self, destination, source, nbytes, stream):
        return self._ok(f"cuMemcpyDtoDAsync({destination:#x},{source:#x},{nbytes},{stream:#x})")

    def cuStreamSynchronize(self, stream):
        return self._ok(f"cuStreamSynchronize({stream:#x})")

    def cuMemcpyDtoH(self, host_address, source, nbytes):
        ctypes.c_uint32.from_address(host_address).value = 5
        return self._ok(f"cuMemcpyDtoH({source:#x},{nbytes})")


@pytest.fixture
def fake_driver(monkeypatch):
    fake = FakeDriver()
    monkeypatch.setattr(cuda, "_driver_module", fake)
    monkeypatch.setattr(cuda, "_contexts", {})
    monkeypatch.setattr(cuda, "target_arch", lambda arch: arch)
    monkeypatch.setattr(cuda, "cubin", lambda kernel, size, index, arch: (f"image-{kernel}-{size}-{index}-sm{arch}".encode(), f"lowered_{kernel}"))
    monkeypatch.setattr(kernels, "device", cuda)
    return fake


def test_launch_through_the_driver(fake_driver):
    update_kernel.launch_scatter_update(**{**UPDATE, "data": 0x2222, "error_flag": 0x5000, "updates_shape": (3, 5)})
    assert fake_driver.calls == [
        "cuStreamGetCtx",  # the stream's context, none here (as for the legacy stream without a current context):
        "cuCtxGetCurrent", "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent",  # the primary one
        "cuCtxGetCurrent", "cuCtxGetDevice", "cuDeviceGetAttribute", "cuDeviceGetAttribute", "cuDeviceGetAttribute",
        "cuCtxGetCurrent", "cuModuleLoadData", "cuModuleGetFunction",
        "cuMemsetD32Async(0x5000,0,1,0x99)", f"cuMemcpyDtoDAsync(0x1000,0x2222,{4 * 5 * 8},0x99)",
        "cuLaunchKernel",
    ]
    function, *dims, shared, stream, extra = fake_driver.launched
    assert function == ("function", b"image-scatter_update-8-4-sm86", b"lowered_scatter_update")
    assert dims == [1, 1, 1, kernels.BLOCK, 1, 1] and (shared, stream, extra) == (0, 0x99, 0)
    args = update_kernel.ScatterUpdateArgs.from_buffer_copy(fake_driver.packed)
    assert (args.output, args.indices, args.error_flag, args.updates_rank) == (0x1000, 0x2000, 0x5000, 2)

    fake_driver.calls.clear()
    update_kernel.launch_scatter_update(**UPDATE)  # cached: no module load, the context's SM count reused
    assert fake_driver.calls == ["cuStreamGetCtx", "cuLaunchKernel"]
    assert cuda.device_arch() == 86 and cuda.sm_count() == 3

    fake_driver.calls.clear()
    assert kernels.check_error_flag(0x5000, 0x99) == 5
    assert fake_driver.calls == ["cuStreamIsCapturing(0x99)", "cuStreamSynchronize(0x99)", "cuMemcpyDtoH(0x5000,4)"]


def test_launch_loads_the_kernel_in_the_streams_own_context(fake_driver):
    """TensorRT may enqueue on a thread where another context is current: the stream's context decides."""
    fake_driver.context = 0xC0
    fake_driver.streams[0x99] = 0xC1  # a stream of device 1 (sm_90, 4 SMs)
    update_kernel.launch_scatter_update(**UPDATE)
    calls = fake_driver.calls
    assert calls[0] == "cuStreamGetCtx" and "cuCtxPushCurrent(0xc1)" in calls
    load = calls.index("cuModuleLoadData")
    assert calls[load - 1] == "cuCtxPushCurrent(0xc1)" and calls[load + 1] == "cuCtxPopCurrent"
    assert fake_driver.launched[0] == ("function", b"image-scatter_update-8-4-sm90", b"lowered_scatter_update")
    assert fake_driver.context == 0xC0  # the thread's own context is current again
    assert set(cuda._contexts) == {0xC1} and cuda._contexts[0xC1].sm_count == 4


def test_prepare_loads_the_kernel_before_any_launch(fake_driver):
    kernels.prepare("scatter_update", 8, 4)
    assert "cuModuleLoadData" in fake_driver.calls
    fake_driver.calls.clear()
    update_kernel.launch_scatter_update(**UPDATE)  # same context as the stream's: nothing left to load
    assert fake_driver.calls == ["cuStreamGetCtx", "cuLaunchKernel"]


def test_prepare_without_a_driver_leaves_the_error_to_the_launch(monkeypatch):
    def unavailable(*args):
        raise cuda.CudaUnavailableError("the CUDA driver is unavailable: test")

    monkeypatch.setattr(cuda, "kernel", unavailable)
    monkeypatch.setattr(kernels, "device", cuda)
    kernels.prepare("slice_scatter", 4)  # no exception
    with pytest.raises(cuda.CudaUnavailableError, match="test"):
        slice_kernel.launch_slice_scatter(**SLICE)


@pytest.mark.parametrize("status", [1, "implicit"])
def test_error_count_is_not_read_while_the_stream_is_captured(fake_driver, status, caplog, monkeypatch):
    """Synchronizing a capturing stream is illegal (and nothing has run yet): no read, a warning once."""
    fake_driver.capture_status[0x99] = status
    monkeypatch.setattr(kernels, "_warned_capture", False)
    with caplog.at_level("WARNING", logger="trt_scatter"):
        assert kernels.check_error_flag(0x5000, 0x99) is None
        assert kernels.check_error_flag(0x5000, 0x99) is None
    assert not [call for call in fake_driver.calls if call.startswith(("cuStreamSynchronize", "cuMemcpyDtoH"))]
    assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
    assert "captured into a CUDA graph" in caplog.records[0].message


def test_load_aot_ptx_loads_the_ptx_an_engine_carries(fake_driver, monkeypatch):
    ptx = ".version 9.0\n.target sm_75\n"
    monkeypatch.setattr(cuda, "aot_ptx", lambda kernel, size, index: (f"lowered_{kernel}_{size}_{index}", ptx))
    function = cuda.load_aot_ptx("scatter_update_aot", 4, 8)
    assert function == ("function", ptx.encode() + b"\0", b"lowered_scatter_update_aot_4_8")
    fake_driver.fail.add("cuModuleLoadData")  # e.g. a driver older than the NVRTC that wrote the PTX
    with pytest.raises(cuda.CudaError, match=r"cuModuleLoadData\(PTX ISA 9.0 of lowered_slice_scatter_aot_2_None\) failed"):
        cuda.load_aot_ptx("slice_scatter_aot", 2)


def test_aot_entries_launch_from_a_cubin_like_the_others(fake_driver):
    function, _ = cuda.kernel("slice_scatter_aot", 4)
    assert function == ("function", b"image-slice_scatter_aot-4-None-sm86", b"lowered_slice_scatter_aot")


def test_each_context_loads_its_own_module(fake_driver):
    cuda.kernel("slice_scatter", 4)
    fake_driver.context = 0xC1
    cuda.kernel("slice_scatter", 4)
    assert fake_driver.calls.count("cuModuleLoadData") == 2 and set(cuda._contexts) == {0xC0, 0xC1}


def test_driver_errors_name_the_call(fake_driver):
    fake_driver.fail.add("cuLaunchKernel")
    with pytest.raises(cuda.CudaError, match=r"cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE"):
        update_kernel.launch_scatter_update(**UPDATE)


# --- the reductions' and TensorScatter's host-known arguments ----------------------------------

from trt_scatter.plugins import scatter_elements_reduce as elements_reduce_kernel, tensor_scatter as cache_kernel  # noqa: E402

REDUCE = dict(output=0x1000, data=0x2000, indices=0x3000, updates=0x4000, workspace=0x8000, data_shape=(4, 5), indices_shape=(2, 5),
              element_size=4, element_type="float32", index_itemsize=8, axis=0, reduction="add", include_self=1, error_flag=0, stream=0x55)
REDUCE_AOT = dict(output=0x1000, data=0x2000, indices=0x3000, updates=0x4000, data_shape=(4, 5), indices_shape=(2, 5), updates_shape=(2, 5),
                  element_size=4, element_type="int32", index_itemsize=8, axis=0, reduction="add", include_self=1, stream=0x55)
CACHE = dict(output=0x1000, data=0x2000, update=0x3000, write_indices=0x4000, data_shape=(2, 8, 4), update_shape=(2, 1, 4), index_count=2,
             axis=1, mode="linear", element_size=2, write_index_itemsize=8, error_flag=0, stream=0x66)


@pytest.mark.parametrize(
    "change, name",
    [
        ({"element_type": "int64"}, "element_type"),  # a type of another size than element_size
        ({"element_type": "bool", "element_size": 1}, "element_type"),
        ({"data_shape": (2**32,), "indices_shape": (2,)}, "indices"),  # more targets than the uint32 sort keys address
        ({"chunk": 1.5}, "chunk"),
        ({"chunk": 0}, "chunk"),  # the launch plan refused it first, as a ValueError of its own naming no argument
        ({"segment": 2.5}, "segment"),
        ({"segment": 1}, "segment"),
        ({"workspace": 0}, "workspace"),  # rows to sort and nowhere to sort them
    ],
)
def test_bad_scatter_elements_reduce_arguments_raise_before_any_device_call(recording, change, name):
    device = recording(None)
    with pytest.raises(ScatterInputError, match=rf"^launch_scatter_elements_reduce: '{name}'") as caught:
        elements_reduce_kernel.launch_scatter_elements_reduce(**{**REDUCE, **change})
    assert caught.value.input_name == name and "\n" not in str(caught.value) and device.calls == []


@pytest.mark.parametrize("types", [["bool", "int64", "bool"], ["float64", "int64", "float64"], None])
def test_reduction_launch_args_refuse_an_element_type_the_kernels_cannot_combine(types):
    with pytest.raises(ScatterInputError, match=r"^scatter_elements_reduce: 'data' must be one of float32, .* for the reduction kernels"):
        elements_reduce_kernel.launch_args([(4, 5), (2, 5), (2, 5)], [1 if types and types[0] == "bool" else 8, 8, 8], types=types)


@pytest.mark.parametrize("change, name", [({"indices_shape": (2, 5, 1)}, "indices_shape"), ({"updates_shape": (10,)}, "updates_shape")])
def test_scatter_elements_reduce_aot_launch_refuses_another_rank(recording, change, name):
    device = recording(None)
    with pytest.raises(ScatterInputError, match=rf"^launch_scatter_elements_reduce_aot: '{name}' must have data's rank \(2\)"):
        elements_reduce_kernel.launch_scatter_elements_reduce_aot(**{**REDUCE_AOT, **change})
    assert device.calls == []


def test_scatter_elements_reduce_aot_scalars_for_what_the_aot_form_takes():
    """rank, axis in [0, rank-1], the reduction's code, then data's, indices' and updates' 8 dimensions each."""
    scalars = elements_reduce_kernel.aot_scalars({"data": (4, 5), "indices": (2, 5), "updates": (2, 5)}, {}, types={"data": "int32"},
                                                 axis=-1, reduction="max")
    from trt_scatter.plugins.reductions import REDUCTION_CODES

    padding = [0] * (kernels.MAX_RANK - 2)
    assert scalars == [2, 1, REDUCTION_CODES["max"], 4, 5, *padding, 2, 5, *padding, 2, 5, *padding]


@pytest.mark.parametrize(
    "change, name",
    [({"axis": 0}, "axis"), ({"axis": 3}, "axis"), ({"axis": True}, "axis"), ({"index_count": -1}, "index_count"), ({"index_count": 2.0}, "index_count")],
)
@pytest.mark.parametrize("launcher", ["launch_tensor_scatter", "launch_tensor_scatter_aot"])
def test_bad_tensor_scatter_arguments_raise_before_any_device_call(recording, change, name, launcher):
    device = recording(None)
    arguments = {**CACHE, **change}
    if launcher.endswith("_aot"):
        del arguments["error_flag"]
    with pytest.raises(ScatterInputError, match=rf"^{launcher}: '{name}'") as caught:
        getattr(cache_kernel, launcher)(**arguments)
    assert caught.value.input_name == name and device.calls == []


def test_device_addresses_of_numpy_integer_types_are_taken_as_ints():
    assert kernels.pointers("op", output=np.uint64(2**63), data=np.int64(16)) == [2**63, 16]
    assert all(type(value) is int for value in kernels.pointers("op", output=np.uint64(8)))
