"""trt_scatter.model.graph's walks of the subgraphs."""

from onnx import TensorProto, helper

from trt_scatter.model import all_nodes
from trt_scatter.model.graph import shadowed_in


def _body(name, inner=None):
    """A Loop body (i, c, v) -> (c, v) of a few Identity nodes, holding a Loop of body ``inner`` where given."""
    nodes, last = [helper.make_node("Identity", ["c"], [f"{name}_c_out"])], "v"
    for k in range(3):
        nodes.append(helper.make_node("Identity", [last], [f"{name}_{k}"]))
        last = f"{name}_{k}"
    if inner is not None:
        nodes.append(helper.make_node("Loop", ["n", "c", last], [f"{name}_w"], body=inner, name=f"{name}_loop"))
        last = f"{name}_w"
    nodes.append(helper.make_node("Identity", [last], [f"{name}_v_out"]))
    inputs = [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("c", TensorProto.BOOL, []),
              helper.make_tensor_value_info("v", TensorProto.FLOAT, [2])]
    outputs = [helper.make_tensor_value_info(f"{name}_c_out", TensorProto.BOOL, []), helper.make_tensor_value_info(f"{name}_v_out", TensorProto.FLOAT, [2])]
    return helper.make_graph(nodes, name, inputs, outputs)


def test_shadowed_in_answers_for_each_node_of_a_later_walk():
    # protobuf (upb) hands out a new Python object for a node once the last is gone, whose id may be another node's
    graph = helper.make_graph([helper.make_node("Loop", ["n", "c", "x"], ["y"], body=_body("outer", _body("inner")), name="L")], "g",
                              [helper.make_tensor_value_info(name, kind, shape) for name, kind, shape in
                               (("n", TensorProto.INT64, []), ("c", TensorProto.BOOL, []), ("x", TensorProto.FLOAT, [2]))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    hidden = shadowed_in(graph)
    got = [hidden.get(id(node)) for node in all_nodes(graph)]
    assert got == [None] + [{"i", "c", "v"}] * (len(got) - 1)
