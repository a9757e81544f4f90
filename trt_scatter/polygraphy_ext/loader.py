"""polygraphy loaders: one registers trt-scatter's TensorRT plugins before whatever it wraps runs; one
makes an onnxruntime session's failure to run a lowered model one line."""

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


class ExplainOnnxrtErrors(BaseLoader):
    """Wraps an onnxruntime session (or a loader of one, such as ``SessionFromOnnx``) so that a run onnxruntime
    refuses ends in one line saying that nothing could be compared, instead of a traceback from inside the runner.

    ``--onnxrt`` runs a model's ``trt_scatter`` nodes lowered to standard ONNX ops, and onnxruntime's CPU kernels lack
    some of those for some types (ScatterElements and ScatterND reducing float16 or bool): that is neither the
    model's mistake nor a failed comparison::

        session = ExplainOnnxrtErrors(SessionFromOnnx(lowered_model_bytes))
    """

    def __init__(self, session):
        self._session = session

    @util.check_called_by("__call__")
    def call_impl(self) -> _ExplainedSession:
        session, _ = util.invoke_if_callable(self._session)
        return _ExplainedSession(session)


class _ExplainedSession:
    """An onnxruntime ``InferenceSession`` whose ``run`` turns onnxruntime's error into polygraphy's one line."""

    def __init__(self, session):
        self._session = session

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        from polygraphy.logger import G_LOGGER

        from trt_scatter.log import first_line

        try:
            return self._session.run(*args, **kwargs)
        except Exception as err:  # onnxruntime's own exception types differ by version; all print "[ONNXRuntimeError]"
            if "[ONNXRuntimeError]" not in str(err):
                raise
            G_LOGGER.critical(f"--onnxrt: onnxruntime cannot run the model with its trt_scatter nodes lowered on this machine, so nothing "
                              f"was compared (compare --trt with --pluginref where a GPU runs the engine): {first_line(err)}")
