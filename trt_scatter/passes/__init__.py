"""Graph passes over ONNX models with trt-scatter's ops, one module each.

Each pass is a plain function for Python users and a polygraphy loader (a ``BaseLoader`` that
composes with ``OnnxFromPath``):

- :mod:`.tensors`: what a model says about its tensors (constant values, static shapes and
  element types), which every pass reads;
- :mod:`.validate`: refuses a model whose ``trt_scatter`` nodes break a rule that can be seen
  before TensorRT runs (:func:`~.validate.validate`, :class:`~.validate.ValidateTrtScatter`);
- :mod:`.lower`: replaces every ``trt_scatter`` node by its native lowering in standard ONNX ops
  (:func:`~.lower.lower`, :class:`~.lower.LowerTrtScatter`; ``trt-scatter lower``);
- :mod:`.aot`: hands every ``trt_scatter`` node to the AOT plugins of
  :mod:`trt_scatter.plugins.aot` (:func:`~.aot.to_aot`, :class:`~.aot.ToAotPlugins`;
  ``trt-scatter build --aot``);
- :mod:`.rewrite`: the scatter patterns PyTorch's exporters write -> ``trt_scatter`` nodes, the
  inverse of :mod:`.lower` (:func:`~.rewrite.rewrite`, :class:`~.rewrite.RewriteToTrtScatter`;
  ``trt-scatter rewrite``).
"""
