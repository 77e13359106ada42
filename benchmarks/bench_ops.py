"""nn ops and a large reduction side by side: the CPU backend's fused kernels against PyTorch (and
NumPy where it has the op), and the same ops on OpenCL; two bfloat16 products under CPU autocast.

    python benchmarks/bench_ops.py [--rounds 7] [--smoke] [--only sum]

Columns: tensorplug, PyTorch 2.13 (when installed), NumPy (the cases it has) and tensorplug on
OpenCL (when it can run), each in its own process (see _harness.py).
"""
from __future__ import annotations

import numpy as np

from _harness import Case, run_cases


def _np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _np_log_softmax(x):
    shifted = x - x.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def _np_max_pool2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max((3, 5))


def _np_layer_norm(x):
    mean = x.mean(-1, keepdims=True)
    centered = x - mean
    return centered / np.sqrt((centered * centered).mean(-1, keepdims=True) + 1e-5)


def cases(lib, device):
    rng = np.random.default_rng(0)
    is_numpy = lib.__name__ == "numpy"
    F = None if is_numpy else lib.nn.functional
    rows = []

    def add(label, arrays, fn, np_fn, number, unit="ms"):
        """One row: fn(F, *tensors) in tensorplug and PyTorch, np_fn(*arrays) in NumPy (None: no row)."""
        if is_numpy:
            if np_fn is not None:
                rows.append(Case(label, lambda: np_fn(*arrays), number, unit))
            return
        tensors = [lib.tensor(a, device=device) for a in arrays]
        rows.append(Case(label, lambda: fn(F, *tensors), number, unit))

    image = rng.standard_normal((64, 32, 28, 28), dtype=np.float32)
    filters = rng.standard_normal((64, 32, 3, 3), dtype=np.float32)
    bias = rng.standard_normal(64, dtype=np.float32)
    add("conv2d 64x32x28x28, 64 3x3, padding 1", (image, filters, bias),
        lambda F, x, w, b: F.conv2d(x, w, b, padding=1), None, 3)
    add("conv2d same, stride 2", (image, filters, bias),
        lambda F, x, w, b: F.conv2d(x, w, b, stride=2, padding=1), None, 5)
    planes = rng.standard_normal((64, 64, 28, 28), dtype=np.float32)
    add("max_pool2d 64x64x28x28, kernel 2", (planes,), lambda F, x: F.max_pool2d(x, 2), _np_max_pool2, 5)
    add("max_pool2d 64x64x28x28, kernel 3 stride 2 pad 1", (planes,), lambda F, x: F.max_pool2d(x, 3, 2, 1),
        None, 5)
    add("avg_pool2d 64x64x28x28, kernel 2", (planes,), lambda F, x: F.avg_pool2d(x, 2), None, 5)
    logits = rng.standard_normal((128, 10000), dtype=np.float32)
    add("softmax 128x10000 (last dim)", (logits,), lambda F, x: F.softmax(x, -1), _np_softmax, 20)
    add("log_softmax 128x10000 (last dim)", (logits,), lambda F, x: F.log_softmax(x, -1), _np_log_softmax, 20)
    add("softmax 128x10000 (dim 0)", (logits,), lambda F, x: F.softmax(x, 0), None, 10)
    target = rng.integers(0, 10000, 128)
    add("cross_entropy 128x10000", (logits, target), lambda F, x, t: F.cross_entropy(x, t), None, 10)
    if not is_numpy:
        # Forward + backward: the gradient of the logits (a leaf, so backward also accumulates it).
        leaf = lib.tensor(logits, device=device, requires_grad=True)
        labels = lib.tensor(target, device=device)
        rows.append(Case("cross_entropy 128x10000, forward + backward",
                         lambda: F.cross_entropy(leaf, labels).backward(), 10, "ms"))
        # CTC over a word-sized batch (issue 13): a composite whose recursion runs one step per
        # frame, so per-op overhead, not arithmetic, sets its time.
        ctc_logits = lib.tensor(rng.standard_normal((50, 16, 20), dtype=np.float32), device=device, requires_grad=True)
        ctc_args = (lib.tensor(rng.integers(1, 20, (16, 10)), device=device), lib.tensor(np.full(16, 50)),
                    lib.tensor(rng.integers(5, 11, 16)))
        rows.append(Case("ctc_loss T=50 N=16 C=20 S=10, forward",
                         lambda: F.ctc_loss(ctc_logits.detach().log_softmax(2), *ctc_args), 10, "ms"))
        rows.append(Case("ctc_loss T=50 N=16 C=20 S=10, forward + backward",
                         lambda: F.ctc_loss(ctc_logits.log_softmax(2), *ctc_args).backward(), 10, "ms"))
        pooled = lib.tensor(planes[:, :, :24, :24], device=device, requires_grad=True)
        rows.append(Case("max_pool2d 64x64x24x24, kernel 2, forward + backward",
                         lambda: F.max_pool2d(pooled, 2).sum().backward(), 5, "ms"))
        rows.append(Case("avg_pool2d 64x64x24x24, kernel 2, forward + backward",
                         lambda: F.avg_pool2d(pooled, 2).sum().backward(), 5, "ms"))
        # Mixed precision on the CPU: bfloat16 products under autocast (the cast weight is cached
        # inside one region, as in a training step's forward).
        if device == "cpu":
            x2d = lib.tensor(rng.standard_normal((256, 512), dtype=np.float32))
            w2d = lib.tensor(rng.standard_normal((512, 512), dtype=np.float32), requires_grad=True)
            conv_x, conv_w = lib.tensor(image[:, :16]), lib.tensor(filters[:32, :16], requires_grad=True)

            def under_autocast(fn):
                def run():
                    with lib.autocast("cpu", dtype=lib.bfloat16):
                        return fn()
                return run

            rows.append(Case("autocast bfloat16: linear 256x512 @ 512x512",
                             under_autocast(lambda: F.linear(x2d, w2d)), 20, "ms"))
            rows.append(Case("autocast bfloat16: conv2d 64x16x28x28, 32 3x3, padding 1",
                             under_autocast(lambda: F.conv2d(conv_x, conv_w, padding=1)), 3, "ms"))
    # Transcendental elementwise functions (vectorized float32 on the CPU since issue 14's fifth
    # session: libm's scalar calls were 2.8-10x PyTorch's) and gelu, whose erf made it 10x.
    add("exp 128x10000", (logits,), lambda F, x: x.exp(), np.exp, 20)
    add("log of |x| 128x10000", (np.abs(logits),), lambda F, x: x.log(), np.log, 20)
    add("tanh 128x10000", (logits,), lambda F, x: x.tanh(), np.tanh, 20)
    add("sigmoid 128x10000", (logits,), lambda F, x: x.sigmoid(), None, 20)
    add("gelu 128x10000", (logits,), lambda F, x: F.gelu(x), None, 20)
    if not is_numpy:
        gelu_leaf = lib.tensor(logits, device=device, requires_grad=True)
        rows.append(Case("gelu 128x10000, forward + backward", lambda: F.gelu(gelu_leaf).sum().backward(), 10, "ms"))
    activations = rng.standard_normal((4096, 1024), dtype=np.float32)
    add("layer_norm 4096x1024", (activations,), lambda F, x: F.layer_norm(x, (1024,)), _np_layer_norm, 10)
    flat = rng.standard_normal(10**7, dtype=np.float32)
    add("sum 1e7 float32", (flat,), lambda F, x: x.sum(), lambda x: x.sum(), 10)
    # The maximum over a row (the softmax shift, a classifier's prediction), and of a whole tensor.
    add("amax 128x10000 (last dim)", (logits,), lambda F, x: x.amax(1), lambda x: x.max(1), 20)
    add("amax 1e7 float32", (flat,), lambda F, x: x.amax(), lambda x: x.max(), 10)
    return rows


if __name__ == "__main__":
    run_cases(__file__, cases, columns=("tensorplug", "torch", "numpy", "tensorplug:opencl"))
