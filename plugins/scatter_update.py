"""ScatterUpdate-3 (OpenVINO) as a TensorRT plugin: inputs (data, indices, updates, axis).

``axis`` is a tensor whose value TensorRT does not show the plugin at build time, so the
build-time check accepts shapes that fit the spec for at least one axis of data. The kernel
normalizes the axis on the device and skips (and counts) indices outside [0, s-1].
"""

from trt_scatter.oracle.scatter_update import check_axis_shape, check_scatter_update_static
from trt_scatter.ops import SCATTER_UPDATE
from trt_scatter.plugins.base import ScatterPlugin, ScatterPluginCreator, dims_shape, element_size, index_size


class ScatterUpdatePlugin(ScatterPlugin):
    SIGNATURE = SCATTER_UPDATE
    KERNEL = "scatter_update"

    @classmethod
    def check_shapes(cls, shapes):
        data, indices, updates, axis = shapes
        check_axis_shape(axis)
        check_scatter_update_static(data, indices, updates)  # axis: a device value, not known here

    def launch_args(self, input_desc):
        return dict(
            data_shape=dims_shape(input_desc[0].dims),
            indices_shape=dims_shape(input_desc[1].dims),
            updates_shape=dims_shape(input_desc[2].dims),  # lets the kernel refuse a device axis that does not fit
            element_size=element_size(input_desc[0].type),
            index_itemsize=index_size(input_desc[1].type),
            axis_itemsize=index_size(input_desc[3].type),
        )

    def launch(self, kernels, args, inputs, output, data, error_flag, stream):
        kernels.launch_scatter_update(
            output=output,
            data=data,
            indices=inputs[1],
            updates=inputs[2],
            axis=inputs[3],
            error_flag=error_flag,
            stream=stream,
            **args,
        )

    def describe_errors(self, count, input_desc):
        return (
            f"{count} 'indices' value(s) outside [0, s-1] along 'axis' (data of shape "
            f"{dims_shape(input_desc[0].dims)}) were skipped"
        )


class ScatterUpdatePluginCreator(ScatterPluginCreator):
    def __init__(self):
        super().__init__(ScatterUpdatePlugin)
