"""``trt-scatter``: the command line. Each subcommand is a module here with ``add_parser(subparsers)``
that registers it and sets ``func(args) -> int``; bad arguments end in one line on stderr and exit 2."""

import argparse
import importlib
import sys

SUBCOMMANDS = ("build", "check")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="trt-scatter", description=__doc__.split("\n")[0])
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"trt_scatter.cli.{name}")
        except ModuleNotFoundError as err:
            if err.name != f"trt_scatter.cli.{name}":
                raise
            continue
        module.add_parser(subparsers)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
