"""OpenCL C for the fused composite ops (relu, softmax, cross_entropy, layer_norm, max pooling,
the convolution helpers, Adam, SGD), one program per dtype: the family ``fused``.

The kernels follow their ops' decompositions step by step in the compute type (float32 for
float16 and bfloat16, stored once at the end), so NaN and inf go where the decompositions send
them. Sums accumulate in ``ACC`` (double where the device has float64, as the reductions do).

PoCL runs each work-group on one core and vectorizes across its work-items only for straight
code, so the kernels give each work-item a run of work with its own vector loop: a row (softmax
over the last dim, one cross-entropy sample, one layer_norm row; ``VW`` elements per vector
load, in small groups so that few rows still spread over the cores), a row of pooling windows
(``VW`` windows per vector; the scalar max_pool2d that CUDA also runs takes 16), a plane of a
pooling gradient, one row of im2col/col2im, or a CONV_ROWS x CW block of a convolution's results
kept in vectors. Elementwise kernels (relu, Adam, SGD) are one work-item per element.
"""
from __future__ import annotations

import re

from ._source import (_FLOAT_LANES, DTYPES, float_exp_shifted, _dims, _array, _main_type, accumulator, guarded, kind,
                      lanewise, preamble, strided_runs)

#: Elements per vector load in the row kernels.
VW = 8

__all__ = ["fused", "VW", "ROW_GROUP", "CONV_ROWS", "CONV_COLS"]

#: Rows (output positions or taps) and vector columns (channels) each work-item of the
#: convolution kernels computes: 6 x 16 float32 are 12 8-wide accumulators, which with two
#: vectors of the weight and a broadcast fill AVX2's 16 registers (8 rows spilled).
CONV_ROWS = 6
CONV_COLS = {"float32": 16, "float64": 8}

#: Work-group size of the row kernels: small, so that few rows still make several groups.
ROW_GROUP = 4

#: Vectors of exps a row kernel adds in the compute type before adding the block into ACC: at
#: most 16 roundings of float32 per lane before the double sum (PyTorch's float32 softmax adds a
#: whole row in float32).
EXP_BLOCK = 16


def _vector_io(dtype: str, acc: str) -> str:
    """``LDV(p, i)`` / ``STV(p, i, v)``: VW elements at p + i as a compute-type vector ``CV``.

    Written with operators and element accesses only: pip's PoCL 3.0 does not inline its kernel
    library (see _source.matmul_blocked), so ``vload8``, ``convert_double8`` and ``fmax`` were a
    call each per vector; a vector built from adjacent elements is one load, a cast per lane a
    conversion instruction. ``TP_MAX(m, v)`` is fmax for an m that is never NaN (the rows' running
    maximum starts at -inf): a NaN v leaves m, as fmax does."""
    compute = DTYPES[dtype][1]
    to_acc = ", ".join(f"({acc})(v).s{q:x}" for q in range(VW))
    to_c = ", ".join(f"({compute})(v).s{q:x}" for q in range(VW))
    text = (f"typedef {compute}{VW} CV;\ntypedef {acc}{VW} ACCV;\n#define TO_ACCV(v) ((ACCV)({to_acc}))\n"
            f"#define TO_CV(v) ((CV)({to_c}))\n#define TP_MAX(m, v) ((v) > (m) ? (v) : (m))\n"
            f"{compute} tp_hmax(CV v) {{\n    {compute} m = v.s0;\n"
            + "".join(f"    m = TP_MAX(m, v.s{q:x});\n" for q in range(1, VW)) + "    return m;\n}\n")
    if dtype in ("float32", "float64"):
        loads = ", ".join(f"(p)[(i) + {q}]" for q in range(VW))
        text += f"#define LDV(p, i) ((CV)({loads}))\n"
        text += "void tp_stv(__global T* p, long i, CV v) {\n"
        text += "".join(f"    p[i + {q}] = v.s{q:x};\n" for q in range(VW)) + "}\n"
        text += "#define STV(p, i, v) tp_stv((p), (i), (v))\n"
    else:
        # 16-bit floats: VW scalar conversions. (PoCL 3.1's vload_half8 faults on an address that
        # is not 16-byte aligned, which the spec allows; bfloat16 has no vector conversion.)
        loads = ", ".join(f"LD(p, (i) + {q})" for q in range(VW))
        text += f"#define LDV(p, i) ((CV)({loads}))\n"
        text += "void tp_stv(__global T* p, long i, CV v) {\n"
        text += "".join(f"    ST(p, i + {q}, v.s{q:x});\n" for q in range(VW)) + "}\n"
        text += "#define STV(p, i, v) tp_stv((p), (i), (v))\n"
    return text


def _vector_exp(compute: str) -> str:
    """``TP_VEXP_SHIFTED(v)``: exp of a ``CV`` vector of values <= 0 (x minus its row's
    maximum), for the row kernels. float lanes take _source's operator-only exp for such values,
    written on the whole vector: PoCL 3.0's ``exp`` is a call into its library once per vector,
    around which the row loops kept their accumulators in memory. double keeps the built-in.

    ``LIB_VEXP(v)``/``LIB_VLOG(v)``: the library's exp and log of a ``CV`` vector, lane by lane
    for double, whose 8 lanes are 512 bits (``_source.lanewise`` says why)."""
    if compute != "float":
        return (lanewise("CV", VW, "exp", "log")
                + "#define LIB_VEXP(v) lanewise_exp(v)\n#define LIB_VLOG(v) lanewise_log(v)\n"
                "#define TP_VEXP_SHIFTED(v) LIB_VEXP(v)\n")
    return ("#pragma OPENCL FP_CONTRACT ON\n" + float_exp_shifted("tp_vexp_shifted", f"float{VW}", f"int{VW}")
            + "#pragma OPENCL FP_CONTRACT OFF\n#define TP_VEXP_SHIFTED(v) tp_vexp_shifted(v)\n"
            "#define LIB_VEXP(v) exp(v)\n#define LIB_VLOG(v) log(v)\n")


def _hsum() -> str:
    body = "ACC s = 0;\n" + "".join(f"    s += v.s{q:x};\n" for q in range(VW))
    return f"ACC tp_hsum(ACCV v) {{\n    {body}    return s;\n}}\n"


def _rows() -> str:
    """Row helpers over ``size`` elements at ``base`` with stride ``st`` (vector loads at stride 1).
    The maximum ignores NaN: a NaN reaches the sum of exps, which makes the whole row NaN, as the
    decompositions' amax would."""
    return f"""
C tp_row_max(__global const T* x, long base, long size, long st) {{
    C m = -INFINITY;
    long j = 0;
    if (st == 1) {{
        CV mv = (CV)(-INFINITY);
        for (; j + {VW} <= size; j += {VW}) {{ CV v = LDV(x, base + j); mv = TP_MAX(mv, v); }}
        m = tp_hmax(mv);
    }}
    for (; j < size; ++j) {{ C v = LD(x, base + j * st); m = TP_MAX(m, v); }}
    return m;
}}
/* sum(exp(x - m)); with y, the exps (with shifted, the arguments x - m) are stored there too
   (contiguous rows only). Contiguous rows add blocks of {EXP_BLOCK} vectors in the compute type
   first, then each block's sum in ACC: the conversion and the wide add per vector were a fifth of
   the loop. */
ACC tp_row_expsum(__global const T* x, long base, long size, long st, C m, __global T* y, long ybase, int shifted) {{
    ACC s = 0;
    long j = 0;
    if (st == 1) {{
        ACCV sv = (ACCV)(0);
        CV mv = (CV)(m);
        for (; j + {EXP_BLOCK * VW} <= size; j += {EXP_BLOCK * VW}) {{
            CV block = (CV)(0);
            for (int u = 0; u < {EXP_BLOCK * VW}; u += {VW}) {{
                CV d = LDV(x, base + j + u) - mv, e = TP_VEXP_SHIFTED(d);
                if (y) STV(y, ybase + j + u, shifted ? d : e);
                block += e;
            }}
            sv += TO_ACCV(block);
        }}
        for (; j + {VW} <= size; j += {VW}) {{
            CV d = LDV(x, base + j) - mv, e = TP_VEXP_SHIFTED(d);
            if (y) STV(y, ybase + j, shifted ? d : e);
            sv += TO_ACCV(e);
        }}
        s = tp_hsum(sv);
    }}
    for (; j < size; ++j) {{
        C d = LD(x, base + j * st) - m, e = exp(d);
        if (y) ST(y, ybase + j, shifted ? d : e);
        s += (ACC)e;
    }}
    return s;
}}
"""


def fused(dtype: str, fp64: bool) -> str:
    """The fused kernels of one dtype (every numeric dtype gets relu and max pooling; floating
    dtypes get the rest)."""
    k = kind(dtype)
    acc = accumulator(dtype, fp64)
    src = [preamble(fp64, dtype), _main_type(dtype, fp64), f"typedef {acc} ACC;\n"]
    # v != v rather than isnan(v): pip's PoCL 3.0 does not inline its built-ins (see
    # _source.matmul_blocked), and pooling tests it twice per tap.
    isnan = "((v) != (v))" if k == "f" else "0"
    lowest = {"f": "-INFINITY", "b": "0"}.get(k)
    if lowest is None:
        lowest = f"(C)({'0' if k == 'u' else '1UL << (BITS - 1)'})"
    relu = "x" if k == "u" else "(x < 0 ? (C)0 : x)"
    strided = f"int nd, {_dims('d')}, {_dims('so')}"
    relu_body = guarded(f"""
        C x = LD(a, oa + i);
        ST(o, oo + i, {relu});""")
    src.append(f"""
#define TP_ISNAN(v) ({isnan})
/* relu: 0 where x < 0, x elsewhere (NaN and -0.0 pass through, as the decomposition's where). */
__kernel void relu_c(__global T* o, long oo, __global const T* a, long oa, long n) {{
    long i = get_global_id(0);
    {relu_body}
}}
__kernel void relu_s(__global T* o, long oo, __global const T* a, long oa, long n, {strided}, {_dims('sa')}) {{
    {_array('sh', 'd')} {_array('st_o', 'so')} {_array('st_a', 'sa')}
    {strided_runs((("io", "st_o", "oo"), ("ia", "st_a", "oa")), f'''
        C x = LD(a, ia);
        ST(o, io, {relu});''')}
}}

/* Max pooling. A window's maximum: its taps inside the input in row-major order, a larger value
   or any NaN replacing the running one (PyTorch 2.13's `val > max || isnan(val)`: the first of
   equal maxima, the last of several NaN); the first tap inside the input when nothing beats it
   (every value -inf: PyTorch's rule, and the CPU's); index h * W + w, or -1 for a window with no
   tap inside the input. The floating dtypes have a faster kernel on PoCL (max_pool2d_rows); this
   one is for the other dtypes and for CUDA, which compiles the fused program's scalar items. */
#define TP_POOL_CHUNK 16
#define TP_BEATS(v, m, b) ((b) < 0 || (v) > (m) || TP_ISNAN(v))

/* The maxima of up to TP_POOL_CHUNK windows of one output row (oh, ow0 ...): the tap loops
   outside, the windows inside, so that the inner loop is over neighbouring windows. */
void tp_pool_row(__global const T* x, long base, long sxh, long sxw, int H, int W, int OW, int oh, int ow0, int kh,
                 int kw, int sh, int sw, int ph, int pw, int dh, int dw, C* m, long* best) {{
    int count = min(TP_POOL_CHUNK, OW - ow0);
    for (int q = 0; q < TP_POOL_CHUNK; ++q) {{ m[q] = {lowest}; best[q] = -1; }}
    for (int ki = 0; ki < kh; ++ki) {{
        int ih = oh * sh - ph + ki * dh;
        if (ih < 0 || ih >= H) continue;
        __global const T* row = x + base + ih * sxh;
        for (int kj = 0; kj < kw; ++kj) {{
            int iw0 = ow0 * sw - pw + kj * dw;
            for (int q = 0; q < count; ++q) {{
                int iw = iw0 + q * sw;
                if (iw < 0 || iw >= W) continue;
                C v = LD(row, iw * sxw);
                if (TP_BEATS(v, m[q], best[q])) {{ m[q] = v; best[q] = ih * W + iw; }}
            }}
        }}
    }}
}}

/* One work-item per TP_POOL_CHUNK outputs of one row of a (N, C, OH, OW) contiguous result (and
   its int64 indices). */
__kernel void max_pool2d(__global T* o, long oo, __global long* ix, long oi, int with_indices, __global const T* x,
                         long ox, long sxn, long sxc, long sxh, long sxw, long C_, int H, int W, int OH, int OW,
                         int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw, long n) {{
    long i = get_global_id(0);
    if (i >= n) return;
    int chunks = (OW + TP_POOL_CHUNK - 1) / TP_POOL_CHUNK;
    int ow0 = (int)(i % chunks) * TP_POOL_CHUNK;
    long row = i / chunks;
    int oh = (int)(row % OH);
    long plane = row / OH;
    C m[TP_POOL_CHUNK];
    long best[TP_POOL_CHUNK];
    tp_pool_row(x, ox + (plane / C_) * sxn + (plane % C_) * sxc, sxh, sxw, H, W, OW, oh, ow0, kh, kw, sh, sw, ph, pw,
                dh, dw, m, best);
    int count = min(TP_POOL_CHUNK, OW - ow0);
    long at = row * OW + ow0;
    for (int q = 0; q < count; ++q) ST(o, oo + at + q, m[q]);
    if (with_indices) for (int q = 0; q < count; ++q) ix[oi + at + q] = best[q];
}}

/* dst (B, R, CC) contiguous = src (B, R, CC) at any strides (a transposed matrix, for one), one
   16 x 16 tile per work-item, read along whichever of the two dims src has closer together:
   the generic strided copy spends a division per dim on every element and writes a transposed
   matrix's rows one element each. */
__kernel void copy_tiles(__global T* dst, __global const T* src, long soff, long ssb, long ssr, long ssc, long R,
                         long CC, long items) {{
    long i = get_global_id(0);
    if (i >= items) return;
    long rblocks = (R + 15) / 16, cblocks = (CC + 15) / 16;
    long c0 = (i % cblocks) * 16, t = i / cblocks, r0 = (t % rblocks) * 16, b = t / rblocks;
    int rn = (int)min(16L, R - r0), cn = (int)min(16L, CC - c0);
    __global const T* s0 = src + soff + b * ssb + r0 * ssr + c0 * ssc;
    C tile[16][16];
    if (ssr < ssc) {{
        for (int c = 0; c < cn; ++c)
            for (int r = 0; r < rn; ++r) tile[r][c] = LD(s0, r * ssr + c * ssc);
    }} else {{
        for (int r = 0; r < rn; ++r)
            for (int c = 0; c < cn; ++c) tile[r][c] = LD(s0, r * ssr + c * ssc);
    }}
    __global T* d0 = dst + (b * R + r0) * CC + c0;
    for (int r = 0; r < rn; ++r)
        for (int c = 0; c < cn; ++c) ST(d0, r * CC + c, tile[r][c]);
}}

/* im2col: col[n, (c * KH + ki) * KW + kj, oh * OW + ow] (at the given strides) is the input at
   that tap, 0 in the padding. One row (n, k, oh) per work-item. */
__kernel void im2col(__global T* col, long ocol, long scn, long sck, long scl, __global const T* x, long ox, long sxn,
                     long sxc, long sxh, long sxw, long C_, int H, int W, int OH, int OW, int kh, int kw, int sh,
                     int sw, int ph, int pw, int dh, int dw, long rows) {{
    long i = get_global_id(0);
    if (i >= rows) return;
    long K = C_ * kh * kw;
    int oh = (int)(i % OH);
    long t = i / OH, kk = t % K, b = t / K;
    int kj = (int)(kk % kw), ki = (int)((kk / kw) % kh);
    long c = kk / (kw * kh);
    int ih = oh * sh - ph + ki * dh;
    __global T* dst = col + ocol + b * scn + kk * sck + (long)oh * OW * scl;
    if (ih < 0 || ih >= H) {{
        for (int ow = 0; ow < OW; ++ow) ST(dst, ow * scl, (C)0);
        return;
    }}
    __global const T* src = x + ox + b * sxn + c * sxc + ih * sxh;
    int iw0 = kj * dw - pw;
    for (int ow = 0; ow < OW; ++ow) {{
        int iw = iw0 + ow * sw;
        ST(dst, ow * scl, (iw >= 0 && iw < W) ? LD(src, iw * sxw) : (C)0);
    }}
}}
""")
    if k == "f":
        src.append(_floating(dtype, acc))
        src.append(_pooling(dtype))
        src.append(_smooth_l1())
        if dtype in _GELU_DTYPES:
            src.append(_gelu(DTYPES[dtype][1] == "float"))
    if dtype in CONV_COLS:
        src.append(_convolutions(dtype))
    if dtype == "int64":
        src.append(_INDEX_EXTREMES)
    return "".join(src)


# index_extremes (frontend/ops/_index_extremes.py) of a contiguous int64 index: one work-item in
# order, for the targets of a loss (its range check in one launch, where the decomposition takes six).
_INDEX_EXTREMES = """
/* o[0], o[1] = the least and the greatest of n > 0 values, those equal to ignore counted as 0
   where has_ignore. */
__kernel void index_extremes(__global long* o, long oo, __global const long* a, long oa, long n, int has_ignore,
                             long ignore) {
    if (get_global_id(0) != 0) return;
    long low = 0, high = 0;
    for (long j = 0; j < n; ++j) {
        long v = a[oa + j];
        v = (has_ignore && v == ignore) ? 0 : v;
        low = (j == 0 || v < low) ? v : low;
        high = (j == 0 || v > high) ? v : high;
    }
    o[oo] = low;
    o[oo + 1] = high;
}
"""


def _pooling(dtype: str) -> str:
    """Max and average pooling of the floating dtypes on PoCL, and the pooling gradients (issue 14).

    The forward kernels take one output row per work-item and ``VW`` neighbouring windows per
    vector: each tap is a vector of VW elements (one per window, gathered at the stride), compared
    or added lane by lane under a mask for the taps in the padding or past the row's end. PoCL
    keeps the lanes in registers; with scalar windows in private arrays (max_pool2d) the same
    work ran 2-3x slower. The gradients take one (N, C) plane per work-item: zeros, then each
    output's gradient added to the elements it came from in output order, which is PyTorch's
    order (so the sums round as PyTorch's CPU kernels round)."""
    compute = DTYPES[dtype][1]
    lanes = f"{'long' if compute == 'double' else 'int'}{VW}"  # a comparison of two CV gives this type
    lane_ids = ", ".join(str(q) for q in range(VW))
    gathered = ", ".join(f"LD(r, (long)c.s{q:x} * sxw)" for q in range(VW))
    max_stores = "".join(f"""
        if (ow + {q} < OW) {{ ST(orow, ow + {q}, m.s{q:x}); if (with_indices) irow[ow + {q}] = best.s{q:x}; }}"""
                         for q in range(VW))
    divisors = ", ".join(f"(C)count.s{q:x}" for q in range(VW))
    avg_stores = "".join(f"""
        if (ow + {q} < OW) ST(orow, ow + {q}, s.s{q:x} / d.s{q:x});""" for q in range(VW))
    return f"""
typedef {lanes} PV;
/* The taps of VW windows of a row: c the clamped column of each lane's tap (0 where a lane has
   none), in the lanes whose tap lies inside the row. */
#define TP_POOL_TAP(cols, live) PV in = (live) & ((cols) >= 0) & ((cols) < W); PV c = in ? (cols) : (PV)(0); \
    CV v = (CV)({gathered});

/* max_pool2d of a (N, C, H, W) input at any strides into contiguous (N, C, OH, OW) values and,
   with_indices, their int64 indices. */
__kernel void max_pool2d_rows(__global T* o, long oo, __global long* ix, long oi, int with_indices,
                              __global const T* x, long ox, long sxn, long sxc, long sxh, long sxw, long C_, int H,
                              int W, int OH, int OW, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw,
                              long rows) {{
    long i = get_global_id(0);
    if (i >= rows) return;
    int oh = (int)(i % OH);
    long plane = i / OH;
    __global const T* base = x + ox + (plane / C_) * sxn + (plane % C_) * sxc;
    int h0 = oh * sh - ph;
    int ki0 = h0 >= 0 ? 0 : (-h0 + dh - 1) / dh, ki1 = min(kh, (H - h0 + dh - 1) / dh);
    __global T* orow = o + oo + i * OW;
    __global long* irow = ix + oi + i * OW;
    PV lane = (PV)({lane_ids});
    for (int ow = 0; ow < OW; ow += {VW}) {{
        PV first = (lane + ow) * sw - pw, live = (lane + ow) < OW;
        CV m = (CV)(-INFINITY);
        PV best = (PV)(-1);
        for (int ki = ki0; ki < ki1; ++ki) {{
            int ih = h0 + ki * dh;
            __global const T* r = base + ih * sxh;
            PV at = (PV)(ih) * W;
            for (int kj = 0; kj < kw; ++kj) {{
                TP_POOL_TAP(first + kj * dw, live)
                PV take = in & ((best < 0) | (v > m) | (v != v));
                m = take ? v : m;
                best = take ? at + c : best;
            }}
        }}{max_stores}
    }}
}}

/* avg_pool2d of a (N, C, H, W) input at any strides into a contiguous (N, C, OH, OW) output: each
   window's taps inside the input summed in row-major order (the padding adds zeros) in the
   compute type, as PyTorch's CPU kernel sums, then divided as PyTorch divides (nn/_pooling.py's
   window_counts: a window ends at most at the far padding's end; without count_include_pad
   only the input's own elements count; a divisor_override replaces both). */
__kernel void avg_pool2d(__global T* o, long oo, __global const T* x, long ox, long sxn, long sxc, long sxh,
                         long sxw, long C_, int H, int W, int OH, int OW, int kh, int kw, int sh, int sw, int ph,
                         int pw, int count_include_pad, long divisor_override, long rows) {{
    long i = get_global_id(0);
    if (i >= rows) return;
    int oh = (int)(i % OH);
    long plane = i / OH;
    __global const T* base = x + ox + (plane / C_) * sxn + (plane % C_) * sxc;
    int hs = oh * sh - ph, he = min(hs + kh, H + ph);
    int h0 = max(hs, 0), h1 = min(he, H);
    __global T* orow = o + oo + i * OW;
    PV lane = (PV)({lane_ids});
    for (int ow = 0; ow < OW; ow += {VW}) {{
        PV ws = (lane + ow) * sw - pw, live = (lane + ow) < OW;
        PV we = ws + kw < W + pw ? ws + kw : (PV)(W + pw);
        CV s = (CV)(0);
        for (int y = h0; y < h1; ++y) {{
            __global const T* r = base + y * sxh;
            for (int kj = 0; kj < kw; ++kj) {{
                TP_POOL_TAP(ws + kj, live)
                s += in ? v : (CV)(0);
            }}
        }}
        PV w0 = ws > 0 ? ws : (PV)(0), w1 = we < W ? we : (PV)(W);
        PV count = divisor_override != 0 ? (PV)(divisor_override)
                   : (count_include_pad ? (PV)(he - hs) * (we - ws) : (PV)(h1 - h0) * (w1 - w0));
        CV d = (CV)({divisors});{avg_stores}
    }}
}}

/* max_pool2d's gradient through the forward's int64 indices (at any strides): each output's
   gradient added where its index points inside its plane (an index outside is skipped). */
__kernel void max_pool2d_scatter(__global T* gi, long ogi, __global const T* g, long og, long sgn, long sgc, long sgh,
                                 long sgw, __global const long* ix, long oi, long sixn, long sixc, long sixh, long sixw,
                                 long C_, int H, int W, int OH, int OW, long planes) {{
    long plane = get_global_id(0);
    if (plane >= planes) return;
    long pn = plane / C_, pc = plane % C_, hw = (long)H * W;
    __global const T* gp = g + og + pn * sgn + pc * sgc;
    __global const long* ip = ix + oi + pn * sixn + pc * sixc;
    __global T* out = gi + ogi + plane * hw;
    for (long j = 0; j < hw; ++j) ST(out, j, (C)0);
    for (int oh = 0; oh < OH; ++oh) {{
        for (int ow = 0; ow < OW; ++ow) {{
            long at = ip[oh * sixh + ow * sixw];
            if (at >= 0 && at < hw) ST(out, at, LD(out, at) + LD(gp, oh * sgh + ow * sgw));
        }}
    }}
}}

/* avg_pool2d's gradient: each output's gradient divided by its window's divisor (avg_pool2d's)
   and added to the window's elements inside the input. */
__kernel void avg_pool2d_backward(__global T* gi, long ogi, __global const T* g, long og, long sgn, long sgc, long sgh,
                                  long sgw, long C_, int H, int W, int OH, int OW, int kh, int kw, int sh, int sw,
                                  int ph, int pw, int count_include_pad, long divisor_override, long planes) {{
    long plane = get_global_id(0);
    if (plane >= planes) return;
    long pn = plane / C_, pc = plane % C_, hw = (long)H * W;
    __global const T* gp = g + og + pn * sgn + pc * sgc;
    __global T* out = gi + ogi + plane * hw;
    for (long j = 0; j < hw; ++j) ST(out, j, (C)0);
    for (int oh = 0; oh < OH; ++oh) {{
        int hs = oh * sh - ph, he = hs + kh < H + ph ? hs + kh : H + ph;
        int h0 = hs > 0 ? hs : 0, h1 = he < H ? he : H;
        for (int ow = 0; ow < OW; ++ow) {{
            int ws = ow * sw - pw, we = ws + kw < W + pw ? ws + kw : W + pw;
            int w0 = ws > 0 ? ws : 0, w1 = we < W ? we : W;
            long div = divisor_override != 0 ? divisor_override
                       : (count_include_pad ? (long)(he - hs) * (we - ws) : (long)(h1 - h0) * (w1 - w0));
            C delta = LD(gp, oh * sgh + ow * sgw) / (C)div;
            for (int y = h0; y < h1; ++y)
                for (int xx = w0; xx < w1; ++xx) ST(out, y * W + xx, LD(out, y * W + xx) + delta);
        }}
    }}
}}
"""


def _smooth_l1() -> str:
    """smooth_l1_loss and its gradient, one launch each on small inputs: the decomposition is nine
    launches forward and four backward, and a small regression step on PoCL is launch-bound
    (issue 14). Contiguous operands; the constants come from the host as the decomposition's
    Python numbers do (0.5 / beta, 0.5 * beta), so the values round as its kernels round."""
    loss_body = guarded("""
        ST(o, oo + i, tp_smooth_l1(LD(x, ox + i) - LD(y, oy + i), beta, half_inv_beta, half_beta));""")
    grad_body = guarded("""
        C g_i = per_element ? LD(g, og + i) : g_all;
        ST(o, oo + i, tp_smooth_l1_slope(LD(x, ox + i) - LD(y, oy + i), beta) * g_i);""")
    return f"""
/* The loss at d = x - y: |d| where beta is 0, else 0.5 d^2 / beta inside (-beta, beta) and
   |d| - 0.5 beta outside (+ 0 makes -0.0 the +0.0 of fabs; NaN stays NaN). */
C tp_smooth_l1(C d, C beta, C half_inv_beta, C half_beta) {{
    d = (d < 0 ? -d : d) + (C)0;
    return beta == 0 ? d : (d < beta ? d * d * half_inv_beta : d - half_beta);
}}

/* Its slope: sign(d) (0 at 0 and at NaN, the contract's sign) where beta is 0, else d / beta
   clamped to [-1, 1], NaN passing through the clamp as it does through the decomposition's. */
C tp_smooth_l1_slope(C d, C beta) {{
    if (beta == 0) return (C)((d > 0) - (d < 0));
    C s = beta == 1 ? d : d / beta;
    return s > 1 ? (C)1 : (s < -1 ? (C)-1 : s);
}}

/* reduction "none": the loss of each element. */
__kernel void smooth_l1_c(__global T* o, long oo, __global const T* x, long ox, __global const T* y, long oy, long n,
                          C beta, C half_inv_beta, C half_beta) {{
    long i = get_global_id(0);
    {loss_body}
}}

/* "sum" and "mean": one work-group, each work-item a strided share, then a tree in local memory
   (the caller keeps it to inputs one work-group sums quickly). */
__kernel __attribute__((reqd_work_group_size(TP_REDUCE_GROUP, 1, 1)))
void smooth_l1_reduce(__global T* o, long oo, __global const T* x, long ox, __global const T* y, long oy, long n,
                      C beta, C half_inv_beta, C half_beta, int mean) {{
    __local ACC ls[TP_REDUCE_GROUP];
    int lid = get_local_id(0);
    ACC a = 0;
    for (long j = lid; j < n; j += TP_REDUCE_GROUP)
        a += (ACC)tp_smooth_l1(LD(x, ox + j) - LD(y, oy + j), beta, half_inv_beta, half_beta);
    ls[lid] = a;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int span = TP_REDUCE_GROUP / 2; span > 0; span /= 2) {{
        if (lid < span) ls[lid] += ls[lid + span];
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (lid == 0) ST(o, oo, mean ? (C)(ls[0] / (ACC)n) : (C)ls[0]);
}}

/* "sum" and "mean" of a small loss (a batch's worth of elements) by one work-item in order: the
   work-group above runs 256 work-items through 9 barriers whatever n is, which on PoCL took
   longer than the whole rest of a small step's forward (issue 14). */
__kernel void smooth_l1_reduce_serial(__global T* o, long oo, __global const T* x, long ox, __global const T* y,
                                      long oy, long n, C beta, C half_inv_beta, C half_beta, int mean) {{
    ACC a = 0;
    for (long j = 0; j < n; ++j) a += (ACC)tp_smooth_l1(LD(x, ox + j) - LD(y, oy + j), beta, half_inv_beta, half_beta);
    ST(o, oo, mean ? (C)(a / (ACC)n) : (C)a);
}}

/* The gradient with respect to the input: the slope times the incoming gradient, which is read
   per element (per_element, "none") or once at g[og], scaled there by 1 / n for "mean" as the
   decomposition scales it (g_scale, rounded to C first). */
__kernel void smooth_l1_backward_c(__global T* o, long oo, __global const T* g, long og, int per_element, C g_scale,
                                   __global const T* x, long ox, __global const T* y, long oy, long n, C beta) {{
    long i = get_global_id(0);
    C g_all = per_element ? (C)0 : LD(g, og) * g_scale;
    {grad_body}
}}
"""


# gelu's fused kernels take the dtypes the CPU's take; 16-bit floats run the decomposition.
_GELU_DTYPES = ("float32", "float64")


# float32's normal CDF for gelu: Phi(-|x|) = erfc(|x| / sqrt 2) / 2 by Abramowitz-Stegun 7.1.26,
# t P(t) e^(-x^2 / 2) with t = 1 / (1 + p |x| / sqrt 2) (absolute error below 7.5e-8), PyTorch's own
# erf formula, evaluated on the tail: no cancellation in 1 + erf(x) for negative x, and e^(-x^2 / 2)
# is also the gradient's density. erf's two branches (a polynomial below 1, this formula with a
# sign above) and a second exp for the density cost twice the work per element. -x^2 / 2 is never
# above 0, so the exp is float_exp_shifted's (0 for |x| > 13.2, where e^(-x^2 / 2) < 1.2e-38):
# process CPU time of gelu over 128x10000, 1.22-1.26 -> 0.99-1.03 ms at load 9.
_NORMAL_TAIL = """
#pragma OPENCL FP_CONTRACT ON
""" + float_exp_shifted("tp_fexp_shifted", "float", "int") + """float tp_normal_tail(float x, float e) {
    float a = x < 0.0f ? -x : x;
    float t = 1.0f / (1.0f + 0.2316418882663604f * a);
    float q = 0.5307027145f;
    q = q * t - 0.7265760135f; q = q * t + 0.7107068705f; q = q * t - 0.142248368f; q = q * t + 0.127414796f;
    return (t * q) * e;
}
#pragma OPENCL FP_CONTRACT OFF
"""


def _gelu(single: bool) -> str:
    """gelu and its gradient, erf and tanh forms, one pass over contiguous operands instead of the
    decomposition's five to seven launches (issue 14). float64 follows the decomposition's
    arithmetic (nn/_activations.py) with the built-ins; float32 computes tanh and exp with
    _FLOAT_LANES's operator-only formulas, which PoCL vectorizes across work-items (its built-ins
    it calls one at a time), and the erf form's CDF with _NORMAL_TAIL."""
    tanh = "tp_ftanh" if single else "tanh"
    if single:
        cdf = """C e = tp_fexp_shifted(x * x * -0.5f), tail = tp_normal_tail(x, e);
        C cdf = x < 0.0f ? tail : 1.0f - tail;"""
        density = "e * 0.3989422804014327f"
    else:
        cdf = "C cdf = (erf(x * (C)0.70710678118654752440) + (C)1) * (C)0.5;"
        density = "exp(x * x * (C)-0.5) * (C)0.39894228040143267794"
    value = {
        "gelu_c": f"""{cdf}
        C value = x * cdf;""",
        "gelu_tanh_c": f"C value = x * (C)0.5 * ({tanh}((x + x * x * x * (C)0.044715) * (C)0.79788456080286535588) + (C)1);",
    }
    slope = {
        "gelu_backward_c": f"""{cdf}
        C slope = cdf + x * ({density});""",
        "gelu_tanh_backward_c": f"""C t = {tanh}((x + x * x * x * (C)0.044715) * (C)0.79788456080286535588);
        C du = (x * x * (C)(3 * 0.044715) + (C)1) * (C)0.79788456080286535588;
        C slope = (t + (C)1) * (C)0.5 + x * (C)0.5 * ((C)1 - t * t) * du;""",
    }
    value_kernels = [(name, "", guarded(f"""
        C x = LD(a, oa + i);
        {statements}
        ST(o, oo + i, value);""")) for name, statements in value.items()]
    slope_kernels = [(name, "__global const T* g, long og, ", guarded(f"""
        C x = LD(a, oa + i);
        {statements}
        ST(o, oo + i, LD(g, og + i) * slope);""")) for name, statements in slope.items()]
    kernels = [f"""__kernel void {name}(__global T* o, long oo, {grad}__global const T* a, long oa, long n) {{
    long i = get_global_id(0);
    {body}
}}
""" for name, grad, body in value_kernels + slope_kernels]
    helpers = _FLOAT_LANES + _NORMAL_TAIL if single else ""
    return helpers + "\n/* gelu (x Phi(x)) and its gradient grad * gelu'(x). */\n" + "".join(kernels)


def _floating(dtype: str, acc: str) -> str:
    strided = f"int nd, {_dims('d')}, {_dims('so')}"
    relu_grad_body = guarded("""
        ST(o, oo + i, LD(y, oy + i) <= 0 ? (C)0 : LD(g, og + i));""")
    sgd_gradient = """
        C param = LD(p, op + i), grad = LD(g, og + i);
        grad = maximize ? -grad : grad;
        grad = decay ? grad + param * wd : grad;"""
    sgd_body = guarded(sgd_gradient + """
        C b = first ? grad : LD(buf, ob + i) * momentum + grad * dampening_scale;
        C direction = nesterov ? grad + b * momentum : b;
        ST(buf, ob + i, b);
        ST(p, op + i, param + direction * neg_lr);""")
    sgd_plain_body = guarded(sgd_gradient + """
        ST(p, op + i, param + grad * neg_lr);""")
    return _vector_io(dtype, acc) + _vector_exp(DTYPES[dtype][1]) + _hsum() + _rows() + f"""
/* relu's gradient: 0 where the output is <= 0, the gradient elsewhere (NaN outputs pass it). */
__kernel void relu_backward_c(__global T* o, long oo, __global const T* g, long og, __global const T* y, long oy,
                              long n) {{
    long i = get_global_id(0);
    {relu_grad_body}
}}
__kernel void relu_backward_s(__global T* o, long oo, __global const T* g, long og, __global const T* y, long oy,
                              long n, {strided}, {_dims('sg')}, {_dims('sy')}) {{
    {_array('sh', 'd')} {_array('st_o', 'so')} {_array('st_g', 'sg')} {_array('st_y', 'sy')}
    {strided_runs((("io", "st_o", "oo"), ("ig", "st_g", "og"), ("iy", "st_y", "oy")), '''
        C yv = LD(y, iy), gv = LD(g, ig);
        ST(o, io, yv <= 0 ? (C)0 : gv);''')}
}}

/* softmax / log_softmax over contiguous rows (the last dim): the maximum, the sum of exps (with
   the exps, or for log_softmax x - max, stored in o), then o = exps / sum or o = (x - max) -
   log(sum). log_softmax's first write of o in the exp loop, not in the light last pass, hides
   the cache misses of a fresh output under the exps' arithmetic: 0.85 -> 0.72 ms of CPU time. */
__kernel void softmax_rows(__global T* o, long oo, __global const T* x, long ox, long rows, long size, int logarithm) {{
    long r = get_global_id(0);
    if (r >= rows) return;
    long xb = ox + r * size, ob = oo + r * size;
    C m = tp_row_max(x, xb, size, 1);
    /* a 16-bit o would round x - max twice: those rows read x again */
    int keep_shifted = logarithm && sizeof(T) == sizeof(C);
    C s = (C)tp_row_expsum(x, xb, size, 1, m, logarithm && !keep_shifted ? 0 : o, ob, keep_shifted);
    long j = 0;
    if (logarithm) {{
        C ls = log(s);
        __global const T* d = keep_shifted ? o : x;
        long db = keep_shifted ? ob : xb;
        C shift = keep_shifted ? 0 : m;
        for (; j + {VW} <= size; j += {VW}) STV(o, ob + j, (LDV(d, db + j) - (CV)(shift)) - (CV)(ls));
        for (; j < size; ++j) ST(o, ob + j, (LD(d, db + j) - shift) - ls);
    }} else {{
        /* one division per row: a vector division per 8 elements was 10% of the kernel */
        C inv = (C)1 / s;
        for (; j + {VW} <= size; j += {VW}) STV(o, ob + j, LDV(o, ob + j) * (CV)(inv));
        for (; j < size; ++j) ST(o, ob + j, LD(o, ob + j) * inv);
    }}
}}

/* log_softmax's gradient over contiguous rows (the last dim): o = g - exp(y) * sum(g), y the
   forward's output; one launch where the decomposition takes four. */
__kernel void log_softmax_backward_rows(__global T* o, long oo, __global const T* g, long og, __global const T* y,
                                        long oy, long rows, long size) {{
    long r = get_global_id(0);
    if (r >= rows) return;
    long gb = og + r * size, yb = oy + r * size, ob = oo + r * size;
    ACCV sv = (ACCV)(0);
    long j = 0;
    for (; j + {VW} <= size; j += {VW}) sv += TO_ACCV(LDV(g, gb + j));
    ACC s = tp_hsum(sv);
    for (; j < size; ++j) s += (ACC)LD(g, gb + j);
    C total = (C)s;
    for (j = 0; j + {VW} <= size; j += {VW}) STV(o, ob + j, LDV(g, gb + j) - LIB_VEXP(LDV(y, yb + j)) * (CV)(total));
    for (; j < size; ++j) ST(o, ob + j, LD(g, gb + j) - exp(LD(y, yb + j)) * total);
}}

/* The same over a dim with inner elements after it: each work-item takes VW neighbouring
   (outer, inner) lines, as one vector per step along the dim (the lines' elements are
   neighbours); a last partial group of lines goes one line at a time. */
__kernel void softmax_lines(__global T* o, long oo, __global const T* x, long ox, long items, long size, long inner,
                            int logarithm) {{
    long i = get_global_id(0);
    if (i >= items) return;
    long chunks = (inner + {VW} - 1) / {VW};
    long j0 = (i % chunks) * {VW};
    long base = (i / chunks) * size * inner + j0;
    if (j0 + {VW} <= inner) {{
        CV m = (CV)(-INFINITY);
        for (long j = 0; j < size; ++j) {{ CV v = LDV(x, ox + base + j * inner); m = TP_MAX(m, v); }}
        ACCV s = (ACCV)(0);
        if (logarithm) {{
            for (long j = 0; j < size; ++j) s += TO_ACCV(TP_VEXP_SHIFTED(LDV(x, ox + base + j * inner) - m));
            CV ls = LIB_VLOG(TO_CV(s));
            for (long j = 0; j < size; ++j) STV(o, oo + base + j * inner, (LDV(x, ox + base + j * inner) - m) - ls);
            return;
        }}
        /* the exps go into o on the way and are scaled there: one exp per element, not two */
        for (long j = 0; j < size; ++j) {{
            CV e = TP_VEXP_SHIFTED(LDV(x, ox + base + j * inner) - m);
            STV(o, oo + base + j * inner, e);
            s += TO_ACCV(e);
        }}
        CV inv = (CV)(1) / TO_CV(s);
        for (long j = 0; j < size; ++j) STV(o, oo + base + j * inner, LDV(o, oo + base + j * inner) * inv);
        return;
    }}
    for (long line = base; line < base + (inner - j0); ++line) {{
        C m = -INFINITY;
        for (long j = 0; j < size; ++j) {{ C v = LD(x, ox + line + j * inner); m = TP_MAX(m, v); }}
        ACC s = 0;
        for (long j = 0; j < size; ++j) s += (ACC)exp(LD(x, ox + line + j * inner) - m);
        C sc = (C)s, ls = log(sc);
        for (long j = 0; j < size; ++j) {{
            C shifted = LD(x, ox + line + j * inner) - m;
            ST(o, oo + line + j * inner, logarithm ? shifted - ls : exp(shifted) / sc);
        }}
    }}
}}

/* Per-sample cross entropy of logits (logits = 1) or negative log-likelihood of log-probabilities
   (logits = 0), input (N, C, R) at any strides, targets (N, R): loss[s] as the decompositions
   compute it (the target's log-probability times its weight, negated; with label smoothing the
   smoothed targets' weighted sum), and the target's weight wt[s] (0 where ignored). */
__kernel void nll_samples(__global ACC* loss, __global ACC* wt, __global T* o, long oo, int write_out,
                          __global const T* x, long ox, long sxn, long sxc, long sxr, __global const long* t, long ot,
                          long stn, long str, __global const T* w, long ow, long sw, int has_weight, long N, long C_,
                          long R, long ignore_index, int smoothed, C spread_all, C keep, int logits) {{
    long i = get_global_id(0);
    if (i >= N * R) return;
    long n = i / R, r = i % R;
    long xb = ox + n * sxn + r * sxr;
    long target = t[ot + n * stn + r * str];
    int valid = target != ignore_index;
    long safe = valid ? target : 0;
    if (safe < 0 || safe >= C_) {{  /* the frontend checked the targets: never read outside */
        loss[i] = NAN; wt[i] = 0;
        if (write_out) ST(o, oo + i, NAN);
        return;
    }}
    C w_t = valid ? (has_weight ? LD(w, ow + safe * sw) : (C)1) : (C)0;
    C shift = 0, ls = 0;
    if (logits) {{
        shift = tp_row_max(x, xb, C_, sxc);
        ls = log((C)tp_row_expsum(x, xb, C_, sxc, shift, 0, 0, 0));
    }}
    C picked = (LD(x, xb + safe * sxc) - shift) - ls;
    C l;
    if (!smoothed) {{
        l = -(picked * w_t);
    }} else {{
        /* q[c] = w_t (1 - smoothing) at the target, plus valid * smoothing / C * weight[c] */
        C spread = (C)valid * spread_all;
        C on_target = w_t * keep;
        ACC s = 0;
        for (long c = 0; c < C_; ++c) {{
            C q = (c == safe ? on_target : (C)0) + (has_weight ? spread * LD(w, ow + c * sw) : spread);
            s += (ACC)(((LD(x, xb + c * sxc) - shift) - ls) * q);
        }}
        l = -(C)s;
    }}
    loss[i] = (ACC)l;
    wt[i] = (ACC)w_t;
    if (write_out) ST(o, oo + i, l);
}}

/* The sum of the per-sample losses, divided by the sum of their weights for "mean": one
   work-group, each work-item a strided share, then a tree in local memory. */
#define TP_REDUCE_GROUP 256
__kernel __attribute__((reqd_work_group_size(TP_REDUCE_GROUP, 1, 1)))
void nll_reduce(__global T* o, long oo, __global const ACC* loss, __global const ACC* wt, long count, int mean) {{
    __local ACC ls[TP_REDUCE_GROUP], ws[TP_REDUCE_GROUP];
    int lid = get_local_id(0);
    ACC a = 0, b = 0;
    for (long j = lid; j < count; j += TP_REDUCE_GROUP) {{ a += loss[j]; b += wt[j]; }}
    ls[lid] = a;
    ws[lid] = b;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int span = TP_REDUCE_GROUP / 2; span > 0; span /= 2) {{
        if (lid < span) {{ ls[lid] += ls[lid + span]; ws[lid] += ws[lid + span]; }}
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (lid == 0) ST(o, oo, mean ? (C)((C)ls[0] / (C)ws[0]) : (C)ls[0]);
}}

/* The denominator of cross_entropy's "mean" gradient: the targets' total weight (0 for ignored
   ones), one work-group as nll_reduce. */
__kernel __attribute__((reqd_work_group_size(TP_REDUCE_GROUP, 1, 1)))
void ce_weight_sum(__global ACC* den, __global const long* t, long ot, long stn, long str, __global const T* w, long ow,
                   long sw, int has_weight, long N, long R, long C_, long ignore_index) {{
    __local ACC ws[TP_REDUCE_GROUP];
    int lid = get_local_id(0);
    ACC b = 0;
    for (long j = lid; j < N * R; j += TP_REDUCE_GROUP) {{
        long target = t[ot + (j / R) * stn + (j % R) * str];
        if (target != ignore_index && target >= 0 && target < C_) b += has_weight ? (ACC)LD(w, ow + target * sw) : (ACC)1;
    }}
    ws[lid] = b;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int span = TP_REDUCE_GROUP / 2; span > 0; span /= 2) {{
        if (lid < span) ws[lid] += ws[lid + span];
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (lid == 0) den[0] = ws[0];
}}

/* cross_entropy's gradient over logits (N, C, R) at any strides, into a contiguous o: per sample,
   scale * (softmax(x) * sum_c q_c - q) with q as in nll_samples and scale the incoming gradient
   (per sample for "none", mode 0; the one number for "sum", 1; that divided by the targets'
   total weight den[0] for "mean", 2). One work-item per sample, as the forward: the row's
   maximum, its exps (kept in o when o's row is contiguous), then the gradient. It replaces the
   decomposition's ten launches, among them a broadcast multiply through the strided kernel
   (78 ms of 63-ms-median steps for 128x10000 on the busy machine). */
__kernel void ce_backward_rows(__global T* o, long oo, __global const T* g, long og, long sgn, long sgr, int mode,
                               __global const ACC* den, __global const T* x, long ox, long sxn, long sxc, long sxr,
                               __global const long* t, long ot, long stn, long str, __global const T* w, long ow,
                               long sw, int has_weight, long N, long C_, long R, long ignore_index, int smoothed,
                               C spread_all, C keep) {{
    long i = get_global_id(0);
    if (i >= N * R) return;
    long n = i / R, r = i % R;
    long xb = ox + n * sxn + r * sxr, ob = oo + n * C_ * R + r;
    long target = t[ot + n * stn + r * str];
    int valid = target != ignore_index;
    long safe = valid ? target : 0;
    if (safe < 0 || safe >= C_) {{  /* the frontend checked the targets: never read outside */
        for (long c = 0; c < C_; ++c) ST(o, ob + c * R, NAN);
        return;
    }}
    if (!valid) {{  /* q = 0: a zero gradient, also where the mean divides by a zero total (PyTorch) */
        for (long c = 0; c < C_; ++c) ST(o, ob + c * R, (C)0);
        return;
    }}
    C w_t = has_weight ? LD(w, ow + safe * sw) : (C)1;
    C scale = mode == 0 ? LD(g, og + n * sgn + r * sgr) : LD(g, og);
    if (mode == 2) scale = scale / (C)den[0];
    C spread = smoothed ? spread_all : (C)0;
    C sum_q = w_t * keep;
    if (smoothed) {{
        ACC ws = 0;
        for (long c = 0; c < C_; ++c) ws += has_weight ? (ACC)LD(w, ow + c * sw) : (ACC)1;
        sum_q += spread * (C)ws;
    }}
    C m = tp_row_max(x, xb, C_, sxc);
    int direct = R == 1;
    C s = (C)tp_row_expsum(x, xb, C_, sxc, m, direct ? o : 0, ob, 0);
    C factor = scale * sum_q;
    if (direct && !has_weight) {{
        /* every class but the target has q = spread: the update in vectors (the scalar loop's
           division per element was half the kernel's time), then the target's element again */
        C e_t = LD(o, ob + safe);
        CV k = (CV)(factor), shift = (CV)(scale * spread), sv = (CV)(s);
        long j = 0;
        for (; j + {VW} <= C_; j += {VW}) STV(o, ob + j, (LDV(o, ob + j) / sv) * k - shift);
        for (; j < C_; ++j) ST(o, ob + j, (LD(o, ob + j) / s) * factor - scale * spread);
        ST(o, ob + safe, (e_t / s) * factor - scale * (w_t * keep + spread));
        return;
    }}
    for (long c = 0; c < C_; ++c) {{
        C e = direct ? LD(o, ob + c) : exp(LD(x, xb + c * sxc) - m);
        C q = (c == safe ? w_t * keep : (C)0) + (has_weight ? spread * LD(w, ow + c * sw) : spread);
        ST(o, ob + c * R, (e / s) * factor - scale * q);
    }}
}}

/* layer_norm over contiguous rows: mean, the mean of the squared deviations, then
   (x - mean) * rsqrt(var + eps), times weight, plus bias. */
__kernel void layer_norm_rows(__global T* o, long oo, __global const T* x, long ox, __global const T* w, long ow,
                              __global const T* b, long ob, int has_weight, int has_bias, long rows, long cols, C eps) {{
    long r = get_global_id(0);
    if (r >= rows) return;
    long xb = ox + r * cols, obase = oo + r * cols;
    ACC s = 0;
    long j = 0;
    ACCV sv = (ACCV)(0);
    for (; j + {VW} <= cols; j += {VW}) sv += TO_ACCV(LDV(x, xb + j));
    s = tp_hsum(sv);
    for (; j < cols; ++j) s += (ACC)LD(x, xb + j);
    C mean = (C)(s / (ACC)cols);
    sv = (ACCV)(0);
    s = 0;
    for (j = 0; j + {VW} <= cols; j += {VW}) {{ CV d = LDV(x, xb + j) - (CV)(mean); sv += TO_ACCV(d * d); }}
    s = tp_hsum(sv);
    for (; j < cols; ++j) {{ C d = LD(x, xb + j) - mean; s += (ACC)(d * d); }}
    C rstd = rsqrt((C)(s / (ACC)cols) + eps);
    for (j = 0; j < cols; ++j) {{
        C y = (LD(x, xb + j) - mean) * rstd;
        if (has_weight) y = y * LD(w, ow + j);
        if (has_bias) y = y + LD(b, ob + j);
        ST(o, obase + j, y);
    }}
}}

/* col2im, one input row (n, c, ih) per work-item (so no two work-items add into one element):
   each element is the sum over the taps that read it of col[n, (c * KH + ki) * KW + kj,
   oh * OW + ow] (contiguous columns), in (ki, kj) order (the decomposition's order of adding the
   kernel offsets). */
__kernel void col2im(__global T* x, long ox, __global const T* col, long ocol, long C_, int H, int W, int OH,
                     int OW, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw, long rows) {{
    long i = get_global_id(0);
    if (i >= rows) return;
    int ih = (int)(i % H);
    long t = i / H, c = t % C_, b = t / C_;
    long L = (long)OH * OW, K = C_ * kh * kw;
    __global const T* cb = col + ocol + b * K * L + c * kh * kw * L;
    __global T* dst = x + ox + i * W;
    for (int iw = 0; iw < W; ++iw) ST(dst, iw, (C)0);
    for (int ki = 0; ki < kh; ++ki) {{
        int th = ih + ph - ki * dh;
        if (th < 0 || th % sh != 0 || th / sh >= OH) continue;
        int oh = th / sh;
        for (int kj = 0; kj < kw; ++kj) {{
            __global const T* src = cb + (ki * kw + kj) * L + (long)oh * OW;
            /* iw + pw - kj * dw = ow * sw */
            int first = kj * dw - pw;  /* iw of ow = 0 */
            for (int ow = 0; ow < OW; ++ow) {{
                int iw = first + ow * sw;
                if (iw >= 0 && iw < W) ST(dst, iw, LD(dst, iw) + LD(src, ow));
            }}
        }}
    }}
}}

/* o[i] += bias[(i / inner) % channels] over a contiguous (N, channels, inner) output. */
__kernel void add_channel_bias(__global T* o, long oo, __global const T* b, long ob, long sb, long channels,
                               long inner, long n) {{
    long i = get_global_id(0);
    if (i >= n) return;
    ST(o, oo + i, LD(o, oo + i) + LD(b, ob + ((i / inner) % channels) * sb));
}}

/* o[j] = sum over b of p[b * n + j], in order (the per-image weight gradients, summed). */
__kernel void sum_batches(__global T* o, long oo, __global const T* p, long batches, long n) {{
    long j = get_global_id(0);
    if (j >= n) return;
    ACC s = 0;
    for (long b = 0; b < batches; ++b) s += (ACC)LD(p, b * n + j);
    ST(o, oo + j, s);
}}

/* One Adam (decoupled: AdamW) update per element of contiguous tensors, in the decomposition's
   order of operations: weight decay, exp_avg lerped toward grad, exp_avg_sq * beta2 +
   (1 - beta2) * grad^2, the amsgrad maximum (NaN wins), then param += step * exp_avg / denom. */
__kernel void adam_step(__global T* p, long op, __global const T* g, long og, __global T* m, long om, __global T* v,
                        long ov, __global T* vmax, long ovmax, int amsgrad, long n, C lr_wd, C wd,
                        int decay, int decoupled, C lerp_w, C lerp_1mw, int lerp_low, C beta2, C one_m_beta2,
                        C bc2_sqrt, C eps, C step_size) {{
    long i = get_global_id(0);
    if (i >= n) return;
    C param = LD(p, op + i), grad = LD(g, og + i);
    if (decay) {{
        if (decoupled) param = param * lr_wd;
        else grad = grad + param * wd;
    }}
    C ea = LD(m, om + i);
    C diff = grad - ea;
    ea = lerp_low ? ea + diff * lerp_w : grad - diff * lerp_1mw;
    C sq = LD(v, ov + i) * beta2 + (grad * grad) * one_m_beta2;
    C second = sq;
    if (amsgrad) {{
        C old = LD(vmax, ovmax + i);
        second = isnan(old) ? old : isnan(sq) ? sq : (old > sq ? old : sq);
        ST(vmax, ovmax + i, second);
    }}
    C denom = sqrt(second) / bc2_sqrt + eps;
    ST(m, om + i, ea);
    ST(v, ov + i, sq);
    ST(p, op + i, param + (ea / denom) * step_size);
}}

/* One SGD update per element of contiguous tensors, in the decomposition's (torch.optim.SGD's)
   order of operations: the gradient negated (maximize), plus param * wd; the momentum buffer set
   to it (first step) or buf * momentum + grad * dampening_scale; the direction grad + buf *
   momentum (nesterov) or buf; then param + direction * neg_lr (sgd_step_plain: no buffer, the
   direction is the gradient). A multiply by 1 (dampening 0) is exact, so it needs no case of its
   own. Straight code under guarded(), the options as selects: an early return or a branch kept
   PoCL from vectorizing across work-items (the first version was 2x slower than the four
   elementwise kernels it replaced on a 784x512 weight). The first step reads the uninitialized
   buffer and discards it. */
__kernel void sgd_step(__global T* p, long op, __global const T* g, long og, __global T* buf, long ob, int first,
                       int nesterov, int maximize, int decay, long n, C wd, C momentum, C dampening_scale,
                       C neg_lr) {{
    long i = get_global_id(0);
    {sgd_body}
}}
__kernel void sgd_step_plain(__global T* p, long op, __global const T* g, long og, int maximize, int decay, long n,
                             C wd, C neg_lr) {{
    long i = get_global_id(0);
    {sgd_plain_body}
}}

/* A small linear layer's forward (fused.py's _linear): work-item (r, q) of rows x outputs starts
   at the bias (0 without one) and adds x[r, k] * w[q, k] in k order. The blocked matrix product
   tiles and packs for layers whose arithmetic outweighs a launch; for a Linear(4, 1) it cost
   PoCL 15-25 us more than an elementwise kernel (issue 14). */
__kernel void linear_small(__global T* o, long oo, __global const T* x, long ox, long sx0, long sx1,
                           __global const T* w, long ow, long sw0, long sw1, __global const T* b, long ob, long sb,
                           int has_bias, long rows, long outputs, long features) {{
    long i = get_global_id(0);
    if (i >= rows * outputs) return;
    long r = i / outputs, q = i - r * outputs;
    C acc = has_bias ? LD(b, ob + q * sb) : (C)0;
    for (long k = 0; k < features; ++k) acc += LD(x, ox + r * sx0 + k * sx1) * LD(w, ow + q * sw0 + k * sw1);
    ST(o, oo + i, acc);
}}

/* A small linear layer's weight and bias gradients in one launch (nn/_linear_grads.py):
   work-item (o, j) of outputs x (features + 1) sums g[r, o] * x[r, j] over the batch rows in
   order (the weight's), or g[r, o] alone for j == features (the bias's), in the compute type. */
__kernel void linear_param_grads(__global T* gw, long ogw, __global T* gb, long ogb, __global const T* g, long og,
                                 long sg0, long sg1, __global const T* x, long ox, long sx0, long sx1, long batch,
                                 long outputs, long features) {{
    long i = get_global_id(0);
    if (i >= outputs * (features + 1)) return;
    long o = i / (features + 1), j = i - o * (features + 1);
    C acc = 0;
    if (j == features) {{
        for (long r = 0; r < batch; ++r) acc += LD(g, og + r * sg0 + o * sg1);
        ST(gb, ogb + o, acc);
    }} else {{
        for (long r = 0; r < batch; ++r) acc += LD(g, og + r * sg0 + o * sg1) * LD(x, ox + r * sx0 + j * sx1);
        ST(gw, ogw + o * features + j, acc);
    }}
}}

"""


def _conv_block(t: str, rows: int, cw: int) -> tuple:
    """The register block of the convolution kernels as generated text: (declarations, one step
    of the product with vector ``w`` loaded from pointer ``wsrc`` and row r's scalar ``XSRC(r)``,
    the stores through ``STORE(r, q, value)``). Named variables and operators only, no
    built-ins: pip's PoCL 3.0 does not inline its library (see _source.matmul_blocked), and a
    call (``mad``, ``vload16``) inside the loop spilled every accumulator (3-7x slower)."""
    v = 8 if t == "float" else 4
    nvec = cw // v
    vt = f"{t}{v}"
    decl = f"{vt} " + ", ".join(f"acc{r}_{j} = 0" for r in range(rows) for j in range(nvec)) + ";"
    step = [f"{vt} w{j} = ({vt})(" + ", ".join(f"wsrc[{j * v + i}]" for i in range(v)) + ");" for j in range(nvec)]
    for r in range(rows):
        step.append(f"{{ {vt} x = ({vt})(XSRC({r})); " + " ".join(f"acc{r}_{j} += x * w{j};" for j in range(nvec)) + " }")
    stores = []
    for r in range(rows):
        stores.append(f"if ({r} < nrows) {{")
        for q in range(cw):
            stores.append(f"    if ({q} < ocount) STORE({r}, {q}, acc{r}_{q // v}.s{'0123456789abcdef'[q % v]});")
        stores.append("}")
    return decl, "\n".join(step), "\n".join(stores)


WEIGHT_ROWS_CHANNELS = 4  # output channels per work-item of conv_weight_rows
WEIGHT_ROWS_TAPS = 3  # taps per work-item of conv_weight_rows
WEIGHT_ROWS_MAX_TAPS = 32  # the most taps (Cg * KH * KW) the host gives conv_weight_rows


def _conv_weight_rows(t: str) -> str:
    """conv2d's weight gradient for few taps per output channel (a first layer: one to three input
    channels) at unit width stride, with output positions in the vector lanes: per 8 (float) or
    4 (double) neighbouring positions of an output row, one unaligned load of the gradient per
    output channel and of the padded input per tap, and WEIGHT_ROWS_CHANNELS x WEIGHT_ROWS_TAPS
    vector accumulators summed across their lanes at the end. The gradient is read in its own
    layout: conv_weight_direct needed it transposed to (N, OH * OW, O) first, and its blocks of
    CONV_ROWS taps left a 9-tap kernel's second block half empty."""
    v = 8 if t == "float" else 4
    vt = f"{t}{v}"
    oc, kt = WEIGHT_ROWS_CHANNELS, WEIGHT_ROWS_TAPS
    lanes = range(v)
    full = lambda p: f"({vt})(" + ", ".join(f"{p}[{q}]" for q in lanes) + ")"  # noqa: E731
    tail = lambda p: f"({vt})(" + ", ".join(f"{q} < rest ? {p}[{q}] : ({t})0" for q in lanes) + ")"  # noqa: E731

    def step(load):
        lines = [f"{vt} g{r} = {load(f'(grow + gch{r})')};" for r in range(oc)]
        for q in range(kt):
            lines.append(f"{{ {vt} x = {load(f'(xrow + tap{q})')}; "
                         + " ".join(f"acc{r}_{q} += g{r} * x;" for r in range(oc)) + " }")
        return "\n                ".join(lines)

    hsum = lambda a: "(" + " + ".join(f"{a}.s{q}" for q in lanes) + ")"  # noqa: E731
    taps = "\n".join(
        f"    long tap{q};\n    {{ int k = k0 + {q} < kg ? k0 + {q} : kg - 1; int c = k / (kh * kw), ki = (k / kw) % kh,"
        f" kj = k % kw;\n      tap{q} = (long)c * plane + (long)ki * dh * WP + kj * dw; }}" for q in range(kt))
    channels = "\n".join(f"    long gch{r} = (long)(o0 + ({r} < nch ? {r} : nch - 1)) * sgo;" for r in range(oc))
    decl = f"{vt} " + ", ".join(f"acc{r}_{q} = 0" for r in range(oc) for q in range(kt)) + ";"
    stores = "\n".join(f"    if ({r} < nch && {q} < ntap) dw_[odw + (long)(o0 + {r}) * kg + k0 + {q}] = {hsum(f'acc{r}_{q}')};"
                       for r in range(oc) for q in range(kt))
    return f"""
/* conv2d's weight gradient with output positions in vector lanes (unit width stride): dW[o, k] =
   sum over images n and positions (oh, ow) of g[n, o, oh, ow] * xp[n, c(k), oh * sh + ki * dh,
   ow + kj * dw] for the tap k = (c, ki, kj), xp the padded input and g the gradient at its own
   strides (unit width stride). Each work-item: {oc} output channels x {kt} taps of one group over
   one part of the images (partial sums per part, added by the host's sum_batches). */
__kernel void conv_weight_rows(__global T* dw_, long odw, __global const T* xp, int C_, int HP, int WP,
                               __global const T* g, long og, long sgn, long sgo, long sgh, int O, int Og, int Cg,
                               int OH, int OW, int kh, int kw, int sh, int dh, int dw, long N, long per_part,
                               long items) {{
    long i = get_global_id(0);
    if (i >= items) return;
    int kg = Cg * kh * kw, kblocks = (kg + {kt - 1}) / {kt}, oblocks = (Og + {oc - 1}) / {oc}, groups = O / Og;
    int ob = (int)(i % oblocks);
    long t = i / oblocks;
    int kb = (int)(t % kblocks);
    t /= kblocks;
    int grp = (int)(t % groups);
    long part = t / groups, n0 = part * per_part, n1 = N < n0 + per_part ? N : n0 + per_part;
    odw += part * O * kg;
    int k0 = kb * {kt}, ntap = kg - k0 < {kt} ? kg - k0 : {kt};
    int o0 = grp * Og + ob * {oc}, nch = grp * Og + Og - o0 < {oc} ? grp * Og + Og - o0 : {oc};
    long plane = (long)HP * WP;
{taps}
{channels}
    {decl}
    for (long n = n0; n < n1; ++n) {{
        __global const T* xa = xp + (n * C_ + (long)grp * Cg) * plane;
        __global const T* ga = g + og + n * sgn;
        for (int oh = 0; oh < OH; ++oh) {{
            __global const T* xrow = xa + (long)oh * sh * WP;
            __global const T* grow = ga + (long)oh * sgh;
            int ow = 0;
            for (; ow + {v} <= OW; ow += {v}, xrow += {v}, grow += {v}) {{
                {step(full)}
            }}
            int rest = OW - ow;
            if (rest > 0) {{
                {step(tail)}
            }}
        }}
    }}
{stores}
}}"""


CONV_ROWS_CHANNELS = 4  # output channels per work-item of conv_rows


def _conv_rows(t: str) -> str:
    """conv2d for few taps per output channel (as conv_weight_rows) at unit width stride, with
    output positions in the vector lanes: a work-item takes one output row of CONV_ROWS_CHANNELS
    channels; per 8 (float) or 4 (double) positions and tap, one unaligned load of the padded
    input and a broadcast weight per channel. The taps are added in conv_implicit's order (c, ki,
    kj) from zero and the bias last, so the two kernels give the same bits; conv_implicit's
    blocks of 16 channels x 6 positions did 9 taps of work between 96 scalar stores here."""
    v = 8 if t == "float" else 4
    vt = f"{t}{v}"
    oc = CONV_ROWS_CHANNELS
    lanes = range(v)
    full = "(" + vt + ")(" + ", ".join(f"xq[{q}]" for q in lanes) + ")"
    tail = "(" + vt + ")(" + ", ".join(f"{q} < rest ? xq[{q}] : ({t})0" for q in lanes) + ")"
    weights = "\n".join(f"    __global const T* w{r} = wc + (long)({r} < nch ? {r} : nch - 1) * kg;" for r in range(oc))
    decl = f"{vt} " + ", ".join(f"acc{r}" for r in range(oc)) + ";"
    zero = " ".join(f"acc{r} = 0;" for r in range(oc))

    def taps(load):
        fma = " ".join(f"acc{r} += x * ({vt})(w{r}[k]);" for r in range(oc))
        return f"""int k = 0;
            for (int c = 0; c < Cg; ++c) {{
                for (int ki = 0; ki < kh; ++ki) {{
                    __global const T* xq = xrow + c * plane + (long)ki * dh * WP;
                    for (int kj = 0; kj < kw; ++kj, ++k, xq += dw) {{
                        {vt} x = {load}; {fma}
                    }}
                }}
            }}"""

    def stores(count):
        out = []
        for r in range(oc):
            out.append(f"if ({r} < nch) {{ __global T* d = dst + {r} * L; C b = has_bias ? bias[ob + (long)(o0 + {r}) * sb] : 0;")
            out.append(" ".join(f"if ({q} < {count}) d[{q}] = has_bias ? acc{r}.s{q:x} + b : acc{r}.s{q:x};" for q in lanes) + " }")
        return "\n                ".join(out)

    return f"""
/* conv2d at unit width stride with output positions in vector lanes (few taps per channel):
   out[n, o, oh, ow] = sum over taps k = (c, ki, kj) of w[o, k] * xp[n, c, oh * sh + ki * dh,
   ow + kj * dw], then + bias[o]; w contiguous (O, Cg * KH * KW), xp the padded input. */
__kernel void conv_rows(__global T* o, long oo, __global const T* xp, int C_, int HP, int WP, __global const T* w,
                        long wo, __global const T* bias, long ob, long sb, int has_bias, int Cg, int O, int Og, int OH, int OW,
                        int kh, int kw, int sh, int dh, int dw, long items) {{
    long i = get_global_id(0);
    if (i >= items) return;
    int oblocks = (Og + {oc - 1}) / {oc}, groups = O / Og, kg = Cg * kh * kw;
    int oh = (int)(i % OH);
    long t = i / OH;
    int obk = (int)(t % oblocks);
    t /= oblocks;
    int grp = (int)(t % groups);
    long n = t / groups;
    int o0 = grp * Og + obk * {oc}, nch = grp * Og + Og - o0 < {oc} ? grp * Og + Og - o0 : {oc};
    long plane = (long)HP * WP, L = (long)OH * OW;
    __global const T* wc = w + wo + (long)o0 * kg;
{weights}
    __global const T* xbase = xp + (n * C_ + (long)grp * Cg) * plane + (long)oh * sh * WP;
    __global T* dst = o + oo + (n * O + o0) * L + (long)oh * OW;
    {decl}
    int ow = 0;
    for (; ow + {v} <= OW; ow += {v}, dst += {v}) {{
        __global const T* xrow = xbase + ow;
        {zero}
        {taps(full)}
        {stores(v)}
    }}
    int rest = OW - ow;
    if (rest > 0) {{
        __global const T* xrow = xbase + ow;
        {zero}
        {taps(tail)}
        {stores("rest")}
    }}
}}"""


def _convolutions(dtype: str) -> str:
    """Convolutions for float32/float64 as implicit products over a zero-padded copy of the input
    (``pad_input``), without a columns buffer: conv2d (any stride; its input gradient at stride
    1 is the convolution of the gradient with the flipped, transposed weight) and its weight
    gradient. Each work-item keeps CONV_ROWS x CW results in CW-wide vectors."""
    t = DTYPES[dtype][0]
    cw, rows = CONV_COLS[dtype], CONV_ROWS
    decl, step, stores = _conv_block(t, rows, cw)
    indent = lambda text, n: "\n".join(" " * n + line for line in text.splitlines())  # noqa: E731
    # conv_implicit's rows are output positions (spare rows repeat the last), its x the padded
    # input at each position's tap; conv_weight_direct's rows are taps (c, ki, kj).
    positions = "\n".join(
        f"    long pos{r};\n    {{ long l = l0 + {r} < L ? l0 + {r} : L - 1; pos{r} = (l / OW) * sh * WP + (l % OW) * sw; }}"
        for r in range(rows))
    taps = "\n".join(
        f"    long rowbase{r};\n    {{ int k = k0 + {r} < kg ? k0 + {r} : kg - 1; int c = k / (kh * kw), ki = (k / kw) % kh,"
        f" kj = k % kw;\n      rowbase{r} = (long)(g * Cg + c) * plane + (long)ki * dh * WP + kj * dw; }}"
        for r in range(rows))
    step_ci = indent(re.sub(r"XSRC\((\d)\)", r"xq[pos\1]", step), 16)
    step_cw = indent(re.sub(r"XSRC\((\d)\)", r"xq[rowbase\1]", step), 16)
    stores_ci = indent(re.sub(r"STORE\((\d), (\d+), (.*?)\);", r"dst[\2 * L + \1] = has_bias ? \3 + bo[\2 * sb] : \3;",
                              stores), 4)
    stores_cw = indent(re.sub(r"STORE\((\d), (\d+), (.*?)\);", r"dw_[odw + (long)(o0 + \2) * kg + k0 + \1] = \3;",
                              stores), 4)
    # FP_CONTRACT ON for the products (an FMA per multiply-add, as the matmul); helpers.cl's OFF
    # is restored after them.
    return f"""
#pragma OPENCL FP_CONTRACT ON
typedef {t}{cw} CONV_V;
/* x (N, C, H, W) at any strides into a contiguous zero-padded (N, C, HP, WP), x's element (h, w)
   at (h + ph, w + pw) (negative padding crops), then zero rows up to ``rows``: one padded row
   per work-item. */
__kernel void pad_input(__global T* o, __global const T* x, long ox, long sxn, long sxc, long sxh, long sxw, long C_,
                        int H, int W, int HP, int WP, int ph, int pw, long data_rows, long rows) {{
    long i = get_global_id(0);
    if (i >= rows) return;
    int hp = (int)(i % HP);
    long t = i / HP, c = t % C_, n = t / C_;
    int h = hp - ph;
    __global T* dst = o + i * WP;
    if (i >= data_rows || h < 0 || h >= H) {{  /* rows past the last plane are zeros too */
        for (int wp = 0; wp < WP; ++wp) dst[wp] = 0;
        return;
    }}
    __global const T* src = x + ox + n * sxn + c * sxc + h * sxh;
    for (int wp = 0; wp < WP; ++wp) {{
        int w = wp - pw;
        dst[wp] = (w >= 0 && w < W) ? src[w * sxw] : ({t})0;
    }}
}}

/* A convolution at any stride as an implicit product: out[n, o, l] = sum over taps k = (c, ki,
   kj) of wt[g, k, o] * xp[n, c, tap k of position l], xp the padded input and wt the weight
   transposed to (groups, Cg * KH * KW, Og) (plus CW spare elements). Each work-item computes
   CONV_ROWS output positions x CW output channels: per tap one vector load of wt and CONV_ROWS
   scalar loads of xp, the taps in the im2col product's order. */
__kernel void conv_implicit(__global T* o, long oo, __global const T* xp, int C_, int HP, int WP,
                            __global const T* wt, __global const T* bias, long ob, long sb, int has_bias, int Cg, int O,
                            int Og, int OH, int OW, int kh, int kw, int sh, int sw, int dh, int dw, long items) {{
    long i = get_global_id(0);
    if (i >= items) return;
    long L = (long)OH * OW, pblocks = (L + {rows - 1}) / {rows};
    int oblocks = (Og + {cw - 1}) / {cw}, groups = O / Og, kg = Cg * kh * kw;
    int ob_ = (int)(i % oblocks);
    long t = i / oblocks, l0 = (t % pblocks) * {rows};
    t /= pblocks;
    int g = (int)(t % groups);
    long n = t / groups;
    int o0 = ob_ * {cw}, ocount = Og - o0 < {cw} ? Og - o0 : {cw};
    int nrows = L - l0 < {rows} ? (int)(L - l0) : {rows};
    long plane = (long)HP * WP;
{positions}
    {decl}
    __global const T* xn = xp + (n * C_ + (long)g * Cg) * plane;
    __global const T* wsrc = wt + (long)g * kg * Og + o0;
    for (int c = 0; c < Cg; ++c) {{
        for (int ki = 0; ki < kh; ++ki) {{
            __global const T* xq = xn + c * plane + (long)ki * dh * WP;
            for (int kj = 0; kj < kw; ++kj) {{
{step_ci}
                xq += dw;
                wsrc += Og;
            }}
        }}
    }}
    __global T* dst = o + oo + (n * O + (long)g * Og + o0) * L + l0;
    __global const T* bo = bias + ob + (long)(g * Og + o0) * sb;
{stores_ci}
}}

/* conv2d's weight gradient as one product without columns: dW[o, k] = sum over images n and
   output positions (oh, ow) of grad[n, o, oh, ow] * xp[n, c(k), oh * sh + ki * dh, ow * sw + kj * dw]
   for the tap k = (c, ki, kj), with xp the padded input and gt the gradient transposed to
   (N, OH * OW, O) (plus CW spare elements). Each work-item computes CONV_ROWS taps x CW output
   channels of one group: per position one vector load of gt and CONV_ROWS scalar loads of xp
   (any stride, dilation, padding). Few outputs split the images into parts, whose partial sums
   the host adds (sum_batches). */
__kernel void conv_weight_direct(__global T* dw_, long odw, __global const T* xp, int C_, int HP, int WP,
                                 __global const T* gt, int O, int Og, int Cg, int OH, int OW, int kh, int kw, int sh,
                                 int sw, int dh, int dw, long N, long per_part, long items) {{
    long i = get_global_id(0);
    if (i >= items) return;
    int kg = Cg * kh * kw, kblocks = (kg + {rows - 1}) / {rows}, oblocks = (Og + {cw - 1}) / {cw}, groups = O / Og;
    int ob = (int)(i % oblocks);
    long t = i / oblocks;
    int kb = (int)(t % kblocks);
    t /= kblocks;
    int g = (int)(t % groups);
    long part = t / groups, n0 = part * per_part, n1 = N < n0 + per_part ? N : n0 + per_part;
    odw += part * O * kg;  /* each part of the images writes its own partial sum */
    int k0 = kb * {rows}, nrows = kg - k0 < {rows} ? kg - k0 : {rows};
    int o0 = g * Og + ob * {cw}, ocount = g * Og + Og - o0 < {cw} ? g * Og + Og - o0 : {cw};
    long plane = (long)HP * WP, L = (long)OH * OW;
{taps}
    {decl}
    for (long n = n0; n < n1; ++n) {{
        __global const T* xa = xp + n * C_ * plane;
        __global const T* gb = gt + n * L * O + o0;
        for (int oh = 0; oh < OH; ++oh) {{
            __global const T* wsrc = gb + (long)oh * OW * O;
            __global const T* xq = xa + (long)oh * sh * WP;
            for (int ow = 0; ow < OW; ++ow) {{
{step_cw}
                wsrc += O;
                xq += sw;
            }}
        }}
    }}
{stores_cw}
}}
{_conv_weight_rows(t)}
{_conv_rows(t)}
#pragma OPENCL FP_CONTRACT OFF
"""
