// Shared pieces of the trt-scatter kernels (slice_scatter.cu, scatter_update.cu, tensor_scatter.cu).
//
// The kernels move bytes: they are templates on an unsigned type of the element's size and
// never look at values. The same source compiles with NVRTC for the GPU and with g++ after
// tests/kernel_shim/shim.h for the CPU tests, so it uses nothing beyond the built-in index
// variables, atomicAdd and plain C++17.
//
// Each op has two entry points around one body (a __device__ function taking the op's argument
// struct), so every test of one entry tests the other:
// - `<op>(Args a)`: the struct passed by value as the only parameter, launched by the Python
//   plugins (plugins/kernels.py mirrors the structs with ctypes; a test compares both layouts);
// - `<op>_aot(...)`: the argument list TensorRT's ahead-of-time plugins launch with (the input
//   tensors, then int32 scalars, then the output: NVIDIA/TensorRT
//   python/packaging/bindings_wheel/tensorrt/plugin/_lib.py, `aot_impl`, 10.9+), which fills
//   the struct and calls the same body; plugins/aot.py registers it. Its thread 0 fills one struct per
//   block in shared memory: a struct of its own in every thread would live in local memory, and a large
//   grid writing hundreds of bytes per thread took longer than a small write itself (35 us more than the
//   struct entry on an H200, bench/results/gpu_check_h200_2026-11-26_15cc283).
#pragma once

#define TRT_SCATTER_MAX_RANK 8

typedef long long i64;
typedef unsigned long long u64;

// The widest unit a row copy uses: 16 bytes (one 128-bit load/store when aligned).
struct alignas(16) Bytes16 {
    u64 lo, hi;
};

struct SliceScatterArgs {
    char* output;
    const char* updates;
    const void* start;
    const void* stop;
    const void* step;
    const void* axes;  // null: axes 0 .. num_axes-1
    unsigned int* error_flag;  // null: errors are not counted
    i64 data_shape[TRT_SCATTER_MAX_RANK];
    i64 updates_shape[TRT_SCATTER_MAX_RANK];
    int rank;
    int num_axes;
    int param_itemsize;  // of start/stop/step: 4 or 8
    int axes_itemsize;  // 4 or 8
};

struct ScatterUpdateArgs {
    char* output;
    const char* updates;
    const void* indices;
    const void* axis;
    unsigned int* error_flag;
    i64 data_shape[TRT_SCATTER_MAX_RANK];
    i64 indices_shape[TRT_SCATTER_MAX_RANK];
    i64 updates_shape[TRT_SCATTER_MAX_RANK];
    int data_rank;
    int indices_rank;
    int updates_rank;
    int axis_itemsize;  // 4 or 8
};

struct TensorScatterArgs {
    char* output;
    const char* update;
    const void* write_indices;  // null: every batch row writes from position 0
    unsigned int* error_flag;
    i64 cache_shape[TRT_SCATTER_MAX_RANK];
    i64 update_shape[TRT_SCATTER_MAX_RANK];
    i64 index_count;  // write_indices' length (one per batch row)
    int rank;
    int axis;  // in [1, rank-1]
    int circular;  // 0: linear, 1: circular
    int index_itemsize;  // of write_indices: 4 or 8
};

// An AOT entry point receives each shape as TRT_SCATTER_MAX_RANK int32 scalars (unused trailing
// ones 0): TensorRT's extra kernel arguments are scalars, not arrays (NvInferPythonPlugin.h,
// ISymExprs / PluginArgDataType::kINT32), so a shape costs eight parameters.
#define TRT_SCATTER_SHAPE_PARAMS(name) \
    int name##0, int name##1, int name##2, int name##3, int name##4, int name##5, int name##6, int name##7
#define TRT_SCATTER_SET_SHAPE(array, name) \
    do { \
        const int dims_[TRT_SCATTER_MAX_RANK] = {name##0, name##1, name##2, name##3, name##4, name##5, name##6, name##7}; \
        for (int d_ = 0; d_ < TRT_SCATTER_MAX_RANK; ++d_) (array)[d_] = dims_[d_]; \
    } while (0)

// Small parameter tensors come as int32 or int64, told apart at run time.
__device__ __forceinline__ i64 load_int(const void* p, int itemsize, i64 i) {
    return itemsize == 8 ? static_cast<const i64*>(p)[i] : static_cast<i64>(static_cast<const int*>(p)[i]);
}

__device__ __forceinline__ i64 global_thread() {
    return static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ i64 grid_threads() {
    return static_cast<i64>(gridDim.x) * blockDim.x;
}

__device__ __forceinline__ void count_error(unsigned int* flag, unsigned int n) {
    if (flag != nullptr && n != 0) atomicAdd(flag, n);
}

// Division is the costly part of mapping a row to its output offset; most operands fit 32 bits.
__device__ __forceinline__ i64 quotient(i64 a, i64 b) {
    if ((static_cast<u64>(a) | static_cast<u64>(b)) >> 32 == 0)
        return static_cast<i64>(static_cast<unsigned int>(a) / static_cast<unsigned int>(b));
    return a / b;
}

// The largest unit in {16, 8, 4, 2, 1} bytes that divides every byte offset and length in `bits`.
__device__ __forceinline__ int unit_bytes(u64 bits) {
    int width = 16;
    while (width > 1 && (bits & static_cast<u64>(width - 1)) != 0) width >>= 1;
    return width;
}

// Copies `rows` rows of `row_units` units U: source row r starts at byte r*row_units*sizeof(U)
// of `src` (updates are dense), its destination at byte map(r) of `dst`, or nowhere if map(r) < 0.
// A row map also splits its rows into groups of map.group_rows() consecutive rows (the innermost axis
// it walks, or an index list): for r = g * group_rows + j, map(r) = map.group(g) + map.within(j), and
// either part < 0 means nowhere.
// Long rows: blocks take tiles of a row (one row lookup per tile). Rows of one unit in long groups
// (a strided or indexed innermost axis): blocks take tiles of a group (one group lookup per tile), so a
// unit costs its offset within the group and no division; a division per unit made these rows up to 3x
// slower than torch's strided copies on an H200. In a tile a thread holds its whole share (4 units) in
// registers between its loads and its stores: a store may alias the next load as far as the compiler
// knows, so loads and stores in turn left one load in flight per thread. Other short rows: threads take
// single units (one row lookup per unit). All are grid-stride loops, so any grid is correct.
template <typename U, typename RowMap>
__device__ __forceinline__ void copy_rows(char* __restrict__ dst, const char* __restrict__ src, i64 rows,
                                          i64 row_units, const RowMap& map) {
    const U* in = reinterpret_cast<const U*>(src);
    if (row_units >= static_cast<i64>(blockDim.x)) {
        const int unroll = 4;
        const i64 tile = static_cast<i64>(blockDim.x) * unroll;
        const i64 tiles_per_row = (row_units + tile - 1) / tile;
        const i64 tiles = rows * tiles_per_row;
        for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
            const i64 r = quotient(t, tiles_per_row);
            const i64 offset = map(r);
            if (offset < 0) continue;
            U* out = reinterpret_cast<U*>(dst + offset);
            const U* row = in + r * row_units;
            const i64 first = (t - r * tiles_per_row) * tile + threadIdx.x;
            if (first + (unroll - 1) * static_cast<i64>(blockDim.x) < row_units) {  // a whole tile: every load first
                U values[unroll];
#pragma unroll
                for (int k = 0; k < unroll; ++k) values[k] = row[first + static_cast<i64>(k) * blockDim.x];
#pragma unroll
                for (int k = 0; k < unroll; ++k) out[first + static_cast<i64>(k) * blockDim.x] = values[k];
            } else {
                for (i64 u = first; u < row_units; u += blockDim.x) out[u] = row[u];
            }
        }
    } else if (row_units == 1 && map.group_rows() > 1 && map.group_rows() >= static_cast<i64>(blockDim.x)) {
        const int unroll = 4;
        const i64 group_rows = map.group_rows();
        const i64 tile = static_cast<i64>(blockDim.x) * unroll;
        const i64 tiles_per_group = (group_rows + tile - 1) / tile;
        const i64 tiles = quotient(rows, group_rows) * tiles_per_group;
        for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
            const i64 g = quotient(t, tiles_per_group);
            const i64 base = map.group(g);
            if (base < 0) continue;
            const U* group_in = in + g * group_rows;
            const i64 first = (t - g * tiles_per_group) * tile + threadIdx.x;
            if (first + (unroll - 1) * static_cast<i64>(blockDim.x) < group_rows) {  // a whole tile: every load first
                U values[unroll];
#pragma unroll
                for (int k = 0; k < unroll; ++k) values[k] = group_in[first + static_cast<i64>(k) * blockDim.x];
#pragma unroll
                for (int k = 0; k < unroll; ++k) {
                    const i64 offset = map.within(first + static_cast<i64>(k) * blockDim.x);
                    if (offset >= 0) *reinterpret_cast<U*>(dst + base + offset) = values[k];
                }
            } else {
                for (i64 j = first; j < group_rows; j += blockDim.x) {
                    const i64 offset = map.within(j);
                    if (offset >= 0) *reinterpret_cast<U*>(dst + base + offset) = group_in[j];
                }
            }
        }
    } else if (row_units == 1) {  // one unit per row, short groups: no division inside a row
        for (i64 r = global_thread(); r < rows; r += grid_threads()) {
            const i64 offset = map(r);
            if (offset >= 0) *reinterpret_cast<U*>(dst + offset) = in[r];
        }
    } else {
        const i64 units = rows * row_units;
        for (i64 i = global_thread(); i < units; i += grid_threads()) {
            const i64 r = quotient(i, row_units);
            const i64 offset = map(r);
            if (offset < 0) continue;
            reinterpret_cast<U*>(dst + offset)[i - r * row_units] = in[i];
        }
    }
}

// copy_rows with the widest unit that divides every byte offset involved: `alignment_bits` is the
// OR of the offsets' common factors (row lengths, strides, bases); the pointers are added here.
// Any such unit moves the same bytes, so rows of 1-byte elements can still move 16 at a time.
template <typename RowMap>
__device__ __forceinline__ void copy_rows_widest(char* dst, const char* src, i64 rows, i64 row_bytes,
                                                 u64 alignment_bits, const RowMap& map) {
    if (rows <= 0 || row_bytes <= 0) return;
    switch (unit_bytes(alignment_bits | static_cast<u64>(row_bytes) | reinterpret_cast<u64>(dst) |
                       reinterpret_cast<u64>(src))) {
        case 16: copy_rows<Bytes16>(dst, src, rows, row_bytes / 16, map); break;
        case 8: copy_rows<u64>(dst, src, rows, row_bytes / 8, map); break;
        case 4: copy_rows<unsigned int>(dst, src, rows, row_bytes / 4, map); break;
        case 2: copy_rows<unsigned short>(dst, src, rows, row_bytes / 2, map); break;
        default: copy_rows<unsigned char>(dst, src, rows, row_bytes, map); break;
    }
}
