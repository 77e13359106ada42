"""The CUDA kernel table: the OpenCL backend's generated programs and adapters, compiled by NVRTC.

Every primitive reuses the OpenCL backend's adapter (``tensorplug/backends/opencl/kernels.py``):
it coalesces dims, picks the contiguous or strided kernel and computes the launch. The adapters
reach the device only through the ``CUDADevice`` they are handed (storage.py), whose
``build_kernel`` returns a ``CUDAKernel`` here: the same call as a PyOpenCL kernel
(``knl(queue, global_size, local_size, *args)``), launched with ``cuLaunchKernel`` on the
current stream. Programs are generated per (family, dtype), translated to CUDA C (_dialect.py),
compiled once per device on first use and cached; the arguments of a launch are packed with one
``struct.pack_into`` into a buffer whose layout (C's, and so CUDA's parameter layout) is worked
out once per kernel.

Elementwise ops (unary, binary, compare, copy) and single-pass reductions launch from cached
plans instead (``_binary``, ``_unary``, ``_copy``, ``_reduce`` below): the same kernels and
arguments as the shared adapters (tests/cuda/test_cuda_standin.py compares them launch for
launch), with the coalesced layout kept per (shapes, strides) and the kernel per (device, dtype),
because host time per op is what bounds small training steps (docs/cuda.md, issue 11).

relu (and its gradient), max pooling and Adam's step are the OpenCL backend's fused kernels too;
softmax, cross_entropy, layer_norm and conv2d, whose OpenCL kernels are vector code, run their
decompositions.

matmul of float16/bfloat16/float32/float64 is one cuBLAS strided-batched GEMM where the layouts
allow (rows or columns of each operand contiguous; the frontend's transposed views always are);
other layouts and the other dtypes use the generated tiled kernel.
"""
from __future__ import annotations

import ctypes
import math
import struct
import time

from ..api import FAMILIES, backend_storage
from ..opencl import fused as _shared_fused
from ..opencl import kernels as _shared
from . import _dialect
from .storage import CUDADevice, runtime

__all__ = ["table", "build_kernel", "precompile", "blas_layout", "CUDAKernel", "BUILD_TIMES", "FUSED"]

#: Seconds spent compiling each program, by (family, dtype): first-use latency.
BUILD_TIMES: dict = {}

# numpy scalar type of an argument (None: a pointer) -> struct code, native alignment ("@").
_CODES = {None: "Q", "int64": "q", "uint64": "Q", "int32": "i", "uint32": "I", "int16": "h", "uint16": "H",
          "int8": "b", "uint8": "B", "float32": "f", "float64": "d"}


class CUDAKernel:
    """One compiled kernel with its argument layout. ``buffer`` holds the packed arguments and
    ``address`` the void*[] pointing into it that cuLaunchKernel reads; the driver copies the
    arguments during the call, so one buffer per kernel serves every launch (launches come from
    one thread at a time, as every tensorplug device assumes)."""

    __slots__ = ("name", "function", "fmt", "pack", "buffer", "pointers", "address", "device", "launch")

    def __init__(self, name: str, function: int, arg_types: list, device: CUDADevice) -> None:
        self.name = name
        self.function = function
        self.device = device
        codes = [_CODES[None if t is None else t.__name__] for t in arg_types]
        self.fmt = "@" + "".join(codes)
        self.pack = struct.Struct(self.fmt).pack_into
        size = max(1, struct.calcsize(self.fmt))
        self.buffer = ctypes.create_string_buffer(size)
        base = ctypes.addressof(self.buffer)
        offsets = [struct.calcsize("@" + "".join(codes[: i + 1])) - struct.calcsize(codes[i]) for i in range(len(codes))]
        self.pointers = (ctypes.c_void_p * max(1, len(codes)))(*[base + off for off in offsets])
        self.address = ctypes.addressof(self.pointers)
        self.launch = runtime().launch  # bound once: a launch is on every op's path

    def __call__(self, queue: int, global_size: tuple, local_size: tuple, *args) -> None:
        self.pack(self.buffer, 0, *args)
        if len(global_size) == 1:  # the common case, without building tuples in a loop
            block = local_size[0]
            self.launch(self.function, (-(-global_size[0] // block), 1, 1), (block, 1, 1), queue, self)
            return
        block = tuple(local_size) + (1,) * (3 - len(local_size))
        grid = tuple(-(-g // b) for g, b in zip(global_size, block)) + (1,) * (3 - len(global_size))
        self.launch(self.function, grid, block, queue, self)

    def __repr__(self) -> str:
        return f"CUDAKernel({self.name})"


def build_program(device: CUDADevice, family: str, dtype: str):
    """(module, argument types by kernel name) of ``family`` for ``dtype``, compiled once."""
    key = (family, dtype)
    found = device.modules.get(key)
    if found is not None:
        return found
    opencl_text = _dialect.opencl_source(family, dtype)
    started = time.perf_counter()
    module = runtime().compile(_dialect.translate(opencl_text), f"tensorplug_{family}_{dtype}", device.capability)
    BUILD_TIMES[key] = time.perf_counter() - started
    compute = _shared._source.DTYPES[dtype][1]
    device.modules[key] = (module, _shared._signatures(opencl_text, compute))
    return device.modules[key]


def _precompile_worker(capability: str, jobs: list[str]) -> None:
    """Compile ``family/dtype`` jobs into the on-disk cache (run in a child process)."""
    from ._cupy import compile_cached

    cap = tuple(int(v) for v in capability.split("."))
    for job in jobs:
        family, dtype = job.split("/")
        compile_cached(_dialect.cuda_source(family, dtype), f"tensorplug_{family}_{dtype}", cap)


def precompile(capability: tuple[int, int], workers: int | None = None) -> list[str]:
    """Compile every CUDA program (each family for each dtype) into the on-disk kernel cache, in
    parallel processes, so that later processes skip NVRTC (a first op of a new family and dtype
    otherwise compiles for about a second). Needs CuPy and NVRTC, not a GPU. Returns what was
    compiled (or found in the cache); raises RuntimeError with a worker's output when one fails.

    The workers are fresh interpreters started with ``-c`` (not a multiprocessing pool), so the
    caller's ``__main__`` is never re-imported: precompile works from a script fed on stdin, from
    ``python -c`` and from ``python -m tensorplug.backends.cuda.kernels``; no CUDA context is
    forked either."""
    import os
    import subprocess
    import sys

    jobs = [f"{family}/{dtype}" for family in _dialect.FAMILIES for dtype in _dialect.DTYPES]
    workers = max(1, min(len(jobs), workers or os.cpu_count() or 1))
    cap = ".".join(str(int(v)) for v in capability)
    code = "import sys; from tensorplug.backends.cuda import kernels; kernels._precompile_worker(sys.argv[1], sys.argv[2:])"
    # The workers import this very tensorplug, wherever it came from.
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (here, os.environ.get("PYTHONPATH")))))
    procs = [subprocess.Popen([sys.executable, "-c", code, cap, *jobs[i::workers]], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env) for i in range(workers)]
    failures = []
    for proc in procs:
        output, _ = proc.communicate()
        if proc.returncode != 0:
            failures.append(f"worker {' '.join(proc.args[3:])} exited with {proc.returncode}:\n{output}")
    if failures:
        raise RuntimeError("cuda precompile failed:\n" + "\n".join(failures))
    return jobs


def _main(argv=None) -> int:
    """``python -m tensorplug.backends.cuda.kernels [--capability 9.0] [--workers N]``: precompile
    every program for a capability (default: device 0's)."""
    import argparse

    parser = argparse.ArgumentParser(description="compile every tensorplug CUDA program into the on-disk cache")
    parser.add_argument("--capability", help="MAJOR.MINOR (default: device 0's, which needs a GPU)")
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args(argv)
    if args.capability:
        capability = tuple(int(v) for v in args.capability.split("."))
    else:
        import tensorplug as tp

        capability = tp.cuda.get_device_capability()
    started = time.perf_counter()
    done = precompile(capability, workers=args.workers)
    print(f"{len(done)} programs compiled (or found cached) for sm_{capability[0]}{capability[1]} "
          f"in {time.perf_counter() - started:.1f} s")
    return 0


def build_kernel(device: CUDADevice, family: str, dtype: str, name: str) -> CUDAKernel:
    if family not in _dialect.FAMILIES:
        raise NotImplementedError(f"cuda: the {family} kernels are not compiled for CUDA")
    module, signatures = build_program(device, family, dtype)
    return CUDAKernel(name, runtime().function(module, name), signatures[name], device)


# --- matmul ------------------------------------------------------------------------------------

def blas_layout(rows: int, cols: int, row_stride: int, col_stride: int):
    """How cuBLAS (column-major) reads a row-major (rows, cols) matrix with these strides:
    ``("N", ld)`` when its rows are contiguous (cuBLAS sees the transpose, as stored), ``("T",
    ld)`` when its columns are, None when neither (cuBLAS cannot read it in place). A size-1 dim's
    stride is free, so it is chosen to fit; a stride of 0 (a broadcast dim) never fits."""
    if rows == 1 and cols == 1:
        return "N", 1
    if cols == 1:
        return ("N", row_stride) if row_stride >= 1 else None
    if rows == 1:
        if col_stride == 1:
            return "N", cols
        return ("T", col_stride) if col_stride >= 1 else None
    if col_stride == 1 and row_stride >= cols:
        return "N", row_stride
    if row_stride == 1 and col_stride >= rows:
        return "T", col_stride
    return None


def _gemm(out, a, b) -> bool:
    """out = a @ b with one cuBLAS strided-batched GEMM; False where a layout does not fit.

    Row-major C = A @ B is column-major C^T = B^T @ A^T: cuBLAS gets b first, then a."""
    batch, m, k = a.shape
    n = b.shape[2]
    o_stride, a_stride, b_stride = out.stride(), a.stride(), b.stride()
    o_layout = blas_layout(m, n, o_stride[1], o_stride[2])
    a_layout = blas_layout(m, k, a_stride[1], a_stride[2])
    b_layout = blas_layout(k, n, b_stride[1], b_stride[2])
    if o_layout is None or o_layout[0] != "N" or a_layout is None or b_layout is None:
        return False
    itemsize = a.dtype.itemsize
    many = batch > 1
    runtime().gemm(a.dtype.name, b_layout[0], a_layout[0], n, m, k,
                   backend_storage(b).buffer + b.storage_offset() * itemsize, b_layout[1], b_stride[0] if many else 0,
                   backend_storage(a).buffer + a.storage_offset() * itemsize, a_layout[1], a_stride[0] if many else 0,
                   backend_storage(out).buffer + out.storage_offset() * itemsize, o_layout[1],
                   o_stride[0] if many else 0, batch)
    return True


#: dtypes cuBLAS multiplies (float16 and bfloat16 accumulate in float32).
BLAS_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})


def _matmul(out, a, b):
    batch, m, k = a.shape
    n = b.shape[2]
    if batch * m * n == 0:
        return
    if k == 0:
        _shared._fill(out, 0)
        return
    dtype = a.dtype.name
    if dtype in BLAS_DTYPES and _gemm(out, a, b):
        return
    device = backend_storage(out).device
    knl = _shared._kernel(device, "matmul", dtype, "matmul")
    t = _shared._source.TILE
    g = ((n + t - 1) // t * t, (m + t - 1) // t * t, batch)
    knl(device.queue, g, (t, t, 1), backend_storage(out).buffer, out.storage_offset(), backend_storage(a).buffer,
        a.storage_offset(), backend_storage(b).buffer, b.storage_offset(), m, n, k, *out.stride(), *a.stride(),
        *b.stride())


# --- elementwise launch plans -----------------------------------------------------------------
# Host time per op is what bounds small training steps (docs/cuda.md, issue 11). The shared
# adapters coalesce dims, pad shapes and look kernels up on every call; here elementwise ops keep
# what does not change between calls: per layout (shapes and strides of the operands) the
# coalesced launch arguments, and per (device, dtype, kind of operands, flat or strided) the
# kernel with its packer. A repeated op is two dict lookups, one pack and one launch. Layouts of
# more dims than the kernels take (MAXD after coalescing) go to the shared adapter, which loops.

_NUMBERS = (bool, int, float)
_FLAT = ()  # the layout tail of a flat launch: no shape or strides are passed

#: layout key -> (element count, tail): tail is _FLAT, the strided kernel's trailing arguments
#: (ndim, padded shape, padded strides per operand), or None (too many dims: shared adapter).
#: Bounded: cleared when full, so a program with ever new shapes does not grow it forever.
_LAYOUTS: dict = {}
_LAYOUT_LIMIT = 4096


def _layout(key: tuple, shape: tuple, strides: list, zeros: tuple) -> tuple:
    """(n, tail) of an elementwise launch over ``shape`` with these operand strides; ``zeros``
    lists the operand positions that are numbers (their strides are 0, not coalesced)."""
    n = math.prod(shape)
    shape_c, sts = _shared._coalesce(shape, strides)
    if _shared._is_flat(shape_c, sts):
        tail = _FLAT
    elif len(shape_c) > _shared.MAXD:
        tail = None
    else:
        padded = []
        operand = 0
        for position in range(len(zeros)):
            if zeros[position]:
                padded += [0] * _shared.MAXD
            else:
                padded += _shared._pad(sts[operand], 0)
                operand += 1
        tail = (len(shape_c), *_shared._pad(shape_c, 1), *padded)
    if len(_LAYOUTS) >= _LAYOUT_LIMIT:
        _LAYOUTS.clear()
    _LAYOUTS[key] = (n, tail)
    return n, tail


class _Plan:
    """One kernel's launch parts, bound once: what a repeated op reads."""

    __slots__ = ("kernel", "function", "pack", "buffer", "launch", "block", "group", "flagging")

    def __init__(self, kernel: CUDAKernel, group: int, flagging: bool = False) -> None:
        self.kernel = kernel
        self.function = kernel.function
        self.pack = kernel.pack
        self.buffer = kernel.buffer
        self.launch = kernel.launch
        self.group = group
        self.block = (group, 1, 1)
        self.flagging = flagging


def _binary(name: str):
    general = _shared._binary(name)
    flagging = name in _shared._source.FLAGGING
    plans: dict = {}  # (device, dtype, a is a number, b is a number, flat) -> _Plan

    def plan_for(key):
        device, dtype, a_number, b_number, flat = key
        mode = ("ts" if b_number else "st" if a_number else "tt") if flat else "s"
        knl = _shared._kernel(device, "elementwise", dtype, f"{name}_{mode}")
        plans[key] = _Plan(knl, device.group, flagging and _shared._source.kind(dtype) in "iu")
        return plans[key]

    def kernel(out, a, b):
        a_number, b_number = a.__class__ in _NUMBERS, b.__class__ in _NUMBERS
        if a_number and b_number:
            return general(out, a, b)
        shape = out.shape
        a_strides = None if a_number else a.stride()
        b_strides = None if b_number else b.stride()
        key = (shape, out.stride(), a_strides, b_strides)
        layout = _LAYOUTS.get(key)
        if layout is None:
            strides = [s for s in key[1:] if s is not None]
            layout = _layout(key, shape, strides, (False, a_number, b_number))
        n, tail = layout
        if n == 0:  # nothing is divided, so nothing divides by zero (as the shared adapter)
            return
        if tail is None:
            return general(out, a, b)
        storage = backend_storage(out)
        device = storage.device
        dtype = b.dtype.name if a_number else a.dtype.name
        plan_key = (device, dtype, a_number, b_number, tail is _FLAT)
        plan = plans[plan_key] if plan_key in plans else plan_for(plan_key)
        if plan.flagging:
            # A number divisor is checked here, on the host; tensor ones by the kernel, which
            # raises at the next synchronization.
            if b_number and b == 0:
                raise ZeroDivisionError(f"integer division by zero in {name}")
            device.error_possible = True
        obuf, ooff = storage.buffer, out.storage_offset()
        if a_number:
            abuf, aoff, sa = obuf, 0, _shared._scalar(a, dtype)
        else:
            abuf, aoff, sa = backend_storage(a).buffer, a.storage_offset(), 0
        if b_number:
            bbuf, boff, sb = obuf, 0, _shared._scalar(b, dtype)
        else:
            bbuf, boff, sb = backend_storage(b).buffer, b.storage_offset(), 0
        if tail is _FLAT:
            plan.pack(plan.buffer, 0, obuf, ooff, abuf, aoff, bbuf, boff, sa, sb, n, device.error_flag)
        else:
            mode = (1 if a_number else 0) | (2 if b_number else 0)
            plan.pack(plan.buffer, 0, obuf, ooff, abuf, aoff, bbuf, boff, sa, sb, mode, n, device.error_flag, *tail)
        plan.launch(plan.function, (-(-n // plan.group), 1, 1), plan.block, device.queue, plan.kernel)

    return kernel


def _unary(name: str):
    general = _shared._unary(name)
    plans: dict = {}  # (device, dtype, flat) -> _Plan

    def plan_for(key):
        device, dtype, flat = key
        knl = _shared._kernel(device, "elementwise", dtype, f"{name}_c" if flat else f"{name}_s")
        plans[key] = _Plan(knl, device.group)
        return plans[key]

    def kernel(out, a):
        shape = out.shape
        key = (shape, out.stride(), a.stride())
        layout = _LAYOUTS.get(key)
        if layout is None:
            layout = _layout(key, shape, [key[1], key[2]], (False, False))
        n, tail = layout
        if n == 0:
            return
        if tail is None:
            return general(out, a)
        storage = backend_storage(out)
        device = storage.device
        plan_key = (device, a.dtype.name, tail is _FLAT)
        plan = plans[plan_key] if plan_key in plans else plan_for(plan_key)
        a_storage = backend_storage(a)
        plan.pack(plan.buffer, 0, storage.buffer, out.storage_offset(), a_storage.buffer, a.storage_offset(), n, *tail)
        plan.launch(plan.function, (-(-n // plan.group), 1, 1), plan.block, device.queue, plan.kernel)

    return kernel


def _copy():
    plans: dict = {}  # (device, dst dtype, src dtype, flat) -> _Plan

    def plan_for(key):
        device, dst_dtype, src_dtype, flat = key
        knl = _shared._kernel(device, "copy", dst_dtype, f"copy_{src_dtype}_{'c' if flat else 's'}")
        plans[key] = _Plan(knl, device.group)
        return plans[key]

    def kernel(dst, src):
        shape = dst.shape
        key = (shape, dst.stride(), src.stride())
        layout = _LAYOUTS.get(key)
        if layout is None:
            layout = _layout(key, shape, [key[1], key[2]], (False, False))
        n, tail = layout
        if n == 0:
            return
        if tail is None:
            return _shared._copy(dst, src)
        storage = backend_storage(dst)
        device = storage.device
        plan_key = (device, dst.dtype.name, src.dtype.name, tail is _FLAT)
        plan = plans[plan_key] if plan_key in plans else plan_for(plan_key)
        src_storage = backend_storage(src)
        plan.pack(plan.buffer, 0, storage.buffer, dst.storage_offset(), src_storage.buffer, src.storage_offset(), n,
                  *tail)
        plan.launch(plan.function, (-(-n // plan.group), 1, 1), plan.block, device.queue, plan.kernel)

    return kernel


def _reduce(name: str):
    general = _shared._reduce(name)
    layouts: dict = {}  # (a's shape and strides, out's strides, dims) -> (nout, dims_args), or None: general
    plans: dict = {}  # (device, dtype) -> _Plan

    def layout_for(key, out, a, dims):
        # The shared adapter's arithmetic (opencl/kernels.py ``_reduce``), done once per layout.
        # Empty, split (two-pass) and too-many-dims reductions stay with the shared adapter.
        shape, ast, ost = key[0], key[1], key[2]
        dims_set = set(d % len(shape) for d in dims) if shape else set()
        kept = [d for d in range(len(shape)) if d not in dims_set]
        red = [d for d in range(len(shape)) if d in dims_set]
        nout = math.prod(out.shape)
        nred = math.prod(shape[d] for d in red)
        layout = None
        if nout and nred and _shared._split_parts(name, nout, nred) == 1:
            k_shape, (k_o, k_a) = _shared._coalesce([shape[d] for d in kept],
                                                    ([ost[d] for d in kept], [ast[d] for d in kept]))
            if name in ("argmax", "argmin"):
                r_shape, r_a = [shape[d] for d in red] or [1], [ast[d] for d in red] or [0]
            else:
                r_shape, (r_a,) = _shared._coalesce([shape[d] for d in red], ([ast[d] for d in red],))
            if len(k_shape) <= _shared.MAXD and len(r_shape) <= _shared.MAXD:
                pad = _shared._pad
                layout = (nout, (nred, len(k_shape), *pad(k_shape, 1), *pad(k_o, 0), *pad(k_a, 0), len(r_shape),
                                 *pad(r_shape, 1), *pad(r_a, 0)))
        if len(layouts) >= _LAYOUT_LIMIT:
            layouts.clear()
        layouts[key] = layout
        return layout

    def kernel(out, a, dims):
        key = (a.shape, a.stride(), out.stride(), tuple(dims))
        layout = layouts[key] if key in layouts else layout_for(key, out, a, dims)
        if layout is None:
            return general(out, a, dims)
        nout, args = layout
        storage = backend_storage(out)
        device = storage.device
        plan_key = (device, a.dtype.name)
        plan = plans.get(plan_key)
        if plan is None:
            plan = plans[plan_key] = _Plan(_shared._kernel(device, "reduce", a.dtype.name, f"r_{name}"), device.group)
        a_storage = backend_storage(a)
        plan.pack(plan.buffer, 0, storage.buffer, out.storage_offset(), a_storage.buffer, a.storage_offset(), nout,
                  *args)
        plan.launch(plan.function, (-(-nout // plan.group), 1, 1), plan.block, device.queue, plan.kernel)

    return kernel


def table() -> dict:
    """Op name -> kernel for every primitive of the contract."""
    kernels = {"copy_": _copy(), "fill_": _shared._fill, "where": _shared._where, "matmul": _matmul,
               "gather": _shared._gather, "scatter_": _shared._scatter, "index_get": _shared._index_get,
               "index_put_": _shared._index_put, "uniform_": _shared._uniform, "normal_": _shared._normal,
               "randint_": _shared._randint, "sort": _shared._sort}
    for name in FAMILIES["unary"]:
        kernels[name] = _unary(name)
    for name in FAMILIES["binary"] + FAMILIES["compare"]:
        kernels[name] = _binary(name)
    for name in FAMILIES["reduce"]:
        kernels[name] = _reduce(name)
    for name in FAMILIES["scan"]:
        kernels[name] = _shared._scan(name)
    # The fused composite ops whose OpenCL kernels have no vector code (_dialect.scalar_fused_source).
    fused = _shared_fused.table(vector=False)
    for name in FUSED:
        kernels[name] = fused[name]
    return kernels


#: Fused composite ops the CUDA backend runs natively, with the OpenCL backend's adapters.
FUSED = ("relu", "relu_backward", "max_pool2d", "max_pool2d_with_indices", "max_pool2d_backward",
         "max_pool2d_with_indices_backward", "adam_step_")


if __name__ == "__main__":
    raise SystemExit(_main())
