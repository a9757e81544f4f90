// Host shim: lets the CUDA C sources in plugins/ compile with g++ (tests only).
// Built-in index variables are thread-local globals that driver.cpp sets before calling a kernel
// once per (block, thread), one after another; so atomicAdd needs no atomicity.
#pragma once

struct dim3 {
    unsigned int x = 1, y = 1, z = 1;
};
extern thread_local dim3 blockIdx, threadIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline

inline unsigned int atomicAdd(unsigned int* address, unsigned int value) {
    const unsigned int old = *address;
    *address = old + value;
    return old;
}
