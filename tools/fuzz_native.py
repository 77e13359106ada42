"""Fuzz the native code paths (CPU C++ kernels, the C hot paths, CTC, gelu, cross-device ops)
for crashes, hangs and silent wrong answers.

Each case is a (family, seed) pair: the seed alone rebuilds its inputs, so a finding is replayed
with ``--family F --seed N``. Cases run in a worker subprocess, one after another; when the worker
dies (a segfault, SIGFPE, abort) or stops answering (a hang), the parent records the case it was
running, with the signal, and starts a fresh worker for the rest. Values are checked against NumPy
float64 (and float8/bfloat16 rounding written from the formats' definitions); a Python exception
is a pass only where the input is invalid, and its message must name the op.

    nice -n 10 python tools/fuzz_native.py --cases 2000            # every family, 2000 seeds each
    python tools/fuzz_native.py --family ctc --seed 17 --verbose   # replay one case in-process
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "dtypes"))

INT_DTYPES = ["uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"]
FLOAT8_DTYPES = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"]
FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64"] + FLOAT8_DTYPES
COMPLEX_DTYPES = ["complex64", "complex128"]
ALL_DTYPES = ["bool"] + INT_DTYPES + FLOAT_DTYPES + COMPLEX_DTYPES


class Wrong(Exception):
    """A silent wrong answer: the op returned, and its value or shape is not the reference's."""


# ----- references ------------------------------------------------------------------------------

def round_to(values: np.ndarray, dtype: str) -> np.ndarray:
    """float64 values rounded as a tensor of `dtype` stores them (through float32 for the 8- and
    16-bit float types, as the kernels compute), back in float64."""
    v = np.asarray(values, dtype=np.float64)
    if dtype == "float64":
        return v
    if dtype == "float32":
        with np.errstate(over="ignore"):
            return v.astype(np.float32).astype(np.float64)
    if dtype == "float16":
        with np.errstate(over="ignore"):
            return v.astype(np.float32).astype(np.float16).astype(np.float64)
    if dtype == "bfloat16":
        with np.errstate(over="ignore"):
            bits = v.astype(np.float32).view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32)
        out = rounded.view(np.float32).astype(np.float64)
        return np.where(np.isnan(v), np.nan, out)
    if dtype in FLOAT8_DTYPES:
        import float8_reference as f8
        with np.errstate(over="ignore"):
            f32 = v.astype(np.float32)
        return np.array([f8.decode(f8.encode(float(x), dtype), dtype) for x in f32.ravel()]).reshape(v.shape)
    raise ValueError(dtype)


def representable(dtype: str) -> list:
    """Interesting values of `dtype`, each exactly representable."""
    if dtype == "bool":
        return [False, True]
    if dtype in INT_DTYPES:
        info = np.iinfo(np.dtype(dtype))
        lo, hi = int(info.min), int(info.max)
        return [0, 1, 2, 3, 7, hi, hi - 1, lo, lo + 1] + ([-1, -2, -7] if lo < 0 else [])
    if dtype in FLOAT8_DTYPES:
        import float8_reference as f8
        return sorted({f8.decode(c, dtype) for c in range(256)}, key=lambda x: (math.isnan(x), x))
    specials = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -2.5, math.inf, -math.inf, math.nan]
    if dtype == "float16":
        specials += [65504.0, -65504.0, 2.0 ** -24, 6.1e-5, 1024.0]
    elif dtype == "bfloat16":
        specials += [3.3895313892515355e38, 2.0 ** -133, 2.0 ** -126, 256.0]
    elif dtype in ("float32", "complex64"):
        specials += [float(np.finfo(np.float32).max), 1e-45, 1.17549435e-38, 16777217.0, 1e10]
    else:
        specials += [1.7976931348623157e308, 5e-324, 2.2250738585072014e-308, 2.0 ** 53 + 1, 1e300]
    return [float(round_to(np.array(x), dtype)) if dtype not in COMPLEX_DTYPES else x for x in specials]


def _round_complex(values: np.ndarray, part: str) -> np.ndarray:
    """Complex values with each part rounded to the `part` float dtype (no inf * 1j NaNs)."""
    out = np.empty(np.shape(values), dtype=np.complex128)
    out.real = round_to(np.real(values), part)
    out.imag = round_to(np.imag(values), part)
    return out


def random_values(rng: random.Random, dtype: str, n: int) -> list:
    pool = representable(dtype)
    out = []
    for _ in range(n):
        if rng.random() < 0.5:
            x = rng.choice(pool)
        elif dtype == "bool":
            x = rng.random() < 0.5
        elif dtype in INT_DTYPES:
            info = np.iinfo(np.dtype(dtype))
            x = rng.randint(int(info.min), int(info.max)) if rng.random() < 0.3 else rng.randint(max(-9, int(info.min)), 9)
        else:
            x = rng.choice([rng.gauss(0, 1), rng.gauss(0, 1e4), rng.uniform(-3, 3)])
            if dtype not in COMPLEX_DTYPES:
                x = float(round_to(np.array(x), dtype))
        if dtype in COMPLEX_DTYPES:
            x = complex(x, rng.choice(pool) if rng.random() < 0.5 else rng.gauss(0, 1))
            x = complex(np.array(x, dtype=np.dtype(dtype)))  # representable, as the other dtypes'
        out.append(x)
    return out


def numpy_of(values: list, dtype: str, shape) -> np.ndarray:
    """The values as the NumPy array of the closest dtype (float64 for the ones NumPy lacks)."""
    if dtype in INT_DTYPES or dtype in ("bool", "float16", "float32", "float64", "complex64", "complex128"):
        return np.array(values, dtype=np.dtype(dtype)).reshape(shape)
    return np.array(values, dtype=np.float64).reshape(shape)


def make_tensor(tp, values: list, dtype: str, shape, device="cpu"):
    """A tensor holding exactly `values` (each representable in `dtype`)."""
    array = numpy_of(values, dtype, shape)
    if dtype in ("bfloat16",) + tuple(FLOAT8_DTYPES):
        return tp.tensor(array.astype(np.float32)).to(getattr(tp, dtype)).to(device)
    return tp.tensor(array).to(device)


def host_values(tp, t) -> np.ndarray:
    """A tensor's values as NumPy (float64 for the dtypes NumPy lacks), through a float32 or
    float64 cast the conversion tests check bit for bit."""
    name = t.dtype.name if hasattr(t.dtype, "name") else str(t.dtype).split(".")[-1]
    t = t.detach()
    if name in ("bfloat16",) + tuple(FLOAT8_DTYPES):
        return t.to("cpu").to(tp.float64).numpy()
    return t.to("cpu").numpy()


def views(rng: random.Random, ndim_max=3):
    """A random base shape and a recipe of view steps (each valid on both NumPy and tensorplug)."""
    ndim = rng.randint(0, ndim_max)
    shape = [rng.choice([0, 1, 1, 2, 3, 4, 5]) if rng.random() < 0.15 else rng.randint(1, 5) for _ in range(ndim)]
    steps = []
    for _ in range(rng.randint(0, 3)):
        kind = rng.choice(["permute", "slice", "expand", "select", "unsqueeze"])
        steps.append((kind, rng.random(), rng.random(), rng.random()))
    return shape, steps


def apply_view(x, steps, is_numpy: bool):
    """Apply the recipe to a NumPy array or a tensor in the same way; returns the view."""
    for kind, a, b, c in steps:
        shape = list(x.shape)
        nd = len(shape)
        if kind == "permute" and nd >= 2:
            perm = list(range(nd))
            random.Random(a).shuffle(perm)
            x = x.transpose(perm) if is_numpy else x.permute(*perm)
        elif kind == "slice" and nd >= 1:
            d = int(a * nd)
            n = shape[d]
            start = int(b * (n + 1))
            step = 1 + int(c * 3)
            x = x[(slice(None),) * d + (slice(start, None, step),)]
        elif kind == "expand" and nd >= 1:
            d = int(a * nd)
            if shape[d] == 1:
                shape[d] = 1 + int(b * 4)
                x = np.broadcast_to(x, shape) if is_numpy else x.expand(*shape)
        elif kind == "select" and nd >= 1:
            d = int(a * nd)
            if shape[d] > 0:
                x = x[(slice(None),) * d + (int(b * shape[d]),)]
        elif kind == "unsqueeze":
            d = int(a * (nd + 1))
            x = np.expand_dims(x, d) if is_numpy else x.unsqueeze(d)
    return x


def same(got: np.ndarray, want: np.ndarray, rel=0.0, what="") -> None:
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        raise Wrong(f"{what}: shape {got.shape}, reference {want.shape}")
    if got.dtype.kind in "iub" and want.dtype.kind in "iub":
        if not np.array_equal(got, want):
            raise Wrong(f"{what}: {got.ravel()[:8]} != reference {want.ravel()[:8]}")
        return
    g = got.astype(np.complex128 if got.dtype.kind == "c" or want.dtype.kind == "c" else np.float64)
    w = want.astype(g.dtype)
    for part in ((g.real, w.real), (g.imag, w.imag)) if g.dtype.kind == "c" else ((g, w),):
        a, b = part
        nan_ok = np.isnan(a) == np.isnan(b)
        finite = ~np.isnan(b)
        with np.errstate(invalid="ignore", over="ignore"):
            close = (a == b) | (np.abs(a - b) <= rel * np.abs(b))
        if not (nan_ok.all() and close[finite].all()):
            bad = np.flatnonzero(~(nan_ok & (close | ~finite)))[:4]
            raise Wrong(f"{what}: got {a.ravel()[bad]} reference {b.ravel()[bad]}")


_DEVICES: dict = {}


def device_available(tp, name: str) -> bool:
    """Whether a tensor can be made on device `name` here (CI has no OpenCL, say)."""
    if name not in _DEVICES:
        try:
            tp.empty(1, device=name)
            _DEVICES[name] = True
        except Exception:
            _DEVICES[name] = False
    return _DEVICES[name]


def expect_error(reason: str, call) -> str:
    """Invalid input: `call` must raise an ordinary, non-empty Python exception."""
    try:
        call()
    except (SystemError, RecursionError, MemoryError) as e:
        raise Wrong(f"{reason}: {type(e).__name__}: {e}")
    except Exception as e:
        if not str(e):
            raise Wrong(f"{reason}: {type(e).__name__} without a message")
        return "raised"
    raise Wrong(f"invalid input ({reason}) did not raise")


def _crash_check(call) -> str:
    """Inputs without a reference: only a crash or a hang is a finding."""
    try:
        call()
    except Exception:
        return "raised"
    return "skip"


# ----- families --------------------------------------------------------------------------------

def fam_item(tp, rng):
    """Tensor.item() on every dtype, views, devices; numel != 1 must raise."""
    dtype = rng.choice(ALL_DTYPES)
    shape, steps = views(rng, 3)
    n = int(np.prod(shape)) if shape else 1
    values = random_values(rng, dtype, n)
    ref = apply_view(numpy_of(values, dtype, shape), steps, True)
    t = apply_view(make_tensor(tp, values, dtype, shape), steps, False)
    if rng.random() < 0.25:
        device = rng.choice(["meta", "opencl", "npdev"])
        if not device_available(tp, device):
            return "skip"
        if dtype in FLOAT8_DTYPES + ["uint16", "uint32", "uint64"] or (device != "meta" and dtype in ("bfloat16",)):
            return "skip"
        try:
            t = t.to(device)
        except (TypeError, RuntimeError):
            return "skip"
        if device == "meta":
            return expect_error("item of a meta tensor", t.item)
    if ref.size != 1:
        return expect_error(f"item of {ref.size} elements", t.item)
    got = t.item()
    want = ref.reshape(()).item()
    kind = type(want) if dtype in INT_DTYPES + ["bool"] + COMPLEX_DTYPES else float
    if type(got) is not kind:
        raise Wrong(f"item type {type(got).__name__}, expected {kind.__name__}")
    if not (got == want or (got != got and want != want)):
        raise Wrong(f"item {got!r} != {want!r}")
    if kind is float and math.copysign(1, got) != math.copysign(1, want) and not math.isnan(want):
        raise Wrong(f"item sign {got!r} != {want!r}")
    return "ok"


def _random_leaf(rng):
    kind = rng.random()
    if kind < 0.2:
        return rng.random() < 0.5
    if kind < 0.45:
        return rng.choice([0, 1, -1, 2 ** 31, -2 ** 31, 2 ** 63 - 1, -2 ** 63, 2 ** 63, 2 ** 64, -2 ** 64, 7])
    if kind < 0.7:
        return rng.choice([0.0, -0.0, 1.5, math.nan, math.inf, -math.inf, 1e300, 5e-324, 1e-40, -3.25])
    if kind < 0.75:
        return complex(rng.random(), -1)
    if kind < 0.85:
        return rng.choice([np.float32(2.5), np.int64(-3), np.bool_(True), np.uint64(2 ** 64 - 1), np.float16(1.5),
                           np.int8(-128), np.float64(np.nan)])
    return ("tensor0d", rng.choice(["float32", "int64", "bool", "float64", "uint8"]), rng.choice([0, 1, 3]))


def _leaf_value(tp, leaf):
    if isinstance(leaf, tuple) and leaf and leaf[0] == "tensor0d":
        return tp.tensor(leaf[2], dtype=getattr(tp, leaf[1]))
    return leaf


def _plain(leaf):
    """The leaf as a plain Python number and its kind (0 bool, 1 int, 2 float, 3 complex)."""
    if isinstance(leaf, tuple):
        _, dtype, v = leaf
        if dtype == "bool":
            return bool(v), 0
        return (float(v), 2) if dtype.startswith("float") else (int(v), 1)
    if isinstance(leaf, (bool, np.bool_)):
        return bool(leaf), 0
    if isinstance(leaf, (int, np.integer)):
        return int(leaf), 1
    if isinstance(leaf, (float, np.floating)):
        return float(leaf), 2
    return complex(leaf), 3


def _leaf_dtype(leaf) -> str:
    """The dtype PyTorch counts a list item as: its own for a NumPy scalar or a 0-d tensor."""
    if isinstance(leaf, tuple):
        return leaf[1]
    if isinstance(leaf, np.generic):
        return leaf.dtype.name
    return {bool: "bool", int: "int64", float: "float32", complex: "complex64"}[type(leaf)]


def _items_dtype(leaves) -> str:
    """PyTorch's promotion of the items' dtypes: the highest category wins (int64 with float16 is
    float16), within it NumPy's promotion; a complex result widens for a float64 item."""
    names = [_leaf_dtype(leaf) for leaf in leaves]
    category = {name: 0 if name == "bool" else 3 if name.startswith("complex") else 2 if name.startswith("float")
                else 1 for name in names}
    top = max(category.values())
    result = np.result_type(*[np.dtype(name) for name in names if category[name] == top]).name
    if top == 3 and "float64" in names:
        result = "complex128"
    return result


def fam_from_list(tp, rng):
    """tp.tensor(list): nested, ragged, mixed types, huge ints, NumPy scalars, 0-d tensors."""
    depth = rng.choice([0, 1, 1, 1, 2, 2, 3])
    shape = [rng.choice([0, 1, 2, 3]) for _ in range(depth)]
    n = int(np.prod(shape)) if shape else 1
    leaves = [_random_leaf(rng) for _ in range(n)]
    # keep most cases to a few leaf kinds, as real data is
    if rng.random() < 0.5 and leaves:
        first = leaves[0]
        leaves = [first if rng.random() < 0.7 else leaf for leaf in leaves]
    ragged = rng.random() < 0.1 and depth >= 1 and shape[0] > 0
    def build(level, it):
        if level == len(shape):
            return _leaf_value(tp, next(it))
        return [build(level + 1, it) for _ in range(shape[level])]
    data = build(0, iter(leaves))
    if ragged and isinstance(data, list) and data:
        data = data + [[1] * (len(data[0]) + 1) if isinstance(data[0], list) else [1]]
    dtype = rng.choice([None] * 6 + ["float32", "int64", "uint64", "bool", "float16", "complex64", "int8"])
    kwargs = {} if dtype is None else {"dtype": getattr(tp, dtype)}
    if ragged:
        return expect_error("ragged list", lambda: tp.tensor(data, **kwargs))
    make = lambda: tp.tensor(data, **kwargs)  # noqa: E731
    if any(isinstance(leaf, np.unsignedinteger) for leaf in leaves):
        return _crash_check(make)  # PyTorch 2.13 refuses most mixes with NumPy's uint64
    plain = [_plain(leaf) for leaf in leaves]
    kind = max((k for _, k in plain), default=2)
    huge = any(k == 1 and not -2 ** 63 <= v < 2 ** 63 for v, k in plain)
    if dtype is None:
        if kind == 1 and huge:
            return expect_error("int beyond int64", make)
        if huge:
            return _crash_check(make)  # PyTorch reads them as floats; tensorplug refuses (a deviation)
        want_dtype = _items_dtype(leaves) if leaves else "float32"
    else:
        want_dtype = dtype
    if huge and want_dtype not in INT_DTYPES:
        return _crash_check(make)  # PyTorch converts them to the float dtype; tensorplug refuses
    if want_dtype == "uint64" and dtype is not None and any(isinstance(leaf, (float, np.floating)) for leaf in leaves):
        return expect_error("Python float for uint64", make)
    if want_dtype == "uint64" and dtype is not None and kind == 2:
        return _crash_check(make)  # a float 0-d tensor for uint64: not pinned down here
    if want_dtype in INT_DTYPES:
        info = np.iinfo(np.dtype(want_dtype))
        for v, k in plain:
            if k == 3 or (k == 2 and not math.isfinite(v)):
                return expect_error("non-finite or complex to int", make)
            if k == 2 and not info.min <= math.trunc(v) <= info.max:
                return expect_error("float out of the int dtype's range", make)
            if k in (0, 1) and not info.min <= int(v) <= info.max and not (want_dtype != "uint64" and k == 1):
                return expect_error("int out of range", make)
            if k == 1 and not info.min <= int(v) <= info.max:
                return expect_error("int out of range", make)
    if want_dtype == "bool" and kind == 3:
        return "skip"
    if want_dtype in ("float32", "float16") and any(k == 1 and abs(v) >= 2 ** 64 for v, k in plain):
        return expect_error("int beyond uint64 to float", make)
    if want_dtype not in COMPLEX_DTYPES and kind == 3:
        return expect_error("complex to real", make)
    try:
        t = tp.tensor(data, **kwargs)
    except RecursionError:
        raise Wrong("RecursionError")
    if 0 in shape:  # a list with no items has no inner lists to give the later sizes
        shape = shape[:shape.index(0) + 1]
    if list(t.shape) != shape:
        raise Wrong(f"shape {list(t.shape)} != {shape}")
    if want_dtype is not None and t.dtype != getattr(tp, want_dtype):
        raise Wrong(f"dtype {t.dtype} != {want_dtype}")
    got = host_values(tp, t).ravel()
    name = str(t.dtype).split(".")[-1]
    if name in INT_DTYPES:
        want = []
        for v, k in plain:
            want.append(int(v) if k != 2 else int(v))  # floats truncate toward zero
        same(got.astype(object), np.array(want, dtype=object), what="values")
    elif name == "bool":
        same(got, np.array([bool(v) for v, _ in plain]), what="values")
    elif name in COMPLEX_DTYPES:
        part = "float32" if name == "complex64" else "float64"
        same(got, _round_complex(np.array([complex(v) for v, _ in plain]), part), what="values")
    else:
        with np.errstate(over="ignore"):
            want = round_to(np.array([float(v) for v, _ in plain], dtype=np.float64), name)
        same(got, want, what="values")
    return "ok"


UNARY = {
    "neg": (lambda x: -x, None),
    "abs": (np.abs, None),
    "sqrt": (np.sqrt, "float"),
    "exp": (np.exp, "float"),
    "sign": (lambda x: np.where(np.isnan(x), 0, np.sign(x)) if x.dtype.kind in "fc" else np.sign(x), None),  # NaN: 0
}
BINARY = {
    "add": (np.add, None),
    "sub": (np.subtract, None),
    "mul": (np.multiply, None),
    "div": (np.divide, "float"),
    "floor_divide": (None, "int"),
    "remainder": (None, "int"),
    "maximum": (np.maximum, None),
    "eq": (np.equal, "bool"),
    "lt": (np.less, "bool"),
    "bitwise_and": (np.bitwise_and, "int"),
    "bitwise_left_shift": (None, "int"),
    "bitwise_right_shift": (None, "int"),
    "fmod": (None, "int"),
}


def _int_floor_div(a: int, b: int, bits: int, signed: bool):
    q = a // b
    mod = 1 << bits
    q %= mod
    if signed and q >= mod // 2:
        q -= mod
    return q


def fam_elementwise(tp, rng):
    """Unary and binary ops, same dtype, random views and extreme values, against NumPy float64."""
    dtype = rng.choice(ALL_DTYPES)
    binary = rng.random() < 0.65
    name = rng.choice(sorted(BINARY if binary else UNARY))
    fn, only = (BINARY if binary else UNARY)[name]
    shape, steps = views(rng, 3)
    n = int(np.prod(shape)) if shape else 1
    va = random_values(rng, dtype, n)
    a_np = apply_view(numpy_of(va, dtype, shape), steps, True)
    a = apply_view(make_tensor(tp, va, dtype, shape), steps, False)
    if binary:
        kind = rng.random()
        if kind < 0.6:
            b_shape = list(a_np.shape)
            if b_shape and rng.random() < 0.3:
                b_shape[rng.randrange(len(b_shape))] = 1  # broadcast
            nb = int(np.prod(b_shape)) if b_shape else 1
            vb = random_values(rng, dtype, nb)
            b_np = numpy_of(vb, dtype, b_shape)
            b = make_tensor(tp, vb, dtype, b_shape)
        else:
            vb = random_values(rng, dtype, 1)
            b_np = numpy_of(vb, dtype, ())
            b = make_tensor(tp, vb, dtype, ())  # a 0-d tensor keeps the dtype
        args = (a, b)
    else:
        args = (a,)
    op = getattr(tp, name)
    is_int = dtype in INT_DTYPES
    if only == "int" and not is_int:
        return "skip"
    empty = np.broadcast_shapes(np.shape(a_np), np.shape(b_np)) if binary else None
    if name in ("floor_divide", "remainder", "fmod") and (b_np == 0).any() and 0 not in empty:
        return expect_error("integer division by zero", lambda: op(*args))
    if dtype in COMPLEX_DTYPES and name in ("maximum", "lt", "sign", "floor_divide", "remainder"):
        return expect_error(f"{name} on complex", lambda: op(*args))
    if dtype == "bool" and name == "sign":
        return "skip"  # NumPy has no sign of bool
    if dtype == "bool" and name in ("neg", "sub"):
        return expect_error(f"{name} on bool", lambda: op(*args))
    if dtype in ("uint16", "uint32", "uint64") and name in ("neg", "sign", "abs"):
        return "skip"  # PyTorch 2.13 lacks some of these for the new unsigned types
    if dtype in FLOAT8_DTYPES and name in ("exp", "sqrt", "div", "floor_divide", "remainder"):
        return "skip"
    out = op(*args)
    got = host_values(tp, out)
    # reference
    if name in ("floor_divide", "remainder", "fmod", "bitwise_left_shift", "bitwise_right_shift"):
        info = np.iinfo(np.dtype(dtype))
        bits = np.dtype(dtype).itemsize * 8
        A, B = np.broadcast_arrays(a_np.astype(object), np.asarray(b_np).astype(object))
        if name == "floor_divide":
            want = np.vectorize(lambda x, y: _int_floor_div(int(x), int(y), bits, info.min < 0), otypes=[object])(A, B)
        elif name == "remainder":
            want = np.vectorize(lambda x, y: int(x) - int(y) * (int(x) // int(y)), otypes=[object])(A, B)
        elif name == "fmod":  # C's: the sign of the dividend
            want = np.vectorize(lambda x, y: int(math.copysign(abs(int(x)) % abs(int(y)), int(x))),
                                otypes=[object])(A, B)
        else:  # shifts by a negative count or >= the width give 0 (left) or the sign (right)
            left = name == "bitwise_left_shift"
            def shift(x, y):
                x, y = int(x), int(y)
                if not 0 <= y < bits:
                    return 0 if left or x >= 0 else -1
                return _wrap(x << y, bits, info.min < 0) if left else x >> y
            want = np.vectorize(shift, otypes=[object])(A, B)
        same(got.astype(object), want.reshape(got.shape) if want.size == got.size else want, what=name)
        return "ok"
    if is_int or dtype == "bool":
        with np.errstate(all="ignore"):  # (integer overflow wraps, in NumPy as in the kernels)
            want = fn(*([a_np, b_np] if binary else [a_np]))
        if name == "add" and dtype == "bool":
            want = np.logical_or(a_np, b_np)
        if name == "mul" and dtype == "bool":
            want = np.logical_and(a_np, b_np)
        if name in ("sqrt", "exp", "div"):
            with np.errstate(all="ignore"):
                exact = fn(*[x.astype(np.float64) for x in ([a_np, b_np] if binary else [a_np])])
            want = round_to(exact, "float32")
            same(got, want, rel=4e-7, what=name)
            return "ok"
        same(got, np.asarray(want).astype(got.dtype) if np.asarray(want).dtype.kind != "b" else want, what=name)
        return "ok"
    args_np = [a_np, b_np] if binary else [a_np]
    wide = np.complex128 if dtype in COMPLEX_DTYPES else np.float64
    with np.errstate(all="ignore"):  # inf and NaN results are the reference's too
        exact = fn(*[np.asarray(x).astype(wide) for x in ([a_np, b_np] if binary else [a_np])])
    if only == "bool" or name in ("eq", "lt"):
        same(got, exact, what=name)
        return "ok"
    if dtype in COMPLEX_DTYPES:
        parts = np.concatenate([np.real(exact).ravel(), np.imag(exact).ravel()])
        inputs = np.concatenate([np.asarray(x).astype(np.complex128).ravel() for x in args_np])
        finite_inputs = np.isfinite(inputs.real).all() and np.isfinite(inputs.imag).all()
        huge = np.abs(np.concatenate([inputs.real, inputs.imag])).max(initial=0) > (1e30 if dtype == "complex64" else 1e300)
        if name == "div" and huge:
            return "ok"  # a * conj(b) overflows before the division, in PyTorch too
        if name in ("exp", "sqrt", "sign", "abs", "div") and not (np.isfinite(parts).all() and finite_inputs):
            return "ok"  # C99's special values differ from NumPy's
        part = "float32" if dtype == "complex64" else "float64"
        if name == "mul":  # a product's parts are sums of two rounded products: a relative
            # error against the operands' scale, not the result's (which may cancel to subnormal)
            ops = [np.abs(np.asarray(x).astype(np.complex128)) for x in (a_np, b_np)]
            with np.errstate(all="ignore"):
                scale = np.broadcast_to(ops[0] * ops[1], np.shape(exact))
            g, w = np.asarray(got, np.complex128), _round_complex(exact, part)
            eps = 2e-7 if part == "float32" else 3e-16
            with np.errstate(all="ignore"):
                def part_ok(x, y):  # each part on its own: one may overflow while the other is finite
                    return (x == y) | (np.abs(x - y) <= eps * scale) | (np.isnan(x) & np.isnan(y))
                ok = (part_ok(g.real, w.real) & part_ok(g.imag, w.imag)) | ~np.isfinite(scale)
            if not ok.all():
                raise Wrong(f"mul {dtype}: got {g[~ok][:3]} reference {w[~ok][:3]}")
            return "ok"
        same(got, _round_complex(exact, part), rel=2e-6 if part == "float32" else 1e-14, what=f"{name} {dtype}")
        return "ok"
    want = round_to(exact, dtype)
    rel = {"exp": 2e-7, "sqrt": 1e-7}.get(name, 0.0)
    if dtype in ("float16", "bfloat16") + tuple(FLOAT8_DTYPES) and name in ("exp", "sqrt"):
        rel = 2 ** -7  # rounded twice
    same(got, want, rel=rel, what=f"{name} {dtype}")
    return "ok"


def _exact_value(v, src: str):
    """A stored value as an exact Python number (int, float or complex)."""
    if src == "bool":
        return int(bool(v))
    if src in INT_DTYPES:
        return int(v)
    return complex(v) if src in COMPLEX_DTYPES else float(v)


def fam_cast(tp, rng):
    """Tensor.to(dtype) between every pair of dtypes, on views: in-range values against the exact
    conversion; out-of-range ones (implementation-defined in PyTorch) only must not crash."""
    src, dst = rng.choice(ALL_DTYPES), rng.choice(ALL_DTYPES)
    shape, steps = views(rng, 3)
    n = int(np.prod(shape)) if shape else 1
    values = random_values(rng, src, n)
    x = apply_view(make_tensor(tp, values, src, shape), steps, False)
    flat = apply_view(np.arange(n).reshape(shape), steps, True).ravel() if n else np.zeros(0, dtype=int)
    exact = [_exact_value(values[i], src) for i in flat]
    if src in COMPLEX_DTYPES and dst not in COMPLEX_DTYPES:
        return _crash_check(lambda: x.to(getattr(tp, dst)))  # PyTorch warns and drops the imaginary part
    call = lambda: x.to(getattr(tp, dst))  # noqa: E731
    if dst in INT_DTYPES:
        info = np.iinfo(np.dtype(dst))
        def fits(v):
            return (isinstance(v, int) or math.isfinite(v)) and info.min <= math.trunc(v) <= info.max
        if not all(fits(v) for v in exact):
            if src in INT_DTYPES and all(isinstance(v, int) for v in exact):  # integers wrap, as in C
                bits = np.dtype(dst).itemsize * 8
                want = [_wrap(v, bits, dst.startswith("int")) for v in exact]
                same(host_values(tp, call()).ravel().astype(object), np.array(want, dtype=object), what=f"{src}->{dst}")
                return "ok"
            return _crash_check(call)
        want = np.array([math.trunc(v) for v in exact], dtype=object)
        same(host_values(tp, call()).ravel().astype(object), want, what=f"{src}->{dst}")
        return "ok"
    got = host_values(tp, call()).ravel()
    if dst == "bool":
        same(got, np.array([v != 0 for v in exact], dtype=bool).reshape(got.shape), what=f"{src}->{dst}")
        return "ok"
    if dst in COMPLEX_DTYPES:
        want = np.array([complex(v) for v in exact], dtype=np.complex128)
        part = "float32" if dst == "complex64" else "float64"
        same(got, _round_complex(want, part), what=f"{src}->{dst}")
        return "ok"
    # to a real float dtype: an integer rounds once (through float32 for the narrow types, as
    # PyTorch does for float8; ints of 64 bits go to float32 through float64 ... rounding once
    # from the exact value is the reference where the two agree)
    if src in INT_DTYPES and any(abs(v) > 2 ** 24 for v in exact) and dst not in ("float64",):
        return _crash_check(call)  # double rounding of huge integers: not pinned down here
    with np.errstate(over="ignore"):
        want = round_to(np.array([float(v) for v in exact], dtype=np.float64), dst)
    same(got, want.reshape(got.shape), what=f"{src}->{dst}")
    return "ok"


def fam_gelu(tp, rng):
    """gelu (erf and tanh) on extreme values and views, against float64 erf."""
    dtype = rng.choice(["float32", "float64", "float16", "bfloat16"])
    approx = rng.choice(["none", "tanh"])
    shape, steps = views(rng, 2)
    n = int(np.prod(shape)) if shape else 1
    pool = representable(dtype) + [-5.0, -8.0, -10.0, -20.0, -40.0, 3.7, -3.7, 1e-8, -1e-20]
    values = [float(round_to(np.array(rng.choice(pool) if rng.random() < 0.6 else rng.gauss(0, 4)), dtype))
              for _ in range(n)]
    x_np = apply_view(np.array(values, dtype=np.float64).reshape(shape), steps, True)
    x = apply_view(make_tensor(tp, values, dtype if dtype not in ("float16",) else dtype, shape), steps, False)
    got = host_values(tp, tp.nn.functional.gelu(x, approximate=approx))
    with np.errstate(all="ignore"):
        if approx == "none":  # -inf gives NaN (-inf * 0), as in PyTorch
            want = np.vectorize(lambda v: 0.5 * v * math.erfc(-v / math.sqrt(2)) if math.isfinite(v) else
                                (v if v > 0 else math.nan))(x_np) if x_np.size else x_np
        else:
            want = 0.5 * x_np * (1 + np.tanh(math.sqrt(2 / math.pi) * (x_np + 0.044715 * x_np ** 3)))
            want = np.where(np.isinf(x_np), np.where(x_np > 0, x_np, math.nan), want)
    want = round_to(want, dtype)
    tol = {"float64": 1e-13, "float32": 3e-6, "float16": 2e-3, "bfloat16": 1.6e-2}[dtype]
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if g.shape != w.shape:
        raise Wrong(f"gelu shape {g.shape} != {w.shape}")
    with np.errstate(all="ignore"):
        tiny = {"float64": 1e-300, "float32": 1e-37, "float16": 1e-7, "bfloat16": 1e-37}[dtype]
        ok = (g == w) | (np.isnan(g) & np.isnan(w)) | (np.abs(g - w) <= tol * np.abs(w) + tiny) | (
            np.abs(g - w) <= tol * np.abs(x_np))
    if not ok.all():
        bad = np.flatnonzero(~ok)[:4]
        raise Wrong(f"gelu {approx} {dtype}: x {x_np.ravel()[bad]} got {g.ravel()[bad]} want {w.ravel()[bad]}")
    return "ok"


def ctc_reference(lp: np.ndarray, targets, input_lengths, target_lengths, blank: int) -> np.ndarray:
    """Per-sample negative log-likelihood, float64, by the alpha recursion in probability space
    with log-sum-exp."""
    T, N, C = lp.shape
    out = np.zeros(N)
    for b in range(N):
        tl, il = target_lengths[b], input_lengths[b]
        labels = [blank]
        for s in range(tl):
            labels += [targets[b][s], blank]
        L = len(labels)
        read = lp[:il, b, :][:, sorted(set(labels))] if il else np.zeros(0)
        if np.isnan(read).any() or np.isposinf(read).any():
            out[b] = math.nan  # a NaN or +inf emission poisons the sample, as in PyTorch
            continue
        if il == 0:
            out[b] = 0.0 if L == 1 else math.inf
            continue
        alpha = np.full(L, -math.inf)
        alpha[0] = lp[0, b, labels[0]]
        if L > 1:
            alpha[1] = lp[0, b, labels[1]]
        for t in range(1, il):
            new = np.full(L, -math.inf)
            for s in range(L):
                terms = [alpha[s]]
                if s >= 1:
                    terms.append(alpha[s - 1])
                if s >= 2 and labels[s] != blank and labels[s] != labels[s - 2]:
                    terms.append(alpha[s - 2])
                m = max(terms)
                new[s] = (m + math.log(sum(math.exp(v - m) for v in terms)) if m > -math.inf else -math.inf) + lp[t, b, labels[s]]
            alpha = new
        ends = [alpha[L - 1]] + ([alpha[L - 2]] if L > 1 else [])
        m = max(ends)
        out[b] = -(m + math.log(sum(math.exp(v - m) for v in ends))) if m > -math.inf else math.inf
    return out


def fam_ctc(tp, rng):
    """F.ctc_loss on CPU (and OpenCL): zero-length and over-long targets, blank out of range,
    negative lengths, lengths of other dtypes and devices, concatenated targets."""
    T = rng.choice([0, 1, 1, 2, 3, 5, 8])
    N = rng.choice([0, 1, 1, 2, 3])
    C = rng.choice([0, 1, 2, 3, 5])
    S = rng.choice([0, 1, 2, 3, 4])
    dtype = rng.choice(["float32", "float64"])
    device = "opencl" if rng.random() < 0.2 and device_available(tp, "opencl") else "cpu"
    invalid = None
    blank = rng.choice([0, 0, 0, C - 1, C, -1]) if C else 0
    lp_np = np.log(np.random.default_rng(rng.randrange(2 ** 32)).dirichlet(np.ones(max(C, 1)), size=(T, N)))[..., :C]
    if rng.random() < 0.1 and lp_np.size:
        lp_np.flat[rng.randrange(lp_np.size)] = rng.choice([math.nan, math.inf, -math.inf])
    lp_np = lp_np.astype(dtype)
    input_lengths = [rng.choice([T, T, max(T - 1, 0), 0, T + 1, -1]) for _ in range(N)]
    target_lengths = [rng.choice([0, S, min(1, S), S + 1, -1]) for _ in range(N)]
    targets = [[rng.choice([c for c in range(C) if c != blank] or [0]) if rng.random() > 0.05
                else rng.choice([blank, C, -1, 2 ** 40]) for _ in range(S)] for _ in range(N)]
    lp = tp.tensor(lp_np, device=device if dtype == "float32" else "cpu")
    form = rng.choice(["tensor", "tuple", "tensor_int32", "tensor_cpu", "tensor_other_device"])
    if form == "tuple":
        il, tl = tuple(input_lengths), tuple(target_lengths)
    elif form == "tensor_int32":
        il, tl = tp.tensor(input_lengths, dtype=tp.int32), tp.tensor(target_lengths, dtype=tp.int32)
    elif form == "tensor_other_device" and device_available(tp, "opencl"):
        other = "opencl" if lp.device.type == "cpu" else "cpu"
        il, tl = tp.tensor(input_lengths, dtype=tp.int64, device=other), tp.tensor(target_lengths, device=other)
    else:
        il, tl = tp.tensor(input_lengths, dtype=tp.int64), tp.tensor(target_lengths, dtype=tp.int64)
    concatenated = rng.random() < 0.3
    if concatenated:
        flat = [v for b in range(N) for v in targets[b][:max(target_lengths[b], 0)]]
        tg = tp.tensor(flat, dtype=tp.int64)
    else:
        tg = tp.tensor(targets, dtype=tp.int64) if N and S else tp.zeros((N, S), dtype=tp.int64)
    reduction = rng.choice(["none", "sum", "mean"])
    zero_infinity = rng.random() < 0.3
    if T == 0 or N == 0 or C == 0:
        invalid = "empty log_probs"
    elif not 0 <= blank < C:
        invalid = "blank out of range"
    elif any(v < 0 for v in input_lengths + target_lengths):
        invalid = "negative length"
    elif any(v > T for v in input_lengths):
        invalid = "input length > T"
    elif any(v > S for v in target_lengths):  # (concatenated: fewer labels than the lengths' sum)
        invalid = "target length > S"
    elif any(t < 0 or t >= C for b in range(N) for t in targets[b][:target_lengths[b]]):
        invalid = "label out of range"
    elif any(t == blank for b in range(N) for t in targets[b][:target_lengths[b]]):
        return "skip"  # PyTorch leaves a blank label undefined
    if invalid:
        return expect_error(invalid, lambda: tp.nn.functional.ctc_loss(lp, tg, il, tl, blank=blank, reduction=reduction,
                                                                     zero_infinity=zero_infinity))
    requires_grad = rng.random() < 0.4
    lp_t = lp.clone().requires_grad_(requires_grad) if requires_grad else lp
    loss = tp.nn.functional.ctc_loss(lp_t, tg, il, tl, blank=blank, reduction=reduction, zero_infinity=zero_infinity)
    with np.errstate(invalid="ignore"):  # inf - inf in a poisoned sample: NaN, as the op's
        nll = ctc_reference(lp_np.astype(np.float64), targets, input_lengths, target_lengths, blank)
    if zero_infinity:
        nll = np.where(np.isinf(nll), 0.0, nll)
    if reduction == "none":
        want = nll
    elif reduction == "sum":
        want = nll.sum()
    else:
        want = (nll / np.maximum(np.array(target_lengths, dtype=np.float64), 1)).mean()
    same(host_values(tp, loss), np.asarray(want), rel=1e-4 if dtype == "float32" else 1e-10, what="ctc_loss")
    if requires_grad:
        loss.sum().backward()
        g = host_values(tp, lp_t.grad)
        if g.shape != lp_np.shape:
            raise Wrong(f"ctc grad shape {g.shape}")
    return "ok"


def fam_cross_device(tp, rng):
    """0-d CPU tensors (and Python scalars) joining ops on other devices; mismatched devices."""
    device = rng.choice(["opencl", "npdev", "meta"])
    if not device_available(tp, device):
        return "skip"
    dtype = rng.choice(["float32", "int64", "bool", "int32", "float64" if device != "opencl" else "float32"])
    other_dtype = rng.choice(["float32", "int64", "bool", "float64", "uint8"])
    shape, steps = views(rng, 2)
    n = int(np.prod(shape)) if shape else 1
    va = random_values(rng, dtype, n)
    a_np = apply_view(numpy_of(va, dtype, shape), steps, True)
    a = apply_view(make_tensor(tp, va, dtype, shape, device), steps, False)
    s_shape = rng.choice([(), (), (1,), (2,)])
    vs = random_values(rng, other_dtype, int(np.prod(s_shape)) if s_shape else 1)
    s_np = numpy_of(vs, other_dtype, s_shape)
    s = make_tensor(tp, vs, other_dtype, s_shape, "cpu")
    name = rng.choice(["add", "mul", "maximum", "eq", "where"])
    order = rng.random() < 0.5
    if s_shape != () and device != "meta":
        return expect_error("non-0-d cpu tensor with a device tensor",
                            lambda: getattr(tp, name if name != "where" else "add")(a, s))
    if s_shape != ():
        return "skip"
    if name == "where":
        out = tp.where(a > 0 if dtype != "bool" else a, s, a)
        want = np.where(a_np > 0 if dtype != "bool" else a_np, s_np, a_np)
    else:
        fn = {"add": np.add, "mul": np.multiply, "maximum": np.maximum, "eq": np.equal}[name]
        if dtype == "bool" and other_dtype == "bool" and name in ("add", "mul"):
            return "skip"
        out = getattr(tp, name)(*((s, a) if order else (a, s)))
        out_name = str(out.dtype).split(".")[-1]
        if name in ("eq", "maximum") and dtype in INT_DTYPES + ["bool"] and other_dtype in INT_DTYPES + ["bool"]:
            # exact on Python ints (float64 would merge neighbours of 2**63), each operand first
            # wrapped to the computation's dtype: the tensor's, unless the 0-d one is of a
            # higher category (bool tensor, int scalar)
            compute = other_dtype if dtype == "bool" and other_dtype != "bool" else dtype
            if a_np.ndim == 0:  # two 0-d tensors promote as any two tensors
                compute = np.result_type(np.dtype(dtype), np.dtype(other_dtype)).name
            if name == "maximum":
                compute = out_name
            if compute == "bool":
                wrap = bool
            else:
                bits, signed = 8 * np.dtype(compute).itemsize, compute.startswith("int")
                wrap = lambda v: _wrap(int(v), bits, signed)  # noqa: E731
            A, S = np.broadcast_arrays(np.vectorize(wrap, otypes=[object])(a_np) if a_np.size else a_np.astype(object),
                                       np.array(wrap(s_np.item()), dtype=object))
            exact = np.vectorize(lambda x, y: int(x) == int(y) if name == "eq" else max(int(x), int(y)),
                                 otypes=[object])(A, S) if A.size else A
            if device != "meta":
                same(host_values(tp, out).astype(object), np.asarray(exact).astype(object), what=f"{name} {device}")
            return "ok"
        # the operands convert to the result's dtype first (a float64 1e300 is inf in float32)
        # (a comparison computes in the dtype the operands promote to: the tensor's float dtype
        # unless the 0-d one's category is higher)
        compute = out_name if out_name != "bool" else (dtype if dtype in FLOAT_DTYPES else other_dtype)
        cast = (lambda v: round_to(v.astype(np.float64), compute)) if compute in FLOAT_DTYPES else (
            lambda v: v.astype(np.float64))
        with np.errstate(all="ignore"):
            want = fn(cast(a_np), cast(s_np))
    if out.device.type != device:
        raise Wrong(f"result on {out.device}, expected {device}")
    if device == "meta":
        if list(out.shape) != list(np.shape(want)):
            raise Wrong(f"meta shape {list(out.shape)} != {list(np.shape(want))}")
        return "ok"
    got = host_values(tp, out).astype(np.float64)
    want = np.asarray(want, dtype=np.float64)
    out_name = str(out.dtype).split(".")[-1]
    if out_name in INT_DTYPES:  # exact integers, wrapped to the result's width
        if not (np.isfinite(want).all() and np.abs(want).max(initial=0) < 2 ** 52):
            return "ok"
        bits = 8 * np.dtype(out_name).itemsize
        signed = out_name.startswith("int")
        want = np.vectorize(lambda v: _wrap(int(v), bits, signed), otypes=[object])(want) if want.size else want
        same(host_values(tp, out).astype(object), np.asarray(want).astype(object), what=f"{name} {device}")
        return "ok"
    elif out_name in FLOAT_DTYPES:
        want = round_to(want, out_name)
    same(got, want, rel=1e-6, what=f"{name} {device} {dtype} with cpu {other_dtype}")
    return "ok"


def fam_unsigned_reduce(tp, rng):
    """sum/max/cumsum/sort/argmax on the unsigned and float8 dtypes, with views."""
    dtype = rng.choice(["uint16", "uint32", "uint64", "uint8"] + FLOAT8_DTYPES)
    shape, steps = views(rng, 3)
    n = int(np.prod(shape)) if shape else 1
    values = random_values(rng, dtype, n)
    x_np = apply_view(numpy_of(values, dtype, shape), steps, True)
    x = apply_view(make_tensor(tp, values, dtype, shape), steps, False)
    name = rng.choice(["sum", "max", "amax", "cumsum", "sort", "argmax", "clone", "flip", "contiguous", "eq0"])
    if dtype in FLOAT8_DTYPES and name in ("sum", "cumsum", "sort", "argmax", "max", "amax"):
        return "skip"
    if name == "sum":  # integer sums are int64 (wrapping), as in PyTorch
        got = host_values(tp, x.sum())
        total = int(np.asarray(x_np).astype(object).sum()) if x_np.size else 0
        same(got.astype(object), np.array(_wrap64(total)).astype(object), what="sum")
    elif name in ("max", "amax", "argmax"):
        if x_np.size == 0:
            return expect_error("max of empty", lambda: getattr(x, name)())
        r = getattr(x, name)()
        got = host_values(tp, r)
        want = np.argmax(x_np.ravel()) if name == "argmax" else np.max(x_np)
        same(got.astype(object), np.asarray(want).astype(object), what=name)
    elif name == "cumsum":
        d = rng.randrange(x_np.ndim) if x_np.ndim else 0
        got = host_values(tp, x.cumsum(d))
        want = np.cumsum(x_np.astype(object), axis=d if x_np.ndim else None).reshape(x_np.shape) if x_np.size else x_np
        want = np.vectorize(_wrap64, otypes=[object])(want) if x_np.size else want.astype(np.int64)
        same(got.astype(object), np.asarray(want).astype(object), what="cumsum")
    elif name == "sort":
        d = rng.randrange(x_np.ndim) if x_np.ndim else 0
        got = host_values(tp, x.sort(d).values)
        want = np.sort(x_np, axis=d) if x_np.ndim else x_np
        same(got, want, what="sort")
    elif name == "eq0":
        same(host_values(tp, x == 0), x_np == 0, what="eq0")
    else:
        r = {"clone": lambda: x.clone(), "flip": lambda: x.flip(0) if x.ndim else x.flip(()),
             "contiguous": lambda: x.contiguous()}[name]()
        want = {"clone": x_np, "flip": (np.flip(x_np, 0) if x_np.ndim else x_np), "contiguous": x_np}[name]
        same(host_values(tp, r), want, what=name)
    return "ok"


def fam_index(tp, rng):
    """t[index] and t[index] = v with index tensors of every integer dtype (out of range,
    negative, on views), bool and uint8 masks, and refused dtypes; against NumPy."""
    dtype = rng.choice(ALL_DTYPES)
    shape, steps = views(rng, 3)
    n = int(np.prod(shape)) if shape else 1
    values = random_values(rng, dtype, n)
    x_np = apply_view(numpy_of(values, dtype, shape), steps, True)
    x = apply_view(make_tensor(tp, values, dtype, shape), steps, False)
    if x_np.ndim == 0:
        return "skip"
    size = x_np.shape[0]
    index_dtype = rng.choice(["int64", "int64", "int32", "int16", "int8", "uint8", "bool", "uint16", "uint32",
                              "uint64", "float32"])
    write = rng.random() < 0.4
    if index_dtype in ("bool", "uint8"):
        mask = np.array([rng.random() < 0.5 for _ in range(size)], dtype=bool)
        index = tp.tensor(mask.astype(index_dtype))
        want_index = mask
    else:
        count = rng.choice([0, 1, 2, 5])
        lo, hi = -size - 2, size + 2
        raw = [rng.randint(lo, hi) if rng.random() < 0.9 else rng.choice([2 ** 31 - 1, -2 ** 31, 2 ** 62]) for _ in range(count)]
        if index_dtype.startswith("uint"):
            raw = [v % 2 ** (8 * np.dtype(index_dtype).itemsize) for v in raw]
        elif index_dtype.startswith("int"):
            raw = [_wrap(v, 8 * np.dtype(index_dtype).itemsize, True) for v in raw]
        index = tp.tensor(np.array(raw, dtype=np.dtype(index_dtype)).reshape(count))
        if index_dtype in ("int8", "int16", "uint16", "uint32", "uint64", "float32"):  # PyTorch takes int64/int32
            return expect_error(f"{index_dtype} index tensor", lambda: x[index])
        want_index = np.array(raw, dtype=np.int64).reshape(count)
        if any(not -size <= v < size for v in raw):
            call = (lambda: x.__setitem__(index, 0)) if write else (lambda: x[index])
            return expect_error("index out of range", call)
    if write:
        if any(st[0] == "expand" for st in steps):
            return _crash_check(lambda: x.__setitem__(index, 0))  # overlapping writes: PyTorch refuses some
        x = x.clone()
        y_np = np.array(x_np, copy=True)
        y_np[want_index] = 0
        x[index] = 0
        same(host_values(tp, x), y_np if dtype not in ("bfloat16",) + tuple(FLOAT8_DTYPES) else y_np,
             what=f"setitem {dtype} with {index_dtype}")
        return "ok"
    same(host_values(tp, x[index]), x_np[want_index], what=f"getitem {dtype} with {index_dtype}")
    return "ok"


def _wrap(v: int, bits: int, signed: bool) -> int:
    v %= 2 ** bits
    return v - 2 ** bits if signed and v >= 2 ** (bits - 1) else v


def _wrap64(v) -> int:
    return _wrap(int(v), 64, True)


FAMILIES = {
    "item": fam_item,
    "from_list": fam_from_list,
    "elementwise": fam_elementwise,
    "gelu": fam_gelu,
    "cast": fam_cast,
    "index": fam_index,
    "ctc": fam_ctc,
    "cross_device": fam_cross_device,
    "unsigned_reduce": fam_unsigned_reduce,
}


SELF_TEST_ABORT = "self_test_abort"


def run_case(tp, family: str, seed: int) -> dict:
    """One case in this process: {'verdict': ok|skip|raised|wrong|unexpected, 'detail': ...}."""
    rng = random.Random(f"{family}:{seed}")
    np.random.seed(seed % (2 ** 32))
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            verdict = FAMILIES[family](tp, rng)
        return {"verdict": verdict}
    except Wrong as e:
        return {"verdict": "wrong", "detail": str(e)}
    except Exception as e:  # an op's own exception: fine for invalid input, else a finding
        where = traceback.extract_tb(e.__traceback__)[-1]
        return {"verdict": "unexpected", "detail": f"{type(e).__name__}: {str(e)[:300]}",
                "at": f"{Path(where.filename).name}:{where.lineno}"}


def worker() -> None:
    """Read `family seed` lines, answer one JSON line each."""
    import tensorplug as tp
    for line in sys.stdin:
        family, seed = line.split()
        if family == SELF_TEST_ABORT:  # the harness's self-test: a worker that dies of SIGABRT
            os.abort()
        result = run_case(tp, family, int(seed))
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


def run_many(families, seeds, timeout: float, verbose: bool) -> dict:
    """Run every (family, seed) in worker subprocesses; returns counts and findings."""
    cases = [(f, s) for f in families for s in seeds]
    findings, counts = [], {}
    env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
    proc = None
    i = 0
    while i < len(cases):
        if proc is None:
            proc = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                                    cwd=str(REPO))
        family, seed = cases[i]
        proc.stdin.write(f"{family} {seed}\n")
        proc.stdin.flush()
        line = _read_line(proc, timeout)
        if line is None or line == "":
            # EOF (the worker died) can come before its exit status: wait for it, a while
            try:
                code = proc.wait(timeout=timeout if line == "" else 0.1)
            except subprocess.TimeoutExpired:
                code = None
            if code is None:
                proc.kill()
                code = proc.wait()
                result = {"verdict": "hang", "detail": f"no answer in {timeout} s"}
            else:
                result = {"verdict": "crash", "detail": f"worker died: exit {code}"
                          + (f" (signal {-code})" if code < 0 else "")}
            _close(proc)
            proc = None
        else:
            result = json.loads(line)
        verdict = result["verdict"]
        counts[verdict] = counts.get(verdict, 0) + 1
        if verdict in ("wrong", "crash", "hang", "unexpected"):
            findings.append({"family": family, "seed": seed, **result})
            if verbose:
                print(f"FINDING {family} {seed}: {result}", flush=True)
        i += 1
    if proc is not None:
        proc.stdin.close()
        proc.wait()
        _close(proc)
    return {"counts": counts, "findings": findings}


def _close(proc) -> None:
    for pipe in (proc.stdin, proc.stdout):
        try:
            pipe.close()
        except OSError:  # a dead worker's stdin: the buffered line cannot be flushed
            pass


def _read_line(proc, timeout):
    """The worker's next line, "" at EOF, None when nothing came within `timeout` seconds."""
    import selectors
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        if not sel.select(timeout):
            return None  # no answer in time
        return proc.stdout.readline()  # "" at EOF
    finally:
        sel.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES))
    parser.add_argument("--seed", type=int, help="replay one seed in this process")
    parser.add_argument("--cases", type=int, default=200, help="seeds per family")
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a case counts as a hang")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.worker:
        worker()
        return 0
    families = args.family or sorted(FAMILIES)
    if args.seed is not None:
        import tensorplug as tp
        for family in families:
            print(family, args.seed, run_case(tp, family, args.seed))
        return 0
    start = time.time()
    report = run_many(families, range(args.start, args.start + args.cases), args.timeout, args.verbose)
    print(json.dumps(report["counts"]), f"{time.time() - start:.0f} s")
    for f in report["findings"]:
        print(json.dumps(f))
    return 1 if report["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
