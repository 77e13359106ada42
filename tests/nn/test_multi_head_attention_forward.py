"""F.multi_head_attention_forward (nn.MultiheadAttention's functional form) against PyTorch
2.13 for several argument combinations, gradients included (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F

torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here (pip install torch==2.13.0)")

E, HEADS, L, S, N = 8, 2, 3, 4, 2


def _params(rng, separate, bias, bias_kv, kdim=E, vdim=E):
    p = {"out_proj_weight": rng.normal(size=(E, E)), "out_proj_bias": rng.normal(size=E) if bias else None,
         "in_proj_bias": rng.normal(size=3 * E) if bias else None,
         "bias_k": rng.normal(size=(1, 1, E)) if bias_kv else None, "bias_v": rng.normal(size=(1, 1, E)) if bias_kv else None}
    if separate:
        p.update(q_proj_weight=rng.normal(size=(E, E)), k_proj_weight=rng.normal(size=(E, kdim)),
                 v_proj_weight=rng.normal(size=(E, vdim)), in_proj_weight=None)
    else:
        p["in_proj_weight"] = rng.normal(size=(3 * E, E)) * 0.3
    return p


def _run(module, arrays, params, **kwargs):
    """Call ``module``'s multi_head_attention_forward on float64 copies; returns (out, weights,
    grads of the query and in/q weights)."""
    q, k, v = (module.tensor(a, requires_grad=True) for a in arrays)
    tensors = {name: (module.tensor(value, requires_grad=True) if value is not None else None) for name, value in params.items()}
    functional = module.nn.functional
    separate = tensors["in_proj_weight"] is None
    out, weights = functional.multi_head_attention_forward(
        q, k, v, E, HEADS, tensors["in_proj_weight"], tensors["in_proj_bias"], tensors["bias_k"], tensors["bias_v"],
        kwargs.pop("add_zero_attn", False), 0.0, tensors["out_proj_weight"], tensors["out_proj_bias"],
        use_separate_proj_weight=separate, q_proj_weight=tensors.get("q_proj_weight"),
        k_proj_weight=tensors.get("k_proj_weight"), v_proj_weight=tensors.get("v_proj_weight"), **kwargs)
    out.sum().backward()
    weight = tensors["q_proj_weight"] if separate else tensors["in_proj_weight"]
    grads = [q.grad, weight.grad, tensors["out_proj_weight"].grad]
    return (out.detach().cpu().numpy(), None if weights is None else weights.detach().cpu().numpy(),
            [g.cpu().numpy() for g in grads])


@pytest.mark.parametrize("separate, bias, bias_kv, extra", [
    (False, True, False, {}),
    (False, False, False, {"need_weights": False}),
    (True, True, False, {"average_attn_weights": False}),
    (False, True, True, {"add_zero_attn": True}),
    (False, True, False, {"attn_mask": "bool", "key_padding_mask": "bool"}),
    (False, True, False, {"attn_mask": "float", "need_weights": False}),
])
@pytest.mark.parametrize("batched", [True, False])
def test_matches_torch(separate, bias, bias_kv, extra, batched):
    """Outputs, weights and gradients agree with PyTorch's functional form (float64)."""
    rng = np.random.default_rng(7)
    shape = (lambda length: (length, N, E)) if batched else (lambda length: (length, E))
    arrays = [rng.normal(size=shape(L)), rng.normal(size=shape(S)), rng.normal(size=shape(S))]
    params = _params(rng, separate, bias, bias_kv)
    results = []
    for module in (tp, torch):
        kwargs = dict(extra)
        if kwargs.get("attn_mask") == "bool":
            kwargs["attn_mask"] = module.tensor(np.triu(np.ones((L, S), dtype=bool), 2))
        elif kwargs.get("attn_mask") == "float":
            kwargs["attn_mask"] = module.tensor(np.random.default_rng(1).normal(size=(L, S)))
        if kwargs.get("key_padding_mask") == "bool":
            padding = np.zeros((N, S) if batched else (S,), dtype=bool)
            padding[..., -1] = True
            kwargs["key_padding_mask"] = module.tensor(padding)
        results.append(_run(module, arrays, params, **kwargs))
    (out, weights, grads), (t_out, t_weights, t_grads) = results
    np.testing.assert_allclose(out, t_out, rtol=1e-10, atol=1e-10)
    assert (weights is None) == (t_weights is None)
    if weights is not None:
        np.testing.assert_allclose(weights, t_weights, rtol=1e-10, atol=1e-12)
    for g, t in zip(grads, t_grads):
        np.testing.assert_allclose(g, t, rtol=1e-9, atol=1e-10)


def test_same_as_the_module():
    """The functional form with a module's parameters gives the module's result."""
    mha = tp.nn.MultiheadAttention(E, HEADS)
    x = tp.randn(L, N, E)
    expected, expected_weights = mha(x, x, x)
    got, weights = F.multi_head_attention_forward(x, x, x, E, HEADS, mha.in_proj_weight, mha.in_proj_bias, None, None,
                                                  False, 0.0, mha.out_proj.weight, mha.out_proj.bias, training=False)
    assert tp.allclose(got, expected) and tp.allclose(weights, expected_weights)


def test_errors():
    """A wrong embedding size is refused as PyTorch refuses it; static_k is not supported."""
    x = tp.randn(L, N, E)
    w, b = tp.randn(3 * E, E), tp.zeros(3 * E)
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 6, but got 8"):
        F.multi_head_attention_forward(x, x, x, 6, HEADS, w, b, None, None, False, 0.0, tp.randn(E, E), None)
    with pytest.raises(NotImplementedError, match="static_k"):
        F.multi_head_attention_forward(x, x, x, E, HEADS, w, b, None, None, False, 0.0, tp.randn(E, E), None,
                                       static_k=tp.randn(N * HEADS, S, E // HEADS))
