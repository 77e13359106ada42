"""OpenCL C for the whole-sequence recurrent ops (issue 14): one LSTM, GRU or Elman RNN layer
direction, forward and backward, each one launch over the whole sequence (the family
``recurrent``, float32 and float64).

The recurrence couples the hidden units of one batch row from step to step, never two batch rows:
so each work-item owns ``ROWS`` batch rows and walks every time step itself, and no step needs
another work-item's results (the decompositions' 1345 launches per LSTM forward become one, plus
the packing of the weight). Within a step the work-item computes its rows' product with W_hh
strip by strip, ``GROUP_VECTORS`` vectors of hidden units at a time, each for every gate group, and
applies the gates to the strip in the same pass (``*_cell`` below), following the decompositions
(``tensorplug/nn/_lstm_sequence.py``, ``_gru_sequence.py``, ``_rnn_sequence.py``) step by step.

Backward walks the steps in reverse the same way: step t's product is the next step's gate
gradients times W_hh (dh), then the gates' derivatives; a last pass (t = -1) gives grad_h0. It also
writes every step's previous hidden state into one (T, B, H) buffer, so that grad_w_hh is one matrix
product afterwards (the host runs the blocked matmul).

Written as _source.matmul_blocked is, for pip's PoCL 3.0 on the CPU, which calls rather than
inlines its built-ins: the k loop has operators only (``acc += x * w`` contracts to an FMA; a
vector built from adjacent elements is one load), and so do the gates in float32 (exp and tanh of
our own, below; float64 calls the built-ins once per vector). The weight is packed first (``rnn_pack``) into strips of K rows of the
strip's columns for every gate group, zero-padded past H, so that the k loop reads one contiguous
stream and never a lane past the matrix.
"""
from __future__ import annotations

from ._source import preamble

__all__ = ["recurrent", "ROWS", "VECTOR", "strip_width"]

#: Batch rows per work-item: 2 rows times 4 accumulator vectors per row (gate groups times
#: vectors) are 8 accumulators, which with the weight's vectors and a broadcast stay within
#: AVX2's 16 registers; more rows per item would leave too few items for two cores at batch 20.
ROWS = 2
#: Lanes per vector.
VECTOR = {"float32": 8, "float64": 4}
#: Accumulator vectors per row: gate groups times vectors of hidden units per strip.
_ROW_VECTORS = 4


def strip_width(dtype: str, groups: int) -> int:
    """Hidden units per strip of a product over ``groups`` gate groups (the packed weight's)."""
    return _ROW_VECTORS // groups * VECTOR[dtype]


def _product(groups: int, vectors: int, v: int) -> str:
    """The k loop of one strip: acc{g}_{r}_{q} (gate group g, row r, vector q of the strip) +=
    a{r}[k] * the packed weight's row k. ``wk`` starts at the strip, ``kk`` is the loop's length."""
    lanes = lambda base: ", ".join(f"wk[{base + i}]" for i in range(v))  # noqa: E731
    accs = [f"acc{g}_{r}_{q}" for g in range(groups) for r in range(ROWS) for q in range(vectors)]
    lines = [f"            VT {', '.join(a + ' = (VT)(0)' for a in accs)};",
             "            for (long k = 0; k < kk; ++k) {"]
    for g in range(groups):
        for q in range(vectors):
            lines.append(f"                VT w{g}_{q} = (VT)({lanes((g * vectors + q) * v)});")
    for r in range(ROWS):
        lines.append(f"                VT x{r} = (VT)(a{r}[k]);")
        lines.append("                " + " ".join(f"acc{g}_{r}_{q} += x{r} * w{g}_{q};"
                                                  for g in range(groups) for q in range(vectors)))
    lines += [f"                wk += {groups * vectors * v};", "            }"]
    return "\n".join(lines)


def _each_lane_vector(groups: int, vectors: int, v: int, call: str) -> str:
    """``call`` (a format string over ``accs``, ``r``) for every row of the block below B and every
    vector of the strip with lanes below H: ``b`` the row, ``j`` the first hidden unit, ``n`` the
    lanes that exist."""
    lines = []
    for r in range(ROWS):
        lines.append(f"            if (row0 + {r} < B) {{")
        for q in range(vectors):
            accs = ", ".join(f"acc{g}_{r}_{q}" for g in range(groups))
            lines.append(f"                {{ long j = s * {vectors * v} + {q * v}; long n = H - j;")
            lines.append(f"                  if (n > 0) {call.format(accs=accs, r=r)} }}")
        lines.append("            }")
    return "\n".join(lines)


def _rows(source: str) -> str:
    return "\n".join(f"    __global const T* a{r} = {source} + (row0 + {r} < B ? row0 + {r} : B - 1) * lda;"
                     for r in range(ROWS))


def _forward_kernel(name: str, groups: int, v: int, params: str, cell: str) -> str:
    """A forward kernel: per step, the product of the rows' previous hidden state (h0, or the
    previous step of hs) with the packed W_hh^T, and the cell ``cell`` on it."""
    vectors = _ROW_VECTORS // groups
    width = vectors * v
    return f"""
__kernel void {name}({params}, __global const T* wp, __global const T* h0, long oh0, __global T* hs, long ohs,
                     long T_, long B, long H, long items) {{
    long item = get_global_id(0);
    if (item >= items) return;  /* one work-item per group: nothing to vectorize across */
    long row0 = item * {ROWS}, strips = (H + {width - 1}) / {width}, lda = H, kk = H;
    for (long t = 0; t < T_; ++t) {{
        __global const T* prev = t ? hs + ohs + (t - 1) * B * H : h0 + oh0;
    {_rows("prev")}
        for (long s = 0; s < strips; ++s) {{
            __global const T* wk = wp + s * H * {groups * width};
{_product(groups, vectors, v)}
{_each_lane_vector(groups, vectors, v, cell)}
        }}
    }}
}}
"""


def _backward_kernel(name: str, gates: int, v: int, params: str, source: str, cell: str, final: str) -> str:
    """A backward kernel: steps T-1 .. 0, then t = -1 for grad_h0. Step t's product is the next
    step's gradient rows (``source``, (T, B, gates*H)) times the packed W_hh (none at T-1); the
    cell ``cell`` applies the gates' derivatives to it, ``final`` gives grad_h0 at t = -1."""
    vectors = _ROW_VECTORS
    width = vectors * v
    return f"""
__kernel void {name}({params}, __global const T* wp, __global const T* h0, long oh0, __global const T* hs, long ohs,
                     __global const T* ghs, long oghs, __global const T* ghn, long oghn, __global T* gh0, long ogh0,
                     __global T* hprev, long T_, long B, long H, long items) {{
    long item = get_global_id(0);
    if (item >= items) return;  /* one work-item per group: nothing to vectorize across */
    long row0 = item * {ROWS}, strips = (H + {width - 1}) / {width}, lda = {gates} * H;
    for (long t = T_ - 1; t >= -1; --t) {{
        long kk = t == T_ - 1 ? 0 : {gates} * H;  /* the last step has no later step to read */
    {_rows(f"{source} + (kk ? (t + 1) * B * lda : 0)")}
        for (long s = 0; s < strips; ++s) {{
            __global const T* wk = wp + s * lda * {width};
{_product(1, vectors, v)}
            if (t >= 0) {{
{_each_lane_vector(1, vectors, v, cell)}
            }} else {{
{_each_lane_vector(1, vectors, v, final)}
            }}
        }}
    }}
}}
"""


# The cells: what one vector of lanes j .. j+n-1 of batch row b does at step t, given the
# product's vectors. LDN/STN read and write the n lanes that exist (zeros past them). They follow
# the decompositions' formulas; PREV_H is the previous hidden state (h0 at t = 0). They are
# inlined into the kernels (a call per cell passed some twenty arguments on the stack and sent the
# other rows' accumulators through memory).
_CELLS = """
#define ROW(p, o, t, w) ((p) + (o) + ((t) * B + b) * (w) + j)
#define PREV_H (t ? ROW(hs, ohs, t - 1, H) : h0 + oh0 + b * H + j)

TP_INLINE VT tp_sigmoid(VT x) { return (VT)(1) / ((VT)(1) + tp_exp(-x)); }

TP_INLINE void lstm_forward_cell(VT a_i, VT a_f, VT a_g, VT a_o, __global const T* projected, long op, __global const T* c0,
                       long oc0, __global T* cs, long ocs, __global T* acts, long oacts, __global T* hs, long ohs,
                       long t, long B, long H, long b, long j, long n) {
    __global const T* p = ROW(projected, op, t, 4 * H);
    VT i = tp_sigmoid(LDN(p, n) + a_i), f = tp_sigmoid(LDN(p + H, n) + a_f);
    VT g = tp_tanh(LDN(p + 2 * H, n) + a_g), o = tp_sigmoid(LDN(p + 3 * H, n) + a_o);
    VT c = f * LDN(t ? ROW(cs, ocs, t - 1, H) : c0 + oc0 + b * H + j, n) + i * g;
    __global T* a = ROW(acts, oacts, t, 4 * H);
    STN(a, i, n); STN(a + H, f, n); STN(a + 2 * H, g, n); STN(a + 3 * H, o, n);
    STN(ROW(cs, ocs, t, H), c, n);
    STN(ROW(hs, ohs, t, H), o * tp_tanh(c), n);
}

TP_INLINE void lstm_backward_cell(VT acc, __global const T* c0, long oc0, __global const T* cs, long ocs,
                        __global const T* acts, long oacts, __global const T* gcn, long ogcn, __global T* gc0, long ogc0,
                        __global T* gp, long ogp, __global const T* h0, long oh0, __global const T* hs, long ohs,
                        __global const T* ghs, long oghs, __global const T* ghn, long oghn, __global T* hprev,
                        long t, long T_, long B, long H, long b, long j, long n) {
    /* dc is carried from step to step in grad_c0's rows (each row is only this item's) */
    __global T* carry = gc0 + ogc0 + b * H + j;
    VT dh = acc + LDN(ROW(ghs, oghs, t, H), n), dc;
    if (t == T_ - 1) {
        dh += LDN(ghn + oghn + b * H + j, n);
        dc = LDN(gcn + ogcn + b * H + j, n);
    } else {
        dc = LDN(carry, n);
    }
    __global const T* a = ROW(acts, oacts, t, 4 * H);
    VT i = LDN(a, n), f = LDN(a + H, n), g = LDN(a + 2 * H, n), o = LDN(a + 3 * H, n);
    VT tc = tp_tanh(LDN(ROW(cs, ocs, t, H), n));
    VT c_prev = LDN(t ? ROW(cs, ocs, t - 1, H) : c0 + oc0 + b * H + j, n);
    VT dct = dc + dh * o * ((VT)(1) - tc * tc);
    __global T* d = ROW(gp, ogp, t, 4 * H);
    STN(d, dct * g * i * ((VT)(1) - i), n);
    STN(d + H, dct * c_prev * f * ((VT)(1) - f), n);
    STN(d + 2 * H, dct * i * ((VT)(1) - g * g), n);
    STN(d + 3 * H, dh * tc * o * ((VT)(1) - o), n);
    STN(carry, dct * f, n);
    STN(ROW(hprev, 0, t, H), LDN(PREV_H, n), n);
}

TP_INLINE void gru_forward_cell(VT a_r, VT a_z, VT a_n, __global const T* projected, long op, __global const T* bhh, long obhh,
                      __global T* acts, long oacts, __global const T* h0, long oh0, __global T* hs, long ohs,
                      long t, long B, long H, long b, long j, long n) {
    __global const T* p = ROW(projected, op, t, 3 * H);
    __global const T* bias = bhh + obhh + j;
    VT hn = a_n + LDN(bias + 2 * H, n);
    VT r = tp_sigmoid(LDN(p, n) + (a_r + LDN(bias, n))), z = tp_sigmoid(LDN(p + H, n) + (a_z + LDN(bias + H, n)));
    VT nn = tp_tanh(LDN(p + 2 * H, n) + r * hn);
    VT h = ((VT)(1) - z) * nn + z * LDN(PREV_H, n);
    __global T* a = ROW(acts, oacts, t, 4 * H);
    STN(a, r, n); STN(a + H, z, n); STN(a + 2 * H, nn, n); STN(a + 3 * H, hn, n);
    STN(ROW(hs, ohs, t, H), h, n);
}

TP_INLINE void gru_backward_cell(VT acc, __global const T* acts, long oacts, __global T* gp, long ogp, __global T* drec,
                       __global const T* h0, long oh0, __global const T* hs, long ohs, __global const T* ghs, long oghs,
                       __global const T* ghn, long oghn, __global T* gh0, long ogh0, __global T* hprev,
                       long t, long T_, long B, long H, long b, long j, long n) {
    /* dh * z is carried from step to step in grad_h0's rows (each row is only this item's) */
    __global T* carry = gh0 + ogh0 + b * H + j;
    VT dh = acc + LDN(ROW(ghs, oghs, t, H), n) + LDN(t == T_ - 1 ? ghn + oghn + b * H + j : carry, n);
    __global const T* a = ROW(acts, oacts, t, 4 * H);
    VT r = LDN(a, n), z = LDN(a + H, n), nn = LDN(a + 2 * H, n), hn = LDN(a + 3 * H, n);
    VT h_prev = LDN(PREV_H, n);
    VT d_n = dh * ((VT)(1) - z) * ((VT)(1) - nn * nn);
    VT d_r = d_n * hn * r * ((VT)(1) - r);
    VT d_z = dh * (h_prev - nn) * z * ((VT)(1) - z);
    __global T* d = ROW(gp, ogp, t, 3 * H);
    STN(d, d_r, n); STN(d + H, d_z, n); STN(d + 2 * H, d_n, n);
    __global T* e = ROW(drec, 0, t, 3 * H);
    STN(e, d_r, n); STN(e + H, d_z, n); STN(e + 2 * H, d_n * r, n);
    STN(carry, dh * z, n);
    STN(ROW(hprev, 0, t, H), h_prev, n);
}

TP_INLINE void rnn_forward_cell(VT acc, __global const T* projected, long op, int tanh_act, __global T* hs, long ohs,
                      long t, long B, long H, long b, long j, long n) {
    VT pre = LDN(ROW(projected, op, t, H), n) + acc;
    /* relu keeps NaN and -0.0, as the relu op does */
    STN(ROW(hs, ohs, t, H), tanh_act ? tp_tanh(pre) : (pre < (VT)(0) ? (VT)(0) : pre), n);
}

TP_INLINE void rnn_backward_cell(VT acc, int tanh_act, __global T* gp, long ogp, __global const T* h0, long oh0,
                       __global const T* hs, long ohs, __global const T* ghs, long oghs, __global const T* ghn,
                       long oghn, __global T* hprev, long t, long T_, long B, long H, long b, long j, long n) {
    VT dh = acc + LDN(ROW(ghs, oghs, t, H), n);
    if (t == T_ - 1) dh += LDN(ghn + oghn + b * H + j, n);
    VT h = LDN(ROW(hs, ohs, t, H), n);
    /* tanh' = 1 - h^2; relu' = [h > 0], 0 at 0 as PyTorch's */
    STN(ROW(gp, ogp, t, H), tanh_act ? dh * ((VT)(1) - h * h) : (h > (VT)(0) ? dh : (VT)(0)), n);
    STN(ROW(hprev, 0, t, H), LDN(PREV_H, n), n);
}
"""


def _lane_io(v: int) -> str:
    """LDN(p, n) / STN(p, x, n): n of the V lanes at p (all when n >= V). A whole vector is one
    unaligned load or store through VTU, the vector type aligned as its elements (built-in
    vload/vstore are calls on PoCL 3.0, and LLVM 14 stored a vector built lane by lane as eight
    scalar stores); fewer lanes go one by one, zeros past n."""
    part = ", ".join(f"{i} < n ? p[{i}] : 0" for i in range(v))
    part_stores = " ".join(f"if ({i} < n) p[{i}] = x.s{i:x};" for i in range(v))
    return f"""
TP_INLINE VT tp_ldn(__global const T* p, long n) {{
    if (n >= {v}) return *(__global const VTU*)p;
    return (VT)({part});
}}
TP_INLINE void tp_stn(__global T* p, VT x, long n) {{
    if (n >= {v}) *(__global VTU*)p = x;
    else {{ {part_stores} }}
}}
#define LDN(p, n) tp_ldn((p), (n))
#define STN(p, x, n) tp_stn((p), (x), (n))
"""


#: e^x and tanh for float32 vectors with operators only, inlined: PoCL 3.0's exp and tanh are
#: calls (each sending the live vectors through memory). e^x: x = n ln2 + r with |r| <= ln2 / 2,
#: Cephes' degree-5 polynomial for e^r (about 1 ulp, as csrc/simd.h's exp8), 2^n written into
#: the exponent bits; x is clamped to [-87, 88], where 2^n stays a normal number (e^-87 is far
#: below float32's resolution of the 1 it is added to in a sigmoid). Rounding x / ln2 to n adds
#: and subtracts 1.5 * 2^23 (convert_int8 is a call too). tanh: (1 - e^-2|x|) / (1 + e^-2|x|)
#: with x's sign; below |x| = 1/16, where that difference cancels, x - x^3/3 + 2x^5/15. NaN stays
#: NaN through both. The three changes (these, the inlined cells and LDN/STN's vector accesses)
#: took an LSTM layer's forward kernel (35 steps, batch 20, hidden 64) from 0.85 to 0.61 ms
#: (medians of 40 alternating launches, busy machine).
_FLOAT_MATH = """
TP_INLINE VT tp_exp(VT x) {
    x = x < (VT)(-87.0f) ? (VT)(-87.0f) : x;
    x = x > (VT)(88.0f) ? (VT)(88.0f) : x;
    VT shifted = x * (VT)(1.44269504088896341f) + (VT)(12582912.0f);
    int8 n = as_int8(shifted) - (int8)(0x4B400000);
    VT fn = shifted - (VT)(12582912.0f);
    VT r = x - fn * (VT)(0.693359375f);
    r = r - fn * (VT)(-2.12194440e-4f);
    VT y = (VT)(1.9875691500e-4f);
    y = y * r + (VT)(1.3981999507e-3f);
    y = y * r + (VT)(8.3334519073e-3f);
    y = y * r + (VT)(4.1665795894e-2f);
    y = y * r + (VT)(1.6666665459e-1f);
    y = y * r + (VT)(5.0000001201e-1f);
    y = y * (r * r) + r + (VT)(1.0f);
    return y * as_float8((n + (int8)(127)) << 23);
}
TP_INLINE VT tp_tanh(VT x) {
    VT ax = x < (VT)(0) ? -x : x;
    VT e = tp_exp(ax * (VT)(-2.0f));
    VT t = ((VT)(1.0f) - e) / ((VT)(1.0f) + e);
    VT x2 = x * x;
    VT series = ax * ((VT)(1.0f) + x2 * ((VT)(-1.0f / 3.0f) + x2 * (VT)(2.0f / 15.0f)));
    t = ax < (VT)(0.0625f) ? series : t;
    return x < (VT)(0) ? -t : t;
}
"""
#: float64 keeps the built-ins: a polynomial to double precision is longer, and float64 is for
#: accuracy here, not speed.
_DOUBLE_MATH = "#define tp_exp(x) exp(x)\n#define tp_tanh(x) tanh(x)\n"


def recurrent(dtype: str, fp64: bool) -> str:
    """The recurrent kernels of a float32 or float64 dtype."""
    t = {"float32": "float", "float64": "double"}[dtype]
    v = VECTOR[dtype]
    head = (preamble(fp64, dtype) + "#pragma OPENCL FP_CONTRACT ON\n"  # helpers.cl turns it off; an FMA here
            + f"typedef {t} T;\ntypedef {t}{v} VT;\ntypedef {t}{v} VTU __attribute__((aligned(sizeof({t}))));\n"
            + "#define TP_INLINE __attribute__((always_inline))\n" + _lane_io(v)
            + (_FLOAT_MATH if dtype == "float32" else _DOUBLE_MATH) + _CELLS)
    pack = """
/* dst[strip][k][group][lane] = the weight's element (k, group, strip * width + lane), 0 past H,
   for a source read at strides (sk, sg, sj): W_hh^T's groups for forward, W_hh for backward.
   One work-item per run of width lanes, k varying fastest between work-items (forward reads
   W_hh down its columns: sk is 1 there). An element per work-item spent three 64-bit divisions
   on each, 0.12 ms for an LSTM's 64 x 256 weight. */
__kernel void rnn_pack(__global T* dst, __global const T* src, long os, long K, long G, long H, long sk, long sg,
                       long sj, long width, long n) {
    long i = get_global_id(0);
    if (i < n) {
        long k = i % K, rest = i / K;
        long g = rest % G, strip = rest / G;
        __global T* d = dst + ((strip * K + k) * G + g) * width;
        __global const T* p = src + os + k * sk + g * sg;
        for (long lane = 0, j = strip * width; lane < width; ++lane, ++j) d[lane] = j < H ? p[j * sj] : (T)0;
    }
}
"""
    kernels = [
        _forward_kernel("lstm_forward", 4, v, "__global const T* projected, long op, __global const T* c0, long oc0, "
                        "__global T* cs, long ocs, __global T* acts, long oacts",
                        "lstm_forward_cell({accs}, projected, op, c0, oc0, cs, ocs, acts, oacts, hs, ohs, t, B, H, "
                        "row0 + {r}, j, n);"),
        _forward_kernel("gru_forward", 3, v, "__global const T* projected, long op, __global const T* bhh, long obhh, "
                        "__global T* acts, long oacts",
                        "gru_forward_cell({accs}, projected, op, bhh, obhh, acts, oacts, h0, oh0, hs, ohs, t, B, H, "
                        "row0 + {r}, j, n);"),
        _forward_kernel("rnn_forward", 1, v, "__global const T* projected, long op, int tanh_act",
                        "rnn_forward_cell({accs}, projected, op, tanh_act, hs, ohs, t, B, H, row0 + {r}, j, n);"),
        _backward_kernel("lstm_backward", 4, v, "__global const T* c0, long oc0, __global const T* cs, long ocs, "
                         "__global const T* acts, long oacts, __global const T* gcn, long ogcn, __global T* gc0, "
                         "long ogc0, __global T* gp, long ogp", "gp + ogp",
                         "lstm_backward_cell({accs}, c0, oc0, cs, ocs, acts, oacts, gcn, ogcn, gc0, ogc0, gp, ogp, "
                         "h0, oh0, hs, ohs, ghs, oghs, ghn, oghn, hprev, t, T_, B, H, row0 + {r}, j, n);",
                         "STN(gh0 + ogh0 + (row0 + {r}) * H + j, {accs}, n);"),
        _backward_kernel("gru_backward", 3, v, "__global const T* acts, long oacts, __global T* gp, long ogp, "
                         "__global T* drec", "drec",
                         "gru_backward_cell({accs}, acts, oacts, gp, ogp, drec, h0, oh0, hs, ohs, ghs, oghs, ghn, "
                         "oghn, gh0, ogh0, hprev, t, T_, B, H, row0 + {r}, j, n);",
                         "{{ __global T* g = gh0 + ogh0 + (row0 + {r}) * H + j; STN(g, LDN(g, n) + {accs}, n); }}"),
        _backward_kernel("rnn_backward", 1, v, "int tanh_act, __global T* gp, long ogp", "gp + ogp",
                         "rnn_backward_cell({accs}, tanh_act, gp, ogp, h0, oh0, hs, ohs, ghs, oghs, ghn, oghn, hprev, "
                         "t, T_, B, H, row0 + {r}, j, n);",
                         "STN(gh0 + ogh0 + (row0 + {r}) * H + j, {accs}, n);"),
    ]
    return head + pack + "".join(kernels)
