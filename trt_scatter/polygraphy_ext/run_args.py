"""The ``polygraphy run`` extension (entry-point group ``polygraphy.run.plugins``).

Loading it (polygraphy does, on every ``polygraphy run``, once trt-scatter is installed) registers
the scatter ops with ``--pluginref`` (see :mod:`.references`) and adds two options:

- ``--trt-scatter-plugins``: validate the model's ``trt_scatter`` nodes
  (:mod:`trt_scatter.passes.validate`: a mistake the model shows ends the run in one line) and
  register trt-scatter's TensorRT plugins before the ONNX parser runs, by wrapping the model loader
  in :class:`.ValidateTrtScatter` and :class:`.RegisterTrtScatterPlugins` (so ``--gen-script``
  scripts do it too); with the kernels' error count on (``TRT_SCATTER_DEBUG=1``), so a write a
  kernel skips fails the run naming the op; and, for a node with ``inplace=1``, the builder's
  ``PreviewFeature.ALIASED_PLUGIN_IO_10_03``;
- ``--trt-scatter-inputs``: feed valid inputs (:class:`.ScatterDataLoader`) instead of random
  ones, honouring ``--seed``, ``--input-shapes`` and ``--iterations``; without shapes from the
  user, the TensorRT profile takes the generated shapes.
"""

from polygraphy.logger import G_LOGGER
from polygraphy.tools.args import DataLoaderArgs, ModelArgs, PluginRefRunnerArgs, TrtConfigArgs, TrtLoadPluginsArgs
from polygraphy.tools.args import util as args_util
from polygraphy.tools.args.base import BaseArgs
from polygraphy.tools.script import make_invocable

from trt_scatter.polygraphy_ext import data_loader, references  # noqa: F401  (registers the references)
from trt_scatter.polygraphy_ext.loader import DEBUG_ENV


class TrtScatterArgs(BaseArgs):
    """
    trt-scatter: models with scatter ops (SliceScatter, ScatterUpdate, ScatterElements, ScatterND)

    Depends on:

        - TrtLoadPluginsArgs: for --trt-scatter-plugins
        - DataLoaderArgs: for --trt-scatter-inputs
        - ModelArgs: for --trt-scatter-inputs
        - TrtConfigArgs: for --trt-scatter-inputs, if present
    """

    def add_parser_args_impl(self):
        self.group.add_argument(
            "--trt-scatter-plugins",
            help="Register trt-scatter's SliceScatter and ScatterUpdate TensorRT plugins before the ONNX parser runs",
            action="store_true",
            default=None,
        )
        self.group.add_argument(
            "--trt-scatter-inputs",
            help="Generate valid inputs for the model's scatter ops (distinct in-range indices, slice parameters "
            "matching the updates) instead of random ones; honours --seed, --input-shapes and --iterations",
            action="store_true",
            default=None,
        )

    def parse_impl(self, args):
        """
        Attributes:
            register_plugins (bool): Whether to register trt-scatter's plugins before parsing.
            generate_inputs (bool): Whether to feed inputs from trt-scatter's data loader.
        """
        self.register_plugins = bool(args_util.get(args, "trt_scatter_plugins"))
        self.generate_inputs = bool(args_util.get(args, "trt_scatter_inputs"))
        # The generated script (run in this process, or saved by --gen-script) must do what this process did.
        if PluginRefRunnerArgs in self.arg_groups:
            _after_add_to_script(self.arg_groups[PluginRefRunnerArgs], _import_references)
        if self.register_plugins:
            self._validate_model()
        if self.register_plugins and TrtLoadPluginsArgs in self.arg_groups:
            _after_add_to_script(self.arg_groups[TrtLoadPluginsArgs], self._register_plugins_first)
        if self.generate_inputs:
            self._use_data_loader(args)

    def _onnx_model(self):
        model_args = self.arg_groups[ModelArgs] if ModelArgs in self.arg_groups else None
        if model_args is None or not model_args.path or model_args.model_type is None or not model_args.model_type.is_onnx():
            return None
        return model_args.path

    def _validate_model(self):
        """Validates an ONNX model now, so that a mistake it shows fails before anything runs, in one line."""
        import os

        from trt_scatter.engine import needs_aliased_plugin_io
        from trt_scatter.passes.validate import ModelError, validate

        os.environ.setdefault(DEBUG_ENV, "1")
        path = self._onnx_model()
        if path is None:
            return
        try:
            model = validate(path)
        except ModelError as err:
            G_LOGGER.critical(f"--trt-scatter-plugins: {err}")
        if needs_aliased_plugin_io(model) and TrtConfigArgs in self.arg_groups:
            self._allow_aliased_plugin_io(self.arg_groups[TrtConfigArgs])

    def _allow_aliased_plugin_io(self, config_args):
        """Adds ALIASED_PLUGIN_IO_10_03 to the preview features (the only other, PROFILE_SHARING_0806,
        is on in every TensorRT 10 whatever the list says, and 11.x dropped it)."""
        from polygraphy.tools.args.backend.trt.helper import make_trt_enum_val

        from trt_scatter.backend import tensorrt

        if not hasattr(tensorrt().PreviewFeature, "ALIASED_PLUGIN_IO_10_03"):
            G_LOGGER.critical("--trt-scatter-plugins: the model has plugins with inplace=1, which need "
                              "PreviewFeature.ALIASED_PLUGIN_IO_10_03 (TensorRT 10.3 or newer)")
        feature = make_trt_enum_val("PreviewFeature", "ALIASED_PLUGIN_IO_10_03")
        features = list(config_args.preview_features or [])
        if str(feature) not in map(str, features):
            config_args.preview_features = features + [feature]

    def _register_plugins_first(self, script, loader_name):
        """Wraps the loader that polygraphy wraps with ``LoadPlugins`` (model path or engine) in ours,
        validating the model first where it is ONNX."""
        imports = ["RegisterTrtScatterPlugins"]
        # polygraphy wraps the model path, then the network and the engine loaders: validate the path.
        if type(loader_name) is str and loader_name == self._onnx_model():
            imports.append("ValidateTrtScatter")
            loader_name = script.add_loader(make_invocable("ValidateTrtScatter", loader_name), "validate_trt_scatter")
        script.add_import(imports=imports, frm="trt_scatter.polygraphy_ext")
        return script.add_loader(make_invocable("RegisterTrtScatterPlugins", loader_name, debug=True), "register_trt_scatter_plugins")

    def _use_data_loader(self, args):
        loader_args = self.arg_groups[DataLoaderArgs]
        if loader_args.load_inputs_paths or loader_args.data_loader_script:
            G_LOGGER.critical("--trt-scatter-inputs cannot be combined with --load-inputs or --data-loader-script")
        model_args = self.arg_groups[ModelArgs]
        data_loader.RUN_ARGS.update(
            model=model_args.path,
            seed=loader_args.seed,
            input_shapes=model_args.input_shapes or None,
            iterations=loader_args.iterations,
        )
        # polygraphy then builds the loader as for --data-loader-script data_loader.py:load_data
        loader_args.data_loader_script = data_loader.__file__
        loader_args.data_loader_func_name = "load_data"
        try:  # plan now, so a model the loader cannot serve fails before anything runs
            shapes = data_loader.load_data().shapes()
        except ValueError as err:  # ScatterInputError included
            G_LOGGER.critical(f"--trt-scatter-inputs: {err}")
        if TrtConfigArgs in self.arg_groups and not self.arg_groups[TrtConfigArgs].profile_dicts:
            _profile_for(shapes, self.arg_groups[TrtConfigArgs])


def _profile_for(shapes, config_args):
    """Without shapes from the user, polygraphy's TensorRT profile would fix dynamic dims at 1; use
    the shapes the data loader generates instead, so the engine accepts its inputs."""
    from polygraphy.common import TensorMetadata
    from polygraphy.tools.args.backend.trt.config import parse_profile_shapes

    metadata = TensorMetadata()
    for name, shape in shapes.items():
        metadata.add(name, dtype=None, shape=shape)
    config_args.profile_dicts = parse_profile_shapes(metadata, [], [], [])


def _after_add_to_script(arg_group, extend):
    """Makes ``arg_group`` call ``extend(script, name)`` on what it adds to a script."""
    add_original = arg_group.add_to_script_impl

    def add_to_script_impl(script, *args, **kwargs):
        return extend(script, add_original(script, *args, **kwargs))

    arg_group.add_to_script_impl = add_to_script_impl


def _import_references(script, name):
    script.add_import(imports=["references"], frm="trt_scatter.polygraphy_ext")
    return name


def get_arg_groups():
    """The entry point polygraphy calls: the argument groups this extension adds to ``polygraphy run``."""
    return [TrtScatterArgs()]
