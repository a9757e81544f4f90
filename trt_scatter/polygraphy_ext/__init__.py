"""polygraphy integration: trt-scatter's reference, valid inputs, and a ``polygraphy run`` extension.

- :class:`ReferenceRunner`: whole models by :class:`trt_scatter.reference.Reference` (what
  ``polygraphy run --pluginref`` runs with trt-scatter installed); importing :mod:`.references`
  (this package does) also puts every scatter op of the registry in ``pluginref``'s own registry.
- :class:`ScatterDataLoader` (from :mod:`trt_scatter.inputs`): valid inputs for scatter models.
- :class:`RegisterTrtScatterPlugins`: a loader that registers the TensorRT plugins first; :class:`UsePluginsForParser`:
  one that hands the parser the model with ONNX's own nodes that the plugins serve as theirs (``--trt-scatter-plugins``);
  :class:`ExplainOnnxrtErrors`: one that makes onnxruntime's refusal to run a lowered model one line;
  :class:`ValidateTrtScatter` (from :mod:`trt_scatter.passes.validate`): one that validates the model.
- :func:`get_arg_groups`: the ``polygraphy.run.plugins`` entry point (``--trt-scatter-plugins``,
  ``--trt-scatter-inputs``, the reference in ``--pluginref``, lowered models in ``--onnxrt``).
"""

from trt_scatter.passes.validate import ValidateTrtScatter
from trt_scatter.polygraphy_ext import references
from trt_scatter.inputs import ScatterDataLoader
from trt_scatter.polygraphy_ext.loader import ExplainOnnxrtErrors, RegisterTrtScatterPlugins, UsePluginsForParser, register_plugins
from trt_scatter.polygraphy_ext.references import ReferenceRunner
from trt_scatter.polygraphy_ext.run_args import TrtScatterArgs, get_arg_groups

__all__ = [
    "ExplainOnnxrtErrors",
    "ReferenceRunner",
    "RegisterTrtScatterPlugins",
    "ScatterDataLoader",
    "TrtScatterArgs",
    "UsePluginsForParser",
    "ValidateTrtScatter",
    "get_arg_groups",
    "references",
    "register_plugins",
]
