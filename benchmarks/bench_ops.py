"""nn ops and a large reduction side by side: the CPU backend's fused kernels against PyTorch (and
NumPy where it has the op).

Run: python benchmarks/bench_ops.py   (PyTorch rows appear when torch==2.13.0 is installed)
"""
from __future__ import annotations

import numpy as np

import tensorplug as tp
import tensorplug.nn.functional as F
from _harness import Case, optional_torch, run_cases


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


def cases() -> list[Case]:
    torch = optional_torch()
    tf = torch.nn.functional if torch is not None else None
    rng = np.random.default_rng(0)
    rows = []

    def add(label, arrays, tp_fn, torch_fn, np_fn, number, unit="ms"):
        tps = [tp.tensor(a) for a in arrays]
        calls = {"tensorplug": lambda: tp_fn(*tps)}
        if torch is not None:
            ts = [torch.from_numpy(a) for a in arrays]
            calls["torch"] = lambda: torch_fn(*ts)
        if np_fn is not None:
            calls["numpy"] = lambda: np_fn(*arrays)
        rows.append(Case(label, calls, number, unit))

    image = rng.standard_normal((64, 32, 28, 28), dtype=np.float32)
    filters = rng.standard_normal((64, 32, 3, 3), dtype=np.float32)
    bias = rng.standard_normal(64, dtype=np.float32)
    add("conv2d 64x32x28x28, 64 3x3, padding 1", (image, filters, bias),
        lambda x, w, b: F.conv2d(x, w, b, padding=1), lambda x, w, b: tf.conv2d(x, w, b, padding=1), None, 3)
    add("conv2d same, stride 2", (image, filters, bias),
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), lambda x, w, b: tf.conv2d(x, w, b, stride=2, padding=1),
        None, 5)
    planes = rng.standard_normal((64, 64, 28, 28), dtype=np.float32)
    add("max_pool2d 64x64x28x28, kernel 2", (planes,), lambda x: F.max_pool2d(x, 2), lambda x: tf.max_pool2d(x, 2),
        _np_max_pool2, 5)
    add("max_pool2d 64x64x28x28, kernel 3 stride 2 pad 1", (planes,), lambda x: F.max_pool2d(x, 3, 2, 1),
        lambda x: tf.max_pool2d(x, 3, 2, 1), None, 5)
    add("avg_pool2d 64x64x28x28, kernel 2", (planes,), lambda x: F.avg_pool2d(x, 2), lambda x: tf.avg_pool2d(x, 2),
        None, 5)
    logits = rng.standard_normal((128, 10000), dtype=np.float32)
    add("softmax 128x10000 (last dim)", (logits,), lambda x: F.softmax(x, -1), lambda x: torch.softmax(x, -1),
        _np_softmax, 20)
    add("log_softmax 128x10000 (last dim)", (logits,), lambda x: F.log_softmax(x, -1),
        lambda x: torch.log_softmax(x, -1), _np_log_softmax, 20)
    add("softmax 128x10000 (dim 0)", (logits,), lambda x: F.softmax(x, 0), lambda x: torch.softmax(x, 0), None, 10)
    target = rng.integers(0, 10000, 128)
    add("cross_entropy 128x10000", (logits, target), lambda x, t: F.cross_entropy(x, t),
        lambda x, t: tf.cross_entropy(x, t), None, 10)
    activations = rng.standard_normal((4096, 1024), dtype=np.float32)
    add("layer_norm 4096x1024", (activations,), lambda x: F.layer_norm(x, (1024,)),
        lambda x: tf.layer_norm(x, (1024,)), _np_layer_norm, 10)
    flat = rng.standard_normal(10**7, dtype=np.float32)
    add("sum 1e7 float32", (flat,), lambda x: x.sum(), lambda x: x.sum(), lambda x: x.sum(), 10)
    return rows


if __name__ == "__main__":
    torch = optional_torch()
    threads = tp.get_num_threads()
    if torch is not None:
        torch.set_num_threads(threads)
    print(f"tensorplug {tp.__version__}, torch {torch.__version__ if torch else 'not installed'}, numpy {np.__version__}, {threads} threads")
    run_cases(cases())
