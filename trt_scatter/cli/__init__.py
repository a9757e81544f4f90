"""``trt-scatter``: the command line. Each subcommand is a module here with ``add_parser(subparsers)``
that registers it and sets ``func(args) -> int``. Every error is one line on stderr
(:mod:`trt_scatter.cli.common`): exit 2 for a bad argument or model, 1 when TensorRT fails (or a check
fails), 70 for a bug of trt-scatter's own. Warnings about the user's model or inputs
(:func:`trt_scatter.log.warn`) are one line each, ``trt-scatter <command>: warning: ...``, on stderr
once the command is done."""

from __future__ import annotations

import logging
import os
import signal
import sys
from typing import TYPE_CHECKING

from trt_scatter import __version__
from trt_scatter.cli import build, check, common, lower, rewrite
from trt_scatter.log import WARNING, first_line, logger, verbose

if TYPE_CHECKING:
    from collections.abc import Sequence

INTERNAL_ERROR = 70  #: a bug of trt-scatter's (EX_SOFTWARE): neither the user's mistake (2) nor a failed check (1)


class _Warnings(logging.Filter):
    """Takes :func:`trt_scatter.log.warn`'s records off the logger and keeps them as the command's warning lines
    (printed when it is done, outside the output TensorRT's runs hold), each once."""

    def __init__(self, command):
        super().__init__()
        self.command, self.lines = command, []

    def filter(self, record):
        if not getattr(record, WARNING, False):
            return True
        line = f"trt-scatter {self.command}: warning: {record.getMessage()}"
        if line not in self.lines:
            self.lines.append(line)
        return False


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the command is, as Ctrl-C is: its cleanup runs (a temporary output file is
    removed, a build's child process ended) before it exits with 128 + the signal's number."""

    def __init__(self, number: int) -> None:
        super().__init__(number)
        self.number = number


def _terminate(number, frame):
    raise Terminated(number)


def _catch_termination():
    """Makes SIGTERM and SIGHUP raise :class:`Terminated` (where Python lets it: the main thread); returns the
    handlers they had, to restore."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}
    numbers = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    return {number: signal.signal(number, _terminate) for number in numbers}


def main(argv: Sequence[str] | None = None) -> int:
    parser = common.OneLineParser(prog="trt-scatter", description="Scatter operations for TensorRT: build engines, check models "
                                  "against the reference, lower or rewrite their scatter nodes (see each command's --help).")
    parser.add_argument("--version", action="version", version=f"trt-scatter {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for subcommand in (build, check, lower, rewrite):
        subcommand.add_parser(subparsers)
    args, extras = parser.parse_known_args(argv)
    if extras:  # the parser of the part they stand in says so: trt-scatter <command>: error: ..., or trt-scatter: error: ...
        words = list(sys.argv[1:] if argv is None else argv)
        before_command = words.index(extras[0]) < words.index(args.command)
        (parser if before_command else subparsers.choices[args.command]).error(f"unrecognized arguments: {' '.join(extras)}")
    if hasattr(sys.stdout, "reconfigure"):  # a path of bytes that are not UTF-8 is printed as those bytes, not a crash
        sys.stdout.reconfigure(errors="surrogateescape")
    warnings = _Warnings(args.command)
    logger.addFilter(warnings)
    handlers = _catch_termination()
    try:
        return args.func(args)
    except KeyboardInterrupt as err:
        number = getattr(err, "number", signal.SIGINT)
        print(f"trt-scatter {args.command}: {'interrupted' if number == signal.SIGINT else 'terminated by ' + signal.Signals(number).name}", file=sys.stderr)
        return 128 + number
    except BrokenPipeError:  # the reader of stdout went away (| head): what was left to print has nobody to read it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # as Python's docs say: else its flush at exit fails again
        return 128 + signal.SIGPIPE
    except Exception as err:  # a bug of trt-scatter's: still one line, the traceback on request
        if verbose():
            raise
        print(f"trt-scatter {args.command}: internal error: {type(err).__name__}: {first_line(err)} "
              "(TRT_SCATTER_VERBOSE=1 shows the traceback)", file=sys.stderr)
        return INTERNAL_ERROR
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
        logger.removeFilter(warnings)
        for line in warnings.lines:
            print(line, file=sys.stderr)
