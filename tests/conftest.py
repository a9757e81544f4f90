"""Shared test settings: hypothesis profiles (``HYPOTHESIS_PROFILE=ci|dev|thorough``) and skip markers."""

import os
import shutil

# One OpenMP thread for torch, set before anything imports it: the tests fork children (onnx_fixtures.run_forked) from
# processes that ran torch, and a child that runs torch again waits forever on the pool threads it did not inherit.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

from trt_scatter.log import env_flag  # noqa: E402

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def _gpu_missing():
    """None if a CUDA GPU can be used here, else why not."""
    try:
        from cuda.bindings import driver

        result = driver.cuInit(0)[0]
    except Exception as error:
        return f"cuda-python or the CUDA driver is missing ({type(error).__name__}: {error})"
    return None if result == driver.CUresult.CUDA_SUCCESS else f"cuInit failed with {getattr(result, 'name', result)}"


def _has_full_tensorrt():
    try:
        import tensorrt  # noqa: F401  (full TensorRT, not RTX)
    except Exception:
        return False
    return True


GPU_MISSING = _gpu_missing()
HAS_GPU = GPU_MISSING is None
# Set by bench/gpu_check.sh on a GPU machine: a GPU test that would skip fails instead, so a run in
# which every GPU test skipped cannot pass. Read as every switch is (true/yes/on are on too).
REQUIRE_GPU = env_flag("TRT_SCATTER_REQUIRE_GPU")
_REQUIRED = f"TRT_SCATTER_REQUIRE_GPU={os.environ.get('TRT_SCATTER_REQUIRE_GPU')!r}"
HAS_FULL_TENSORRT = _has_full_tensorrt()
HAS_GXX = shutil.which("g++") is not None

if HAS_GPU or not REQUIRE_GPU:
    needs_gpu = pytest.mark.skipif(not HAS_GPU, reason=f"needs a CUDA GPU: {GPU_MISSING}")
else:
    needs_gpu = pytest.mark.usefixtures("_fail_without_gpu")


@pytest.fixture(scope="session")  # before any module-scoped fixture that would need the GPU
def _fail_without_gpu():
    pytest.fail(f"{_REQUIRED} and no CUDA GPU: {GPU_MISSING}", pytrace=False)


def gpu_skip(reason):
    """Skips a GPU test that cannot run here (e.g. too little GPU memory); fails it under TRT_SCATTER_REQUIRE_GPU=1."""
    if REQUIRE_GPU:
        pytest.fail(f"{_REQUIRED} and this GPU test cannot run: {reason}", pytrace=False)
    pytest.skip(reason)
needs_full_tensorrt = pytest.mark.skipif(not HAS_FULL_TENSORRT, reason="needs full TensorRT ('tensorrt'), not only TensorRT-RTX")
needs_gxx = pytest.mark.skipif(not HAS_GXX, reason="needs g++ to run the kernels on the CPU")


@pytest.fixture(scope="session", autouse=True)
def kernel_cache(tmp_path_factory):
    """One kernel cache (TRT_SCATTER_CACHE_DIR) for the whole run, its xdist workers and the processes they
    start, unless the environment names one: an instantiation NVRTC compiled once is not compiled again
    (the compile tests, the GPU-check rehearsal and the launch tests share sm_90's)."""
    if os.environ.get("TRT_SCATTER_CACHE_DIR"):
        yield os.environ["TRT_SCATTER_CACHE_DIR"]
        return
    base = tmp_path_factory.getbasetemp()  # pytest-N, or pytest-N/popen-gwK for an xdist worker
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "kernel-cache"  # this run's only: cold, as on a fresh machine
    os.environ["TRT_SCATTER_CACHE_DIR"] = str(folder)
    yield str(folder)
    del os.environ["TRT_SCATTER_CACHE_DIR"]


@pytest.fixture(scope="session", autouse=True)
def _torchlib_registry_built_once():
    """torch.onnx's dynamo exporter builds its registry of torchlib's translations anew for every export (about 0.35 s
    of CPU; the suite exports about a hundred times). Here it is built once per opset and every export gets its own
    copy of it, to which the exporter adds the export's custom translation table as it would to a new one
    (tests/test_torch_export.py checks that a copy equals a new registry and that what one export adds stays in it)."""
    import sys

    if "torch" not in sys.modules:  # no test module collected imported torch
        yield
        return
    from torch.onnx._internal.exporter import _registration

    yield from _registration_copies(_registration.ONNXRegistry)


@pytest.fixture(scope="session", autouse=True)
def _cia_ops_materialized_once():
    """torch.export's decompositions look up every CompositeImplicitAutograd op the dispatcher holds on ``torch.ops``,
    to make their Python objects exist, twice per namespace and export (about 0.2 s of CPU an export). The lookups only
    create objects, so while the dispatcher holds the same ops and no object was dropped since, a second round changes
    nothing: here it is skipped then. A library's ``_destroy`` drops the objects of the ops it defined
    (``torch.library._clear_torch_ops_cache``), and the same library defined again brings back the same registrations
    without them, so the next round runs after any drop (tests/test_torch_export.py checks that torch.export sees the
    same ops with and without the skipping, after a new op and after an op defined again)."""
    import sys

    if "torch" not in sys.modules:
        yield
        return
    import torch.library
    from torch._export import utils

    materialize, clear, done = utils._materialize_cpp_cia_ops, torch.library._clear_torch_ops_cache, []

    def materialize_once():
        registered = utils.torch._C._dispatch_get_registrations_for_dispatch_key("CompositeImplicitAutograd")
        if done != [registered]:
            materialize()
            done[:] = [registered]

    def clear_and_forget(*args, **kwargs):
        done.clear()
        return clear(*args, **kwargs)

    materialize_once.original = materialize
    utils._materialize_cpp_cia_ops, torch.library._clear_torch_ops_cache = materialize_once, clear_and_forget
    yield
    utils._materialize_cpp_cia_ops, torch.library._clear_torch_ops_cache = materialize, clear


def _registration_copies(registry_class):
    build, built = registry_class.__dict__["from_torchlib"], {}  # the classmethod itself, put back after the run

    def from_torchlib(cls, *args, **kwargs):
        key = (cls, args, tuple(sorted(kwargs.items())))
        if key not in built:
            built[key] = build.__func__(cls, *args, **kwargs)
        copy = cls.__new__(cls)
        copy.__dict__.update(built[key].__dict__)
        copy.functions = {target: list(decompositions) for target, decompositions in built[key].functions.items()}
        return copy

    from_torchlib.original = build
    registry_class.from_torchlib = classmethod(from_torchlib)
    yield
    registry_class.from_torchlib = build


@pytest.fixture(scope="session")
def shim():
    """The kernels' CPU build (tests/kernel_shim), loaded once: tests that run kernels on the CPU take it."""
    from kernel_shim import host

    return host.load(host.shared_library())


@pytest.fixture
def debug_env_unset(monkeypatch):
    """TRT_SCATTER_DEBUG unset during the test and restored after it, whatever the code under test set:
    ``monkeypatch.delenv`` of an unset variable records nothing to restore, so set it first."""
    monkeypatch.setenv("TRT_SCATTER_DEBUG", "")
    monkeypatch.delenv("TRT_SCATTER_DEBUG")


@pytest.fixture(params=[False, True], ids=["schemas-unregistered", "schemas-registered"])
def trt_scatter_schemas(request):
    """Both states a process can be in: ONNX shape inference and the full checker know the trt_scatter ops once
    anything called ``register_onnx_schemas`` (rewrite, the exporters), and stop at them before. The test runs
    in each; the state the process was in is restored after it, so no test depends on the ones before it."""
    import onnx.defs

    from trt_scatter.ops import DOMAIN, OPS, VERSION, register_onnx_schemas

    registered = [name for name in OPS if onnx.defs.has(name, DOMAIN)]
    for name in registered:
        onnx.defs.deregister_schema(name, VERSION, DOMAIN)
    if request.param:
        register_onnx_schemas()
    yield request.param
    for name in OPS:
        if onnx.defs.has(name, DOMAIN):
            onnx.defs.deregister_schema(name, VERSION, DOMAIN)
    if registered:
        register_onnx_schemas()


def pytest_collection_finish(session):
    """Python's full collections walk every object the process holds, and the test modules import torch, onnx and
    TensorRT (about 650,000 objects; a full collection took 0.2 s, 38 of them 8 s of the PyTorch export tests). The
    objects alive once the tests are collected are left out of later collections (gc.freeze), and a full collection
    comes after 100 collections of the middle generation instead of 10; the youngest generations are collected as
    before."""
    import gc

    gc.freeze()
    gc.set_threshold(*gc.get_threshold()[:2], 100)
