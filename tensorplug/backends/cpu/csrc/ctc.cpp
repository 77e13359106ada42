// Fused kernels for the CTC loss and its gradient (issue 14), overriding the composite ops of
// tensorplug/nn/_ctc_loss.py, whose docstrings define what they compute:
//   ctc_loss(dtype, (T, N, C, S), blank, reduction, zero_infinity, out, log_probs, targets,
//            input_lengths, target_lengths)
//   ctc_loss_backward(dtype, (T, N, C, S), blank, reduction, zero_infinity, out, grad, log_probs,
//                     targets, input_lengths, target_lengths)
// log_probs (T, N, C) of any strides, targets int64 (N, S) (values past each target length are
// never read), lengths int64 (N,); reduction 0 none (out and grad (N,)), 1 mean, 2 sum (0-d).
// The backward's out is (T, N, C).
//
// The composite runs about fourteen dispatched kernels per frame over the whole batch (10x
// PyTorch on a word-sized batch); here each sample runs its alpha recursion (and for the gradient
// its beta recursion and the per-class occupancy) in one pass over its own frames, samples in
// parallel. The arithmetic is the composite's, in the input's dtype: log(e^a + e^b + e^c) shifted
// by the maximum, an emission that is NaN or +inf read as 0 by the recursions and making the
// sample's loss NaN, and the gradient (exp(lp) - exp(log(sum of alpha * beta over the class's
// positions) + nll - lp)) * scale before the input length, 0 after it.
#include <cmath>
#include <string>
#include <vector>

#include "families.h"
#include "simd.h"

namespace tp {

namespace {

template <class T> constexpr T kInfT = std::numeric_limits<T>::infinity();

// --- rows ----------------------------------------------------------------------------------
// The recursions and the gradient as loops over contiguous rows, eight float32 lanes at a time
// with AVX2 (the transcendentals were nearly all of the time); the scalar loops skip the exp of a
// -inf term (it adds an exact 0), so both give the composite's sums.

// out[i] = log(e^a[i] + e^b[i] + e^(c[i] + bias[i])) + add[i], shifted by the maximum clamped to
// the lowest finite value (all three -inf give -inf). No input is NaN or +inf.
template <class T>
void log_add3_scalar(const T* a, const T* b, const T* c, const T* bias, const T* add, T* out, int64_t n) {
    const T lowest = std::numeric_limits<T>::lowest();
    for (int64_t i = 0; i < n; ++i) {
        const T ai = a[i], bi = b[i], ci = c[i] + bias[i];
        const T m = std::max(std::max(std::max(ai, bi), ci), lowest);
        const T sum = (ai == -kInfT<T> ? T(0) : std::exp(ai - m)) + (bi == -kInfT<T> ? T(0) : std::exp(bi - m)) +
                      (ci == -kInfT<T> ? T(0) : std::exp(ci - m));
        out[i] = std::log(sum) + m + add[i];
    }
}

// out[i] = exp(x[i] - shift).
template <class T> void exp_scalar(const T* x, T shift, T* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = std::exp(x[i] - shift);
}

// PyTorch's gradient of one frame: out[c] = (exp(v) - exp(log(per_class[c]) + shift + nll - v)) *
// scale with v = lp[c].
template <class T> void gradient_scalar(const T* lp, const T* per_class, T shift, T nll, T scale, T* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const T v = lp[i];
        out[i] = (std::exp(v) - std::exp(std::log(per_class[i]) + shift + nll - v)) * scale;
    }
}

#ifdef TP_X86_SIMD
TP_AVX2 void log_add3_row_avx2(const float* a, const float* b, const float* c, const float* bias, const float* add,
                               float* out, int64_t n) {
    const __m256 lowest = _mm256_set1_ps(std::numeric_limits<float>::lowest());
    int64_t i = 0;
    for (; i < n; i += 8) {
        const int64_t k = std::min<int64_t>(8, n - i);
        const bool full = k == 8;
        const __m256 ai = full ? _mm256_loadu_ps(a + i) : lanes8::load_tail(a + i, k, -kInfF);
        const __m256 bi = full ? _mm256_loadu_ps(b + i) : lanes8::load_tail(b + i, k, -kInfF);
        const __m256 ci = _mm256_add_ps(full ? _mm256_loadu_ps(c + i) : lanes8::load_tail(c + i, k, -kInfF),
                                        full ? _mm256_loadu_ps(bias + i) : lanes8::load_tail(bias + i, k, 0.0f));
        const __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_max_ps(ai, bi), ci), lowest);
        const __m256 sum = _mm256_add_ps(_mm256_add_ps(lanes8::exp(_mm256_sub_ps(ai, m)), lanes8::exp(_mm256_sub_ps(bi, m))),
                                         lanes8::exp(_mm256_sub_ps(ci, m)));
        const __m256 r = _mm256_add_ps(_mm256_add_ps(lanes8::log(sum), m),
                                       full ? _mm256_loadu_ps(add + i) : lanes8::load_tail(add + i, k, 0.0f));
        if (full) _mm256_storeu_ps(out + i, r);
        else lanes8::store_tail(out + i, r, k);
    }
}

TP_AVX2 void exp_row_avx2(const float* x, float shift, float* out, int64_t n) {
    const __m256 s = _mm256_set1_ps(shift);
    for (int64_t i = 0; i < n; i += 8) {
        const int64_t k = std::min<int64_t>(8, n - i);
        if (k == 8) _mm256_storeu_ps(out + i, lanes8::exp(_mm256_sub_ps(_mm256_loadu_ps(x + i), s)));
        else lanes8::store_tail(out + i, lanes8::exp(_mm256_sub_ps(lanes8::load_tail(x + i, k, 0.0f), s)), k);
    }
}

TP_AVX2 void gradient_row_avx2(const float* lp, const float* per_class, float shift, float nll, float scale,
                               float* out, int64_t n) {
    const __m256 sh = _mm256_set1_ps(shift), z = _mm256_set1_ps(nll), g = _mm256_set1_ps(scale);
    for (int64_t i = 0; i < n; i += 8) {
        const int64_t k = std::min<int64_t>(8, n - i);
        const __m256 v = k == 8 ? _mm256_loadu_ps(lp + i) : lanes8::load_tail(lp + i, k, 0.0f);
        const __m256 pc = k == 8 ? _mm256_loadu_ps(per_class + i) : lanes8::load_tail(per_class + i, k, 1.0f);
        const __m256 occupancy = lanes8::exp(_mm256_sub_ps(_mm256_add_ps(_mm256_add_ps(lanes8::log(pc), sh), z), v));
        const __m256 r = _mm256_mul_ps(_mm256_sub_ps(lanes8::exp(v), occupancy), g);
        if (k == 8) _mm256_storeu_ps(out + i, r);
        else lanes8::store_tail(out + i, r, k);
    }
}

#endif

template <class T>
void log_add3_row(const T* a, const T* b, const T* c, const T* bias, const T* add, T* out, int64_t n) {
#ifdef TP_X86_SIMD
    if constexpr (std::is_same_v<T, float>) {
        if (have_avx2()) return log_add3_row_avx2(a, b, c, bias, add, out, n);
    }
#endif
    log_add3_scalar(a, b, c, bias, add, out, n);
}

template <class T> void exp_row(const T* x, T shift, T* out, int64_t n) {
#ifdef TP_X86_SIMD
    if constexpr (std::is_same_v<T, float>) {
        if (have_avx2()) return exp_row_avx2(x, shift, out, n);
    }
#endif
    exp_scalar(x, shift, out, n);
}

template <class T> void gradient_row(const T* lp, const T* per_class, T shift, T nll, T scale, T* out, int64_t n) {
#ifdef TP_X86_SIMD
    if constexpr (std::is_same_v<T, float>) {
        if (have_avx2()) return gradient_row_avx2(lp, per_class, shift, nll, scale, out, n);
    }
#endif
    gradient_scalar(lp, per_class, shift, nll, scale, out, n);
}

// The arguments both ops share, checked before any read: every length within T and S, every
// label inside a target length a class. `labels` gets each sample's extended labels, blank
// padded to width 2 S + 1.
struct CtcProblem {
    int64_t steps, batch, classes, longest, width, blank;
    int reduction;
    bool zero_infinity;
    std::vector<int64_t> input_lengths, target_lengths, labels;
};

void read_problem(CtcProblem& p, Operand& targets, Operand& input_lengths, Operand& target_lengths,
                  const char* fname) {
    const std::string name(fname);
    if (p.blank < 0 || p.blank >= p.classes)
        value_error(name + ": blank " + std::to_string(p.blank) + " is not a class of " + std::to_string(p.classes));
    const int64_t* IL = reinterpret_cast<const int64_t*>(input_lengths.data);
    const int64_t* TL = reinterpret_cast<const int64_t*>(target_lengths.data);
    const int64_t* TG = reinterpret_cast<const int64_t*>(targets.data);
    p.width = 2 * p.longest + 1;
    p.input_lengths.resize(p.batch);
    p.target_lengths.resize(p.batch);
    p.labels.assign(static_cast<size_t>(p.batch * p.width), p.blank);
    for (int64_t b = 0; b < p.batch; ++b) {
        const int64_t il = IL[b * input_lengths.strides[0]], tl = TL[b * target_lengths.strides[0]];
        if (il < 0 || il > p.steps)
            value_error(name + ": input length " + std::to_string(il) + " of sample " + std::to_string(b) +
                        " is outside [0, " + std::to_string(p.steps) + "]");
        if (tl < 0 || tl > p.longest)
            value_error(name + ": target length " + std::to_string(tl) + " of sample " + std::to_string(b) +
                        " is outside [0, " + std::to_string(p.longest) + "]");
        for (int64_t s = 0; s < tl; ++s) {
            const int64_t label = TG[b * targets.strides[0] + s * targets.strides[1]];
            if (label < 0 || label >= p.classes)
                raise(PyExc_IndexError, name + ": target " + std::to_string(label) + " of sample " +
                                            std::to_string(b) + " is out of bounds for " +
                                            std::to_string(p.classes) + " classes");
            p.labels[b * p.width + 2 * s + 1] = label;
        }
        p.input_lengths[b] = il;
        p.target_lengths[b] = tl;
    }
}

// Rows are computed over a multiple of this many positions (the padding -inf), so that the
// vector loops have no tails.
template <class T> constexpr int64_t kLanes = std::is_same_v<T, float> ? 8 : 1;
template <class T> int64_t padded_size(int64_t n) { return (n + kLanes<T> - 1) / kLanes<T> * kLanes<T>; }

// One sample: its log-probabilities lp[t * st + c * sc], extended labels and lengths, and the
// buffers of its recursions (reused from sample to sample by one thread).
template <class T> struct Sample {
    const T* lp;
    int64_t st, sc;
    const int64_t* labels;
    int64_t frames, positions;  // the input length; L = 2 * target length + 1
    bool poisoned = false;      // an emission it reads is NaN or +inf
    // Rows hold W = padded_size(L) positions, -inf past L. alpha: frames rows of 2 -inf pads
    // then W values (the pads are positions -2 and -1); skip: 0 where position s may be entered
    // from s - 2 (a label other than the label two back), else -inf; emissions: one frame's;
    // offsets: each position's label's offset in a frame.
    std::vector<T>& alpha;
    std::vector<T>& skip;
    std::vector<T>& emissions;
    std::vector<int64_t>& offsets;

    int64_t width() const { return padded_size<T>(positions); }
    int64_t stride() const { return width() + 2; }
    T* alpha_row(int64_t t) { return alpha.data() + t * stride() + 2; }

    // Frame t's log-probability of each extended position, NaN and +inf read as 0.
    const T* emit(int64_t t) {
        const T* row = lp + t * st;
        for (int64_t s = 0; s < positions; ++s) {
            const T v = row[offsets[s]];
            if (!(v < kInfT<T>)) poisoned = true;
            emissions[s] = v < kInfT<T> ? v : T(0);
        }
        return emissions.data();
    }

    // Fills alpha and returns the loss: inf where no path fits, NaN where the sample reads a NaN
    // or +inf emission.
    T forward() {
        const int64_t L = positions, W = width();
        if (frames == 0) return L == 1 ? T(0) : kInfT<T>;
        alpha.resize(static_cast<size_t>(frames * stride()));
        skip.assign(static_cast<size_t>(W), -kInfT<T>);
        emissions.assign(static_cast<size_t>(W), -kInfT<T>);
        offsets.resize(static_cast<size_t>(L));
        for (int64_t s = 0; s < L; ++s) {
            offsets[s] = labels[s] * sc;
            if (s >= 2 && labels[s] != labels[0] && labels[s] != labels[s - 2]) skip[s] = T(0);
        }
        for (int64_t t = 0; t < frames; ++t) alpha_row(t)[-1] = alpha_row(t)[-2] = -kInfT<T>;
        const T* e = emit(0);
        for (int64_t s = 0; s < W; ++s) alpha_row(0)[s] = s < 2 ? e[s] : -kInfT<T>;
        for (int64_t t = 1; t < frames; ++t) {
            const T* prev = alpha_row(t - 1);
            log_add3_row(prev, prev - 1, prev - 2, skip.data(), emit(t), alpha_row(t), W);
        }
        if (poisoned) return std::numeric_limits<T>::quiet_NaN();
        const T* last = alpha_row(frames - 1);
        const T end = last[L - 1], before = L > 1 ? last[L - 2] : -kInfT<T>;
        const T m = std::max(std::max(end, before), std::numeric_limits<T>::lowest());
        return -(std::log(std::exp(end - m) + std::exp(before - m)) + m);
    }
};

// Work per call above which the batch is split over threads and the GIL released.
int64_t chunks_for(int64_t work) { return work >= PARALLEL_THRESHOLD ? g_num_threads * CHUNKS_PER_THREAD : 1; }

template <class T>
void ctc_loss_T(const CtcProblem& p, Operand& out, Operand& a) {
    const T* A = reinterpret_cast<const T*>(a.data);
    std::vector<T> losses(static_cast<size_t>(p.batch));
    parallel_chunks(p.batch, chunks_for(p.steps * p.batch * p.width), [&](int64_t, int64_t b0, int64_t b1) {
        std::vector<T> alpha, skip, emissions;
        std::vector<int64_t> offsets;
        for (int64_t b = b0; b < b1; ++b) {
            Sample<T> x{A + b * a.strides[1], a.strides[0], a.strides[2], p.labels.data() + b * p.width,
                        p.input_lengths[b], 2 * p.target_lengths[b] + 1, false, alpha, skip, emissions, offsets};
            T nll = x.forward();
            if (p.zero_infinity && nll == kInfT<T>) nll = T(0);
            losses[b] = nll;
        }
    });
    T* O = reinterpret_cast<T*>(out.data);
    if (p.reduction == 0) {
        for (int64_t b = 0; b < p.batch; ++b) O[b * out.strides[0]] = losses[b];
        return;
    }
    double total = 0;
    for (int64_t b = 0; b < p.batch; ++b)
        total += p.reduction == 1 ? static_cast<double>(losses[b] / static_cast<T>(std::max<int64_t>(p.target_lengths[b], 1)))
                                  : static_cast<double>(losses[b]);
    *O = static_cast<T>(p.reduction == 1 ? total / static_cast<double>(p.batch) : total);
}

template <class T>
void ctc_loss_backward_T(const CtcProblem& p, Operand& out, Operand& grad, Operand& a) {
    const T* A = reinterpret_cast<const T*>(a.data);
    const T* G = reinterpret_cast<const T*>(grad.data);
    T* O = reinterpret_cast<T*>(out.data);
    const int64_t C = p.classes;
    const int64_t *as = a.strides, *os = out.strides;
    parallel_chunks(p.batch, chunks_for(p.steps * p.batch * (p.width + C)), [&](int64_t, int64_t b0, int64_t b1) {
        // The class rows padded (lp 0, per_class 0, results dropped), so that they have no tails.
        const int64_t classes_padded = padded_size<T>(C), widest = padded_size<T>(p.width);
        std::vector<T> alpha, skip, emissions, products(widest), per_class(classes_padded, T(0)),
            row(classes_padded, T(0)), result(classes_padded);
        std::vector<int64_t> offsets;
        // Two beta rows of W values then 2 -inf pads (positions W and W + 1), and skip moved
        // two positions back: position s may be entered from s + 2 backwards in time.
        std::vector<T> beta(2 * (widest + 2)), skip_back(widest);
        const bool direct = as[2] == 1 && os[2] == 1 && C == classes_padded;
        for (int64_t b = b0; b < b1; ++b) {
            T* sample_out = O + b * os[1];
            Sample<T> x{A + b * as[1], as[0], as[2], p.labels.data() + b * p.width, p.input_lengths[b],
                        2 * p.target_lengths[b] + 1, false, alpha, skip, emissions, offsets};
            const T nll = x.forward();
            const T scale = p.reduction == 0 ? G[b * grad.strides[0]]
                            : p.reduction == 1
                                ? *G / (static_cast<T>(std::max<int64_t>(p.target_lengths[b], 1)) * static_cast<T>(p.batch))
                                : *G;
            const int64_t L = x.positions, W = x.width(), frames = x.frames;
            const bool zeroed = p.zero_infinity && nll == kInfT<T>;
            if (!zeroed && frames > 0) {
                for (int64_t s = 0; s < W; ++s) skip_back[s] = s + 2 < L ? skip[s + 2] : -kInfT<T>;
                T* rows[2] = {beta.data(), beta.data() + W + 2};
                for (T* r : rows) r[W] = r[W + 1] = -kInfT<T>;
                for (int64_t t = frames - 1; t >= 0; --t) {
                    T* cur = rows[t % 2];
                    const T* next = rows[(t + 1) % 2];
                    const T* e = x.emit(t);  // -inf past L: so is beta there
                    if (t == frames - 1) {
                        for (int64_t s = 0; s < W; ++s) cur[s] = s >= L - 2 ? e[s] : -kInfT<T>;
                    } else {
                        log_add3_row(next, next + 1, next + 2, skip_back.data(), e, cur, W);
                    }
                    // log(alpha * beta) (both count the frame's emission), summed per class.
                    const T* alpha_t = x.alpha_row(t);
                    T shift = std::numeric_limits<T>::lowest();
                    for (int64_t s = 0; s < L; ++s) {
                        products[s] = alpha_t[s] + cur[s];
                        shift = products[s] > shift ? products[s] : shift;
                    }
                    exp_row(products.data(), shift, products.data(), L);
                    for (int64_t s = 0; s < L; ++s) per_class[x.labels[s]] += products[s];
                    const T* lp = x.lp + t * as[0];
                    T* o = sample_out + t * os[0];
                    if (!direct)
                        for (int64_t c = 0; c < C; ++c) row[c] = lp[c * as[2]];
                    gradient_row(direct ? lp : row.data(), per_class.data(), shift, nll, scale,
                                 direct ? o : result.data(), classes_padded);
                    if (!direct)
                        for (int64_t c = 0; c < C; ++c) o[c * os[2]] = result[c];
                    for (int64_t s = 0; s < L; ++s) per_class[x.labels[s]] = T(0);
                }
            }
            // Past the input length (and for a zeroed sample everywhere) the gradient is 0.
            for (int64_t t = zeroed ? 0 : frames; t < p.steps; ++t)
                for (int64_t c = 0; c < C; ++c) sample_out[t * os[0] + c * os[2]] = T(0);
        }
    });
}

// The arguments both entry points share, from position 1: (T, N, C, S), blank, reduction,
// zero_infinity.
void read_sizes(PyObject* const* args, CtcProblem& p, const char* fname) {
    int64_t sizes[MAX_DIMS];
    if (parse_shape(args[1], sizes, fname, "sizes") != 4)
        value_error(std::string(fname) + ": sizes must be (T, N, C, S)");
    for (int i = 0; i < 4; ++i)
        if (sizes[i] < 0) value_error(std::string(fname) + ": sizes must be >= 0");
    p.steps = sizes[0], p.batch = sizes[1], p.classes = sizes[2], p.longest = sizes[3];
    p.blank = arg_int(args[2], fname, "blank");
    const int64_t reduction = arg_int(args[3], fname, "reduction");
    if (reduction < 0 || reduction > 2)
        value_error(std::string(fname) + ": reduction must be 0 (none), 1 (mean) or 2 (sum)");
    p.reduction = static_cast<int>(reduction);
    p.zero_infinity = arg_int(args[4], fname, "zero_infinity") != 0;
}

void parse_inputs(PyObject* const* args, int dtype, CtcProblem& p, Operand& a, Operand& targets,
                  Operand& input_lengths, Operand& target_lengths, const char* fname) {
    const int64_t lp_shape[3] = {p.steps, p.batch, p.classes}, target_shape[2] = {p.batch, p.longest};
    parse_operand(args[0], dtype, 3, lp_shape, a, fname, "log_probs", false, false);
    parse_operand(args[1], kInt64, 2, target_shape, targets, fname, "targets", false, false);
    parse_operand(args[2], kInt64, 1, target_shape, input_lengths, fname, "input_lengths", false, false);
    parse_operand(args[3], kInt64, 1, target_shape, target_lengths, fname, "target_lengths", false, false);
    read_problem(p, targets, input_lengths, target_lengths, fname);
}

PyObject* py_ctc_loss(PyObject* const* args, Py_ssize_t nargs) {
    const char* fname = "ctc_loss";
    check_nargs(nargs, 10, fname);
    const int dtype = float_dtype(args[0], fname);
    CtcProblem p;
    read_sizes(args, p, fname);
    const int64_t out_shape[1] = {p.batch};
    Operand out, a, targets, input_lengths, target_lengths;
    parse_operand(args[5], dtype, p.reduction == 0 ? 1 : 0, out_shape, out, fname, "out", false, true);
    parse_inputs(args + 6, dtype, p, a, targets, input_lengths, target_lengths, fname);
    ReleaseGil nogil(p.steps * p.batch * p.width >= PARALLEL_THRESHOLD);
    if (dtype == kFloat32) ctc_loss_T<float>(p, out, a);
    else ctc_loss_T<double>(p, out, a);
    return none();
}

PyObject* py_ctc_loss_backward(PyObject* const* args, Py_ssize_t nargs) {
    const char* fname = "ctc_loss_backward";
    check_nargs(nargs, 11, fname);
    const int dtype = float_dtype(args[0], fname);
    CtcProblem p;
    read_sizes(args, p, fname);
    const int64_t lp_shape[3] = {p.steps, p.batch, p.classes}, grad_shape[1] = {p.batch};
    Operand out, grad, a, targets, input_lengths, target_lengths;
    parse_operand(args[5], dtype, 3, lp_shape, out, fname, "out", false, true);
    parse_operand(args[6], dtype, p.reduction == 0 ? 1 : 0, grad_shape, grad, fname, "grad", false, false);
    parse_inputs(args + 7, dtype, p, a, targets, input_lengths, target_lengths, fname);
    ReleaseGil nogil(p.steps * p.batch * (p.width + p.classes) >= PARALLEL_THRESHOLD);
    if (dtype == kFloat32) ctc_loss_backward_T<float>(p, out, grad, a);
    else ctc_loss_backward_T<double>(p, out, grad, a);
    return none();
}

}  // namespace

void register_ctc(std::vector<PyMethodDef>& methods) {
    methods.push_back(fast_method<py_ctc_loss>(
        "ctc_loss", "ctc_loss(dtype, (T, N, C, S), blank, reduction, zero_infinity, out, log_probs, targets, "
                    "input_lengths, target_lengths): reduction 0 none (out (N,)), 1 mean, 2 sum (out 0-d)."));
    methods.push_back(fast_method<py_ctc_loss_backward>(
        "ctc_loss_backward", "ctc_loss_backward(dtype, (T, N, C, S), blank, reduction, zero_infinity, out, grad, "
                             "log_probs, targets, input_lengths, target_lengths): the gradient of log_probs into "
                             "out (T, N, C); grad (N,) for reduction 0, else 0-d."));
}

}  // namespace tp
