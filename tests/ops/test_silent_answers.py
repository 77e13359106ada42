"""Answers that used to be silently wrong (issue 16), against NumPy float64 / exact values."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F

NAN = float("nan")


def test_resampling_keeps_nan_in_its_own_window():
    """interpolate and adaptive pooling read only each output's window: one NaN input does not
    spread to the whole row (a dense interpolation matrix multiplied it by zero weights)."""
    x = tp.tensor([[[1.0, NAN, 3.0, 4.0, 5.0, 6.0]]])
    np.testing.assert_array_equal(F.interpolate(x, size=9, mode="nearest").numpy()[0, 0],
                                  [1, 1, NAN, 3, 3, 4, 5, 5, 6])
    np.testing.assert_allclose(F.adaptive_avg_pool1d(x, 2).numpy()[0, 0], [NAN, 5.0])
    np.testing.assert_allclose(F.interpolate(x, size=3, mode="area").numpy()[0, 0], [NAN, 3.5, 5.5])
    linear = F.interpolate(x, size=4, mode="linear").numpy()[0, 0]
    assert np.isnan(linear[:2]).all() and np.allclose(linear[2:], [4.25, 5.75])
    transposed = tp.tensor([[[1.0]], [[NAN]], [[3.0]], [[4.0]]]).transpose(2, 0)
    np.testing.assert_array_equal(F.interpolate(transposed, scale_factor=3, mode="nearest").numpy()[0, 0],
                                  np.repeat([1.0, NAN, 3.0, 4.0], 3))


def test_addmm_with_alpha_zero_ignores_the_product():
    """alpha = 0 drops mat1 @ mat2, inf and NaN included, as beta = 0 drops the input."""
    mat1 = tp.tensor([[float("inf"), 1.0], [1.0, 1.0]], requires_grad=True)
    out = tp.addmm(tp.ones(2, 2), mat1, tp.ones(2, 2), alpha=0)
    np.testing.assert_array_equal(out.detach().numpy(), np.ones((2, 2)))
    out.sum().backward()
    np.testing.assert_array_equal(mat1.grad.numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(tp.addmv(tp.ones(2), tp.tensor([[NAN, 1.0], [1.0, 1.0]]), tp.ones(2), alpha=0).numpy(),
                                  [1.0, 1.0])


def test_sixteen_bit_mean_and_std_accumulate_in_float32():
    """70,000 float16 twos average to 2 (their float16 sum overflowed to inf)."""
    for dtype in (tp.float16, tp.bfloat16):
        assert tp.full((70000,), 2.0, dtype=dtype).mean().item() == 2.0
        assert tp.full((70000,), 300.0, dtype=dtype).std().item() == 0.0
        values = np.random.default_rng(0).uniform(200, 400, size=5000)
        got = tp.tensor(values, dtype=dtype).std().float().item()
        reference = np.std(tp.tensor(values, dtype=dtype).float().numpy().astype(np.float64), ddof=1)
        assert abs(got - reference) <= 1e-2 * reference


def test_cat_of_only_empty_vectors_ignores_dim():
    """As in PyTorch, 1-D empty tensors are skipped, dim included: cat of nothing but them is an
    empty vector of the promoted dtype for any dim (dim=1 raised IndexError)."""
    out = tp.cat([tp.zeros(0), tp.zeros(0, dtype=tp.float64)], dim=1)
    assert out.shape == (0,) and out.dtype == tp.float64
    assert tp.cat([tp.zeros(0, dtype=tp.bool)], dim=-3).shape == (0,)


def test_sub_refuses_a_python_bool_as_pytorch_does():
    """int16 - True and x.sub_(False) raise as a bool tensor operand does (they computed 1 and 0)."""
    for call in (lambda: tp.sub(tp.ones(2, dtype=tp.int16), True), lambda: tp.ones(2) - False,
                 lambda: True - tp.ones(2), lambda: tp.ones(2).sub_(True)):
        with pytest.raises(TypeError, match="Subtraction, the `-` operator, with a bool"):
            call()
