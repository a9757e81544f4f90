// The CPU driver for the kernels (tests only): includes the exact plugin sources after shim.h and
// runs a kernel over a grid by looping over blocks and threads. Built as a shared library that the
// tests call through ctypes with the kernel parameters plugins/kernels.py prepares for cuLaunchKernel.
#include "shim.h"

#include "slice_scatter.cu"
#include "scatter_update.cu"
#include "overrun.cu"

thread_local dim3 blockIdx, threadIdx, blockDim, gridDim;

#include <cstddef>
#include <type_traits>
#include <utility>

// Runs `kernel` over a grid the way cuLaunchKernel does: kernelParams[i] points at the value of
// the kernel's i-th parameter (a struct for the plugin entries, a pointer or int for the AOT ones).
template <typename... P, std::size_t... I>
static void call(void (*kernel)(P...), void** params, std::index_sequence<I...>) {
    kernel(*static_cast<std::remove_reference_t<P>*>(params[I])...);
}

template <typename... P>
static void run(void (*kernel)(P...), void** params, unsigned int grid, unsigned int block) {
    gridDim = dim3{grid, 1, 1};
    blockDim = dim3{block, 1, 1};
    for (unsigned int b = 0; b < grid; ++b)
        for (unsigned int t = 0; t < block; ++t) {
            blockIdx = dim3{b, 0, 0};
            threadIdx = dim3{t, 0, 0};
            call(kernel, params, std::index_sequence_for<P...>{});
        }
}

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
extern "C" const ShimKernel shim_kernels[] = {
    SLICE_SCATTER_KERNELS(unsigned char),  SLICE_SCATTER_KERNELS(unsigned short),
    SLICE_SCATTER_KERNELS(unsigned int),   SLICE_SCATTER_KERNELS(unsigned long long),
    SCATTER_UPDATE_KERNELS(unsigned char), SCATTER_UPDATE_KERNELS(unsigned short),
    SCATTER_UPDATE_KERNELS(unsigned int),  SCATTER_UPDATE_KERNELS(unsigned long long),
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
};
extern "C" int layout_count() { return sizeof(fields) / sizeof(fields[0]); }
extern "C" const char* layout_name(int i) { return fields[i].name; }
extern "C" size_t layout_offset(int i) { return fields[i].offset; }
