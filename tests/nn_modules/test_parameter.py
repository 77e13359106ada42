"""Parameter: a Tensor that shares its data's storage, requires grad and pickles."""
import copy
import pickle

import numpy as np
import pytest

import tensorplug as tp

nn = tp.nn


def test_parameter_shares_storage_and_requires_grad():
    """Parameter(t) views t's storage; in-place changes through either are seen by both."""
    data = tp.zeros(2, 3)
    p = nn.Parameter(data)
    assert isinstance(p, tp.Tensor) and p.requires_grad and p.is_leaf and p.grad_fn is None
    data.add_(1)
    assert p.sum().item() == 6
    assert not nn.Parameter(tp.zeros(1), requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)


def test_parameter_works_as_a_tensor():
    """Ops, methods and autograd accept a Parameter; results are plain tensors."""
    p = nn.Parameter(tp.tensor([1.0, 2.0, 3.0]))
    out = (p * p).sum() + tp.matmul(p, p)
    assert type(out) is tp.Tensor
    out.backward()
    assert p.grad.tolist() == [4.0, 8.0, 12.0]
    assert p.detach().tolist() == [1.0, 2.0, 3.0] and type(p.data) is tp.Tensor


def test_data_setter_keeps_identity():
    """param.data = t swaps the values in place, keeping the object and requires_grad."""
    p = nn.Parameter(tp.zeros(2))
    p.data = tp.ones(3, dtype=tp.float64)
    assert p.shape == (3,) and p.dtype is tp.float64 and p.requires_grad


def test_repr():
    """repr is 'Parameter containing:' then the tensor, as torch."""
    assert repr(nn.Parameter(tp.tensor([1.0, 2.0]))) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"


def test_pickle_and_deepcopy():
    """Pickling and deepcopy give a Parameter with the same values and flag."""
    p = nn.Parameter(tp.tensor([1.5, -2.0]))
    for q in (pickle.loads(pickle.dumps(p)), copy.deepcopy(p)):
        assert type(q) is nn.Parameter and q.requires_grad and q.tolist() == [1.5, -2.0]
    frozen = pickle.loads(pickle.dumps(nn.Parameter(tp.zeros(1), requires_grad=False)))
    assert not frozen.requires_grad


def test_integer_parameter_must_not_require_grad():
    """An integer Parameter that requires grad is refused, as in torch."""
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(tp.zeros(2, dtype=tp.int64))
    assert nn.Parameter(tp.zeros(2, dtype=tp.int64), requires_grad=False).dtype is tp.int64


def test_torch_parity_of_in_place_update():
    """An SGD-style in-place update under no_grad matches torch's."""
    torch = pytest.importorskip("torch")
    values = np.random.randn(4).astype("float32")
    p, q = nn.Parameter(tp.tensor(values)), torch.nn.Parameter(torch.tensor(values))
    (p * p).sum().backward()
    (q * q).sum().backward()
    with tp.no_grad():
        p.sub_(0.1 * p.grad)
    with torch.no_grad():
        q.sub_(0.1 * q.grad)
    np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6)
