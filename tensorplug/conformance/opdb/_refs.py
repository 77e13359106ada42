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
