"""A polygraphy loader that registers trt-scatter's TensorRT plugins before whatever it wraps runs."""

from __future__ import annotations

import os
from typing import Any

from polygraphy import util
from polygraphy.backend.base import BaseLoader

from trt_scatter.plugins.kernels import DEBUG_ENV  # importing it loads neither CUDA nor TensorRT


class RegisterTrtScatterPlugins(BaseLoader):
    """Registers the plugin creators of the ``trt_scatter`` ops, then returns ``obj`` (or calls it).

    A passthrough like polygraphy's ``LoadPlugins``: wrap the model path or network loader so the
    creators are in TensorRT's registry before the ONNX parser (or engine deserialization) runs::

        network = NetworkFromOnnxPath(RegisterTrtScatterPlugins("model.onnx"))

    ``debug=True`` turns the kernels' error count on (``TRT_SCATTER_DEBUG=1``, unless the
    environment already says otherwise): a write a kernel skips then fails the inference, naming the op.
    """

    def __init__(self, obj=None, debug=False):
        self.obj = obj
        self.debug = debug

    @util.check_called_by("__call__")
    def call_impl(self, *args: Any, **kwargs: Any) -> Any:
        if self.debug:
            os.environ.setdefault(DEBUG_ENV, "1")
        register_plugins()
        ret, _ = util.invoke_if_callable(self.obj, *args, **kwargs)
        return ret


def register_plugins() -> None:
    """Registers the plugins with the TensorRT that polygraphy uses (``trt_scatter.backend.tensorrt()``)."""
    from trt_scatter.backend import tensorrt

    tensorrt()  # resolves tensorrt/tensorrt_rtx and tells polygraphy, before the plugins touch TensorRT
    from trt_scatter.plugins import register  # imported late: plugins pull in TensorRT and CUDA

    register()
