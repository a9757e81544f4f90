"""The ``polygraphy run`` extension (entry-point group ``polygraphy.run.plugins``).

Loading it (polygraphy does, on every ``polygraphy run``, once trt-scatter is installed):

- ``--pluginref`` runs trt-scatter's whole-model reference (:class:`.ReferenceRunner`: ONNX's
  evaluator with the oracle for the scatter ops) instead of polygraphy's node-by-node one, so
  models with MatMul, Conv, Sigmoid... around scatter nodes run there, once the model passes
  validation (a mistake it shows ends the run in one line);
- ``--onnxrt`` runs a model with ``trt_scatter`` nodes lowered to standard ONNX ops
  (:class:`~trt_scatter.passes.lower.LowerTrtScatter`), which onnxruntime can run; it says so; and where
  onnxruntime refuses a model with scatter nodes (kernels it lacks, inputs it refuses), :class:`.ExplainOnnxrtErrors`
  says so in one line;

and it adds two options:

- ``--trt-scatter-plugins``: validate the model's ``trt_scatter`` nodes
  (:mod:`trt_scatter.passes.validate`: a mistake the model shows ends the run in one line) and
  register trt-scatter's TensorRT plugins before the ONNX parser runs, by wrapping the model loader
  in :class:`.ValidateTrtScatter` and :class:`.RegisterTrtScatterPlugins` (so ``--gen-script``
  scripts do it too); with the kernels' error count on (``TRT_SCATTER_DEBUG=1``), so a write a
  kernel skips fails the run naming the op; and, for a node with ``inplace=1``, the builder's
  ``PreviewFeature.ALIASED_PLUGIN_IO_10_03``;
- ``--trt-scatter-inputs``: feed valid inputs (:class:`.ScatterDataLoader`) instead of random
  ones, honouring ``--seed``, ``--input-shapes``, ``--iterations`` and ``--val-range`` (for the inputs no rule
  draws); without shapes from the user, the TensorRT profile takes the generated shapes.

Each of these goes into the script polygraphy runs (and ``--gen-script`` writes). polygraphy 0.53 lets
an extension add options and runners, but has no hook through which it could choose the model a
built-in runner loads or the data it is fed: so this group extends what polygraphy's own argument
groups add to that script (their ``add_to_script_impl``, the hook each of them has), and nothing else
of theirs. A ``--data-loader-script`` of the user's own can serve valid inputs too (README).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from polygraphy.logger import G_LOGGER
from polygraphy.tools.args import DataLoaderArgs, ModelArgs, OnnxLoadArgs, OnnxrtSessionArgs, PluginRefRunnerArgs, TrtConfigArgs, TrtLoadPluginsArgs
from polygraphy.tools.args import util as args_util
from polygraphy.tools.args.base import BaseArgs
from polygraphy.tools.script import make_invocable

from trt_scatter.polygraphy_ext import references  # noqa: F401  (registers the references)

if TYPE_CHECKING:
    import argparse

    import onnx


class TrtScatterArgs(BaseArgs):
    """
    trt-scatter: models with scatter ops (SliceScatter, ScatterUpdate, ScatterElements, ScatterND)

    Depends on:

        - ModelArgs, OnnxLoadArgs: the model
        - PluginRefRunnerArgs: replaced by the whole-model reference, if present
        - OnnxrtSessionArgs: given the lowered model, if present
        - TrtLoadPluginsArgs: for --trt-scatter-plugins
        - DataLoaderArgs: for --trt-scatter-inputs
        - TrtConfigArgs: for --trt-scatter-inputs, if present
    """

    def add_parser_args_impl(self) -> None:
        self.group.add_argument(
            "--trt-scatter-plugins",
            help="Register trt-scatter's TensorRT plugins before the ONNX parser runs",
            action="store_true",
            default=None,
        )
        self.group.add_argument(
            "--trt-scatter-inputs",
            help="Generate valid inputs for the model's scatter ops (distinct in-range indices, slice parameters "
            "matching the updates) instead of random ones; honours --seed, --input-shapes, --iterations and --val-range "
            "(for the inputs no rule draws: data, updates)",
            action="store_true",
            default=None,
        )

    def parse_impl(self, args: argparse.Namespace) -> None:
        """
        Attributes:
            register_plugins (bool): Whether to register trt-scatter's plugins before parsing.
            generate_inputs (bool): Whether to feed inputs from trt-scatter's data loader.
        """
        self.register_plugins = bool(args_util.get(args, "trt_scatter_plugins"))
        self.generate_inputs = bool(args_util.get(args, "trt_scatter_inputs"))
        with references.logged_by_polygraphy():  # what validation and the data loader warn of: polygraphy's log lines
            self._extend_the_script(args)

    def _extend_the_script(self, args):
        # The generated script (run in this process, or saved by --gen-script) must do what this process did.
        if PluginRefRunnerArgs in self.arg_groups:
            self.arg_groups[PluginRefRunnerArgs].add_to_script_impl = self._add_reference_runner
        self._model = None  # the run's ONNX model once read (_read_model): every check below reads it once
        self._served = False  # whether the plugins serve some of its ONNX nodes (--trt-scatter-plugins)
        # Only the onnxrt runner builds a session (OnnxrtSessionArgs.add_to_script): other runs need not read the model.
        runners = args_util.get(args, "runners") or []
        runs_onnxrt = OnnxrtSessionArgs in self.arg_groups and "onnxrt" in runners
        # A mistake the model shows is named by the option whose work holds the model to the oracle's rules: the
        # plugins', the reference's, before the lowering's (not onnxruntime's to answer for).
        if self.register_plugins or (PluginRefRunnerArgs in self.arg_groups and "pluginref" in runners):
            self._validate_model("--trt-scatter-plugins" if self.register_plugins else "--pluginref")
        model = self._model_to_lower() if runs_onnxrt else None
        if model is not None:
            self._check_lowering(model)
            _before_add_to_script(self.arg_groups[OnnxrtSessionArgs], self._lowered_model)
        if model is not None or runs_onnxrt and self._has_scatter_nodes():
            _after_add_to_script(self.arg_groups[OnnxrtSessionArgs], functools.partial(_explained_session, lowered=model is not None))
        if self.register_plugins and TrtLoadPluginsArgs in self.arg_groups:
            from trt_scatter.passes.plugins import served

            model = self._read_model()  # validated above: a file that is no model has ended the run
            self._served = model is not None and bool(served(model))  # nodes of ONNX's own that the plugins serve, as build --plugins
            _after_add_to_script(self.arg_groups[TrtLoadPluginsArgs], self._register_plugins_first)
        self._say_what_trt_lacks("trt" in runners)
        if DataLoaderArgs in self.arg_groups:
            self._tell_data_loader(args)
            loader_args = self.arg_groups[DataLoaderArgs]
            if loader_args.data_loader_script and not self.generate_inputs:
                _after_add_to_script(loader_args, functools.partial(_drawn_script_inputs, model=self._onnx_model()))
            if self.generate_inputs or loader_args.data_loader_script or loader_args.load_inputs_paths:
                self._wrap_feeds(loader_args)
        if (self.register_plugins or self.generate_inputs) and TrtConfigArgs in self.arg_groups and "trt" in runners:
            self._escape_profile_names()

    def _say_what_trt_lacks(self, runs_trt):
        """Warns of a run whose options do nothing or whose TensorRT run cannot work, before polygraphy says so in words of
        its own: --trt-scatter-plugins without a --trt runner; a --trt runner without it on a model with (Python)
        plugin nodes, which the parser would not find; a --trt runner of a model with scatter nodes where no GPU is."""
        from trt_scatter.engine import aot_node, has_gpu

        if self.register_plugins and not runs_trt:
            G_LOGGER.warning("--trt-scatter-plugins registers the plugins for a --trt runner, and this run has none: it only validated the model")
        if not runs_trt:
            return
        model = self._model_to_lower()
        if model is not None and aot_node(model.proto) is not None:
            G_LOGGER.warning("the model's trt_scatter nodes are for the AOT plugins, which polygraphy run does not register: build "
                             "the engine with trt-scatter build --aot, and give polygraphy run the engine")
        elif model is not None and not self.register_plugins:
            G_LOGGER.warning("the model has trt_scatter nodes, which TensorRT's ONNX parser builds only with their plugins registered: "
                             "add --trt-scatter-plugins")
        if (model is not None or self.generate_inputs or self._has_scatter_nodes()) and not has_gpu():
            G_LOGGER.warning("--trt: no CUDA GPU here, so TensorRT may build the engine but cannot run it (polygraphy then fails, "
                             "e.g. to deserialize it); trt-scatter check compares onnxruntime with the reference instead")

    def _wrap_feeds(self, loader_args):
        """Wraps the run's inputs (``--trt-scatter-inputs``, ``--load-inputs``, ``--data-loader-script``) in
        :class:`.PolygraphyFeeds`: what trt-scatter warns of as it draws them is polygraphy's log lines, and a value fed
        for an input the run's ONNX model fills with an initializer, which polygraphy would drop, ends the run."""
        from trt_scatter.model import ModelError, constant_inputs

        try:
            model = self._read_model()
        except ModelError:  # not this extension's to report: polygraphy's own loader says it
            model = None
        constants = [] if model is None or self.generate_inputs else constant_inputs(model.proto.graph)
        flag = ("--trt-scatter-inputs" if self.generate_inputs else "--data-loader-script" if loader_args.data_loader_script
                else "--load-inputs")
        _after_add_to_script(loader_args, functools.partial(_polygraphy_feeds, flag=flag, constants=constants))

    def _escape_profile_names(self):
        """polygraphy's ``Profile`` matches its keys to input names as fnmatch patterns, so ``past_key_values[0]`` (as
        PyTorch's exports name a KV cache) names no input, given or filled in by polygraphy: each key that is an input's
        name is made a pattern of that name alone, and an input so named that the profile leaves out gets an entry
        (its static shape; 1 for a dynamic dimension, polygraphy's default)."""
        from trt_scatter.engine import literal_pattern
        from trt_scatter.model import declared_size, fed_inputs

        model = self._read_model()
        if model is None:
            return
        inputs = {value.name: value for value in fed_inputs(model.proto.graph)}
        if all(literal_pattern(name) == name for name in inputs):
            return
        config = self.arg_groups[TrtConfigArgs]
        config.profile_dicts = config.profile_dicts or [{}]
        for profile in config.profile_dicts:
            for name, value in inputs.items():
                if name in profile:
                    profile[literal_pattern(name)] = profile.pop(name)
                elif literal_pattern(name) != name and literal_pattern(name) not in profile:
                    shape = [declared_size(d, 1) for d in value.type.tensor_type.shape.dim]
                    profile[literal_pattern(name)] = (shape, shape, shape)

    def _add_reference_runner(self, script):
        """In place of ``PluginRefRunnerArgs.add_to_script_impl``: the whole-model reference."""
        script.add_import(imports=["ReferenceRunner"], frm="trt_scatter.polygraphy_ext")
        model = self.arg_groups[OnnxLoadArgs].add_to_script(script)
        script.add_runner(make_invocable("ReferenceRunner", model))

    def _lowered_model(self, script):
        """The model onnxruntime runs: the user's with its trt_scatter nodes lowered, serialized."""
        G_LOGGER.info("trt-scatter: onnxrt runs the model with its trt_scatter nodes lowered to standard ONNX ops (trt-scatter lower)")
        script.add_import(imports=["LowerTrtScatter"], frm="trt_scatter.passes.lower")
        script.add_import(imports=["BytesFromOnnx"], frm="polygraphy.backend.onnx")
        model = self.arg_groups[OnnxLoadArgs].add_to_script(script)
        lowered = script.add_loader(make_invocable("LowerTrtScatter", model), "lower_trt_scatter")
        return script.add_loader(make_invocable("BytesFromOnnx", lowered), "serialize_lowered")

    def _check_lowering(self, model):
        """Lowers ``model`` (the run's, read) now, so that one the lowering refuses (a mistake) fails
        before anything runs, in one line, not in a traceback from the session's loader."""
        from trt_scatter.model import ModelError
        from trt_scatter.passes.lower import lower

        try:
            lower(model)
        except ModelError as err:
            G_LOGGER.critical(f"--onnxrt: {err}")

    def _onnx_model(self):
        model_args = self.arg_groups[ModelArgs] if ModelArgs in self.arg_groups else None
        if model_args is None or not model_args.path or model_args.model_type is None or not model_args.model_type.is_onnx():
            return None
        return model_args.path

    def _read_model(self):
        """The run's ONNX model (a :class:`trt_scatter.model.Model`), read once per parse; ``None`` where
        the run has no ONNX model. A ModelError for a file that is no model."""
        from trt_scatter.model import Model

        path = self._onnx_model()
        if self._model is None and path is not None:
            self._model = Model.read(path)
        return self._model

    def _has_scatter_nodes(self):
        """Whether the run's ONNX model has a node of an op trt-scatter knows (ONNX's own scatters too)."""
        from trt_scatter.model import ModelError, all_nodes
        from trt_scatter.ops import op_of

        try:
            model = self._read_model()
        except ModelError:
            return False
        return model is not None and any(op_of(node) is not None for node in all_nodes(model.proto.graph))

    def _model_to_lower(self):
        """The run's ONNX model if it has trt_scatter nodes; ``None`` for one without, for no ONNX
        model and for an unreadable file (polygraphy's own loader reports that)."""
        from trt_scatter.model import ModelError

        try:
            model = self._read_model()
        except ModelError:
            return None
        return model if model is not None and model.trt_scatter_ops() else None

    def _validate_model(self, flag):
        """Validates an ONNX model now, so that a mistake it shows fails before anything runs, in one line that
        starts with the ``flag`` that asked for it (the reference runs the model as the oracle defines it: a model
        the oracle refuses would end in a traceback, or pass what it cannot mean)."""
        from trt_scatter.engine import needs_aliased_plugin_io
        from trt_scatter.model import ModelError
        from trt_scatter.passes.validate import validate

        try:
            model = self._read_model()
            if model is None:
                return
            validate(model)
        except ModelError as err:
            G_LOGGER.critical(f"{flag}: {err}")
        if self.register_plugins and needs_aliased_plugin_io(model.proto) and TrtConfigArgs in self.arg_groups:
            self._allow_aliased_plugin_io(self.arg_groups[TrtConfigArgs])

    def _allow_aliased_plugin_io(self, config_args):
        """Adds ALIASED_PLUGIN_IO_10_03 to the preview features: to the user's list, or else to those TensorRT enables by
        default (polygraphy turns off every feature its list leaves out), as ``trt-scatter build`` enables it."""
        from polygraphy.tools.args.backend.trt.helper import make_trt_enum_val

        from trt_scatter.engine import aliased_plugin_io_feature, default_preview_features

        try:
            aliased_plugin_io_feature()
        except ValueError as err:
            G_LOGGER.critical(f"--trt-scatter-plugins: {err}")
        feature = make_trt_enum_val("PreviewFeature", "ALIASED_PLUGIN_IO_10_03")
        given = config_args.preview_features
        if given is None:
            try:
                given = [make_trt_enum_val("PreviewFeature", name) for name in default_preview_features()]
            except Exception:  # no builder here (full TensorRT without a GPU), and so no build either: the one feature will do
                given = []
        features = list(given)
        if str(feature) not in map(str, features):
            config_args.preview_features = features + [feature]

    def _parser_input(self, loader_name):
        """Whether ``loader_name``, which polygraphy hands ``LoadPlugins``, is what TensorRT's ONNX parser reads: the model
        path, or the loader of the serialized model (polygraphy's ONNX loaders, where an option changes the model), not
        the network or engine loaders after it."""
        return (type(loader_name) is str and loader_name == self._onnx_model()) or str(loader_name).startswith("serialize_onnx")

    def _register_plugins_first(self, script, loader_name):
        """Wraps the loader that polygraphy wraps with ``LoadPlugins`` (model path or engine) in ours,
        validating the model first where it is ONNX."""
        imports = ["RegisterTrtScatterPlugins"]
        parser_input = self._parser_input(loader_name)
        # polygraphy wraps the model path, then the network and the engine loaders: validate the path.
        if type(loader_name) is str and loader_name == self._onnx_model():
            imports.append("ValidateTrtScatter")
            loader_name = script.add_loader(make_invocable("ValidateTrtScatter", loader_name), "validate_trt_scatter")
        if self._served and parser_input:
            imports.append("UsePluginsForParser")
            loader_name = script.add_loader(make_invocable("UsePluginsForParser", loader_name), "use_plugins_for_parser")
        script.add_import(imports=sorted(imports), frm="trt_scatter.polygraphy_ext")
        return script.add_loader(make_invocable("RegisterTrtScatterPlugins", loader_name, debug=True), "register_trt_scatter_plugins")

    def _tell_data_loader(self, args):
        """With ``--trt-scatter-inputs``, the data loader of the script is :class:`.ScatterDataLoader` for this run's
        model and options (``--seed``, ``--input-shapes``, ``--iterations``), planned now so that a model it
        cannot serve fails before anything runs, in one line."""
        if not self.generate_inputs:
            return
        loader_args = self.arg_groups[DataLoaderArgs]
        model_args = self.arg_groups[ModelArgs]
        if loader_args.load_inputs_paths or loader_args.data_loader_script:
            G_LOGGER.critical("--trt-scatter-inputs cannot be combined with --load-inputs or --data-loader-script")
        shapes = {name: list(meta.shape) for name, meta in (model_args.input_shapes or {}).items()} or None
        profiles = self.arg_groups[TrtConfigArgs].profile_dicts if TrtConfigArgs in self.arg_groups else None
        if shapes is None and profiles:  # the user's TensorRT profile: its opt shapes, as polygraphy's own loader feeds
            shapes = {name: list(opt) for name, (_, opt, _) in profiles[0].items()}
        options = dict(seed=loader_args.seed if loader_args.seed is not None else 1, input_shapes=shapes,
                       iterations=1 if loader_args.iterations is None else loader_args.iterations, value_ranges=loader_args.val_range)
        from trt_scatter.model import ModelError

        try:
            model = self._read_model()
        except ModelError as err:  # a missing or broken file: one line, as the other flags say it
            G_LOGGER.critical(f"--trt-scatter-inputs: {err}")
        if model is None:
            G_LOGGER.critical("--trt-scatter-inputs draws inputs for an ONNX model, and this run has none (no model, or an engine)")
        refusal = bfloat16_inputs(model.proto.graph)
        if refusal:
            G_LOGGER.critical(f"--trt-scatter-inputs: {refusal}")
        loader = self._plan_inputs(model, options)

        def add_to_script_impl(script, user_input_metadata_str=None):  # in place of polygraphy's random DataLoader
            script.add_import(imports=["ScatterDataLoader"], frm="trt_scatter.polygraphy_ext")
            return script.set_data_loader(make_invocable("ScatterDataLoader", model_args.path, **options))

        loader_args.add_to_script_impl = add_to_script_impl
        if TrtConfigArgs in self.arg_groups:
            _profile_for(loader.shapes(), self.arg_groups[TrtConfigArgs])

    def _plan_inputs(self, model, options):
        """The data loader for ``model`` (the Model this parse read), every iteration drawn now (:func:`.drawn`), so that a
        model it cannot serve fails before anything runs, in one line."""
        from trt_scatter.inputs import ScatterDataLoader
        from trt_scatter.polygraphy_ext.loader import drawn

        try:
            loader = ScatterDataLoader(model, **options)
        except (ValueError, TypeError) as err:  # a seed or a shape that is no int
            G_LOGGER.critical(f"--trt-scatter-inputs: {err}")
        return drawn(loader, "--trt-scatter-inputs")


def bfloat16_inputs(graph: onnx.GraphProto) -> str | None:
    """Why no run of polygraphy's can take the graph's inputs, where one is bfloat16 (``None`` where none is): its
    runners check each input's type and know no bfloat16 NumPy type (ml_dtypes)."""
    import onnx

    names = [value.name for value in graph.input if value.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16]
    return None if not names else (
        f"input '{names[0]}' is bfloat16: polygraphy's runners (reference, onnxruntime, TensorRT) check each input's type and "
        "know no bfloat16 NumPy type (ml_dtypes), so no run can start; check a float16 or float32 version of the model "
        "(trt-scatter build builds this one)")


def _profile_for(shapes, config_args):
    """The TensorRT profile for the inputs the data loader generates (``shapes``): polygraphy's would fix the dynamic
    dims of an input the user's profile leaves out at 1, or of every input where the user gave none; such an input
    takes its generated shape instead (min, opt and max), so the engine accepts what is fed (the user's profile of
    one input sets the named dims the loader gives the others). Of several profiles, the first: the inputs are
    generated at its opt shapes, and polygraphy's runner uses it."""
    from polygraphy.common import TensorMetadata
    from polygraphy.tools.args.backend.trt.config import parse_profile_shapes

    from trt_scatter.engine import literal_pattern

    if not config_args.profile_dicts:
        metadata = TensorMetadata()
        for name, shape in shapes.items():
            metadata.add(literal_pattern(name), dtype=None, shape=shape)  # polygraphy's Profile matches its keys as patterns
        config_args.profile_dicts = parse_profile_shapes(metadata, [], [], [])
        return
    profile = config_args.profile_dicts[0]  # the one the inputs are generated for (its opt shapes), and the runner uses
    for name, shape in shapes.items():
        if name not in profile and literal_pattern(name) not in profile:
            profile[literal_pattern(name)] = (list(shape), list(shape), list(shape))


def _after_add_to_script(arg_group, extend):
    """Makes ``arg_group`` call ``extend(script, name)`` on what it adds to a script."""
    add_original = arg_group.add_to_script_impl

    def add_to_script_impl(script, *args, **kwargs):
        return extend(script, add_original(script, *args, **kwargs))

    arg_group.add_to_script_impl = add_to_script_impl


def _drawn_script_inputs(script, data_loader, model=None):
    """The data loader of the user's ``--data-loader-script`` (``data_loader``: its invocation in ``script``), every
    iteration drawn before anything runs where it is a :class:`.ScatterDataLoader` for the inputs of the run's ONNX
    ``model`` (:func:`.drawn`)."""
    script.add_import(imports=["drawn"], frm="trt_scatter.polygraphy_ext.loader")
    return make_invocable("drawn", data_loader, "--data-loader-script", model=model)


def _polygraphy_feeds(script, data_loader, flag, constants):
    """The data loader ``data_loader`` (its invocation in ``script``) as :class:`.PolygraphyFeeds`."""
    script.add_import(imports=["PolygraphyFeeds"], frm="trt_scatter.polygraphy_ext.loader")
    return make_invocable("PolygraphyFeeds", data_loader, flag, constants=constants)


def _explained_session(script, session, lowered):
    """The onnxrt session ``session`` (a loader's name in ``script``) with onnxruntime's errors in one line."""
    script.add_import(imports=["ExplainOnnxrtErrors"], frm="trt_scatter.polygraphy_ext.loader")
    return script.add_loader(make_invocable("ExplainOnnxrtErrors", session, lowered=lowered), "explain_onnxrt_errors")


def _before_add_to_script(arg_group, model_for):
    """Makes ``arg_group`` (``OnnxrtSessionArgs``) build its session from ``model_for(script)`` unless told which model."""
    add_original = arg_group.add_to_script_impl

    def add_to_script_impl(script, onnx_name=None):
        return add_original(script, onnx_name=model_for(script) if onnx_name is None else onnx_name)

    arg_group.add_to_script_impl = add_to_script_impl


def get_arg_groups() -> list[BaseArgs]:
    """The entry point polygraphy calls: the argument groups this extension adds to ``polygraphy run``."""
    return [TrtScatterArgs()]
