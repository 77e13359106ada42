"""tp.autocast runs the margin and embedding losses (cosine_embedding, hinge_embedding,
margin_ranking, multi_margin, multilabel_margin) of half-precision inputs in float32, as PyTorch
2.13's CPU and CUDA lists both do (issue 13). The reference is PyTorch: on the CPU its own autocast
region; on an accelerator its float32 loss of the same inputs rounded to the half dtype (what its
CUDA policy computes)."""
import numpy as np
import pytest

import tensorplug as tp
from tests.torch_reference import torch_or_skip

HALF = ["float16", "bfloat16"]


def _arrays():
    rng = np.random.default_rng(5)
    return {
        "x1": rng.standard_normal((4, 6)).astype(np.float32),
        "x2": rng.standard_normal((4, 6)).astype(np.float32),
        "signs": np.array([1, -1, 1, -1]),
        "sign_grid": np.where(rng.standard_normal((4, 6)) > 0, 1.0, -1.0).astype(np.float32),
        "classes": np.array([0, 5, 2, 3]),
        "labels": np.array([[0, 3, -1, 1, 0, 0], [5, -1, 0, 0, 0, 0], [1, 2, 4, -1, 0, 0], [-1, 0, 0, 0, 0, 0]]),
    }


# name -> fn(lib, x1, x2, arrays as lib tensors): the loss of the floating inputs x1 and x2, passed
# as they are (an op outside the loss would run in the half dtype).
CASES = {
    "cosine_embedding_loss": lambda lib, x1, x2, a: lib.nn.functional.cosine_embedding_loss(x1, x2, a["signs"],
                                                                                          margin=0.2),
    "hinge_embedding_loss": lambda lib, x1, x2, a: lib.nn.functional.hinge_embedding_loss(x1, a["sign_grid"]),
    "margin_ranking_loss": lambda lib, x1, x2, a: lib.nn.functional.margin_ranking_loss(x1, x2, a["sign_grid"],
                                                                                      margin=0.1),
    "multi_margin_loss": lambda lib, x1, x2, a: lib.nn.functional.multi_margin_loss(x1, a["classes"], p=2),
    "multilabel_margin_loss": lambda lib, x1, x2, a: lib.nn.functional.multilabel_margin_loss(x2, a["labels"],
                                                                                            reduction="sum"),
    "aten_cosine_embedding_loss": lambda lib, x1, x2, a: lib.cosine_embedding_loss(x1, x2, a["signs"], 0.0, 1),
    "aten_hinge_embedding_loss": lambda lib, x1, x2, a: lib.hinge_embedding_loss(x1, a["sign_grid"], 0.5, 2),
    "aten_margin_ranking_loss": lambda lib, x1, x2, a: lib.margin_ranking_loss(x1, x2[:1], a["sign_grid"], 0.0, 0),
}


def _run(lib, case, dtype_name, device=None, autocast_device=None, float_inputs=False):
    """(loss, x1, x2) of ``case`` with x1, x2 leaves in ``dtype_name`` (or float32 holding the
    rounded values when ``float_inputs``), under an autocast region of ``autocast_device``."""
    arrays = _arrays()
    dtype = getattr(lib, dtype_name)
    kwargs = {} if device is None else {"device": device}
    x1, x2 = (lib.tensor(arrays.pop(k), **kwargs).to(dtype) for k in ("x1", "x2"))
    if float_inputs:
        x1, x2 = x1.float(), x2.float()
    x1.requires_grad_(True)
    x2.requires_grad_(True)
    others = {k: lib.tensor(v, **kwargs) for k, v in arrays.items()}
    if autocast_device is None:
        return CASES[case](lib, x1, x2, others), x1, x2
    with lib.autocast(autocast_device, dtype=dtype):
        return CASES[case](lib, x1, x2, others), x1, x2


def _numpy(t) -> np.ndarray:
    t = t.detach()
    return (t.cpu() if hasattr(t, "cpu") else t).float().numpy().astype(np.float64)


@pytest.mark.parametrize("dtype_name", HALF)
@pytest.mark.parametrize("case", list(CASES))
def test_cpu_matches_torch_autocast(case, dtype_name):
    """The loss is float32, equal to PyTorch's under its CPU autocast; the half leaves' gradients
    too (in their own dtype)."""
    torch = torch_or_skip()
    expected, e1, e2 = _run(torch, case, dtype_name, autocast_device="cpu")
    got, g1, g2 = _run(tp, case, dtype_name, autocast_device="cpu")
    assert str(expected.dtype) == "torch.float32" and got.dtype is tp.float32
    np.testing.assert_allclose(_numpy(got), _numpy(expected), rtol=1e-5, atol=1e-6)
    expected.sum().backward()
    got.sum().backward()
    eps = 2.0 ** -7 if dtype_name == "bfloat16" else 2.0 ** -10
    for ours, theirs in ((g1, e1), (g2, e2)):
        if theirs.grad is None:  # an input the case does not use
            assert ours.grad is None
            continue
        assert ours.grad.dtype is ours.dtype
        reference = _numpy(theirs.grad)
        np.testing.assert_allclose(_numpy(ours.grad), reference, rtol=eps, atol=eps * np.abs(reference).max())


@pytest.mark.parametrize("dtype_name", HALF)
@pytest.mark.parametrize("case", list(CASES))
def test_accelerator_computes_in_float32(device, case, dtype_name):
    """On a device other than the CPU (PyTorch's CUDA list): float32 loss equal to PyTorch's float32
    loss of the rounded inputs; the gradient is that float32 gradient rounded to the leaf's dtype."""
    torch = torch_or_skip()
    if device == "cpu":
        pytest.skip("the CPU is checked against PyTorch's own CPU autocast above")
    if not tp.amp.is_autocast_available(device):
        pytest.skip(f"{device} declares no autocast dtype (Backend.autocast_dtypes), so its autocast is refused")
    got, g1, g2 = _run(tp, case, dtype_name, device=device, autocast_device=device)
    expected, e1, e2 = _run(torch, case, dtype_name, float_inputs=True)
    assert got.dtype is tp.float32
    np.testing.assert_allclose(_numpy(got), _numpy(expected), rtol=1e-5, atol=1e-6)
    got.sum().backward()
    expected.sum().backward()
    eps = 2.0 ** -7 if dtype_name == "bfloat16" else 2.0 ** -10
    for ours, theirs in ((g1, e1), (g2, e2)):
        if theirs.grad is None:  # an input the case does not use
            assert ours.grad is None
            continue
        assert ours.grad.dtype is ours.dtype
        reference = _numpy(theirs.grad)
        np.testing.assert_allclose(_numpy(ours.grad), reference, rtol=eps, atol=eps * np.abs(reference).max())


@pytest.mark.parametrize("case", list(CASES))
def test_outside_autocast_the_inputs_dtypes_decide(case):
    """Without a region the loss is computed in the dtype its inputs promote to, as in PyTorch."""
    torch = torch_or_skip()
    got, _, _ = _run(tp, case, "bfloat16")
    try:
        expected, _, _ = _run(torch, case, "bfloat16")
    except NotImplementedError:  # PyTorch's CPU has no bfloat16 kernel for the multi-class margin losses
        assert got.dtype is tp.bfloat16
        return
    assert got.dtype.name == str(expected.dtype).removeprefix("torch.")
