// A float-atomic scatter-add (tests only): what a non-deterministic reduction looks like. One thread per
// update element adds it into its target with atomicAdd, so the sum into one target depends on which
// thread gets there first. Run with shuffled block orders, its results differ; the reduction kernels' do not.
struct AtomicScatterAddArgs {
    float* output;
    const float* updates;
    const long long* targets;  // target row of each update row
    long long rows;
    long long columns;
};

__global__ void atomic_scatter_add(AtomicScatterAddArgs a) {
    const long long work = a.rows * a.columns;
    for (long long g = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; g < work;
         g += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long r = g / a.columns;
        atomicAdd(&a.output[a.targets[r] * a.columns + (g - r * a.columns)], a.updates[g]);
    }
}
