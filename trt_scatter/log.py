"""The one logger of trt-scatter, and :func:`first_line`, which every one-line message takes from an exception.

TensorRT's ``ILogger`` that forwards to it is :func:`trt_scatter.backend.trt_logger`.

Quiet by default (warnings and errors); ``TRT_SCATTER_VERBOSE=1`` or
``logging.getLogger("trt_scatter").setLevel(logging.DEBUG)`` shows more.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

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


_ON, _OFF = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")
_warned_flags = set()


def env_flag(name: str) -> bool:
    """Whether the environment variable ``name`` is on: ``1``/``true``/``yes``/``on`` (any case) are, unset,
    empty, ``0``/``false``/``no``/``off`` are not. Any other value is on, with a warning naming it, so that a
    safety switch such as ``TRT_SCATTER_DEBUG=2`` is never silently off, nor ``TRT_SCATTER_VERBOSE=false`` on."""
    value = os.environ.get(name, "").strip().lower()
    if value in _OFF:
        return False
    if value not in _ON and (name, value) not in _warned_flags:  # once: a plugin reads its flag on every enqueue
        _warned_flags.add((name, value))
        logger.warning("%s=%r is not one of %s (on) or %s (off): taken as on", name, os.environ[name], "/".join(_ON), "/".join(_OFF[1:]))
    return True


def verbose() -> bool:
    """Whether ``TRT_SCATTER_VERBOSE`` asks for trt-scatter's debug log (and, from the CLI, tracebacks)."""
    return env_flag("TRT_SCATTER_VERBOSE")


if verbose():
    logger.setLevel(logging.DEBUG)
    logger.addHandler(_VerboseHandler())


WARNING = "trt_scatter_warning"  #: the mark of :func:`warn`'s records (``record.trt_scatter_warning``)


def warn(message: str) -> None:
    """A warning of trt-scatter's own about the user's model or inputs (not a library's log line): one line, on
    the logger (Python shows it on stderr where nothing else is set up; ``trt-scatter`` prints it as
    ``trt-scatter <command>: warning: <message>``)."""
    logger.warning(message, extra={WARNING: True})


@contextlib.contextmanager
def warnings_dropped() -> Iterator[None]:
    """:func:`warn`'s warnings dropped within the block: for work that tries inputs and keeps only those it accepts
    (what it said of the others would be about inputs nobody sees)."""
    def keep(record):
        return not getattr(record, WARNING, False)

    logger.filters.insert(0, keep)  # ahead of a filter that keeps them for later (the command line's)
    try:
        yield
    finally:
        logger.removeFilter(keep)


def first_line(err: BaseException) -> str:
    """The first non-empty line of an exception's message (its type's name if it has none): what a
    one-line error keeps of a library's multi-line message."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[0] if lines else type(err).__name__
