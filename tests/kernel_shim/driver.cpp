// The CPU driver for the kernels (tests only): includes the exact plugin sources after shim.h and
// runs a kernel over a grid by looping over blocks and threads (grid.h). Built as a shared library that the
// tests call through ctypes with the kernel parameters plugins/kernels.py prepares for cuLaunchKernel.
#include "shim.h"

#include "slice_scatter.cu"
#include "scatter_update.cu"
#include "tensor_scatter.cu"
#include "scatter_elements_reduce.cu"
#include "scatter_nd_reduce.cu"
#include "overrun.cu"
#include "atomic_add.cu"
#include "shared_broadcast.cu"

#include "grid.h"

#define SLICE_SCATTER(size, type)                                                                        \
    extern "C" void run_slice_scatter_e##size(void** params, unsigned int g, unsigned int b) {            \
        run(slice_scatter<type>, params, g, b);                                                          \
    }                                                                                                    \
    extern "C" void run_slice_scatter_aot_e##size(void** params, unsigned int g, unsigned int b) {        \
        run(slice_scatter_aot<type>, params, g, b);                                                      \
    }
SLICE_SCATTER(1, unsigned char)
SLICE_SCATTER(2, unsigned short)
SLICE_SCATTER(4, unsigned int)
SLICE_SCATTER(8, unsigned long long)

#define SCATTER_UPDATE(size, type, bits, index)                                                           \
    extern "C" void run_scatter_update_e##size##_i##bits(void** params, unsigned int g, unsigned int b) { \
        run(scatter_update<type, index>, params, g, b);                                                  \
    }                                                                                                    \
    extern "C" void run_scatter_update_aot_e##size##_i##bits(void** params, unsigned int g,               \
                                                             unsigned int b) {                           \
        run(scatter_update_aot<type, index>, params, g, b);                                              \
    }
SCATTER_UPDATE(1, unsigned char, 32, int)
SCATTER_UPDATE(1, unsigned char, 64, long long)
SCATTER_UPDATE(2, unsigned short, 32, int)
SCATTER_UPDATE(2, unsigned short, 64, long long)
SCATTER_UPDATE(4, unsigned int, 32, int)
SCATTER_UPDATE(4, unsigned int, 64, long long)
SCATTER_UPDATE(8, unsigned long long, 32, int)
SCATTER_UPDATE(8, unsigned long long, 64, long long)

#define TENSOR_SCATTER(size, type)                                                                       \
    extern "C" void run_tensor_scatter_e##size(void** params, unsigned int g, unsigned int b) {           \
        run(tensor_scatter<type>, params, g, b);                                                         \
    }                                                                                                    \
    extern "C" void run_tensor_scatter_aot_e##size(void** params, unsigned int g, unsigned int b) {       \
        run(tensor_scatter_aot<type>, params, g, b);                                                     \
    }
TENSOR_SCATTER(1, unsigned char)
TENSOR_SCATTER(2, unsigned short)
TENSOR_SCATTER(4, unsigned int)
TENSOR_SCATTER(8, unsigned long long)
#define SCATTER_REDUCE(op, size, type, bits, index)                                                         \
    extern "C" void run_##op##_e##size##_i##bits(void** params, unsigned int g, unsigned int b) {          \
        run(op<type, index>, params, g, b);                                                              \
    }                                                                                                    \
    extern "C" void run_##op##_aot_e##size##_i##bits(void** params, unsigned int g, unsigned int b) {      \
        run(op##_aot<type, index>, params, g, b);                                                        \
    }
#define SCATTER_REDUCE_SIZES(op)                                                                          \
    SCATTER_REDUCE(op, 1, unsigned char, 32, int)                                                        \
    SCATTER_REDUCE(op, 1, unsigned char, 64, long long)                                                  \
    SCATTER_REDUCE(op, 2, unsigned short, 32, int)                                                       \
    SCATTER_REDUCE(op, 2, unsigned short, 64, long long)                                                 \
    SCATTER_REDUCE(op, 4, unsigned int, 32, int)                                                         \
    SCATTER_REDUCE(op, 4, unsigned int, 64, long long)                                                   \
    SCATTER_REDUCE(op, 8, unsigned long long, 32, int)                                                   \
    SCATTER_REDUCE(op, 8, unsigned long long, 64, long long)
SCATTER_REDUCE_SIZES(scatter_elements_reduce)
SCATTER_REDUCE_SIZES(scatter_nd_reduce)

// For the stand-in CUDA driver (fakecuda.c): every kernel NVRTC builds, with a runner that launches
// it from cuLaunchKernel's kernelParams. The stand-in finds a kernel by its lowered name, which is
// this library's symbol for the same instantiation, then its runner here: a new kernel is one line.
struct ShimKernel {
    const void* kernel;
    void (*run)(void** params, unsigned int grid, unsigned int block);
};

#define KERNEL(...) \
    {reinterpret_cast<const void*>(&__VA_ARGS__), [](void** p, unsigned int g, unsigned int b) { run(&__VA_ARGS__, p, g, b); }}
#define SLICE_SCATTER_KERNELS(type) KERNEL(slice_scatter<type>), KERNEL(slice_scatter_aot<type>)
#define SCATTER_UPDATE_KERNELS(type)                                                             \
    KERNEL(scatter_update<type, int>), KERNEL(scatter_update<type, long long>),                 \
        KERNEL(scatter_update_aot<type, int>), KERNEL(scatter_update_aot<type, long long>)
#define TENSOR_SCATTER_KERNELS(type) KERNEL(tensor_scatter<type>), KERNEL(tensor_scatter_aot<type>)
#define SCATTER_REDUCE_KERNELS(op, type) \
    KERNEL(op<type, int>), KERNEL(op<type, long long>), KERNEL(op##_aot<type, int>), KERNEL(op##_aot<type, long long>)
#define SCATTER_REDUCE_ALL(op)                                                                        \
    SCATTER_REDUCE_KERNELS(op, unsigned char), SCATTER_REDUCE_KERNELS(op, unsigned short),            \
        SCATTER_REDUCE_KERNELS(op, unsigned int), SCATTER_REDUCE_KERNELS(op, unsigned long long)
extern "C" const ShimKernel shim_kernels[] = {
    SLICE_SCATTER_KERNELS(unsigned char),  SLICE_SCATTER_KERNELS(unsigned short),
    SLICE_SCATTER_KERNELS(unsigned int),   SLICE_SCATTER_KERNELS(unsigned long long),
    SCATTER_UPDATE_KERNELS(unsigned char), SCATTER_UPDATE_KERNELS(unsigned short),
    SCATTER_UPDATE_KERNELS(unsigned int),  SCATTER_UPDATE_KERNELS(unsigned long long),
    TENSOR_SCATTER_KERNELS(unsigned char), TENSOR_SCATTER_KERNELS(unsigned short),
    TENSOR_SCATTER_KERNELS(unsigned int),  TENSOR_SCATTER_KERNELS(unsigned long long),
    SCATTER_REDUCE_ALL(scatter_elements_reduce), SCATTER_REDUCE_ALL(scatter_nd_reduce),
};
extern "C" const int shim_kernel_count = sizeof(shim_kernels) / sizeof(shim_kernels[0]);

// Device helpers exposed for direct tests over the whole int64 range.
extern "C" i64 shim_slice_count(i64 start, i64 stop, i64 step, i64 dim, i64* first) {
    return slice_count(start, stop, step, dim, first);
}
extern "C" i64 shim_quotient(i64 a, i64 b) { return quotient(a, b); }
extern "C" int shim_unit_bytes(u64 bits) { return unit_bytes(bits); }

extern "C" void run_overrun(const OverrunArgs* a, unsigned int g, unsigned int b) {
    void* params[] = {const_cast<OverrunArgs*>(a)};
    run(overrun, params, g, b);
}

extern "C" void run_shared_broadcast(const SharedBroadcastArgs* a, unsigned int g, unsigned int b) {
    void* params[] = {const_cast<SharedBroadcastArgs*>(a)};
    run(shared_broadcast, params, g, b);
}

extern "C" void run_atomic_scatter_add(const AtomicScatterAddArgs* a, unsigned int g, unsigned int b) {
    void* params[] = {const_cast<AtomicScatterAddArgs*>(a)};
    run(atomic_scatter_add, params, g, b);
}

// Layout of the argument structs, for comparison with the ctypes mirrors in plugins/kernels.py.
#define FIELD(s, f) {#s "." #f, offsetof(s, f)}
struct Field {
    const char* name;
    size_t offset;
};
static const Field fields[] = {
    FIELD(SliceScatterArgs, output), FIELD(SliceScatterArgs, updates), FIELD(SliceScatterArgs, start),
    FIELD(SliceScatterArgs, stop), FIELD(SliceScatterArgs, step), FIELD(SliceScatterArgs, axes),
    FIELD(SliceScatterArgs, error_flag), FIELD(SliceScatterArgs, data_shape), FIELD(SliceScatterArgs, updates_shape),
    FIELD(SliceScatterArgs, rank), FIELD(SliceScatterArgs, num_axes), FIELD(SliceScatterArgs, param_itemsize),
    FIELD(SliceScatterArgs, axes_itemsize), {"SliceScatterArgs", sizeof(SliceScatterArgs)},
    FIELD(ScatterUpdateArgs, output), FIELD(ScatterUpdateArgs, updates), FIELD(ScatterUpdateArgs, indices),
    FIELD(ScatterUpdateArgs, axis), FIELD(ScatterUpdateArgs, error_flag), FIELD(ScatterUpdateArgs, data_shape),
    FIELD(ScatterUpdateArgs, indices_shape), FIELD(ScatterUpdateArgs, updates_shape),
    FIELD(ScatterUpdateArgs, data_rank), FIELD(ScatterUpdateArgs, indices_rank), FIELD(ScatterUpdateArgs, updates_rank),
    FIELD(ScatterUpdateArgs, axis_itemsize), {"ScatterUpdateArgs", sizeof(ScatterUpdateArgs)},
    FIELD(TensorScatterArgs, output), FIELD(TensorScatterArgs, update), FIELD(TensorScatterArgs, write_indices),
    FIELD(TensorScatterArgs, error_flag), FIELD(TensorScatterArgs, cache_shape), FIELD(TensorScatterArgs, update_shape),
    FIELD(TensorScatterArgs, index_count), FIELD(TensorScatterArgs, rank), FIELD(TensorScatterArgs, axis),
    FIELD(TensorScatterArgs, circular), FIELD(TensorScatterArgs, index_itemsize),
    {"TensorScatterArgs", sizeof(TensorScatterArgs)},
    FIELD(ScatterReduceArgs, output), FIELD(ScatterReduceArgs, updates), FIELD(ScatterReduceArgs, indices),
    FIELD(ScatterReduceArgs, error_flag), FIELD(ScatterReduceArgs, keys), FIELD(ScatterReduceArgs, rows),
    FIELD(ScatterReduceArgs, keys_out), FIELD(ScatterReduceArgs, rows_out), FIELD(ScatterReduceArgs, scan),
    FIELD(ScatterReduceArgs, scan_next), FIELD(ScatterReduceArgs, data_shape), FIELD(ScatterReduceArgs, indices_shape),
    FIELD(ScatterReduceArgs, num_rows), FIELD(ScatterReduceArgs, columns), FIELD(ScatterReduceArgs, targets),
    FIELD(ScatterReduceArgs, chunk), FIELD(ScatterReduceArgs, chunks), FIELD(ScatterReduceArgs, segment),
    FIELD(ScatterReduceArgs, scan_count), FIELD(ScatterReduceArgs, data_rank), FIELD(ScatterReduceArgs, indices_rank),
    FIELD(ScatterReduceArgs, axis), FIELD(ScatterReduceArgs, phase), FIELD(ScatterReduceArgs, shift),
    FIELD(ScatterReduceArgs, reduction), FIELD(ScatterReduceArgs, include_self), FIELD(ScatterReduceArgs, element_kind),
    {"ScatterReduceArgs", sizeof(ScatterReduceArgs)},
};
extern "C" int layout_count() { return sizeof(fields) / sizeof(fields[0]); }
extern "C" const char* layout_name(int i) { return fields[i].name; }
extern "C" size_t layout_offset(int i) { return fields[i].offset; }
