// Host shim: lets the CUDA C sources in plugins/ compile with g++ (tests only).
// Built-in index variables are thread-local globals that grid.h sets before it runs each (block,
// thread), one at a time (blocks and threads in order, or shuffled); so the atomics need no atomicity.
// A block's threads are fibers on one OS thread: __syncthreads() suspends the caller until every thread
// of the block has reached it, and __shared__ variables are the statics those fibers share.
#pragma once

struct dim3 {
    unsigned int x = 1, y = 1, z = 1;
};
extern thread_local dim3 blockIdx, threadIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static thread_local

void __syncthreads();

template <typename T>
inline T atomicAdd(T* address, T value) {  // unsigned int, unsigned long long, and float (tests' atomic variant)
    const T old = *address;
    *address = old + value;
    return old;
}

template <typename T>
inline T atomicMin(T* address, T value) {  // int, long long
    const T old = *address;
    *address = value < old ? value : old;
    return old;
}

template <typename T>
inline T atomicMax(T* address, T value) {
    const T old = *address;
    *address = value > old ? value : old;
    return old;
}

template <typename T>
inline T atomicCAS(T* address, T compare, T value) {  // unsigned int, unsigned long long
    const T old = *address;
    if (old == compare) *address = value;
    return old;
}
