"""Bit-exact float8 conversions written from the formats' definitions, in float64 arithmetic.

Independent of tensorplug's kernels (which round the float32 bit pattern): decoding builds each
code's value from its fields; encoding rounds |x| to the format's grid in units of the last place
(a power-of-two scaling, exact in float64) with Python's round-half-to-even, then applies the
format's overflow rule measured on PyTorch 2.13: e5m2 overflows to infinity, e4m3fn saturates to
its largest finite value (infinities too), the fnuz types give their single NaN 0x80.
"""
import functools
import math

import numpy as np

# name: (mantissa bits, exponent bias, flavour)
FORMATS = {
    "float8_e4m3fn": (3, 7, "finite_nan"),
    "float8_e5m2": (2, 15, "ieee"),
    "float8_e4m3fnuz": (3, 8, "unsigned_zero_nan"),
    "float8_e5m2fnuz": (2, 16, "unsigned_zero_nan"),
}


def decode(code: int, name: str) -> float:
    """The value of float8 code ``code`` (0..255) as a Python float (NaN, with the code's sign bit,
    for the NaN codes)."""
    mant_bits, bias, flavour = FORMATS[name]
    exp_bits = 7 - mant_bits
    negative = bool(code & 0x80)
    exponent = (code >> mant_bits) & ((1 << exp_bits) - 1)
    mantissa = code & ((1 << mant_bits) - 1)
    top = (1 << exp_bits) - 1
    signed_nan = math.copysign(math.nan, -1.0 if negative else 1.0)  # a NaN code keeps its sign bit
    if flavour == "unsigned_zero_nan" and code == 0x80:
        return math.nan
    if flavour == "finite_nan" and exponent == top and mantissa == (1 << mant_bits) - 1:
        return signed_nan
    if flavour == "ieee" and exponent == top:
        return signed_nan if mantissa else (-math.inf if negative else math.inf)
    if exponent == 0:
        magnitude = mantissa * 2.0 ** (1 - bias - mant_bits)
    else:
        magnitude = (1 + mantissa / 2 ** mant_bits) * 2.0 ** (exponent - bias)
    return -magnitude if negative else magnitude


@functools.lru_cache(maxsize=None)
def largest(name: str) -> float:
    return max(v for v in (decode(c, name) for c in range(128)) if math.isfinite(v))


@functools.lru_cache(maxsize=None)
def _code_of_magnitude(name: str) -> dict:
    table = {}
    for code in range(128):
        value = decode(code, name)
        if math.isfinite(value):
            table[value] = code
    return table


def encode(x: float, name: str) -> int:
    """The float8 code PyTorch 2.13 gives a float32 value ``x`` (passed as a Python float)."""
    mant_bits, bias, flavour = FORMATS[name]
    negative = math.copysign(1.0, x) < 0
    sign = 0x80 if negative else 0
    if math.isnan(x):
        return 0x80 if flavour == "unsigned_zero_nan" else sign | 0x7F
    overflow = {"ieee": sign | 0x7C, "finite_nan": sign | 0x7E, "unsigned_zero_nan": 0x80}[flavour]
    magnitude = abs(x)
    if math.isinf(magnitude):
        return overflow
    if magnitude == 0:
        return 0 if flavour == "unsigned_zero_nan" else sign
    exponent = max(math.frexp(magnitude)[1] - 1, 1 - bias)
    ulp = 2.0 ** (exponent - mant_bits)
    rounded = round(magnitude / ulp) * ulp  # round() on a float: ties to even
    if rounded > largest(name):
        return overflow
    code = _code_of_magnitude(name)[rounded]
    if code == 0 and flavour == "unsigned_zero_nan":
        return 0
    return sign | code


def encode_array(values, name: str) -> np.ndarray:
    return np.array([encode(float(v), name) for v in np.asarray(values, dtype=np.float32).ravel()], dtype=np.uint8)


def boundary_float32_values(name: str) -> np.ndarray:
    """float32 values at and beside every rounding boundary of the format, plus the specials."""
    finite = sorted({abs(decode(c, name)) for c in range(256) if math.isfinite(decode(c, name))})
    top = finite[-1]
    ulp_top = top - finite[-2]
    points = finite + [top + ulp_top / 2, top + ulp_top, 2 * top, 1e30]
    mids = [(a + b) / 2 for a, b in zip(points, points[1:])]
    candidates = []
    for p in points + mids:
        f = np.float32(p)
        candidates += [f, np.nextafter(f, np.float32(np.inf)), np.nextafter(f, np.float32(0))]
    candidates += [np.float32(v) for v in (1e-45, 1e-40, 1.17549435e-38, 2.0 ** -30, np.inf, np.float32(3.4028235e38))]
    positive = np.array(candidates, dtype=np.float32)
    return np.concatenate([positive, -positive, np.array([0.0, -0.0, np.nan, -np.nan], dtype=np.float32)])
