"""OpenCL C for the CTC loss and its gradient on CPU devices (issue 14): a sample per work-item,
its extended label positions eight at a time in vector lanes.

PoCL compiles a work-group's work-items as loops between barriers, which does not pay for one
sample's few dozen positions (``_ctc_source``), and a work-item per sample ran every exp and log
of the recursion as scalar code: 2-3x PyTorch's CPU time. Positions of one frame depend only on
the previous frame, so a ``float8`` (``double8``) holds eight of them: the previous row is read
at ``s``, ``s - 1`` and ``s - 2`` (alpha) or ``s``, ``s + 1`` and ``s + 2`` (beta) as unaligned
vector loads from rows padded with -inf, and each lane's emission is gathered through a table of
the positions' classes. The spare lanes past the sample's last position read the blank's class
and are never stored where a kept position reads them (alpha reads lower positions; beta's
rows hold -inf there).

The values and rules are ``_ctc_source``'s (its ``Sample``, ``ctc_label`` and ``ctc_may_skip``
are used here, its ``ctc_setup``'s checks repeated for a lone work-item); the gradient sums
``alpha * beta`` over each class's positions in passes per frame: each class's maximum
(scalar), the shifted exponentials (vector), each class's sum (scalar), and the classes' values
(vector), the sample's distinct classes numbered once per call ("slots"). A step of the
recursions costs two exponentials and a logarithm of a vector for eight positions. Helpers are
inlined by hand (``always_inline``), with operators only: pip's PoCL 3.0 leaves calls in place,
and ``select``, ``vload8`` and ``any`` were calls that took half of the forward's time.
"""
from __future__ import annotations

from ._source import lanewise

__all__ = ["lanes", "LANES"]

#: Positions per vector: the kernels are written for eight (CTC_IOTA, CTC_ANY, the gather).
LANES = 8

# float8 exp and log with operators only (built-ins, select, vload8 and convert_int8 included, are
# calls on pip's PoCL 3.0: see _source.matmul_blocked), the steps of _source._FLOAT_LANES's tp_fexp
# and tp_flog lane for lane, but for two conversions: a float is rounded to an int, and an int
# made a float, through the bits of 1.5 * 2^23 (exact below 2^22), so n is rounded half to even.
_FLOAT8_FUNCTIONS = r"""
#pragma OPENCL FP_CONTRACT ON
#define CTC_ROUNDER 12582912.0f
CTC_INLINE float8 ctc_exp8(float8 x) {
    int8 high = x > 88.72283935546875f, low = x < -103.97208404541016f, nan = x != x;
    float8 xc = high ? (float8)88.72283935546875f : (low ? (float8)-103.97208404541016f : x);
    xc = nan ? (float8)0.0f : xc;
    float8 shifted = xc * 1.44269504088896341f + CTC_ROUNDER;
    int8 n = as_int8(shifted) - 0x4B400000;
    float8 nf = shifted - CTC_ROUNDER;
    float8 r = (xc - nf * 0.693359375f) - nf * -2.12194440e-4f;
    float8 y = (float8)1.9875691500e-4f;
    y = y * r + 1.3981999507e-3f; y = y * r + 8.3334519073e-3f; y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f; y = y * r + 5.0000001201e-1f;
    y = (y * (r * r) + r) + 1.0f;
    int8 n1 = n >> 1, n2 = n - n1;
    y = (y * as_float8((n1 + 127) << 23)) * as_float8((n2 + 127) << 23);
    y = high ? (float8)INFINITY : (low ? (float8)0.0f : y);
    return nan ? x : y;
}
CTC_INLINE float8 ctc_log8(float8 x) {
    int8 sub = x < 1.17549435e-38f;
    int8 bits = as_int8(sub ? x * 8388608.0f : x);
    float8 e = as_float8((((bits >> 23) & 0xff) - 126) + 0x4B400000) - CTC_ROUNDER;
    e = e - (sub ? (float8)23.0f : (float8)0.0f);
    float8 m = as_float8((bits & 0x007fffff) | 0x3f000000);
    int8 low = m < 0.707106781186547524f;
    e = low ? e - 1.0f : e;
    m = low ? (m + m) - 1.0f : m - 1.0f;
    float8 z = m * m;
    float8 p = (float8)7.0376836292e-2f;
    p = p * m - 1.1514610310e-1f; p = p * m + 1.1676998740e-1f; p = p * m - 1.2420140846e-1f;
    p = p * m + 1.4249322787e-1f; p = p * m - 1.6668057665e-1f; p = p * m + 2.0000714765e-1f;
    p = p * m - 2.4999993993e-1f; p = p * m + 3.3333331174e-1f;
    float8 y = (m * z) * p + e * -2.12194440e-4f;
    y = y - 0.5f * z;
    float8 r = (m + y) + e * 0.693359375f;
    r = x == 0.0f ? (float8)-INFINITY : (x == INFINITY ? x : r);
    return ((x < 0.0f) | (x != x)) ? (float8)NAN : r;
}
#pragma OPENCL FP_CONTRACT OFF
"""

_INLINE = "#define CTC_INLINE __attribute__((always_inline))\n"

# Whole vectors as one unaligned load or store each, through types aligned as their elements
# (vload8 and vstore8 are calls on PoCL 3.0); a comparison's mask is VI, a vector of TI.
_ACCESS = r"""
typedef VT VTU __attribute__((aligned(sizeof(T))));
typedef VI VIU __attribute__((aligned(sizeof(TI))));
#define CTC_LOAD(p) (*(__global const VTU*)(p))
#define CTC_STORE(p, v) (*(__global VTU*)(p) = (v))
#define CTC_MASK(p) (*(__global const VIU*)(p))
#define CTC_ANY(m) (((m).s0 | (m).s1 | (m).s2 | (m).s3 | (m).s4 | (m).s5 | (m).s6 | (m).s7) != 0)
typedef VI VM;
"""

_SOURCE = r"""
#define CTC_IOTA ((VI)(0, 1, 2, 3, 4, 5, 6, 7))
/* Lanes s0 .. s0 + 7 that are below n. */
#define CTC_BELOW(s0, n) ((CTC_IOTA + (VI)(s0)) < (VI)(n))

CTC_INLINE VT ctc_lane_max(VT a, VT b) { return a > b ? a : b; }

/* log(e^a + e^b + e^c) + e per lane, shifted by the largest term m, whose own e^0 is the 1:
   two exponentials rather than three (the recursions' most frequent step). Where all three are
   -inf the result is -inf, as ctc_log_add3's (the shifted terms would be NaN there). */
CTC_INLINE VT ctc_lane_log_add3(VT a, VT b, VT c, VT e) {
    VT high = ctc_lane_max(a, b), low = a > b ? b : a;
    VT m = ctc_lane_max(high, c), middle = high > c ? c : high;
    VT sum = CTC_VLOG((VT)1 + CTC_VEXP(middle - m) + CTC_VEXP(low - m)) + m + e;
    return m == (VT)NEG_INF ? (VT)NEG_INF : sum;
}

/* The frame row's values at the eight classes of labels[0..8). */
CTC_INLINE VT ctc_gather(__global const T* row, long sc, __global const TI* labels) {
    return (VT)(row[labels[0] * sc], row[labels[1] * sc], row[labels[2] * sc], row[labels[3] * sc],
                row[labels[4] * sc], row[labels[5] * sc], row[labels[6] * sc], row[labels[7] * sc]);
}

/* Eight values of a row at stride sc from p. */
CTC_INLINE VT ctc_strided(__global const T* p, long sc) {
    return sc == 1 ? CTC_LOAD(p) : (VT)(p[0], p[sc], p[2 * sc], p[3 * sc], p[4 * sc], p[5 * sc], p[6 * sc], p[7 * sc]);
}

/* The emissions of eight positions, NaN and +inf read as 0; one of them in a counted lane
   (counted) flags the sample, as ctc_emission does. */
CTC_INLINE VT ctc_lane_emission(__global const T* row, long sc, __global const TI* labels, VM counted, int* poisoned) {
    VT v = ctc_gather(row, sc, labels);
    VM bad = ~(v < (VT)INFINITY);
    if (CTC_ANY(bad & counted)) *poisoned = 1;
    return bad ? (VT)0 : v;
}

/* Checks sample b's lengths and labels as ctc_setup does (0 and an IndexError in err when one is
   outside its range), then fills its tables of P + 8 entries: label[s], its class (the blank
   past the last position, so that spare lanes read a real class), and skip[s], -1 where a path
   may jump from s - 2 to s. */
int ctc_lane_setup(Sample* x, __global TI* label, __global TI* skip, long P, long b, __global const T* lp, long olp,
                   long st, long sn, long sc, __global const long* targets, long otg, long stn, long sts,
                   __global const long* il, long oil, long sil, __global const long* tl, long otl, long stl,
                   long steps, long classes, long longest, long blank, __global long* err) {
    long frames = il[oil + b * sil], length = tl[otl + b * stl];
    int bad = 0;
    if (frames < 0 || frames > steps) { tp_raise(err, TP_ERR_INDEX, frames, 0, steps + 1); bad = 1; }
    if (length < 0 || length > longest) { tp_raise(err, TP_ERR_INDEX, length, 1, longest + 1); bad = 1; }
    if (bad) return 0;
    x->lp = lp + olp + b * sn;
    x->st = st;
    x->sc = sc;
    x->targets = targets + otg + b * stn;
    x->sts = sts;
    x->blank = blank;
    x->frames = frames;
    x->positions = 2 * length + 1;
    for (long k = 0; k < length; ++k) {
        long c = x->targets[k * sts];
        if (c < 0 || c >= classes) { tp_raise(err, TP_ERR_INDEX, c, 2, classes); bad = 1; }
    }
    if (bad) return 0;
    for (long s = 0; s < P + 8; ++s) {
        int kept = s < x->positions;
        label[s] = (TI)(kept ? ctc_label(x, s) : blank);
        skip[s] = kept && ctc_may_skip(x, s) ? -1 : 0;
    }
    return 1;
}

/* alpha's rows (row t at alpha + (t % rows) * R, position s at [s + 2] after two -inf) for the
   sample's frames; returns the negative log-likelihood as ctc_alphas does. */
T ctc_lane_alphas(const Sample* x, __global T* alpha, long R, long rows, __global const TI* label,
                  __global const TI* skip) {
    long L = x->positions, frames = x->frames, sc = x->sc;
    int poisoned = 0;
    if (frames == 0) return L == 1 ? (T)0 : (T)INFINITY;
    for (long r = 0; r < rows && r < frames; ++r) alpha[r * R] = alpha[r * R + 1] = NEG_INF;
    __global T* first = alpha + 2;
    for (long s0 = 0; s0 < L; s0 += 8) {
        VM counted = CTC_BELOW(s0, 2);
        VT e = ctc_lane_emission(x->lp, sc, label + s0, counted, &poisoned);
        CTC_STORE(first + s0, counted ? e : (VT)NEG_INF);
    }
    for (long t = 1; t < frames; ++t) {
        __global const T* prev = alpha + ((t - 1) % rows) * R + 2;
        __global T* cur = alpha + (t % rows) * R + 2;
        __global const T* row = x->lp + t * x->st;
        for (long s0 = 0; s0 < L; s0 += 8) {
            VT jump = CTC_MASK(skip + s0) ? CTC_LOAD(prev + s0 - 2) : (VT)NEG_INF;
            VT e = ctc_lane_emission(row, sc, label + s0, CTC_BELOW(s0, L), &poisoned);
            CTC_STORE(cur + s0, ctc_lane_log_add3(CTC_LOAD(prev + s0), CTC_LOAD(prev + s0 - 1), jump, e));
        }
    }
    __global const T* last = alpha + ((frames - 1) % rows) * R + 2;
    T end = last[L - 1], before = L > 1 ? last[L - 2] : NEG_INF;
    T m = TP_MAX(TP_MAX(end, before), LOWEST);
    T nll = -(CTC_LOG(CTC_EXP(end - m) + CTC_EXP(before - m)) + m);
    return poisoned ? (T)NAN : nll;
}

/* ctc_loss's values (as the work-group kernel's), a work-item per sample; alpha holds two rows
   of R per sample, tables 2 (P + 8) integers (TI) per sample: label and skip. */
__kernel void ctc_loss_lanes(__global T* out, long oo, long so, __global T* alpha, __global TI* tables, long P,
                             long R, __global const T* lp, long olp, long st, long sn, long sc,
                             __global const long* targets, long otg, long stn, long sts,
                             __global const long* il, long oil, long sil, __global const long* tl, long otl, long stl,
                             long steps, long classes, long longest, long blank, int zero_infinity, long mean_over,
                             __global long* err) {
    long b = get_global_id(0);
    Sample x;
    __global TI* label = tables + b * 2 * (P + 8);
    if (!ctc_lane_setup(&x, label, label + P + 8, P, b, lp, olp, st, sn, sc, targets, otg, stn, sts, il, oil, sil,
                        tl, otl, stl, steps, classes, longest, blank, err))
        return;
    T nll = ctc_lane_alphas(&x, alpha + b * 2 * R, R, 2, label, label + P + 8);
    if (zero_infinity && nll == INFINITY) nll = (T)0;
    long length = (x.positions - 1) / 2;
    out[oo + b * so] = mean_over ? nll / ((T)(length > 1 ? length : 1) * (T)mean_over) : nll;
}

/* ctc_loss_backward's values, a work-item per sample. Per sample: alpha holds steps rows of R;
   work two rows of beta, one of alpha * beta (then its shifted exponentials), and 2 (P + 8)
   values, each class slot's maximum and sum (see below); tables 4 (P + 8) integers: label, skip,
   slot (the slot of position s's class) and slot_class (slot k's class). The slots number the
   sample's distinct classes in order of first position; spare lanes use slot P, never stored. */
__kernel void ctc_loss_backward_lanes(__global T* out, long oo, long sot, long son, long soc,
                                      __global const T* grad, long og, long sg, __global T* alpha, __global T* work,
                                      __global TI* tables, long P, long R,
                                      __global const T* lp, long olp, long st, long sn, long sc,
                                      __global const long* targets, long otg, long stn, long sts,
                                      __global const long* il, long oil, long sil, __global const long* tl, long otl,
                                      long stl, long steps, long batch, long classes, long longest, long blank,
                                      int zero_infinity, int reduction, __global long* err) {
    long b = get_global_id(0), E = P + 8;
    Sample x;
    __global TI* label = tables + b * 4 * E;
    __global TI* skip = label + E;
    __global TI* slot = skip + E;
    __global TI* slot_class = slot + E;
    if (!ctc_lane_setup(&x, label, skip, P, b, lp, olp, st, sn, sc, targets, otg, stn, sts, il, oil, sil, tl, otl,
                        stl, steps, classes, longest, blank, err))
        return;
    __global T* o = out + oo + b * son;
    long L = x.positions, frames = x.frames, length = (L - 1) / 2, slots = 0;
    alpha += b * steps * R;
    work += b * (3 * R + 2 * E);
    __global T* ab = work + 2 * R + 2;
    __global T* top = work + 3 * R;
    __global T* total = top + E;
    /* Spare lanes and slots: class blank, maximum 0, sum 1 (finite values, never stored). */
    for (long k = 0; k < E; ++k) {
        slot[k] = (TI)P;
        slot_class[k] = (TI)blank;
        top[k] = 0;
        total[k] = 1;
    }
    for (long s = 0; s < L; ++s) {
        long r = 0;
        while (r < s && label[r] != label[s]) ++r;
        if (r < s) {
            slot[s] = slot[r];
        } else {
            slot[s] = (TI)slots;
            slot_class[slots++] = label[s];
        }
    }
    T nll = ctc_lane_alphas(&x, alpha, R, steps, label, skip);
    T g = grad[og + (reduction == 0 ? b * sg : 0)];
    T scale = reduction == 1 ? g / ((T)(length > 1 ? length : 1) * (T)batch) : g;
    long live = zero_infinity && nll == INFINITY ? 0 : frames;
    for (long t = steps - 1; t >= live; --t)
        for (long c = 0; c < classes; ++c) o[t * sot + c * soc] = (T)0;
    /* Both beta rows -inf: positions a frame does not store read as no path. */
    for (long k = 0; k < 2 * R; ++k) work[k] = NEG_INF;
    int poisoned = 0;
    for (long t = live - 1; t >= 0; --t) {
        __global T* cur = work + (t & 1) * R + 2;
        __global const T* next = work + ((t + 1) & 1) * R + 2;
        __global const T* a = alpha + t * R + 2;
        __global const T* row = x.lp + t * st;
        for (long s0 = 0; s0 < L; s0 += 8) {
            VM kept = CTC_BELOW(s0, L);
            VT e = ctc_lane_emission(row, sc, label + s0, kept, &poisoned), v;
            if (t == frames - 1) {
                v = (kept & ~CTC_BELOW(s0, L - 2)) ? e : (VT)NEG_INF;
            } else {
                VT jump = CTC_MASK(skip + s0 + 2) ? CTC_LOAD(next + s0 + 2) : (VT)NEG_INF;
                v = kept ? ctc_lane_log_add3(CTC_LOAD(next + s0), CTC_LOAD(next + s0 + 1), jump, e) : (VT)NEG_INF;
            }
            CTC_STORE(cur + s0, v);
            CTC_STORE(ab + s0, CTC_LOAD(a + s0) + v);
        }
        /* Each class's sum of alpha * beta, shifted by its own maximum: the maxima, ... */
        for (long k = 0; k < slots; ++k) {
            top[k] = LOWEST;
            total[k] = 0;
        }
        for (long s = 0; s < L; ++s) top[slot[s]] = TP_MAX(top[slot[s]], ab[s]);
        /* ...the shifted exponentials (spare lanes: -inf - 0), and the sums. */
        for (long s0 = 0; s0 < L; s0 += 8)
            CTC_STORE(ab + s0, CTC_VEXP(CTC_LOAD(ab + s0) - ctc_gather(top, 1, slot + s0)));
        for (long s = 0; s < L; ++s) total[slot[s]] += ab[s];
        /* Every class first as if no position had it (occupancy 0)... */
        long c = 0;
        for (; c + 8 <= classes; c += 8) {
            VT value = CTC_VEXP(ctc_strided(row + c * sc, sc)) * scale;
            __global T* p = o + t * sot + c * soc;
            if (soc == 1) {
                CTC_STORE(p, value);
            } else {
                p[0] = value.s0; p[soc] = value.s1; p[2 * soc] = value.s2; p[3 * soc] = value.s3;
                p[4 * soc] = value.s4; p[5 * soc] = value.s5; p[6 * soc] = value.s6; p[7 * soc] = value.s7;
            }
        }
        for (; c < classes; ++c) o[t * sot + c * soc] = CTC_EXP(row[c * sc]) * scale;
        /* ...then the sample's classes, eight slots at a time (stored through the ab row). */
        for (long k0 = 0; k0 < slots; k0 += 8) {
            VT v = ctc_gather(row, sc, slot_class + k0);
            VT occupied = CTC_VEXP(CTC_VLOG(CTC_LOAD(total + k0)) + CTC_LOAD(top + k0) + nll - v);
            CTC_STORE(ab + k0, (CTC_VEXP(v) - occupied) * scale);
        }
        for (long k = 0; k < slots; ++k) o[t * sot + slot_class[k] * soc] = ab[k];
    }
}
"""


def lanes(dtype: str) -> str:
    """The lane kernels of float32 or float64 (after ``_ctc_source``'s definitions)."""
    # Tables hold an integer of the values' width, so that a skip row loads as the mask of a
    # comparison of VT (int8 for float8, long8 for double8).
    if dtype == "float32":
        head = "typedef float8 VT;\ntypedef int TI;\ntypedef int8 VI;\n" + _INLINE + _FLOAT8_FUNCTIONS
        head += "#define CTC_VEXP(x) ctc_exp8(x)\n#define CTC_VLOG(x) ctc_log8(x)\n"
    else:
        # Lane by lane: a double8 is 512 bits, which must not reach PoCL's library (lanewise).
        head = "typedef double8 VT;\ntypedef long TI;\ntypedef long8 VI;\n" + _INLINE + lanewise("VT", LANES, "exp", "log")
        head += "#define CTC_VEXP(x) lanewise_exp(x)\n#define CTC_VLOG(x) lanewise_log(x)\n"
    return head + _ACCESS + _SOURCE
