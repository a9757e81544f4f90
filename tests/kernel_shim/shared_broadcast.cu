// One value per block through shared memory (tests only): thread 0 writes its block's number, every thread
// reads it back. With the barrier, each thread reads its own block's number, whatever order the shim runs
// the threads in; without it, a thread the shim runs before thread 0 reads what the block before left.
// The pattern of the AOT entries and of SliceScatter's plan (plugins/scatter_common.cuh).
struct SharedBroadcastArgs {
    unsigned int* output;  // one per thread of the grid
    int barrier;  // 0: the broken variant
};

__global__ void shared_broadcast(SharedBroadcastArgs a) {
    __shared__ unsigned int value;
    if (threadIdx.x == 0) value = blockIdx.x + 1;
    if (a.barrier) __syncthreads();
    a.output[blockIdx.x * blockDim.x + threadIdx.x] = value;
}
