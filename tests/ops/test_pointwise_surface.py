"""The pointwise ops PyTorch programs use that tensorplug added for issue 13 (special functions,
addcmul and kin, float tests): values, dtypes and gradients against PyTorch 2.13 and float64
references, on every backend; their errors before any kernel runs."""
import math

import numpy as np
import pytest

import tensorplug as tp
from device_params import every_device, torch_or_skip
from torch_reference import assert_same_error, compare

R = np.random.default_rng(7)


def f(*shape):
    return R.standard_normal(shape)


def ints(*shape):
    return R.integers(-9, 10, shape)


def unit(*shape):
    return R.uniform(0.05, 0.95, shape)


SPECIALS = np.array([0.0, -0.0, 1.0, 2.0, 0.5, -1.5, -2.0, 1e-8, 12.5, 1e5, np.inf, -np.inf, np.nan])

CASES = {
    "addcmul broadcast": (lambda L, a, b, c: L.addcmul(a, b, c, value=0.5), [f(2, 3), f(3), f(2, 1)]),
    "addcmul int": (lambda L, a, b, c: L.addcmul(a, b, c, value=2), [ints(2, 3), ints(3), ints(2, 1)]),
    "addcmul promotes": (lambda L, a, b, c: L.addcmul(a, b, c), [ints(3), f(3), ints(3)]),
    "addcmul_ non-contiguous": (lambda L, a, b, c: a.clone().T.addcmul_(b, c), [f(3, 2), f(2, 3), f(3)]),
    "addcdiv": (lambda L, a, b, c: L.addcdiv(a, b, c, value=-2), [f(2, 3), f(3), unit(2, 1)]),
    "addcdiv_": (lambda L, a, b, c: a.clone().addcdiv_(b, c), [f(3), f(3), unit(3)]),
    "lgamma": (lambda L, a: L.lgamma(a), [np.concatenate([f(20) * 4, SPECIALS])]),
    "lgamma int": (lambda L, a: L.lgamma(a), [np.array([1, 2, 3, 10, 0, -1])]),
    "lgamma_": (lambda L, a: a.clone().lgamma_(), [unit(4) * 5]),
    # (PyTorch's digamma gradient at the poles -1, -2, ... is a large finite number, ours inf.)
    "digamma": (lambda L, a: L.digamma(a), [np.concatenate([f(20) * 4 + 0.01, SPECIALS[SPECIALS != -2]])]),
    "erfc": (lambda L, a: L.erfc(a), [np.concatenate([f(20) * 4, SPECIALS, [5.0, 9.0, 20.0]])]),
    "erfc float32": (lambda L, a: L.erfc(a.float()), [np.linspace(-3, 9, 41)]),
    "logit": (lambda L, a: L.logit(a), [np.concatenate([unit(6), [0.0, 1.0]])]),
    "logit eps": (lambda L, a: L.logit(a, eps=0.1), [unit(8)]),
    "sinc": (lambda L, a: L.sinc(a), [np.array([0.0, 0.5, -1.5, 3.0, 1e-9, 2.25])]),
    "sinc int": (lambda L, a: L.sinc(a), [ints(4)]),
    "logaddexp": (lambda L, a, b: L.logaddexp(a, b), [f(3, 4), f(4)]),
    "logaddexp infinities": (lambda L, a, b: L.logaddexp(a, b).detach(), [np.array([np.inf, -np.inf, -np.inf, 1.0]),
                                                                          np.array([np.inf, -np.inf, 2.0, np.nan])]),
    "logaddexp2": (lambda L, a, b: L.logaddexp2(a, b), [f(3, 4), f(3, 1)]),
    "heaviside": (lambda L, a, b: L.heaviside(a, b).detach(), [np.array([-1.0, 0.0, 2.0, np.nan]), np.array([0.5])]),
    "fmax": (lambda L, a, b: L.fmax(a, b), [np.array([1.0, np.nan, 2.0, np.nan, 3.0]), np.array([np.nan, 2.0, 2.0, np.nan, 1.0])]),
    "fmin": (lambda L, a, b: L.fmin(a, b), [np.array([1.0, np.nan, 2.0, np.nan, 3.0]), np.array([np.nan, 2.0, 2.0, np.nan, 1.0])]),
    "fmax int float": (lambda L, a, b: L.fmax(a, b), [ints(4), f(4)]),
    "gcd": (lambda L, a, b: L.gcd(a, b), [ints(30) * 7, ints(30) * 3]),
    "lcm": (lambda L, a, b: L.lcm(a, b), [ints(30), ints(30)]),
    "gcd_": (lambda L, a, b: a.clone().gcd_(b), [ints(5) * 4, ints(5) * 6]),
    "deg2rad int": (lambda L, a: L.deg2rad(a), [ints(4)]),
    "rad2deg": (lambda L, a: L.rad2deg(a), [f(4)]),
    "deg2rad_": (lambda L, a: a.clone().deg2rad_(), [f(4)]),
    "float_power": (lambda L, a: L.float_power(a, 2.5), [unit(4)]),
    "float_power int": (lambda L, a, b: L.float_power(a, b), [ints(4), np.array([1, 2, 0, 3])]),
    "float_power_": (lambda L, a: a.clone().float_power_(2), [f(3)]),
    "ldexp": (lambda L, a, b: L.ldexp(a, b), [f(4), np.array([3, 1, 0, 2])]),
    "ldexp int": (lambda L, a, b: L.ldexp(a, b), [ints(4), ints(4)]),
    "signbit": (lambda L, a: L.signbit(a), [np.array([-0.0, 0.0, -1.0, np.nan, -np.nan, -np.inf])]),
    "signbit int": (lambda L, a: L.signbit(a), [ints(5)]),
    "isposinf": (lambda L, a: L.isposinf(a), [np.array([-np.inf, np.inf, 1.0, np.nan])]),
    "isneginf": (lambda L, a: L.isneginf(a), [np.array([-np.inf, np.inf, 1.0, np.nan])]),
    "isneginf int": (lambda L, a: L.isneginf(a), [ints(3)]),
    "isreal": (lambda L, a: L.isreal(a), [f(3)]),
    "frexp": (lambda L, a: L.frexp(a), [np.array([0.0, -0.0, 8.0, -3.5, np.inf, np.nan, 1e-310, 1.7e308, 1 - 1e-16])]),
    "frexp float32": (lambda L, a: L.frexp(a.float()), [np.array([1e-40, 3e38, 1.0 - 1e-7, 0.75])]),
    "frexp gradient": (lambda L, a: L.frexp(a), [f(6) * 100]),
    "empty": (lambda L, a, b: L.logaddexp(a, b), [np.zeros((0, 3)), np.zeros(3)]),
}


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("case", list(CASES))
def test_matches_pytorch(case, device):
    """Values, dtypes and gradients as PyTorch's (tensorplug's series are at least as accurate as
    PyTorch's own, so float64 agrees to 1e-9 relative)."""
    torch = torch_or_skip()
    fn, arrays = CASES[case]
    compare(torch, fn, arrays, device, rtol=1e-9 if "float32" not in case else 2e-6, atol=1e-12)


@pytest.mark.parametrize("device", every_device())
def test_special_functions_match_math(device):
    """lgamma, erfc and digamma against Python's math module (and the digamma recurrence) in
    float64, without PyTorch."""
    x = np.array([0.1, 0.5, 1.0, 2.5, 7.0, 33.3, 250.0, -0.5, -3.7])
    t = tp.tensor(x, device=device)
    np.testing.assert_allclose(tp.lgamma(t).cpu().numpy(), [math.lgamma(v) for v in x], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(tp.erfc(t).cpu().numpy(), [math.erfc(v) for v in x], rtol=1e-13)
    # digamma(x + 1) - digamma(x) = 1 / x, and digamma(1) is minus the Euler-Mascheroni constant.
    np.testing.assert_allclose((tp.digamma(t + 1) - tp.digamma(t)).cpu().numpy(), 1 / x, rtol=1e-11)
    assert abs(tp.digamma(tp.tensor(1.0, dtype=tp.float64, device=device)).item() + 0.5772156649015329) < 1e-14
    poles = tp.tensor([-1.0, -2.0, 0.0], dtype=tp.float64, device=device)
    assert tp.lgamma(poles).cpu().tolist() == [math.inf] * 3
    assert np.isnan(tp.digamma(poles).cpu().numpy()[:2]).all() and tp.digamma(poles)[2].item() == -math.inf


@pytest.mark.parametrize("device", every_device())
def test_ldexp_gradient_of_negative_exponents(device):
    """d(x * 2**e)/dx = 2**e for negative integer exponents too (PyTorch 2.13 computes 2**e in
    integers there and returns 0: docs/deviations.md)."""
    x = tp.tensor([0.3, -1.2, 2.0], dtype=tp.float64, device=device, requires_grad=True)
    tp.ldexp(x, tp.tensor([3, -5, 0], device=device)).sum().backward()
    assert x.grad.cpu().tolist() == [8.0, 2.0 ** -5, 1.0]


ERRORS = [
    (lambda L: L.addcdiv(L.ones(2), L.ones(2, dtype=L.int64), L.ones(2, dtype=L.int64)), RuntimeError, "Integer division with addcdiv"),
    (lambda L: L.addcmul(L.ones(3), L.ones(3), L.ones(2)), RuntimeError, "size"),
    (lambda L: L.logaddexp(L.ones(2, dtype=L.int64), L.ones(2, dtype=L.int64)), NotImplementedError, None),
    (lambda L: L.gcd(L.ones(2), L.ones(2)), NotImplementedError, None),
    (lambda L: L.heaviside(L.ones(2, dtype=L.int64), L.ones(2)), RuntimeError, "different dtypes"),
    (lambda L: L.frexp(L.ones(2, dtype=L.int64)), RuntimeError, "only supports floating-point dtypes"),
    (lambda L: L.ones(2).float_power_(2), RuntimeError, "float_power_"),
    (lambda L: L.ones(2, dtype=L.int64).addcmul_(L.ones(2), L.ones(2)), RuntimeError, "can't be cast"),
    (lambda L: L.lgamma([1.0]), TypeError, "Tensor"),
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_match_pytorch(index):
    """The same exception type as PyTorch (and its words where given), raised before computing."""
    torch = torch_or_skip()
    call, error, words = ERRORS[index]
    assert_same_error(torch, call, error, words)


def test_complex_operands_are_refused_naming_the_op():
    """The real formulas refuse complex tensors before computing (docs/deviations.md)."""
    z = tp.tensor([1 + 1j])
    for fn in (tp.lgamma, tp.digamma, tp.erfc, tp.sinc, tp.signbit):
        with pytest.raises(NotImplementedError, match=fn.__name__):
            fn(z)


# Found by tools/fuzz_native.py: abs leaves the most negative integer negative, and Euclid's
# algorithm with Python's floored remainder gave gcd(-2**63, -1) = -1. PyTorch's values, from
# Euclid with C's truncating remainder on the absolute values (so that gcd of the most negative
# integer and 0 stays negative, as in PyTorch):
def test_gcd_and_lcm_of_the_most_negative_integer():
    lo = -2 ** 63
    a = tp.tensor([lo, lo, 0, lo, 12, -9, 0, 0])
    b = tp.tensor([0, lo, lo, -1, 18, 6, 5, 0])
    assert tp.gcd(a, b).tolist() == [lo, lo, lo, 1, 6, 3, 5, 0]
    small = tp.tensor([-2 ** 31, -2 ** 31], dtype=tp.int32)
    assert tp.gcd(small, tp.tensor([0, -6], dtype=tp.int32)).tolist() == [-2 ** 31, -2]
    assert tp.lcm(tp.tensor([lo, -3, 4, -6]), tp.tensor([-1, 2, 6, 4])).tolist() == [lo, 6, 12, 12]
    ordinary = np.random.default_rng(0).integers(-10 ** 6, 10 ** 6, (2, 200))
    assert tp.gcd(tp.tensor(ordinary[0]), tp.tensor(ordinary[1])).tolist() == np.gcd(ordinary[0], ordinary[1]).tolist()
