"""OpenCL C sources, generated per (family, dtype) from the templates in this one module.

Every program starts with ``helpers.cl`` and the type macros of the dtypes it touches:
``T_x`` (storage type), ``C_x`` (compute type), ``LD_x(p, i)`` / ``ST_x(p, i, v)`` (load and
store element ``i`` of pointer ``p`` in the compute type). float16 and bfloat16 are stored as
16-bit patterns and computed in float32 (``vload_half``/``vstore_half_rte`` are core OpenCL, so
they need no cl_khr_fp16); the float8 types likewise as 8-bit codes computed in float32, each
store rounding once with the CPU's rules (docs/dtypes.md, ``_FLOAT8_HELPERS``). One program holds a whole family for one dtype, so a dtype's first op
of a family pays one build; PoCL then generates each kernel's machine code on its first launch.
"""
from __future__ import annotations

import os

MAXD = 8  # dims passed as scalar arguments to strided kernels (more are split on the host)
STRIDED_RUN = 64  # elements of an innermost row per work-item of a strided kernel (strided_runs)

_HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(_HERE, "helpers.cl")) as _f:
    HELPERS = _f.read()

# name: (storage type, compute type, kind, unsigned type) with kind f(loat), i(nt), u(nsigned), b(ool)
DTYPES = {
    "bool": ("uchar", "uchar", "b", "uchar"),
    "uint8": ("uchar", "uchar", "u", "uchar"),
    "int8": ("char", "char", "i", "uchar"),
    "int16": ("short", "short", "i", "ushort"),
    "int32": ("int", "int", "i", "uint"),
    "int64": ("long", "long", "i", "ulong"),
    "float16": ("half", "float", "f", None),
    "bfloat16": ("ushort", "float", "f", None),
    "float32": ("float", "float", "f", None),
    "float64": ("double", "double", "f", None),
    "uint16": ("ushort", "ushort", "u", "ushort"),
    "uint32": ("uint", "uint", "u", "uint"),
    "uint64": ("ulong", "ulong", "u", "ulong"),
    "float8_e4m3fn": ("uchar", "float", "f", None),
    "float8_e5m2": ("uchar", "float", "f", None),
    "float8_e4m3fnuz": ("uchar", "float", "f", None),
    "float8_e5m2fnuz": ("uchar", "float", "f", None),
}

# The float8 formats: (mantissa bits, exponent bias, flavour) with the flavours of the CPU's
# float8_t (backends/cpu/csrc/common.h): 0 IEEE (e5m2: infinities, overflow to infinity),
# 1 finite with one NaN pattern per sign (e4m3fn: saturates at its largest value), 2 no -0 and
# 0x80 the only NaN (the fnuz types: overflow, infinities and NaN all become it).
FLOAT8_FORMATS = {
    "float8_e4m3fn": (3, 7, 1),
    "float8_e5m2": (2, 15, 0),
    "float8_e4m3fnuz": (3, 8, 2),
    "float8_e5m2fnuz": (2, 16, 2),
}

# float32 <-> float8 codes, the CPU's algorithm in OpenCL C (the format's arguments are constants
# at every call, so the compiler folds the flavour tests away). Encoding rounds the float32 bit
# pattern to nearest even: below the smallest normal number the spacing is fixed, so |f| scaled by
# a power of two (exact) is rounded to an integer code there; above it, adding half an ulp minus
# one plus the kept lowest bit rounds the significand, a carry moving into the exponent field.
_FLOAT8_HELPERS = """
uchar tp_float_to_f8(float f, int mbits, int bias, int flavour) {
    uint bits = as_uint(f);
    uint sign = (bits >> 24) & 0x80u;
    uint abits = bits & 0x7fffffffu;
    uint max_code = flavour == 0 ? 0x7bu : flavour == 1 ? 0x7eu : 0x7fu;
    uint overflow = flavour == 0 ? (sign | 0x7cu) : flavour == 1 ? (sign | max_code) : 0x80u;
    if (abits > 0x7f800000u) return (uchar)(flavour == 2 ? 0x80u : (sign | 0x7fu));
    if (abits == 0x7f800000u) return (uchar)overflow;
    uint code;
    if (abits < ((uint)(128 - bias) << 23)) {
        float scaled = as_float(abits) * as_float((uint)(127 + bias - 1 + mbits) << 23);
        code = (uint)rint(scaled);
    } else {
        int drop = 23 - mbits;
        uint rounded = abits + ((1u << (drop - 1)) - 1u) + ((abits >> drop) & 1u);
        code = (rounded >> drop) - ((uint)(127 - bias) << mbits);
    }
    if (code > max_code) return (uchar)overflow;
    if (flavour == 2 && code == 0) return (uchar)0;
    return (uchar)(sign | code);
}
float tp_f8_to_float(uchar x, int mbits, int bias, int flavour) {
    uint sign = (uint)(x & 0x80u) << 24;
    uint mask = (1u << mbits) - 1u, top = 0x7fu >> mbits;
    uint e = ((uint)x >> mbits) & top, m = x & mask;
    if (flavour == 2 && x == 0x80u) return as_float(0x7fc00000u);
    if (flavour == 1 && e == top && m == mask) return as_float(sign | 0x7fc00000u);
    if (flavour == 0 && e == top) return as_float(sign | (m ? 0x7fc00000u : 0x7f800000u));
    if (e == 0) return as_float(as_uint((float)m * as_float((uint)(127 + 1 - bias - mbits) << 23)) | sign);
    return as_float(sign | ((e + 127u - (uint)bias) << 23) | (m << (23 - mbits)));
}
"""


def kind(dtype: str) -> str:
    return DTYPES[dtype][2]


def type_defs(dtype: str, tag: str) -> str:
    """The macros of one dtype under the suffix ``tag``."""
    storage, compute, k, _ = DTYPES[dtype]
    if dtype == "float16":
        load, store = "vload_half((i), (p))", "vstore_half_rte((v), (i), (p))"
    elif dtype == "bfloat16":
        load, store = "tp_bf16_to_float((p)[i])", "((p)[i] = tp_float_to_bf16(v))"
    elif dtype in FLOAT8_FORMATS:
        fmt = ", ".join(str(v) for v in FLOAT8_FORMATS[dtype])
        load, store = f"tp_f8_to_float((p)[i], {fmt})", f"((p)[i] = tp_float_to_f8((float)(v), {fmt}))"
    elif dtype == "bool":
        load, store = "((p)[i])", "((p)[i] = (uchar)((v) != 0))"
    else:
        load, store = "((p)[i])", f"((p)[i] = ({storage})(v))"
    return (f"typedef {storage} T_{tag};\ntypedef {compute} C_{tag};\n"
            f"#define LD_{tag}(p, i) {load}\n#define ST_{tag}(p, i, v) {store}\n")


def lanewise(vector: str, width: int, *functions: str) -> str:
    """OpenCL C functions ``lanewise_F(v)`` that apply the library's scalar ``F`` to each of the
    ``width`` lanes of a ``vector``: how a 512-bit vector (double8) reaches exp or log. pip's PoCL
    3.0 passes 512-bit vectors to its library with another ABI than the library was built for where
    LLVM's target for the CPU lacks AVX-512 and the CPU has it (AMD Zen 4, taken for znver3): the
    kernel crashes, and the same program read back from PoCL's cache has no kernels
    (tests/opencl/test_program_builds.py)."""
    return "".join(f"{vector} lanewise_{name}({vector} v) {{ return ({vector})("
                   + ", ".join(f"{name}(v.s{q:x})" for q in range(width)) + "); }\n" for name in functions)


def preamble(fp64: bool, *dtypes: str) -> str:
    parts = []
    if fp64:
        parts.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n")
    parts.append(HELPERS)
    if any(d in FLOAT8_FORMATS for d in dtypes):
        parts.append(_FLOAT8_HELPERS)
    # OpenCL compilers only (PoCL on the CPU): CUDA's dialect compiles the same text, one element per thread.
    parts.append(f"#ifdef __OPENCL_VERSION__\n#define TP_RUN {STRIDED_RUN}\n#else\n#define TP_RUN 1\n#endif\n")
    for d in dict.fromkeys(dtypes):
        parts.append(type_defs(d, d))
    return "".join(parts)


def guarded(body: str) -> str:
    """``body`` (statements using ``i`` < ``n``) under TP_WHOLE_GROUP (helpers.cl): unguarded for
    every work-group but the last, which checks ``i < n`` per work-item. One copy of the body
    under ``whole || i < n``: PoCL 3.0 vectorizes it as it does two copies (``if whole {body}
    else if (i < n) {body}``, the form before), but a body with a division or a bit cast ran 3-5x
    slower in two copies (sigmoid of 1.28e6 float32 4.1 against 1.5 ms, log 4.2 against 1.4)."""
    return f"if (TP_WHOLE_GROUP(n) || i < n) {{{body}\n    }}"


def _dims(prefix: str) -> str:
    return ", ".join(f"long {prefix}{k}" for k in range(MAXD))


def _array(name: str, prefix: str) -> str:
    return f"long {name}[{MAXD}] = {{{', '.join(f'{prefix}{k}' for k in range(MAXD))}}};"


_OA = (("io", "st_o", "oo"), ("ia", "st_a", "oa"))  # out and one input, for strided_runs


def strided_runs(offsets, body: str) -> str:
    """A strided kernel's body over runs of its innermost dim: each work-item takes up to TP_RUN
    consecutive elements of one row of dim ``nd - 1``, decomposes its row index over the outer
    dims once, then steps each operand's offset by its innermost stride. ``offsets`` pairs an
    offset variable with its stride array and base argument (``("io", "st_o", "oo")``); ``body``
    uses those variables for the current element. The host launches strided_items() work-items
    (kernels.py). One decomposition per element (64-bit divisions through private arrays, and a
    per-work-item exit that stops PoCL vectorizing) made the copy of an expanded 32x128x26x26
    gradient 60 ms on pip's PoCL 3.0; TP_RUN is 1 where each work-item should take one element
    (CUDA: neighbouring threads then read neighbouring elements)."""
    first = ", ".join(f"{var} = {base} + j0_ * {st}[nd - 1]" for var, st, base in offsets)
    outer = " ".join(f"{var} += c * {st}[k];" for var, st, _ in offsets)
    steps = ", ".join(f"{var}_step = {st}[nd - 1]" for var, st, _ in offsets)
    advance = ", ".join(f"{var} += {var}_step" for var, _, _ in offsets)
    return f"""long inner_ = sh[nd - 1], chunks_ = (inner_ + TP_RUN - 1) / TP_RUN;
    long item_ = get_global_id(0);
    if (item_ >= n / inner_ * chunks_) return;
    long row_ = item_ / chunks_, j0_ = (item_ - row_ * chunks_) * TP_RUN;
    long run_ = inner_ - j0_ < TP_RUN ? inner_ - j0_ : TP_RUN;
    long {first};
    {{ long rem = row_; for (int k = nd - 2; k >= 0; --k) {{ long c = rem % sh[k]; rem /= sh[k]; {outer} }} }}
    long {steps};
    for (long j_ = 0; j_ < run_; ++j_, {advance}) {{{body}
    }}"""


# --- elementwise -----------------------------------------------------------------------------

# Functions _FLOAT_LANES gives float computations with operators only (see there).
_LANE_FUNCTIONS = ("exp", "log", "tanh", "erf")


def _unary_expr(op: str, k: str, single: bool = False):
    """C expression of op on x (compute type C), or None where the dtype does not take the op;
    ``single``: C is float, and _FLOAT_LANES's functions replace the built-ins they cover."""
    f = k == "f"
    if single and op in _LANE_FUNCTIONS:
        return f"tp_f{op}(x)"
    if single and op == "sigmoid":
        return "(1.0f / (1.0f + tp_fexp(-x)))"
    if op in ("exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "asin",
              "acos", "atan", "sinh", "cosh", "tanh", "erf"):
        return f"{op}(x)" if f else None
    table = {
        "neg": "-x" if f else None if k == "b" else "(C)(0UL - (ulong)x)",
        "abs": "fabs(x)" if f else "(x < 0 ? (C)(0UL - (ulong)x) : x)" if k == "i" else "x",
        "sign": "(C)((x > 0) - (x < 0))",  # sign(NaN) is 0, as in PyTorch (the contract's rule)
        "rsqrt": "((C)1 / sqrt(x))" if f else None,
        "sigmoid": "((C)1 / ((C)1 + exp(-x)))" if f else None,
        "erfinv": "tp_erfinv(x)" if f else None,
        "floor": "floor(x)" if f else "x",
        "ceil": "ceil(x)" if f else "x",
        "round": "rint(x)" if f else "x",
        "trunc": "trunc(x)" if f else "x",
        "reciprocal": "((C)1 / x)" if f else None,
        "square": "x" if k == "b" else "x * x" if f else "(C)((ulong)x * (ulong)x)",
        "logical_not": "(x == 0)",
        "bitwise_not": None if f else "(C)(!x)" if k == "b" else "(C)(~x)",
        "isnan": "isnan(x)" if f else "0",
        "isinf": "isinf(x)" if f else "0",
        "isfinite": "isfinite(x)" if f else "1",
    }
    return table[op]


BOOL_OUT_UNARY = ("logical_not", "isnan", "isinf", "isfinite")
BOOL_OUT_BINARY = ("logical_and", "logical_or", "logical_xor", "eq", "ne", "lt", "le", "gt", "ge")
# Integer ops that may record an error (division by zero) in the flag.
FLAGGING = ("floor_divide", "remainder", "fmod")

_ERFINV = """
C tp_erfinv(C yc) {
    double y = (double)yc;
    if (!(y > -1.0 && y < 1.0)) return (C)(y == 1.0 ? INFINITY : y == -1.0 ? -INFINITY : NAN);
    if (y == 0.0) return yc;
    double w = -log((1.0 - y) * (1.0 + y)), p;
    if (w < 5.0) {
        w -= 2.5; p = 2.81022636e-08; p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w; p = 0.00021858087 + p * w; p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w; p = 0.246640727 + p * w; p = 1.50140941 + p * w;
    } else {
        w = sqrt(w) - 3.0; p = -0.000200214257; p = 0.000100950558 + p * w; p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w; p = 0.00573950773 + p * w; p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w; p = 1.00167406 + p * w; p = 2.83297682 + p * w;
    }
    double sgn = y < 0 ? -1.0 : 1.0, ay = fabs(y), x = fabs(p * y);
    for (int i = 0; i < 2; ++i) {
        double d = 1.1283791670955126 * exp(-x * x);
        if (d == 0.0) break;
        if (ay <= 0.5) x -= (erf(x) - ay) / d; else x += (erfc(x) - (1.0 - ay)) / d;
    }
    return (C)(sgn * x);
}
"""
# Without float64 the refinement runs in float32.
_ERFINV_F32 = _ERFINV.replace("double", "float").replace("1.1283791670955126", "1.1283791670955126f")


def _binary_expr(op: str, k: str):
    f, b = k == "f", k == "b"
    wrap = lambda sym: f"(C)((ulong)x {sym} (ulong)y)"  # noqa: E731 - integer ops wrap around
    table = {
        "add": "x + y" if f else "(C)(x | y)" if b else wrap("+"),
        "sub": None if b else "x - y" if f else wrap("-"),
        "mul": "x * y" if f else "(C)(x & y)" if b else wrap("*"),
        "div": "x / y" if f else None,
        "floor_divide": None if b else "tp_floordiv(x, y)" if f else "tp_int_floordiv(x, y, err)",
        "remainder": None if b else "tp_remainder(x, y)" if f else "tp_int_remainder(x, y, err)",
        "fmod": None if b else "fmod(x, y)" if f else "tp_int_fmod(x, y, err)",
        "pow": None if b else "pow(x, y)" if f else "tp_int_pow(x, y)",
        "maximum": "(isnan(x) ? x : isnan(y) ? y : (x > y ? x : y))" if f else "(x > y ? x : y)",
        "minimum": "(isnan(x) ? x : isnan(y) ? y : (x < y ? x : y))" if f else "(x < y ? x : y)",
        "atan2": "atan2(x, y)" if f else None,
        "copysign": "copysign(x, y)" if f else None,
        "hypot": "hypot(x, y)" if f else None,
        "bitwise_and": None if f else "(C)(x & y)",
        "bitwise_or": None if f else "(C)(x | y)",
        "bitwise_xor": None if f else "(C)(x ^ y)",
        "bitwise_left_shift": "tp_lshift(x, y)" if k in "iu" else None,
        "bitwise_right_shift": "tp_rshift(x, y)" if k in "iu" else None,
        "logical_and": "((x != 0) && (y != 0))",
        "logical_or": "((x != 0) || (y != 0))",
        "logical_xor": "((x != 0) != (y != 0))",
        "eq": "(x == y)", "ne": "(x != y)", "lt": "(x < y)", "le": "(x <= y)", "gt": "(x > y)", "ge": "(x >= y)",
    }
    return table[op]


_FLOAT_HELPERS = """
C tp_floordiv(C a, C b) {
    if (b == 0) return a / b;
    C m = fmod(a, b);
    C d = (a - m) / b;
    if (m != 0 && ((b < 0) != (m < 0))) d -= 1;
    if (d == 0) return copysign((C)0, a / b);
    C fl = floor(d);
    if (d - fl > (C)0.5) fl += 1;
    return fl;
}
C tp_remainder(C a, C b) {
    C m = fmod(a, b);  /* a zero keeps fmod's sign (the dividend's), as in PyTorch */
    if (m != 0 && ((b < 0) != (m < 0))) m += b;
    return m;
}
"""


def _exp_polynomial(real: str, integer: str) -> str:
    """Cephes expf's core on ``xc``: n = round(xc / ln 2) from adding 1.5 * 2^23 (the FMA rounds
    once; the integer is the low bits of the sum), and y = exp(xc - n ln 2) in [sqrt(1/2), sqrt(2)]."""
    return f"""{real} big = xc * 1.44269504088896341f + 12582912.0f;
    {real} nf = big - 12582912.0f;
    {integer} n = as_{integer}(big) - 0x4B400000;
    {real} r = (xc - nf * 0.693359375f) - nf * -2.12194440e-4f;
    {real} y = 1.9875691500e-4f;
    y = y * r + 1.3981999507e-3f; y = y * r + 8.3334519073e-3f; y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f; y = y * r + 5.0000001201e-1f;
    y = (y * (r * r) + r) + 1.0f;"""


def float_exp(name: str, real: str, integer: str) -> str:
    """OpenCL C for ``real name(real x)``: Cephes expf with operators and bit casts only, for
    ``float`` or a float vector (``integer`` its int type of as many lanes). The input is clamped
    to [-104, 89] (a NaN passes: both comparisons are false), and overflow to inf and underflow
    through the subnormals to 0 happen in the two scale factors 2^(n/2): no selects for the
    special values (the CPU's exp8 does the same; with them and rounding through an int
    conversion, the exp kernel took 1.5-2x the CPU time on PoCL)."""
    return f"""{real} {name}({real} x) {{
    {real} xc = x > 89.0f ? ({real})(89.0f) : x;
    xc = xc < -104.0f ? ({real})(-104.0f) : xc;
    {_exp_polynomial(real, integer)}
    {integer} n1 = n >> 1, n2 = n - n1;
    return (y * as_{real}((n1 + 127) << 23)) * as_{real}((n2 + 127) << 23);
}}
"""


def float_exp_shifted(name: str, real: str, integer: str) -> str:
    """``float_exp`` for x <= 0 or NaN, as x - max(row) in a softmax: 2^n is one normal float
    for every x >= ln(2^-126), and below it the result is 0 (a subnormal exp is under 1.2e-38,
    nothing beside a row's largest exp of 1; -inf gives 0 exactly, NaN stays NaN). Without the
    clamps and the split scale it is 19 vector instructions instead of 25: the sum of exps in
    softmax over 128x10000 float32 took 0.76 ms instead of 1.04 (load 4.4)."""
    return f"""{real} {name}({real} x) {{
    {real} xc = x;
    {_exp_polynomial(real, integer)}
    y = y * as_{real}((n + 127) << 23);
    return x < -87.33654475f ? ({real})(0.0f) : y;
}}
"""


# exp, log, tanh and erf of a float with operators and bit casts only. pip's PoCL 3.0 builds its
# kernel library for a generic ISA level, so every built-in is a call that stops PoCL vectorizing
# across work-items: exp of 128x10000 float32 took 6.45 ms against PyTorch's 1.0 on the CPU, gelu
# 19 ms. These inline, and select instead of branching. The formulas are the CPU backend's
# eight-lane ones (backends/cpu/csrc/simd.h: Cephes expf and logf, tanh's Taylor series below 0.5,
# erf's Cephes polynomial below 1 and Abramowitz-Stegun 7.1.26 above), with contraction on for these functions only
# (helpers.cl turns it off for the rest: under it the same exp kernel took 3.8 ms instead of 0.72
# on PoCL, measured alone). Other compilers (CUDA's NVRTC through backends/cuda/_dialect.py) keep their built-ins.
_FLOAT_LANES = """
#ifdef __OPENCL_VERSION__
/* contraction on here only: under helpers.cl's FP_CONTRACT OFF these ran 5x slower on PoCL */
#pragma OPENCL FP_CONTRACT ON
""" + float_exp("tp_fexp", "float", "int") + """float tp_flog(float x) {
    int sub = x < 1.17549435e-38f;
    int bits = as_int(sub ? x * 8388608.0f : x);
    float e = (float)(((bits >> 23) & 0xff) - 126) - (sub ? 23.0f : 0.0f);
    float m = as_float((bits & 0x007fffff) | 0x3f000000);
    int low = m < 0.707106781186547524f;
    e = low ? e - 1.0f : e;
    m = low ? (m + m) - 1.0f : m - 1.0f;
    float z = m * m;
    float p = 7.0376836292e-2f;
    p = p * m - 1.1514610310e-1f; p = p * m + 1.1676998740e-1f; p = p * m - 1.2420140846e-1f;
    p = p * m + 1.4249322787e-1f; p = p * m - 1.6668057665e-1f; p = p * m + 2.0000714765e-1f;
    p = p * m - 2.4999993993e-1f; p = p * m + 3.3333331174e-1f;
    float y = (m * z) * p + e * -2.12194440e-4f;
    y = y - 0.5f * z;
    float r = (m + y) + e * 0.693359375f;
    r = x == 0.0f ? -INFINITY : (x == INFINITY ? x : r);
    return (x < 0.0f || x != x) ? NAN : r;
}
float tp_ftanh(float x) {
    float a = x < 0.0f ? -x : x, z = a * a;
    float p = -929569.0f / 638512875.0f;
    p = p * z + 21844.0f / 6081075.0f; p = p * z - 1382.0f / 155925.0f; p = p * z + 62.0f / 2835.0f;
    p = p * z - 17.0f / 315.0f; p = p * z + 2.0f / 15.0f; p = p * z - 1.0f / 3.0f;
    float small = a + (a * z) * p;
    float large = 1.0f - 2.0f / (tp_fexp(a + a) + 1.0f);
    float y = a < 0.5f ? small : large;
    return x == 0.0f ? x : (x < 0.0f ? -y : y);
}
float tp_ferf(float x) {
    float a = x < 0.0f ? -x : x, z = a * a;
    float p = 7.853861353153693e-5f;
    p = p * z - 8.010193625184903e-4f; p = p * z + 5.188327685732524e-3f; p = p * z - 2.685381193529856e-2f;
    p = p * z + 1.128358514861418e-1f; p = p * z - 3.761262582423300e-1f; p = p * z + 1.128379165726710f;
    float small = a * p;
    float t = 1.0f / (1.0f + 0.3275911f * a);
    float q = 1.061405429f;
    q = q * t - 1.453152027f; q = q * t + 1.421413741f; q = q * t - 0.284496736f; q = q * t + 0.254829592f;
    float large = 1.0f - (t * q) * tp_fexp(-z);
    float y = a < 1.0f ? small : large;
    return x == 0.0f ? x : (x < 0.0f ? -y : y);
}
#pragma OPENCL FP_CONTRACT OFF
#else
#define tp_fexp(x) exp(x)
#define tp_flog(x) log(x)
#define tp_ftanh(x) tanh(x)
#define tp_ferf(x) erf(x)
#endif
"""

_INT_HELPERS = """
C tp_int_floordiv(C a, C b, __global long* err) {
    if (b == 0) { tp_raise(err, TP_ERR_ZERO_DIV, 0, 0, 0); return 0; }
    if (!SIGNED) return (C)(a / b);  /* unsigned: no sign to floor toward, and uint64 exceeds long */
    long x = a, y = b;
    if (y == -1) return (C)(0UL - (ulong)x);
    long q = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
    return (C)q;
}
C tp_int_remainder(C a, C b, __global long* err) {
    if (b == 0) { tp_raise(err, TP_ERR_ZERO_DIV, 0, 0, 0); return 0; }
    if (!SIGNED) return (C)(a % b);
    long x = a, y = b;
    if (y == -1) return 0;
    long r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return (C)r;
}
C tp_int_fmod(C a, C b, __global long* err) {
    if (b == 0) { tp_raise(err, TP_ERR_ZERO_DIV, 0, 0, 0); return 0; }
    if (!SIGNED) return (C)(a % b);
    long x = a, y = b;
    if (y == -1) return 0;
    return (C)(x % y);
}
C tp_int_pow(C a, C b) {
    /* A negative exponent: 1 stays 1, -1 alternates, every other base (0 too) gives 0. */
    if (SIGNED && (long)b < 0) return a == 1 ? (C)1 : a == -1 ? (((long)b & 1) ? (C)-1 : (C)1) : (C)0;
    ulong base = (ulong)(long)a, e = (ulong)(long)b, r = 1;
    while (e) { if (e & 1) r *= base; base *= base; e >>= 1; }
    return (C)r;
}
C tp_lshift(C a, C b) {
    long s = (long)b;
    if (s < 0 || s >= BITS) return 0;
    return (C)((U)a << s);
}
C tp_rshift(C a, C b) {
    long s = (long)b;
    if (s < 0 || s >= BITS) return SIGNED && a < 0 ? (C)-1 : (C)0;
    return (C)(a >> s);
}
"""


def _main_type(dtype: str, fp64: bool) -> str:
    storage, compute, k, unsigned = DTYPES[dtype]
    text = f"#define T T_{dtype}\n#define C C_{dtype}\n#define LD LD_{dtype}\n#define ST ST_{dtype}\n"
    if k in "iub":
        bits = {"uchar": 8, "char": 8, "short": 16, "ushort": 16, "int": 32, "uint": 32, "long": 64,
                "ulong": 64}[storage]
        text += f"#define U {unsigned}\n#define BITS {bits}\n#define SIGNED {1 if k == 'i' else 0}\n"
    return text


def elementwise(dtype: str, fp64: bool) -> tuple[str, dict]:
    """The unary, binary, compare, where and fill kernels of one dtype, and their argument kinds.

    Each op gets a contiguous kernel per operand mode (``_tt`` tensor-tensor, ``_ts``/``_st``
    with a number on one side) and one strided kernel ``_s`` taking shapes and strides.
    """
    k = kind(dtype)
    src = [preamble(fp64, dtype, "bool"), _main_type(dtype, fp64)]
    single = DTYPES[dtype][1] == "float"
    if k == "f":
        src.append(_FLOAT_HELPERS)
        src.append(_ERFINV if fp64 else _ERFINV_F32)
        if single:
            src.append(_FLOAT_LANES)
    else:
        src.append(_INT_HELPERS)
    ops: dict = {}
    from ..api import FAMILIES

    strided_args = f"int nd, {_dims('d')}, {_dims('so')}"
    for op in FAMILIES["unary"]:
        expr = _unary_expr(op, k, single and k == "f")
        if expr is None:
            continue
        out = "bool" if op in BOOL_OUT_UNARY else dtype
        body = guarded(f"""
        C x = LD(a, oa + i);
        ST_{out}(o, oo + i, {expr});""")
        src.append(f"""
__kernel void {op}_c(__global T_{out}* o, long oo, __global const T* a, long oa, long n) {{
    long i = get_global_id(0);
    {body}
}}
__kernel void {op}_s(__global T_{out}* o, long oo, __global const T* a, long oa, long n, {strided_args}, {_dims('sa')}) {{
    {_array('sh', 'd')} {_array('st_o', 'so')} {_array('st_a', 'sa')}
    {strided_runs(_OA, f'''
        C x = LD(a, ia);
        ST_{out}(o, io, {expr});''')}
}}""")
        ops[op] = "unary"
    for op in FAMILIES["binary"] + FAMILIES["compare"]:
        expr = _binary_expr(op, k)
        if expr is None:
            continue
        out = "bool" if op in BOOL_OUT_BINARY else dtype
        head = f"__global T_{out}* o, long oo, __global const T* a, long oa, __global const T* b, long ob, C sa, C sb"
        # tv / vt: one side a single element read on the device (a number broadcast as a tensor:
        # a 0-d gradient expanded by sum's backward), which the strided kernel took before.
        for mode, xa, yb in (("tt", "LD(a, oa + i)", "LD(b, ob + i)"), ("ts", "LD(a, oa + i)", "sb"), ("st", "sa", "LD(b, ob + i)"),
                             ("tv", "LD(a, oa + i)", "LD(b, ob)"), ("vt", "LD(a, oa)", "LD(b, ob + i)")):
            body = guarded(f"""
        C x = {xa};
        C y = {yb};
        ST_{out}(o, oo + i, {expr});""")
            src.append(f"""
__kernel void {op}_{mode}({head}, long n, __global long* err) {{
    long i = get_global_id(0);
    {body}
}}""")
        # tr / rt: one side a row of rn elements repeated down the rows of the other (a bias
        # added to a batch): one remainder per element instead of the strided kernel's loop
        # over eight dims (0.64 ms against PyTorch's 0.03 for a 128 x 512 batch).
        for mode, xa, yb in (("tr", "LD(a, oa + i)", "LD(b, ob + i % rn)"), ("rt", "LD(a, oa + i % rn)", "LD(b, ob + i)")):
            body = guarded(f"""
        C x = {xa};
        C y = {yb};
        ST_{out}(o, oo + i, {expr});""")
            src.append(f"""
__kernel void {op}_{mode}({head}, long n, __global long* err, long rn) {{
    long i = get_global_id(0);
    {body}
}}""")
        src.append(f"""
__kernel void {op}_s({head}, int m, long n, __global long* err, {strided_args}, {_dims('sa')}, {_dims('sb')}) {{
    {_array('sh', 'd')} {_array('st_o', 'so')} {_array('st_a', 'sa')} {_array('st_b', 'sb')}
    {strided_runs(_OA + (("ib", "st_b", "ob"),), f'''
        C x = (m & 1) ? sa : LD(a, ia);
        C y = (m & 2) ? sb : LD(b, ib);
        ST_{out}(o, io, {expr});''')}
}}""")
        ops[op] = "binary"
    fill = guarded("""
        ST(o, oo + i, v);""")
    src.append(f"""
__kernel void where_s(__global T* o, long oo, __global const uchar* c, long oc, __global const T* a, long oa,
                      __global const T* b, long ob, C sa, C sb, int m, long n, {strided_args}, {_dims('sc')}, {_dims('sa')}, {_dims('sb')}) {{
    {_array('sh', 'd')} {_array('st_o', 'so')} {_array('st_c', 'sc')} {_array('st_a', 'sa')} {_array('st_b', 'sb')}
    {strided_runs((("io", "st_o", "oo"), ("ic", "st_c", "oc"), ("ia", "st_a", "oa"), ("ib", "st_b", "ob")), '''
        if (c[ic]) ST(o, io, (m & 1) ? sa : LD(a, ia)); else ST(o, io, (m & 2) ? sb : LD(b, ib));''')}
}}
__kernel void fill_c(__global T* o, long oo, C v, long n) {{
    long i = get_global_id(0);
    {fill}
}}
__kernel void fill_s(__global T* o, long oo, C v, long n, {strided_args}) {{
    {_array('sh', 'd')} {_array('st_o', 'so')}
    {strided_runs((("io", "st_o", "oo"),), '''
        ST(o, io, v);''')}
}}""")
    return "".join(src), ops


# --- conversions -------------------------------------------------------------------------------

def _convert(dst: str, src: str, fp64: bool) -> str:
    """C expression converting x (compute type of src) to the compute type of dst, as the CPU does:
    to bool is != 0; float to integer truncates toward zero (out of range gives INT64_MIN, then
    wraps; uint64 has its own rule); into float16/bfloat16 from wider types rounds once (through
    float64 or round-to-odd); into float8 goes through float32 from every type."""
    dk, sk = kind(dst), kind(src)
    if dst == src:
        return "x"
    if dk == "b":
        return "(x != 0)"
    if dk in "iu":
        if sk == "f":
            wide = "double" if fp64 else "float"
            if dst == "uint64":
                # [0, 2**64) directly, negative values through int64 (they wrap), the rest and NaN
                # 0: the CPU's rule (docs/deviations.md), exact in float32 too (powers of two).
                return (f"(({wide})x >= 0.0 && ({wide})x < 18446744073709551616.0 ? (ulong)x : "
                        f"({wide})x >= -9223372036854775808.0 && ({wide})x < 0.0 ? (ulong)(long)x : 0UL)")
            return (f"(C_{dst})(({wide})x >= -9223372036854775808.0 && ({wide})x < 9223372036854775808.0 "
                    f"? (long)x : (long)0x8000000000000000UL)")
        return f"(C_{dst})x"
    # floating destination
    if dst in FLOAT8_FORMATS:
        return "(float)x"  # through float32 from every dtype, as PyTorch converts (docs/dtypes.md)
    wide_sources = ("float64", "int64", "int32", "uint64", "uint32")
    if dst == "float16" and src in wide_sources and fp64:
        return "(double)x"  # vstore_half_rte(double) rounds once
    if dst == "bfloat16" and src in wide_sources and fp64:
        return "tp_f64_to_f32_odd((double)x)"
    return f"(C_{dst})x"


_ROUND_ODD = """
float tp_f64_to_f32_odd(double d) {
    float f = convert_float_rtz(d);
    if ((double)f != d && !isnan(d) && !isinf(f)) f = as_float(as_uint(f) | 1u);
    return f;
}
"""


def copy(dst: str, fp64: bool, sources) -> str:
    """Conversion kernels into ``dst`` from each dtype in ``sources``: ``copy_<src>_c`` / ``_s``, and
    ``_1`` from one element (every source stride 0)."""
    src = [preamble(fp64, dst, *sources)]
    if fp64:
        src.append(_ROUND_ODD)
    for s in sources:
        expr = _convert(dst, s, fp64)
        st = f"ST_{dst}(o, io, {expr})"
        body = guarded(f"""
        C_{s} x = LD_{s}(a, oa + i);
        long io = oo + i;
        {st};""")
        one_body = guarded(f"""
        long io = oo + i;
        {st};""")
        src.append(f"""
__kernel void copy_{s}_c(__global T_{dst}* o, long oo, __global const T_{s}* a, long oa, long n) {{
    long i = get_global_id(0);
    {body}
}}
/* one source element into every element of a contiguous destination (an expanded 0-d tensor) */
__kernel void copy_{s}_1(__global T_{dst}* o, long oo, __global const T_{s}* a, long oa, long n) {{
    long i = get_global_id(0);
    C_{s} x = LD_{s}(a, oa);
    {one_body}
}}
__kernel void copy_{s}_s(__global T_{dst}* o, long oo, __global const T_{s}* a, long oa, long n,
                         int nd, {_dims('d')}, {_dims('so')}, {_dims('sa')}) {{
    {_array('sh', 'd')} {_array('st_o', 'so')} {_array('st_a', 'sa')}
    {strided_runs(_OA, f'''
        C_{s} x = LD_{s}(a, ia);
        {st};''')}
}}""")
    return "".join(src)


# --- reductions and scans ----------------------------------------------------------------------

def accumulator(dtype: str, fp64: bool) -> str:
    k = kind(dtype)
    if k in "iub":
        return "long"
    if dtype == "float64" or fp64:
        return "double"
    return "float"


def reduce(dtype: str, fp64: bool) -> str:
    """sum prod amax amin all any argmax argmin: one work-item per output element, looping over
    the reduced elements (the innermost reduced dim as the inner loop); cumsum/cumprod: one
    work-item per line."""
    k = kind(dtype)
    acc = accumulator(dtype, fp64)
    sum_out = dtype if k == "f" else "int64"
    src = [preamble(fp64, dtype, "bool", "int64"), _main_type(dtype, fp64), f"typedef {acc} ACC;\n",
           f"#ifdef __OPENCL_VERSION__\ntypedef {acc}8 ACC8;\n#endif\n"]
    kept = f"int kd, {_dims('k')}, {_dims('ko')}, {_dims('ka')}, int rd, {_dims('r')}, {_dims('ra')}"
    setup = f"""
    long i = get_global_id(0);
    if (i >= nout) return;
    {_array('ksh', 'k')} {_array('kso', 'ko')} {_array('ksa', 'ka')} {_array('rsh', 'r')} {_array('rsa', 'ra')}
    long io = oo, base = oa;
    {{ long rem = i; for (int q = kd - 1; q >= 0; --q) {{ long c = rem % ksh[q]; rem /= ksh[q]; io += c * kso[q]; base += c * ksa[q]; }} }}
    long inner = rsh[rd - 1], inner_st = rsa[rd - 1], outer = inner > 0 ? nred / inner : 0;"""
    loop = """
    for (long r = 0; r < outer; ++r) {
        long ia = base;
        { long rem = r; for (int q = rd - 2; q >= 0; --q) { long c = rem % rsh[q]; rem /= rsh[q]; ia += c * rsa[q]; } }
        for (long j = 0; j < inner; ++j) {
            C x = LD(a, ia + j * inner_st);
            BODY
        }
    }"""
    bodies = {
        "sum": (sum_out, "ACC s = 0;", "s += (ACC)x;", "s"),
        "prod": (sum_out, "ACC s = 1;", "s *= (ACC)x;", "s"),
        "all": ("bool", "int s = 1;", "if (x == 0) s = 0;", "s"),
        "any": ("bool", "int s = 0;", "if (x != 0) s = 1;", "s"),
    }
    if k == "f":
        # NaN propagates: once s is NaN it stays (comparisons with NaN are false). A select, not a
        # branch, so that the loop can vectorize; x != x, not isnan(x), which pip's PoCL 3.0 calls
        # in its library per element (matmul_blocked): amax over the rows of 128x10000, 4.0 ms.
        bodies["amax"] = (dtype, "C s = LD(a, base);", "s = (x != x || x > s) ? x : s;", "s")
        bodies["amin"] = (dtype, "C s = LD(a, base);", "s = (x != x || x < s) ? x : s;", "s")
    else:
        bodies["amax"] = (dtype, "C s = LD(a, base);", "if (x > s) s = x;", "s")
        bodies["amin"] = (dtype, "C s = LD(a, base);", "if (x < s) s = x;", "s")
    # Contiguous runs in vector lanes: sums (_SUM_UNROLLED) and floating maxima and minima.
    blocks = _SUM_BLOCKS if k == "f" and DTYPES[dtype][1] == "float" and acc == "double" else ""
    unrolled = {"sum": _SUM_UNROLLED.replace("SUM_BLOCKS", blocks)}
    if k == "f":
        unrolled["amax"] = _extreme_unrolled(DTYPES[dtype][1], ">")
        unrolled["amin"] = _extreme_unrolled(DTYPES[dtype][1], "<")
    for name, (out, init, body, result) in bodies.items():
        one_pass = loop.replace('BODY', body)
        if name in unrolled:
            one_pass = one_pass.replace("for (long j = 0; j < inner; ++j) {",
                                        "long j = 0, jend = inner;\n        " + unrolled[name] + "\n        for (; j < jend; ++j) {")
        src.append(f"""
__kernel void r_{name}(__global T_{out}* o, long oo, __global const T* a, long oa, long nout, long nred, {kept}) {{
    {setup}
    {init}
    {one_pass}
    ST_{out}(o, io, {result});
}}""")
        # The same loop over a whole contiguous tensor into one output, with five arguments
        # instead of the strided kernel's fifty (a small loss's sum: launch cost, not work).
        src.append(f"""
__kernel void rw_{name}(__global T_{out}* o, long oo, __global const T* a, long oa, long nred) {{
    if (get_global_id(0) != 0) return;
    long io = oo, base = oa, inner = nred, inner_st = 1, outer = 1;
    int rd = 1;
    long rsh[1] = {{nred}}, rsa[1] = {{1}};
    {init}
    {one_pass}
    ST_{out}(o, io, {result});
}}""")
    for name, better in (("argmax", ">"), ("argmin", "<")):
        nan_first = "if (isnan(s)) break; if (isnan(x)) { s = x; best = j; break; }" if k == "f" else ""
        src.append(f"""
__kernel void r_{name}(__global long* o, long oo, __global const T* a, long oa, long nout, long nred, {kept}) {{
    {setup}
    C s = LD(a, base);
    long best = 0;
    for (long j = 0; j < inner; ++j) {{
        C x = LD(a, base + j * inner_st);
        {nan_first}
        if (x {better} s) {{ s = x; best = j; }}
    }}
    o[io] = best;
}}""")
    src.append(_split_reductions(bodies, k, sum_out, kept, unrolled))
    for name, op, init in (("cumsum", "+", "0"), ("cumprod", "*", "1")):
        src.append(f"""
__kernel void {name}(__global T* o, long oo, __global const T* a, long oa, long nout, long len, long so_dim, long sa_dim,
                     int kd, {_dims('k')}, {_dims('ko')}, {_dims('ka')}) {{
    long i = get_global_id(0);
    if (i >= nout) return;
    {_array('ksh', 'k')} {_array('kso', 'ko')} {_array('ksa', 'ka')}
    long io = oo, ia = oa;
    {{ long rem = i; for (int q = kd - 1; q >= 0; --q) {{ long c = rem % ksh[q]; rem /= ksh[q]; io += c * kso[q]; ia += c * ksa[q]; }} }}
    ACC s = {init};
    for (long j = 0; j < len; ++j) {{
        s = s {op} (ACC)LD(a, ia + j * sa_dim);
        {"s = (ACC)(C)s;" if k in "iub" else ""}
        ST(o, io + j * so_dim, s);
    }}
}}""")
    return "".join(src)


# A contiguous run of a sum in 8 independent accumulators, then added pairwise: one accumulator
# is a chain of dependent additions that neither the CPU's pipelines nor PoCL's vectorizer can
# overlap without reassociating (contraction is off, helpers.cl), 4 cycles per element (sum of
# 1e7 float32 22.7 ms against PyTorch's 7.2). OpenCL compilers keep the 8 accumulators as the
# lanes of one vector (lane q sums the elements the scalar p<q> summed, so the result is the
# same bit for bit), loaded as one vector built from adjacent elements: one load and one add
# per 8 elements instead of 8 of each (a vload8, PoCL 3.0's built-in call, was slower: "The
# harness and the load-adaptive thread count" in docs/performance.md). NVRTC takes the scalars.
_SUM_UNROLLED = """if (inner_st == 1) {
#ifdef __OPENCL_VERSION__
            ACC8 pv = 0;
            SUM_BLOCKS
            for (; j + 8 <= jend; j += 8) {
                __global const T* q = a + ia + j;
                pv += (ACC8)((ACC)LD(q, 0), (ACC)LD(q, 1), (ACC)LD(q, 2), (ACC)LD(q, 3),
                             (ACC)LD(q, 4), (ACC)LD(q, 5), (ACC)LD(q, 6), (ACC)LD(q, 7));
            }
            s += ((pv.s0 + pv.s1) + (pv.s2 + pv.s3)) + ((pv.s4 + pv.s5) + (pv.s6 + pv.s7));
#else
            ACC p0 = 0, p1 = 0, p2 = 0, p3 = 0, p4 = 0, p5 = 0, p6 = 0, p7 = 0;
            for (; j + 8 <= jend; j += 8) {
                __global const T* q = a + ia + j;
                p0 += (ACC)LD(q, 0); p1 += (ACC)LD(q, 1); p2 += (ACC)LD(q, 2); p3 += (ACC)LD(q, 3);
                p4 += (ACC)LD(q, 4); p5 += (ACC)LD(q, 5); p6 += (ACC)LD(q, 6); p7 += (ACC)LD(q, 7);
            }
            s += ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7));
#endif
        }"""


# float32 (and the 16-bit floats, computed in float) summed into double: blocks of 16 vectors
# add in float first, the block's sum then into the double lanes (16 float roundings per lane
# before each double add, where PyTorch adds whole runs in float). The conversion and the wide
# add per vector doubled the loop's instructions: process CPU time of a sum of 1e6 float32 (in cache),
# 132-169 -> 80-106 us at load 9.5 (with the small work-groups of kernels._loop_global).
_SUM_BLOCKS = """for (; j + 128 <= jend; j += 128) {
                float8 b0 = 0, b1 = 0;
                for (int u = 0; u < 128; u += 16) {
                    __global const T* q = a + ia + j + u;
                    b0 += (float8)(LD(q, 0), LD(q, 1), LD(q, 2), LD(q, 3), LD(q, 4), LD(q, 5), LD(q, 6), LD(q, 7));
                    b1 += (float8)(LD(q, 8), LD(q, 9), LD(q, 10), LD(q, 11), LD(q, 12), LD(q, 13), LD(q, 14), LD(q, 15));
                }
                float8 bv = b0 + b1;
                pv += (ACC8)((ACC)bv.s0, (ACC)bv.s1, (ACC)bv.s2, (ACC)bv.s3, (ACC)bv.s4, (ACC)bv.s5, (ACC)bv.s6,
                             (ACC)bv.s7);
            }"""


def _extreme_unrolled(compute: str, better: str) -> str:
    """amax's (``better`` ">") or amin's contiguous run in the lanes of two vectors, then folded
    into s. A lane keeps its extreme ignoring NaN (a compare and a select) and whether it saw a
    NaN (a compare and an or), and the fold makes s NaN if any lane did: one select chain that
    tested for NaN too was a dependency of 4-5 cycles per 8 elements, which bounded amax over
    the rows of 128x10000 (1.09 ms as a scalar chain; process CPU time per call 0.22-0.27 ms
    with one vector chain, 0.09-0.11 ms now, load 7). Operators only: a double8 must not reach
    PoCL's library (lanewise)."""
    flags = "long" if compute == "double" else "int"

    def load(first: int) -> str:
        return f"({compute}8)(" + ", ".join(f"LD(q, {first + q})" for q in range(8)) + ")"

    fold = " ".join(f"x = m0.s{q}; s = (x != x || x {better} s) ? x : s; x = m1.s{q}; s = (x != x || x {better} s) ? x : s;"
                    for q in range(8))
    seen = " | ".join(f"nan8.s{q}" for q in range(8))
    return f"""if (inner_st == 1) {{
#ifdef __OPENCL_VERSION__
            {compute}8 m0 = ({compute}8)(s), m1 = m0;
            {flags}8 nan8 = 0;
            for (; j + 16 <= jend; j += 16) {{
                __global const T* q = a + ia + j;
                {compute}8 v0 = {load(0)}, v1 = {load(8)};
                nan8 |= (v0 != v0) | (v1 != v1);
                m0 = v0 {better} m0 ? v0 : m0;
                m1 = v1 {better} m1 ? v1 : m1;
            }}
            {{ C x; {fold} }}
            if ({seen}) s = (C)NAN;
#endif
        }}"""


def _split_reductions(bodies: dict, k: str, sum_out: str, kept: str, unrolled: dict) -> str:
    """A reduction with few outputs and many elements in two passes (so a full sum of a large
    tensor is not one work-item's loop): ``rp_<op>`` gives each of ``parts`` work-items per output
    a contiguous range of the reduced elements (in the order the one-pass kernel visits them) and
    writes a partial; ``rf_<op>`` combines each output's partials in order."""
    # The partial's type and how partials combine, per op.
    partial = {"sum": "ACC", "prod": "ACC", "all": "int", "any": "int", "amax": "C", "amin": "C"}
    combine = {"sum": "s += x;", "prod": "s *= x;", "all": "if (x == 0) s = 0;", "any": "if (x != 0) s = 1;"}
    if k == "f":
        combine["amax"] = "s = (x != x || x > s) ? x : s;"
        combine["amin"] = "s = (x != x || x < s) ? x : s;"
    else:
        combine["amax"], combine["amin"] = "if (x > s) s = x;", "if (x < s) s = x;"
    src = []
    for name, (out, init, body, result) in bodies.items():
        ptype = partial[name]
        run = unrolled.get(name, "")
        first = "ptype s = part[i * parts];".replace("ptype", ptype)
        final_init = first if name in ("amax", "amin") else init.replace("ACC s", f"{ptype} s").replace("int s", f"{ptype} s")
        src.append(f"""
__kernel void rp_{name}(__global {ptype}* part, __global const T* a, long oa, long nout, long nred, long parts,
                        long chunk, {kept}) {{
    long i = get_global_id(0);
    if (i >= nout * parts) return;
    long o = i / parts, p = i - o * parts;
    {_array('ksh', 'k')} {_array('ksa', 'ka')} {_array('rsh', 'r')} {_array('rsa', 'ra')}
    long base = oa;
    {{ long rem = o; for (int q = kd - 1; q >= 0; --q) {{ long c = rem % ksh[q]; rem /= ksh[q]; base += c * ksa[q]; }} }}
    long inner = rsh[rd - 1], inner_st = rsa[rd - 1];
    long t = p * chunk, t1 = min(nred, t + chunk);
    long r = t / inner, j = t - r * inner;
    {init}
    while (t < t1) {{
        long ia = base;
        {{ long rem = r; for (int q = rd - 2; q >= 0; --q) {{ long c = rem % rsh[q]; rem /= rsh[q]; ia += c * rsa[q]; }} }}
        long jend = min(inner, j + (t1 - t));
        t += jend - j;
        {run}
        for (; j < jend; ++j) {{
            C x = LD(a, ia + j * inner_st);
            {body}
        }}
        ++r;
        j = 0;
    }}
    part[i] = s;
}}
__kernel void rf_{name}(__global T_{out}* o, long oo, __global const {ptype}* part, long nout, long parts, int kd,
                        {_dims('k')}, {_dims('ko')}) {{
    long i = get_global_id(0);
    if (i >= nout) return;
    {_array('ksh', 'k')} {_array('kso', 'ko')}
    long io = oo;
    {{ long rem = i; for (int q = kd - 1; q >= 0; --q) {{ long c = rem % ksh[q]; rem /= ksh[q]; io += c * kso[q]; }} }}
    {final_init}
    for (long p = 0; p < parts; ++p) {{
        {ptype} x = part[i * parts + p];
        {combine[name]}
    }}
    ST_{out}(o, io, {result});
}}""")
    return "".join(src)


# --- matmul ------------------------------------------------------------------------------------
TILE = 16


def matmul(dtype: str, fp64: bool) -> str:
    """A tiled (16 x 16, local memory) batched matmul over arbitrary strides."""
    k = kind(dtype)
    acc = "long" if k in "iu" else ("double" if dtype == "float64" else "float")
    return preamble(fp64, dtype) + _main_type(dtype, fp64) + f"""
typedef {acc} ACC;
__kernel __attribute__((reqd_work_group_size({TILE}, {TILE}, 1)))
void matmul(__global T* o, long oo, __global const T* a, long oa, __global const T* b, long ob, long M, long N, long K,
            long sob, long som, long son, long sab, long sam, long sak, long sbb, long sbk, long sbn) {{
    __local ACC As[{TILE}][{TILE}];
    __local ACC Bs[{TILE}][{TILE}];
    int tx = get_local_id(0), ty = get_local_id(1);
    long col = get_global_id(0), row = get_global_id(1), bat = get_global_id(2);
    long abase = oa + bat * sab, bbase = ob + bat * sbb;
    ACC s = 0;
    for (long t = 0; t < K; t += {TILE}) {{
        long ka = t + tx, kb = t + ty;
        As[ty][tx] = (row < M && ka < K) ? (ACC)LD(a, abase + row * sam + ka * sak) : (ACC)0;
        Bs[ty][tx] = (col < N && kb < K) ? (ACC)LD(b, bbase + kb * sbk + col * sbn) : (ACC)0;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int q = 0; q < {TILE}; ++q) s += As[ty][q] * Bs[q][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (row < M && col < N) ST(o, oo + bat * sob + row * som + col * son, s);
}}
"""


#: Rows and columns each work-item of the register-blocked float matmul computes: 6 rows of two
#: 8-wide (float64: 4-wide) vectors are 12 accumulators, which with the two vectors of b and the
#: broadcast of a fill the 16 vector registers of AVX2 without spilling (8 rows spilled).
MATMUL_ROWS = 6
MATMUL_COLS = {"float32": 16, "float64": 8}


def _gemm_strip(t: str, rows: int, v: int, nvec: int, cols) -> str:
    """The k loop and the stores of one work-item of ``matmul_blocked``: ``rows`` x ``nvec``
    accumulators of ``t``+``v`` lanes, b's row k read at the column offsets ``cols`` (literals for
    a whole strip, clamped indices for the last, partial one) and a's rows as broadcasts."""
    vt = f"{t}{v}"
    # The accumulators start at the bias (linear's epilogue, 0 without one).
    lines = []
    for j in range(nvec):
        lanes = ", ".join(f"has_bias ? bias[obias + (c0 + {cols[j * v + i]}) * sbias] : 0" for i in range(v))
        lines.append(f"        {vt} z{j} = ({vt})({lanes});")
    lines += [f"        {vt} " + ", ".join(f"c{r}_{j} = z{j}" for r in range(rows) for j in range(nvec)) + ";",
              "        __global const " + t + "* bk = bp;",
             "        long ka = 0;",
             "        for (long k = 0; k < K; ++k) {"]
    for j in range(nvec):
        lanes = ", ".join(f"bk[{cols[j * v + i]}]" for i in range(v))
        lines.append(f"            {vt} b{j} = ({vt})({lanes});")
    for r in range(rows):
        lines.append(f"            {vt} x{r} = ({vt})(a{r}[ka]);")
        lines.append("            " + " ".join(f"c{r}_{j} += x{r} * b{j};" for j in range(nvec)))
    lines += ["            bk += sbk;", "            ka += sak;", "        }"]
    for r in range(rows):
        lines.append(f"        if (row0 + {r} < M) {{")
        lines.append(f"            __global {t}* orow = o + oo + bat * sob + (row0 + {r}) * som + c0 * son;")
        for j in range(nvec):
            for i in range(v):
                c = j * v + i
                guard = "" if isinstance(cols[c], int) else f"if ({c} < nt) "
                lines.append(f"            {guard}orow[{c} * son] = c{r}_{j}.s{'0123456789abcdef'[i]};")
        lines.append("        }")
    return "\n".join(lines)


def matmul_blocked(dtype: str, fp64: bool) -> str:
    """float32/float64 matmul: each work-item computes 6 rows of a 16-wide (float64: 8-wide)
    column strip of one matrix, b's row k of the strip as vectors and a's elements broadcast.
    b is read either in place (unit column stride: strip j starts at column 16 j, ``sbs`` = 16)
    or packed by ``pack_b`` into strips of K x 16 contiguous elements, zero-padded to a whole
    strip (``sbs`` = 16 K, ``sbk`` = 16): the k loop then walks one contiguous stream, which the
    hardware prefetcher follows (a row stride of N elements defeated it: 128x784x512 10 -> 3 ms,
    and any b, transposed ones too, takes one copy).

    Written for PoCL on the CPU, where pip's PoCL 3.0 builds its kernel library for a generic ISA
    level (haswell) and the kernels for the host CPU (znver3 here): LLVM then refuses to inline the
    library into the kernel, so every built-in (``mad``, ``vload16``, ``min``) is a call, and a
    call in the k loop sends every accumulator through memory (3 GFLOP/s). The loop therefore
    uses only operators: ``c += x * b`` contracts to an FMA, and a vector built from adjacent
    elements compiles to one unaligned load (40-54 GFLOP/s at 128x512x512 on the busy 2-core
    machine, where OpenBLAS did 28). Work-items go down the rows first, so the ones a core runs
    in turn share their strip of b. Rows past M read row M-1 and are not stored; the last strip
    reads column N-1 for the lanes past N (unpacked) and is not stored past N. With ``has_bias``,
    the accumulators start at ``bias[obias + column * sbias]`` (nn.Linear's bias: no second
    kernel, and no strided broadcast add)."""
    rows, w = MATMUL_ROWS, MATMUL_COLS[dtype]
    t = "float" if dtype == "float32" else "double"
    v = 8 if dtype == "float32" else 4
    nvec = w // v
    full = _gemm_strip(t, rows, v, nvec, list(range(w)))
    part = _gemm_strip(t, rows, v, nvec, [f"q{c}" for c in range(w)])
    clamp = "\n".join(f"        long q{c} = {c} < nt ? {c} : nt - 1;" for c in range(w))
    arows = "\n".join(f"    __global const {t}* a{r} = ab + (row0 + {r} < M ? row0 + {r} : M - 1) * sam;"
                      for r in range(rows))
    # helpers.cl turns contraction off (random numbers must match the CPU bit for bit); here an
    # FMA per multiply-add is the point, as in OpenBLAS.
    return preamble(fp64, dtype) + f"""
#pragma OPENCL FP_CONTRACT ON
__kernel void matmul_blocked(__global {t}* o, long oo, __global const {t}* a, long oa, __global const {t}* b, long ob,
                             long M, long N, long K, long sob, long som, long son, long sab, long sam, long sak,
                             long sbb, long sbk, long sbs, __global const {t}* bias, long obias, long sbias, int has_bias) {{
    long row0 = get_global_id(0) * {rows}, strip = get_global_id(1), bat = get_global_id(2);
    long c0 = strip * {w};
    if (row0 >= M || c0 >= N) return;
    __global const {t}* ab = a + oa + bat * sab;
    __global const {t}* bp = b + ob + bat * sbb + strip * sbs;
{arows}
    long nt = N - c0;
    if (nt >= {w}) {{
{full}
    }} else {{
{clamp}
{part}
    }}
}}

/* b (batch, K, N) at any strides into strips of K rows of {w} contiguous elements, zero past N:
   one work-item per (row k, strip). The guard is a branch the whole work-group takes alike:
   PoCL vectorizes across work-items only a body without a per-item exit (an `if (k >= K)
   return;` made this copy 4x slower). */
__kernel void pack_b(__global {t}* p, __global const {t}* b, long ob, long K, long N, long sbb, long sbk, long sbn,
                     long strips) {{
    long k = get_global_id(0), strip = get_global_id(1), bat = get_global_id(2);
    __global const {t}* src = b + ob + bat * sbb + k * sbk + strip * {w} * sbn;
    __global {t}* dst = p + ((bat * strips + strip) * K + k) * {w};
    long nt = N - strip * {w};
    if (nt >= {w} && (long)(get_group_id(0) + 1) * (long)get_local_size(0) <= K) {{
        {" ".join(f"dst[{i}] = src[{i} * sbn];" for i in range(w))}
    }} else if (k < K) {{
        for (int i = 0; i < {w}; ++i) dst[i] = i < nt ? src[i * sbn] : ({t})0;
    }}
}}
"""


# --- indexing ----------------------------------------------------------------------------------

def index(dtype: str, fp64: bool) -> str:
    """gather, scatter (one work-item per line along dim, so duplicates resolve in order),
    index_get and index_put (one work-item per trailing element, looping over index positions
    in order). Every index value is checked; a bad one records an IndexError and is skipped."""
    k = kind(dtype)
    add = "x + y" if k == "f" else "(C)(x | y)" if k == "b" else "(C)((ulong)x + (ulong)y)"
    return preamble(fp64, dtype) + _main_type(dtype, fp64) + f"""
__kernel void gather(__global T* o, long oo, __global const T* a, long oa, __global const long* ix, long oi,
                     int dim, long size, long n, __global long* err,
                     int nd, {_dims('d')}, {_dims('so')}, {_dims('sa')}, {_dims('si')}) {{
    long i = get_global_id(0);
    if (i >= n) return;
    {_array('sh', 'd')} {_array('st_o', 'so')} {_array('st_a', 'sa')} {_array('st_i', 'si')}
    long io = oo, ia = oa, ii = oi;
    {{ long rem = i; for (int q = nd - 1; q >= 0; --q) {{ long c = rem % sh[q]; rem /= sh[q]; io += c * st_o[q];
        ii += c * st_i[q]; if (q != dim) ia += c * st_a[q]; }} }}
    long v = tp_wrap_index(ix[ii], size, dim, err);
    if (v < 0) {{ ST(o, io, (C)0); return; }}
    ST(o, io, LD(a, ia + v * st_a[dim]));
}}

__kernel void scatter(__global T* s, long os, __global const long* ix, long oi, __global const T* src, long osrc,
                      C sv, int src_scalar, int dim, long size, int accumulate, long len, long nlines, __global long* err,
                      int nd, {_dims('d')}, {_dims('ss')}, {_dims('si')}, {_dims('sr')}) {{
    long i = get_global_id(0);
    if (i >= nlines) return;
    {_array('sh', 'd')} {_array('st_s', 'ss')} {_array('st_i', 'si')} {_array('st_r', 'sr')}
    long is = os, ii = oi, ir = osrc;
    {{ long rem = i; for (int q = nd - 1; q >= 0; --q) {{ long c = rem % sh[q]; rem /= sh[q];
        ii += c * st_i[q]; ir += c * st_r[q]; if (q != dim) is += c * st_s[q]; }} }}
    for (long j = 0; j < len; ++j) {{
        long v = tp_wrap_index(ix[ii + j * st_i[dim]], size, dim, err);
        if (v < 0) continue;
        C y = src_scalar ? sv : LD(src, ir + j * st_r[dim]);
        long t = is + v * st_s[dim];
        if (accumulate) {{ C x = LD(s, t); ST(s, t, {add}); }} else ST(s, t, y);
    }}
}}

__kernel void index_get(__global T* o, long oo, __global const T* a, long oa, __global const long* ix, long npos, int nk,
                        long ninner, long n, __global long* err, {_dims('ks')}, {_dims('kt')},
                        int nd, {_dims('d')}, {_dims('sa')}) {{
    long e = get_global_id(0);
    if (e >= n) return;
    {_array('ksz', 'ks')} {_array('kst', 'kt')} {_array('sh', 'd')} {_array('st_a', 'sa')}
    long p = e / ninner, r = e % ninner, ia = oa;
    for (int j = 0; j < nk; ++j) {{
        long v = tp_wrap_index(ix[j * npos + p], ksz[j], j, err);
        if (v < 0) {{ ST(o, oo + e, (C)0); return; }}
        ia += v * kst[j];
    }}
    TP_OFFSET(r, nd, sh, st_a, ia);
    ST(o, oo + e, LD(a, ia));
}}

__kernel void index_put(__global T* s, long os, __global const long* ix, long npos, int nk, __global const T* vals, long ov,
                        C sv, int scalar, int accumulate, long ninner, __global long* err, {_dims('ks')}, {_dims('kt')},
                        int nd, {_dims('d')}, {_dims('ss')}) {{
    long r = get_global_id(0);
    if (r >= ninner) return;
    {_array('ksz', 'ks')} {_array('kst', 'kt')} {_array('sh', 'd')} {_array('st_s', 'ss')}
    long inner = 0;
    TP_OFFSET(r, nd, sh, st_s, inner);
    for (long p = 0; p < npos; ++p) {{
        long t = os + inner;
        int bad = 0;
        for (int j = 0; j < nk; ++j) {{
            long v = tp_wrap_index(ix[j * npos + p], ksz[j], j, err);
            if (v < 0) {{ bad = 1; break; }}
            t += v * kst[j];
        }}
        if (bad) continue;
        C y = scalar ? sv : LD(vals, ov + p * ninner + r);
        if (accumulate) {{ C x = LD(s, t); ST(s, t, {add}); }} else ST(s, t, y);
    }}
}}
"""


# --- random -----------------------------------------------------------------------------------

def random(dtype: str, fp64: bool) -> str:
    """uniform_, normal_ and randint_ with the contract's exact Philox mapping; one work-item per
    Philox block."""
    k = kind(dtype)
    src = [preamble(fp64, dtype), _main_type(dtype, fp64)]
    if k == "f" and dtype != "float64":
        # As many bits as the significand holds, so that rounding never reaches 1.0 (the CPU's rule).
        bits = FLOAT8_FORMATS[dtype][0] + 1 if dtype in FLOAT8_FORMATS else {"float16": 11, "bfloat16": 8, "float32": 24}[dtype]
        src.append(f"""
__kernel void uniform(__global T* o, long oo, long n, ulong seed, ulong offset, float lo, float hi) {{
    long j = get_global_id(0);
    if (j * 4 >= n) return;
    uint4 w4 = tp_philox(seed, offset + (ulong)j);
    uint w[4] = {{w4.s0, w4.s1, w4.s2, w4.s3}};
    float range = hi - lo;
    for (int q = 0; q < 4; ++q) {{
        long i = 4 * j + q;
        if (i < n) {{
            float u = (float)(w[q] >> {32 - bits}) * (1.0f / (float)(1u << {bits}));
            float v = lo + range * u;
            ST(o, oo + i, v);
        }}
    }}
}}""")
    if dtype == "float64":
        src.append("""
__kernel void uniform(__global double* o, long oo, long n, ulong seed, ulong offset, double lo, double hi) {
    long j = get_global_id(0);
    if (j * 2 >= n) return;
    uint4 w = tp_philox(seed, offset + (ulong)j);
    double range = hi - lo;
    for (int h = 0; h < 2; ++h) {
        long i = 2 * j + h;
        ulong x = h == 0 ? (((ulong)w.s1 << 32) | w.s0) : (((ulong)w.s3 << 32) | w.s2);
        if (i < n) o[oo + i] = lo + range * ((double)(x >> 11) * 0x1.0p-53);
    }
}""")
    if k == "f":
        real = "double" if fp64 else "float"
        src.append(f"""
__kernel void normal(__global T* o, long oo, long n, ulong seed, ulong offset, {real} mean, {real} sd) {{
    long j = get_global_id(0);
    if (j * 4 >= n) return;
    uint4 w4 = tp_philox(seed, offset + (ulong)j);
    uint w[4] = {{w4.s0, w4.s1, w4.s2, w4.s3}};
    for (int pair = 0; pair < 2; ++pair) {{
        long i = 4 * j + 2 * pair;
        if (i >= n) break;
        {real} u1 = ({real})((w[2 * pair] >> 8) + 1u) * ({real})0x1.0p-24;
        {real} u2 = ({real})(w[2 * pair + 1] >> 8) * ({real})0x1.0p-24;
        {real} radius = sqrt(-2 * log(u1));
        {real} theta = ({real})6.283185307179586 * u2;
        ST(o, oo + i, (C)(mean + sd * (radius * cos(theta))));
        if (i + 1 < n) ST(o, oo + i + 1, (C)(mean + sd * (radius * sin(theta))));
    }}
}}""")
    store = "ST(o, oo + i, (C)(long)v)" if k != "f" else f"ST(o, oo + i, (C)({'(double)' if fp64 else '(float)'}(long)v))"
    if dtype == "bfloat16" and fp64:
        store = "ST(o, oo + i, tp_f64_to_f32_odd((double)(long)v))"
        src.append(_ROUND_ODD)
    if dtype == "float16" and fp64:
        store = "vstore_half_rte((double)(long)v, oo + i, o)"
    if dtype in FLOAT8_FORMATS:
        store = "ST(o, oo + i, (float)(long)v)"  # through float32, rounded once there (as the CPU)
    src.append(f"""
__kernel void randint(__global T* o, long oo, long n, ulong seed, ulong offset, long low, ulong range) {{
    long j = get_global_id(0);
    if (range <= 0x100000000UL) {{
        if (j * 4 >= n) return;
        uint4 w4 = tp_philox(seed, offset + (ulong)j);
        uint w[4] = {{w4.s0, w4.s1, w4.s2, w4.s3}};
        for (int q = 0; q < 4; ++q) {{
            long i = 4 * j + q;
            ulong v = (ulong)low + ((ulong)w[q] % range);
            if (i < n) {store};
        }}
    }} else {{
        if (j * 2 >= n) return;
        uint4 w = tp_philox(seed, offset + (ulong)j);
        for (int h = 0; h < 2; ++h) {{
            long i = 2 * j + h;
            ulong x = h == 0 ? (((ulong)w.s1 << 32) | w.s0) : (((ulong)w.s3 << 32) | w.s2);
            ulong v = (ulong)low + (x % range);
            if (i < n) {store};
        }}
    }}
}}""")
    return "".join(src)


# --- sort --------------------------------------------------------------------------------------

def sort(dtype: str, fp64: bool) -> str:
    """A stable bottom-up merge sort per line, one work-item per line, in a scratch buffer."""
    k = kind(dtype)
    if k == "f":
        before = "(desc ? ((isnan(x) && !isnan(y)) || x > y) : (!isnan(x) && (isnan(y) || x < y)))"
    else:
        before = "(desc ? x > y : x < y)"
    return preamble(fp64, dtype) + _main_type(dtype, fp64) + f"""
int tp_before(C x, C y, int desc) {{ return {before}; }}
__kernel void sort(__global T* vo, long ovo, __global long* io, long oio, __global const T* a, long oa,
                   __global T* sv, __global long* si, long len, int desc, long nlines, long svo_dim, long sio_dim, long sa_dim,
                   int kd, {_dims('k')}, {_dims('kv')}, {_dims('ki')}, {_dims('ka')}) {{
    long l = get_global_id(0);
    if (l >= nlines) return;
    {_array('ksh', 'k')} {_array('ksv', 'kv')} {_array('ksi', 'ki')} {_array('ksa', 'ka')}
    long pv = ovo, pi = oio, pa = oa;
    {{ long rem = l; for (int q = kd - 1; q >= 0; --q) {{ long c = rem % ksh[q]; rem /= ksh[q]; pv += c * ksv[q];
        pi += c * ksi[q]; pa += c * ksa[q]; }} }}
    __global T* v0 = sv + l * 2 * len; __global T* v1 = v0 + len;
    __global long* i0 = si + l * 2 * len; __global long* i1 = i0 + len;
    for (long j = 0; j < len; ++j) {{ ST(v0, j, LD(a, pa + j * sa_dim)); i0[j] = j; }}
    for (long width = 1; width < len; width *= 2) {{
        for (long lo = 0; lo < len; lo += 2 * width) {{
            long mid = min(lo + width, len), hi = min(lo + 2 * width, len), p = lo, q = mid, t = lo;
            while (p < mid && q < hi) {{
                if (tp_before(LD(v0, q), LD(v0, p), desc)) {{ ST(v1, t, LD(v0, q)); i1[t++] = i0[q++]; }}
                else {{ ST(v1, t, LD(v0, p)); i1[t++] = i0[p++]; }}
            }}
            while (p < mid) {{ ST(v1, t, LD(v0, p)); i1[t++] = i0[p++]; }}
            while (q < hi) {{ ST(v1, t, LD(v0, q)); i1[t++] = i0[q++]; }}
        }}
        __global T* tv = v0; v0 = v1; v1 = tv;
        __global long* ti = i0; i0 = i1; i1 = ti;
    }}
    for (long j = 0; j < len; ++j) {{ ST(vo, pv + j * svo_dim, LD(v0, j)); io[pi + j * sio_dim] = i0[j]; }}
}}
"""
