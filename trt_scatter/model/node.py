"""One node of a registered op, with what its model says of each of its inputs, by the op's input names.

Validation, the lowering and the data loader ask an op's node the same questions (is ``step`` a
constant? what is data's static shape?), and each op's modules answer them by input name without
knowing where in the model the tensors come from::

    node = OpNode(proto_node, index, model.tensors)
    node.constant("step"), node.shape("data"), node.dtype("indices"), node.attribute("axis", 0)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trt_scatter.model.graph import ModelError, node_label
from trt_scatter.ops import op_of

if TYPE_CHECKING:
    import numpy as np
    import onnx

    from trt_scatter.ops import Op


class OpNode:
    """A node of a registered op (:func:`trt_scatter.ops.op_of`): ``op``, ``label`` (for messages),
    ``inputs`` (op input name -> tensor name, for the inputs given), ``node`` (the ``NodeProto``)."""

    def __init__(self, node: onnx.NodeProto, index: int | None, tensors: Any, op: Op | None = None) -> None:
        self.node, self.index, self.tensors = node, index, tensors
        self.op = op or op_of(node)
        self.label = node_label(node, index)
        self.inputs = {name: tensor for name, tensor in zip(self.op.inputs, node.input) if tensor}

    def constant(self, name: str) -> np.ndarray | None:
        """The value of input ``name`` if the model fixes it, else ``None`` (also for an input not given)."""
        return self.tensors.constant(self.inputs[name]) if name in self.inputs else None

    def shape(self, name: str) -> tuple[int, ...] | None:
        """The static shape of input ``name`` (or ``"output"``; -1 for unknown dimensions), ``None`` where its rank is not
        known."""
        tensor = self._tensor(name)
        return None if tensor is None else self.tensors.shape(tensor)

    def dtype(self, name: str) -> np.dtype | None:
        """The element type of input ``name`` (or ``"output"``), ``None`` where not known."""
        tensor = self._tensor(name)
        return None if tensor is None else self.tensors.dtype(tensor)

    def _tensor(self, name):
        return self.node.output[0] if name == "output" and self.node.output else self.inputs.get(name)

    def attribute(self, name: str, default: Any = None) -> Any:
        """The value of the node's attribute ``name`` (strings decoded); where the node leaves it out, ``default``,
        else the op's own default (:attr:`trt_scatter.ops.Op.attributes`)."""
        from onnx import helper

        for attribute in self.node.attribute:
            if attribute.name == name:
                value = helper.get_attribute_value(attribute)
                return value.decode(errors="replace") if isinstance(value, bytes) else value
        if default is None and name in self.op.attributes:
            return self.op.attributes[name].default
        return default

    def attributes(self) -> dict:
        """Every attribute of the op's contract, the node's value or the default (``trt_scatter`` ops)."""
        return {name: self.attribute(name) for name in self.op.attributes}

    def error(self, detail: str) -> ModelError:
        """A ModelError naming this node: ``"<label>: <detail>"``."""
        return ModelError(f"{self.label}: {detail}")
