"""tp.func (torch.func's API): grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap and
functional_call against PyTorch 2.13 and loops, including per-sample gradients."""
import importlib.util

import numpy as np
import pytest

import tensorplug as tp
import tensorplug.func as tf
from autograd_reference import as_numpy, torch_module

RNG = np.random.default_rng(21)

# torch.func's forward-mode transforms script a helper on first use, and torch 2.13 warns that
# torch.jit.script is deprecated: PyTorch's own warning, not this code's.
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


# cpu and one other backend (tests/conftest.py's fixture, narrowed): OpenCL compiles each kernel
# on first use, seconds per test, and these tests exercise the transforms, not the kernels.
@pytest.fixture(params=["cpu", pytest.param("npdev", marks=pytest.mark.skipif(
    importlib.util.find_spec("tensorplug_npdev") is None, reason="the example plugin tensorplug-npdev is not installed"))])
def device(request):
    return request.param


def test_func_is_a_submodule_and_an_attribute():
    """import tensorplug.func and tp.func name the same module."""
    assert tp.func is tf and callable(tf.vmap)


def test_top_level_vmap_is_func_vmap():
    """PyTorch 2.13's torch.vmap is torch.func.vmap (scripts call it by either name)."""
    torch = torch_module()
    assert torch.vmap is torch.func.vmap
    assert tp.vmap is tf.vmap
    a = RNG.uniform(-1, 1, (3, 4))
    ours = tp.vmap(lambda row: (row * row).sum())(tp.tensor(a))
    theirs = torch.vmap(lambda row: (row * row).sum())(torch.tensor(a))
    np.testing.assert_allclose(as_numpy(ours), theirs.numpy(), rtol=1e-12)


def test_grad_argnums_and_aux_match_pytorch():
    """grad over an int or a tuple of argnums, dicts of tensors as arguments, has_aux."""
    torch = torch_module()
    x, w = RNG.uniform(-1, 1, 3), {"a": RNG.uniform(-1, 1, 3), "b": RNG.uniform(-1, 1, ())}

    def loss(lib):
        return lambda p, v: ((lib.tanh(p["a"] * v) + p["b"]) ** 2).sum()

    ours = tf.grad(loss(tp), argnums=(0, 1))({k: tp.tensor(a) for k, a in w.items()}, tp.tensor(x))
    ref = torch.func.grad(loss(torch), argnums=(0, 1))({k: torch.tensor(a) for k, a in w.items()}, torch.tensor(x))
    assert isinstance(ours, tuple) and set(ours[0]) == {"a", "b"}
    for key in ("a", "b"):
        np.testing.assert_allclose(as_numpy(ours[0][key]), ref[0][key].numpy(), atol=1e-12)
    np.testing.assert_allclose(as_numpy(ours[1]), ref[1].numpy(), atol=1e-12)
    g, (value, aux) = tf.grad_and_value(lambda v: ((v ** 2).sum(), v * 3), has_aux=True)(tp.tensor(x))
    np.testing.assert_allclose(as_numpy(g), 2 * x)
    assert value.item() == pytest.approx((x ** 2).sum()) and not g.requires_grad and not value.requires_grad
    np.testing.assert_allclose(as_numpy(aux), 3 * x)


def test_grad_errors_follow_pytorch():
    """Non-scalar outputs, bad argnums and a malformed aux raise PyTorch's errors."""
    x = tp.ones(2)
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor, got tensor with 1 dims"):
        tf.grad(lambda t: t * 2)(x)
    with pytest.raises(RuntimeError, match="Got argnum=2, but only 1 positional inputs"):
        tf.grad(lambda t: t.sum(), argnums=2)(x)
    with pytest.raises(RuntimeError, match="argnums must be non-empty"):
        tf.grad(lambda t: t.sum(), argnums=())(x)
    with pytest.raises(RuntimeError, match="should be a tuple: \\(output, aux\\)"):
        tf.grad(lambda t: t.sum(), has_aux=True)(x)


def test_grad_composes_with_autograd_and_itself():
    """grad of an input that requires grad stays differentiable; grad(grad(f)) is the second derivative."""
    x = tp.tensor(0.7, requires_grad=True)
    g = tf.grad(lambda t: t ** 4)(x)
    (gg,) = tp.autograd.grad(g, x)
    assert gg.item() == pytest.approx(12 * 0.7 ** 2)
    assert tf.grad(tf.grad(lambda t: t ** 4))(tp.tensor(0.7)).item() == pytest.approx(12 * 0.7 ** 2)


def test_vjp_and_jvp_match_pytorch():
    """vjp's function returns one gradient per primal (a tuple); jvp gives J @ tangents."""
    torch = torch_module()
    x, y, ct, t1, t2 = (RNG.uniform(-1, 1, 3) for _ in range(5))

    def fn(lib):
        return lambda a, b: {"p": a * b, "q": lib.sin(a)}

    out, vjp_fn = tf.vjp(fn(tp), tp.tensor(x), tp.tensor(y))
    r_out, r_vjp_fn = torch.func.vjp(fn(torch), torch.tensor(x), torch.tensor(y))
    ours = vjp_fn({"p": tp.tensor(ct), "q": tp.tensor(ct)})
    ref = r_vjp_fn({"p": torch.tensor(ct), "q": torch.tensor(ct)})
    assert isinstance(ours, tuple) and len(ours) == 2
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(as_numpy(a), b.numpy(), atol=1e-12)
    again = vjp_fn({"p": tp.tensor(ct), "q": tp.tensor(ct)})
    np.testing.assert_allclose(as_numpy(again[0]), as_numpy(ours[0]))
    with pytest.raises(RuntimeError, match="pytree structure of cotangents"):
        vjp_fn(tp.tensor(ct))
    out, jv = tf.jvp(fn(tp), (tp.tensor(x), tp.tensor(y)), (tp.tensor(t1), tp.tensor(t2)))
    r_out, r_jv = torch.func.jvp(fn(torch), (torch.tensor(x), torch.tensor(y)), (torch.tensor(t1), torch.tensor(t2)))
    for key in ("p", "q"):
        np.testing.assert_allclose(as_numpy(jv[key]), r_jv[key].numpy(), atol=1e-12)
        np.testing.assert_allclose(as_numpy(out[key]), r_out[key].numpy(), atol=1e-12)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        tf.jvp(tp.sin, tp.tensor(x), (tp.tensor(t1),))


def test_jacrev_jacfwd_and_hessian_match_pytorch():
    """Jacobians over two argnums with a tuple output; hessian and jacrev(jacrev(f)) agree with PyTorch."""
    torch = torch_module()
    x, y = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 2)

    def fn(lib):
        return lambda a, b: (lib.sin(a) * b.sum(), (a ** 2).sum() * b)

    for ours_t, ref_t in ((tf.jacrev, torch.func.jacrev), (tf.jacfwd, torch.func.jacfwd)):
        ours = ours_t(fn(tp), argnums=(0, 1))(tp.tensor(x), tp.tensor(y))
        ref = ref_t(fn(torch), argnums=(0, 1))(torch.tensor(x), torch.tensor(y))
        for row_ours, row_ref in zip(ours, ref):
            for a, b in zip(row_ours, row_ref):
                assert tuple(a.shape) == tuple(b.shape)
                np.testing.assert_allclose(as_numpy(a), b.numpy(), atol=1e-12)

    def scalar(lib):
        return lambda a: (a ** 3).sum() * lib.cos(a).sum()

    ref = torch.func.hessian(scalar(torch))(torch.tensor(x)).numpy()
    np.testing.assert_allclose(as_numpy(tf.hessian(scalar(tp))(tp.tensor(x))), ref, atol=1e-12)
    np.testing.assert_allclose(as_numpy(tf.jacrev(tf.jacrev(scalar(tp)))(tp.tensor(x))), ref, atol=1e-12)


def test_vmap_in_dims_out_dims_and_pytrees():
    """in_dims per argument (None, negative, nested), out_dims, dict outputs: as a loop would give."""
    a, b = RNG.uniform(-1, 1, (2, 4)), RNG.uniform(-1, 1, (4, 3))

    def fn(pair, scale):
        x, y = pair
        return {"outer": x[:, None] * y[None, :] * scale, "sum": (x.sum() + y.sum()) * scale}

    out = tf.vmap(fn, in_dims=((1, 0), None), out_dims={"outer": 2, "sum": 0})((tp.tensor(a), tp.tensor(b)), tp.tensor(2.0))
    assert tuple(out["outer"].shape) == (2, 3, 4) and tuple(out["sum"].shape) == (4,)
    for i in range(4):
        np.testing.assert_allclose(as_numpy(out["outer"][:, :, i]), np.outer(a[:, i], b[i]) * 2)
        assert out["sum"][i].item() == pytest.approx((a[:, i].sum() + b[i].sum()) * 2)
    neg = tf.vmap(lambda t: t * 2, in_dims=-1, out_dims=-1)(tp.tensor(a))
    np.testing.assert_allclose(as_numpy(neg), a * 2)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        tf.vmap(tp.add)(tp.ones(2), tp.ones(3))
    with pytest.raises(ValueError, match="must only return Tensors"):
        tf.vmap(lambda t: 1.0)(tp.ones(2))
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        tf.vmap(tp.sin, randomness="sometimes")


def test_vmap_randomness_same_repeats_the_numbers():
    """randomness='same' gives every element the same random draw; 'different' does not."""
    same = tf.vmap(lambda t: t + tp.rand(3), randomness="same")(tp.zeros(2, 3))
    np.testing.assert_array_equal(as_numpy(same[0]), as_numpy(same[1]))
    different = tf.vmap(lambda t: t + tp.rand(3), randomness="different")(tp.zeros(2, 3))
    assert not np.array_equal(as_numpy(different[0]), as_numpy(different[1]))


def mlp_with_batchnorm(device):
    tp.manual_seed(3)
    return tp.nn.Sequential(tp.nn.Linear(3, 4), tp.nn.BatchNorm1d(4), tp.nn.Tanh(), tp.nn.Linear(4, 2)).to(device)


def test_functional_call_swaps_and_restores(device):
    """The call sees the given tensors; the module's own are back afterwards, also after an exception;
    BatchNorm's running statistics update the given buffers, not the module's."""
    model = mlp_with_batchnorm(device)
    originals = {k: v.detach().clone() for k, v in model.state_dict().items()}
    params = {k: (v.detach() * 0.5) for k, v in model.named_parameters()}
    buffers = {k: v.detach().clone() for k, v in model.named_buffers()}
    x = tp.tensor(RNG.uniform(-1, 1, (5, 3)), dtype=tp.float32, device=device)
    out = tf.functional_call(model, (params, buffers), (x,))
    h = x @ params["0.weight"].T + params["0.bias"]
    mean, var = h.mean(0), h.var(0, unbiased=False)
    h = tp.tanh((h - mean) / tp.sqrt(var + 1e-5) * params["1.weight"] + params["1.bias"])
    expected = h @ params["3.weight"].T + params["3.bias"]
    np.testing.assert_allclose(out.detach().cpu().numpy(), expected.cpu().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(buffers["1.running_mean"].cpu().numpy(), 0.1 * mean.cpu().numpy(), rtol=1e-4, atol=1e-6)
    assert buffers["1.num_batches_tracked"].item() == 1
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v.cpu().numpy(), originals[k].cpu().numpy())
    with pytest.raises(RuntimeError):
        tf.functional_call(model, params, (tp.ones(5, 7, device=device),))
    assert model[0].weight is dict(model.named_parameters())["0.weight"] and model[0].weight.requires_grad


def test_functional_call_strict_tied_and_duplicate_keys():
    """strict lists missing and unexpected keys; a tied weight follows its given twin; keys in two dicts are refused."""
    model = tp.nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'extra'.\n\tMissing key\\(s\\): 'bias'."):
        tf.functional_call(model, {"weight": tp.ones(2, 2), "extra": tp.ones(1)}, tp.ones(1, 2), strict=True)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        tf.functional_call(model, ({"bias": tp.ones(2)}, {"bias": tp.ones(2)}), tp.ones(1, 2))

    class Tied(tp.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = tp.nn.Linear(2, 2, bias=False)
            self.b = tp.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    tied = Tied()
    out = tf.functional_call(tied, {"a.weight": tp.eye(2) * 2}, tp.ones(1, 2))
    assert as_numpy(out).tolist() == [[4.0, 4.0]]
    untied = tf.functional_call(tied, {"a.weight": tp.eye(2) * 2}, tp.ones(1, 2), tie_weights=False)
    expected = as_numpy(tied.b(tp.ones(1, 2) * 2))
    np.testing.assert_allclose(as_numpy(untied), expected)
    with pytest.raises(ValueError, match="which are tied"):
        tf.functional_call(tied, {"a.weight": tp.eye(2), "b.weight": tp.eye(2) * 3}, tp.ones(1, 2))


def test_per_sample_gradients_match_a_loop(device):
    """vmap(grad(loss through functional_call)) gives each sample's gradient, as one backward per sample does."""
    tp.manual_seed(5)
    model = tp.nn.Sequential(tp.nn.Linear(3, 4), tp.nn.ReLU(), tp.nn.Linear(4, 2)).to(device)
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = tp.tensor(RNG.uniform(-1, 1, (4, 3)), dtype=tp.float32, device=device)
    y = tp.tensor([0, 1, 1, 0], device=device)

    def loss(p, xi, yi):
        logits = tf.functional_call(model, p, (xi.unsqueeze(0),))
        return tp.nn.functional.cross_entropy(logits, yi.unsqueeze(0))

    per_sample = tf.vmap(tf.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for i in range(4):
        model.zero_grad()
        tp.nn.functional.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()
        for name, p in model.named_parameters():
            assert tuple(per_sample[name].shape) == (4,) + tuple(p.shape)
            np.testing.assert_allclose(per_sample[name][i].cpu().numpy(), p.grad.cpu().numpy(), rtol=1e-5, atol=1e-6)


def test_per_sample_gradients_match_pytorch():
    """The canonical torch.func example gives PyTorch's per-sample gradients."""
    torch = torch_module()
    w1, b1 = RNG.uniform(-1, 1, (3, 2)), RNG.uniform(-1, 1, 3)
    x, y = RNG.uniform(-1, 1, (4, 2)), RNG.uniform(-1, 1, (4, 3))

    def run(lib, func):
        model = lib.nn.Linear(2, 3).double()
        params = {"weight": lib.tensor(w1), "bias": lib.tensor(b1)}

        def loss(p, xi, yi):
            return ((func.functional_call(model, p, (xi,)) - yi) ** 2).mean()

        return func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, lib.tensor(x), lib.tensor(y))

    ours, ref = run(tp, tf), run(torch, torch.func)
    for key in ("weight", "bias"):
        np.testing.assert_allclose(as_numpy(ours[key]), ref[key].numpy(), atol=1e-12)
