// Philox4x32-10 random numbers: uniform, normal, randint. Every element is a pure function of
// (seed, offset, element index), so results are identical for any thread count and, following
// the shared mapping below, bit-identical with the other backends.
//   key = (lo32(seed), hi32(seed)); block j uses counter (lo32(offset + j), hi32(offset + j), 0, 0)
//   uniform 32-bit: element i <- word i % 4 of block i / 4: u = (w >> (32 - b)) * 2^-b with
//                   b = 24 (float32), 11 (float16), 8 (bfloat16); value = low + (high - low) * u
//                   in float32
//   uniform 64-bit: element i <- words (2(i%2), 2(i%2)+1) = (lo, hi) of block i / 2:
//                   u = ((hi << 32 | lo) >> 11) * 2^-53, value in double
//   normal: element i <- block i / 4; words (w0, w1) give elements 4j (cos) and 4j+1 (sin), (w2, w3)
//           give 4j+2 and 4j+3: u1 = ((w_even >> 8) + 1) * 2^-24, u2 = (w_odd >> 8) * 2^-24,
//           r = sqrt(-2 ln u1), z = r cos(2 pi u2) or r sin(2 pi u2) in double (2 pi multiplied
//           first: theta = 6.283185307179586 * u2), value = mean + std * z
//   randint: r = high - low; r <= 2^32: low + (word % r) as uniform 32-bit; else low + (x % r)
//            with the 64-bit x of uniform 64-bit.
#include "families.h"

namespace tp {

void philox4x32_10(const uint32_t ctr_in[4], const uint32_t key_in[2], uint32_t out[4]) {
    uint32_t c0 = ctr_in[0], c1 = ctr_in[1], c2 = ctr_in[2], c3 = ctr_in[3];
    uint32_t k0 = key_in[0], k1 = key_in[1];
    for (int r = 0; r < 10; ++r) {
        if (r > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0;
        const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
        const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
        const uint32_t n1 = static_cast<uint32_t>(p1);
        const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
        const uint32_t n3 = static_cast<uint32_t>(p0);
        c0 = n0;
        c1 = n1;
        c2 = n2;
        c3 = n3;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

namespace {

inline void block(uint64_t seed, uint64_t counter, uint32_t w[4]) {
    const uint32_t key[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
    const uint32_t ctr[4] = {static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0, 0};
    philox4x32_10(ctr, key, w);
}

uint64_t arg_u64(PyObject* o, const char* fname, const char* what) {
    if (!PyLong_Check(o)) raise(PyExc_TypeError, std::string(fname) + ": " + what + " must be an int");
    unsigned long long v = PyLong_AsUnsignedLongLongMask(o);
    if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) throw PythonErrorSet{};
    return v;
}

// Runs fn(j, w) for every block j whose elements lie in [0, n), over threads when big.
template <class F> void for_blocks(int64_t n, int64_t per_block, uint64_t seed, uint64_t offset, F fn) {
    const int64_t nblocks = (n + per_block - 1) / per_block;
    parallel_range(nblocks, PARALLEL_THRESHOLD / 4, [&](int64_t b, int64_t e) {
        uint32_t w[4];
        for (int64_t j = b; j < e; ++j) {
            block(seed, offset + static_cast<uint64_t>(j), w);
            fn(j, w);
        }
    });
}

inline uint64_t word64(const uint32_t* w, int half) {
    return (static_cast<uint64_t>(w[2 * half + 1]) << 32) | w[2 * half];
}

struct RandomArgs {
    int dtype;
    int64_t n;
    char* out;
    uint64_t seed, offset;
};

RandomArgs parse_random(PyObject* const* args, Py_ssize_t nargs, const char* fname, Operand& out) {
    check_nargs(nargs, 7, fname);
    RandomArgs r;
    r.dtype = arg_dtype(args[0], fname);
    r.n = arg_int(args[2], fname, "n");
    if (r.n < 0) value_error(std::string(fname) + ": n must be >= 0");
    int64_t shape[1] = {r.n};
    parse_operand(args[1], r.dtype, 1, shape, out, fname, "out", false, true);
    if (r.n > 1 && out.strides[0] != 1) value_error(std::string(fname) + ": out must be contiguous");
    r.out = out.data;
    r.seed = arg_u64(args[3], fname, "seed");
    r.offset = arg_u64(args[4], fname, "offset");
    return r;
}

PyObject* py_uniform(PyObject* const* args, Py_ssize_t nargs) {
    Operand out;
    RandomArgs r = parse_random(args, nargs, "uniform", out);
    if (!is_float_dtype(r.dtype)) value_error(std::string("uniform: needs a floating dtype, got ") + kDTypeName[r.dtype]);
    const double low = arg_double(args[5], "uniform", "low"), high = arg_double(args[6], "uniform", "high");
    const int64_t n = r.n;
    ReleaseGil nogil(n >= PARALLEL_THRESHOLD);
    if (r.dtype == kFloat64) {
        double* o = reinterpret_cast<double*>(r.out);
        const double range = high - low;
        for_blocks(n, 2, r.seed, r.offset, [&](int64_t j, const uint32_t* w) {
            for (int h = 0; h < 2; ++h) {
                const int64_t i = 2 * j + h;
                if (i < n) o[i] = low + range * (static_cast<double>(word64(w, h) >> 11) * 0x1.0p-53);
            }
        });
        return none();
    }
    const float lo = static_cast<float>(low), hi = static_cast<float>(high);
    const float range = hi - lo;
    TP_DISPATCH(r.dtype, T, if constexpr (is_floating<T> && !std::is_same_v<T, double>) {
        T* o = reinterpret_cast<T*>(r.out);
        for_blocks(n, 4, r.seed, r.offset, [&](int64_t j, const uint32_t* w) {
            for (int q = 0; q < 4; ++q) {
                const int64_t i = 4 * j + q;
                if (i < n) {
                    // Only as many bits as the dtype's significand holds, so that rounding to
                    // float16/bfloat16/float8 can never produce 1.0: float32 24, float16 11,
                    // bfloat16 8, a float8 its mantissa bits plus the implicit one.
                    constexpr int bits = significand_bits<T>::value;
                    const float u = static_cast<float>(w[q] >> (32 - bits)) * (1.0f / static_cast<float>(1u << bits));
                    o[i] = convert<T>(lo + range * u);
                }
            }
        });
    });
    return none();
}

PyObject* py_normal(PyObject* const* args, Py_ssize_t nargs) {
    Operand out;
    RandomArgs r = parse_random(args, nargs, "normal", out);
    if (!is_float_dtype(r.dtype)) value_error(std::string("normal: needs a floating dtype, got ") + kDTypeName[r.dtype]);
    const double mean = arg_double(args[5], "normal", "mean"), stdv = arg_double(args[6], "normal", "std");
    const int64_t n = r.n;
    ReleaseGil nogil(n >= PARALLEL_THRESHOLD);
    TP_DISPATCH(r.dtype, T, if constexpr (is_floating<T>) {
        T* o = reinterpret_cast<T*>(r.out);
        for_blocks(n, 4, r.seed, r.offset, [&](int64_t j, const uint32_t* w) {
            for (int pair = 0; pair < 2; ++pair) {
                const int64_t i = 4 * j + 2 * pair;
                if (i >= n) break;
                const double u1 = static_cast<double>((w[2 * pair] >> 8) + 1u) * 0x1.0p-24;
                const double u2 = static_cast<double>(w[2 * pair + 1] >> 8) * 0x1.0p-24;
                const double radius = std::sqrt(-2.0 * std::log(u1));
                const double theta = 6.283185307179586 * u2;
                o[i] = convert<T>(mean + stdv * (radius * std::cos(theta)));
                if (i + 1 < n) o[i + 1] = convert<T>(mean + stdv * (radius * std::sin(theta)));
            }
        });
    });
    return none();
}

PyObject* py_randint(PyObject* const* args, Py_ssize_t nargs) {
    Operand out;
    RandomArgs r = parse_random(args, nargs, "randint", out);
    const int64_t low = arg_int(args[5], "randint", "low"), high = arg_int(args[6], "randint", "high");
    const __int128 range128 = static_cast<__int128>(high) - low;
    if (range128 <= 0) value_error("randint: high must be greater than low");
    if (r.dtype == kBool && (low != 0 || high != 2)) value_error("randint: bool needs low=0 and high=2");
    const uint64_t range = static_cast<uint64_t>(range128);
    const int64_t n = r.n;
    ReleaseGil nogil(n >= PARALLEL_THRESHOLD);
    TP_DISPATCH(r.dtype, T, {
        T* o = reinterpret_cast<T*>(r.out);
        auto value = [low](uint64_t v) {
            return static_cast<int64_t>(static_cast<uint64_t>(low) + v);  // wraps like int128 then fits
        };
        if (range <= (uint64_t(1) << 32)) {
            for_blocks(n, 4, r.seed, r.offset, [&](int64_t j, const uint32_t* w) {
                for (int q = 0; q < 4; ++q) {
                    const int64_t i = 4 * j + q;
                    if (i < n) o[i] = convert<T>(value(w[q] % range));
                }
            });
        } else {
            for_blocks(n, 2, r.seed, r.offset, [&](int64_t j, const uint32_t* w) {
                for (int h = 0; h < 2; ++h) {
                    const int64_t i = 2 * j + h;
                    if (i < n) o[i] = convert<T>(value(word64(w, h) % range));
                }
            });
        }
    });
    return none();
}

}  // namespace

void register_random(std::vector<PyMethodDef>& methods) {
    methods.push_back(fast_method<py_uniform>("uniform", "uniform(dtype, out, n, seed, offset, low, high)."));
    methods.push_back(fast_method<py_normal>("normal", "normal(dtype, out, n, seed, offset, mean, std)."));
    methods.push_back(fast_method<py_randint>("randint", "randint(dtype, out, n, seed, offset, low, high)."));
}

}  // namespace tp
