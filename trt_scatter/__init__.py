"""trt-scatter: scatter operations for TensorRT.

- :mod:`trt_scatter.oracle`: NumPy reference implementations (the ops' semantics).
- :mod:`trt_scatter.ops`: the ``trt_scatter`` ONNX ops' contract (inputs, attributes, domain).
- :mod:`trt_scatter.backend`: which TensorRT module is used (``tensorrt`` or ``tensorrt_rtx``).
- :mod:`trt_scatter.networks`: network builders and native lowerings (folder ``networks/``).
- :mod:`trt_scatter.plugins`: the plugins of the ``trt_scatter`` ops (folder ``plugins/``).
- :mod:`trt_scatter.passes`: graph passes (validate, lower, rewrite, aot, plugins) over ONNX models.
- :mod:`trt_scatter.reference`: whole ONNX models with the oracle for the scatter ops.
- :mod:`trt_scatter.polygraphy_ext`, :mod:`trt_scatter.torch`, :mod:`trt_scatter.cli`: polygraphy,
  PyTorch's exporters and the ``trt-scatter`` command.

Importing this package imports neither TensorRT nor CUDA.
"""

from trt_scatter.oracle import ScatterInputError

__version__ = "0.1.0"
__all__ = ["ScatterInputError", "__version__"]
