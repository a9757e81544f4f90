"""Graph passes over ONNX models with trt-scatter's ops, one module each.

Each pass is a plain function for Python users and a polygraphy loader (a ``BaseLoader`` that
composes with ``OnnxFromPath``):

- :mod:`.validate`: refuses a model whose ``trt_scatter`` nodes break a rule that can be seen
  before TensorRT runs (:func:`~.validate.validate`, :class:`~.validate.ValidateTrtScatter`);
- :mod:`.lower`: replaces every ``trt_scatter`` node by its native lowering in standard ONNX ops
  (:func:`~.lower.lower`, :class:`~.lower.LowerTrtScatter`; ``trt-scatter lower``);
- :mod:`.aot`: hands every ``trt_scatter`` node to the AOT plugins of
  :mod:`trt_scatter.plugins.aot` (:func:`~.aot.to_aot`, :class:`~.aot.ToAotPlugins`;
  ``trt-scatter build --aot``);
- :mod:`.rewrite`: the scatter patterns PyTorch's exporters write -> ``trt_scatter`` nodes, the
  inverse of :mod:`.lower` (:func:`~.rewrite.rewrite`, :class:`~.rewrite.RewriteToTrtScatter`;
  ``trt-scatter rewrite``);
- :mod:`.plugins`: ONNX's own scatter nodes that TensorRT cannot build (a reduction, TensorScatter outside the form
  its importer takes) -> the ``trt_scatter`` node of the plugin that serves them (:func:`~.plugins.to_plugins`,
  :class:`~.plugins.UsePlugins`).

What every pass reads of a model (constant values, static shapes, element types) is :mod:`trt_scatter.model`'s.
"""
