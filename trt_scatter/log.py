"""The one logger of trt-scatter, a TensorRT ``ILogger`` that forwards to it, and :func:`first_line`,
which every one-line message takes from an exception.

Quiet by default (warnings and errors); ``TRT_SCATTER_VERBOSE=1`` or
``logging.getLogger("trt_scatter").setLevel(logging.DEBUG)`` shows more.
"""

import functools
import logging
import os

logger = logging.getLogger("trt_scatter")


class _VerboseHandler(logging.StreamHandler):
    """Prints trt-scatter's records on stderr where no other handler would: Python's own last resort
    shows warnings and errors only, so a script that asked for TRT_SCATTER_VERBOSE=1 without setting up
    logging would see no debug line. Once the script has handlers (``logging.basicConfig()``), they do it."""

    def emit(self, record):
        current = logger
        while True:
            if any(handler is not self for handler in current.handlers):
                return
            if not current.propagate or current.parent is None:
                break
            current = current.parent
        super().emit(record)


def verbose():
    """Whether ``TRT_SCATTER_VERBOSE`` asks for trt-scatter's debug log (and, from the CLI, tracebacks)."""
    return os.environ.get("TRT_SCATTER_VERBOSE", "0") != "0"


if verbose():
    logger.setLevel(logging.DEBUG)
    logger.addHandler(_VerboseHandler())


def first_line(err):
    """The first non-empty line of an exception's message (its type's name if it has none): what a
    one-line error keeps of a library's multi-line message."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[0] if lines else type(err).__name__


@functools.lru_cache(maxsize=None)
def trt_logger():
    """The process's one TensorRT ``ILogger`` (of the backend in use), forwarding to ``logger``."""
    from trt_scatter.backend import tensorrt

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
            logger.log(levels.get(severity, logging.INFO), "[TRT] %s", msg)

    return _Forward()
