// Scatter with a reduction, deterministic: what scatter_elements_reduce.cu and scatter_nd_reduce.cu share.
//
// The semantics are trt_scatter/oracle/reductions.py's: update rows r = 0..R-1, each with a target row t(r)
// of data seen as T rows of C elements; the rows into one target combine in ascending r, one at a time,
// each result rounded to the element type. No float atomics: every value written is a function of the
// inputs alone, whatever the grid, the block size or the order in which blocks run.
//
// The Python plugin's entry point runs as a sequence of launches of one kernel, `phase` choosing the
// step (plugins/scatter_elements_reduce.py plans them, in the workspace):
//
//   KEYS       key[r] = t(r) (T for a row out of range: it sorts last and is skipped, and counted)
//   per radix pass of RADIX_BITS bits of the key, a stable counting sort by digit:
//     COUNT      each chunk of `chunk` consecutive keys counts its digits (one thread, in order)
//     SCAN_UP    sums of `segment` consecutive counts, level by level
//     SCAN_TOP   one thread: exclusive prefix sum of the top level
//     SCAN_DOWN  each segment: its entries' exclusive prefix sums, from the level above
//     PLACE      each chunk places its keys (and their row numbers) in order at its digits' offsets
//   REDUCE     one thread per (sorted position, column); the first position of each target walks its
//              rows (ascending r: the sort is stable), loading TRT_SCATTER_REDUCE_BATCH of them at a time,
//              and writes op(...op(op(start, u_0), u_1)...)
//
// Each thread owns its chunk's counters, and the digit-major prefix sum puts chunk q's keys after
// chunk q-1's in every bucket: the sort is stable and its result independent of how threads are
// scheduled. Work: O(R) per pass, ceil(bits(T) / RADIX_BITS) passes, then O(R * C) for the reduction.
//
// The AOT entry point has one launch and no workspace, so it cannot sort: it combines with integer
// atomics, which give the same value in any order (add, mul, min, max on int32/int64, include_self=1).
// plugins/*_reduce.py refuses everything else for the AOT form at build time.
#pragma once

#include "scatter_common.cuh"

#define TRT_SCATTER_RADIX_BITS 8
#define TRT_SCATTER_RADIX (1 << TRT_SCATTER_RADIX_BITS)

enum ReducePhase { PHASE_KEYS = 0, PHASE_COUNT = 1, PHASE_SCAN_UP = 2, PHASE_SCAN_TOP = 3, PHASE_SCAN_DOWN = 4, PHASE_PLACE = 5, PHASE_REDUCE = 6 };
enum Reduction { REDUCE_ADD = 0, REDUCE_MUL = 1, REDUCE_MIN = 2, REDUCE_MAX = 3, REDUCE_MEAN = 4 };
enum ElementKind { KIND_SIGNED = 0, KIND_UNSIGNED = 1, KIND_FLOAT = 2, KIND_BFLOAT = 3 };  // with the element size

struct ScatterReduceArgs {
    char* output;
    const char* updates;
    const void* indices;
    unsigned int* error_flag;  // null: errors are not counted
    unsigned int* keys;  // this phase's input keys (R)
    unsigned int* rows;  // their update rows (R)
    unsigned int* keys_out;  // PLACE's output (R)
    unsigned int* rows_out;
    unsigned int* scan;  // COUNT/PLACE: the digit counts; SCAN_*: this level
    unsigned int* scan_next;  // SCAN_UP/SCAN_DOWN: the level above
    i64 data_shape[TRT_SCATTER_MAX_RANK];
    i64 indices_shape[TRT_SCATTER_MAX_RANK];
    i64 num_rows;  // R
    i64 columns;  // C
    i64 targets;  // T, also the key of rows out of range
    i64 chunk;  // keys per chunk (COUNT, PLACE)
    i64 chunks;  // ceil(R / chunk)
    i64 segment;  // scan entries per segment (SCAN_UP, SCAN_DOWN)
    i64 scan_count;  // entries of `scan`
    int data_rank;
    int indices_rank;
    int axis;  // ScatterElementsReduce's axis in [0, rank-1]
    int phase;
    int shift;  // the radix pass's lowest key bit
    int reduction;
    int include_self;
    int element_kind;
};

// ---- element arithmetic, bit-exact with NumPy (float16, float32, float64) and ml_dtypes (bfloat16)

// <type_traits> is not one of NVRTC's headers: the two traits used here.
template <bool Condition, typename A, typename B>
struct Pick {
    typedef A type;
};
template <typename A, typename B>
struct Pick<false, A, B> {
    typedef B type;
};
template <typename T>
struct SignedOf {
    typedef typename Pick<sizeof(T) == 1, signed char,
                          typename Pick<sizeof(T) == 2, short, typename Pick<sizeof(T) == 4, int, long long>::type>::type>::type type;
};

template <typename To, typename From>
__device__ __forceinline__ To bits_as(From value) {  // a union: NVRTC has no memcpy builtin; g++ documents the punning
    union {
        From from;
        To to;
    } bits;
    bits.from = value;
    return bits.to;
}

__device__ __forceinline__ float half_to_float(unsigned short h) {
    const unsigned int sign = static_cast<unsigned int>(h & 0x8000u) << 16;
    unsigned int exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
    if (exponent == 0x1fu) return bits_as<float>(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
    if (exponent == 0) {
        if (mantissa == 0) return bits_as<float>(sign);
        exponent = 113;  // a subnormal half: normalize it
        while ((mantissa & 0x400u) == 0) {
            mantissa <<= 1;
            --exponent;
        }
        return bits_as<float>(sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13));
    }
    return bits_as<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

// NumPy's npy_floatbits_to_halfbits: round to nearest even, NaN kept NaN.
__device__ __forceinline__ unsigned short float_to_half(float value) {
    const unsigned int f = bits_as<unsigned int>(value);
    const unsigned int sign = (f & 0x80000000u) >> 16;
    unsigned int exponent = f & 0x7f800000u;
    if (exponent >= 0x47800000u) {
        const unsigned int mantissa = f & 0x007fffffu;
        if (exponent == 0x7f800000u && mantissa != 0) {
            unsigned int nan = 0x7c00u + (mantissa >> 13);
            return static_cast<unsigned short>(sign + (nan == 0x7c00u ? nan + 1 : nan));
        }
        return static_cast<unsigned short>(sign + 0x7c00u);  // inf, or too large
    }
    if (exponent <= 0x38000000u) {
        if (exponent < 0x33000000u) return static_cast<unsigned short>(sign);
        exponent >>= 23;
        unsigned int mantissa = 0x00800000u + (f & 0x007fffffu);
        mantissa >>= (113 - exponent);
        if ((mantissa & 0x00003fffu) != 0x00001000u || (f & 0x000007ffu)) mantissa += 0x00001000u;
        return static_cast<unsigned short>(sign + (mantissa >> 13));
    }
    unsigned int mantissa = f & 0x007fffffu;
    if ((mantissa & 0x00003fffu) != 0x00001000u) mantissa += 0x00001000u;
    return static_cast<unsigned short>(sign + ((exponent - 0x38000000u) >> 13) + (mantissa >> 13));
}

__device__ __forceinline__ float bfloat_to_float(unsigned short b) { return bits_as<float>(static_cast<unsigned int>(b) << 16); }

__device__ __forceinline__ unsigned short float_to_bfloat(float value) {  // round to nearest even
    const unsigned int f = bits_as<unsigned int>(value);
    if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((f >> 16) | 0x40u);  // NaN stays NaN
    return static_cast<unsigned short>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}

// One element type: T is the unsigned type of its size, Kind what its bits mean. Integers accumulate in
// 64 bits (add and mul modulo 2**64 are the element type's own, modulo its width, once truncated).
template <typename T, int Kind>
struct Element {
    static constexpr bool integer = Kind == KIND_SIGNED || Kind == KIND_UNSIGNED;
    typedef typename Pick<integer, u64, typename Pick<sizeof(T) == 8, double, float>::type>::type Acc;

    __device__ static Acc load(T bits) {
        if constexpr (integer) {
            return static_cast<Acc>(bits);
        } else if constexpr (sizeof(T) == 2) {
            return Kind == KIND_BFLOAT ? bfloat_to_float(bits) : half_to_float(bits);
        } else {
            return bits_as<Acc>(bits);
        }
    }

    __device__ static T store(Acc value) {
        if constexpr (integer) {
            return static_cast<T>(value);
        } else if constexpr (sizeof(T) == 2) {
            return Kind == KIND_BFLOAT ? float_to_bfloat(value) : float_to_half(value);
        } else {
            return bits_as<T>(value);
        }
    }

    __device__ static i64 as_signed(T bits) {  // an integer's value, for comparisons and floor division
        if constexpr (Kind == KIND_SIGNED) return static_cast<i64>(static_cast<typename SignedOf<T>::type>(bits));
        return static_cast<i64>(bits);
    }

    // op(there, update) for add and mul, rounded to the element type (floats: in float, then rounded).
    __device__ static T arithmetic(int reduction, T there, T update) {
        const Acc a = load(there), b = load(update);
        return store(reduction == REDUCE_MUL ? static_cast<Acc>(a * b) : static_cast<Acc>(a + b));
    }

    // min/max: the update replaces the value there if it is smaller/larger, or NaN (PyTorch's amin/amax).
    __device__ static bool replaces(int reduction, T there, T update) {
        if constexpr (integer) {
            if constexpr (Kind == KIND_SIGNED) {
                return reduction == REDUCE_MIN ? as_signed(update) < as_signed(there) : as_signed(update) > as_signed(there);
            } else {
                return reduction == REDUCE_MIN ? update < there : update > there;
            }
        } else {
            const Acc a = load(there), b = load(update);
            return b != b || (reduction == REDUCE_MIN ? b < a : b > a);
        }
    }

    __device__ static T combine(int reduction, T there, T update) {
        if (reduction == REDUCE_MIN || reduction == REDUCE_MAX) return replaces(reduction, there, update) ? update : there;
        return arithmetic(reduction, there, update);
    }

    // mean: the sum divided by the count, as PyTorch's scatter_reduce divides (floats: true division by the
    // count rounded to the element type, through float32 below float32; integers: floor division).
    __device__ static T mean(T sum, i64 count) {
        if constexpr (Kind == KIND_SIGNED) {
            const i64 value = as_signed(sum);
            i64 quotient = value / count;
            if (quotient * count > value) --quotient;  // C++ truncates toward zero; count > 0
            return static_cast<T>(quotient);
        } else if constexpr (Kind == KIND_UNSIGNED) {
            return static_cast<T>(static_cast<u64>(sum) / static_cast<u64>(count));
        } else if constexpr (sizeof(T) == 8) {
            return store(load(sum) / static_cast<double>(count));
        } else {
            const Acc divisor = load(store(static_cast<float>(count)));
            return store(load(sum) / divisor);
        }
    }
};

// ---- the phases

__device__ __forceinline__ unsigned int digit(unsigned int key, int shift) {
    return (key >> shift) & (TRT_SCATTER_RADIX - 1);
}

template <typename RowTargets>
__device__ __forceinline__ void reduce_keys(const ScatterReduceArgs& a, const RowTargets& target_of) {
    unsigned int out_of_range = 0;
    for (i64 r = global_thread(); r < a.num_rows; r += grid_threads()) {
        const i64 target = target_of(r);
        if (target < 0) ++out_of_range;
        a.keys[r] = static_cast<unsigned int>(target < 0 ? a.targets : target);
        a.rows[r] = static_cast<unsigned int>(r);
    }
    count_error(a.error_flag, out_of_range);
}

__device__ __forceinline__ void reduce_count(const ScatterReduceArgs& a) {
    for (i64 q = global_thread(); q < a.chunks; q += grid_threads()) {
        unsigned int counts[TRT_SCATTER_RADIX];
        for (int d = 0; d < TRT_SCATTER_RADIX; ++d) counts[d] = 0;
        const i64 end = (q + 1) * a.chunk < a.num_rows ? (q + 1) * a.chunk : a.num_rows;
        for (i64 i = q * a.chunk; i < end; ++i) ++counts[digit(a.keys[i], a.shift)];
        for (int d = 0; d < TRT_SCATTER_RADIX; ++d) a.scan[d * a.chunks + q] = counts[d];
    }
}

__device__ __forceinline__ void reduce_scan_up(const ScatterReduceArgs& a) {
    const i64 segments = (a.scan_count + a.segment - 1) / a.segment;
    for (i64 s = global_thread(); s < segments; s += grid_threads()) {
        const i64 end = (s + 1) * a.segment < a.scan_count ? (s + 1) * a.segment : a.scan_count;
        unsigned int sum = 0;
        for (i64 i = s * a.segment; i < end; ++i) sum += a.scan[i];
        a.scan_next[s] = sum;
    }
}

__device__ __forceinline__ void reduce_scan_top(const ScatterReduceArgs& a) {
    if (global_thread() != 0) return;
    unsigned int running = 0;
    for (i64 i = 0; i < a.scan_count; ++i) {
        const unsigned int value = a.scan[i];
        a.scan[i] = running;
        running += value;
    }
}

__device__ __forceinline__ void reduce_scan_down(const ScatterReduceArgs& a) {
    const i64 segments = (a.scan_count + a.segment - 1) / a.segment;
    for (i64 s = global_thread(); s < segments; s += grid_threads()) {
        const i64 end = (s + 1) * a.segment < a.scan_count ? (s + 1) * a.segment : a.scan_count;
        unsigned int running = a.scan_next[s];
        for (i64 i = s * a.segment; i < end; ++i) {
            const unsigned int value = a.scan[i];
            a.scan[i] = running;
            running += value;
        }
    }
}

__device__ __forceinline__ void reduce_place(const ScatterReduceArgs& a) {
    for (i64 q = global_thread(); q < a.chunks; q += grid_threads()) {
        unsigned int offsets[TRT_SCATTER_RADIX];
        for (int d = 0; d < TRT_SCATTER_RADIX; ++d) offsets[d] = a.scan[d * a.chunks + q];
        const i64 end = (q + 1) * a.chunk < a.num_rows ? (q + 1) * a.chunk : a.num_rows;
        for (i64 i = q * a.chunk; i < end; ++i) {
            const unsigned int key = a.keys[i];
            const unsigned int position = offsets[digit(key, a.shift)]++;
            a.keys_out[position] = key;
            a.rows_out[position] = a.rows[i];
        }
    }
}

// Rows one REDUCE thread loads before it combines them: the loads of a batch are independent, so they are in
// flight together (one at a time, the walk waited on memory once per row); the combination stays one row at a
// time in ascending r, so the bits do not depend on the batch.
#define TRT_SCATTER_REDUCE_BATCH 8

template <typename T, int Kind>
__device__ __forceinline__ void reduce_segments(const ScatterReduceArgs& a) {
    typedef Element<T, Kind> E;
    const unsigned int sentinel = static_cast<unsigned int>(a.targets);
    T* out = reinterpret_cast<T*>(a.output);
    const T* updates = reinterpret_cast<const T*>(a.updates);
    const i64 work = a.num_rows * a.columns;
    for (i64 g = global_thread(); g < work; g += grid_threads()) {
        const i64 i = quotient(g, a.columns), column = g - i * a.columns;
        const unsigned int key = a.keys[i];
        if (key == sentinel || (i > 0 && a.keys[i - 1] == key)) continue;  // not the first row of its target
        T value = a.include_self ? out[key * a.columns + column] : updates[static_cast<i64>(a.rows[i]) * a.columns + column];
        i64 j = a.include_self ? i : i + 1;
        for (;;) {  // the keys are sorted: the target's rows are j, j+1, ... up to the first other key
            T batch[TRT_SCATTER_REDUCE_BATCH];
            int count = 0;
#pragma unroll
            for (int b = 0; b < TRT_SCATTER_REDUCE_BATCH; ++b) {
                if (j + b < a.num_rows && a.keys[j + b] == key) {
                    batch[b] = updates[static_cast<i64>(a.rows[j + b]) * a.columns + column];
                    count = b + 1;
                }
            }
#pragma unroll
            for (int b = 0; b < TRT_SCATTER_REDUCE_BATCH; ++b)
                if (b < count) value = E::combine(a.reduction, value, batch[b]);
            j += count;
            if (count < TRT_SCATTER_REDUCE_BATCH) break;
        }
        if (a.reduction == REDUCE_MEAN) value = E::mean(value, j - i + a.include_self);
        out[key * a.columns + column] = value;
    }
}

template <typename T>
__device__ __forceinline__ void reduce_segments_of_kind(const ScatterReduceArgs& a) {
    switch (a.element_kind) {
        case KIND_SIGNED: reduce_segments<T, KIND_SIGNED>(a); break;
        case KIND_UNSIGNED: reduce_segments<T, KIND_UNSIGNED>(a); break;
        case KIND_FLOAT:
            if constexpr (sizeof(T) != 1) reduce_segments<T, KIND_FLOAT>(a);
            break;
        case KIND_BFLOAT:
            if constexpr (sizeof(T) == 2) reduce_segments<T, KIND_BFLOAT>(a);
            break;
    }
}

// The Python plugin's body: one phase of the plan.
template <typename T, typename RowTargets>
__device__ __forceinline__ void scatter_reduce_phase(const ScatterReduceArgs& a, const RowTargets& target_of) {
    switch (a.phase) {
        case PHASE_KEYS: reduce_keys(a, target_of); break;
        case PHASE_COUNT: reduce_count(a); break;
        case PHASE_SCAN_UP: reduce_scan_up(a); break;
        case PHASE_SCAN_TOP: reduce_scan_top(a); break;
        case PHASE_SCAN_DOWN: reduce_scan_down(a); break;
        case PHASE_PLACE: reduce_place(a); break;
        case PHASE_REDUCE: reduce_segments_of_kind<T>(a); break;
    }
}

// ---- the AOT body: integer atomics, whose result does not depend on the order (int32, int64; include_self=1)

template <typename I>
__device__ __forceinline__ void atomic_combine(I* address, I value, int reduction) {
    typedef typename Pick<sizeof(I) == 8, unsigned long long, unsigned int>::type U;
    if (reduction == REDUCE_ADD) {
        atomicAdd(reinterpret_cast<U*>(address), static_cast<U>(value));  // two's complement: the same bits
    } else if (reduction == REDUCE_MIN) {
        atomicMin(address, value);
    } else if (reduction == REDUCE_MAX) {
        atomicMax(address, value);
    } else {  // mul: compare and swap, wrapping as the type does (in unsigned arithmetic)
        U* word = reinterpret_cast<U*>(address);
        U old = *word, assumed;
        do {
            assumed = old;
            old = atomicCAS(word, assumed, static_cast<U>(assumed * static_cast<U>(value)));
        } while (old != assumed);
    }
}

template <typename T, typename RowTargets>
__device__ __forceinline__ void scatter_reduce_atomic(const ScatterReduceArgs& a, const RowTargets& target_of) {
    typedef typename Pick<sizeof(T) == 8, long long, int>::type I;
    if (sizeof(T) != 4 && sizeof(T) != 8) return;  // refused at build time: int32 and int64 only
    I* out = reinterpret_cast<I*>(a.output);
    const I* updates = reinterpret_cast<const I*>(a.updates);
    const i64 work = a.num_rows * a.columns;
    for (i64 g = global_thread(); g < work; g += grid_threads()) {
        const i64 r = quotient(g, a.columns);
        const i64 target = target_of(r);
        if (target >= 0) atomic_combine(out + target * a.columns + (g - r * a.columns), updates[g], a.reduction);
    }
}
