"""tp.nn.DataParallel on one device (PyTorch's identity wrapper)."""
import numpy as np
import pytest

import tensorplug as tp


def test_wraps_and_passes_forward_through():
    model = tp.nn.Sequential(tp.nn.Linear(3, 4), tp.nn.ReLU(), tp.nn.Linear(4, 2))
    wrapped = tp.nn.DataParallel(model)
    assert wrapped.module is model and tp.nn.parallel.DataParallel is tp.nn.DataParallel
    x = tp.randn(5, 3)
    np.testing.assert_array_equal(wrapped(x).detach().numpy(), model(x).detach().numpy())
    assert list(wrapped.state_dict()) == ["module." + k for k in model.state_dict()]
    assert [n for n, _ in wrapped.named_parameters()] == ["module." + n for n, _ in model.named_parameters()]
    wrapped(x).sum().backward()
    assert model[0].weight.grad is not None
    fresh = tp.nn.DataParallel(tp.nn.Sequential(tp.nn.Linear(3, 4), tp.nn.ReLU(), tp.nn.Linear(4, 2)))
    fresh.load_state_dict(wrapped.state_dict())
    np.testing.assert_array_equal(fresh(x).detach().numpy(), model(x).detach().numpy())
    model.load_state_dict({k.removeprefix("module."): v for k, v in wrapped.state_dict().items()})
    assert tp.nn.parallel.data_parallel(model, x).shape == (5, 2)


def test_keyword_inputs_and_train_mode():
    class TwoInputs(tp.nn.Module):
        def forward(self, a, *, b):
            return a + b

    wrapped = tp.nn.DataParallel(TwoInputs())
    assert wrapped(tp.ones(2), b=tp.ones(2)).tolist() == [2.0, 2.0]
    wrapped.eval()
    assert not wrapped.module.training


def test_state_dict_keys_match_torch():
    try:
        import torch
    except ImportError:
        pytest.skip("PyTorch is not installed")
    ours = tp.nn.DataParallel(tp.nn.Sequential(tp.nn.Linear(3, 4), tp.nn.BatchNorm1d(4)))
    theirs = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4)))
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_several_devices_refused(monkeypatch):
    monkeypatch.delenv("TENSORPLUG_ACCELERATOR", raising=False)
    if not tp.accelerator.is_available():
        # No accelerator: device_ids are ignored, as PyTorch ignores them without CUDA.
        assert tp.nn.DataParallel(tp.nn.Linear(2, 2), device_ids=[0, 1]).device_ids == []
        return
    with pytest.raises(NotImplementedError, match="runs on one device"):
        tp.nn.DataParallel(tp.nn.Linear(2, 2), device_ids=[0, 1])


def test_one_accelerator_device_moves_inputs(monkeypatch):
    if not tp.backends._probe.probe("npdev").available:
        pytest.skip("the npdev example plugin is not installed")
    monkeypatch.setenv("TENSORPLUG_ACCELERATOR", "npdev")
    model = tp.nn.Linear(2, 3)
    wrapped = tp.nn.DataParallel(model, device_ids=[0])
    with pytest.raises(RuntimeError, match="must have its parameters and buffers on device npdev:0"):
        wrapped(tp.ones(1, 2))
    model.to("npdev")
    out = wrapped(tp.ones(1, 2))
    assert out.device == tp.device("npdev", 0)

