// ScatterNDReduce (trt_scatter): each row i of `indices` (shape (..., k)) addresses one element or slice of
// `data` (its first k axes); row i of `updates` (shape indices.shape[:-1] + data.shape[k:]) combines into it
// element by element, by `reduction`, rows in ascending position (C order), starting from data's values
// (include_self=1) or the first row (include_self=0). A row with an index outside [-s_j, s_j-1] is
// skipped and counted once.
//
// Instantiated per element size (T) and index type (Index); the element's type within its size is
// ScatterReduceArgs::element_kind. The rows of scatter_reduce.cuh are the index rows: T = prod(data.shape[:k])
// target rows of C = prod(data.shape[k:]) elements, so only the index rows are sorted, never each element.
#include "scatter_reduce.cuh"

// Row r of indices -> the target row it addresses in data's first k axes (row-major), -1 if out of range.
template <typename Index>
struct RowTargets {
    const ScatterReduceArgs& a;

    __device__ __forceinline__ i64 operator()(i64 r) const {
        const int k = static_cast<int>(a.indices_shape[a.indices_rank - 1]);
        const Index* row = static_cast<const Index*>(a.indices) + r * k;
        i64 target = 0;
        for (int j = 0; j < k; ++j) {
            const i64 size = a.data_shape[j];
            i64 value = static_cast<i64>(row[j]);
            if (value < 0) value += size;
            if (value < 0 || value >= size) return -1;
            target = target * size + value;
        }
        return target;
    }
};

// Entry point of the Python plugin: one phase of the plan (plugins/scatter_nd_reduce.py).
template <typename T, typename Index>
__global__ void scatter_nd_reduce(ScatterReduceArgs a) {
    scatter_reduce_phase<T>(a, RowTargets<Index>{a});
}

// Entry point of the AOT plugin (plugins/aot.py): the three inputs, the int32 scalars, then the output,
// aliased with `data` (not read). Integer atomics, include_self=1: what the AOT form takes. TensorRT checks no
// shapes at run time: `updates` of another shape than indices.shape[:-1] + data.shape[k:], or k above data's
// rank, writes nothing (RowTargets would address past the output, the reads past `updates`).
template <typename T, typename Index>
__global__ void scatter_nd_reduce_aot(const char* data, const void* indices, const char* updates, int data_rank,
                                      int indices_rank, int updates_rank, int reduction, TRT_SCATTER_SHAPE_PARAMS(data_dim),
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
        a.data_rank = data_rank;
        a.indices_rank = indices_rank;
        a.reduction = reduction;
        a.include_self = 1;
        const i64 k = a.indices_shape[indices_rank - 1];
        valid = k >= 0 && k <= data_rank && updates_rank == indices_rank - 1 + data_rank - k;
        for (int d = 0; valid && d < updates_rank; ++d)
            valid = updates_shape[d] == (d + 1 < indices_rank ? a.indices_shape[d] : a.data_shape[d - (indices_rank - 1) + k]);
        a.num_rows = 1;
        for (int d = 0; d + 1 < indices_rank; ++d) a.num_rows *= a.indices_shape[d];
        a.columns = 1;
        for (int d = valid ? static_cast<int>(k) : data_rank; d < data_rank; ++d) a.columns *= a.data_shape[d];
    }
    __syncthreads();
    if (!valid) return;
    scatter_reduce_atomic<T>(a, RowTargets<Index>{a});
}
