// Helpers shared by every tensorplug OpenCL program (prepended to each generated source).
// FP_CONTRACT OFF: no fused multiply-add contraction, so random numbers match the CPU backend bit
// for bit (the CPU build uses -ffp-contract=off for the same reason).
#pragma OPENCL FP_CONTRACT OFF

// Whether the work-item's whole work-group lies below n: a branch that every work-item of a group
// takes alike. PoCL vectorizes a kernel across the work-items of a group only when none of them
// leaves on its own, so the contiguous elementwise kernels run their body under
// `TP_WHOLE_GROUP(n) || i < n`, guarded per work-item only in the last group (`if (i >= n)
// return;` alone kept them at a third of the memory bandwidth on pip's PoCL 3.0: a + b of 1e7
// float32 3.4 -> 10 GB/s).
#define TP_WHOLE_GROUP(n) ((long)(get_group_id(0) + 1) * (long)get_local_size(0) <= (n))

#define TP_ERR_INDEX 1
#define TP_ERR_ZERO_DIV 2

// Records the first error in the device error flag long[4] = {code, value, dim, size}; the host
// raises it at the next synchronization. Claims the flag with a 32-bit compare-and-swap on the
// low half of element 0 (little-endian devices; the high half stays 0).
void tp_raise(__global long* err, long code, long value, long dim, long size) {
    if (atomic_cmpxchg((volatile __global int*)err, 0, (int)code) == 0) {
        err[1] = value;
        err[2] = dim;
        err[3] = size;
    }
}

// An index value wrapped into [0, size); -1 (and a recorded IndexError) when out of range.
long tp_wrap_index(long v, long size, long dim, __global long* err) {
    long w = v < 0 ? v + size : v;
    if (w < 0 || w >= size) {
        tp_raise(err, TP_ERR_INDEX, v, dim, size);
        return -1;
    }
    return w;
}

// bfloat16 is stored as ushort: the high half of a float32, rounded to nearest even.
float tp_bf16_to_float(ushort x) { return as_float(((uint)x) << 16); }
ushort tp_float_to_bf16(float f) {
    uint u = as_uint(f);
    if (isnan(f)) return (ushort)((u >> 16) | 0x40);
    u += 0x7FFF + ((u >> 16) & 1);
    return (ushort)(u >> 16);
}

// Philox4x32-10 (the contract's generator): counter (lo, hi, 0, 0), key (lo32(seed), hi32(seed)).
uint4 tp_philox(ulong seed, ulong counter) {
    uint c0 = (uint)counter, c1 = (uint)(counter >> 32), c2 = 0, c3 = 0;
    uint k0 = (uint)seed, k1 = (uint)(seed >> 32);
    for (int r = 0; r < 10; ++r) {
        if (r > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint hi0 = mul_hi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        uint hi1 = mul_hi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
        uint n0 = hi1 ^ c1 ^ k0;
        uint n2 = hi0 ^ c3 ^ k1;
        c0 = n0;
        c1 = lo1;
        c2 = n2;
        c3 = lo0;
    }
    return (uint4)(c0, c1, c2, c3);
}

// Decomposes the linear index i over shape sh[0..nd) and returns the element offset with strides
// st (the strided kernels pass shapes and strides as scalar arguments, up to 8 dims).
#define TP_OFFSET(i, nd, sh, st, off)                              \
    {                                                              \
        long rem_ = (i);                                           \
        for (int k_ = (nd) - 1; k_ >= 0; --k_) {                   \
            long c_ = rem_ % sh[k_];                               \
            rem_ /= sh[k_];                                        \
            off += c_ * st[k_];                                    \
        }                                                          \
    }
