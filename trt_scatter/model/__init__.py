"""An ONNX model read once per command, and what every step asks of it.

A command (``trt-scatter check``, ``polygraphy run --trt-scatter-plugins``...) reads its model into
one :class:`Model` and hands that object to each step: validation, the lowering, the data loader,
the reference, the engine build. The file is opened once, ONNX shape inference runs once on it
(:attr:`Model.tensors`), and validation once (:attr:`Model.validated`)::

    model = Model.read("model.onnx")     # index constants read from external files, weights not
    validate(model)                      # sets model.validated
    lowered = lower(model)               # no second validation, the same tensors

Every pass also takes a path or an ``onnx.ModelProto`` (:func:`as_model`), for scripts and
polygraphy's loaders, and returns a ``ModelProto`` as before.

- :mod:`.files`: reading a file and its external data;
- :mod:`.graph`: walking graphs, naming nodes, new names, :class:`ModelError`;
- :mod:`.tensors`: constants, static shapes and types (:class:`ModelTensors`), the constant folder.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from trt_scatter.log import first_line
from trt_scatter.model import files
from trt_scatter.model.graph import (
    ModelError,
    all_graphs,
    all_nodes,
    constant_inputs,
    declared_dims,
    declared_size,
    drop_initialized_inputs,
    fed_constant,
    fed_inputs,
    fresh_name,
    functions_hold_scatters,
    graph_names,
    indexed_nodes,
    live_names,
    named_subgraphs,
    nested_nodes,
    node_label,
    opset_version,
    printable,
    subgraphs,
    trt_scatter_ops,
)
from trt_scatter.model.tensors import ModelTensors

if TYPE_CHECKING:
    import onnx

__all__ = [
    "Model",
    "ModelError",
    "ModelTensors",
    "all_graphs",
    "all_nodes",
    "as_model",
    "constant_inputs",
    "declared_dims",
    "declared_size",
    "drop_initialized_inputs",
    "fed_constant",
    "fed_inputs",
    "fresh_name",
    "graph_names",
    "indexed_nodes",
    "live_names",
    "named_subgraphs",
    "nested_nodes",
    "node_label",
    "opset_version",
    "printable",
    "subgraphs",
    "trt_scatter_ops",
]


class Model:
    """An ONNX model and what is worked out of it once.

    ``proto``: the ``onnx.ModelProto``. ``path``: the file it was read from, ``None`` for one made in
    memory (external data lives beside the file). ``files``: every file the model is read from (its own
    and its external data files), which no command may write. ``external``: whether the file kept
    tensors in external files (read or not). ``weights``: whether every external tensor has been read in.
    ``validated``: set by :func:`trt_scatter.passes.validate.validate` once every rule held. A model whose local
    functions hold scatter nodes is held with those functions inlined (a copy), so that every pass sees them.
    """

    def __init__(self, proto: onnx.ModelProto, path: str | os.PathLike | None = None, external: bool = False, weights: bool = True) -> None:
        if functions_hold_scatters(proto):
            import onnx.inliner

            try:
                proto = onnx.inliner.inline_local_functions(proto)
            except Exception as err:  # onnx's own ValidationError: a function that calls itself, two of one name
                raise ModelError(f"the model's local functions cannot be inlined: {first_line(err)}") from None
            if functions_hold_scatters(proto):  # onnx's inliner skips a function of another default-domain opset, silently
                left = ", ".join(sorted(f"{function.domain}:{function.name}" for function in proto.functions))
                raise ModelError(f"the model's local functions ({left}) hold scatter nodes and cannot be inlined: onnx's inliner "
                                 "takes only functions that import the model's own default-domain opset")
        self.proto = proto
        self.path = None if path is None else os.fspath(path)
        self.external = external
        self.weights = weights
        self.files = [] if path is None else [self.path]
        self.validated = False
        self._tensors = None

    @classmethod
    def read(cls, path: str | os.PathLike, weights: bool = False) -> Model:
        """The model in the file ``path``: opened once, its integer external tensors read (validation must
        see index constants), the others too with ``weights`` (to run the model). ModelError otherwise."""
        proto = files.read_proto(path)
        model = cls(proto, path, external=bool(files.external_tensors(proto)), weights=False)
        proto = model.proto  # the one every step works on: a copy where local functions were inlined
        model.files += sorted({files.external_file(tensor, path)[0] for tensor in files.external_tensors(proto)})
        files.read_external(proto, path, integers_only=True)
        if weights:
            model.read_weights()
        else:
            model.weights = not files.external_tensors(proto)
        return model

    def read_weights(self) -> Model:
        """Reads every external tensor in (from the model's folder), once; returns the model."""
        if not self.weights:
            files.read_external(self.proto, self.path)
            self.weights = True
        return self

    @property
    def tensors(self) -> ModelTensors:
        """The model's :class:`ModelTensors`, worked out on first use (one run of ONNX shape inference)."""
        if self._tensors is None:
            self._tensors = ModelTensors(self.proto)
        return self._tensors

    @property
    def name(self) -> str:
        """The file's path, or the graph's name for a model made in memory: how a message names the model."""
        return self.path if self.path is not None else self.proto.graph.name

    def trt_scatter_ops(self) -> list[str]:
        """The op types of the model's ``trt_scatter`` nodes (subgraphs included), sorted."""
        return trt_scatter_ops(self.proto)


def as_model(model: Model | onnx.ModelProto | str | os.PathLike, weights: bool = False) -> Model:
    """``model`` as a :class:`Model`: itself, a ``ModelProto`` wrapped (not copied, unless its local functions hold
    scatter nodes: see :class:`Model`), or the file at a path
    read (:meth:`Model.read`). ``weights``: every external tensor read in. A TypeError names anything else."""
    import onnx

    if isinstance(model, Model):
        return model.read_weights() if weights else model
    if isinstance(model, onnx.ModelProto):
        unread = [tensor for tensor in files.external_tensors(model) if files.holds_indices(tensor)]
        if unread:  # no file to find them beside
            location = next((entry.value for entry in unread[0].external_data if entry.key == "location"), "?")
            raise ModelError(f"tensor {unread[0].name!r} of the model is kept in an external file ({location!r}) that was not read in: "
                             "give the model's path, or onnx.load it with its external data")
        return Model(model)
    if isinstance(model, (str, os.PathLike)):
        return Model.read(model, weights=weights)
    raise TypeError(f"model must be a path, an onnx.ModelProto or a trt_scatter.model.Model (got {type(model).__name__})")
