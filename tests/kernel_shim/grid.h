// Runs a kernel over a grid on the CPU (tests only), after shim.h and the kernel's source: `run(kernel, params,
// grid, block)` loops over the blocks and, within each, over its threads as fibers, so that __syncthreads() is a
// real barrier. driver.cpp builds every plugin kernel on it; a test builds small programs on it alone.
#pragma once

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

// The switches are noipa: GCC's interprocedural register allocation would take them to change only the registers
// their own code uses, and a kernel could keep a value across __syncthreads() in another call-clobbered register,
// which the fibers that run in between overwrite (tests/kernel_shim/live_registers.cpp).
[[gnu::noipa]] void jump_to(void** buffer) { __builtin_longjmp(buffer, 1); }

// Suspends the running fiber and goes back to the block's loop; returns when the loop resumes this fiber.
[[gnu::noipa]] void to_loop() {
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
[[gnu::noipa]] void resume(Fiber& fiber) {
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
