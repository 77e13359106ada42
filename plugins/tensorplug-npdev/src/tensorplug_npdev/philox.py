"""Philox4x32-10 in NumPy: the random primitives every backend shares bit for bit.

tensorplug owns each device's generator state and hands a kernel ``(seed, offset)``; block j of
a call uses counter ``offset + j``. The mapping from words to numbers is fixed by the contract
(docs/backend-contract.md, "Random numbers"), so the same seed gives the same uniform numbers and
integers on every backend.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["blocks", "uniform", "normal", "randint"]

_M32 = 0xFFFFFFFF
_MUL0, _MUL1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_SIG_BITS = {"float32": 24, "float16": 11, "bfloat16": 8}


def blocks(seed: int, offset: int, count: int) -> np.ndarray:
    """``count`` Philox blocks starting at counter ``offset``: a (count, 4) uint64 array of words."""
    counter = np.arange(count, dtype=np.uint64) + np.uint64(offset & 0xFFFFFFFFFFFFFFFF)
    c0, c1 = counter & np.uint64(_M32), counter >> np.uint64(32)
    c2, c3 = np.zeros_like(c0), np.zeros_like(c0)
    k0, k1 = seed & _M32, (seed >> 32) & _M32
    for round_ in range(10):
        if round_:
            k0, k1 = (k0 + 0x9E3779B9) & _M32, (k1 + 0xBB67AE85) & _M32
        p0, p1 = _MUL0 * c0, _MUL1 * c2
        c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0), p1 & np.uint64(_M32), \
            (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1), p0 & np.uint64(_M32)
    return np.stack([c0, c1, c2, c3], axis=1)


def _words32(seed: int, offset: int, n: int) -> np.ndarray:
    return blocks(seed, offset, math.ceil(n / 4)).reshape(-1)[:n]


def _words64(seed: int, offset: int, n: int) -> np.ndarray:
    w = blocks(seed, offset, math.ceil(n / 2)).reshape(-1, 2)[:n]  # (lo, hi) pairs
    return (w[:, 1] << np.uint64(32)) | w[:, 0]


def uniform(dtype: str, n: int, seed: int, offset: int, low: float, high: float) -> np.ndarray:
    if dtype == "float64":
        u = (_words64(seed, offset, n) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
        return low + (high - low) * u
    bits = _SIG_BITS[dtype]
    u = (_words32(seed, offset, n) >> np.uint64(32 - bits)).astype(np.float32) * np.float32(2.0 ** -bits)
    lo, hi = np.float32(low), np.float32(high)
    return lo + (hi - lo) * u  # in float32, as the contract says


def normal(n: int, seed: int, offset: int, mean: float, std: float) -> np.ndarray:
    w = blocks(seed, offset, math.ceil(n / 4)).reshape(-1, 2)  # rows: (w_even, w_odd) pairs
    u1 = ((w[:, 0] >> np.uint64(8)) + np.uint64(1)).astype(np.float64) * 2.0 ** -24
    u2 = (w[:, 1] >> np.uint64(8)).astype(np.float64) * 2.0 ** -24
    radius, theta = np.sqrt(-2.0 * np.log(u1)), 6.283185307179586 * u2
    z = np.stack([radius * np.cos(theta), radius * np.sin(theta)], axis=1).reshape(-1)[:n]
    return mean + std * z


def randint(n: int, seed: int, offset: int, low: int, high: int) -> np.ndarray:
    span = high - low
    if not 0 < span < 2 ** 64:  # the frontend keeps both bounds in int64: up to 2**64 - 1
        raise ValueError(f"randint: high - low must be in [1, 2**64), got {span}")
    words = _words32(seed, offset, n) if span <= 2 ** 32 else _words64(seed, offset, n)
    drawn = words % np.uint64(span)
    # low + drawn wraps in 64 bits and then fits in int64, as in the CPU kernel.
    return (drawn + np.uint64(low & 0xFFFFFFFFFFFFFFFF)).view(np.int64)
