"""Module backward hooks (register_full_backward_hook, register_full_backward_pre_hook, the
deprecated register_backward_hook and the global ones) against PyTorch 2.13 (issue 13)."""
import warnings

import numpy as np
import pytest

import tensorplug as tp
tp_module = tp.nn.modules.module  # PyTorch's path: torch.nn.modules.module

torch = pytest.importorskip("torch", reason="PyTorch is the reference; CI has none")

FIRING_WITHOUT_INPUT_GRAD = "Full backward hook is firing when gradients are computed with respect to module outputs"


def _shapes(grads):
    return [None if g is None else tuple(g.shape) for g in grads]


def _values(grads):
    return [None if g is None else np.asarray(g.detach().tolist()) for g in grads]


def _run_both(build, run):
    """Run ``run(lib, module, record)`` in both libraries on the same weights; return the records."""
    records = {}
    for lib in (torch, tp):
        module = build(lib)
        record = []
        run(lib, module, record)
        records[lib.__name__] = record
    return records["torch"], records["tensorplug"]


def _linear(lib, values=None):
    layer = lib.nn.Linear(3, 2)
    w = np.arange(6.0).reshape(2, 3) / 5 - 0.4 if values is None else values
    with torch.no_grad(), tp.no_grad():
        layer.weight.copy_(lib.tensor(w, dtype=lib.float32))
        layer.bias.copy_(lib.tensor([0.1, -0.2], dtype=lib.float32))
    return layer


X = (np.arange(12.0).reshape(4, 3) / 7 - 0.6).tolist()


def _assert_same(theirs, ours):
    assert len(theirs) == len(ours)
    for a, b in zip(theirs, ours):
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
        elif isinstance(a, (list, tuple)):
            _assert_same(a, b)
        else:
            assert a == b


def test_hook_order_and_arguments():
    """Pre hooks run before hooks, prepend puts a hook first, and each sees PyTorch's gradients."""

    def run(lib, layer, record):
        layer.register_full_backward_hook(lambda m, gi, go: record.append(("h1", m is layer, _values(gi), _values(go))))
        layer.register_full_backward_hook(lambda m, gi, go: record.append(("h0", _shapes(gi))), prepend=True)
        layer.register_full_backward_pre_hook(lambda m, go: record.append(("p1", _values(go))))
        layer.register_full_backward_pre_hook(lambda m, go: record.append(("p0",)), prepend=True)
        x = lib.tensor(X, requires_grad=True)
        (layer(x) ** 2).sum().backward()

    theirs, ours = _run_both(_linear, run)
    assert [r[0] for r in ours] == ["p0", "p1", "h0", "h1"]
    _assert_same(theirs, ours)


def test_returned_grad_input_and_grad_output_replace_gradients():
    """A hook's returned grad_input becomes the input's gradient; a pre hook's returned
    grad_output is what the module's backward receives (parameters' gradients change)."""

    def run(lib, layer, record):
        layer.register_full_backward_hook(lambda m, gi, go: (gi[0] * 10,))
        layer.register_full_backward_pre_hook(lambda m, go: (go[0] * 3,))
        x = lib.tensor(X, requires_grad=True)
        layer(x).sum().backward()
        record.extend([np.asarray(x.grad.tolist()), np.asarray(layer.weight.grad.tolist())])

    theirs, ours = _run_both(_linear, run)
    _assert_same(theirs, ours)


def test_removed_hooks_do_not_run():
    """handle.remove() unregisters a hook; a context-managed handle is removed on exit."""
    layer = tp.nn.Linear(3, 2)
    calls = []
    handle = layer.register_full_backward_hook(lambda m, gi, go: calls.append("h"))
    with layer.register_full_backward_pre_hook(lambda m, go: calls.append("p")):
        layer(tp.ones(1, 3, requires_grad=True)).sum().backward()
    handle.remove()
    layer(tp.ones(1, 3, requires_grad=True)).sum().backward()
    assert calls == ["p", "h"]
    assert not layer._backward_hooks and not layer._backward_pre_hooks


def test_inputs_without_grad_fire_with_none_grad_input():
    """With no input requiring grad the hook runs once grad_output is known, grad_input all None,
    with PyTorch's warning; returning gradients then is an error."""

    def run(lib, layer, record):
        layer.register_full_backward_hook(lambda m, gi, go: record.append((_shapes(gi), _values(go))))
        with pytest.warns(UserWarning, match=FIRING_WITHOUT_INPUT_GRAD):
            layer(lib.tensor(X)).sum().backward()

    theirs, ours = _run_both(_linear, run)
    assert ours[0][0] == [None]
    _assert_same(theirs, ours)
    layer = tp.nn.Linear(3, 2)
    layer.register_full_backward_hook(lambda m, gi, go: (tp.ones(4, 3),))
    with pytest.warns(UserWarning, match=FIRING_WITHOUT_INPUT_GRAD):
        with pytest.raises(RuntimeError, match="should always return None or None for all gradients"):
            layer(tp.tensor(X)).sum().backward()


class _TwoInTwoOut:
    """forward(a, k, c) -> (a * k, c * 3): a non-tensor argument and a tuple output."""

    @staticmethod
    def build(lib):
        class Module(lib.nn.Module):
            def forward(self, a, k, c):
                return a * k, c * 3

        return Module()


@pytest.mark.parametrize("used", [0, 1])
def test_tuple_outputs_and_non_tensor_arguments(used):
    """Non-tensor arguments give None; an output the loss does not use has grad_output None; an
    input reached by no used output gets zeros (PyTorch's materialized gradient)."""

    def run(lib, module, record):
        module.register_full_backward_hook(lambda m, gi, go: record.append((_values(gi), _values(go))))
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        c = lib.tensor([3.0], requires_grad=True)
        module(a, 2.0, c)[used].sum().backward()

    theirs, ours = _run_both(_TwoInTwoOut.build, run)
    _assert_same(theirs, ours)


def test_wrong_number_of_gradients_raises():
    """A hook or pre hook returning a tuple of the wrong length raises PyTorch's error."""
    layer = tp.nn.Linear(3, 2)
    layer.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_input, got 2, but expected 1"):
        layer(tp.ones(1, 3, requires_grad=True)).sum().backward()
    layer = tp.nn.Linear(3, 2)
    layer.register_full_backward_pre_hook(lambda m, go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_output, got 2, but expected 1"):
        layer(tp.ones(1, 3, requires_grad=True)).sum().backward()


def test_in_place_on_hooked_output_or_input_raises():
    """Modifying a hooked module's output in place, or its input inside forward (ReLU(inplace)),
    raises PyTorch's error instead of bypassing the hook."""
    layer = tp.nn.Linear(3, 2)
    layer.register_full_backward_hook(lambda *args: None)
    out = layer(tp.ones(1, 3, requires_grad=True))
    with pytest.raises(RuntimeError, match="Output 0 of BackwardHookFunction is a view and is being modified inplace"):
        out.relu_()
    model = tp.nn.Sequential(tp.nn.Linear(3, 3), tp.nn.ReLU(inplace=True))
    model[1].register_full_backward_hook(lambda *args: None)
    with pytest.raises(RuntimeError, match="Output 0 of BackwardHookFunction"):
        model(tp.ones(2, 3, requires_grad=True))


def test_grad_fn_names_pytorchs_node_and_no_grad_skips():
    """A hooked module's output comes from BackwardHookFunctionBackward; under no_grad nothing is recorded."""
    layer = tp.nn.Linear(3, 2)
    layer.register_full_backward_hook(lambda *args: None)
    x = tp.ones(1, 3, requires_grad=True)
    assert layer(x).grad_fn.name() == "BackwardHookFunctionBackward"
    with tp.no_grad():
        assert not layer(x).requires_grad


def test_full_and_deprecated_hooks_do_not_mix():
    """A module takes full hooks or deprecated ones, not both (PyTorch's error)."""
    layer = tp.nn.Linear(3, 2)
    layer.register_backward_hook(lambda *args: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        layer.register_full_backward_hook(lambda *args: None)


def test_deprecated_hook_on_single_op_module():
    """register_backward_hook on a one-op module (ReLU) sees that op's gradients, as PyTorch."""

    def run(lib, module, record):
        module.register_backward_hook(lambda m, gi, go: record.append((_values(gi), _values(go))))
        x = lib.tensor([[-1.0, 2.0, 3.0]], requires_grad=True)
        y = x * 2
        (module(y) * lib.tensor([[1.0, 2.0, 3.0]])).sum().backward()

    theirs, ours = _run_both(lambda lib: lib.nn.ReLU(), run)
    _assert_same(theirs, ours)


def test_deprecated_hook_warns_for_multi_node_forward():
    """As PyTorch, a deprecated hook on a module of several nodes warns that grad_input may miss entries."""
    model = tp.nn.Sequential(tp.nn.Linear(3, 3), tp.nn.Tanh())
    model.register_backward_hook(lambda *args: None)
    with pytest.warns(FutureWarning, match="forward contains multiple autograd Nodes"):
        model(tp.ones(1, 3, requires_grad=True)).sum().backward()


def test_global_full_backward_hook_runs_for_every_module():
    """register_module_full_backward_hook applies to every module call, before a module's own hooks."""
    calls = []
    model = tp.nn.Sequential(tp.nn.Linear(3, 3), tp.nn.Tanh())
    model[1].register_full_backward_hook(lambda m, gi, go: calls.append("own"))
    handle = tp_module.register_module_full_backward_hook(lambda m, gi, go: calls.append(type(m).__name__))
    try:
        model(tp.ones(1, 3, requires_grad=True)).sum().backward()
    finally:
        handle.remove()
    assert calls == ["Tanh", "own", "Linear", "Sequential"]  # PyTorch's order
    calls.clear()
    model(tp.ones(1, 3, requires_grad=True)).sum().backward()
    assert calls == ["own"]


def test_grad_cam_capture_matches_pytorch():
    """Grad-CAM: a forward hook keeps a conv layer's activations, a full backward hook its output
    gradients; the class-activation map computed from both matches PyTorch's."""
    rng = np.random.default_rng(0)
    weights = {
        "conv": rng.standard_normal((4, 3, 3, 3)) * 0.3, "conv_b": rng.standard_normal(4) * 0.1,
        "fc": rng.standard_normal((5, 4)) * 0.5, "fc_b": rng.standard_normal(5) * 0.1,
    }
    image = rng.standard_normal((2, 3, 8, 8))

    def build(lib):
        model = lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3, padding=1), lib.nn.ReLU(), lib.nn.AdaptiveAvgPool2d(1),
                                  lib.nn.Flatten(), lib.nn.Linear(4, 5))
        with torch.no_grad(), tp.no_grad():
            model[0].weight.copy_(lib.tensor(weights["conv"], dtype=lib.float32))
            model[0].bias.copy_(lib.tensor(weights["conv_b"], dtype=lib.float32))
            model[4].weight.copy_(lib.tensor(weights["fc"], dtype=lib.float32))
            model[4].bias.copy_(lib.tensor(weights["fc_b"], dtype=lib.float32))
        return model

    def run(lib, model, record):
        captured = {}
        model[0].register_forward_hook(lambda m, args, out: captured.__setitem__("act", out.detach()))
        model[0].register_full_backward_hook(lambda m, gi, go: captured.__setitem__("grad", go[0].detach()))
        scores = model(lib.tensor(image, dtype=lib.float32))
        with pytest.warns(UserWarning, match=FIRING_WITHOUT_INPUT_GRAD):  # the image needs no gradient
            scores[:, 3].sum().backward()
        alpha = captured["grad"].mean(dim=(2, 3), keepdim=True)
        cam = (alpha * captured["act"]).sum(dim=1).relu()
        record.extend([np.asarray(captured["grad"].tolist()), np.asarray(cam.tolist())])

    theirs, ours = _run_both(build, run)
    _assert_same(theirs, ours)


def test_no_hooks_call_is_unchanged():
    """Without hooks a module's output is forward's own result (no identity node)."""
    layer = tp.nn.Linear(3, 2)
    out = layer(tp.ones(1, 3, requires_grad=True))
    assert out.grad_fn.name() != "BackwardHookFunctionBackward"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out.sum().backward()
