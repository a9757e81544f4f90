// ScatterElementsReduce (trt_scatter): each element p of `updates` (the shape of `indices`, rank r like
// `data`) combines into out[p with p[axis] replaced by indices[p]] by `reduction`, in ascending position p
// (C order), starting from data's value (include_self=1) or the first update (include_self=0). Indices in
// [-s, s-1] (s = data.shape[axis]); each one outside is skipped and counted.
//
// Instantiated per element size (T) and index type (Index = int or long long); the element's type within
// its size (int8/uint8, half/bfloat16, float/int32) is ScatterReduceArgs::element_kind. The rows of
// scatter_reduce.cuh are single elements here (C = 1): T = data's size targets.
#include "scatter_reduce.cuh"

// Position r of indices (C order) -> the flat offset of its target element in data, -1 if out of range.
template <typename Index>
struct ElementTargets {
    const ScatterReduceArgs& a;

    __device__ __forceinline__ i64 operator()(i64 r) const {
        i64 rest = r, offset = 0, stride = 1;
        for (int d = a.data_rank - 1; d >= 0; --d) {
            const i64 next = quotient(rest, a.indices_shape[d]);
            i64 coordinate = rest - next * a.indices_shape[d];
            rest = next;
            if (d == a.axis) {
                const i64 size = a.data_shape[d];
                coordinate = static_cast<i64>(static_cast<const Index*>(a.indices)[r]);
                if (coordinate < 0) coordinate += size;
                if (coordinate < 0 || coordinate >= size) return -1;
            }
            offset += coordinate * stride;
            stride *= a.data_shape[d];
        }
        return offset;
    }
};

// Entry point of the Python plugin: one phase of the plan (plugins/scatter_elements_reduce.py).
template <typename T, typename Index>
__global__ void scatter_elements_reduce(ScatterReduceArgs a) {
    scatter_reduce_phase<T>(a, ElementTargets<Index>{a});
}

// Entry point of the AOT plugin (plugins/aot.py): the three inputs, the int32 scalars, then the output,
// aliased with `data` (not read). Integer atomics, include_self=1: what the AOT form takes. TensorRT checks no
// shapes at run time: `updates` of another shape than `indices`, or `indices` longer than `data` off the axis,
// writes nothing (ElementTargets would address past the output, the reads past `updates`).
template <typename T, typename Index>
__global__ void scatter_elements_reduce_aot(const char* data, const void* indices, const char* updates, int rank, int axis,
                                            int reduction, TRT_SCATTER_SHAPE_PARAMS(data_dim),
                                            TRT_SCATTER_SHAPE_PARAMS(indices_dim), TRT_SCATTER_SHAPE_PARAMS(updates_dim),
                                            char* output) {
    (void)data;
    __shared__ ScatterReduceArgs a;  // filled once per block (scatter_common.cuh)
    __shared__ bool valid;
    if (threadIdx.x == 0) {
        a = ScatterReduceArgs{};
        a.output = output;
        a.updates = updates;
        a.indices = indices;
        TRT_SCATTER_SET_SHAPE(a.data_shape, data_dim);
        TRT_SCATTER_SET_SHAPE(a.indices_shape, indices_dim);
        i64 updates_shape[TRT_SCATTER_MAX_RANK];
        TRT_SCATTER_SET_SHAPE(updates_shape, updates_dim);
        a.data_rank = a.indices_rank = rank;
        a.axis = axis;
        a.reduction = reduction;
        a.include_self = 1;
        a.num_rows = 1;
        valid = true;
        for (int d = 0; d < rank; ++d) {
            a.num_rows *= a.indices_shape[d];
            valid = valid && updates_shape[d] == a.indices_shape[d] && (d == axis || a.indices_shape[d] <= a.data_shape[d]);
        }
        a.columns = 1;
    }
    __syncthreads();
    if (!valid) return;
    scatter_reduce_atomic<T>(a, ElementTargets<Index>{a});
}
