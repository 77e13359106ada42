"""tp.fft side by side: NumPy's pocketfft through tensorplug's FFT ops, PyTorch 2.13's pocketfft,
NumPy itself, and tensorplug on OpenCL (a host round trip each way; docs/complex.md).

    python benchmarks/bench_fft.py [--rounds 7] [--smoke] [--only "fft 2^20"]

Columns: tensorplug, PyTorch 2.13 (when installed), NumPy and tensorplug on OpenCL (when it can
run), each in its own process (see _harness.py).
"""
from __future__ import annotations

import numpy as np

from _harness import Case, run_cases

_N = 1 << 20


def cases(lib, device):
    rng = np.random.default_rng(0)
    signal = (rng.standard_normal(_N) + 1j * rng.standard_normal(_N)).astype(np.complex64)
    real = rng.standard_normal(_N).astype(np.float32)
    if lib.__name__ == "numpy":
        z, x, fft = signal, real, np.fft
        image = signal.reshape(1024, 1024)
    else:
        z, x, fft = lib.tensor(signal, device=device), lib.tensor(real, device=device), lib.fft
        image = z.reshape(1024, 1024)
    return [
        Case("fft 2^20 complex64", lambda: fft.fft(z), 3, "ms"),
        Case("ifft 2^20 complex64", lambda: fft.ifft(z), 3, "ms"),
        Case("rfft 2^20 float32", lambda: fft.rfft(x), 3, "ms"),
        Case("fft2 1024x1024 complex64", lambda: fft.fft2(image), 3, "ms"),
        Case("fft of 1024 rows of 1024", lambda: fft.fft(image), 3, "ms"),
    ]


if __name__ == "__main__":
    run_cases(__file__, cases, columns=("tensorplug", "torch", "numpy", "tensorplug:opencl"))
