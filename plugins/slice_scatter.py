"""SliceScatter-15 (OpenVINO) as a TensorRT plugin: inputs (data, updates, start, stop, step[, axes]).

start/stop/step/axes are tensors whose values TensorRT does not show the plugin at build time
(an ONNX initializer becomes a constant input, still only a device buffer), so the build-time
checks cover what shapes decide: 1-D parameters of equal lengths, no more axes than data has,
updates of data's rank matching data on every axis that cannot be sliced. The kernel computes
the slice geometry from the device values and writes nothing (counting an error) if it does
not match updates' shape.
"""

from trt_scatter.oracle import rules
from trt_scatter.oracle.slice_scatter import OP, check_slice_scatter_static
from trt_scatter.ops import SLICE_SCATTER
from trt_scatter.plugins.base import ScatterPlugin, ScatterPluginCreator, dims_shape, element_size, index_size

PARAMS = ("start", "stop", "step", "axes")


class SliceScatterPlugin(ScatterPlugin):
    SIGNATURE = SLICE_SCATTER
    KERNEL = "slice_scatter"

    @classmethod
    def check_shapes(cls, shapes):
        data, updates, *params = shapes
        for name, shape in zip(PARAMS, params):
            rules.check_vector(OP, name, shape)
        lengths = [shape[0] for shape in params] + [None] * (4 - len(params))
        check_slice_scatter_static(data, updates, *lengths)

    def launch_args(self, input_desc):
        param_itemsize = index_size(input_desc[2].type)
        return dict(
            num_axes=input_desc[2].dims[0],
            data_shape=dims_shape(input_desc[0].dims),
            updates_shape=dims_shape(input_desc[1].dims),
            element_size=element_size(input_desc[0].type),
            param_itemsize=param_itemsize,
            axes_itemsize=index_size(input_desc[5].type) if len(input_desc) > 5 else param_itemsize,
        )

    def launch(self, kernels, args, inputs, output, data, error_flag, stream):
        kernels.launch_slice_scatter(
            output=output,
            data=data,
            updates=inputs[1],
            start=inputs[2],
            stop=inputs[3],
            step=inputs[4],
            axes=inputs[5] if len(inputs) > 5 else 0,
            error_flag=error_flag,
            stream=stream,
            **args,
        )

    def describe_errors(self, count, input_desc):
        return (
            f"the slice that start/stop/step/axes select does not have updates' shape "
            f"{dims_shape(input_desc[1].dims)} for data of shape {dims_shape(input_desc[0].dims)}, "
            f"so nothing was written (error count {count})"
        )


class SliceScatterPluginCreator(ScatterPluginCreator):
    def __init__(self):
        super().__init__(SliceScatterPlugin)
