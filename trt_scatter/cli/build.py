"""``trt-scatter build``: build and save an engine from an example network or an ONNX file.

    trt-scatter build slice_scatter -o slice_scatter.engine
    trt-scatter build scatter_nd --dynamic
    trt-scatter build model.onnx --plugins --min data:[1,5] --opt data:[4,5] --max data:[8,5]
    trt-scatter build model.onnx --aot          # an engine that runs without Python (TensorRT >= 10.9)
    trt-scatter build --all                      # every example network into engines/
"""

import argparse
import pathlib
import re
import sys

import numpy as np

from trt_scatter.log import logger

_SHAPE = re.compile(r"^(?P<name>[^:]+):\[(?P<dims>[0-9,\s]*)\]$")


def add_parser(subparsers):
    parser = subparsers.add_parser("build", help="build and save a TensorRT engine", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", nargs="?", help="an example network name or an .onnx file")
    parser.add_argument("--all", action="store_true", help="build every example network (static and dynamic) into --out-dir")
    parser.add_argument("-o", "--output", help="engine file (default: <target>.engine in --out-dir)")
    parser.add_argument("--out-dir", default="engines", help="folder for engines (default: engines)")
    for bound in ("min", "opt", "max"):
        parser.add_argument(f"--{bound}", nargs="+", action="extend", default=[], metavar="NAME:[D,...]", help=f"{bound} shape of a dynamic input in the optimization profile")
    parser.add_argument("--dynamic", action="store_true", help="example networks: dynamic input dimensions with a built-in profile")
    parser.add_argument("--dtype", default="float32", help="example networks: element type of data/updates (default: float32)")
    parser.add_argument("--index-dtype", default="int32", choices=["int32", "int64"], help="example networks: index type (default: int32)")
    parser.add_argument("--fp16", action="store_true", help="allow FP16 kernels")
    parser.add_argument("--bf16", action="store_true", help="allow BF16 kernels")
    parser.add_argument("--timing-cache", help="timing cache file to load from and save to")
    parser.add_argument("--plugins", action="store_true", help="register trt-scatter's plugins before parsing (and allow their in-place I/O)")
    parser.add_argument("--aot", action="store_true", help="ONNX models: build the trt_scatter nodes as AOT plugins, so that the engine runs "
                        "without Python (trtexec, Triton); full TensorRT >= 10.9")
    parser.add_argument("--progress", action="store_true", help="print TensorRT's build phases")
    parser.add_argument("-v", "--verbose", action="store_true", help="show TensorRT's log")
    parser.set_defaults(func=run)


def parse_profile(mins, opts, maxs):
    """``--min/--opt/--max NAME:[D,...]`` lists -> ``{name: (min, opt, max)}``; each input needs all three."""
    bounds = {}
    for which, specs in (("min", mins), ("opt", opts), ("max", maxs)):
        for spec in specs:
            match = _SHAPE.match(spec.replace(" ", ""))
            if not match:
                raise ValueError(f"--{which} {spec!r} is not NAME:[D,...] (e.g. data:[1,3,4,5])")
            dims = tuple(int(d) for d in match["dims"].split(",") if d)
            bounds.setdefault(match["name"], {})[which] = dims
    profile = {}
    for name, shapes in bounds.items():
        absent = [w for w in ("min", "opt", "max") if w not in shapes]
        if absent:
            raise ValueError(f"input {name!r} has no --{'/--'.join(absent)} shape")
        if not all(len(shapes["min"]) == len(s) and all(a <= b for a, b in zip(shapes["min"], s)) for s in (shapes["opt"], shapes["max"])) or not all(
            a <= b for a, b in zip(shapes["opt"], shapes["max"])
        ):
            raise ValueError(f"input {name!r} needs min <= opt <= max of equal rank, got {shapes['min']}, {shapes['opt']}, {shapes['max']}")
        profile[name] = (shapes["min"], shapes["opt"], shapes["max"])
    return profile


def _dtype(name):
    try:
        return np.dtype(name)  # "bfloat16" too: importing trt_scatter registers ml_dtypes' types
    except TypeError:
        raise ValueError(f"--dtype {name!r} is not a NumPy element type name") from None


def _build_one(args, target, output, dynamic):
    from trt_scatter import engine

    flags = dict(fp16=args.fp16, bf16=args.bf16, timing_cache=args.timing_cache, progress=args.progress)
    profile = parse_profile(args.min, args.opt, args.max)
    if target.endswith(".onnx"):
        if not pathlib.Path(target).is_file():
            raise ValueError(f"no such ONNX file: {target}")
        load = engine.network_from_onnx(target, plugins=args.plugins, aot=args.aot)
        name = pathlib.Path(target).stem
    elif args.aot:
        raise ValueError("--aot applies to ONNX models (their trt_scatter nodes); give an .onnx file")
    else:
        load = engine.network_from_example(target, profile, dtype=_dtype(args.dtype), index_dtype=np.dtype(args.index_dtype), dynamic=dynamic)
        name = target + ("_dynamic" if dynamic else "")
    plan, summary = engine.build_engine(load, profile, name=name, aliased_plugin_io=args.plugins or args.aot, **flags)
    output = pathlib.Path(output or pathlib.Path(args.out_dir) / f"{name}.engine")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(plan)
    return output, summary


def run(args):
    _set_verbosity(args.verbose)
    from polygraphy.exception import PolygraphyException

    try:
        if args.all:
            if args.target or args.output:
                raise ValueError("--all builds every example network; give no target or -o")
            return _build_all(args)
        if not args.target:
            raise ValueError("give an example network name or an .onnx file, or --all")
        output, summary = _build_one(args, args.target, args.output, args.dynamic)
    except (ValueError, TypeError, ImportError, RuntimeError) as err:
        print(f"trt-scatter build: error: {err}", file=sys.stderr)
        return 2
    except PolygraphyException as err:  # polygraphy has logged TensorRT's reasons above
        print(f"trt-scatter build: error: {err}", file=sys.stderr)
        return 1
    for line in summary.lines():
        print(line)
    print(f"saved    {output}")
    return 0


def _set_verbosity(verbose):
    """Quiet by default: polygraphy and TensorRT say only warnings and errors unless --verbose."""
    import logging

    from trt_scatter.backend import tensorrt

    tensorrt()  # polygraphy must see the backend choice before it is imported
    from polygraphy.logger import G_LOGGER

    G_LOGGER.module_severity = G_LOGGER.VERBOSE if verbose else G_LOGGER.WARNING
    if verbose:
        logging.basicConfig()
        logger.setLevel(logging.DEBUG)


def _build_all(args):
    from trt_scatter.networks.examples import EXAMPLES

    rows = []
    for name in sorted(EXAMPLES):
        for dynamic in (False, True):
            args.min, args.opt, args.max = [], [], []
            output, summary = _build_one(args, name, None, dynamic)
            rows.append((summary.name, summary.num_layers, summary.build_seconds, summary.engine_bytes, output))
    header = ("network", "layers", "build s", "engine KiB", "file")
    table = [header] + [(n, str(l), f"{s:.2f}", f"{b / 1024:.1f}", str(o)) for n, l, s, b, o in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return 0
