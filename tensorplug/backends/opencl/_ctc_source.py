"""OpenCL C for the CTC loss and its gradient (issue 14): the family ``ctc``, float32 and float64.

The composite ops (``tensorplug/nn/_ctc_loss.py``, whose docstrings define the values) run about
fourteen launches per frame over the whole batch: 39x PyTorch's CPU time on PoCL for a word-sized
batch. Here one work-group owns one sample and walks its frames, its work-items sharing the
sample's extended label positions (blank, l1, blank, l2, ..., blank: ``L = 2 S + 1``) and, for
the gradient, its classes; a barrier separates one frame from the next. So a loss is one launch
and its gradient one more (the gradient recomputes alpha rather than keeping the forward's).

The recursions are the composite's, in the dtype: ``log(e^a + e^b + e^c)`` shifted by the maximum
clamped to the lowest finite value, and an emission that is NaN or +inf read as 0 and making the
sample's loss NaN. The gradient's sum of ``alpha * beta`` over the positions sharing a class is
shifted by that class's own maximum (the composite shifts by the frame's): positions of one
class are chained (``next_same``) once per call, so a frame costs O(C + L) and not O(C L).

Lengths and labels are checked on the device as they are read (the frontend checked them
before; these guard a direct call of the op): a bad one records an IndexError in the error flag,
raised at the next synchronization, and the sample is skipped without reading past a buffer.
"""
from __future__ import annotations

from ._ctc_lanes_source import lanes
from ._source import _FLOAT_LANES, preamble

__all__ = ["ctc", "GROUP_LIMIT"]

#: Work-items per sample at most (fewer where the sample's positions and classes are fewer).
GROUP_LIMIT = 128


_SOURCE = r"""
#define NEG_INF (-INFINITY)
/* The recursions never hold NaN (a NaN emission is read as 0), so a comparison is fmax here. */
#define TP_MAX(a, b) ((a) > (b) ? (a) : (b))
#define LOWEST (-TP_MAX_FINITE)

/* The sample's problem: its log-probabilities, its labels and lengths (read in ctc_setup). */
typedef struct {
    __global const T* lp;  /* frame t, class c at lp[t * st + c * sc] */
    long st, sc;
    __global const long* targets;  /* label k at targets[k * sts] */
    long sts, blank, frames, positions;
} Sample;

long ctc_label(const Sample* x, long s) { return (s & 1) ? x->targets[(s >> 1) * x->sts] : x->blank; }

/* Frame t's log-probability of position s's label; NaN and +inf read as 0 and flag the sample. */
T ctc_emission(const Sample* x, long t, long s, __local int* poisoned) {
    T v = x->lp[t * x->st + ctc_label(x, s) * x->sc];
    if (!(v < INFINITY)) {
        *poisoned = 1;
        return (T)0;
    }
    return v;
}

/* log(e^a + e^b + e^c) + e, shifted by the largest term (never below LOWEST: all -inf gives -inf). */
T ctc_log_add3(T a, T b, T c, T e) {
    T m = TP_MAX(TP_MAX(TP_MAX(a, b), c), LOWEST);
    return CTC_LOG(CTC_EXP(a - m) + CTC_EXP(b - m) + CTC_EXP(c - m)) + m + e;
}

/* Whether a path may jump from position s - 2 to s (skip the blank between two labels). */
int ctc_may_skip(const Sample* x, long s) {
    return s >= 2 && (s & 1) && ctc_label(x, s) != ctc_label(x, s - 2);
}

/* Reads and checks the sample's lengths and labels; 0 (and a recorded IndexError) when one is
   outside its range. Every work-item of the group returns the same. */
int ctc_setup(Sample* x, __local int* flags, __global const T* lp, long olp, long st, long sn, long sc,
              __global const long* targets, long otg, long stn, long sts, __global const long* il, long oil, long sil,
              __global const long* tl, long otl, long stl, long steps, long classes, long longest, long blank,
              __global long* err) {
    long b = get_group_id(0), lid = get_local_id(0), group = get_local_size(0);
    long frames = il[oil + b * sil], length = tl[otl + b * stl];
    x->lp = lp + olp + b * sn;
    x->st = st;
    x->sc = sc;
    x->targets = targets + otg + b * stn;
    x->sts = sts;
    x->blank = blank;
    x->frames = frames;
    x->positions = 2 * length + 1;
    if (lid == 0) {
        flags[0] = 0;  /* poisoned */
        flags[1] = 0;  /* bad */
        if (frames < 0 || frames > steps) { tp_raise(err, TP_ERR_INDEX, frames, 0, steps + 1); flags[1] = 1; }
        if (length < 0 || length > longest) { tp_raise(err, TP_ERR_INDEX, length, 1, longest + 1); flags[1] = 1; }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (flags[1]) return 0;
    for (long k = lid; k < length; k += group) {
        long label = x->targets[k * sts];
        if (label < 0 || label >= classes) { tp_raise(err, TP_ERR_INDEX, label, 2, classes); flags[1] = 1; }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return !flags[1];
}

/* alpha[t * W + s] for the sample's frames and positions (the rest unwritten); returns the
   negative log-likelihood: inf where no path fits, NaN where an emission read was NaN or +inf. */
T ctc_alphas(const Sample* x, __global T* alpha, long W, __local int* flags, __local T* result) {
    long lid = get_local_id(0), group = get_local_size(0), L = x->positions, frames = x->frames;
    if (frames > 0)
        for (long s = lid; s < L; s += group) alpha[s] = s < 2 ? ctc_emission(x, 0, s, flags) : NEG_INF;
    for (long t = 1; t < frames; ++t) {
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        __global const T* prev = alpha + (t - 1) * W;
        for (long s = lid; s < L; s += group) {
            T stay = prev[s], advance = s >= 1 ? prev[s - 1] : NEG_INF;
            T jump = ctc_may_skip(x, s) ? prev[s - 2] : NEG_INF;
            alpha[t * W + s] = ctc_log_add3(stay, advance, jump, ctc_emission(x, t, s, flags));
        }
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        T nll;
        if (frames == 0) {
            nll = L == 1 ? (T)0 : (T)INFINITY;
        } else {
            __global const T* last = alpha + (frames - 1) * W;
            T end = last[L - 1], before = L > 1 ? last[L - 2] : NEG_INF;
            T m = TP_MAX(TP_MAX(end, before), LOWEST);
            nll = -(CTC_LOG(CTC_EXP(end - m) + CTC_EXP(before - m)) + m);
        }
        *result = flags[0] ? (T)NAN : nll;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return *result;
}

/* Each sample's loss, with 0 for an infinite loss where zero_infinity; where mean_over (the
   batch size, 'mean') its share of the mean: divided by its target length (at least 1) and the
   batch size, so that the mean is the shares' sum (one launch after this rather than two). */
__kernel void ctc_loss(__global T* out, long oo, long so, __global T* alpha, long W,
                       __global const T* lp, long olp, long st, long sn, long sc,
                       __global const long* targets, long otg, long stn, long sts,
                       __global const long* il, long oil, long sil, __global const long* tl, long otl, long stl,
                       long steps, long classes, long longest, long blank, int zero_infinity, long mean_over,
                       __global long* err) {
    __local int flags[2];
    __local T result;
    Sample x;
    if (!ctc_setup(&x, flags, lp, olp, st, sn, sc, targets, otg, stn, sts, il, oil, sil, tl, otl, stl, steps, classes,
                   longest, blank, err))
        return;
    T nll = ctc_alphas(&x, alpha + get_group_id(0) * steps * W, W, flags, &result);
    if (get_local_id(0) == 0) {
        if (zero_infinity && nll == INFINITY) nll = (T)0;
        long length = (x.positions - 1) / 2;
        out[oo + get_group_id(0) * so] = mean_over ? nll / ((T)(length > 1 ? length : 1) * (T)mean_over) : nll;
    }
}

/* The gradient of the sample's log-probabilities, PyTorch's: per frame before the input length
   (exp(lp) - exp(log(sum over the class's positions of alpha * beta) + nll - lp)) * scale, 0 after
   it, and 0 everywhere for an infinite loss where zero_infinity. scale is grad[b] (reduction 0),
   grad / (max(length, 1) * N) (1, mean) or grad (2, sum). */
__kernel void ctc_loss_backward(__global T* out, long oo, long sot, long son, long soc,
                                __global const T* grad, long og, long sg, __global T* alpha, __global T* beta,
                                __global int* next_same, long W,
                                __global const T* lp, long olp, long st, long sn, long sc,
                                __global const long* targets, long otg, long stn, long sts,
                                __global const long* il, long oil, long sil, __global const long* tl, long otl,
                                long stl, long steps, long batch, long classes, long longest, long blank,
                                int zero_infinity, int reduction, __global long* err) {
    __local int flags[2];
    __local T result;
    Sample x;
    long b = get_group_id(0), lid = get_local_id(0), group = get_local_size(0);
    if (!ctc_setup(&x, flags, lp, olp, st, sn, sc, targets, otg, stn, sts, il, oil, sil, tl, otl, stl, steps, classes,
                   longest, blank, err))
        return;
    __global T* o = out + oo + b * son;
    long L = x.positions, frames = x.frames, length = (L - 1) / 2;
    alpha += b * steps * W;
    beta += b * 2 * W;
    next_same += b * W;
    /* The chain of each class's positions: next_same[s] = 2 (n + 1) + h, n the next position with
       s's label (-1 at the last) and h 1 at the first (the chain's head). */
    for (long s = lid; s < L; s += group) {
        long label = ctc_label(&x, s), next = -1, head = 1;
        for (long r = s - 1; r >= 0 && head; --r) head = ctc_label(&x, r) != label;
        for (long r = s + 1; r < L; ++r)
            if (ctc_label(&x, r) == label) { next = r; break; }
        next_same[s] = (int)(2 * (next + 1) + head);
    }
    T nll = ctc_alphas(&x, alpha, W, flags, &result);
    T g = grad[og + (reduction == 0 ? b * sg : 0)];
    T scale = reduction == 1 ? g / ((T)(length > 1 ? length : 1) * (T)batch) : g;
    int zeroed = zero_infinity && nll == INFINITY;
    long live = zeroed ? 0 : frames;
    for (long t = steps - 1; t >= live; --t)
        for (long c = lid; c < classes; c += group) o[t * sot + c * soc] = (T)0;
    for (long t = live - 1; t >= 0; --t) {
        __global T* cur = beta + (t & 1) * W;
        __global const T* next = beta + ((t + 1) & 1) * W;
        for (long s = lid; s < L; s += group) {
            T e = ctc_emission(&x, t, s, flags);
            if (t == frames - 1) {
                cur[s] = s >= L - 2 ? e : NEG_INF;
            } else {
                T stay = next[s], advance = s + 1 < L ? next[s + 1] : NEG_INF;
                T jump = s + 2 < L && ctc_may_skip(&x, s + 2) ? next[s + 2] : NEG_INF;
                cur[s] = ctc_log_add3(stay, advance, jump, e);
            }
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        /* Every class first as if no position had it (occupancy 0)... */
        __global const T* row = x.lp + t * st;
        for (long c = lid; c < classes; c += group) o[t * sot + c * soc] = CTC_EXP(row[c * sc]) * scale;
        barrier(CLK_GLOBAL_MEM_FENCE);
        /* ...then the classes of the sample's positions, each by the work-item of its chain's head. */
        __global const T* a = alpha + t * W;
        for (long s = lid; s < L; s += group) {
            if (!(next_same[s] & 1)) continue;
            T m = LOWEST, sum = 0;
            for (long r = s; r >= 0; r = next_same[r] / 2 - 1) m = TP_MAX(m, a[r] + cur[r]);
            for (long r = s; r >= 0; r = next_same[r] / 2 - 1) sum += CTC_EXP(a[r] + cur[r] - m);
            long c = ctc_label(&x, s);
            T v = row[c * sc];
            o[t * sot + c * soc] = (CTC_EXP(v) - CTC_EXP(CTC_LOG(sum) + m + nll - v)) * scale;
        }
        /* No barrier here: the next frame's beta overwrites the row this frame's beta read,
           before two barriers, and nothing of this frame's gradient. */
    }
}
"""


def ctc(dtype: str, fp64: bool) -> str:
    """The CTC kernels of float32 or float64: the work-group form here, then the lane form of
    ``_ctc_lanes_source`` (CPU devices)."""
    if dtype == "float32":
        # Inline exp and log (_source._FLOAT_LANES): PoCL's built-ins are calls, which were most
        # of the time.
        head = "typedef float T;\n#define TP_MAX_FINITE FLT_MAX\n" + _FLOAT_LANES
        head += "#define CTC_EXP(x) tp_fexp(x)\n#define CTC_LOG(x) tp_flog(x)\n"
    else:
        head = "typedef double T;\n#define TP_MAX_FINITE DBL_MAX\n#define CTC_EXP(x) exp(x)\n#define CTC_LOG(x) log(x)\n"
    return preamble(fp64, dtype) + head + _SOURCE + lanes(dtype)
