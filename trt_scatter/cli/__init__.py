"""``trt-scatter``: the command line. Each subcommand is a module here with ``add_parser(subparsers)``
that registers it and sets ``func(args) -> int``. Every error is one line on stderr
(:mod:`trt_scatter.cli.common`): exit 2 for a bad argument or model, 1 when TensorRT fails."""

import sys

from trt_scatter import __version__
from trt_scatter.cli import build, check, common, lower, rewrite
from trt_scatter.log import first_line, verbose


def main(argv=None):
    parser = common.OneLineParser(prog="trt-scatter", description="Scatter operations for TensorRT: build engines, check models "
                                  "against the reference, lower or rewrite their scatter nodes (see each command's --help).")
    parser.add_argument("--version", action="version", version=f"trt-scatter {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for subcommand in (build, check, lower, rewrite):
        subcommand.add_parser(subparsers)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print(f"trt-scatter {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # a bug of trt-scatter's: still one line, the traceback on request
        if verbose():
            raise
        print(f"trt-scatter {args.command}: internal error: {type(err).__name__}: {first_line(err)} "
              "(TRT_SCATTER_VERBOSE=1 shows the traceback)", file=sys.stderr)
        return 1
