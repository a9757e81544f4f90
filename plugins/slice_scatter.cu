// SliceScatter-15 (OpenVINO): output = data with `updates` written into the strided slice
// start:stop:step over `axes`. The slice geometry follows trt_scatter.oracle.slice_geometry and is
// computed here from the device-side start/stop/step/axes, so it is never trusted from the host:
// bad axes (out of range, repeated), a zero step, or an `updates` shape that is not the slice's
// shape make the kernel write nothing and count one error.
//
// Instantiated per element size (T = unsigned type of that size); bytes are moved in the widest
// aligned unit. The copy of data into output (if any) is done before
// this kernel: by the launcher (Python plugin) or by TensorRT (AOT plugin, output aliased with data).
#include "scatter_common.cuh"

// The slice's element count; *first receives its first index. Clamping comes before any
// arithmetic that could overflow: start/stop in [INT64_MIN, INT64_MAX] and step of any size.
__device__ __forceinline__ i64 slice_count(i64 start, i64 stop, i64 step, i64 dim, i64* first) {
    const i64 low = step > 0 ? 0 : -1;
    const i64 high = step > 0 ? dim : dim - 1;
    i64 begin = start < 0 ? start + dim : start;  // no overflow: start < 0 <= dim
    i64 end = stop < 0 ? stop + dim : stop;
    begin = begin < low ? low : (begin > high ? high : begin);
    end = end < low ? low : (end > high ? high : end);
    *first = begin;
    const i64 span = step > 0 ? end - begin : begin - end;  // |span| <= dim + 1
    if (span <= 0) return 0;
    const u64 stride = step > 0 ? static_cast<u64>(step) : 0ull - static_cast<u64>(step);  // INT64_MIN too
    return static_cast<i64>(static_cast<u64>(span - 1) / stride + 1);
}

// Row r of updates -> byte offset of its destination in output. Rows are the walked axes' index
// tuples; axis d of them lands at first[d] + c*step[d], `stride[d]` bytes apart. The innermost walked
// axis makes the groups (copy_rows): index j of it lies within_first + j*within_step bytes into its group.
struct SliceRows {
    i64 first[TRT_SCATTER_MAX_RANK];
    i64 step[TRT_SCATTER_MAX_RANK];
    i64 extent[TRT_SCATTER_MAX_RANK];
    i64 stride[TRT_SCATTER_MAX_RANK];
    i64 base;
    i64 inner_extent;  // of the innermost walked axis; 1 if no axis is walked
    i64 within_first;
    i64 within_step;
    int outer;  // the walked axes before the innermost one: 0 .. outer-1

    __device__ __forceinline__ i64 group_rows() const { return inner_extent; }

    __device__ __forceinline__ i64 group(i64 g) const {
        i64 offset = base;
        for (int d = outer - 1; d >= 0; --d) {
            const i64 q = quotient(g, extent[d]);
            offset += (first[d] + (g - q * extent[d]) * step[d]) * stride[d];
            g = q;
        }
        return offset;
    }

    __device__ __forceinline__ i64 within(i64 j) const { return within_first + j * within_step; }

    __device__ __forceinline__ i64 operator()(i64 r) const {
        const i64 g = quotient(r, inner_extent);
        return group(g) + within(r - g * inner_extent);
    }
};

// What every thread of a launch needs: whether the slice and `updates` agree, and the rows to copy.
struct SlicePlan {
    SliceRows rows_map;
    i64 rows;
    i64 row_bytes;
    u64 alignment;  // the OR of the row offsets' common factors (see copy_rows_widest)
    bool valid;
};

__device__ inline void plan_slice(const SliceScatterArgs& a, i64 element_size, SlicePlan& plan) {
    const int rank = a.rank;
    i64 first[TRT_SCATTER_MAX_RANK], step[TRT_SCATTER_MAX_RANK];
    for (int d = 0; d < TRT_SCATTER_MAX_RANK; ++d) {
        first[d] = 0;
        step[d] = 1;
    }
    unsigned int sliced = 0;
    // num_axes < 0: start/stop/step/axes differ in length (the AOT entry's axes_count 0).
    bool valid = rank >= 1 && rank <= TRT_SCATTER_MAX_RANK && a.num_axes >= 0;
    // At most rank+1 iterations: by then an axis repeats or is out of range.
    for (int i = 0; valid && i < a.num_axes; ++i) {
        i64 axis = a.axes != nullptr ? load_int(a.axes, a.axes_itemsize, i) : i;
        if (axis < 0) axis += rank;
        const i64 stride = load_int(a.step, a.param_itemsize, i);
        if (axis < 0 || axis >= rank || ((sliced >> axis) & 1u) != 0 || stride == 0) {
            valid = false;
            break;
        }
        sliced |= 1u << axis;
        i64 begin;
        const i64 count = slice_count(load_int(a.start, a.param_itemsize, i), load_int(a.stop, a.param_itemsize, i),
                                      stride, a.data_shape[axis], &begin);
        valid = count == a.updates_shape[axis];
        first[axis] = begin;
        step[axis] = stride;
    }
    for (int d = 0; valid && d < rank; ++d)
        if (((sliced >> d) & 1u) == 0 && a.updates_shape[d] != a.data_shape[d]) valid = false;
    plan.valid = valid;
    if (!valid) return;

    // Trailing axes that are copied whole, plus one more with step 1, are contiguous in both
    // updates and output: they form the rows. The axes before them are walked per row.
    i64 inner = element_size;  // bytes
    int d = rank - 1;
    for (; d >= 0 && first[d] == 0 && step[d] == 1 && a.updates_shape[d] == a.data_shape[d]; --d)
        inner *= a.data_shape[d];
    SliceRows& rows_map = plan.rows_map;
    i64 row_bytes = inner;
    rows_map.base = 0;
    if (d >= 0 && step[d] == 1) {
        row_bytes = a.updates_shape[d] * inner;
        rows_map.base = first[d] * inner;
        inner *= a.data_shape[d];
        --d;
    }
    rows_map.outer = d + 1;
    u64 alignment = static_cast<u64>(rows_map.base);
    i64 rows = 1;
    for (; d >= 0; --d) {
        rows_map.first[d] = first[d];
        rows_map.step[d] = step[d];
        rows_map.extent[d] = a.updates_shape[d];
        rows_map.stride[d] = inner;
        alignment |= static_cast<u64>(inner);
        rows *= a.updates_shape[d];
        inner *= a.data_shape[d];
    }
    rows_map.inner_extent = 1;
    rows_map.within_first = 0;
    rows_map.within_step = 0;
    if (rows_map.outer > 0) {  // the innermost walked axis makes the groups
        const int i = --rows_map.outer;
        rows_map.inner_extent = rows_map.extent[i];
        rows_map.within_first = rows_map.first[i] * rows_map.stride[i];
        // A step times a stride stays within the data for two elements or more; one element takes no step (and a
        // step up to INT64_MAX times the stride would overflow).
        rows_map.within_step = rows_map.extent[i] > 1 ? rows_map.step[i] * rows_map.stride[i] : 0;
    }
    plan.rows = rows;
    plan.row_bytes = row_bytes;
    plan.alignment = alignment;
}

// Thread 0 of each block plans the slice (reading start/stop/step/axes) into shared memory, which the
// block's threads then read: planned in every thread, its arrays lived in local memory, and a large grid
// writing 400 bytes per thread took longer than a small write itself (scatter_common.cuh).
template <typename T>
__device__ __forceinline__ void slice_scatter_body(const SliceScatterArgs& a) {
    __shared__ SlicePlan plan;
    if (threadIdx.x == 0) plan_slice(a, sizeof(T), plan);
    __syncthreads();
    if (!plan.valid) {
        if (global_thread() == 0) count_error(a.error_flag, 1);
        return;
    }
    copy_rows_widest(a.output, a.updates, plan.rows, plan.row_bytes, plan.alignment, plan.rows_map);
}

// Entry point of the Python plugin: the arguments as one struct.
template <typename T>
__global__ void slice_scatter(SliceScatterArgs a) {
    slice_scatter_body<T>(a);
}

// Entry point of the AOT plugin (plugins/aot.py): TensorRT passes the six inputs, the int32
// scalars, then the output, which is aliased with `data` (so `data` is not read: TensorRT has
// put data's values in `output`). Nothing counts errors: TensorRT gives AOT kernels no workspace.
// axes_count: 1 + the length of start/stop/step/axes, or 0 when their lengths differ.
template <typename T>
__global__ void slice_scatter_aot(const char* data, const char* updates, const void* start, const void* stop,
                                  const void* step, const void* axes, int rank, int axes_count, int param_itemsize,
                                  int axes_itemsize, TRT_SCATTER_SHAPE_PARAMS(data_dim),
                                  TRT_SCATTER_SHAPE_PARAMS(updates_dim), char* output) {
    (void)data;
    __shared__ SliceScatterArgs a;  // filled once per block (scatter_common.cuh)
    if (threadIdx.x == 0) {
        a = SliceScatterArgs{};
        a.output = output;
        a.updates = updates;
        a.start = start;
        a.stop = stop;
        a.step = step;
        a.axes = axes;
        a.error_flag = nullptr;
        TRT_SCATTER_SET_SHAPE(a.data_shape, data_dim);
        TRT_SCATTER_SET_SHAPE(a.updates_shape, updates_dim);
        a.rank = rank;
        a.num_axes = axes_count - 1;
        a.param_itemsize = param_itemsize;
        a.axes_itemsize = axes_itemsize;
    }
    __syncthreads();
    slice_scatter_body<T>(a);
}
