"""pow(tensor, number) refuses an exponent its computation dtype cannot hold, as PyTorch 2.13
converts it with an overflow check (issue 16): float16 ** 1e30, bfloat16 ** 1e39, int8 ** 128;
float32 and float64 take any exponent, and a number base is never checked."""
import math

import pytest

import tensorplug as tp
from device_params import every_device, torch_or_skip


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("dtype,exponent", [("float16", 1e30), ("float16", 65505.0), ("float16", -1e5),
                                            ("int8", 128), ("int16", 2 ** 31), ("int64", 2 ** 63)])
def test_exponent_that_does_not_fit_is_refused_before_any_kernel(device, dtype, exponent):
    """The call raises on every backend, also for empty tensors and in place, and leaves self as it was."""
    x = tp.ones(3, dtype=getattr(tp, dtype), device=device)
    with pytest.raises(RuntimeError, match="cannot be converted to type"):
        tp.pow(x, exponent)
    with pytest.raises(RuntimeError, match="cannot be converted to type"):
        x.pow_(exponent)
    with pytest.raises(RuntimeError, match="cannot be converted to type"):
        tp.pow(x[:0], exponent)
    assert x.tolist() == [1, 1, 1]


@pytest.mark.parametrize("device", every_device())
def test_exponents_that_fit(device):
    """float16's largest exponent, infinities and NaN are values of the dtype; float32 takes 1e300."""
    x = tp.tensor([1.0, 2.0], dtype=tp.float16, device=device)
    assert tp.pow(x, 65504.0).tolist() == [1.0, math.inf]
    assert tp.pow(x, -math.inf).tolist() == [1.0, 0.0]
    assert tp.pow(x.float(), 1e300).tolist() == [1.0, math.inf]
    assert tp.pow(1e30, x).tolist() == [math.inf, math.inf]  # a number base: no check


def test_outcomes_match_pytorch():
    """Every dtype against a table of exponents: the same refusals, result dtypes and values."""
    torch = torch_or_skip()

    def outcome(L, run):
        try:
            r = run(L)
        except RuntimeError:
            return "RuntimeError"
        return (str(r.dtype).split(".")[-1], r.tolist())

    cases = [("float16", e) for e in (65504.0, 65505.0, 65519.0, 1e5, math.inf, math.nan, -1e5, 70000, 2, 1e30)]
    cases += [("bfloat16", e) for e in (3.3895313892515355e38, 3.39e38, 1e39, math.inf)]
    cases += [("float32", e) for e in (3.5e38, 1e300, 2 ** 63 - 1)]
    cases += [(d, e) for d in ("int8", "uint8", "int16", "int32", "int64")
              for e in (127, 128, 255, 256, 2 ** 31, 2 ** 63 - 1, True, 2.5, 1e30)]
    for dtype, exponent in cases:
        def run(L):
            return L.pow(L.tensor([1, 0], dtype=getattr(L, dtype)), exponent)

        got, want = outcome(tp, run), outcome(torch, run)
        assert str(got) == str(want), (dtype, exponent)  # str: NaN compares equal
    for run in (lambda L: L.tensor([1.0, 2.0], dtype=L.float16) ** 1e30,
                lambda L: L.pow(L.tensor([1.0, 2.0], dtype=L.float16), 1e30, out=L.empty(2)),
                lambda L: L.pow(L.tensor([1.0, 2.0]), 1e30, out=L.empty(2, dtype=L.float16)),
                lambda L: L.pow(L.tensor([1.0, 2.0], dtype=L.float16), L.tensor(1e30))):
        assert outcome(tp, run) == outcome(torch, run)
