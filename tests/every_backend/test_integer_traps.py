"""Integer operations that trap in C on some inputs (INT_MIN / -1, INT_MIN % -1, shifts by the
bit width or more, negative shifts, division by zero) give PyTorch's wrapped values or a Python
exception, never a signal, on every backend (issue 16). References are Python integers wrapped
to the dtype's width."""
import pytest

import tensorplug as tp

WIDTHS = {"int64": 64, "int32": 32, "int16": 16, "int8": 8}


def _wrap(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def _host(t):
    return t.cpu().tolist()


@pytest.mark.parametrize("dtype", sorted(WIDTHS))
def test_minimum_divided_by_minus_one(device, dtype):
    """INT_MIN // -1 wraps to INT_MIN (x86 raises SIGFPE for the C expression); % and fmod give 0."""
    bits = WIDTHS[dtype]
    low = -(1 << (bits - 1))
    d = getattr(tp, dtype)
    a = tp.tensor([low, 7, -7], dtype=d, device=device)
    minus_one = tp.full((3,), -1, dtype=d, device=device)
    assert _host(a // minus_one) == [_wrap(x // -1, bits) for x in (low, 7, -7)]
    assert _host(a % minus_one) == [0, 0, 0]
    assert _host(tp.fmod(a, minus_one)) == [0, 0, 0]
    assert _host(-a) == [_wrap(-x, bits) for x in (low, 7, -7)]
    assert _host(a.abs()) == [_wrap(abs(x), bits) for x in (low, 7, -7)]


@pytest.mark.parametrize("dtype", sorted(WIDTHS))
def test_shifts_by_the_width_or_more_and_by_negative_amounts(device, dtype):
    """x << s and x >> s for s >= width give 0 (or -1 for a negative x shifted right); a negative
    shift gives 0, as in PyTorch; ordinary shifts wrap to the width."""
    bits = WIDTHS[dtype]
    d = getattr(tp, dtype)
    a = tp.tensor([-(1 << (bits - 1)), 5, -7], dtype=d, device=device)
    big = tp.tensor([bits, bits + 6, 3], dtype=d, device=device)
    assert _host(a << big) == [0, 0, _wrap(-7 << 3, bits)]
    assert _host(a >> big) == [-1, 0, -7 >> 3]
    negative = tp.tensor([-1, -(bits + 6), 1], dtype=d, device=device)
    assert _host(a << negative) == [0, 0, _wrap(-7 << 1, bits)]


@pytest.mark.parametrize("dtype", sorted(WIDTHS) + ["uint8"])
def test_integer_division_by_zero_raises(device, dtype):
    """A zero tensor divisor raises ZeroDivisionError (at the next synchronization on asynchronous
    devices); the process and the device keep working."""
    d = getattr(tp, dtype)
    a = tp.tensor([4, 5, 6], dtype=d, device=device)
    zero = tp.tensor([1, 0, 1], dtype=d, device=device)
    for op in (lambda: a // zero, lambda: a % zero, lambda: tp.fmod(a, zero)):
        with pytest.raises(ZeroDivisionError):
            _host(op())
    with pytest.raises(ZeroDivisionError):
        _host(a // 0)
    assert _host(a + 1) == [5, 6, 7]


def test_uint8_wraps_like_pytorch(device):
    """uint8 negation and subtraction below zero wrap modulo 256."""
    a = tp.tensor([0, 7, 249], dtype=tp.uint8, device=device)
    assert _host(-a) == [0, 249, 7]
    assert _host(a - 8) == [248, 255, 241]


@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod"])
def test_empty_integer_division_by_zero_number_is_empty(device, op):
    """An empty tensor divided by the number 0 (or by a number that wraps to 0 in its dtype) is
    empty, as in PyTorch: nothing is divided, so nothing raises."""
    empty = tp.zeros(0, 3, dtype=tp.int16, device=device)
    for divisor in (0, 2**40):
        assert getattr(tp, op)(empty, divisor).shape == (0, 3)
