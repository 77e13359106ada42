"""Python ints as operands go through 64 bits, as in PyTorch: from -2**63 up to 2**64 - 1 they
are numbers (wrapping into narrower integer dtypes), beyond they raise OverflowError instead of
wrapping into a wrong operand (int64 + 2**70 gave the tensor unchanged, clamp(max=2**70) zeros)."""
import pytest

import tensorplug as tp

TOO_BIG = [2 ** 64, 2 ** 70, -(2 ** 63) - 1, -(2 ** 100)]


@pytest.mark.parametrize("value", TOO_BIG)
@pytest.mark.parametrize("dtype", [tp.int64, tp.int32, tp.uint8, tp.float32, tp.float64])
def test_out_of_range_ints_raise(value, dtype):
    x = tp.ones(3, dtype=dtype)
    for run in (lambda: x + value, lambda: value * x, lambda: x == value, lambda: x.clamp(max=value),
                lambda: tp.where(x > 0, x, value), lambda: x.add(x, alpha=value) if dtype.is_floating_point else x + value):
        with pytest.raises(OverflowError, match="does not fit in 64 bits"):
            run()


def test_ints_within_64_bits_still_compute():
    assert (tp.ones(2, dtype=tp.int64) + 2 ** 63).tolist() == [-(2 ** 63) + 1] * 2  # wraps, as PyTorch
    assert (tp.ones(2, dtype=tp.int64) + (-(2 ** 63))).tolist() == [-(2 ** 63) + 1] * 2
    assert (tp.ones(2, dtype=tp.float64) * (2 ** 64 - 1)).tolist() == [float(2 ** 64)] * 2
    assert (tp.ones(2, dtype=tp.uint8) + 300).tolist() == [45, 45]
