"""tp.nn.utils: gradient clipping and parameter vectors."""
import math

import numpy as np
import pytest

import tensorplug as tp

utils = tp.nn.utils


def _with_grads(values):
    params = []
    for v in values:
        p = tp.nn.Parameter(tp.zeros(len(v)))
        p.grad = tp.tensor(v)
        params.append(p)
    return params


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    """clip_grad_norm_ returns the total norm and scales the gradients as torch does."""
    torch = pytest.importorskip("torch")
    values = [np.random.randn(5).astype("float32"), np.random.randn(3).astype("float32")]
    ours = _with_grads(values)
    theirs = [torch.nn.Parameter(torch.zeros(len(v))) for v in values]
    for p, v in zip(theirs, values):
        p.grad = torch.tensor(v)
    total = utils.clip_grad_norm_(ours, max_norm, norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert total.item() == pytest.approx(expected.item(), rel=1e-6)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6)


def test_clip_grad_norm_edge_cases():
    """No gradients gives 0; a non-finite norm raises only when asked."""
    assert utils.clip_grad_norm_([tp.nn.Parameter(tp.zeros(2))], 1.0).item() == 0.0
    params = _with_grads([[float("inf"), 1.0]])
    with pytest.raises(RuntimeError, match="non-finite"):
        utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    single = _with_grads([[3.0, 4.0]])[0]
    assert utils.clip_grad_norm_(single, 1.0).item() == pytest.approx(5.0)
    np.testing.assert_allclose(single.grad.numpy(), [0.6, 0.8], rtol=1e-5)


def test_clip_grad_value():
    """clip_grad_value_ clamps every gradient in place."""
    params = _with_grads([[-3.0, 0.5, 2.0]])
    utils.clip_grad_value_(params, 1.0)
    assert params[0].grad.tolist() == [-1.0, 0.5, 1.0]


def test_parameters_to_vector_round_trip():
    """parameters_to_vector concatenates; vector_to_parameters writes back in place."""
    model = tp.nn.Linear(3, 2)
    vec = utils.parameters_to_vector(model.parameters())
    assert vec.shape == (8,)
    utils.vector_to_parameters(tp.arange(8, dtype=tp.float32), model.parameters())
    assert model.weight.tolist() == [[0, 1, 2], [3, 4, 5]] and model.bias.tolist() == [6, 7]
    with pytest.raises(RuntimeError, match="expected a 1-D vector of 8 elements"):
        utils.vector_to_parameters(tp.zeros(7), model.parameters())
