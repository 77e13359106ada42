"""Fit the piecewise polynomials of the CPU's eight-lane normal CDF (`normal_cdf8` in
tensorplug/backends/cpu/csrc/simd.h, used by gelu) and print them as its C++ table.

    python tools/fit_normal_cdf.py [--degree 7] [--check]

The lower tail Phi(-a) = erfc(a / sqrt 2) / 2 is fitted for a in [0, 6.4) in eight intervals of
width 0.8 (the kernel picks each lane's coefficients with one permute per degree), each in
t = 1.25 a - interval in [0, 1), with *relative* error minimised (Lawson's iteratively reweighted
least squares from a Chebyshev-node start, float64). Relative error in the tail is what keeps gelu
accurate for negative inputs, where 1 + erf(x) cancels. --check evaluates the float32 kernel's
arithmetic in NumPy (FMAs rounded once) and prints the largest errors of gelu against float64.
Needs SciPy (for erfc).
"""
from __future__ import annotations

import argparse

import numpy as np
from scipy.special import erf, erfc

INTERVALS = 8
SCALE = np.float32(1.25)  # intervals per unit of |x|: 1 / 0.8, exact in float32
LIMIT = INTERVALS / float(SCALE)  # 6.4: beyond it Phi(-a) < 1e-10 and the kernel answers 0 (or 1)


def fit(degree: int) -> np.ndarray:
    """coefficients[i, k]: the t**i coefficient of interval k, for Phi(-a) (float64)."""
    nodes = (1 - np.cos(np.pi * (np.arange(500) + 0.5) / 500)) / 2  # Chebyshev nodes on [0, 1]
    powers = np.stack([nodes ** i for i in range(degree + 1)], axis=1)
    coefficients = np.zeros((degree + 1, INTERVALS))
    for k in range(INTERVALS):
        target = 0.5 * erfc((k + nodes) / float(SCALE) / np.sqrt(2))
        weights = np.ones_like(nodes)
        for _ in range(300):  # Lawson: weights grow where the relative error is largest
            scale = np.sqrt(weights) / target
            solution = np.linalg.lstsq(powers * scale[:, None], target * scale, rcond=None)[0]
            relative = np.abs(powers @ solution - target) / target
            weights = weights * relative / relative.max() + 1e-300
        coefficients[:, k] = solution
    return coefficients


def _fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return (a.astype(np.float64) * b + c).astype(np.float32)


def gelu_like_the_kernel(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    """The kernel's float32 arithmetic, step by step (x float32)."""
    a = np.abs(x)
    position = np.minimum((a * SCALE).astype(np.float32), np.float32(7.9999995))
    interval = position.astype(np.int32)
    t = (a.astype(np.float64) * np.float64(SCALE) - interval).astype(np.float32)
    lower = np.full_like(x, 0.0)
    lower[:] = table[-1][interval]
    for row in table[-2::-1]:
        lower = _fma(lower, t, row[interval])
    lower = np.where(a < np.float32(LIMIT), lower, np.float32(0))
    cdf = np.where(np.signbit(x), lower, (1 - lower.astype(np.float64)).astype(np.float32))
    return (x * cdf).astype(np.float32)


def check(table: np.ndarray) -> None:
    """Largest gelu errors over [-12, 12], in float32 ulps and absolute, by range."""
    x = np.linspace(-12, 12, 2_000_001).astype(np.float32)
    got = gelu_like_the_kernel(x, table)
    exact = x.astype(np.float64) * 0.5 * (1 + erf(x.astype(np.float64) / np.sqrt(2)))
    ulps = np.abs(got - exact) / np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    for low, high in [(0, 12), (-1, 0), (-2, -1), (-3, -2), (-4, -3), (-6.4, -4)]:
        inside = (x >= low) & (x < high)
        print(f"[{low}, {high}): {ulps[inside].max():.2f} ulp, {np.abs(got - exact)[inside].max():.3g} absolute")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--degree", type=int, default=7)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    table = fit(args.degree).astype(np.float32)
    print(f"static constexpr float kLowerTail[{args.degree + 1}][{INTERVALS}] = {{")
    for row in table:
        print("    {" + ", ".join(f"{v:.9g}f" for v in row) + "},")
    print("};")
    if args.check:
        check(table)


if __name__ == "__main__":
    main()
