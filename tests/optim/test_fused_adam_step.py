"""adam_step_, Adam's update as one op: the CPU's fused kernel gives exactly what the op's
decomposition gives (the arithmetic is the same, step by step, in the parameter's dtype), and the
update is recorded as an in-place change."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.optim import _fused

_CASES = [
    dict(weight_decay=0.0, decoupled=False, amsgrad=False, maximize=False),
    dict(weight_decay=0.1, decoupled=False, amsgrad=False, maximize=False),
    dict(weight_decay=0.1, decoupled=True, amsgrad=True, maximize=False),
    dict(weight_decay=0.0, decoupled=False, amsgrad=True, maximize=True),
]


def _run(update, dtype, n, case, layout=lambda t: t):
    rng = np.random.default_rng(0)
    p = layout(tp.tensor(rng.standard_normal(n).astype(dtype)))
    moments = [layout(tp.zeros(n, dtype=p.dtype)) for _ in range(3)]
    for step in range(1, 5):
        g = layout(tp.tensor(rng.standard_normal(n).astype(dtype)))
        if case["maximize"]:  # as Adam hands it over
            g = -g
        update(p, g, moments[0], moments[1], moments[2] if case["amsgrad"] else None, 0.01, 0.9, 0.999, 1e-8,
               case["weight_decay"], step, case["decoupled"])
    return p.numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", _CASES, ids=lambda c: "-".join(k for k, v in c.items() if v) or "plain")
def test_fused_kernel_matches_decomposition_exactly(dtype, case):
    """70,000 elements (the threaded path) and 3, through the CPU kernel and the decomposition."""
    for n in (70000, 3):
        fused = _run(_fused.adam_step_, dtype, n, case)
        reference = _run(_fused._adam_step_decomposition, dtype, n, case)
        np.testing.assert_array_equal(fused, reference)


def test_non_contiguous_operands_take_the_decomposition():
    """A strided parameter (a column of a matrix) still gets the same update."""
    case = _CASES[2]

    def column(t):
        return tp.stack([t, t]).t()[:, 0]  # stride 2

    strided = _run(_fused.adam_step_, np.float32, 50, case, layout=column)
    reference = _run(_fused._adam_step_decomposition, np.float32, 50, case)
    np.testing.assert_array_equal(strided, reference)


def test_update_bumps_versions():
    """Tensors the update wrote have new versions, so a graph that saved them refuses backward."""
    p = tp.ones(4, requires_grad=True)
    saved = (p * p).sum()
    with tp.no_grad():
        _fused.adam_step_(p, tp.ones(4), tp.zeros(4), tp.zeros(4), None, 0.1, 0.9, 0.999, 1e-8, 0.0, 1.0, False)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        saved.backward()


def test_adam_matches_pytorch():
    """Adam with amsgrad and weight decay over four steps, against PyTorch 2.13."""
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference (pip install torch==2.13.0)")
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((6, 7)).astype(np.float32)
    grads = [rng.standard_normal((6, 7)).astype(np.float32) for _ in range(4)]
    results = []
    for lib in (tp, torch):
        p = lib.tensor(w0, requires_grad=True)
        opt = lib.optim.Adam([p], lr=0.01, weight_decay=0.1, amsgrad=True)
        for g in grads:
            p.grad = lib.tensor(g)
            opt.step()
        results.append(p.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=1e-6)
