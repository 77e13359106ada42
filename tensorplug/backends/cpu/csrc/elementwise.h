// Inner loops shared by the elementwise families: one functor applied over a strided Loop, with
// contiguous and scalar-operand variants the compiler can vectorize.
#pragma once

#include "common.h"

namespace tp {

template <class O, class T, class F> void run_unary(const Loop<2>& L, F f) {
    L.run([&](char** p, int64_t n, const int64_t* s) {
        if (s[0] == static_cast<int64_t>(sizeof(O)) && s[1] == static_cast<int64_t>(sizeof(T))) {
            O* o = reinterpret_cast<O*>(p[0]);
            const T* a = reinterpret_cast<const T*>(p[1]);
            for (int64_t i = 0; i < n; ++i) o[i] = convert<O>(f(to_c(a[i])));
            return;
        }
        char* o = p[0];
        const char* a = p[1];
        for (int64_t i = 0; i < n; ++i)
            *reinterpret_cast<O*>(o + i * s[0]) = convert<O>(f(to_c(*reinterpret_cast<const T*>(a + i * s[1]))));
    });
}

template <class O, class T, class F> void run_binary(const Loop<3>& L, F f) {
    L.run([&](char** p, int64_t n, const int64_t* s) {
        constexpr int64_t so = sizeof(O), st = sizeof(T);
        if (s[0] == so) {
            O* o = reinterpret_cast<O*>(p[0]);
            const T* a = reinterpret_cast<const T*>(p[1]);
            const T* b = reinterpret_cast<const T*>(p[2]);
            if (s[1] == st && s[2] == st) {
                for (int64_t i = 0; i < n; ++i) o[i] = convert<O>(f(to_c(a[i]), to_c(b[i])));
                return;
            }
            if (s[1] == st && s[2] == 0) {
                const auto bv = to_c(*b);
                for (int64_t i = 0; i < n; ++i) o[i] = convert<O>(f(to_c(a[i]), bv));
                return;
            }
            if (s[1] == 0 && s[2] == st) {
                const auto av = to_c(*a);
                for (int64_t i = 0; i < n; ++i) o[i] = convert<O>(f(av, to_c(b[i])));
                return;
            }
        }
        char* o = p[0];
        const char* a = p[1];
        const char* b = p[2];
        for (int64_t i = 0; i < n; ++i)
            *reinterpret_cast<O*>(o + i * s[0]) = convert<O>(
                f(to_c(*reinterpret_cast<const T*>(a + i * s[1])), to_c(*reinterpret_cast<const T*>(b + i * s[2]))));
    });
}

}  // namespace tp
