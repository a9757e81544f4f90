// The CPU driver for the kernels (tests only): includes the exact plugin sources after shim.h and
// runs a kernel over a grid by looping over blocks and threads. Built as a shared library that the
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

thread_local dim3 blockIdx, threadIdx, blockDim, gridDim;

#include <ucontext.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

// The order in which a launch runs its blocks, and each block its threads: in order (seed 0), or a permutation
// drawn from the seed (xorshift64), a new one for every block and launch. A GPU runs them in any order, so a
// deterministic kernel gives the same bits either way, and a kernel with float atomics does not.
static unsigned long long shuffle_state = 0;
extern "C" void shim_shuffle(unsigned long long seed) { shuffle_state = seed; }

static void shuffle(std::vector<unsigned int>& order) {
    std::iota(order.begin(), order.end(), 0u);
    if (shuffle_state == 0) return;
    for (size_t i = order.size(); i > 1; --i) {
        shuffle_state ^= shuffle_state << 13;
        shuffle_state ^= shuffle_state >> 7;
        shuffle_state ^= shuffle_state << 17;
        std::swap(order[i - 1], order[shuffle_state % i]);
    }
}

// A block's threads run as fibers, one at a time: each runs until it returns or reaches __syncthreads(), which
// hands control back to the block's loop; the loop resumes the threads that have not returned, in a new
// (shuffled) order each round, so every thread passes a barrier only once all have reached it, and what a kernel
// does between barriers runs in any order, as on a GPU.
//
// A fiber is made once (makecontext, first entered through setcontext) and then runs one kernel thread after
// another, for every block and launch of the process. Control moves between a fiber and the loop with GCC's
// __builtin_setjmp/__builtin_longjmp, which save and restore no signal mask: swapcontext makes a system call at
// every switch, and the suites launch the kernels over millions of threads. Under AddressSanitizer, which must
// see every stack switch, each switch is a swapcontext.
namespace {
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSwapcontextOnly = true;
#else
constexpr bool kSwapcontextOnly = false;
#endif
constexpr size_t kFiberStack = 256 * 1024;  // the kernels' frames are small; AddressSanitizer's are larger

struct Fiber {
    ucontext_t context;  // where the fiber waits for its next thread (swapcontext only) or first starts
    void* jump[5];       // where it waits otherwise (__builtin_setjmp's buffer: frame, resume address, stack)
    std::unique_ptr<char[]> stack{new char[kFiberStack]};  // not zeroed: only the pages a kernel uses are touched
    bool started = false;
    bool done = false;
};

thread_local ucontext_t loop_context;
thread_local void* loop_jump[5];
thread_local Fiber* running = nullptr;
thread_local const std::function<void()>* thread_body = nullptr;

[[gnu::noinline]] void jump_to(void** buffer) { __builtin_longjmp(buffer, 1); }

// Suspends the running fiber and goes back to the block's loop; returns when the loop resumes this fiber.
[[gnu::noinline]] void to_loop() {
    Fiber* self = running;
    if (kSwapcontextOnly) {
        swapcontext(&self->context, &loop_context);
    } else if (__builtin_setjmp(self->jump) == 0) {
        jump_to(loop_jump);
    }
}

void fiber_main() {  // never returns: after each kernel thread it waits for the next
    for (;;) {
        (*thread_body)();
        running->done = true;
        to_loop();
    }
}

void start(Fiber& fiber) {  // a fiber's first entry will run fiber_main on its own stack
    getcontext(&fiber.context);
    fiber.context.uc_stack.ss_sp = fiber.stack.get();
    fiber.context.uc_stack.ss_size = kFiberStack;
    fiber.context.uc_link = nullptr;
    makecontext(&fiber.context, fiber_main, 0);
    fiber.started = true;
}

// Runs `fiber` until it returns from its kernel thread or reaches a barrier.
[[gnu::noinline]] void resume(Fiber& fiber) {
    if (kSwapcontextOnly) {
        if (!fiber.started) start(fiber);
        swapcontext(&loop_context, &fiber.context);
        return;
    }
    if (__builtin_setjmp(loop_jump) != 0) return;  // the fiber came back through to_loop
    if (fiber.started) jump_to(fiber.jump);
    start(fiber);
    setcontext(&fiber.context);
}
}  // namespace

void __syncthreads() {
    if (running != nullptr) to_loop();
}

static void run_block(unsigned int block, const std::function<void()>& body, std::vector<unsigned int>& threads) {
    static thread_local std::vector<std::unique_ptr<Fiber>> fibers;  // never moved: a waiting fiber's frames are on its stack
    while (fibers.size() < block) fibers.push_back(std::make_unique<Fiber>());
    thread_body = &body;
    for (unsigned int t = 0; t < block; ++t) fibers[t]->done = false;
    for (unsigned int live = block; live > 0;) {
        shuffle(threads);
        for (unsigned int t : threads) {
            Fiber& fiber = *fibers[t];
            if (fiber.done) continue;
            threadIdx = dim3{t, 0, 0};
            running = &fiber;
            resume(fiber);
            if (fiber.done) --live;
        }
    }
    running = nullptr;
}

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
    std::vector<unsigned int> blocks(grid), threads(block);
    shuffle(blocks);
    const std::function<void()> body = [&] { call(kernel, params, std::index_sequence_for<P...>{}); };
    for (unsigned int b : blocks) {
        blockIdx = dim3{b, 0, 0};
        run_block(block, body, threads);
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
