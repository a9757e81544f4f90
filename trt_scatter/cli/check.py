"""``trt-scatter check MODEL.onnx``: regression-check a model with scatter ops against the reference.

One command for the loop a TensorRT user runs by hand with polygraphy: build the engine (with
trt-scatter's plugins registered, and ONNX's own nodes that a plugin serves handed to it: a
ScatterElements or ScatterND with a reduction), feed valid inputs (:class:`ScatterDataLoader`, or
``--load-inputs``), run the engine and the reference (:class:`trt_scatter.reference.Reference`:
ONNX's evaluator with the oracle for the scatter ops, so MatMul, Conv or Sigmoid around them run
too), compare every output (exactly where the model only moves data to compute it, and an integer output; where
it computes floats, at polygraphy's default tolerances; ``--atol``/``--rtol`` for all, or ``OUTPUT:VALUE`` for one), and print one verdict line
per output and a final verdict. Something is always compared:

- with a GPU, the TensorRT engine against the reference;
- without one (TensorRT-RTX still builds the engine on a CPU, but nothing can run it), the model in
  onnxruntime against the reference, its ``trt_scatter`` nodes lowered to standard ONNX ops
  (:mod:`trt_scatter.passes.lower`): the engine's own outputs are then not checked, and the
  verdict says so.

Verdicts and exit codes (:data:`EXIT_CODES`):

==========================  =====  ==========================================================
final line                  exit   meaning
==========================  =====  ==========================================================
``PASSED``                  0      the TensorRT engine ran and matched (and the golden data)
``FAILED``                  1      an output differs, or the engine did not build
``error: ...`` (stderr)     2      bad arguments, a model or inputs that cannot be checked
``NOT RUN ON TENSORRT ...`` 3      everything compared matched, but the engine never ran (no
                                   GPU, or a TensorRT that cannot build the model's AOT plugin
                                   nodes); ``--allow-engine-not-run`` makes that exit 0
==========================  =====  ==========================================================

So a CI job without a GPU cannot mistake a check of onnxruntime for a check of TensorRT unless it
says so. ``--save-inputs``/``--save-outputs`` write golden data in polygraphy's JSON formats (the
files ``polygraphy run --load-inputs/--load-outputs`` reads); the outputs are saved per runner,
named by what produced them (``reference``, ``tensorrt``, ``onnxruntime`` or
``onnxruntime-lowered``). ``--load-outputs`` compares each run with the golden run of the same
runner (``polygraphy run``'s names too: ``reference-runner-N0-<time>``...), and runs the golden file lacks (e.g.
``tensorrt`` against golden data saved without a GPU) with the golden reference.
"""

from __future__ import annotations

import argparse
import math
import shlex

from trt_scatter.cli import common

REFERENCE = "reference"
MAX_ITERATIONS = 10000  #: the most sets of inputs a check generates or loads
DEFAULT_TOLERANCE = 1e-5  #: polygraphy's default atol and rtol: for outputs the model computes with floats
FLOATS = "the model computes it with floats"  #: why an output is compared at a default tolerance
#: float16's atol and rtol: polygraphy's 1e-5 is below what float16 tells apart (a unit in the last place is 2**-10 of
#: the value), and two runtimes that accumulate a float16 MatMul or sum in another order (onnxruntime, ONNX's evaluator)
#: differ by a few such units
FLOAT16_TOLERANCE = (1e-3, 1e-2)
#: Ops whose outputs are their inputs' values moved, selected or exactly converted: an output that only these (and
#: integer arithmetic) compute is compared exactly. A scatter with a ``reduction`` adds or multiplies: not these.
EXACT_OPS = {"Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Concat", "Split", "Slice", "Gather",
             "GatherElements", "GatherND", "Expand", "Tile", "Pad", "Where", "Cast", "CastLike", "Constant", "ConstantOfShape",
             "Shape", "Size", "Range", "DepthToSpace", "SpaceToDepth", "Max", "Min", "Relu", "Neg", "Abs", "ReverseSequence"}
#: Of :data:`EXACT_OPS`, those that choose between a zero and a zero of the other sign, which runtimes settle their own
#: way (IEEE 754 leaves max(-0, +0) open: ONNX's evaluator's Relu(-0.0) is +0.0, onnxruntime's -0.0): an output that
#: passes through one is compared exactly as numbers, not bit for bit
SIGNED_ZERO_OPS = {"Max", "Min", "Relu"}
EXACT_AS_NUMBERS = "exact as numbers: Max, Min or Relu may give a zero either sign"
EXIT_CODES = {"PASSED": 0, "FAILED": 1, "ERROR": 2, "NOT RUN ON TENSORRT": 3}


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "check",
        help="build a model's engine and compare TensorRT (or, without a GPU, onnxruntime) with the reference on valid inputs",
        description="Regression-check a model with scatter ops: build its engine, run it (without a GPU: the lowered model in onnxruntime) and the reference on valid inputs, compare, and save or check golden data. Exit 0 passed, 1 failed, 2 error, 3 passed without running the engine.",
    )
    parser.add_argument("model", help="ONNX model (scatter ops as ONNX ops or trt_scatter nodes, with any other ONNX ops)")
    parser.add_argument(
        "--input-shapes",
        nargs="+",
        default=[],
        type=_input_shape,
        metavar="NAME:[D,...]",
        help="shapes of dynamic inputs (others: static dims, named dims alike, free dims 4 or the length an op's rule sets; "
             "the shapes generated are printed)",
    )
    parser.add_argument("--seed", type=_non_negative_int, help="seed of the generated inputs (default 1)")
    parser.add_argument("--iterations", type=_iterations, help=f"how many sets of inputs to generate (default 1, at most {MAX_ITERATIONS})")
    parser.add_argument("--atol", nargs="+", action="extend", type=_tolerance_word("--atol"), metavar="[OUTPUT:]VALUE",
                        help=f"absolute tolerance of every output, or with OUTPUT: of that output, as polygraphy's (default: 0 where the model only moves data to compute it and for an integer output, {DEFAULT_TOLERANCE} where it computes floats, {FLOAT16_TOLERANCE[0]} for a float16 output)")
    parser.add_argument("--rtol", nargs="+", action="extend", type=_tolerance_word("--rtol"), metavar="[OUTPUT:]VALUE",
                        help=f"relative tolerance, likewise (default: 0, {DEFAULT_TOLERANCE}, or {FLOAT16_TOLERANCE[1]} for a float16 output)")
    parser.add_argument("--load-inputs", type=common.file_path, metavar="JSON", help="inputs saved by --save-inputs or `polygraphy run --save-inputs`")
    parser.add_argument("--save-inputs", type=common.file_path, metavar="JSON", help="save the inputs (polygraphy's JSON list of feed dicts)")
    parser.add_argument("--save-outputs", type=common.file_path, metavar="JSON", help="save every runner's outputs, named by runner (polygraphy RunResults JSON), whatever the verdict: "
                        "check a refreshed golden file's verdict before you keep it")
    parser.add_argument("--load-outputs", type=common.file_path, metavar="JSON", help="golden RunResults: compare each run with the golden run of its runner")
    parser.add_argument("--save-engine", type=common.file_path, metavar="PLAN", help="save the serialized engine, built for the shapes checked: a dynamic input's profile spans its shapes over "
                        "--iterations (min the smallest, opt and max the largest); `trt-scatter build --min/--opt/--max` builds a wider one")
    parser.add_argument(
        "--allow-engine-not-run",
        action="store_true",
        help="exit 0, not 3, when everything compared matched but the TensorRT engine could not run (no GPU)",
    )
    parser.set_defaults(func=run)
    return parser


def _input_shape(text):
    from trt_scatter.model.files import MAX_ELEMENTS

    split = common.split_shape_word(text)
    if split is None or any(d < 0 for d in split[1]):
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME:[D,...] with non-negative integer dims"
                                         f"{common.shape_flag_hint(text, '--input-shapes')}")
    name, shape = split
    if math.prod(shape) > MAX_ELEMENTS or any(d > MAX_ELEMENTS for d in shape):
        raise argparse.ArgumentTypeError(f"{text!r} has more than {MAX_ELEMENTS} elements, TensorRT's most for one tensor")
    return name, tuple(shape)


def _number_at_least(convert, minimum, what):
    """An argparse type: ``convert(text)`` if it is a finite number at least ``minimum`` (NaN is not; an infinite
    tolerance would pass any output), else ``what`` it is not."""

    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            value = math.nan
        if not (value >= minimum and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return value

    return parse


_non_negative_int = _number_at_least(int, 0, "a non-negative integer")  # NumPy's seeds are non-negative
_tolerance = _number_at_least(float, 0.0, "a finite non-negative number")
_positive_int = _number_at_least(int, 1, "a positive integer")


def _tolerance_word(flag):
    """An argparse type for a word of ``flag`` (``--atol``/``--rtol``): ``(None, value)`` for every output, or
    ``(output, value)`` for ``OUTPUT:VALUE`` (the name is all before the last ':')."""

    def parse(text):
        name, separator, number = text.rpartition(":")
        try:
            return (name if separator else None), _tolerance(number)
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite non-negative number, nor OUTPUT:NUMBER{common.shape_flag_hint(text, flag)}") from None

    return parse


def _tolerances(loaded, atols, rtols):
    """``{output name: (atol, rtol, why, bit for bit)}``: the defaults (:func:`_default_tolerances`), with what ``--atol``/``--rtol``
    give (lists of ``(output or None, value)``) in their place, of one output where named, else of every output."""
    outputs = [value.name for value in loaded.proto.graph.output]
    given = {}
    for flag, words in (("--atol", atols), ("--rtol", rtols)):
        values = {}
        for name, value in words or ():
            if name is not None and name not in outputs:
                raise common.CliError(f"{flag} names {name!r}, which is not an output of the model (its outputs: {', '.join(outputs)})")
            if name in values:
                raise common.CliError(f"{flag} gives output {name!r} twice" if name is not None else f"{flag} gives a value for every output twice")
            values[name] = value
        given[flag] = values
    tolerances = {}
    for name, (atol, rtol, why, bit_for_bit) in _default_tolerances(loaded).items():
        chosen = {flag: values.get(name, values.get(None)) for flag, values in given.items()}
        flags = [flag for flag, value in chosen.items() if value is not None]
        atol, rtol = atol if chosen["--atol"] is None else chosen["--atol"], rtol if chosen["--rtol"] is None else chosen["--rtol"]
        # bit for bit only where the model only moves data and no tolerance is allowed: a zero tolerance compares numbers
        tolerances[name] = (atol, rtol, f"{' and '.join(flags)} given" if flags else why, bit_for_bit and (atol, rtol) == (0.0, 0.0))
    return tolerances


def _iterations(text):
    value = _positive_int(text)
    if value > MAX_ITERATIONS:
        raise argparse.ArgumentTypeError(f"{text!r} is more than {MAX_ITERATIONS} iterations, the most a check runs")
    return value


def run(args: argparse.Namespace) -> int:
    try:
        verdict, built = _check(args)
    except common.CliError as err:  # something stopped the check before a verdict: exit 2
        common.report("check", err)
        return EXIT_CODES["ERROR"]
    if verdict == "NOT RUN ON TENSORRT":
        engine = "built and never run (no GPU)" if built else "not built as it is (this TensorRT cannot build it; see the engine line)"
        print(f"NOT RUN ON TENSORRT: every comparison passed, but the engine was {engine}{'' if args.allow_engine_not_run else '; exit 3 (--allow-engine-not-run accepts it)'}")
        return 0 if args.allow_engine_not_run else EXIT_CODES[verdict]
    print(verdict)
    return EXIT_CODES[verdict]


def _check(args):
    """Builds, runs, compares and prints the verdict lines per output; returns the final verdict and whether an engine
    was built."""
    generating = [flag for flag, given in (("--seed", args.seed is not None), ("--iterations", args.iterations is not None),
                                           ("--input-shapes", bool(args.input_shapes))) if given]
    if args.load_inputs and generating:  # they set up generated inputs, and would be silently ignored
        raise common.CliError(f"{generating[0]} is for generated inputs, and --load-inputs gives the inputs instead: give one or the other")
    outputs = {"--" + flag.replace("_", "-"): getattr(args, flag) for flag in ("save_inputs", "save_outputs", "save_engine")}
    reads = [args.model] + [path for path in (args.load_inputs, args.load_outputs) if path]
    common.check_distinct_outputs(outputs)
    for flag, path in outputs.items():  # refused before any work, not after it
        if path:
            common.check_output_path(path, what=flag, reads=reads)
    loaded = common.load_model(args.model, weights=True)  # read once, validated: a mistake the model shows ends here, in one line
    for flag, path in outputs.items():
        if path:
            common.check_output_path(path, what=flag, reads=loaded.files)  # its external data files too
    model = loaded.proto
    from trt_scatter.engine import check_input_ranks
    from trt_scatter.reference import check_data_types

    try:
        check_input_ranks(model)  # no engine, and no lowering, without: --input-shapes would not help
        check_data_types(loaded)  # values the reference cannot compute: no inputs would help
        _check_input_types(loaded)
    except ValueError as err:
        raise common.CliError(str(err)) from None
    tolerances = _tolerances(loaded, args.atol, args.rtol)  # a name that is no output's, before any work
    inputs = [value.name for value in model.graph.input]
    unknown = [name for name, _ in args.input_shapes if name not in inputs]
    if unknown:  # the first, as build names the first of its profile
        raise common.CliError(common.not_an_input("--input-shapes", unknown[0], inputs))
    named = [name for name, _ in args.input_shapes]
    repeated = next((name for name in named if named.count(name) > 1), None)
    if repeated is not None:  # as build's --min/--opt/--max: the last would have been taken without a word
        raise common.CliError(f"--input-shapes gives input {repeated!r} twice")
    from trt_scatter.polygraphy_ext.run_args import bfloat16_inputs

    refusal = bfloat16_inputs(model.graph)
    if refusal:
        raise common.CliError(refusal)
    has_plugins = bool(loaded.trt_scatter_ops())
    from trt_scatter.passes.plugins import served

    handed = served(loaded)
    uses_plugins = has_plugins or bool(handed)  # also ONNX's own nodes that TensorRT builds wrong or not at all
    if uses_plugins:
        from trt_scatter.plugins.kernels import debug_enabled

        debug_enabled()  # here, where its warning shows: the build's plugins read it in a child whose output is held

    backend_error = _resolve_tensorrt()  # before polygraphy's TensorRT modules load, so both use the same one
    from polygraphy.logger import G_LOGGER

    G_LOGGER.module_severity = G_LOGGER.WARNING  # the verdict lines are the output

    feeds = _inputs(args, loaded)
    golden = _load_golden(args.load_outputs, [value.name for value in model.graph.output]) if args.load_outputs else None  # before the build: a bad file ends here
    free_dims = _free_dims_hint(model, args.input_shapes)
    if not args.load_inputs and free_dims:  # what the free dims became: 4, or what an op's rule sets
        print("inputs: generated at --input-shapes " + " ".join(shlex.quote(f"{name}:[{','.join(map(str, value.shape))}]") for name, value in feeds[0].items()))
    ok = True
    engine = None
    unbuildable = None if backend_error else _unbuildable_here(model)
    if backend_error:
        print(f"engine: FAIL: not built: {backend_error}")
        ok = False
    elif unbuildable:
        if args.save_engine:
            raise common.CliError(f"--save-engine: {unbuildable}: no engine of this model can be built here")
        substitute, build_error = _build_engine(_with_python_plugins(loaded), feeds, uses_plugins)  # the rest of the model must build
        from trt_scatter.plugins.kernels import WORKSPACE_UNSIZED

        if build_error and WORKSPACE_UNSIZED in build_error:  # a need of the Python plugins' sort, which the AOT kernels do not have
            print(f"engine: not built with the AOT plugins: {unbuildable}; nor with trt-scatter's Python plugins in their place: {build_error}")
        elif build_error:
            print(f"engine: FAIL: {build_error} (built with trt-scatter's Python plugins in place of the AOT ones: {unbuildable})")
            ok = False
        else:
            print(f"engine: not built with the AOT plugins: {unbuildable}; built with trt-scatter's Python plugins in their place "
                  f"({len(substitute)} bytes), not run")
        substitute = None  # never run: its bytes, which hold the weights, go before the runners take them
    else:
        engine, build_error = _build_engine(loaded, feeds, uses_plugins)
        if build_error:
            print(f"engine: FAIL: {build_error}")
            ok = False
        else:
            print(f"engine: built ({len(engine)} bytes){_plugins_in_it(loaded, handed)}")
            if args.save_engine:
                common.write_output(args.save_engine, engine, "--save-engine")

    from trt_scatter.engine import has_gpu

    runners = [_reference_runner(loaded)]  # the Model: its shapes, worked out once, serve the reference too
    gpu = has_gpu()
    built, engine_runs = engine is not None, gpu and engine is not None
    if engine_runs:
        runners.append(_tensorrt_runner(engine, has_plugins))
    else:
        engine = None  # not run, and saved already: the bytes, which hold the weights, go before the other runners take them
        why = "no GPU" if not gpu else "no engine"
        if has_plugins:
            print(f"{why}: the TensorRT engine is not run; comparing onnxruntime on the lowered model (trt_scatter nodes as standard ONNX ops) with the reference instead")
        else:
            print(f"{why}: the TensorRT engine is not run; comparing onnxruntime with the reference instead")
        every = any(name is None for name, _ in [*(args.atol or []), *(args.rtol or [])])  # one output's tolerance is not the model's
        runners.append(_onnxruntime_runner(loaded, has_plugins, tolerant=every))

    _counted_plugin_errors(uses_plugins)  # what earlier runs in this process counted is not this check's to report
    try:
        with common.quiet_tensorrt():  # a plugin's exception is printed by TensorRT's bindings: it is counted below
            generated = free_dims or (
                " (the inputs were generated at the given --input-shapes: give others, or your inputs with --load-inputs)"
                if args.input_shapes else " (the inputs were generated: give yours with --load-inputs)")
            results = _run(runners, feeds, "" if args.load_inputs else generated)
    except common.CliError:  # a run failed: the kernels' counts may say why
        counted = _counted_plugin_errors(uses_plugins)
        if not counted:
            raise
        for message in counted:  # what the kernels skipped, named by op (debug mode, on while checking)
            print(f"FAIL {message}")
        return "FAILED", built
    names = list(results.keys())
    pairs = [(REFERENCE, name) for name in names[1:]]
    if golden is not None:
        print(f"golden outputs ({args.load_outputs}) from: {', '.join(golden.keys())}")
        used = set()
        for name in names:
            source = _golden_run_of(name, list(golden.keys()))
            used.add(source)
            results.append((f"golden {source}", golden[source]))
            pairs.append((f"golden {source}", name))
        unused = [name for name in golden.keys() if name not in used]
        if unused:  # a GPU machine's tensorrt run where no engine runs: said, not silently left out
            engine_run = any(name == "tensorrt" or name.startswith(POLYGRAPHY_PREFIXES["tensorrt"]) for name in unused)
            print(f"note: the golden run{'s' if len(unused) > 1 else ''} {', '.join(map(repr, unused))} "
                  f"{'are' if len(unused) > 1 else 'is'} compared with nothing: no run here is of {'their' if len(unused) > 1 else 'its'} "
                  f"runner{' (the engine runs only on a GPU)' if engine_run and not engine_runs else ''}")
    failed = _compare(results, pairs, tolerances)
    ok &= not failed
    # onnxruntime's own failures: against a reference that the reference run itself matches
    onnxruntime_failed = any(name.startswith("onnxruntime") and (reference, REFERENCE) not in failed for reference, name in failed)
    if onnxruntime_failed and not engine_runs and _min_max_reductions(loaded):
        print("note: onnxruntime's min and max let no NaN win and settle ties of -0.0 and 0.0 their own way (the reference "
              "follows PyTorch's amin/amax): where the inputs hold those, only the engine, run on a GPU, checks these outputs")
    if any(reference.startswith("golden ") for reference, _ in failed) and not args.load_inputs:
        print("note: golden outputs match only the inputs they were made from, and these inputs were generated here: give the golden "
              "run's inputs with --load-inputs (check --save-inputs saves them beside --save-outputs)")

    if args.save_inputs:
        from polygraphy.json import save_json

        with common.replacing(args.save_inputs, "--save-inputs") as temporary:
            save_json(feeds, temporary, description="trt-scatter check inputs")
    if args.save_outputs:
        from polygraphy.comparator import RunResults

        with common.replacing(args.save_outputs, "--save-outputs") as temporary:
            RunResults([(name, value) for name, value in results.items() if not name.startswith("golden ")]).save(temporary)
    if not ok:
        return "FAILED", built
    return ("PASSED" if engine_runs else "NOT RUN ON TENSORRT"), built


def _with_python_plugins(loaded):
    """``loaded`` (a Model) with its nodes for the AOT plugins as plain ``trt_scatter`` nodes, which the Python plugins
    build: a TensorRT without the AOT plugins can still show that the rest of the model builds."""
    import onnx

    from trt_scatter.model import Model
    from trt_scatter.ops import AOT_ATTRIBUTES, is_trt_scatter

    proto = onnx.ModelProto()
    proto.CopyFrom(loaded.proto)
    for node in proto.graph.node:
        if is_trt_scatter(node):
            kept = [attribute for attribute in node.attribute if attribute.name not in AOT_ATTRIBUTES]
            del node.attribute[:]
            node.attribute.extend(kept)
    return Model(proto, loaded.path, loaded.external, loaded.weights)


def _unbuildable_here(model):
    """Why this TensorRT cannot build ``model`` whatever its shapes (nodes for the AOT plugins, which TensorRT-RTX and
    TensorRT before 10.9 lack), or None: that is not the model's failure, so the check goes on without an engine."""
    from trt_scatter import engine

    if engine.aot_node(model) is None:
        return None
    from trt_scatter.plugins import PluginError, aot

    try:
        aot.tensorrt_plugin()
    except PluginError as err:
        return str(err)
    return None


def _reductions(loaded):
    """``(index, node, reduction)`` for each scatter node of the model (subgraphs included) that combines its updates:
    the node's ``reduction``, or its op's default (trt-scatter's reduction ops: add)."""
    from trt_scatter import ops
    from trt_scatter.model.graph import indexed_nodes
    from trt_scatter.model.node import OpNode

    for index, node in indexed_nodes(loaded.proto.graph):
        if ops.op_of(node) is None:
            continue
        reduction = OpNode(node, index, loaded.tensors).attribute("reduction") or "none"
        if reduction != "none":
            yield index, node, reduction


def _min_max_reductions(loaded):
    """Whether a scatter of the model combines by min or max (which onnxruntime settles otherwise for NaN and ±0)."""
    return any(reduction in ("min", "max") for _, _, reduction in _reductions(loaded))


def _resolve_tensorrt():
    """The reason TensorRT cannot be used, or None."""
    from trt_scatter.backend import BackendError, tensorrt

    try:
        tensorrt()
    except BackendError as err:
        return str(err)
    return None


def _inputs(args, loaded):
    model = loaded.proto
    if args.load_inputs:
        from polygraphy.json import load_json

        from trt_scatter.model import constant_inputs, fed_constant, fed_inputs

        try:
            feeds = load_json(args.load_inputs, description="input data")
        except UnicodeDecodeError:  # a binary file (a model, an engine): its bytes say nothing to the user
            raise common.CliError(f"cannot load inputs from {args.load_inputs!r}: not a text file (polygraphy's --save-inputs "
                                  "JSON is)") from None
        except Exception as err:
            raise common.CliError(f"cannot load inputs from {args.load_inputs!r}: {err}") from None
        if not isinstance(feeds, list) or not feeds or not all(isinstance(f, dict) for f in feeds):
            raise common.CliError(f"{args.load_inputs!r} does not hold a list of feed dicts (polygraphy's --save-inputs format)")
        declared = {value.name: value for value in fed_inputs(model.graph)}
        names, constants = list(declared), constant_inputs(model.graph)
        if len(feeds) > MAX_ITERATIONS:
            raise common.CliError(f"--load-inputs {args.load_inputs!r}: {len(feeds)} iterations, more than {MAX_ITERATIONS}, the most a check runs")
        for iteration, feed in enumerate(feeds):
            missing = [name for name in names if name not in feed]
            if missing:  # polygraphy would go on without it (a profile without it, a run that names something else)
                raise common.CliError(f"--load-inputs {args.load_inputs!r}: iteration {iteration} has no input {missing[0]!r} (the model's inputs: {', '.join(names)})")
            extra = [name for name in feed if name not in names]
            if extra and extra[0] in constants:
                raise common.CliError(f"--load-inputs {args.load_inputs!r}: iteration {iteration}: {fed_constant(extra[0])}")
            if extra:  # a misspelt name would be silently ignored, and its input generated or missing
                raise common.CliError(f"--load-inputs {args.load_inputs!r}: iteration {iteration} has {extra[0]!r}, which is not an input of the model (its inputs: {', '.join(names)})")
            for name in names:
                _check_loaded(args.load_inputs, iteration, name, feed[name], loaded.tensors, declared.get(name))
            _check_named_dims(args.load_inputs, iteration, feed, model.graph)
        return feeds
    from trt_scatter.inputs import GivenShapeError
    from trt_scatter.polygraphy_ext import ScatterDataLoader

    try:
        return list(ScatterDataLoader(loaded, seed=1 if args.seed is None else args.seed, input_shapes=dict(args.input_shapes),
                                      iterations=args.iterations or 1))
    except GivenShapeError as err:  # the given shapes are wrong: no hint to give them
        raise common.CliError(f"cannot generate valid inputs: {err}") from None
    except ValueError as err:  # ScatterInputError and ModelError included
        named = "--load-inputs" in str(err)  # the loader's own line says it already
        hint = _free_dims_hint(model, args.input_shapes, own_inputs=not named) or ("" if named else " (or give inputs of your own: --load-inputs)")
        raise common.CliError(f"cannot generate valid inputs: {err}{hint}") from None


def _check_loaded(path, iteration, name, value, tensors, declared):
    """A loaded input has the model's element type (float indices would be truncated without a word) and shape."""
    import numpy as np

    from trt_scatter.model import declared_dims
    from trt_scatter.oracle.rules import show_shape

    value = np.asarray(value)
    dtype, shape = tensors.dtype(name), tensors.shape(name)
    where = f"--load-inputs {path!r}: iteration {iteration}, input {name!r}"
    if dtype is not None and value.dtype != dtype:
        raise common.CliError(f"{where} is {value.dtype}, the model's is {dtype}: save the inputs in the model's types")
    if shape is not None and (value.ndim != len(shape) or any(d >= 0 and d != v for d, v in zip(shape, value.shape))):
        dims = declared_dims(declared) if declared is not None else None
        shown = show_shape(dims if dims is not None and len(dims) == len(shape) else shape)
        raise common.CliError(f"{where} has shape {value.shape}, which does not fit the model's {shown}")


def _check_named_dims(path, iteration, feed, graph):
    """Loaded inputs give a named (symbolic) dimension one length wherever the model's inputs name it (else the
    engine's profile fails to build, and the reference refuses the run too: two lines for one mistake)."""
    import numpy as np

    from trt_scatter.inputs import NamedDimensionConflict, named_dimensions

    try:
        named_dimensions(graph, {name: np.shape(value) for name, value in feed.items()})
    except NamedDimensionConflict as err:
        raise common.CliError(f"--load-inputs {path!r}: iteration {iteration}: dimension {err.name!r} is {err.first[0]} in "
                              f"input {err.first[1]!r} and {err.second[0]} in input {err.second[1]!r}: the model names them one dimension") from None


def _plugins_in_it(loaded, handed):
    """What the engine line adds where the engine holds trt-scatter's plugins: which, and how many of each (the model's
    own ``trt_scatter`` nodes and ONNX's nodes handed to them, ``handed``), since a runtime must load them to run it
    (a lowered model's reductions, for one, are still theirs)."""
    from collections import Counter

    from trt_scatter.model import all_nodes
    from trt_scatter.ops import is_trt_scatter

    counts = Counter(node.op_type for node in all_nodes(loaded.proto.graph) if is_trt_scatter(node))
    counts.update(node.op_type for node in handed.values())
    if not counts:
        return ""
    return f", with trt-scatter's plugins ({', '.join(f'{op} x{n}' for op, n in sorted(counts.items()))}): a runtime must load them to run it"


def _build_engine(loaded, feeds, plugins):
    """(serialized engine, None) or (None, why the build failed), through :func:`trt_scatter.engine.build_engine`:
    dynamic inputs get a profile of the fed shapes, inputs that set shapes one of the fed values."""
    from trt_scatter import engine

    model = loaded.proto
    aot = engine.aot_node(model) is not None  # nodes for the AOT plugins (export(aot=True)): only those serve them

    def build():
        network = engine.network_from_onnx(loaded, plugins=plugins, aot=aot)
        aliased = aot or engine.needs_aliased_plugin_io(model)  # refused where TensorRT lacks the feature
        return engine.build_engine(network, name=model.graph.name, aliased_plugin_io=aliased, feeds=feeds)[0]

    with common.quiet_tensorrt() as tensorrt_output:
        try:
            return common.isolated(build, "building the engine"), None
        except (common.CliError, ValueError) as err:  # TensorRT crashed; shapes a plugin's rule refuses (build_engine names it)
            return None, f"engine build failed: {common.first_line(err)}"
        except Exception as err:  # polygraphy raises PolygraphyException; plugin registration may raise anything
            return None, f"engine build failed: {common.build_failure(tensorrt_output.reason(err), loaded, plugins)}"


def _reference_runner(model):
    from trt_scatter.polygraphy_ext import ReferenceRunner

    return ReferenceRunner(model, name=REFERENCE)


def _tensorrt_runner(engine, has_plugins):
    import os

    from polygraphy.backend.trt import EngineFromBytes, TrtRunner

    from trt_scatter.plugins.kernels import DEBUG_ENV

    os.environ.setdefault(DEBUG_ENV, "1")  # a skipped write is a failure here: count them, name the op
    if has_plugins:  # the engine was built in a child process: this one deserializes it
        from trt_scatter.plugins import register

        register()

    return TrtRunner(EngineFromBytes(engine), name="tensorrt")


def _onnxruntime_runner(loaded, lowered, tolerant=False):
    """onnxruntime on the model (a :class:`trt_scatter.model.Model`), with its trt_scatter nodes lowered if it
    has any (``lowered``): the lowering reuses what validation worked out of the model. Not where it rounds float16
    sums its own way (:func:`_float16_sum`), unless the user gave tolerances (``tolerant``)."""
    from polygraphy.backend.onnx import BytesFromOnnx
    from polygraphy.backend.onnxrt import OnnxrtRunner, SessionFromOnnx

    from trt_scatter.model import ModelError
    from trt_scatter.passes.lower import lower

    summing = "" if tolerant else _float16_sum(loaded)
    if summing:
        raise common.CliError(f"onnxruntime{'-lowered' if lowered else ''} cannot check this model on this machine, so nothing was compared "
                              f"(compare the engine where a GPU runs it, or give --atol/--rtol to let onnxruntime try: it has such kernels at some "
                              f"opsets only): {summing}")
    if not lowered:
        return OnnxrtRunner(SessionFromOnnx(BytesFromOnnx(loaded.proto)), name="onnxruntime")
    try:
        lowered_bytes = BytesFromOnnx(lower(loaded))()  # now: the lowered model's weights are not held twice, as it and its bytes
    except ModelError as err:
        raise common.CliError(f"cannot lower the model for onnxruntime: {err}") from None
    return OnnxrtRunner(SessionFromOnnx(lowered_bytes), name="onnxruntime-lowered")


def _check_input_types(loaded):
    """Every input holds numbers or bools, which check draws and compares (polygraphy failed on complex values in words
    of its own, which blamed the drawn inputs)."""
    from trt_scatter import dtypes
    from trt_scatter.model import fed_inputs, printable

    for value in fed_inputs(loaded.proto.graph):
        dtype = loaded.tensors.dtype(value.name)
        if dtype is not None and dtype.kind in "cOSU":  # not "V": bfloat16 and float8 are ml_dtypes of that kind
            raise ValueError(f"graph input {printable(repr(value.name))} is {dtypes.onnx_name(value.type.tensor_type.elem_type)}: check draws "
                             "and compares numbers and bools (TensorRT has no such type either)")


def _float16_sum(loaded):
    """Where a scatter of the model sums or multiplies float16 or bfloat16 values (reduction add, mul or mean), what
    keeps onnxruntime from checking it: its CPU kernels run such reductions only at some opsets and round their sums
    their own way, where the spec combines each target's updates in their order, rounding after each step (a valid
    model failed by 1-2 units in the last place). Empty where there is none."""
    from trt_scatter.model.graph import node_label

    for index, node, reduction in _reductions(loaded):
        dtype = loaded.tensors.dtype(node.input[0])
        if reduction in ("add", "mul", "mean") and dtype is not None and dtype.name in ("float16", "bfloat16"):
            what = "products" if reduction == "mul" else "sums"
            return (f"{node_label(node, index)} reduces {dtype.name} values with '{reduction}': onnxruntime's CPU kernels round such {what} "
                    "their own way, not as the spec orders them")
    return ""


def _run(runners, feeds, hint):
    from polygraphy.comparator import Comparator

    try:
        return Comparator.run(runners, data_loader=feeds)
    except Exception as err:  # PolygraphyException, or the oracle's ScatterInputError from the reference
        reason = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
        from trt_scatter.polygraphy_ext.loader import lacks_a_kernel, refuses_the_model

        if "[ONNXRuntimeError]" in reason:
            # onnxruntime's CPU kernels lack some types (float16 reductions): not the model's fault, and other inputs would not help
            if lacks_a_kernel(reason):
                raise common.CliError(f"{runners[-1].name} cannot run this model on this machine, so nothing was compared (compare the "
                                      f"engine where a GPU runs it): {reason}") from None
            if refuses_the_model(reason):  # an exporter's type mix-up (a Slice of int32 starts and int64 axes): no inputs would help
                raise common.CliError(f"{runners[-1].name} refuses the model: {reason}") from None
            raise common.CliError(f"{runners[-1].name} failed to run the model on these inputs: {reason}{hint}") from None
        raise common.CliError(f"a run failed: {reason}{hint}") from None


def _free_dims_hint(model, given=(), own_inputs=True):
    """Where inputs may have failed for the dims the loader chose: a note saying to give them, and (``own_inputs``) that
    inputs of one's own do too (none where every dynamic dimension is given, by its input's shape or by the name another
    given shape sets)."""
    from trt_scatter.model import declared_size, fed_inputs

    given, fed = dict(given), fed_inputs(model.graph)  # an initializer listed among the inputs is no input a run feeds
    named = {d.dim_param for value in fed if value.name in given for d in value.type.tensor_type.shape.dim if d.dim_param}
    dynamic = any(declared_size(d) is None and d.dim_param not in named
                  for value in fed if value.name not in given for d in value.type.tensor_type.shape.dim)
    if not dynamic:
        return ""
    own = "your inputs with --load-inputs" if own_inputs else ""
    if given:  # the shapes given may be what broke a rule
        return f" (--input-shapes leaves dynamic input dims free: give them too, or other shapes{'; or ' + own if own else ''})"
    return f" (the model has dynamic input dims: give them with --input-shapes{', or ' + own if own else ''})"


def _counted_plugin_errors(plugins):
    """What the plugins' kernels counted in debug mode during the runs (each message names its op)."""
    if not plugins:
        return []
    from trt_scatter.plugins import counted_errors

    return counted_errors()


#: the name prefix ``polygraphy run`` gives each of this command's runners (polygraphy appends a count and a time)
POLYGRAPHY_PREFIXES = {REFERENCE: "reference-runner-", "tensorrt": "trt-runner-", "onnxruntime": "onnxrt-runner-",
                       "onnxruntime-lowered": "onnxrt-runner-"}


def _golden_run_of(name, golden_names):
    """The golden run to compare run ``name`` with: its own (saved by this command, or by ``polygraphy run``, whose
    runner names carry a count and a time), else the golden reference (either's), else the file's first run."""
    for wanted in (name, REFERENCE):
        if wanted in golden_names:
            return wanted
        saved_by_polygraphy = [golden for golden in golden_names if golden.startswith(POLYGRAPHY_PREFIXES[wanted])]
        if saved_by_polygraphy:
            return saved_by_polygraphy[0]
    return golden_names[0]


def _load_golden(path, outputs):
    """The golden runs in ``path``, whose run that the reference is compared with must hold at least one of the model's
    ``outputs`` (a file of another model's would fail every output twice, as missing on each side)."""
    from polygraphy.comparator import RunResults

    try:
        with common.quiet_tensorrt():  # polygraphy logs a wrong kind of JSON (an inputs file) as a [!] block before raising
            golden = RunResults.load(path)
    except Exception as err:
        raise common.CliError(f"cannot load golden outputs from {path!r}: {err}") from None
    if not len(golden):
        raise common.CliError(f"--load-outputs {path!r} holds no runs")
    run = _golden_run_of(REFERENCE, list(golden.keys()))
    if not golden[run]:  # the run the reference is compared with, in every check
        raise common.CliError(f"--load-outputs {path!r}: its run {run!r} holds no iterations, so nothing could be compared with it")
    saved = sorted({name for iteration in golden[run] for name in iteration.keys()})
    if saved and not set(saved) & set(outputs):
        raise common.CliError(f"--load-outputs {path!r}: its run {run!r} holds outputs {', '.join(map(repr, saved))}, none of this model's "
                              f"({', '.join(map(repr, outputs))}): golden outputs of another model?")
    return golden


def _default_tolerances(loaded):
    """``{output name: (atol, rtol, why, bit for bit)}`` when no ``--atol``/``--rtol`` is given: 0 for an output the
    model only moves data to compute (:func:`_exact_outputs`; bit for bit unless a Max, Min or Relu lies on the way)
    and for an integer or bool one (an index, a count, an id: a tolerance that grows with the value would pass a
    next-token id off by one), polygraphy's default for the other outputs, wider for float16."""
    import numpy as np

    exact, defaults = _exact_outputs(loaded), {}
    for value in loaded.proto.graph.output:
        dtype = loaded.tensors.dtype(value.name)
        integer = dtype is not None and dtype.kind in "biu"  # equal as numbers is equal bytes
        if value.name in exact:
            bit_for_bit = exact[value.name] or integer
            defaults[value.name] = (0.0, 0.0, "exact: the model only moves data to compute it" if bit_for_bit else EXACT_AS_NUMBERS, bit_for_bit)
        elif integer:
            kind = "a bool output (a mask, a flag)" if dtype.kind == "b" else "an integer output (an index, a count, an id)"
            defaults[value.name] = (0.0, 0.0, f"exact: {kind} computed from floats, which a near-tie there can flip: --atol allows a difference", True)
        else:
            defaults[value.name] = (*(FLOAT16_TOLERANCE if dtype == np.float16 else (DEFAULT_TOLERANCE,) * 2), FLOATS, False)
    return defaults


def _exact_outputs(loaded):
    """``{output: bit for bit}`` of the graph outputs the model computes exactly: through :data:`EXACT_OPS`, scatters
    without a reduction and integer arithmetic only, from its inputs and constants (so any two correct runs give the
    same numbers; the same bytes too, unless a :data:`SIGNED_ZERO_OPS` node lies on the way)."""
    from trt_scatter.model import all_nodes
    from trt_scatter.ops import op_of

    graph, tensors = loaded.proto.graph, loaded.tensors
    producers = {output: node for node in all_nodes(graph) for output in node.output if output}

    def exact(node):
        if any(a.name == "reduction" and a.s not in (b"", b"none") for a in node.attribute):
            return False
        if node.op_type in EXACT_OPS or (op_of(node) is not None):
            return True
        dtypes = [tensors.dtype(output) for output in node.output if output]
        return bool(dtypes) and all(dtype is not None and dtype.kind in "biu" for dtype in dtypes)  # integer arithmetic

    verdicts, bitwise = {}, {}  # tensor -> computed exactly; -> and no SIGNED_ZERO_OPS node on the way

    def computed_exactly(name):  # depth first, without recursion: a chain of thousands of nodes is a valid model
        stack = [(name, False)]
        while stack:
            current, inputs_done = stack.pop()
            node = producers.get(current)
            if inputs_done:
                inputs = [i for i in node.input if i]
                verdicts[current] = exact(node) and all(verdicts[i] for i in inputs)
                bitwise[current] = node.op_type not in SIGNED_ZERO_OPS and all(bitwise[i] for i in inputs)
            elif current not in verdicts:
                verdicts[current] = bitwise[current] = True  # while it is worked out: a cycle (refused before) would not loop
                if node is not None:
                    stack.append((current, True))
                    stack.extend((i, False) for i in node.input if i and i not in verdicts)
        return verdicts[name]

    return {value.name: bitwise[value.name] for value in graph.output if computed_exactly(value.name)}


def _same_nan(both):
    """What a verdict line says of the elements that are NaN on both sides (``both``: a bool array), left out of the
    comparison: nothing where there are none."""
    count = int(both.sum())
    return f"; NaN in the same {count} place{'s' if count != 1 else ''} on both sides" if count else ""


def _compare(results, pairs, tolerances):
    """Prints one verdict line per (pair, output, iteration) and returns the pairs that failed.

    Outputs must have the same type and shape. Identical bytes pass outright: scatter ops only move
    data, so NaN and infinities in the inputs reach both sides unchanged. NaN in other places on the two
    sides fail (polygraphy's tolerance check counts every NaN as a mismatch); NaN in the same places are
    left out of the comparison of the rest, which is polygraphy's elementwise check at the output's
    ``tolerances`` (``{name: (atol, rtol, why, bit for bit)}``, :func:`_tolerances`), which each line names with its reason.
    """
    import numpy as np
    from polygraphy.comparator import IterationResult
    from polygraphy.comparator.compare import SimpleCompareFunc
    from polygraphy.logger import G_LOGGER

    from trt_scatter import dtypes

    failed = []
    for reference, candidate in pairs:
        ok = True
        if len(results[reference]) != len(results[candidate]):
            compared = min(len(results[candidate]), len(results[reference]))
            print(f"FAIL {candidate} vs {reference}: {len(results[candidate])} iteration(s), expected {len(results[reference])} "
                  f"(the first {compared} compared)")
            ok = False
        for iteration, (expected, actual) in enumerate(zip(results[reference], results[candidate])):
            where = f" (iteration {iteration})" if max(len(results[reference]), len(results[candidate])) > 1 else ""
            for name in list(expected.keys()) + [n for n in actual.keys() if n not in expected]:
                if name not in expected or name not in actual:
                    print(f"FAIL {name}{where}: {candidate} vs {reference}: missing in {reference if name not in expected else candidate}")
                    ok = False
            for name in [n for n in expected.keys() if n in actual]:
                # Contiguous: a runner may hand out a view (onnx.reference's Transpose does), which polygraphy's
                # elementwise check cannot reshape ("Input array to view() must be contiguous in memory").
                want, got = np.ascontiguousarray(expected[name]), np.ascontiguousarray(actual[name])
                if want.dtype == got.dtype and want.dtype == dtypes.BFLOAT16:  # polygraphy's check cannot promote it; float32 holds it exactly
                    want, got = want.astype(np.float32), got.astype(np.float32)
                floats = want.dtype == got.dtype and want.shape == got.shape and want.dtype.kind == "f"
                nans, got_nans = (np.isnan(want), np.isnan(got)) if floats else (np.zeros(want.shape, bool),) * 2
                if want.dtype != got.dtype or want.shape != got.shape:
                    passed, detail = False, f"got {got.dtype} {got.shape}, expected {want.dtype} {want.shape}"
                elif want.tobytes() == got.tobytes():
                    passed, detail = True, "max abs diff 0 (identical)" + _same_nan(nans)
                elif (nans != got_nans).any():  # no tolerance passes a NaN
                    passed, detail = False, (f"NaN where the other has a number: {int((got_nans & ~nans).sum())} of {candidate}'s "
                                             f"elements, {int((nans & ~got_nans).sum())} of {reference}'s" + _same_nan(nans & got_nans))
                else:
                    atol, rtol, why, exact = tolerances.get(name, (0.0, 0.0, "exact", True))  # exact: equal bytes, and these
                    # differ: a zero's sign, a NaN's payload, integers that wrap
                    if nans.any():  # in the same places on both sides (a NaN input, computed on): compare the rest
                        want, got = np.where(nans, 0, want), np.where(nans, 0, got)
                    if not exact and want.dtype.kind in "iu":  # polygraphy's integer difference wraps around
                        want, got = want.astype(np.float64), got.astype(np.float64)
                    compare = SimpleCompareFunc(atol=atol, rtol=rtol, check_shapes=True, infinities_compare_equal=True)
                    # its log lines, and NumPy's warnings of its relative difference where the expected value is 0 (an
                    # integer output), would come between the verdict lines
                    with G_LOGGER.verbosity(G_LOGGER.CRITICAL), np.errstate(divide="ignore", invalid="ignore"):
                        verdict = compare(IterationResult({name: want}), IterationResult({name: got}))[name]
                        reldiff = verdict.max_reldiff
                        if np.isnan(reldiff):  # polygraphy's 0 / 0 where both are 0 (it divides by |got|): the elements that differ decide
                            differs = want != got
                            other = got[differs].astype(np.float64)
                            reldiff = float(np.max(np.abs(other - want[differs].astype(np.float64)) / np.abs(other))) if differs.any() else 0.0
                    bitwise = "; equal as numbers, not bit for bit" if exact and verdict else ""
                    same_nan = _same_nan(nans)
                    passed = bool(verdict) and not exact
                    flags = "; --atol and --rtol set others" if why == FLOATS and not passed else ""  # failed at the default tolerance
                    detail = (f"max abs diff {verdict.max_absdiff:.6g}, max rel diff {reldiff:.6g} "
                              f"(atol {atol:g}, rtol {rtol:g}: {why}{flags}){same_nan}{bitwise}")
                print(f"{'PASS' if passed else 'FAIL'} {name}{where}: {candidate} vs {reference}: {detail}")
                ok &= passed
        if not ok:
            failed.append((reference, candidate))
    return failed
