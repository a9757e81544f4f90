// ScatterUpdate-3 (OpenVINO): output = data with the slices at `indices` along `axis` replaced by
// `updates` (shape data.shape[:axis] + indices.shape + data.shape[axis+1:]). `axis` is read on the
// device and normalized from [-r, r-1]; an axis out of range, or an `updates` shape that does not
// follow from it, makes the kernel write nothing and count one error. Each index outside
// [0, data.shape[axis]-1] (negative ones included) is skipped and counted once.
//
// Instantiated per element size (T) and index type (Index = int or long long). Each (outer
// position, index) pair is one contiguous row of the inner axes, moved in the widest aligned unit.
// The copy of data into output (if any) is done before
// this kernel: by the launcher (Python plugin) or by TensorRT (AOT plugin, output aliased with data).
#include "scatter_common.cuh"

// Row r = (outer position o, index position j) of updates -> byte offset of its destination row, or -1
// for an index out of range. The outer positions make the groups (copy_rows).
template <typename Index>
struct IndexRows {
    const Index* indices;
    i64 count;  // of indices
    i64 size;  // data.shape[axis]
    i64 row_bytes;

    __device__ __forceinline__ i64 group_rows() const { return count; }

    __device__ __forceinline__ i64 group(i64 o) const { return o * size * row_bytes; }

    __device__ __forceinline__ i64 within(i64 j) const {
        const i64 index = static_cast<i64>(indices[j]);
        return index < 0 || index >= size ? -1 : index * row_bytes;
    }

    __device__ __forceinline__ i64 operator()(i64 r) const {
        const i64 o = quotient(r, count);
        const i64 offset = within(r - o * count);
        return offset < 0 ? -1 : group(o) + offset;
    }
};

template <typename T, typename Index>
__device__ __forceinline__ void scatter_update_body(const ScatterUpdateArgs& a) {
    const int rank = a.data_rank;
    i64 axis = load_int(a.axis, a.axis_itemsize, 0);
    if (axis < 0) axis += rank;
    bool valid = axis >= 0 && axis < rank;
    if (valid) {
        valid = a.updates_rank == rank - 1 + a.indices_rank;
        for (int d = 0; valid && d < a.updates_rank; ++d) {
            const i64 expected = d < axis                    ? a.data_shape[d]
                                 : d < axis + a.indices_rank ? a.indices_shape[d - axis]
                                                             : a.data_shape[d - a.indices_rank + 1];
            valid = a.updates_shape[d] == expected;
        }
    }
    if (!valid) {
        if (global_thread() == 0) count_error(a.error_flag, 1);
        return;
    }

    i64 outer = 1, row_bytes = sizeof(T), count = 1;
    for (int d = 0; d < rank; ++d) {
        if (d < axis) outer *= a.data_shape[d];
        if (d > axis) row_bytes *= a.data_shape[d];
    }
    for (int d = 0; d < a.indices_rank; ++d) count *= a.indices_shape[d];
    const IndexRows<Index> rows_map{static_cast<const Index*>(a.indices), count, a.data_shape[axis], row_bytes};

    unsigned int out_of_range = 0;
    for (i64 j = global_thread(); j < count; j += grid_threads()) {
        const i64 index = static_cast<i64>(rows_map.indices[j]);
        if (index < 0 || index >= rows_map.size) ++out_of_range;
    }
    count_error(a.error_flag, out_of_range);

    copy_rows_widest(a.output, a.updates, outer * count, row_bytes, static_cast<u64>(row_bytes), rows_map);
}

// Entry point of the Python plugin: the arguments as one struct.
template <typename T, typename Index>
__global__ void scatter_update(ScatterUpdateArgs a) {
    scatter_update_body<T, Index>(a);
}

// Entry point of the AOT plugin (plugins/aot.py): the four inputs, the int32 scalars, then the
// output, aliased with `data` (not read). Nothing counts errors: AOT kernels get no workspace.
template <typename T, typename Index>
__global__ void scatter_update_aot(const char* data, const void* indices, const char* updates, const void* axis,
                                   int data_rank, int indices_rank, int updates_rank, int axis_itemsize,
                                   TRT_SCATTER_SHAPE_PARAMS(data_dim), TRT_SCATTER_SHAPE_PARAMS(indices_dim),
                                   TRT_SCATTER_SHAPE_PARAMS(updates_dim), char* output) {
    (void)data;
    __shared__ ScatterUpdateArgs a;  // filled once per block (scatter_common.cuh)
    if (threadIdx.x == 0) {
        a = ScatterUpdateArgs{};
        a.output = output;
        a.updates = updates;
        a.indices = indices;
        a.axis = axis;
        a.error_flag = nullptr;
        TRT_SCATTER_SET_SHAPE(a.data_shape, data_dim);
        TRT_SCATTER_SET_SHAPE(a.indices_shape, indices_dim);
        TRT_SCATTER_SET_SHAPE(a.updates_shape, updates_dim);
        a.data_rank = data_rank;
        a.indices_rank = indices_rank;
        a.updates_rank = updates_rank;
        a.axis_itemsize = axis_itemsize;
    }
    __syncthreads();
    scatter_update_body<T, Index>(a);
}
