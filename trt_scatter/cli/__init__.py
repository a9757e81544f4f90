"""``trt-scatter``: the command line. Each subcommand is a module here with ``add_parser(subparsers)``
that registers it and sets ``func(args) -> int``; bad arguments end in one line on stderr and exit 2."""

import argparse

from trt_scatter.cli import build, check, rewrite


def main(argv=None):
    parser = argparse.ArgumentParser(prog="trt-scatter", description=__doc__.split("\n")[0])
    subparsers = parser.add_subparsers(dest="command", required=True)
    for subcommand in (build, check, rewrite):
        subcommand.add_parser(subparsers)
    args = parser.parse_args(argv)
    return args.func(args)
