"""TensorRT plugins for the ``trt_scatter`` ops: OpenVINO's SliceScatter-15 and ScatterUpdate-3, and the deterministic
reductions ScatterElementsReduce and ScatterNDReduce (``trt_scatter.plugins``).

Each op's kernel is ``plugins/<key>.cu`` and its launch ``plugins/<key>.py`` (:func:`module`, by the
op's key in :mod:`trt_scatter.ops`); one plugin class serves them all (:mod:`.base`).

Use them in either of two ways:

- ONNX: a node ``SliceScatter(data, updates, start, stop, step[, axes])`` or
  ``ScatterUpdate(data, indices, updates, axis)`` (domain ``trt_scatter``, with an opset import
  for it) becomes the plugin when TensorRT's ONNX parser reads the model after :func:`register`.
  An optional node attribute ``inplace=1`` becomes the plugin field of that name. (The parser
  forwards only attributes a creator lists, so it warns "Attribute inplace not found in plugin
  node!" for nodes without it; the default, 0, applies.)
- Network API (full TensorRT only): :func:`add_plugin_layer`.

Plugin field ``inplace`` (0 or 1, default 0): with 1 the output aliases ``data`` and only
``updates`` are written; the builder config must then enable
``PreviewFeature.ALIASED_PLUGIN_IO_10_03``. See :mod:`trt_scatter.plugins.base`.

Importing this package needs no TensorRT; :func:`register` and :func:`add_plugin_layer` do.
An engine holding these plugins runs only in a Python process that registered them; for engines
that run without Python (trtexec, Triton), see :mod:`trt_scatter.plugins.aot` (TensorRT >= 10.9).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from trt_scatter import backend
from trt_scatter.log import logger
from trt_scatter.ops import OPS
from trt_scatter.plugins.kernels import PluginError, counted_errors, debug_enabled, module, report_counted_error

if TYPE_CHECKING:
    from collections.abc import Sequence

    import tensorrt as trt


__all__ = ["PluginError", "add_plugin_layer", "counted_errors", "fix_rtx_library_link", "module", "register", "report_counted_error"]

PLUGIN_NAMES = tuple(OPS)
RTX_LIBRARY = "libtensorrt_rtx.so"

_creators = {}  # name -> creator; the registry holds no Python reference, so these must stay alive


def register() -> dict[str, trt.IPluginCreatorV3One]:
    """Registers the creators of the ``trt_scatter`` ops' plugins (once per process); returns them by name.

    On TensorRT-RTX it first makes sure its ONNX parser can load the plugin machinery
    (:func:`fix_rtx_library_link`); without that the process aborts when the parser creates a plugin.
    """
    debug_enabled()  # read here too: a value it takes as on is named where the plugins are registered, not only where a kernel runs
    trt = backend.tensorrt()
    if backend.is_rtx():
        fix_rtx_library_link()
    if len(_creators) == len(PLUGIN_NAMES):
        return dict(_creators)

    from trt_scatter.plugins.base import PLUGIN_NAMESPACE, PLUGIN_VERSION, ScatterPluginCreator

    registry = trt.get_plugin_registry()
    registered = {(c.name, c.plugin_version, c.plugin_namespace): c for c in registry.all_creators}
    for op in OPS.values():
        creator = ScatterPluginCreator(op)
        existing = registered.get((creator.name, PLUGIN_VERSION, PLUGIN_NAMESPACE))
        if existing is not None:  # e.g. a second copy of this package: keep the first, do not fight it
            logger.debug("plugin creator %s already registered", creator.name)
            creator = existing
        elif not registry.register_creator(creator, PLUGIN_NAMESPACE):
            raise PluginError(f"{creator.name}: the TensorRT plugin registry refused its creator (see the TensorRT log)")
        _creators[creator.name] = creator
    return dict(_creators)


def rtx_library_folder() -> str:
    """The folder of the ``tensorrt_rtx_libs`` package, which holds ``libtensorrt_rtx.so.1``."""
    import tensorrt_rtx_libs

    return os.path.dirname(os.path.realpath(tensorrt_rtx_libs.__file__))


def fix_rtx_library_link(folder: str | None = None) -> str:
    """Ensures ``libtensorrt_rtx.so -> libtensorrt_rtx.so.1`` exists in ``folder`` (default: :func:`rtx_library_folder`).

    TensorRT-RTX's ONNX parser ``dlopen``s ``libtensorrt_rtx.so`` (its RPATH is ``$ORIGIN``) when
    it hosts a plugin, but the wheel ships only ``libtensorrt_rtx.so.1``. Returns the link's path.
    Raises :class:`PluginError` with the command to run when the folder is not writable.
    """
    folder = folder or rtx_library_folder()
    link = os.path.join(folder, RTX_LIBRARY)
    target = RTX_LIBRARY + ".1"
    if os.path.exists(link):
        return link
    if not os.path.exists(os.path.join(folder, target)):
        raise PluginError(f"TensorRT-RTX's {target} is not in {folder}; reinstall tensorrt-rtx")
    temporary = f"{link}.{os.getpid()}.tmp"
    try:
        os.symlink(target, temporary)
        os.replace(temporary, link)  # atomic: concurrent processes may race to create it
    except OSError as err:
        if os.path.lexists(temporary):
            os.unlink(temporary)
        raise PluginError(
            f"TensorRT-RTX's ONNX parser needs {link} to load plugins, and it could not be created ({err}). "
            f"Create it once: ln -s {target} {link}"
        ) from err
    logger.info("created %s -> %s (TensorRT-RTX packaging fix)", link, target)
    return link


def require_plugin_layers(network: trt.INetworkDefinition, op_name: str) -> None:
    """Raises :class:`PluginError` unless :func:`add_plugin_layer` can add ``op_name``'s layer to ``network``: the
    builders ask first, so that a refusal leaves the network as it was (no constant added for the plugin's inputs)."""
    if op_name not in PLUGIN_NAMES:
        raise PluginError(f"add_plugin_layer: unknown plugin {op_name!r}; known: {', '.join(PLUGIN_NAMES)}")
    if not hasattr(network, "add_plugin_v3"):
        raise PluginError(
            f"{op_name}: {backend.name()} {backend.tensorrt().__version__} has no INetworkDefinition.add_plugin_v3, so the "
            f"plugin cannot be added through the network API. Put a '{op_name}' node (domain 'trt_scatter') in an ONNX model "
            f"and parse it with the ONNX parser after trt_scatter.plugins.register()"
            + (", or use impl='native'." if OPS[op_name].builds_natively else ".")
        )


def add_plugin_layer(network: trt.INetworkDefinition, op_name: str, inputs: Sequence[trt.ITensor], fields: dict[str, int | str] | None = None) -> trt.ITensor:
    """Adds the plugin layer of a ``trt_scatter`` op (e.g. ``"SliceScatter"``) to ``network``; returns its output tensor.

    ``inputs`` are the op's input tensors in spec order; ``fields`` maps plugin fields to values
    (e.g. ``{"inplace": 1}``). Needs ``INetworkDefinition.add_plugin_v3`` (full TensorRT);
    TensorRT-RTX lacks it, so there this raises :class:`PluginError` naming the alternatives.
    """
    trt = backend.tensorrt()
    require_plugin_layers(network, op_name)
    from trt_scatter.plugins.base import fields_to_keep

    creator = register()[op_name]
    kept = fields_to_keep(fields or {})  # the collection does not own its fields' data
    plugin = creator.create_plugin(op_name, trt.PluginFieldCollection(kept), trt.TensorRTPhase.BUILD)
    layer = network.add_plugin_v3(list(inputs), [], plugin)
    if layer is None:  # the binding returns None where TensorRT refused the layer, and logs why
        raise PluginError(f"{op_name}: TensorRT refused the plugin layer (add_plugin_v3 returned None; its log says why)")
    return layer.get_output(0)
