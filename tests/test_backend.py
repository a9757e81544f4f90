"""trt_scatter.backend: which TensorRT module a process uses, and telling polygraphy the same.

``backend.tensorrt()`` is cached per process, so each in-process test clears the cache and sets
the environment with monkeypatch; what depends on the order of imports in a fresh interpreter
(polygraphy reading its variable when imported) runs in a subprocess.
"""

import functools
import gc
import json
import logging
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import HAS_FULL_TENSORRT

from trt_scatter import backend

POLYGRAPHY_VAR = "POLYGRAPHY_USE_TENSORRT_RTX"


def _has_tensorrt_rtx():
    try:
        import tensorrt_rtx  # noqa: F401
    except Exception:
        return False
    return True


needs_tensorrt_rtx = pytest.mark.skipif(not _has_tensorrt_rtx(), reason="needs TensorRT-RTX ('tensorrt_rtx')")
without_full_tensorrt = pytest.mark.skipif(HAS_FULL_TENSORRT, reason="full TensorRT is installed here, so 'tensorrt' resolves")


# The session's own resolution, untouched by these tests (other tests may hold its module and logger).
SESSION_TENSORRT = backend.tensorrt
SESSION_TRT_LOGGER = backend.trt_logger


@pytest.fixture
def fresh(monkeypatch):
    """A backend resolution as in a new process, with the environment and polygraphy's flag restored after.

    ``backend.tensorrt`` and ``backend.trt_logger`` are replaced by freshly cached copies of the same
    functions, so that clearing their caches here leaves the session's resolution as it was.
    """
    SESSION_TENSORRT()  # polygraphy's TensorRT-using modules load bound to the session's backend ...
    import polygraphy.backend.trt  # noqa: F401

    monkeypatch.delenv(backend.ENV_VAR, raising=False)
    monkeypatch.delenv(POLYGRAPHY_VAR, raising=False)  # restored (or removed) after the test
    monkeypatch.setattr(sys.modules["polygraphy.config"], "USE_TENSORRT_RTX", sys.modules["polygraphy.config"].USE_TENSORRT_RTX)
    for name, module in list(sys.modules.items()):  # ... and are bound to it again after the test
        if name.startswith("polygraphy.") and hasattr(module, "trt"):
            monkeypatch.setattr(module, "trt", module.trt)
    monkeypatch.setattr(backend, "tensorrt", functools.lru_cache(maxsize=None)(SESSION_TENSORRT.__wrapped__))
    monkeypatch.setattr(backend, "trt_logger", functools.lru_cache(maxsize=None)(SESSION_TRT_LOGGER.__wrapped__))
    backend.tensorrt.cache_clear()
    return monkeypatch


def test_resolution_and_logger_are_cached_per_process():
    assert SESSION_TENSORRT.cache_info().maxsize is None and SESSION_TRT_LOGGER.cache_info().maxsize is None


@needs_tensorrt_rtx
def test_forcing_tensorrt_rtx(fresh):
    fresh.setenv(backend.ENV_VAR, "tensorrt_rtx")
    trt = backend.tensorrt()
    assert trt.__name__ == "tensorrt_rtx" and hasattr(trt, "Builder")
    assert backend.name() == "tensorrt_rtx" and backend.is_rtx()
    assert os.environ[POLYGRAPHY_VAR] == "1"


@without_full_tensorrt
def test_forcing_tensorrt_without_it_names_what_to_install(fresh):
    fresh.setenv(backend.ENV_VAR, "tensorrt")
    with pytest.raises(backend.BackendError) as caught:
        backend.tensorrt()
    message = str(caught.value)
    assert isinstance(caught.value, ImportError)
    assert "trt-scatter[trt]" in message and "tensorrt-rtx==1.7.1.116" in message
    assert "Tried: tensorrt:" in message and "tensorrt_rtx" not in message.split("Tried:")[1]
    assert "TRT_SCATTER_BACKEND='tensorrt' allows tensorrt only (unset it to take whichever is installed)" in message


@pytest.mark.skipif(not HAS_FULL_TENSORRT, reason="needs full TensorRT ('tensorrt'), not only TensorRT-RTX")
def test_forcing_tensorrt_with_it(fresh):
    fresh.setenv(backend.ENV_VAR, "tensorrt")
    assert backend.tensorrt().__name__ == "tensorrt" and not backend.is_rtx()
    assert os.environ[POLYGRAPHY_VAR] == "0"


@pytest.mark.parametrize("value", ["TensorRT", "tensorrt-rtx", "trt", "0"])
def test_unknown_backend_name_is_an_error(fresh, value):
    fresh.setenv(backend.ENV_VAR, f" {value} ")
    with pytest.raises(backend.BackendError, match=rf"TRT_SCATTER_BACKEND='{value}' is not one of tensorrt, tensorrt_rtx"):
        backend.tensorrt()


def test_no_importable_backend_is_an_error_listing_each_failure(fresh):
    fresh.setenv(backend.ENV_VAR, "tensorrt_rtx")
    fresh.setitem(sys.modules, "tensorrt_rtx", None)  # `import tensorrt_rtx` raises ImportError
    with pytest.raises(backend.BackendError, match=r"needs TensorRT, and TRT_SCATTER_BACKEND='tensorrt_rtx' allows tensorrt_rtx only .*Tried: tensorrt_rtx: "):
        backend.tensorrt()
    fresh.delenv(backend.ENV_VAR)
    fresh.setenv(POLYGRAPHY_VAR, "1")
    with pytest.raises(backend.BackendError, match=r"needs TensorRT, and POLYGRAPHY_USE_TENSORRT_RTX='1' allows tensorrt_rtx only .*Tried: tensorrt_rtx: "):
        backend.tensorrt()
    fresh.delenv(POLYGRAPHY_VAR)
    fresh.setitem(sys.modules, "tensorrt", None)
    with pytest.raises(backend.BackendError, match=r"needs TensorRT\. Install .*Tried: tensorrt: .*; tensorrt_rtx: "):
        backend.tensorrt()


def test_polygraphy_variable_selects_tensorrt_rtx(fresh):
    fresh.setenv(POLYGRAPHY_VAR, "1")
    assert backend._candidates() == ["tensorrt_rtx"]
    fresh.setenv(POLYGRAPHY_VAR, "0")
    assert backend._candidates() == ["tensorrt", "tensorrt_rtx"]
    fresh.setenv(backend.ENV_VAR, "   ")  # blank counts as not set
    assert backend._candidates() == ["tensorrt", "tensorrt_rtx"]
    fresh.setenv(backend.ENV_VAR, "tensorrt")  # forcing wins over polygraphy's variable
    fresh.setenv(POLYGRAPHY_VAR, "1")
    assert backend._candidates() == ["tensorrt"]


@needs_tensorrt_rtx
def test_polygraphy_variable_resolves_to_tensorrt_rtx(fresh):
    fresh.setenv(POLYGRAPHY_VAR, "yes")
    assert backend.name() == "tensorrt_rtx"
    assert os.environ[POLYGRAPHY_VAR] == "1"


@needs_tensorrt_rtx
def test_default_prefers_tensorrt_then_tensorrt_rtx(fresh, caplog):
    with caplog.at_level(logging.DEBUG, logger="trt_scatter"):
        trt = backend.tensorrt()
    expected = "tensorrt" if HAS_FULL_TENSORRT else "tensorrt_rtx"
    assert trt.__name__ == expected
    assert os.environ[POLYGRAPHY_VAR] == ("1" if expected == "tensorrt_rtx" else "0")
    assert f"using {expected} {trt.__version__}" in caplog.messages


@needs_tensorrt_rtx
def test_resolution_is_cached_until_cleared(fresh):
    fresh.setenv(backend.ENV_VAR, "tensorrt_rtx")
    first = backend.tensorrt()
    fresh.setenv(backend.ENV_VAR, "no-such-backend")
    assert backend.tensorrt() is first  # once per process
    backend.tensorrt.cache_clear()
    with pytest.raises(backend.BackendError):
        backend.tensorrt()


@needs_tensorrt_rtx
def test_loaded_polygraphy_config_is_updated(fresh):
    import polygraphy.config

    fresh.setattr(polygraphy.config, "USE_TENSORRT_RTX", False)
    fresh.setenv(backend.ENV_VAR, "tensorrt_rtx")
    backend.tensorrt()
    assert polygraphy.config.USE_TENSORRT_RTX is True


def _run_fresh(code, **env):
    """Runs ``code`` in a new interpreter with ``env`` added (None removes a variable); returns its JSON output."""
    environment = {k: v for k, v in os.environ.items() if k not in (backend.ENV_VAR, POLYGRAPHY_VAR)}
    environment.update({k: v for k, v in env.items() if v is not None})
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=environment, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@needs_tensorrt_rtx
def test_polygraphy_imported_later_uses_the_same_module():
    out = _run_fresh(
        """
        import json, os, sys
        from trt_scatter import backend
        trt = backend.tensorrt()
        assert "polygraphy" not in sys.modules
        from polygraphy import config
        from polygraphy.mod.trt_importer import lazy_import_trt
        print(json.dumps([trt.__name__, config.USE_TENSORRT_RTX, lazy_import_trt().Builder is trt.Builder]))
        """,
        TRT_SCATTER_BACKEND="tensorrt_rtx",
    )
    assert out == ["tensorrt_rtx", True, True]


@needs_tensorrt_rtx
def test_polygraphy_imported_earlier_is_switched():
    out = _run_fresh(
        """
        import json, os
        from polygraphy import config
        before = config.USE_TENSORRT_RTX
        from trt_scatter import backend
        trt = backend.tensorrt()
        from polygraphy.mod.trt_importer import lazy_import_trt
        print(json.dumps([before, config.USE_TENSORRT_RTX, os.environ["POLYGRAPHY_USE_TENSORRT_RTX"],
                          lazy_import_trt().Builder is trt.Builder]))
        """,
        TRT_SCATTER_BACKEND="tensorrt_rtx",
    )
    assert out == [False, True, "1", True]


@needs_tensorrt_rtx
def test_polygraphy_loaders_imported_earlier_are_rebound():
    out = _run_fresh(
        """
        import json
        import polygraphy.backend.trt  # binds its TensorRT module now, before trt-scatter chose one
        from trt_scatter import backend
        trt = backend.tensorrt()
        builder, network = polygraphy.backend.trt.CreateNetwork()()
        print(json.dumps([type(builder).__module__.split(".")[0], type(builder) is trt.Builder]))
        """,
        TRT_SCATTER_BACKEND="tensorrt_rtx",
    )
    assert out == ["tensorrt_rtx_bindings", True]


def test_importing_trt_scatter_imports_no_tensorrt():
    out = _run_fresh(
        """
        import json, sys
        import trt_scatter, trt_scatter.oracle, trt_scatter.backend, trt_scatter.log
        print(json.dumps(sorted(m for m in ("tensorrt", "tensorrt_rtx", "polygraphy") if m in sys.modules)))
        """
    )
    assert out == []


# ---------------------------------------------------------------------------------------------
# trt_logger(): the TensorRT ILogger that forwards to trt_scatter's logger.


@needs_tensorrt_rtx
def test_trt_logger_maps_each_severity(fresh, caplog):
    fresh.setenv(backend.ENV_VAR, "tensorrt_rtx")
    trt = backend.tensorrt()
    trt_logger = backend.trt_logger()
    assert isinstance(trt_logger, trt.ILogger)
    assert backend.trt_logger() is trt_logger
    severity = trt.ILogger.Severity
    expected = {
        severity.INTERNAL_ERROR: logging.CRITICAL,
        severity.ERROR: logging.ERROR,
        severity.WARNING: logging.WARNING,
        severity.INFO: logging.INFO,
        severity.VERBOSE: logging.DEBUG,
    }
    with caplog.at_level(logging.DEBUG, logger="trt_scatter"):
        for level in expected:
            trt_logger.log(level, f"message at {level}")
        trt_logger.log(None, "a severity TensorRT does not have")
    records = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    assert records == [("trt_scatter", lvl, f"[TRT] message at {sev}") for sev, lvl in expected.items()] + [
        ("trt_scatter", logging.INFO, "[TRT] a severity TensorRT does not have")
    ]


def test_no_garbage_collection_starts_inside_the_trt_logger(fresh):
    """TensorRT calls the logger while it holds a lock; a collection there that freed a builder left in a reference cycle
    waited on that lock (a test that made a builder, in a fixture, hung the suite). The logger keeps collection off, and
    on again after it, also where the message raises."""
    fresh.setenv(backend.ENV_VAR, "tensorrt_rtx")
    trt = backend.tensorrt()
    seen = []

    class Recording(logging.Handler):
        def emit(self, record):
            seen.append(gc.isenabled())
            if "raise" in record.getMessage():
                raise KeyboardInterrupt  # logging passes this one on

    handler = Recording()
    logging.getLogger("trt_scatter").addHandler(handler)
    try:
        backend.trt_logger().log(trt.ILogger.Severity.ERROR, "a message")
        with pytest.raises(KeyboardInterrupt):
            backend.trt_logger().log(trt.ILogger.Severity.ERROR, "raise")
    finally:
        logging.getLogger("trt_scatter").removeHandler(handler)
    assert seen == [False, False] and gc.isenabled()


def test_collection_stays_off_while_any_thread_is_inside_tensorrt():
    """Collection is one setting for the process: where TensorRT logs from two threads at once, the first one out turned
    it on again while the other's callback still ran."""
    import threading

    inside, first_out, seen = threading.Event(), threading.Event(), []

    def second():
        with backend.no_collection_inside_tensorrt():
            inside.set()
            first_out.wait(10)
            seen.append(gc.isenabled())

    thread = threading.Thread(target=second)
    with backend.no_collection_inside_tensorrt():
        thread.start()
        inside.wait(10)
    first_out.set()
    thread.join(10)
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:  # off before: it stays off after
        with backend.no_collection_inside_tensorrt():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


@needs_tensorrt_rtx
def test_new_builder_makes_the_builder_with_collection_off(monkeypatch):
    """Creating a builder may log while TensorRT holds its lock; the logger pauses collection once Python runs it, but the
    call allocates before that, and a collection there that freed an old builder hung the suite. new_builder calls
    TensorRT's Builder with collection off already, and turns it on again after."""
    seen, logger = [], backend.trt_logger()

    class Recording:
        @staticmethod
        def Builder(given):
            seen.append((gc.isenabled(), given is logger))
            return "builder"

    monkeypatch.setattr(backend, "tensorrt", lambda: Recording)
    assert backend.new_builder() == "builder" and seen == [(False, True)] and gc.isenabled()


@needs_tensorrt_rtx
def test_tensorrt_reports_through_trt_logger(fresh, caplog):
    fresh.setenv(backend.ENV_VAR, "tensorrt_rtx")
    trt = backend.tensorrt()
    builder = trt.Builder(backend.trt_logger())
    network = builder.create_network(0)
    network.add_input("x", trt.float32, (2, 3))
    with caplog.at_level(logging.ERROR, logger="trt_scatter"):
        network.add_input("x", trt.float32, (2, 3))  # a second input of the same name: TensorRT logs an error
    errors = [r.getMessage() for r in caplog.records if r.name == "trt_scatter" and r.levelno == logging.ERROR]
    assert any(m.startswith("[TRT] ") and "addInput" in m for m in errors), errors


def test_verbose_variable_turns_on_debug_logging():
    out = _run_fresh(
        """
        import json, logging
        from trt_scatter.log import logger
        print(json.dumps(logger.getEffectiveLevel() == logging.DEBUG))
        """,
        TRT_SCATTER_VERBOSE="1",
    )
    assert out is True


@pytest.mark.parametrize("configured", [False, True], ids=["no-logging-setup", "after-basicConfig"])
def test_verbose_variable_shows_debug_messages_once(configured):
    """A script that sets TRT_SCATTER_VERBOSE=1 sees the debug lines (e.g. the exporter's fallbacks), once
    whether or not it configured Python's logging itself."""
    code = textwrap.dedent(
        f"""
        import logging
        if {configured}:
            logging.basicConfig()
        from trt_scatter.log import logger
        logger.debug("a debug line of trt_scatter")
        """
    )
    environment = {**os.environ, "TRT_SCATTER_VERBOSE": "1"}
    result = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("a debug line of trt_scatter") == 1, result.stderr
