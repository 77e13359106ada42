"""Float64 NumPy references that NumPy lacks (erf, erfinv, softmax, ...), written out so the
suite needs nothing beyond NumPy."""
from __future__ import annotations

import math

import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf(x):
    return _erf(np.asarray(x, dtype=np.float64))


def erfinv(y):
    """Inverse of erf by Newton's method from a good initial guess (float64 accurate)."""
    y = np.asarray(y, dtype=np.float64)
    a = 0.147
    ln = np.log1p(-y * y)
    t = 2 / (np.pi * a) + ln / 2
    x = np.sign(y) * np.sqrt(np.sqrt(t * t - ln / a) - t)
    for _ in range(4):
        x = x - (erf(x) - y) / (2 / np.sqrt(np.pi) * np.exp(-x * x))
    return np.where(np.abs(y) == 1, np.sign(y) * np.inf, x)


def sigmoid(x):
    return 1 / (1 + np.exp(-np.asarray(x, dtype=np.float64)))


def softmax(x, dim):
    if x.size == 0:
        return x.copy()
    e = np.exp(x - np.max(x, axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def log_softmax(x, dim):
    if x.size == 0:
        return x.copy()
    shifted = x - np.max(x, axis=dim, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))


def trunc_div(a, b):
    return np.trunc(np.asarray(a, dtype=np.float64) / b)


_WORD = 0xFFFFFFFF


def philox_block(seed: int, counter: int) -> list[int]:
    """The four 32-bit words of Philox4x32-10 for one counter, in plain Python integers, as the
    contract defines them (docs/backend-contract.md, "Random numbers")."""
    x = [counter & _WORD, (counter >> 32) & _WORD, 0, 0]
    k0, k1 = seed & _WORD, (seed >> 32) & _WORD
    for _ in range(10):
        p0, p1 = 0xD2511F53 * x[0], 0xCD9E8D57 * x[2]
        x = [(p1 >> 32) ^ x[1] ^ k0, p1 & _WORD, (p0 >> 32) ^ x[3] ^ k1, p0 & _WORD]
        k0, k1 = (k0 + 0x9E3779B9) & _WORD, (k1 + 0xBB67AE85) & _WORD
    return x


def randint(n: int, seed: int, offset: int, low: int, high: int) -> list[int]:
    """The contract's randint_: ``low + w % (high - low)`` with 32-bit words up to a range of
    2**32, else with the 64-bit word of block ``i // 2``."""
    span = high - low
    if span <= 1 << 32:
        words = [w for j in range((n + 3) // 4) for w in philox_block(seed, offset + j)]
        return [low + words[i] % span for i in range(n)]
    values = []
    for i in range(n):
        w = philox_block(seed, offset + i // 2)
        lo, hi = w[2 * (i % 2)], w[2 * (i % 2) + 1]
        values.append(low + ((hi << 32) | lo) % span)
    return values
