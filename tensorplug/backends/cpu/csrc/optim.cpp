// adam_step: one Adam/AdamW update of a parameter in one pass (issue 14).
//
// Written with tensor ops, an Adam step launched about 15 kernels per parameter (each a full pass
// over memory, several allocating a temporary): 9 ms of a small CNN's step against PyTorch's
// 5.5. Here every element is read and written once. The arithmetic is the decomposition's
// (tensorplug/optim/_fused.py), operation by operation in the parameter's dtype, with every
// Python number rounded to that dtype first as the binary kernels do, so both agree closely.
//
//   adam_step(dtype, n, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, beta1, beta2, eps,
//             weight_decay, bias_correction1, bias_correction2_sqrt, decoupled)
// Operands are contiguous 1-d (n elements); max_exp_avg_sq may be None (no amsgrad); decoupled
// weight decay is AdamW's. A maximizing optimizer passes the negated gradient.
#include <cmath>
#include <vector>

#include "families.h"

namespace tp {

namespace {

template <class T> inline T maximum_nan(T a, T b) { return (std::isnan(a) || std::isnan(b)) ? NAN : (a > b ? a : b); }

template <class T>
void adam_T(int64_t n, T* p, const T* g_in, T* m, T* v, T* vmax, double lr, double beta1, double beta2, double eps,
            double wd, double bc1, double bc2_sqrt, bool decoupled) {
    const T decay = T(1 - lr * wd), wd_t = T(wd), w = T(1 - beta1), w_end = T(1 - (1 - beta1)), b2 = T(beta2),
            one_minus_b2 = T(1 - beta2), bc2 = T(bc2_sqrt), eps_t = T(eps), neg_step = T(-(lr / bc1));
    const bool lerp_from_start = std::abs(1 - beta1) < 0.5;  // lerp's formula choice, by its weight
    parallel_range(n, PARALLEL_THRESHOLD, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
            T g = g_in[i];
            T x = p[i];
            if (wd != 0) {
                if (decoupled) x = x * decay;
                else g = g + x * wd_t;
            }
            const T diff = g - m[i];
            const T mi = lerp_from_start ? m[i] + diff * w : g - diff * w_end;
            m[i] = mi;
            const T vi = v[i] * b2 + (g * g) * one_minus_b2;
            v[i] = vi;
            T second = vi;
            if (vmax) second = vmax[i] = maximum_nan(vmax[i], vi);
            const T denom = std::sqrt(second) / bc2 + eps_t;
            p[i] = x + (mi / denom) * neg_step;
        }
    });
}

PyObject* py_adam_step(PyObject* const* args, Py_ssize_t nargs) {
    const char* fname = "adam_step";
    check_nargs(nargs, 15, fname);
    int dtype = float_dtype(args[0], fname);
    int64_t shape[1] = {arg_int(args[1], fname, "n")};
    if (shape[0] < 0) value_error("adam_step: n must be >= 0");
    Operand p, g, m, v, vmax;
    parse_operand(args[2], dtype, 1, shape, p, fname, "param", false, true);
    parse_operand(args[3], dtype, 1, shape, g, fname, "grad", false, false);
    parse_operand(args[4], dtype, 1, shape, m, fname, "exp_avg", false, true);
    parse_operand(args[5], dtype, 1, shape, v, fname, "exp_avg_sq", false, true);
    const bool amsgrad = args[6] != Py_None;
    if (amsgrad) parse_operand(args[6], dtype, 1, shape, vmax, fname, "max_exp_avg_sq", false, true);
    for (const Operand* o : {&p, &g, &m, &v})
        if (shape[0] > 1 && o->strides[0] != 1) value_error("adam_step: operands must be contiguous");
    if (amsgrad && shape[0] > 1 && vmax.strides[0] != 1) value_error("adam_step: operands must be contiguous");
    const double lr = arg_double(args[7], fname, "lr"), beta1 = arg_double(args[8], fname, "beta1"),
                 beta2 = arg_double(args[9], fname, "beta2"), eps = arg_double(args[10], fname, "eps"),
                 wd = arg_double(args[11], fname, "weight_decay"), bc1 = arg_double(args[12], fname, "bias_correction1"),
                 bc2_sqrt = arg_double(args[13], fname, "bias_correction2_sqrt");
    const bool decoupled = arg_int(args[14], fname, "decoupled") != 0;
    if (shape[0] == 0) return none();
    ReleaseGil nogil(shape[0] >= PARALLEL_THRESHOLD);
    if (dtype == kFloat32)
        adam_T<float>(shape[0], reinterpret_cast<float*>(p.data), reinterpret_cast<const float*>(g.data),
                      reinterpret_cast<float*>(m.data), reinterpret_cast<float*>(v.data),
                      amsgrad ? reinterpret_cast<float*>(vmax.data) : nullptr, lr, beta1, beta2, eps, wd, bc1, bc2_sqrt,
                      decoupled);
    else
        adam_T<double>(shape[0], reinterpret_cast<double*>(p.data), reinterpret_cast<const double*>(g.data),
                       reinterpret_cast<double*>(m.data), reinterpret_cast<double*>(v.data),
                       amsgrad ? reinterpret_cast<double*>(vmax.data) : nullptr, lr, beta1, beta2, eps, wd, bc1,
                       bc2_sqrt, decoupled);
    return none();
}

}  // namespace

void register_optim(std::vector<PyMethodDef>& methods) {
    methods.push_back(fast_method<py_adam_step>(
        "adam_step", "adam_step(dtype, n, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, beta1, beta2, eps, "
                     "weight_decay, bias_correction1, bias_correction2_sqrt, decoupled): one Adam update in place."));
}

}  // namespace tp
