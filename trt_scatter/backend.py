"""Which TensorRT this process builds with: ``tensorrt`` or ``tensorrt_rtx``.

Users run full TensorRT (``tensorrt``) on their GPU machines; TensorRT-RTX (``tensorrt_rtx``)
has the same Python API shape and builds real engines on a CPU, which is what CI and
GPU-less development machines have. Everything in trt-scatter that touches TensorRT gets the
module from :func:`tensorrt` so that one process never mixes the two.

Resolution, once per process:

1. ``TRT_SCATTER_BACKEND=tensorrt|tensorrt_rtx`` forces one.
2. Else ``POLYGRAPHY_USE_TENSORRT_RTX`` set to anything but ``0`` means ``tensorrt_rtx``,
   because polygraphy has already been told to use it.
3. Else ``tensorrt`` if it imports, then ``tensorrt_rtx``.

polygraphy reads ``POLYGRAPHY_USE_TENSORRT_RTX`` when ``polygraphy.config`` is imported, and each
of its TensorRT-using modules binds ``trt`` to one of the two when it is imported. So
:func:`tensorrt` sets the variable and, for a polygraphy that is already loaded, its config flag
and those bindings: polygraphy may be imported before or after trt-scatter.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import logging
import os
import sys
import threading
from typing import TYPE_CHECKING

from trt_scatter.log import logger

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import ModuleType

    import tensorrt as trt

ENV_VAR = "TRT_SCATTER_BACKEND"
BACKENDS = ("tensorrt", "tensorrt_rtx")
_POLYGRAPHY_ENV_VAR = "POLYGRAPHY_USE_TENSORRT_RTX"


class BackendError(ImportError):
    """No usable TensorRT module, or ``TRT_SCATTER_BACKEND`` names an unknown one."""


def _forced():
    """``(module, setting)``: the one TensorRT module an environment variable allows and that variable's setting
    (``TRT_SCATTER_BACKEND='tensorrt'``), or None where both may be tried."""
    forced = os.environ.get(ENV_VAR, "").strip()
    if forced:
        if forced not in BACKENDS:
            raise BackendError(f"{ENV_VAR}={forced!r} is not one of {', '.join(BACKENDS)}")
        return forced, f"{ENV_VAR}={forced!r}"
    if os.environ.get(_POLYGRAPHY_ENV_VAR, "0") != "0":
        return "tensorrt_rtx", f"{_POLYGRAPHY_ENV_VAR}={os.environ[_POLYGRAPHY_ENV_VAR]!r}"
    return None


def _candidates():
    forced = _forced()
    return [forced[0]] if forced else list(BACKENDS)


@functools.lru_cache(maxsize=None)
def tensorrt() -> ModuleType:
    """Imports and returns the TensorRT module this process uses (``tensorrt`` or ``tensorrt_rtx``)."""
    failures = []
    for name in _candidates():
        try:
            module = importlib.import_module(name)
        except (ImportError, OSError) as err:  # the bindings wheel without libnvinfer raises ImportError
            failures.append(f"{name}: {err}")
            continue
        _tell_polygraphy(name)
        logger.debug("using %s %s", name, getattr(module, "__version__", "?"))
        return module
    forced = _forced()
    raise BackendError(
        (f"trt-scatter needs TensorRT, and {forced[1]} allows {forced[0]} only (unset it to take whichever is installed). "
         if forced else "trt-scatter needs TensorRT. ")
        + "Install 'trt-scatter[trt]' (tensorrt, for GPU machines) or "
        "'trt-scatter[rtx]' (tensorrt-rtx==1.7.1.116, builds engines on a CPU). Tried: " + "; ".join(failures)
    )


def name() -> str:
    """The name of the TensorRT module in use: ``"tensorrt"`` or ``"tensorrt_rtx"``."""
    return tensorrt().__name__


def is_rtx() -> bool:
    return name() == "tensorrt_rtx"


def always_strongly_typed() -> bool:
    """True where every network is strongly typed: TensorRT 11.x and TensorRT-RTX, whose bindings have
    no ``BuilderFlag.FP16`` (11.x keeps the ``STRONGLY_TYPED`` creation flag, but ignores it).

    Decided by what the bindings have, not by their name: a reduced-precision flag is what a weakly
    typed network would need, and its absence is what 11.x and RTX share.
    """
    return not hasattr(tensorrt().BuilderFlag, "FP16")


def _tell_polygraphy(backend_name):
    use_rtx = backend_name == "tensorrt_rtx"
    os.environ[_POLYGRAPHY_ENV_VAR] = "1" if use_rtx else "0"
    config = sys.modules.get("polygraphy.config")
    if config is None or config.USE_TENSORRT_RTX == use_rtx:
        return
    config.USE_TENSORRT_RTX = use_rtx
    from polygraphy.mod.trt_importer import lazy_import_trt

    for module_name, module in list(sys.modules.items()):
        bound = getattr(module, "trt", None)
        if module_name.startswith("polygraphy.") and type(bound).__name__ == "LazyModule":
            module.trt = lazy_import_trt()


_paused = threading.Lock()
_pauses = {"depth": 0, "restore": False}  # how many blocks are inside, in any thread; whether collection was on before


@contextlib.contextmanager
def no_collection_inside_tensorrt() -> Iterator[None]:
    """TensorRT(-RTX) calls the Python logger while it holds a lock of its own (creating a builder does), and a build
    calls the plugins' Python methods. A garbage collection that starts there and frees an earlier builder left in a
    reference cycle waits on that lock: the process hangs. So no collection starts inside the block, in any thread
    (collection is one setting for the process: the blocks are counted, and the last one out turns it back on if it
    was on); such garbage is freed after it."""
    _pause_collection()
    try:
        yield
    finally:
        _resume_collection()


def _pause_collection():
    enabled = gc.isenabled()  # read and set before anything else: any allocation may start a collection
    gc.disable()
    with _paused:
        if _pauses["depth"] == 0:
            _pauses["restore"] = enabled
        _pauses["depth"] += 1


def _resume_collection():
    with _paused:
        _pauses["depth"] -= 1
        if _pauses["depth"] == 0 and _pauses["restore"]:
            gc.enable()


def new_builder() -> trt.Builder:
    """A TensorRT ``Builder`` with :func:`trt_logger`, made with no collection running: creating one logs while TensorRT
    holds the lock that freeing another one takes (see :func:`no_collection_inside_tensorrt`). Its logger callback
    pauses collection too, but only once Python runs it: the call itself allocates first."""
    with no_collection_inside_tensorrt():
        return tensorrt().Builder(trt_logger())


@functools.lru_cache(maxsize=None)
def trt_logger() -> trt.ILogger:
    """The process's one TensorRT ``ILogger`` (of the backend in use), forwarding to trt-scatter's logger."""
    trt = tensorrt()
    levels = {
        trt.ILogger.Severity.INTERNAL_ERROR: logging.CRITICAL,
        trt.ILogger.Severity.ERROR: logging.ERROR,
        trt.ILogger.Severity.WARNING: logging.WARNING,
        trt.ILogger.Severity.INFO: logging.INFO,
        trt.ILogger.Severity.VERBOSE: logging.DEBUG,
    }

    class _Forward(trt.ILogger):
        def log(self, severity, msg):
            _pause_collection()  # first: TensorRT calls this holding a lock of its own
            try:
                if not any(take(msg) for take in list(_takers.get(threading.get_ident(), ()))):
                    logger.log(levels.get(severity, logging.INFO), "[TRT] %s", msg)
            finally:
                _resume_collection()

    return _Forward()


_takers = {}  # thread ident -> the callables that see each line TensorRT logs in that thread first (taking_tensorrt_log)


@contextlib.contextmanager
def taking_tensorrt_log(take: Callable[[str], bool]) -> Iterator[None]:
    """Calls ``take(message)`` on each line TensorRT logs in this thread during the block, before trt-scatter's logger
    sees it, whatever that logger's level; a line ``take`` returns True for is not logged. TensorRT must log through
    :func:`trt_logger` (the builders and loaders of trt-scatter give it that)."""
    ident = threading.get_ident()
    _takers.setdefault(ident, []).append(take)
    try:
        yield
    finally:
        _takers[ident].remove(take)
        if not _takers[ident]:
            del _takers[ident]
