"""The OpenCL kernel table: program building and caching, launching, and one adapter per primitive.

Programs are generated per (family, dtype) by ``_source`` and built once per device, on the first
op that needs them (pyopencl keeps built binaries on disk, PoCL its generated machine code, so a
later process skips most of the cost). Launches go straight to the kernel object with its scalar
argument types set once, never through pyopencl.array, and never wait: the queue is in order and
only host reads synchronize.

Operands are handled as ``(buffer, offset, strides)`` in elements. Elementwise ops coalesce dims
first; an op whose operands are all contiguous uses the ``_c``/``_tt`` kernels (one element per
work-item), everything else the strided kernel with shapes and strides as scalar arguments
(up to ``MAXD`` dims; more are split into launches on the host).
"""
from __future__ import annotations

import math
import re
import warnings

from typing import TYPE_CHECKING

import numpy as np

from ..api import FAMILIES, backend_storage
from . import _ctc_source, _fused_source, _recurrent_source, _source, c_launch

if TYPE_CHECKING:
    from .storage import DeviceState

__all__ = ["table", "build_program", "BUILD_TIMES"]

MAXD = _source.MAXD
_NUMBERS = (bool, int, float)
_SCALAR_TYPES = {"long": np.int64, "ulong": np.uint64, "int": np.int32, "uint": np.uint32, "short": np.int16,
                 "ushort": np.uint16, "char": np.int8, "uchar": np.uint8, "float": np.float32, "double": np.float64}
_KERNEL_RE = re.compile(r"__kernel\s+(?:__attribute__\(\(.*?\)\)\s*)?void\s+(\w+)\s*\((.*?)\)\s*\{", re.S)
#: Seconds spent building each program, by (family, dtype): first-use latency, for the benchmark.
BUILD_TIMES: dict = {}
#: (family, dtype) -> the compiler's log, for programs whose build printed anything.
BUILD_LOGS: dict = {}


def _signatures(source: str, compute: str) -> dict:
    """Kernel name -> scalar argument dtypes (None for buffers), read from the generated source."""
    found = {}
    for name, params in _KERNEL_RE.findall(source):
        types = []
        for param in params.split(","):
            param = param.strip()
            if "*" in param:
                types.append(None)
                continue
            ctype = param.split()[0]
            if ctype == "C" or ctype.startswith("C_"):
                ctype = compute if ctype == "C" else _source.DTYPES[ctype[2:]][1]
            types.append(_SCALAR_TYPES[ctype])
        found[name] = types
    return found


_GENERATORS = {
    "elementwise": lambda d, fp64: _source.elementwise(d, fp64)[0],
    "reduce": _source.reduce,
    "matmul": _source.matmul,
    "matmul_blocked": _source.matmul_blocked,
    "index": _source.index,
    "random": _source.random,
    "sort": _source.sort,
    "fused": _fused_source.fused,
    "recurrent": _recurrent_source.recurrent,
    "ctc": _ctc_source.ctc,
}


def build_program(state: DeviceState, family: str, dtype: str):
    """The built program of ``family`` for ``dtype`` on the device (built once, then cached)."""
    import time

    import pyopencl as cl

    key = (family, dtype)
    found = state.programs.get(key)
    if found is not None:
        return found
    if family == "copy":
        sources = [d for d in _source.DTYPES if d != "float64" or state.has_fp64]
        text = _source.copy(dtype, state.has_fp64, sources)
    else:
        text = _GENERATORS[family](dtype, state.has_fp64)
    started = time.perf_counter()
    try:
        # Some OpenCL compilers print notes or warnings for valid code (seen on Debian's PoCL 3.1);
        # PyOpenCL turns them into CompilerWarning, which would reach (and fail, under
        # ``-W error``) every user program. The log is kept in BUILD_LOGS instead.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cl.CompilerWarning)
            program = cl.Program(state.context, text).build()
    except cl.Error as exc:
        raise RuntimeError(f"opencl: building the {family} kernels for {dtype} on {state.name} failed; "
                           f"the compiler said:\n{exc}") from None
    BUILD_TIMES[key] = time.perf_counter() - started
    log = program.get_build_info(state.device, cl.program_build_info.LOG).strip()
    if log:
        BUILD_LOGS[key] = log
    signatures = _signatures(text, _source.DTYPES[dtype][1])
    # A build that "succeeds" without some of its kernels is how pip's PoCL 3.0 answers, from its
    # cache, for a program whose 512-bit vectors reach its library (_source.lanewise): a clear
    # error here, not an INVALID_KERNEL_NAME (or worse) at the first launch.
    built = set(program.get_info(cl.program_info.KERNEL_NAMES).split(";"))
    missing = sorted(set(signatures) - built)
    if missing:
        raise RuntimeError(f"opencl: the {family} kernels for {dtype} on {state.name} were built without "
                           f"{', '.join(missing[:5])}{' and more' if len(missing) > 5 else ''}; the OpenCL "
                           f"compiler's kernel cache may hold a broken copy (for PoCL, remove ~/.cache/pocl "
                           f"or set POCL_KERNEL_CACHE=0)")
    state.programs[key] = (program, signatures)
    return state.programs[key]


# The argument type characters of _opencl_launch.Kernel: "m" a buffer, else the scalar's C type.
_LAUNCH_TYPES = {np.int64: "q", np.uint64: "Q", np.int32: "i", np.uint32: "I", np.int16: "h", np.uint16: "H",
                 np.int8: "b", np.uint8: "B", np.float32: "f", np.float64: "d", None: "m"}
def build_kernel(state: DeviceState, family: str, dtype: str, name: str):
    """The kernel ``name`` of the built program, called as a PyOpenCL kernel is; launched in C
    (_opencl_launch) where the module is built and bound, else by PyOpenCL."""
    program, signatures = build_program(state, family, dtype)
    knl = getattr(program, name)
    knl.set_scalar_arg_dtypes(signatures[name])
    launch = c_launch.module()
    if launch is None:
        return knl
    spec = "".join(_LAUNCH_TYPES[t] for t in signatures[name]).encode()
    return launch.Kernel(knl, spec, name)


# The adapters below reach the device only through the state they are handed: its ``queue``,
# ``error_flag``, ``group``, ``has_fp64``, ``allocate(nbytes)`` and ``build_kernel(family, dtype,
# name)``, and the ``buffer`` of storages. The CUDA backend hands them a state of its own, so the
# same adapters launch the same generated kernels there (tensorplug/backends/cuda/kernels.py).
def _kernel(state: DeviceState, family: str, dtype: str, name: str):
    key = (family, dtype, name)
    knl = state.kernels.get(key)
    if knl is None:
        knl = state.build_kernel(family, dtype, name)
        state.kernels[key] = knl
    return knl


def _global(n: int, state: DeviceState) -> tuple:
    # A fixed work-group size: PoCL generates code per local size, so a varying one would compile
    # again for new sizes. The kernels guard the padded tail.
    group = state.group
    return ((n + group - 1) // group * group,), (group,)


def _strided_global(shape, state) -> tuple:
    """The global and local sizes of a strided kernel over ``shape`` (coalesced, at most MAXD dims):
    one work-item per run of up to ``state.strided_run`` elements of each innermost row
    (_source.strided_runs)."""
    inner = shape[-1]
    return _global(math.prod(shape) // inner * -(-inner // state.strided_run), state)


# --- operands ----------------------------------------------------------------------------------

def _state(t) -> DeviceState:
    return backend_storage(t).state


def _coalesce(shape, strides_list):
    """Drop size-1 dims and merge dims that are contiguous in every operand; returns (shape,
    [strides per operand]) with at least one dim."""
    merged_shape, merged = [], [[] for _ in strides_list]
    for d, n in enumerate(shape):
        if n == 1:
            continue
        if merged_shape and all(m[-1] == st[d] * n for m, st in zip(merged, strides_list)):
            merged_shape[-1] *= n
            for m, st in zip(merged, strides_list):
                m[-1] = st[d]
            continue
        merged_shape.append(n)
        for m, st in zip(merged, strides_list):
            m.append(st[d])
    if not merged_shape:
        return [1], [[1] for _ in strides_list]  # one element: flat, whatever its strides
    return merged_shape, merged


def _pad(values, fill):
    values = list(values)
    return values + [fill] * (MAXD - len(values))


def _is_flat(shape, strides_list) -> bool:
    return len(shape) == 1 and all(st[0] == 1 for st in strides_list)


_row_major: dict = {}


def _all_row_major(shape, strides_list) -> bool:
    """Whether every operand has the row-major strides of ``shape``: the common case, answered
    by comparing tuples before _coalesce's general merge (which costs more than the rest of a
    small op's adapter, issue 14)."""
    expected = _row_major.get(shape)
    if expected is None:
        expected = _contiguous_strides(shape)
        if len(_row_major) < 4096:  # shapes of one program; bounded for programs of many
            _row_major[shape] = expected
    for st in strides_list:
        if st != expected:
            return False
    return True


def _one_element_side(shape, strides, one_b: str, one_a: str):
    """``one_b`` when out and a are row-major and every stride of b is 0 (one element broadcast),
    ``one_a`` the other way round, else None; strides are (out, a, b)."""
    expected = _row_major.get(shape) or _contiguous_strides(shape)
    so, sa, sb = strides
    if so != expected:
        return None
    if sa == expected and not any(sb):
        return one_b
    if sb == expected and not any(sa):
        return one_a
    return None


def _repeated_row_side(shape_c, strides_c, row_b: str, row_a: str):
    """``row_b`` when the coalesced (rows, n) out and a are row-major and b is one row of n
    repeated (strides (0, 1)), ``row_a`` the other way round, else None."""
    if len(shape_c) != 2:
        return None
    n = shape_c[1]
    so, sa, sb = strides_c
    if so != [n, 1]:
        return None
    if sa == [n, 1] and sb == [0, 1]:
        return row_b
    if sb == [n, 1] and sa == [0, 1]:
        return row_a
    return None


def _split_launch(shape, strides_list, offsets, launch):
    """Call ``launch(offsets, shape, strides_list)`` over the trailing MAXD dims, looping over the
    leading ones on the host (only for more than MAXD non-mergeable dims)."""
    if len(shape) <= MAXD:
        launch(offsets, shape, strides_list)
        return
    lead = len(shape) - MAXD
    for coords in np.ndindex(*shape[:lead]):
        offs = [o + sum(c * st[d] for d, c in enumerate(coords)) for o, st in zip(offsets, strides_list)]
        launch(offs, shape[lead:], [st[lead:] for st in strides_list])


def _scalar(value, dtype: str):
    """A Python number as the compute type of ``dtype`` (integers wrap as the dtype does)."""
    k = _source.kind(dtype)
    if k == "f":
        return float(value)
    if k == "b":
        return int(bool(value))
    bits = np.dtype(dtype).itemsize * 8
    v = int(value)
    if k == "u":
        return v % (1 << bits)
    return (v + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))


# --- copy / fill / unary / binary / where --------------------------------------------------------

def _copy(dst, src):
    n = math.prod(dst.shape)
    if n == 0:
        return
    _copy_raw(_state(dst), dst.dtype.name, src.dtype.name, backend_storage(dst).buffer, dst.storage_offset(),
              dst.stride(), backend_storage(src).buffer, src.storage_offset(), src.stride(), dst.shape)


def _copy_raw(state, dst_dtype, src_dtype, obuf, ooff, ostrides, abuf, aoff, astrides, shape):
    n = math.prod(shape)
    if _all_row_major(shape, (ostrides, astrides)):
        g, l = _global(n, state)
        _kernel(state, "copy", dst_dtype, f"copy_{src_dtype}_c")(state.queue, g, l, obuf, ooff, abuf, aoff, n)
        return
    shape_c, (so, sa) = _coalesce(shape, (ostrides, astrides))
    if _is_flat(shape_c, (so, sa)):
        g, l = _global(n, state)
        _kernel(state, "copy", dst_dtype, f"copy_{src_dtype}_c")(state.queue, g, l, obuf, ooff, abuf, aoff, n)
        return
    if _is_flat(shape_c, (so,)) and not any(sa):
        # One element expanded (a 0-d gradient after sum's backward): the strided kernel's index
        # arithmetic made this copy of 1.28e6 float32 7.7 ms on PoCL.
        g, l = _global(n, state)
        _kernel(state, "copy", dst_dtype, f"copy_{src_dtype}_1")(state.queue, g, l, obuf, ooff, abuf, aoff, n)
        return
    knl = _kernel(state, "copy", dst_dtype, f"copy_{src_dtype}_s")

    def launch(offs, sh, sts):
        m = math.prod(sh)
        g, l = _strided_global(sh, state)
        knl(state.queue, g, l, obuf, offs[0], abuf, offs[1], m, len(sh), *_pad(sh, 1), *_pad(sts[0], 0), *_pad(sts[1], 0))

    _split_launch(shape_c, [so, sa], [ooff, aoff], launch)


def _fill(dst, value):
    n = math.prod(dst.shape)
    if n == 0:
        return
    state = _state(dst)
    dtype = dst.dtype.name
    v = _scalar(value, dtype)
    buf, off = backend_storage(dst).buffer, dst.storage_offset()
    row_major = _all_row_major(dst.shape, (dst.stride(),))
    shape_c, (so,) = ((n,), ((1,),)) if row_major else _coalesce(dst.shape, (dst.stride(),))
    if _is_flat(shape_c, (so,)):
        g, l = _global(n, state)
        _kernel(state, "elementwise", dtype, "fill_c")(state.queue, g, l, buf, off, v, n)
        return
    knl = _kernel(state, "elementwise", dtype, "fill_s")

    def launch(offs, sh, sts):
        m = math.prod(sh)
        g, l = _strided_global(sh, state)
        knl(state.queue, g, l, buf, offs[0], v, m, len(sh), *_pad(sh, 1), *_pad(sts[0], 0))

    _split_launch(shape_c, [so], [off], launch)


def _unary(name: str):
    contiguous, strided = f"{name}_c", f"{name}_s"

    def kernel(out, a):
        shape = out.shape
        n = math.prod(shape)
        if n == 0:
            return
        state = _state(out)
        dtype = a.dtype.name
        obuf, ooff = backend_storage(out).buffer, out.storage_offset()
        abuf, aoff = backend_storage(a).buffer, a.storage_offset()
        strides = (out.stride(), a.stride())
        flat = _all_row_major(shape, strides)
        if not flat:
            shape_c, sts = _coalesce(shape, strides)
            flat = _is_flat(shape_c, sts)
        if flat:
            g, l = _global(n, state)
            _kernel(state, "elementwise", dtype, contiguous)(state.queue, g, l, obuf, ooff, abuf, aoff, n)
            return
        knl = _kernel(state, "elementwise", dtype, strided)

        def launch(offs, sh, st):
            m = math.prod(sh)
            g, l = _strided_global(sh, state)
            knl(state.queue, g, l, obuf, offs[0], abuf, offs[1], m, len(sh), *_pad(sh, 1), *_pad(st[0], 0), *_pad(st[1], 0))

        _split_launch(shape_c, sts, [ooff, aoff], launch)

    return kernel


def _binary(name: str):
    flagging = name in _source.FLAGGING
    both_tensors, number_b, number_a = f"{name}_tt", f"{name}_ts", f"{name}_st"  # the flat kernels
    one_b, one_a = f"{name}_tv", f"{name}_vt"
    row_b, row_a = f"{name}_tr", f"{name}_rt"

    def kernel(out, a, b):
        a_number, b_number = a.__class__ in _NUMBERS, b.__class__ in _NUMBERS
        dtype = b.dtype.name if a_number else a.dtype.name
        shape = out.shape
        n = math.prod(shape)
        if n == 0:  # nothing is divided, so nothing divides by zero (as on the CPU and in PyTorch)
            return
        if flagging and _source.kind(dtype) in "iu":
            # A number divisor is checked here, on the host, at no cost; tensor ones are
            # checked by the kernel and raise at the next synchronization.
            if b_number and b == 0:
                raise ZeroDivisionError(f"integer division by zero in {name}")
        state = _state(out)
        if flagging and _source.kind(dtype) in "iu":
            state.error_possible = True
        obuf, ooff = backend_storage(out).buffer, out.storage_offset()
        sa = _scalar(a, dtype) if a_number else 0
        sb = _scalar(b, dtype) if b_number else 0
        abuf, aoff = (obuf, 0) if a_number else (backend_storage(a).buffer, a.storage_offset())
        bbuf, boff = (obuf, 0) if b_number else (backend_storage(b).buffer, b.storage_offset())
        strides = [out.stride()]
        if not a_number:
            strides.append(a.stride())
        if not b_number:
            strides.append(b.stride())
        flat_name = (number_b if b_number else number_a if a_number else both_tensors) \
            if _all_row_major(shape, strides) else None
        compact = state.compact_kernels
        if flat_name is None and compact and not (a_number or b_number):
            flat_name = _one_element_side(shape, strides, one_b, one_a)
        if flat_name is None:
            shape_c, sts = _coalesce(shape, strides)
            if _is_flat(shape_c, sts):
                flat_name = number_b if b_number else number_a if a_number else both_tensors
            elif compact and not (a_number or b_number):
                row_name = _repeated_row_side(shape_c, sts, row_b, row_a)
                if row_name is not None:
                    g, l = _global(n, state)
                    _kernel(state, "elementwise", dtype, row_name)(state.queue, g, l, obuf, ooff, abuf, aoff, bbuf, boff,
                                                                   sa, sb, n, state.error_flag, shape_c[1])
                    return
        if flat_name is not None:
            g, l = _global(n, state)
            _kernel(state, "elementwise", dtype, flat_name)(state.queue, g, l, obuf, ooff, abuf, aoff, bbuf, boff, sa, sb,
                                                            n, state.error_flag)
            return
        knl = _kernel(state, "elementwise", dtype, f"{name}_s")
        mode = (1 if a_number else 0) | (2 if b_number else 0)
        zeros = [0] * len(shape_c)
        st_o = sts[0]
        st_a = zeros if a_number else sts[1]
        st_b = zeros if b_number else sts[-1]

        def launch(offs, sh, st):
            m = math.prod(sh)
            g, l = _strided_global(sh, state)
            knl(state.queue, g, l, obuf, offs[0], abuf, offs[1], bbuf, offs[2], sa, sb, mode, m, state.error_flag,
                len(sh), *_pad(sh, 1), *_pad(st[0], 0), *_pad(st[1], 0), *_pad(st[2], 0))

        _split_launch(shape_c, [st_o, st_a, st_b], [ooff, aoff, boff], launch)

    return kernel


def _where(out, cond, a, b):
    shape = out.shape
    n = math.prod(shape)
    if n == 0:
        return
    state = _state(out)
    dtype = out.dtype.name
    a_number, b_number = a.__class__ in _NUMBERS, b.__class__ in _NUMBERS
    obuf, ooff = backend_storage(out).buffer, out.storage_offset()
    cbuf, coff = backend_storage(cond).buffer, cond.storage_offset()
    abuf, aoff = (obuf, 0) if a_number else (backend_storage(a).buffer, a.storage_offset())
    bbuf, boff = (obuf, 0) if b_number else (backend_storage(b).buffer, b.storage_offset())
    zeros = (0,) * len(shape)
    strides = [out.stride(), cond.stride(), zeros if a_number else a.stride(), zeros if b_number else b.stride()]
    shape_c, sts = _coalesce(shape, strides)
    knl = _kernel(state, "elementwise", dtype, "where_s")
    sa = _scalar(a, dtype) if a_number else 0
    sb = _scalar(b, dtype) if b_number else 0
    mode = (1 if a_number else 0) | (2 if b_number else 0)

    def launch(offs, sh, st):
        m = math.prod(sh)
        g, l = _strided_global(sh, state)
        knl(state.queue, g, l, obuf, offs[0], cbuf, offs[1], abuf, offs[2], bbuf, offs[3], sa, sb, mode, m,
            len(sh), *_pad(sh, 1), *(v for s in st for v in _pad(s, 0)))

    _split_launch(shape_c, sts, [ooff, coff, aoff, boff], launch)


# --- reductions and scans ------------------------------------------------------------------------

def _too_many_dims(what: str):
    raise NotImplementedError(f"opencl: {what} over more than {MAXD} non-contiguous dims is not supported")


#: Reductions with a kernel over a whole contiguous tensor (rw_*, _source.reduce).
_WHOLE_REDUCTIONS = frozenset(("sum", "prod", "amax", "amin", "all", "any"))
#: What a reduction over no elements gives (PyTorch's identities).
_EMPTY_REDUCTION = {"sum": 0, "prod": 1, "all": True, "any": False}


def _reduce(name: str):
    whole = f"rw_{name}" if name in _WHOLE_REDUCTIONS else None

    def kernel(out, a, dims):
        nout = math.prod(out.shape)
        if nout == 0:
            return
        shape, ast, ost = a.shape, a.stride(), out.stride()
        state = _state(out)
        if whole and nout == 1 and state.compact_kernels and _all_row_major(shape, (ast,)):
            # Everything into one number from a contiguous tensor (a loss, a sum before backward):
            # the compact kernel, unless the tensor is large enough to split over work-items.
            nred = math.prod(shape)
            if 0 < nred and _split_parts(name, 1, nred) == 1:
                _kernel(state, "reduce", a.dtype.name, whole)(state.queue, (1,), (1,), backend_storage(out).buffer,
                                                              out.storage_offset(), backend_storage(a).buffer,
                                                              a.storage_offset(), nred)
                return
        dims = set(d % len(shape) for d in dims) if shape else set()
        kept = [d for d in range(len(shape)) if d not in dims]
        red = [d for d in range(len(shape)) if d in dims]
        nred = math.prod(shape[d] for d in red)
        if nred == 0:
            # An empty reduction is its identity; no kernel runs (issue 16: launching one with a
            # reduced shape of [0] divided 0 by 0 on the device). amax/argmax and friends are
            # rejected by the frontend before they get here.
            if name in _EMPTY_REDUCTION:
                _fill(out, _EMPTY_REDUCTION[name])
            return
        k_shape, (k_o, k_a) = _coalesce([shape[d] for d in kept], ([ost[d] for d in kept], [ast[d] for d in kept]))
        if name in ("argmax", "argmin"):
            r_shape, r_a = [shape[d] for d in red] or [1], [ast[d] for d in red] or [0]
        else:
            r_shape, (r_a,) = _coalesce([shape[d] for d in red], ([ast[d] for d in red],))
        if len(k_shape) > MAXD or len(r_shape) > MAXD:
            _too_many_dims(name)
        dims_args = (len(k_shape), *_pad(k_shape, 1), *_pad(k_o, 0), *_pad(k_a, 0), len(r_shape), *_pad(r_shape, 1),
                     *_pad(r_a, 0))
        split_below = _LOOP_SPLIT_PER_CORE * state.compute_units if state.compact_kernels else _SPLIT_TARGET_ITEMS
        parts = _split_parts(name, nout, nred, split_below)
        if parts > 1:
            _split_reduce(state, name, out, a, nout, nred, parts, dims_args, k_shape, k_o)
            return
        knl = _kernel(state, "reduce", a.dtype.name, f"r_{name}")
        g, l = _loop_global(nout, state)
        knl(state.queue, g, l, backend_storage(out).buffer, out.storage_offset(), backend_storage(a).buffer,
            a.storage_offset(), nout, nred, *dims_args)

    return kernel


# A reduction is split when its outputs alone would leave the device idle: each work-item then
# reduces a range of at least _SPLIT_CHUNK elements, with at most _SPLIT_MAX_PARTS per output.
_SPLIT_TARGET_ITEMS, _SPLIT_CHUNK, _SPLIT_MAX_PARTS = 1024, 4096, 1024
# On PoCL (compact-kernel states) a CPU core runs a whole work-group, so _loop_global's small
# groups spread even a few outputs over the cores: the split, a second launch and a partials
# buffer, pays only below this many outputs per core (amax over the rows of 128x10000 on 2 cores:
# two launches into one 256-item group, on one core, 0.29 ms at load 4.7; one launch of 32
# groups, 0.23 ms). Groups of 4 for a thousand items cost PoCL more per group than they save:
# medium counts take 64.
_LOOP_SPLIT_PER_CORE = 8
# Work-group size of PoCL's reduction kernels when they have few work-items, each a long loop.
_LOOP_GROUP = 4
_LOOP_GROUP_MEDIUM = 64


def _split_parts(name: str, nout: int, nred: int, target_items: int = _SPLIT_TARGET_ITEMS) -> int:
    if name in ("argmax", "argmin") or nout >= target_items or nred < 2 * _SPLIT_CHUNK:
        return 1
    return min(_SPLIT_MAX_PARTS, nred // _SPLIT_CHUNK, max(1, _SPLIT_TARGET_ITEMS // nout))


def _loop_global(items: int, state) -> tuple:
    """Global and local sizes for reduction kernels whose work-items each loop over a run: on
    PoCL, while there are fewer than 8 full groups of the usual size (one 256-item group would
    keep every item on one core), groups of _LOOP_GROUP, or of _LOOP_GROUP_MEDIUM from 8 such
    groups on; elsewhere _global's."""
    if not state.compact_kernels or items >= 8 * state.group:
        return _global(items, state)
    group = _LOOP_GROUP if items < 8 * _LOOP_GROUP_MEDIUM else _LOOP_GROUP_MEDIUM
    return ((items + group - 1) // group * group,), (group,)


def _split_reduce(state, name: str, out, a, nout: int, nred: int, parts: int, dims_args: tuple, k_shape, k_o) -> None:
    """The two-pass reduction (see _source._split_reductions): partials, then each output's
    combination of them. Partials take at most 8 bytes each."""
    chunk = -(-nred // parts)
    parts = -(-nred // chunk)  # every part non-empty
    partials = state.allocate(nout * parts * 8)
    first = _kernel(state, "reduce", a.dtype.name, f"rp_{name}")
    g, l = _loop_global(nout * parts, state)
    first(state.queue, g, l, partials.buffer, backend_storage(a).buffer, a.storage_offset(), nout, nred, parts, chunk,
          *dims_args)
    second = _kernel(state, "reduce", a.dtype.name, f"rf_{name}")
    g, l = _loop_global(nout, state)
    second(state.queue, g, l, backend_storage(out).buffer, out.storage_offset(), partials.buffer, nout, parts,
           len(k_shape), *_pad(k_shape, 1), *_pad(k_o, 0))


def _scan(name: str):
    def kernel(out, a, dim):
        n = math.prod(a.shape)
        if n == 0:
            return
        shape = a.shape or (1,)
        ost, ast = (out.stride() or (0,)), (a.stride() or (0,))
        dim = dim % len(shape)
        kept = [d for d in range(len(shape)) if d != dim]
        k_shape, (k_o, k_a) = _coalesce([shape[d] for d in kept], ([ost[d] for d in kept], [ast[d] for d in kept]))
        if len(k_shape) > MAXD:
            _too_many_dims(name)
        nlines = n // shape[dim]
        state = _state(out)
        knl = _kernel(state, "reduce", a.dtype.name, name)
        g, l = _global(nlines, state)
        knl(state.queue, g, l, backend_storage(out).buffer, out.storage_offset(), backend_storage(a).buffer,
            a.storage_offset(), nlines, shape[dim], ost[dim], ast[dim], len(k_shape), *_pad(k_shape, 1),
            *_pad(k_o, 0), *_pad(k_a, 0))

    return kernel


# --- matmul ------------------------------------------------------------------------------------

def _matmul(out, a, b):
    batch, m, k = a.shape
    n = b.shape[2]
    if batch * m * n == 0:
        return
    state = _state(out)
    if k == 0:
        _fill(out, 0)
        return
    dtype = a.dtype.name
    if dtype in _source.MATMUL_COLS and (dtype != "float64" or state.has_fp64):
        _matmul_blocked(state, out, a, b, batch, m, n, k)
        return
    knl = _kernel(state, "matmul", dtype, "matmul")
    t = _source.TILE
    g = ((n + t - 1) // t * t, (m + t - 1) // t * t, batch)
    so, sa, sb = out.stride(), a.stride(), b.stride()
    knl(state.queue, g, (t, t, 1), backend_storage(out).buffer, out.storage_offset(), backend_storage(a).buffer,
        a.storage_offset(), backend_storage(b).buffer, b.storage_offset(), m, n, k, *so, *sa, *sb)


def _matmul_blocked(state, out, a, b, batch, m, n, k):
    gemm_blocked(state, a.dtype.name, batch, m, n, k, (backend_storage(out).buffer, out.storage_offset(), out.stride()),
                 (backend_storage(a).buffer, a.storage_offset(), a.stride()),
                 (backend_storage(b).buffer, b.storage_offset(), b.stride()))


#: From this many rows of a on, b is packed into contiguous strips first (matmul_blocked's
#: docstring): the copy is K*N elements against M*K*N multiply-adds, and it spares the k loop a
#: stride of N elements (kernel A/B on the busy machine, pack included: 128x784x512 3.2 -> 2.8
#: ms, 512^3 7.4 -> 6.1 ms; but 64x256x128 0.09 -> 0.20 ms). Fewer rows read a b with unit
#: column stride in place; any other b is packed.
PACK_MIN_ROWS = 128
_PACK_GROUP = 64


def gemm_blocked(state, dtype: str, batch: int, m: int, n: int, k: int, out, a, b, bias=None) -> None:
    """out[i] = a[i] @ b[i] (+ bias) for i < batch with the register-blocked kernel (float32/float64;
    k > 0); each operand is (buffer, offset, (batch, row, column) strides), any strides; bias is
    (buffer, offset, stride) of a vector of n, added to every row."""
    (obuf, ooff, ost), (abuf, aoff, ast), (bbuf, boff, (sbb, sbk, sbn)) = out, a, b
    if ast[2] != 1 and ast[1] == 1 and n < m and bias is None:
        # a is a transposed matrix (g.t() @ x: every linear's weight gradient), whose k loop steps a
        # whole row of memory (a page or more) per k for 6 adjacent elements. out^T = b^T a^T, the
        # smaller operand read that way and a^T as a b with unit column stride, written into out
        # transposed: 2000x700 @ 700x64 12 -> 6.5 ms, 1024x2240 @ 2240x256 148 -> 71 ms, the LSTM
        # backward's 256x700 @ 700x64 1.3 -> 0.5 ms (busy machine, issue 14).
        gemm_blocked(state, dtype, batch, n, m, k, (obuf, ooff, (ost[0], ost[2], ost[1])),
                     (bbuf, boff, (sbb, sbn, sbk)), (abuf, aoff, (ast[0], ast[2], ast[1])))
        return
    w, rows = _source.MATMUL_COLS[dtype], _source.MATMUL_ROWS
    strips = (n + w - 1) // w
    keep = None
    if (sbn != 1 and n > 1) or m >= PACK_MIN_ROWS:
        keep = state.allocate(batch * strips * k * w * (8 if dtype == "float64" else 4))
        groups = (k + _PACK_GROUP - 1) // _PACK_GROUP
        _kernel(state, "matmul_blocked", dtype, "pack_b")(
            state.queue, (groups * _PACK_GROUP, strips, batch), (_PACK_GROUP, 1, 1), keep.buffer, bbuf, boff, k, n,
            sbb, sbk, sbn, strips)
        bbuf, boff, sbb, sbk, sbs = keep.buffer, 0, strips * k * w, w, k * w
    else:
        sbs = w
    knl = _kernel(state, "matmul_blocked", dtype, "matmul_blocked")
    bias_args = (*bias, 1) if bias is not None else (obuf, 0, 0, 0)
    knl(state.queue, ((m + rows - 1) // rows, strips, batch), (1, 1, 1), obuf, ooff, abuf, aoff, bbuf, boff, m, n, k,
        *ost, *ast, sbb, sbk, sbs, *bias_args)


# --- indexing ----------------------------------------------------------------------------------

def _promote0d(t):
    """(shape, strides) of t, with a 0-d tensor seen as one element of a 1-d one."""
    return (tuple(t.shape), tuple(t.stride())) if t.shape else ((1,), (0,))


def _gather(out, a, dim, index):
    n = math.prod(index.shape)
    if n == 0:
        return
    shape, si = _promote0d(index)
    _, so = _promote0d(out)
    a_shape, sa = _promote0d(a)
    if len(shape) > MAXD:
        _too_many_dims("gather")
    dim %= len(shape)
    state = _state(out)
    state.error_possible = True
    knl = _kernel(state, "index", a.dtype.name, "gather")
    g, l = _global(n, state)
    knl(state.queue, g, l, backend_storage(out).buffer, out.storage_offset(), backend_storage(a).buffer,
        a.storage_offset(), backend_storage(index).buffer, index.storage_offset(), dim, a_shape[dim], n,
        state.error_flag, len(shape), *_pad(shape, 1), *_pad(so, 0), *_pad(sa, 0), *_pad(si, 0))


def _scatter(self, dim, index, src, reduce):
    n = math.prod(index.shape)
    if n == 0:
        return
    shape, si = _promote0d(index)
    self_shape, ss = _promote0d(self)
    if len(shape) > MAXD:
        _too_many_dims("scatter_")
    dim %= len(shape)
    state = _state(self)
    state.error_possible = True
    dtype = self.dtype.name
    scalar = src.__class__ in _NUMBERS
    if scalar:
        sbuf, soff, sr, sv = backend_storage(self).buffer, 0, (0,) * len(shape), _scalar(src, dtype)
    else:
        sbuf, soff, sr, sv = backend_storage(src).buffer, src.storage_offset(), _promote0d(src)[1], 0
    length = shape[dim]
    line_shape = list(shape)
    line_shape[dim] = 1
    knl = _kernel(state, "index", dtype, "scatter")
    nlines = n // length
    g, l = _global(nlines, state)
    knl(state.queue, g, l, backend_storage(self).buffer, self.storage_offset(), backend_storage(index).buffer,
        index.storage_offset(), sbuf, soff, sv, int(scalar), dim, self_shape[dim], int(reduce is not None), length,
        nlines, state.error_flag, len(shape), *_pad(line_shape, 1), *_pad(ss, 0), *_pad(si, 0), *_pad(sr, 0))


def _stack_indices(state, indices):
    """The int64 index tensors copied into one contiguous (k, npos) scratch buffer."""
    shape = tuple(indices[0].shape)
    npos = math.prod(shape)
    scratch = state.allocate(max(1, len(indices) * npos) * 8)
    contiguous = _contiguous_strides(shape)
    for j, t in enumerate(indices):
        if npos:
            _copy_raw(state, "int64", "int64", scratch.buffer, j * npos, contiguous, backend_storage(t).buffer,
                      t.storage_offset(), t.stride(), shape)
    return scratch, npos


def _contiguous_strides(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _index_get(out, a, indices):
    n = math.prod(out.shape)
    if n == 0:
        return
    if tuple(out.stride()) != _contiguous_strides(out.shape) and n > 1:
        raise NotImplementedError("opencl: index_get writes a contiguous out")
    state = _state(out)
    state.error_possible = True
    k = len(indices)
    scratch, npos = _stack_indices(state, indices)
    inner_shape, (inner_st,) = _coalesce(a.shape[k:], (a.stride()[k:],))
    if len(inner_shape) > MAXD:
        _too_many_dims("index_get")
    ninner = math.prod(a.shape[k:])
    knl = _kernel(state, "index", a.dtype.name, "index_get")
    g, l = _global(n, state)
    knl(state.queue, g, l, backend_storage(out).buffer, out.storage_offset(), backend_storage(a).buffer,
        a.storage_offset(), scratch.buffer, npos, k, ninner, n, state.error_flag, *_pad(a.shape[:k], 1),
        *_pad(a.stride()[:k], 0), len(inner_shape), *_pad(inner_shape, 1), *_pad(inner_st, 0))


def _index_put(self, indices, values, accumulate):
    k = len(indices)
    npos = math.prod(indices[0].shape)
    if npos == 0 or math.prod(self.shape) == 0:
        return
    state = _state(self)
    state.error_possible = True
    dtype = self.dtype.name
    scratch, npos = _stack_indices(state, indices)
    ninner = math.prod(self.shape[k:])
    scalar = values.__class__ in _NUMBERS
    if scalar:
        vbuf, voff, sv, keep = backend_storage(self).buffer, 0, _scalar(values, dtype), None
    else:
        # values (shape S + trailing, possibly a broadcast view) as one contiguous run
        keep = state.allocate(max(1, npos * ninner) * self.dtype.itemsize)
        _copy_raw(state, dtype, values.dtype.name, keep.buffer, 0, _contiguous_strides(values.shape),
                  backend_storage(values).buffer, values.storage_offset(), values.stride(), values.shape)
        vbuf, voff, sv = keep.buffer, 0, 0
    inner_shape, (inner_st,) = _coalesce(self.shape[k:], (self.stride()[k:],))
    if len(inner_shape) > MAXD:
        _too_many_dims("index_put_")
    knl = _kernel(state, "index", dtype, "index_put")
    g, l = _global(ninner, state)
    knl(state.queue, g, l, backend_storage(self).buffer, self.storage_offset(), scratch.buffer, npos, k, vbuf, voff,
        sv, int(scalar), int(bool(accumulate)), ninner, state.error_flag, *_pad(self.shape[:k], 1),
        *_pad(self.stride()[:k], 0), len(inner_shape), *_pad(inner_shape, 1), *_pad(inner_st, 0))


# --- random ------------------------------------------------------------------------------------
_MASK64 = (1 << 64) - 1


def _uniform(out, seed, offset, low, high):
    n = math.prod(out.shape)
    if n == 0:
        return
    state = _state(out)
    per_block = 2 if out.dtype.name == "float64" else 4
    blocks = (n + per_block - 1) // per_block
    g, l = _global(blocks, state)
    _kernel(state, "random", out.dtype.name, "uniform")(state.queue, g, l, backend_storage(out).buffer,
                                                         out.storage_offset(), n, seed & _MASK64, offset & _MASK64,
                                                         float(low), float(high))


def _normal(out, seed, offset, mean, std):
    n = math.prod(out.shape)
    if n == 0:
        return
    state = _state(out)
    blocks = (n + 3) // 4
    g, l = _global(blocks, state)
    _kernel(state, "random", out.dtype.name, "normal")(state.queue, g, l, backend_storage(out).buffer,
                                                        out.storage_offset(), n, seed & _MASK64, offset & _MASK64,
                                                        float(mean), float(std))


def _randint(out, seed, offset, low, high):
    n = math.prod(out.shape)
    if n == 0:
        return
    state = _state(out)
    span = int(high) - int(low)
    if not 0 < span < 1 << 64:  # the frontend keeps both bounds in int64: up to 2**64 - 1
        raise ValueError(f"randint: high - low must be in [1, 2**64), got {span}")
    blocks = (n + 3) // 4 if span <= 1 << 32 else (n + 1) // 2
    g, l = _global(blocks, state)
    _kernel(state, "random", out.dtype.name, "randint")(state.queue, g, l, backend_storage(out).buffer,
                                                         out.storage_offset(), n, seed & _MASK64, offset & _MASK64,
                                                         int(low), span)


# --- sort --------------------------------------------------------------------------------------

def _sort(values, indices, a, dim, descending, stable):
    n = math.prod(a.shape)
    if n == 0:
        return
    shape, sa = _promote0d(a)
    _, sv = _promote0d(values)
    _, si = _promote0d(indices)
    dim %= len(shape)
    kept = [d for d in range(len(shape)) if d != dim]
    k_shape = [shape[d] for d in kept] or [1]
    if len(k_shape) > MAXD:
        _too_many_dims("sort")
    pick = lambda st: [st[d] for d in kept] or [0]  # noqa: E731
    length = shape[dim]
    nlines = n // length
    state = _state(values)
    dtype = a.dtype.name
    scratch_v = state.allocate(2 * n * a.dtype.itemsize)
    scratch_i = state.allocate(2 * n * 8)
    knl = _kernel(state, "sort", dtype, "sort")
    g, l = _global(nlines, state)
    knl(state.queue, g, l, backend_storage(values).buffer, values.storage_offset(), backend_storage(indices).buffer,
        indices.storage_offset(), backend_storage(a).buffer, a.storage_offset(), scratch_v.buffer, scratch_i.buffer,
        length, int(bool(descending)), nlines, sv[dim], si[dim], sa[dim], len(k_shape), *_pad(k_shape, 1),
        *_pad(pick(sv), 0), *_pad(pick(si), 0), *_pad(pick(sa), 0))


def table() -> dict:
    """Op name -> kernel for every primitive of the contract, and the fused composite ops."""
    from . import ctc, fused, recurrent  # they import this module
    kernels = {"copy_": _copy, "fill_": _fill, "where": _where, "matmul": _matmul, "gather": _gather,
               "scatter_": _scatter, "index_get": _index_get, "index_put_": _index_put, "uniform_": _uniform,
               "normal_": _normal, "randint_": _randint, "sort": _sort}
    for name in FAMILIES["unary"]:
        kernels[name] = _unary(name)
    for name in FAMILIES["binary"] + FAMILIES["compare"]:
        kernels[name] = _binary(name)
    for name in FAMILIES["reduce"]:
        kernels[name] = _reduce(name)
    for name in FAMILIES["scan"]:
        kernels[name] = _scan(name)
    kernels.update(fused.table())
    kernels.update(recurrent.table())
    kernels.update(ctc.table())
    return kernels
