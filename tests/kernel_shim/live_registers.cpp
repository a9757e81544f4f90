// A program built on grid.h alone (tests only): eight integers and four doubles live across every barrier of a
// loop, in registers where the compiler keeps them. A barrier's switch that does not preserve a register loses
// its value to the fibers that run in between. Prints the number of threads whose result differs from the same
// arithmetic without barriers; exits 1 if any does.
#include "shim.h"

#include <cstdio>

struct Live {
    long v[8];
    double d[4];
};

inline Live start(long v0) { return {{v0, v0 * 3 + 1, v0 ^ 0x55, v0 + 7, v0 * v0, v0 - 9, v0 << 3, ~v0}, {v0 * 0.5, v0 * 1.5, v0 + 0.25, v0 * 2.5}}; }

inline void step(Live& s) {
    long* v = s.v;
    double* d = s.d;
    v[0] += v[1]; v[1] ^= v[2]; v[2] += v[3] * 3; v[3] -= v[4]; v[4] += v[5]; v[5] ^= v[6]; v[6] += v[7]; v[7] = v[7] * 5 + v[0];
    d[0] += d[1] * 0.125; d[1] -= d[2] * 0.25; d[2] += d[3] * 0.5; d[3] = d[3] * 0.75 + 1.0;
}

inline long result(const Live& s) {
    long sum = (long)(s.d[0] + s.d[1] + s.d[2] + s.d[3]);
    for (long value : s.v) sum += value;
    return sum;
}

__global__ void live_across_barriers(const long* in, long* out, int rounds) {
    Live s = start(in[threadIdx.x]);
    for (int i = 0; i < rounds; ++i) {
        __syncthreads();
        step(s);
    }
    out[threadIdx.x] = result(s);
}

#include "grid.h"

int main() {
    int wrong = 0;
    for (unsigned block : {1u, 33u, 256u}) {
        std::vector<long> in(block), out(block);
        for (unsigned t = 0; t < block; ++t) in[t] = t * 1000003L + 17;
        const long* input = in.data();
        long* output = out.data();
        int rounds = 50;
        void* params[] = {&input, &output, &rounds};
        for (unsigned long long seed : {0ull, 7ull}) {
            shim_shuffle(seed);
            run(live_across_barriers, params, 2, block);
            for (unsigned t = 0; t < block; ++t) {
                Live s = start(in[t]);
                for (int i = 0; i < rounds; ++i) step(s);
                wrong += out[t] != result(s);
            }
        }
    }
    std::printf("%d wrong\n", wrong);
    return wrong != 0;
}
