"""Python numbers a dtype cannot hold (issue 15): fill_, full, where, setitem, tensor() and
randint accept and refuse exactly what PyTorch 2.13 does, so that kernels only ever see values
of the tensor's dtype. The reference is torch itself."""
import pytest

import tensorplug as tp

torch = pytest.importorskip("torch", reason="PyTorch is the reference for which values fit a dtype")

# (dtype, value): integers wrap into uint8 from -255 up; floats must lie in range before they
# are truncated; NaN and infinities fit only floating dtypes; anything fits bool.
FILLS = [("uint8", v) for v in (-1, -255, -256, 255, 256, 255.5, 255.0, -0.5, -1.0, -0.0, 2.7, float("inf"), float("nan"))] + \
        [("int8", v) for v in (127.5, -128.9, -129, 128, -128, 200.0)] + \
        [("int64", v) for v in (2 ** 63 - 1, -2 ** 63, 2 ** 63, 1e19)] + \
        [("bool", v) for v in (5, -1, 0.5, float("nan"))] + \
        [("float16", v) for v in (65504.0, 65519.0, 70000.0, float("inf"))]


def _outcome(run):
    try:
        return run().tolist()
    except (RuntimeError, ValueError, OverflowError) as exc:
        return type(exc).__name__


@pytest.mark.parametrize("dtype,value", FILLS, ids=lambda x: repr(x))
def test_fill_accepts_and_refuses_as_pytorch(dtype, value):
    """fill_ and full give PyTorch's values, or refuse where PyTorch does (RuntimeError)."""
    want = _outcome(lambda: torch.zeros(2, dtype=getattr(torch, dtype)).fill_(value))
    got = _outcome(lambda: tp.zeros(2, dtype=getattr(tp, dtype)).fill_(value))
    assert got == want
    assert _outcome(lambda: tp.full((2,), value, dtype=getattr(tp, dtype))) == want
    if want == "RuntimeError":
        with pytest.raises(RuntimeError, match=r"fill_\(\): .*(cannot be converted to type|cannot fill)"):
            tp.zeros(2, dtype=getattr(tp, dtype)).fill_(value)


@pytest.mark.parametrize("value", [-1, -200, -256, 300, 2.5, -0.5])
def test_where_masked_fill_and_setitem_wrap_like_fill(value):
    """The same rule for where, masked_fill, setitem, scatter_ and index_put_ of a number into
    uint8 (scatter_ and index_put_ once handed -1 to the kernel: npdev raised OverflowError)."""
    mask_t, mask = torch.tensor([True, False]), tp.tensor([True, False])
    for run_t, run in ((lambda: torch.where(mask_t, torch.zeros(2, dtype=torch.uint8), value),
                        lambda: tp.where(mask, tp.zeros(2, dtype=tp.uint8), value)),
                       (lambda: torch.zeros(2, dtype=torch.uint8).masked_fill(mask_t, value),
                        lambda: tp.zeros(2, dtype=tp.uint8).masked_fill(mask, value))):
        assert _outcome(run) == _outcome(run_t)
    x, x_t = tp.zeros(2, dtype=tp.uint8), torch.zeros(2, dtype=torch.uint8)
    assert _outcome(lambda: (x.__setitem__(0, value), x)[1]) == _outcome(lambda: (x_t.__setitem__(0, value), x_t)[1])
    index, index_t = tp.tensor([0]), torch.tensor([0])
    assert _outcome(lambda: (x.__setitem__(index, value), x)[1]) == _outcome(lambda: (x_t.__setitem__(index_t, value), x_t)[1])
    assert _outcome(lambda: tp.ones(2, dtype=tp.uint8).scatter_(0, index, value)) == \
        _outcome(lambda: torch.ones(2, dtype=torch.uint8).scatter_(0, index_t, value))
    assert _outcome(lambda: tp.ones(2, dtype=tp.uint8).scatter_(0, index, value, reduce="add")) == \
        _outcome(lambda: torch.ones(2, dtype=torch.uint8).scatter_(0, index_t, value, reduce="add"))


@pytest.mark.parametrize("data,dtype", [([-1, 7], "uint8"), ([256], "uint8"), ([-1.0], "uint8"), ([300.0], "uint8"),
                                        ([2 ** 40], "int32"), ([1e10], "int32"), ([-128, 127], "int8")])
def test_tensor_from_python_numbers(data, dtype):
    """tensor() checks Python numbers as PyTorch does: -1 wraps into uint8, 256 is refused."""
    assert _outcome(lambda: tp.tensor(data, dtype=getattr(tp, dtype))) == \
        _outcome(lambda: torch.tensor(data, dtype=getattr(torch, dtype)))


@pytest.mark.parametrize("low,high,dtype", [(0, 300, "uint8"), (-5, 5, "uint8"), (0, 256, "uint8"), (0, 256, "int8"),
                                            (0, 2 ** 31, "int32"), (0, 2 ** 31 + 1, "int32"), (-2 ** 31 - 1, 0, "int32"),
                                            (0, 2 ** 63, "int64"), (-2 ** 63 - 1, 0, "int64")])
def test_randint_bounds(low, high, dtype):
    """Bounds outside the dtype are refused (RuntimeError), bounds outside int64 too (ValueError)."""
    want = _outcome(lambda: torch.randint(low, high, (3,), dtype=getattr(torch, dtype)))
    got = _outcome(lambda: tp.randint(low, high, (3,), dtype=getattr(tp, dtype)))
    assert (got if isinstance(got, str) else "values") == (want if isinstance(want, str) else "values")

