"""Tensor.view(dtype): the same bytes read as another dtype, on every backend, against NumPy's
ndarray.view (an independent reference for the values, shapes and strides) and PyTorch's rules
for element sizes that differ."""
import numpy as np
import pytest

import tensorplug as tp

BASE = (np.arange(24, dtype=np.float32).reshape(4, 6) - 7.25) * 3.5


@pytest.mark.parametrize("dtype", ["int32", "float64", "int16", "uint8", "int8", "float16", "int64"])
def test_contiguous_views_match_numpy(device, dtype):
    x = tp.tensor(BASE, device=device)
    view = x.view(getattr(tp, dtype))
    expected = BASE.view(dtype)
    assert view.shape == expected.shape
    assert view.stride() == tuple(s // expected.itemsize for s in expected.strides)
    np.testing.assert_array_equal(view.cpu().numpy(), expected)


def test_views_of_views_keep_offsets_and_strides(device):
    x = tp.tensor(BASE, device=device)
    part = x[1:, 2:]  # offset 8, row stride 6
    as_halves = part.view(tp.int16)
    expected = np.ascontiguousarray(BASE)[1:, 2:].view(np.int16)
    assert as_halves.shape == expected.shape and as_halves.storage_offset() == 16 and as_halves.stride() == (12, 1)
    np.testing.assert_array_equal(as_halves.cpu().numpy(), expected)
    np.testing.assert_array_equal(as_halves.view(tp.float32).cpu().numpy(), BASE[1:, 2:])
    # The same element size keeps any strides, a transposed tensor included.
    np.testing.assert_array_equal(x.t().view(tp.int32).cpu().numpy(), BASE.T.copy().view(np.int32))


def test_writes_through_a_view_reach_the_base(device):
    x = tp.tensor(BASE, device=device)
    bits = x.view(tp.int32)
    bits[0, 0] = 0
    bits[1] = bits[1] ^ -2**31  # flip the sign bits of row 1
    expected = BASE.copy()
    expected[0, 0] = 0.0
    expected[1] = -expected[1]
    np.testing.assert_array_equal(x.cpu().numpy(), expected)


def test_refusals_name_the_rule(device):
    x = tp.tensor(BASE, device=device)
    with pytest.raises(RuntimeError, match=r"self.stride\(-1\) must be 1 to view Float as Double \(different element sizes\), but got 6"):
        x.t().view(tp.float64)
    with pytest.raises(RuntimeError, match=r"self.size\(-1\) must be divisible by 2 to view Float as Double"):
        x[:, :5].view(tp.float64)
    with pytest.raises(RuntimeError, match=r"self.storage_offset\(\) must be divisible by 2"):
        x[:, 1:5].view(tp.float64)
    with pytest.raises(RuntimeError, match=r"self.dim\(\) cannot be 0 to view Float as Double"):
        x[0, 0].view(tp.float64)
    assert x[0, 0].view(tp.int32).shape == ()


def test_bytes_as_bool_are_refused(device):
    """PyTorch reads arbitrary bytes as bool; tensorplug's kernels assume 0 or 1, so it refuses."""
    with pytest.raises(RuntimeError, match="viewing float32 as bool is not supported"):
        tp.tensor(BASE, device=device).view(tp.bool)
    flags = tp.tensor([True, False, True, True], device=device)
    np.testing.assert_array_equal(flags.view(tp.uint8).cpu().numpy(), [1, 0, 1, 1])
    with pytest.raises(RuntimeError, match="viewing uint8 as bool"):
        flags.view(tp.uint8).view(tp.bool)


def test_the_result_is_not_differentiable():
    x = tp.ones(4, requires_grad=True)
    assert not x.view(tp.int32).requires_grad
    assert not x.view(tp.float32).requires_grad


def test_matches_torch_rules():
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference (pip install torch==2.13.0)")
    for index in [(slice(None), slice(None)), (slice(None), slice(1, None)), (slice(None), slice(2, None)), (slice(1, 3),)]:
        ours, theirs = tp.tensor(BASE)[index], torch.tensor(BASE)[index]
        for dtype in ("float64", "int16", "uint8", "int64", "bfloat16"):
            try:
                expected = theirs.view(getattr(torch, dtype))
            except RuntimeError as error:
                with pytest.raises(RuntimeError) as caught:
                    ours.view(getattr(tp, dtype))
                assert str(caught.value) == str(error)
                continue
            got = ours.view(getattr(tp, dtype))
            assert got.shape == tuple(expected.shape) and got.stride() == expected.stride()
            assert got.storage_offset() == expected.storage_offset()
            np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())
