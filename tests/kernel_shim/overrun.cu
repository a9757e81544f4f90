// A deliberately broken kernel (tests only): copies n elements but writes n+1, one past the end
// of `output`. The AddressSanitizer test runs it to prove that the check can fail.
struct OverrunArgs {
    unsigned char* output;
    const unsigned char* input;
    long long n;
};

__global__ void overrun(OverrunArgs a) {
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i <= a.n;
         i += static_cast<long long>(gridDim.x) * blockDim.x)
        a.output[i] = i < a.n ? a.input[i] : 0;
}
