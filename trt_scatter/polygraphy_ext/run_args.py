"""The ``polygraphy run`` extension (entry-point group ``polygraphy.run.plugins``).

Loading it (polygraphy does, on every ``polygraphy run``, once trt-scatter is installed) registers
the scatter ops with ``--pluginref`` (see :mod:`.references`) and adds two options:

- ``--trt-scatter-plugins``: register trt-scatter's TensorRT plugins before the ONNX parser runs,
  by wrapping the model loader in :class:`.RegisterTrtScatterPlugins` (so ``--gen-script``
  scripts do it too);
- ``--trt-scatter-inputs``: feed valid inputs (:class:`.ScatterDataLoader`) instead of random
  ones, honouring ``--seed``, ``--input-shapes`` and ``--iterations``.
"""

from polygraphy.logger import G_LOGGER
from polygraphy.tools.args import DataLoaderArgs, ModelArgs, TrtLoadPluginsArgs
from polygraphy.tools.args import util as args_util
from polygraphy.tools.args.base import BaseArgs
from polygraphy.tools.script import make_invocable

from trt_scatter.polygraphy_ext import data_loader, references  # noqa: F401  (registers the references)


class TrtScatterArgs(BaseArgs):
    """
    trt-scatter: models with scatter ops (SliceScatter, ScatterUpdate, ScatterElements, ScatterND)

    Depends on:

        - TrtLoadPluginsArgs: for --trt-scatter-plugins
        - DataLoaderArgs: for --trt-scatter-inputs
        - ModelArgs: for --trt-scatter-inputs
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
        if self.register_plugins and TrtLoadPluginsArgs in self.arg_groups:
            _wrap_plugin_loading(self.arg_groups[TrtLoadPluginsArgs])
        if self.generate_inputs:
            self._use_data_loader(args)

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


def _wrap_plugin_loading(plugins_args):
    """Makes every loader that polygraphy wraps with ``LoadPlugins`` also register trt-scatter's plugins."""
    add_original = plugins_args.add_to_script_impl

    def add_to_script_impl(script, loader_name):
        loader_name = add_original(script, loader_name)
        script.add_import(imports=["RegisterTrtScatterPlugins"], frm="trt_scatter.polygraphy_ext")
        return script.add_loader(make_invocable("RegisterTrtScatterPlugins", loader_name), "register_trt_scatter_plugins")

    plugins_args.add_to_script_impl = add_to_script_impl


def get_arg_groups():
    """The entry point polygraphy calls: the argument groups this extension adds to ``polygraphy run``."""
    return [TrtScatterArgs()]
