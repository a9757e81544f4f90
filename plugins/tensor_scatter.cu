// TensorScatter-24 (ONNX), the CacheScatter plugin: output = past_cache with `update` written on `axis`
// from each batch row's write index. The cache is seen as [B, P, M, R]: B batch rows, P the product of
// the dimensions between the batch axis and `axis`, M = past_cache.shape[axis], R bytes per entry (the
// dimensions after `axis`); `update` as [B, P, S, R]. Entry (b, p, s) of the update goes to position
// write_indices[b] + s of row (b, p), modulo M in circular mode. Only the update's B*P*S*R bytes are
// moved (and B write indices read): the work follows the bytes written, never the cache's size.
//
// Checked on the device, because TensorRT shows a plugin its inputs' values only there: a write index
// below 0, or above M - S in linear mode (the update would not fit), makes its batch row write nothing
// and counts one error per such row. The geometry (rank, axis, the update's shape against the cache's,
// one write index per batch row) is checked here too, as a dynamic dimension may differ between the
// inputs at run time: if it is wrong, nothing is written (nothing is read past an input) and one
// error is counted.
//
// Instantiated per element size (T); the write indices are int32 or int64, told apart at run time.
// The copy of past_cache into output (if any) is done before this kernel: by the launcher (Python
// plugin) or by TensorRT (AOT plugin, output aliased with past_cache).
#include "scatter_common.cuh"

// Row r of the update = (b, p, s) -> byte offset of its destination entry, or -1 for a skipped batch row.
struct CacheRows {
    const void* write_indices;  // null: every batch row writes from position 0
    int index_itemsize;
    int circular;
    i64 inner;  // P
    i64 size;  // M
    i64 count;  // S
    i64 row_bytes;  // R

    __device__ __forceinline__ i64 start(i64 b) const {
        return write_indices != nullptr ? load_int(write_indices, index_itemsize, b) : 0;
    }

    __device__ __forceinline__ bool fits(i64 w) const { return w >= 0 && (circular || w <= size - count); }

    // Groups of one row (copy_rows): where an entry goes depends on its batch row's write index.
    __device__ __forceinline__ i64 group_rows() const { return 1; }

    __device__ __forceinline__ i64 group(i64 r) const { return (*this)(r); }

    __device__ __forceinline__ i64 within(i64) const { return 0; }

    __device__ __forceinline__ i64 operator()(i64 r) const {
        const i64 row = quotient(r, count);  // b * P + p
        const i64 s = r - row * count;
        const i64 w = start(quotient(row, inner));
        if (!fits(w)) return -1;
        // Circular: (w mod M + s) mod M, which cannot overflow as w + s could; w mod M + s < 2M.
        i64 position = circular ? w - quotient(w, size) * size + s : w + s;
        if (circular && position >= size) position -= size;
        return (row * size + position) * row_bytes;
    }
};

template <typename T>
__device__ __forceinline__ void tensor_scatter_body(const TensorScatterArgs& a) {
    const int rank = a.rank;
    bool valid = rank >= 2 && rank <= TRT_SCATTER_MAX_RANK && a.axis >= 1 && a.axis < rank;
    for (int d = 0; valid && d < rank; ++d)
        valid = d == a.axis ? a.update_shape[d] <= a.cache_shape[d] : a.update_shape[d] == a.cache_shape[d];
    valid = valid && (a.write_indices == nullptr || a.index_count == a.cache_shape[0]);
    if (!valid) {
        if (global_thread() == 0) count_error(a.error_flag, 1);
        return;
    }
    CacheRows rows_map{a.write_indices, a.index_itemsize, a.circular, 1, a.cache_shape[a.axis], a.update_shape[a.axis],
                       static_cast<i64>(sizeof(T))};
    for (int d = 1; d < a.axis; ++d) rows_map.inner *= a.cache_shape[d];
    for (int d = a.axis + 1; d < rank; ++d) rows_map.row_bytes *= a.cache_shape[d];
    const i64 batch = a.cache_shape[0];
    unsigned int skipped = 0;  // B loads, and only where someone reads the count
    if (a.error_flag != nullptr)
        for (i64 b = global_thread(); b < batch; b += grid_threads()) skipped += rows_map.fits(rows_map.start(b)) ? 0 : 1;
    count_error(a.error_flag, skipped);

    const i64 rows = batch * rows_map.inner * rows_map.count;
    if (rows == 0 || rows_map.row_bytes == 0) return;  // nothing to write (and M may be 0: no modulo)

    copy_rows_widest(a.output, a.update, rows, rows_map.row_bytes, static_cast<u64>(rows_map.row_bytes), rows_map);
}

// Entry point of the Python plugin: the arguments as one struct.
template <typename T>
__global__ void tensor_scatter(TensorScatterArgs a) {
    tensor_scatter_body<T>(a);
}

// Entry point of the AOT plugin (plugins/aot.py): the three inputs (an AOT plugin's inputs are fixed, so
// write_indices is always given), the int32 scalars, then the output, aliased with past_cache (not read).
// Nothing counts errors: AOT kernels get no workspace.
template <typename T>
__global__ void tensor_scatter_aot(const char* past_cache, const char* update, const void* write_indices, int rank,
                                   int axis, int circular, int index_itemsize, int index_count,
                                   TRT_SCATTER_SHAPE_PARAMS(cache_dim), TRT_SCATTER_SHAPE_PARAMS(update_dim),
                                   char* output) {
    (void)past_cache;
    __shared__ TensorScatterArgs a;  // filled once per block (scatter_common.cuh)
    if (threadIdx.x == 0) {
        a = TensorScatterArgs{};
        a.output = output;
        a.update = update;
        a.write_indices = write_indices;
        a.error_flag = nullptr;
        TRT_SCATTER_SET_SHAPE(a.cache_shape, cache_dim);
        TRT_SCATTER_SET_SHAPE(a.update_shape, update_dim);
        a.index_count = index_count;
        a.rank = rank;
        a.axis = axis;
        a.circular = circular;
        a.index_itemsize = index_itemsize;
    }
    __syncthreads();
    tensor_scatter_body<T>(a);
}
