"""OpenCL C to CUDA C: the CUDA backend compiles the OpenCL backend's generated kernels.

The OpenCL backend generates one C source per (family, dtype) for every primitive
(``tensorplug/backends/opencl/_source.py``); its logic (index arithmetic, NaN rules, integer
wrapping, Philox) is checked on every CI run through PoCL. The CUDA backend compiles those same
sources with NVRTC, so that what CI checks on OpenCL also covers the CUDA kernels' logic. What
differs between the two dialects is small and mechanical: address-space qualifiers, work-item
ids, a few built-ins, ``uint4`` member names, and that helper functions must be ``__device__``.
``PREAMBLE`` maps the built-ins with macros and inline functions; ``translate`` rewrites the few
constructs a macro cannot reach. Vector types other than ``uint4`` are not mapped: ``matmul_blocked`` is not used on CUDA (cuBLAS
does matmul), and of the fused program only the items without vectors are kept
(``scalar_fused_source``): relu and its gradient, max pooling and Adam's step.
"""
from __future__ import annotations

import re

from ..api import OPTIONAL_DTYPES, REQUIRED_DTYPES

__all__ = ["PREAMBLE", "translate", "FAMILIES", "DTYPES"]

#: The OpenCL generator families the CUDA backend compiles (see kernels.py); "fused" is the
#: vector-free part of the fused program.
FAMILIES = ("copy", "elementwise", "reduce", "matmul", "index", "random", "sort", "fused")
#: The dtypes compiled for CUDA: those the backend declares. The OpenCL generator also knows
#: uint16/32/64 and the float8 types (docs/dtypes.md), which the CUDA backend does not declare yet.
DTYPES = REQUIRED_DTYPES + OPTIONAL_DTYPES

# Written for NVRTC, which has no system headers: nothing here includes a file.
PREAMBLE = r"""
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
/* float16 is stored as its 16-bit pattern and converted with PTX's cvt (no cuda_fp16.h). */
#define half ushort
#define __kernel extern "C" __global__
#define __global
#define __local __shared__
#define __constant const
#define CLK_LOCAL_MEM_FENCE 0
#define CLK_GLOBAL_MEM_FENCE 0
#define barrier(flags) __syncthreads()
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
/* Ids as 64-bit values: a grid of more than 2**31 threads must not wrap. */
__device__ __forceinline__ long tp_dim3(const uint3 v, int d) { return d == 0 ? v.x : d == 1 ? v.y : v.z; }
__device__ __forceinline__ long tp_dim3(const dim3 v, int d) { return d == 0 ? v.x : d == 1 ? v.y : v.z; }
#define get_local_id(d) tp_dim3(threadIdx, (d))
#define get_group_id(d) tp_dim3(blockIdx, (d))
#define get_local_size(d) tp_dim3(blockDim, (d))
#define get_num_groups(d) tp_dim3(gridDim, (d))
#define get_global_id(d) (tp_dim3(blockIdx, (d)) * tp_dim3(blockDim, (d)) + tp_dim3(threadIdx, (d)))
#define get_global_size(d) (tp_dim3(gridDim, (d)) * tp_dim3(blockDim, (d)))
#define as_float(x) __uint_as_float((uint)(x))
#define as_uint(x) __float_as_uint(x)
#define as_int(x) __float_as_int(x)
#define mul_hi(a, b) __umulhi((a), (b))
#define mad(a, b, c) ((a) * (b) + (c))
#define convert_float_rtz(d) __double2float_rz(d)
#define atomic_cmpxchg(p, cmp, val) atomicCAS((int*)(p), (cmp), (val))
__device__ __forceinline__ float tp_h2f(ushort h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ ushort tp_f2h(float f) {
    ushort h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
__device__ __forceinline__ ushort tp_f2h(double d) {
    ushort h;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(d));
    return h;
}
#define vload_half(i, p) tp_h2f((p)[i])
#define vstore_half_rte(v, i, p) ((p)[i] = tp_f2h(v))
"""

_ATTRIBUTE = re.compile(r"__kernel\s+__attribute__\(\(\s*reqd_work_group_size\([^)]*\)\s*\)\)\s*")
_PRAGMA = re.compile(r"^#pragma OPENCL.*$", re.M)
_SWIZZLE = re.compile(r"\.s([0-3])\b")
_UINT4 = re.compile(r"\(uint4\)\s*\(")
# A function definition at the start of a line that is not a kernel: a return type, a name and
# "(" (helpers.cl and the generators write every helper that way).
_HELPER = re.compile(r"^(?!__kernel|typedef|return|else|#)([A-Za-z_](?:[\w ]*?[\w*])?)\s+(\w+)\s*\(", re.M)


def translate(opencl_source: str) -> str:
    """The CUDA C text of a generated OpenCL program."""
    text = _ATTRIBUTE.sub("__kernel ", opencl_source)
    text = _PRAGMA.sub("", text)
    text = _UINT4.sub("make_uint4(", text)
    text = _SWIZZLE.sub(lambda m: "." + "xyzw"[int(m.group(1))], text)
    text = _HELPER.sub(r"__device__ \1 \2(", text)
    return PREAMBLE + text


def opencl_source(family: str, dtype: str) -> str:
    """The OpenCL backend's program of ``family`` for ``dtype`` (every CUDA device has float64)."""
    from ..opencl import _source

    if family == "copy":
        return _source.copy(dtype, True, list(DTYPES))
    if family == "fused":
        return scalar_fused_source(dtype)
    generate = {"elementwise": lambda d, fp64: _source.elementwise(d, fp64)[0], "reduce": _source.reduce,
                "matmul": _source.matmul, "index": _source.index, "random": _source.random, "sort": _source.sort}
    return generate[family](dtype, True)


# What marks an item of the fused program as vector code (opencl/_fused_source.py's _vector_io
# and the helpers and kernels built on it).
_VECTOR = re.compile(r"\b(CV|ACCV|LDV|STV|TO_ACCV|TO_CV|tp_hsum|tp_hmax|tp_stv|tp_row_\w+|"
                     r"vload\d+|vstore\d+|vload_half\d+|vstore_half\d+|CONV_\w+|CW)\b|\b(float|double|long|int)(2|4|8|16)\b")


def _top_level_items(text: str) -> list[str]:
    """``text`` cut into its top-level items: a line at brace depth 0 (a #define, a typedef, a
    comment's line) or a whole braced block with the lines that open it. Comments are skipped
    when counting braces."""
    items, start, depth, i = [], 0, 0, 0
    while i < len(text):
        if text.startswith("/*", i):
            i = text.index("*/", i) + 2
            continue
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = len(text) if i < 0 else i
            continue
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "\n" and depth == 0 and not text[start:i].rstrip().endswith(("\\", ",")):
            items.append(text[start:i + 1])
            start = i + 1
        i += 1
    items.append(text[start:])
    return items


def scalar_fused_source(dtype: str) -> str:
    """The OpenCL backend's fused program for ``dtype`` without its vector items (every CUDA
    device has float64)."""
    from ..opencl import _fused_source

    return "".join(item for item in _top_level_items(_fused_source.fused(dtype, True)) if not _VECTOR.search(item))


def cuda_source(family: str, dtype: str) -> str:
    """What NVRTC compiles for (family, dtype)."""
    return translate(opencl_source(family, dtype))
