"""``trt-scatter build``: build and save an engine from an example network or an ONNX file.

    trt-scatter build slice_scatter -o slice_scatter.engine
    trt-scatter build scatter_nd --dynamic
    trt-scatter build model.onnx --plugins --min 'data:[1,5]' 'updates:[1,3]' --opt 'data:[4,5]' 'updates:[4,3]' --max 'data:[8,5]' 'updates:[8,3]'
    trt-scatter build model.onnx --aot          # an engine that runs without Python (TensorRT >= 10.9)
    trt-scatter build --all                      # every example network into engines/

The example networks: scatter_elements, scatter_nd, scatter_update, slice_scatter (--dynamic: with a built-in profile).
Exit 0 built, 1 TensorRT failed on a model that passed every check (its reason in one line on stderr), 2 a mistake in
the arguments or the model (one line on stderr naming it).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import pathlib
import tempfile
from typing import TYPE_CHECKING

import numpy as np

from trt_scatter.cli import common
from trt_scatter.log import logger, warn

if TYPE_CHECKING:
    from collections.abc import Sequence


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("build", help="build and save a TensorRT engine", description=common.help_text(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", nargs="?", help="an example network name or an .onnx file")
    parser.add_argument("--all", action="store_true", help="build every example network (static and dynamic) into --out-dir")
    parser.add_argument("-o", "--output", type=common.file_path, help="engine file (default: <target>.engine in --out-dir; an example's name also says --dynamic and "
                        "its types other than float32 and int32: scatter_update_dynamic_float16.engine; not a profile or --fp16, so give -o "
                        "to keep such a build beside the default one)")
    parser.add_argument("--out-dir", type=common.folder_path, help="folder for engines (default: engines)")
    for bound in ("min", "opt", "max"):
        parser.add_argument(f"--{bound}", nargs="+", action="extend", default=[], metavar="NAME:[D,...]", help=f"{bound} shape of a dynamic input in the optimization profile, or {bound} value of an input whose values set shapes (pos:[0])")
    parser.add_argument("--dynamic", action="store_true", help="example networks: dynamic input dimensions with a built-in profile")
    parser.add_argument("--dtype", help="example networks: element type of data/updates (default: float32)")
    parser.add_argument("--index-dtype", choices=["int32", "int64"], help="example networks: index type (default: int32)")
    parser.add_argument("--fp16", action="store_true", help="full TensorRT 10.x: a weakly typed network that may run layers in FP16 (trt-scatter's plugins keep their declared types)")
    parser.add_argument("--bf16", action="store_true", help="full TensorRT 10.x: as --fp16, with BF16")
    parser.add_argument("--timing-cache", type=common.file_path, help="timing cache file to load from and save to")
    parser.add_argument("--plugins", action="store_true", help="register trt-scatter's plugins before parsing (and allow in-place I/O where a node asks for it)")
    parser.add_argument("--aot", action="store_true", help="ONNX models: build the trt_scatter nodes as AOT plugins, so that the engine runs "
                        "without Python (trtexec, Triton); full TensorRT >= 10.9")
    parser.add_argument("--progress", action="store_true", help="print TensorRT's build phases")
    parser.add_argument("-v", "--verbose", action="store_true", help="show TensorRT's log")
    parser.set_defaults(func=run)


def _profile_bounds(mins, opts, maxs):
    """``{name: {"min"|"opt"|"max": dims}}`` from the flags' words, each checked (form, size, one shape per flag)."""
    from trt_scatter.model.files import MAX_ELEMENTS

    bounds = {}
    for which, specs in (("min", mins), ("opt", opts), ("max", maxs)):
        for spec in specs:
            split = common.split_shape_word(spec)
            if split is None:
                raise ValueError(f"--{which} {spec!r} is not NAME:[D,...] (e.g. data:[1,3,4,5]){common.shape_flag_hint(spec, f'--{which}')}")
            name, dims = split
            if all(d >= 0 for d in dims) and (math.prod(dims) > MAX_ELEMENTS or any(d > MAX_ELEMENTS for d in dims)):
                raise ValueError(f"--{which} {spec!r} has more than {MAX_ELEMENTS} elements, TensorRT's most for one tensor")
            if which in bounds.get(name, {}):  # which one would win is not the user's to guess
                raise ValueError(f"--{which} gives input {name!r} twice")
            bounds.setdefault(name, {})[which] = dims
    return bounds


def parse_profile(mins: Sequence[str], opts: Sequence[str], maxs: Sequence[str], inputs: Sequence[str] | None = None) -> dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
    """``--min/--opt/--max NAME:[D,...]`` lists -> ``{name: (min, opt, max)}``; each input needs all three. ``inputs``
    (where known): the model's input names, which every name must be one of."""
    from trt_scatter.engine import check_profile_order

    bounds = _profile_bounds(mins, opts, maxs)
    unknown = [name for name in bounds if inputs is not None and name not in inputs]
    if unknown:  # before a missing bound: a misspelt name is in one flag only
        raise ValueError(common.not_an_input("the shape profile", unknown[0], inputs))
    profile = {}
    for name, shapes in bounds.items():
        absent = [w for w in ("min", "opt", "max") if w not in shapes]
        if absent:
            raise ValueError(f"input {name!r} has no --{'/--'.join(absent)} shape")
        profile[name] = (shapes["min"], shapes["opt"], shapes["max"])
        check_profile_order(name, profile[name])
    return profile


def _example_engine_name(example, dynamic, args):
    """An example's engine name, which says what differs from the defaults (float32 data, int32 indices, static shapes), so
    that the engines of one example in other types do not take each other's file: ``scatter_update_dynamic_float16``."""
    types = [_dtype(args.dtype).name if args.dtype is not None and _dtype(args.dtype) != np.float32 else None,
             f"{args.index_dtype}_indices" if args.index_dtype not in (None, "int32") else None]
    return "_".join([example] + (["dynamic"] if dynamic else []) + [part for part in types if part])


def _dtype(name):
    try:
        return np.dtype(name)  # "bfloat16" too: importing trt_scatter registers ml_dtypes' types
    except TypeError:
        raise ValueError(f"--dtype {name!r} is not a NumPy element type name") from None


def _build_one(args, target, output, dynamic):
    from polygraphy.exception import PolygraphyException

    from trt_scatter import engine
    from trt_scatter.model import fed_inputs
    from trt_scatter.networks.examples import EXAMPLES

    flags = dict(fp16=args.fp16, bf16=args.bf16, timing_cache=args.timing_cache, progress=args.progress)
    strongly_typed = not (args.fp16 or args.bf16)  # reduced precision is what a weakly typed network is for
    _profile_bounds(args.min, args.opt, args.max)  # the flags' own mistakes first, before a model is read
    # a path (an .onnx name, a file, a name with a folder) is a model, even one that is missing: it is read, and says so
    is_model = target not in EXAMPLES and (target.endswith(".onnx") or os.path.exists(target) or "/" in target or os.sep in target)
    if not is_model:
        engine.check_example_name(target)  # before the flags: a typo is named as one, with the closest name
    if args.aot and not is_model:
        raise ValueError("--aot applies to ONNX models (their trt_scatter nodes); give an .onnx file")
    _refuse_flags_that_would_do_nothing(args, is_model)
    name = pathlib.Path(target).stem if is_model else _example_engine_name(target, dynamic, args)
    output = pathlib.Path(output or pathlib.Path(args.out_dir or "engines") / f"{name}.engine")
    reads = [target] if is_model else []
    if is_model:
        common.check_model_file(target)  # first: an engine given for a model is its own default output
    common.check_output_path(output, reads=reads)
    if args.timing_cache:
        common.check_output_path(args.timing_cache, what="--timing-cache", reads=reads)
        engine.check_timing_cache(args.timing_cache, "--timing-cache")
        common.check_distinct_outputs({"-o": output, "--timing-cache": args.timing_cache})
    aliased_plugin_io = False
    if is_model:
        model = common.load_model(target)  # read once, validated: a mistake the model shows ends here, in one line
        common.check_output_path(output, reads=model.files)  # its external data files too
        profile = parse_profile(args.min, args.opt, args.max, [value.name for value in fed_inputs(model.proto.graph)])
        aliased_plugin_io = args.aot or (args.plugins and engine.needs_aliased_plugin_io(model.proto))  # AOT plugins always alias
        load = engine.network_from_onnx(model, plugins=args.plugins, strongly_typed=strongly_typed, aot=args.aot)
    else:
        profile = parse_profile(args.min, args.opt, args.max)
        params = dict(dtype=_dtype(args.dtype or "float32"), index_dtype=np.dtype(args.index_dtype or "int32"), dynamic=dynamic)
        load = engine.network_from_example(target, profile, strongly_typed=strongly_typed, **params)
    lock = f"{args.timing_cache}.lock" if args.timing_cache else None  # polygraphy's, beside the cache while it reads it
    with _left_by(lock), common.quiet_tensorrt(show=args.verbose or args.progress) as tensorrt_output:
        try:
            plan, summary, timing_cache = common.isolated(lambda: _build(engine, load, profile, name, aliased_plugin_io, flags), f"building {name}")
        except PolygraphyException as err:  # TensorRT failed on a model that passed every check
            raise common.CliError(f"TensorRT could not build {name}: {common.build_failure(tensorrt_output.reason(err), model if is_model else None, args.plugins)}",
                                  common.FAILED) from None
    tensorrt_output.replay_warnings()
    common.write_output(output, plan, "engine")
    if timing_cache == _UNREAD:
        warn(f"--timing-cache {args.timing_cache!r} is not a timing cache TensorRT can read here: the engine was built "
             "without it, and the file is left as it was")
    elif timing_cache == _NO_DRIVER:
        warn(f"--timing-cache {args.timing_cache!r} was not read: TensorRT reads a timing cache only where a CUDA driver runs, "
             "and none runs here; the engine was built without it, and the file is left as it was")
    elif timing_cache is not None:
        common.write_output(args.timing_cache, timing_cache, "--timing-cache")
        if not engine.has_gpu():  # TensorRT-RTX on a CPU machine: the next build here would refuse the file
            warn(f"--timing-cache {args.timing_cache!r} holds no timings: TensorRT times tactics and reads a timing cache only where "
                 "a CUDA driver runs, and none runs here")
    return output, summary


def _build(engine, load, profile, name, aliased_plugin_io, flags):
    """The engine, its summary and the timing cache's new bytes (TensorRT writes it to a file of its own, which
    replaces the user's only when the build is done: :func:`common.write_output`). Where TensorRT could not read
    the user's file (not a timing cache, or one this TensorRT cannot use), :data:`_UNREAD` instead: the file is
    left as it is (this runs in the build child, which hears TensorRT; the command warns)."""
    cache = flags["timing_cache"]
    if cache is None:
        return (*engine.build_engine(load, profile, name=name, aliased_plugin_io=aliased_plugin_io, **flags), None)
    with tempfile.TemporaryDirectory() as folder, engine.tensorrt_warnings() as warnings:
        saved = os.path.join(folder, "timing.cache")
        plan, summary = engine.build_engine(load, profile, name=name, aliased_plugin_io=aliased_plugin_io, **dict(flags, timing_cache=cache),
                                            save_timing_cache=saved)
        unread = engine.timing_cache_unread(warnings)
        if unread:
            return plan, summary, _NO_DRIVER if unread == engine.NO_CUDA_DRIVER else _UNREAD
        return plan, summary, pathlib.Path(saved).read_bytes() if os.path.exists(saved) else None


@contextlib.contextmanager
def _left_by(path):
    """``path`` (an empty file the block may leave, such as polygraphy's timing-cache lock) removed after the block
    where the block made it."""
    made_here = path is not None and not os.path.lexists(path)
    try:
        yield
    finally:
        if made_here and os.path.isfile(path) and os.path.getsize(path) == 0:
            with contextlib.suppress(OSError):
                os.remove(path)


_UNREAD = "unread"  #: _build's timing cache where TensorRT could not read the user's file
_NO_DRIVER = "no driver"  #: _build's timing cache where TensorRT read none for want of a CUDA driver (cudaError 35)


def _refuse_flags_that_would_do_nothing(args, is_model):
    """A flag for the other kind of target would be silently ignored: one line instead."""
    if is_model:
        for flag, given in (("--dtype", args.dtype), ("--index-dtype", args.index_dtype)):
            if given is not None:
                raise ValueError(f"{flag} applies to example networks; an ONNX model's inputs keep the types it declares")
        if args.dynamic:
            raise ValueError("--dynamic applies to example networks; an ONNX model's dynamic dimensions get --min/--opt/--max")
    elif args.plugins:
        raise ValueError("--plugins applies to ONNX models (their trt_scatter nodes); the example networks use the native lowerings")
    if args.aot and args.plugins:
        raise ValueError("--aot builds the trt_scatter nodes with the AOT plugins and --plugins with the Python ones: give one of them")


def run(args: argparse.Namespace) -> int:
    try:
        _set_verbosity(args.verbose)  # resolves TensorRT: a bad TRT_SCATTER_BACKEND or none installed is one line
        if args.all:
            if args.target or args.output:
                raise ValueError("--all builds every example network; give no target or -o")
            if args.min or args.opt or args.max:
                raise ValueError("--all builds the example networks with their own profiles; give no --min/--opt/--max")
            return _build_all(args)
        if not args.target:
            _profile_bounds(args.min, args.opt, args.max)  # a model given after a shape flag is one of its words: said there
            empty = "the target is an empty word: " if args.target == "" else ""
            raise ValueError(f"{empty}give an example network name or an .onnx file, or --all")
        if args.output and args.out_dir:
            raise ValueError("-o names the engine file and --out-dir the folder of <target>.engine: give one of them")
        output, summary = _build_one(args, args.target, args.output, args.dynamic)
    except (common.CliError, ValueError, TypeError, ImportError, RuntimeError) as err:
        return common.report("build", err)
    for line in summary.lines():
        print(line)
    print(f"saved    {output}")
    return 0


def _set_verbosity(verbose):
    """Quiet by default: polygraphy and TensorRT say only errors unless --verbose (TensorRT's warnings on a build that
    succeeds, such as its parser's note on every int64 index input, say nothing a user must act on)."""
    import logging

    from trt_scatter.backend import tensorrt

    tensorrt()  # polygraphy must see the backend choice before it is imported
    from polygraphy.logger import G_LOGGER

    G_LOGGER.module_severity = G_LOGGER.VERBOSE if verbose else G_LOGGER.ERROR
    if verbose:
        logging.basicConfig()
        logger.setLevel(logging.DEBUG)


def _build_all(args):
    from trt_scatter.networks.examples import EXAMPLES

    rows = []
    for name in sorted(EXAMPLES):
        for dynamic in (False, True):
            output, summary = _build_one(args, name, None, dynamic)
            rows.append((summary.name, summary.num_layers, summary.build_seconds, summary.engine_bytes, output))
    header = ("network", "layers", "build s", "engine KiB", "file")
    table = [header] + [(name, str(layers), f"{seconds:.2f}", f"{size / 1024:.1f}", str(output)) for name, layers, seconds, size, output in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return 0
