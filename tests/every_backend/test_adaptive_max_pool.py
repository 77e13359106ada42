"""F.adaptive_max_pool1d/2d and nn.AdaptiveMaxPool1d/2d (issue 13): values, indices and gradients on every backend."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F


def _reference(x, out_h, out_w):
    """Each window [floor(i*H/OH), ceil((i+1)*H/OH)) by a loop: maxima and their flat first index."""
    n, c, h, w = x.shape
    values, indices = np.zeros((n, c, out_h, out_w)), np.zeros((n, c, out_h, out_w), dtype=np.int64)
    for i in range(out_h):
        r0, r1 = i * h // out_h, -(-(i + 1) * h // out_h)
        for j in range(out_w):
            c0, c1 = j * w // out_w, -(-(j + 1) * w // out_w)
            window = x[:, :, r0:r1, c0:c1].reshape(n, c, -1)
            first = window.argmax(-1)
            values[:, :, i, j] = window.max(-1)
            indices[:, :, i, j] = (r0 + first // (c1 - c0)) * w + c0 + first % (c1 - c0)
    return values, indices


@pytest.mark.parametrize("shape, output_size", [((2, 3, 7, 5), (3, 2)), ((2, 3, 5, 9), 4), ((3, 6, 4), (None, 3)),
                                                ((1, 2, 4, 4), (6, 5))])
def test_2d_against_numpy(device, shape, output_size):
    """Values, indices and the gradient (1 at each window's first maximum, summed) match a NumPy loop."""
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x = tp.tensor(a, device=device, requires_grad=True)
    values, indices = F.adaptive_max_pool2d(x, output_size, return_indices=True)
    batched = a if a.ndim == 4 else a[None]
    sizes = output_size if isinstance(output_size, tuple) else (output_size, output_size)
    sizes = tuple(s if o is None else o for s, o in zip(batched.shape[2:], sizes))
    ref_values, ref_indices = _reference(batched, *sizes)
    if a.ndim == 3:
        ref_values, ref_indices = ref_values[0], ref_indices[0]
    np.testing.assert_array_equal(values.detach().cpu().numpy(), ref_values)
    np.testing.assert_array_equal(indices.cpu().numpy(), ref_indices)
    values.sum().backward()
    expected = np.zeros(a.reshape(-1, a.shape[-2] * a.shape[-1]).shape)
    for row, idx in zip(expected, ref_indices.reshape(expected.shape[0], -1)):
        np.add.at(row, idx, 1.0)
    np.testing.assert_array_equal(x.grad.cpu().numpy(), expected.reshape(a.shape))


def test_1d_and_modules(device):
    """The 1-d form pools the last dim; the modules call the functions with return_indices."""
    a = np.random.default_rng(1).standard_normal((2, 3, 10)).astype(np.float32)
    x = tp.tensor(a, device=device)
    values, indices = tp.nn.AdaptiveMaxPool1d(4, return_indices=True)(x)
    ref_values, ref_indices = _reference(a[:, :, None, :], 1, 4)
    np.testing.assert_array_equal(values.cpu().numpy(), ref_values[:, :, 0])
    np.testing.assert_array_equal(indices.cpu().numpy(), ref_indices[:, :, 0])
    np.testing.assert_array_equal(F.adaptive_max_pool1d(x[0], 4).cpu().numpy(), ref_values[0, :, 0])
    assert tp.nn.AdaptiveMaxPool2d((2, 3))(tp.zeros(1, 2, 5, 5, device=device)).shape == (1, 2, 2, 3)


def test_errors():
    """A wrong rank or a wrong number of output sizes raises RuntimeError."""
    with pytest.raises(RuntimeError, match="Expected 3D or 4D"):
        F.adaptive_max_pool2d(tp.zeros(4, 4), 2)
    with pytest.raises(RuntimeError, match="output_size must be 2 values"):
        F.adaptive_max_pool2d(tp.zeros(1, 4, 4), (1, 2, 3))
