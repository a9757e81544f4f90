"""Reproduces a TensorRT-RTX 1.7.1 bug: once a network whose ONNX parser hosted a Python plugin is
gone, making more Python plugin objects while other memory churns corrupts the heap and the
process aborts.

    python scripts/rtx_plugin_heap_bug.py          # parse once, then churn: aborts ("double free or corruption")
    python scripts/rtx_plugin_heap_bug.py --no-parse  # the same churn without the parse: prints "ok"

Found by the plugin tests (tests/plugin_models.forked keeps their parses out of the pytest process).
A plugin class with all four IPluginV3 interfaces and any attribute set suffices; with fewer
interfaces or no attribute it does not happen. Exit status 134 (SIGABRT) means the bug is present.
"""

import sys

from onnx import TensorProto, helper

from trt_scatter.backend import tensorrt
from trt_scatter.plugins import fix_rtx_library_link

trt = tensorrt()


class Tiny(trt.IPluginV3, trt.IPluginV3OneCore, trt.IPluginV3OneBuild, trt.IPluginV3OneRuntime):
    def __init__(self):
        for base in (trt.IPluginV3, trt.IPluginV3OneCore, trt.IPluginV3OneBuild, trt.IPluginV3OneRuntime):
            base.__init__(self)
        self.num_outputs, self.plugin_name, self.plugin_version, self.plugin_namespace = 1, "Tiny", "1", ""

    def get_capability_interface(self, type):
        return self

    def get_output_data_types(self, types):
        return [types[0]]

    def get_output_shapes(self, inputs, shape_inputs, builder):
        return [trt.DimsExprs(inputs[0])]

    def supports_format_combination(self, pos, in_out, num_inputs):
        return in_out[pos].desc.type == trt.DataType.FLOAT

    def get_fields_to_serialize(self):
        return trt.PluginFieldCollection([])

    def clone(self):
        return Tiny()


class TinyCreator(trt.IPluginCreatorV3One):
    def __init__(self):
        trt.IPluginCreatorV3One.__init__(self)
        self.name, self.plugin_version, self.plugin_namespace = "Tiny", "1", ""
        self.field_names = trt.PluginFieldCollection([])

    def create_plugin(self, name, fields, phase):
        return Tiny()


def main():
    if trt.__name__ == "tensorrt_rtx":
        fix_rtx_library_link()
    creator = TinyCreator()
    trt.get_plugin_registry().register_creator(creator, "")
    if "--no-parse" not in sys.argv:
        node = helper.make_node("Tiny", ["x"], ["y"], domain="tiny")
        value = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [4])  # noqa: E731
        model = helper.make_model(helper.make_graph([node], "g", [value("x")], [value("y")]),
                                  opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("tiny", 1)])
        logger = trt.Logger(trt.Logger.ERROR)
        builder = trt.Builder(logger)
        network = builder.create_network(0)
        parser = trt.OnnxParser(network, logger)
        assert parser.parse(model.SerializeToString())
        del parser, network, builder  # the network's plugin layer goes with them
    for i in range(30000):
        Tiny()
        if i % 300 == 0:
            churn = [frozenset(range(k % 97)) for k in range(2000)] + [{k: str(k)} for k in range(2000)]
            del churn
    print("ok")


if __name__ == "__main__":
    main()
