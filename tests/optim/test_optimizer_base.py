"""The Optimizer base class: how groups are normalised and checked, zero_grad, state dict packing
and loading, repr and copying; torch.optim.Optimizer is the reference where it is installed."""
import copy
import pickle

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.optim.optimizer import Optimizer, required


def _optional_torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


class _Plain(Optimizer):
    """A do-nothing optimizer whose lr every group must give."""

    def __init__(self, params, lr=required, momentum=0.0):
        super().__init__(params, dict(lr=lr, momentum=momentum))


def test_group_params_become_a_list_and_the_dict_is_kept():
    a, b, c = (tp.ones(2, requires_grad=True) for _ in range(3))
    first = {"params": a, "lr": 0.1}
    second = {"params": (p for p in (b, c)), "lr": 0.2, "momentum": 0.5}
    opt = _Plain([first, second])
    assert opt.param_groups[0] is first and first["params"] == [a]
    assert opt.param_groups[1]["params"] == [b, c]
    assert [g["momentum"] for g in opt.param_groups] == [0.0, 0.5]


def test_group_refusals():
    a, b = tp.ones(2, requires_grad=True), tp.ones(2, requires_grad=True)
    opt = _Plain([a], lr=0.1)
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([b])
    with pytest.raises(TypeError, match="ordered collections"):
        opt.add_param_group({"params": {b}})
    with pytest.raises(ValueError, match="required optimization parameter lr"):
        _Plain([b])
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [b, a]})
    with pytest.raises(ValueError, match="non-leaf"):
        opt.add_param_group({"params": [b * 2]})
    assert len(opt.param_groups) == 1  # nothing half-added


def test_zero_grad_detaches_a_computed_gradient():
    """set_to_none=False zeroes in place; a gradient with history is cut from it first."""
    w = tp.ones(3, requires_grad=True)
    opt = _Plain([w], lr=0.1)
    source = tp.ones(3, requires_grad=True)
    w.grad = source * 2
    opt.zero_grad(set_to_none=False)
    assert w.grad.grad_fn is None and not w.grad.requires_grad
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros(3))


def test_state_dict_numbers_parameters_across_groups():
    a, b, c = (tp.ones(2, requires_grad=True) for _ in range(3))
    opt = _Plain([{"params": [a, b]}, {"params": [c], "lr": 0.5}], lr=0.1)
    opt.state[c]["buffer"] = tp.zeros(2)
    packed = opt.state_dict()
    assert packed["param_groups"] == [{"lr": 0.1, "momentum": 0.0, "params": [0, 1]},
                                      {"lr": 0.5, "momentum": 0.0, "params": [2]}]
    assert list(packed["state"]) == [2] and packed["state"][2]["buffer"] is opt.state[c]["buffer"]


def test_load_places_nested_state_like_the_parameter():
    """Floating tensors in the state, also inside lists, tuples and dicts, take the parameter's
    dtype; integer tensors and the step count keep theirs; numbers stay numbers."""
    w = tp.zeros(2, dtype=tp.float32, requires_grad=True)
    opt = _Plain([w], lr=0.1)
    opt.load_state_dict({
        "state": {0: {"history": [tp.ones(2, dtype=tp.float64), 3.5], "pair": (tp.ones(1, dtype=tp.float64),),
                      "nested": {"count": tp.ones(1, dtype=tp.int64)}, "step": tp.tensor(4.0, dtype=tp.float64)}},
        "param_groups": [{"lr": 0.25, "momentum": 0.0, "params": [0]}],
    })
    state = opt.state[w]
    assert state["history"][0].dtype == tp.float32 and state["history"][1] == 3.5
    assert isinstance(state["pair"], tuple) and state["pair"][0].dtype == tp.float32
    assert state["nested"]["count"].dtype == tp.int64
    assert state["step"].dtype == tp.float64
    assert opt.param_groups[0]["lr"] == 0.25 and opt.param_groups[0]["params"] == [w]


def test_load_keeps_entries_for_unknown_indices_and_string_keys():
    w = tp.zeros(2, requires_grad=True)
    opt = _Plain([w], lr=0.1)
    opt.load_state_dict({"state": {"0": {"buffer": tp.ones(2)}, 7: {"other": 1}},
                         "param_groups": [{"lr": 0.1, "momentum": 0.0, "params": [0]}]})
    np.testing.assert_array_equal(opt.state[w]["buffer"].numpy(), np.ones(2))
    assert opt.state[7] == {"other": 1}
    assert sorted(opt.state_dict()["state"]) == [0, 7]


def test_load_refuses_other_group_layouts():
    a, b = tp.zeros(2, requires_grad=True), tp.zeros(2, requires_grad=True)
    opt = _Plain([a, b], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": []})
    with pytest.raises(ValueError, match="doesn't match the size"):
        opt.load_state_dict({"state": {}, "param_groups": [{"lr": 0.1, "params": [0]}]})


def test_repr_lists_each_group_sorted():
    """PyTorch's layout: a header, each group's settings sorted by name, groups apart by an empty line."""
    a, b = tp.zeros(2, requires_grad=True), tp.zeros(2, requires_grad=True)
    opt = tp.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    lines = repr(opt).splitlines()
    assert lines[0] == "SGD (" and lines[-1] == ")"
    assert lines[1] == "Parameter Group 0" and "    lr: 0.1" in lines and "    lr: 0.5" in lines
    first = lines[2:lines.index("Parameter Group 1") - 1]
    assert first == sorted(first) and lines[len(first) + 2] == ""  # an empty line between groups
    torch = _optional_torch()
    if torch is not None:
        ta, tb = torch.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)
        theirs = torch.optim.SGD([{"params": [ta]}, {"params": [tb], "lr": 0.5}], lr=0.1, momentum=0.9)
        assert repr(opt) == repr(theirs)


def test_copies_keep_groups_and_state():
    w = tp.ones(2, requires_grad=True)
    opt = tp.optim.SGD([w], lr=0.1, momentum=0.9)
    w.grad = tp.ones(2)
    opt.step()
    for clone in (copy.deepcopy(opt), pickle.loads(pickle.dumps(opt))):
        assert clone.defaults == opt.defaults
        assert clone.param_groups[0]["lr"] == 0.1
        (param,) = clone.param_groups[0]["params"]
        np.testing.assert_array_equal(clone.state[param]["momentum_buffer"].numpy(), np.ones(2))
