"""trt-scatter's reference in polygraphy: whole models, and the scatter ops in ``pluginref``'s registry.

- :class:`ReferenceRunner`: a polygraphy runner over :class:`trt_scatter.reference.Reference`
  (ONNX's own evaluator for every op it implements, at the model's opsets; the oracle for every
  scatter op of :mod:`trt_scatter.ops`). ``polygraphy run --pluginref`` runs it once trt-scatter is installed (the
  extension, :mod:`.run_args`, puts it in the place of polygraphy's ``PluginRefRunner``), so a
  model with MatMul, Conv or Sigmoid around scatter nodes runs there; use it in your own tests::

      from polygraphy.backend.onnx import OnnxFromPath
      from polygraphy.comparator import Comparator
      from trt_scatter.polygraphy_ext import ReferenceRunner

      results = Comparator.run([ReferenceRunner(OnnxFromPath("model.onnx")), trt_runner], data_loader=...)

- ``pluginref``'s registry (``polygraphy.backend.pluginref.references.OP_REGISTRY``), for code that
  builds a ``PluginRefRunner`` itself: importing this module adds every op of
  :mod:`trt_scatter.ops` (ONNX's scatters and trt-scatter's), each calling :mod:`trt_scatter.oracle`. That runner runs a
  graph node by node with the ops of the registry alone (about 45); for whole models use
  :class:`ReferenceRunner`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from polygraphy import util
from polygraphy.backend.base import BaseRunner
from polygraphy.backend.pluginref.references import register
from polygraphy.exception import PolygraphyException
from polygraphy.logger import G_LOGGER

from trt_scatter.log import logger
from trt_scatter.ops import OPS, STANDARD_OPS
from trt_scatter.oracle.rules import ScatterInputError

if TYPE_CHECKING:
    from collections.abc import Iterator

    import numpy as np
    from polygraphy.common import TensorMetadata


class _ToPolygraphy(logging.Handler):
    """trt-scatter's log records as polygraphy's log lines: with its marks, in its ``--log-file``, under its ``-q``; each
    message once (a model that the run's options and the script's data loader both validate warns once)."""

    def emit(self, record):
        from polygraphy.logger import LogMode

        level = record.levelno
        log = (G_LOGGER.error if level >= logging.ERROR else G_LOGGER.warning if level >= logging.WARNING
               else G_LOGGER.info if level >= logging.INFO else G_LOGGER.verbose)
        log(record.getMessage(), mode=LogMode.ONCE)


class _Routing:
    """The blocks of :func:`logged_by_polygraphy` open in any thread, and what the first of them changed."""

    lock = threading.Lock()
    open = 0
    handler: _ToPolygraphy | None = None
    propagate = True


@contextlib.contextmanager
def logged_by_polygraphy() -> Iterator[None]:
    """trt-scatter's log records within the block go to polygraphy's logger alone (a warning of undefined results, of a
    model's repeated targets), not also to a bare line on stderr or to the handlers a script gave Python's root logger;
    outside it, trt-scatter's logger is as the process set it. A block within another, in this thread or another
    (Comparator runs in threads), changes nothing more: the last block to end restores the logger."""
    with _Routing.lock:
        if not _Routing.open:
            _Routing.handler, _Routing.propagate = _ToPolygraphy(), logger.propagate
            logger.addHandler(_Routing.handler)
            logger.propagate = False
        _Routing.open += 1
    try:
        yield
    finally:
        with _Routing.lock:
            _Routing.open -= 1
            if not _Routing.open:
                logger.removeHandler(_Routing.handler)
                logger.propagate = _Routing.propagate


class ReferenceInputError(ScatterInputError, PolygraphyException):
    """The oracle's :class:`~trt_scatter.oracle.ScatterInputError` for inputs the reference refuses,
    also a ``PolygraphyException`` (a user's error to polygraphy's tools)."""

    def __init__(self, err: ScatterInputError) -> None:
        super().__init__(err.op, err.input_name, err.rule, err.value)
        self.args = err.args  # its message as it was (led by the node's name)


class ReferenceRunner(BaseRunner):
    """Runs a whole ONNX model with :class:`trt_scatter.reference.Reference`.

    Inputs that break a scatter op's rule end the inference with a :class:`ReferenceInputError`:
    the oracle's ScatterInputError, logged and raised as polygraphy's runners do (a
    ``PolygraphyException``, which ``polygraphy run`` reports in one line, without a traceback).

    Args:
        model: an ``onnx.ModelProto``, a path, or a callable returning either (e.g. ``OnnxFromPath``).
        name: the runner's name prefix (polygraphy appends a count and a timestamp).
    """

    def __init__(self, model: Any, name: str | None = None) -> None:
        super().__init__(name=name, prefix="reference-runner")
        self._model = model

    @util.check_called_by("activate")
    def activate_impl(self) -> None:
        from trt_scatter.reference import Reference

        model, _ = util.invoke_if_callable(self._model)
        try:
            with logged_by_polygraphy():
                self.reference = Reference(model)
        except ValueError as err:  # ModelError: a model the passes or ONNX's evaluator refuse, named in one line
            G_LOGGER.critical(str(err))
        self.model = self.reference.model

    @util.check_called_by("get_input_metadata")
    def get_input_metadata_impl(self) -> TensorMetadata:
        from polygraphy.backend.onnx.util import get_input_metadata

        return get_input_metadata(self.model.graph)

    @util.check_called_by("infer")
    def infer_impl(self, feed_dict: dict[str, np.ndarray]) -> OrderedDict[str, np.ndarray]:
        from trt_scatter.reference import NodeRunError

        feeds = {name: util.array.to_numpy(value) for name, value in feed_dict.items()}
        start = time.time()
        try:
            with logged_by_polygraphy():
                outputs = self.reference.run(feeds)
        except ScatterInputError as err:  # inputs the spec forbids: polygraphy's one line, not a traceback
            G_LOGGER.log(str(err), G_LOGGER.CRITICAL)
            raise ReferenceInputError(err) from None
        except NodeRunError as err:  # another op's failure, led by its node's name
            G_LOGGER.critical(str(err))
        self.inference_time = time.time() - start
        return OrderedDict(outputs)

    @util.check_called_by("deactivate")
    def deactivate_impl(self) -> None:
        del self.model, self.reference


def _registered(op):
    """``op`` in pluginref's registry: its oracle on the node's inputs (in order) and attributes."""

    def run(attrs, *inputs):
        # trt_scatter.reference imports onnx.reference (~0.1 s): on use, not on every `polygraphy run`.
        from trt_scatter.reference import run_op

        return [run_op(op, inputs, attrs)]

    register(op.name)(run)


for _op in (*STANDARD_OPS.values(), *OPS.values()):  # every op of the registry, its inputs as trt_scatter.ops lists them
    _registered(_op)
