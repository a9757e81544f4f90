"""polygraphy loaders: one registers trt-scatter's TensorRT plugins before whatever it wraps runs; one hands the
parser a model whose ONNX nodes the plugins serve as theirs; one makes an onnxruntime session's failure to run a
lowered model one line; and the data loaders' checks (:func:`drawn`, :class:`PolygraphyFeeds`)."""

from __future__ import annotations

import multiprocessing.util
import os
import shutil
import tempfile
from typing import TYPE_CHECKING, Any

from polygraphy import util
from polygraphy.backend.base import BaseLoader

from trt_scatter.plugins.kernels import DEBUG_ENV  # importing it loads neither CUDA nor TensorRT

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence


class RegisterTrtScatterPlugins(BaseLoader):
    """Registers the plugin creators of the ``trt_scatter`` ops, then returns ``obj`` (or calls it).

    A passthrough like polygraphy's ``LoadPlugins``: wrap the model path or network loader so the
    creators are in TensorRT's registry before the ONNX parser (or engine deserialization) runs::

        network = NetworkFromOnnxPath(RegisterTrtScatterPlugins("model.onnx"))

    ``debug=True`` turns the kernels' error count on (``TRT_SCATTER_DEBUG=1``, unless the
    environment already says otherwise): a write a kernel skips then fails the inference, naming the op.
    """

    def __init__(self, obj: Any = None, debug: bool = False) -> None:
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


class UsePluginsForParser(BaseLoader):
    """The model for TensorRT's ONNX parser, in the form it came in (a path, or serialized bytes: what polygraphy's
    ``NetworkFromOnnxPath`` and ``NetworkFromOnnxBytes`` read; an ``onnx.ModelProto`` as bytes), with ONNX's own nodes that trt-scatter's plugins serve
    handed to them (:func:`trt_scatter.passes.plugins.to_plugins`), as ``trt-scatter build --plugins`` does::

        network = NetworkFromOnnxPath(RegisterTrtScatterPlugins(UsePluginsForParser("model.onnx")))

    A path whose model has such a node gives the path of the changed model, written (its weights with it) into a
    temporary folder that goes when the process ends (a multiprocessing child too); any other path is given back as it came.
    """

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    @util.check_called_by("__call__")
    def call_impl(self) -> str | bytes:
        import onnx

        from trt_scatter.model import Model
        from trt_scatter.model import tensors
        from trt_scatter.passes.plugins import to_plugins

        obj, _ = util.invoke_if_callable(self.obj)
        if isinstance(obj, onnx.ModelProto):
            return to_plugins(obj).SerializeToString()
        if isinstance(obj, (bytes, bytearray)):
            return to_plugins(onnx.load_from_string(bytes(obj))).SerializeToString()
        if not isinstance(obj, (str, os.PathLike)):
            raise TypeError(f"UsePluginsForParser takes a path, serialized bytes or an onnx.ModelProto, or a loader of one (got {type(obj).__name__})")
        model = Model.read(obj, weights=True)
        served = to_plugins(model)
        if served is model.proto:
            return obj
        folder = tempfile.mkdtemp(prefix="trt_scatter_")
        # removed at exit by multiprocessing's finalizers, which run in this process (through atexit) and in a forked
        # multiprocessing child (polygraphy run --use-subprocess), which ends without atexit; each in its own process only
        multiprocessing.util.Finalize(None, shutil.rmtree, args=(folder, True), exitpriority=0)
        path = os.path.join(folder, os.path.basename(os.fspath(obj)))
        large = tensors.model_bytes(served) >= tensors.SERIALIZE_LIMIT
        onnx.save(served, path, save_as_external_data=large, location=f"{os.path.basename(path)}.data" if large else None)
        return path


class ExplainOnnxrtErrors(BaseLoader):
    """Wraps an onnxruntime session (or a loader of one, such as ``SessionFromOnnx``) so that a run onnxruntime
    refuses ends in one line, instead of a traceback from inside the runner: that its CPU kernels lack what the model
    needs (ScatterElements and ScatterND reducing float16 or bool: neither the model's mistake nor a failed
    comparison, and nothing was compared), or else onnxruntime's own first line (an input it refuses)::

        session = ExplainOnnxrtErrors(SessionFromOnnx(lowered_model_bytes), lowered=True)

    ``lowered``: the session runs the model with its ``trt_scatter`` nodes lowered (the message says so).
    """

    def __init__(self, session: Any, lowered: bool = False) -> None:
        self._session = session
        self.lowered = lowered

    @util.check_called_by("__call__")
    def call_impl(self) -> _ExplainedSession:
        session, _ = util.invoke_if_callable(self._session)
        return _ExplainedSession(session, "the model with its trt_scatter nodes lowered" if self.lowered else "the model")


def drawn(loader: Any, flag: str, model: str | None = None) -> Any:
    """``loader``, with every iteration drawn once now where it is a :class:`~trt_scatter.inputs.ScatterDataLoader`, so
    that a model it cannot serve, or a seed it finds no valid values for, ends the run before anything runs, in
    polygraphy's one line that starts with ``flag`` (the option that gave it), not in a traceback from inside the
    Comparator; so does one of no iterations, where polygraphy would run nothing and say PASSED, and one made for a
    model whose inputs (names, types, ranks) are not those of the run's ``model`` (polygraphy would feed them by
    position, cast). Any other data loader is returned as it is."""
    from polygraphy.logger import G_LOGGER

    from trt_scatter.inputs import ScatterDataLoader
    from trt_scatter.model import ModelError
    from trt_scatter.polygraphy_ext.references import logged_by_polygraphy

    if isinstance(loader, ScatterDataLoader):
        if not len(loader):
            G_LOGGER.critical(f"{flag}: 0 iterations (--iterations, or ScatterDataLoader's iterations) give no inputs, so nothing would "
                              "run or be compared: give 1 or more")
        try:
            with logged_by_polygraphy():  # what the loader's validation says
                for iteration in range(len(loader)):
                    loader[iteration]
        except (ValueError, TypeError) as err:  # ScatterInputError and ModelError included; a shape that is no list of ints, no model
            G_LOGGER.critical(f"{flag}: {err}")
        if model is not None:
            try:
                theirs, ours = _fed_inputs(loader.onnx_model()), _fed_inputs(model)  # the loader's model as it read it: not read again
            except ModelError as err:
                G_LOGGER.critical(f"{flag}: {err}")
            if theirs != ours:
                G_LOGGER.critical(f"{flag}: its ScatterDataLoader draws inputs for a model whose inputs are {_described(theirs)}, and the run's "
                                  f"model takes {_described(ours)}: make the loader for the run's model")
    return loader


class PolygraphyFeeds:
    """The data loader of a polygraphy run (``--trt-scatter-inputs``' :class:`~trt_scatter.inputs.ScatterDataLoader`,
    ``--load-inputs``' or a ``--data-loader-script``'s), each feed drawn with trt-scatter's warnings as polygraphy's log
    lines (:func:`~trt_scatter.polygraphy_ext.references.logged_by_polygraphy`: what the loader's validation and tries
    say), and checked for a value of an input the model fills with an initializer (``constants``): every runner takes
    such an input's value from the model, and polygraphy drops the fed one without a word, so the run would pass on
    values nobody fed. Such a feed ends the run in polygraphy's one line, led by ``flag`` (the option that gave the
    loader). Iterating, indexing and ``input_metadata`` (which polygraphy sets on a loader) reach the loader it wraps,
    so nothing is drawn twice."""

    def __init__(self, loader: Any, flag: str, constants: Sequence[str] = ()) -> None:
        vars(self).update(_loader=loader, _flag=flag, _constants=set(constants))

    def __iter__(self) -> Iterator[Any]:
        from trt_scatter.polygraphy_ext.references import logged_by_polygraphy

        feeds = iter(self._loader)
        while True:
            with logged_by_polygraphy():
                feed = next(feeds, _END)
            if feed is _END:
                return
            yield self._checked(feed)

    def __getitem__(self, iteration: int) -> Any:
        from trt_scatter.polygraphy_ext.references import logged_by_polygraphy

        with logged_by_polygraphy():
            return self._checked(self._loader[iteration])

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # its own, or a special name: not there yet (a copy, pickle's load), or not the loader's
            raise AttributeError(name)
        return getattr(self._loader, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._loader, name, value)

    def _checked(self, feed):
        from polygraphy.logger import G_LOGGER

        from trt_scatter.model import fed_constant

        fed = [name for name in feed if name in self._constants] if isinstance(feed, dict) else []
        if fed:
            G_LOGGER.critical(f"{self._flag}: {fed_constant(fed[0])}")
        return feed


_END = object()


def _fed_inputs(model):
    """``(name, element type, rank)`` of each input a run of ``model`` (a path, ModelProto or Model) feeds, by name:
    polygraphy feeds by name first, so their order is no difference."""
    from trt_scatter.model import as_model, fed_inputs

    return sorted((value.name, value.type.tensor_type.elem_type, len(value.type.tensor_type.shape.dim)) for value in fed_inputs(as_model(model).proto.graph))


def _described(inputs):
    from trt_scatter import dtypes

    def type_name(elem_type):
        dtype = dtypes.from_onnx(elem_type)
        return f"type {elem_type}" if dtype is None else dtype.name

    return ", ".join(f"{name} ({type_name(elem_type)}, rank {rank})" for name, elem_type, rank in inputs) or "none"


def refuses_the_model(reason: str) -> bool:
    """Whether onnxruntime's error ``reason`` is about the model itself (its graph, the types its nodes bind), which other
    inputs would not change."""
    return "INVALID_GRAPH" in reason or "Type Error:" in reason


def lacks_a_kernel(reason: str) -> bool:
    """Whether onnxruntime's error ``reason`` says that it has no kernel for a node (its type, its reduction): other
    inputs would not help."""
    return "NOT_IMPLEMENTED" in reason or "type is not supported" in reason or "No Op registered for" in reason  # an op newer than it


class _ExplainedSession:
    """An onnxruntime ``InferenceSession`` whose ``run`` turns onnxruntime's error into polygraphy's one line."""

    def __init__(self, session, what):
        self._session, self._what = session, what

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        from polygraphy.logger import G_LOGGER

        from trt_scatter.log import first_line

        try:
            return self._session.run(*args, **kwargs)
        except Exception as err:  # onnxruntime's own exception types differ by version; all print "[ONNXRuntimeError]"
            reason = first_line(err)
            if "[ONNXRuntimeError]" not in reason:
                raise
            if lacks_a_kernel(reason):
                G_LOGGER.critical(f"--onnxrt: onnxruntime's CPU kernels cannot run {self._what} on this machine, so nothing was compared "
                                  f"(compare --trt with --pluginref where a GPU runs the engine): {reason}")
            else:
                G_LOGGER.critical(f"--onnxrt: onnxruntime failed to run {self._what}: {reason}")
