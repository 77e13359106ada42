"""Module: registration, traversal, state_dict, hooks, modes, dtype moves, apply and repr."""
import copy
import pickle

import numpy as np
import pytest

import tensorplug as tp

nn = tp.nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.norm = nn.BatchNorm1d(4)
        self.scale = nn.Parameter(tp.ones(4))
        self.register_buffer("steps", tp.zeros(()))
        self.register_buffer("scratch", tp.zeros(2), persistent=False)

    def forward(self, x):
        return self.norm(self.fc(x)) * self.scale


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Linear(4, 2)
        self.tied = self.head  # the same module twice: its parameters appear once

    def forward(self, x):
        return self.head(self.block(x))


def test_registration_and_traversal():
    """Assigned Parameters, Modules and buffers are registered and walked in definition order."""
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["block.scale", "block.fc.weight", "block.fc.bias", "block.norm.weight", "block.norm.bias", "head.weight", "head.bias"]
    assert len(list(net.parameters())) == 7
    assert [n for n, _ in net.named_buffers()] == [
        "block.steps", "block.scratch", "block.norm.running_mean", "block.norm.running_var", "block.norm.num_batches_tracked"
    ]
    assert [n for n, _ in net.named_children()] == ["block", "head"]
    assert [n for n, _ in net.named_modules()] == ["", "block", "block.fc", "block.norm", "head"]
    assert [n for n, _ in net.block.named_parameters(recurse=False)] == ["scale"]
    assert net.get_submodule("block.fc") is net.block.fc
    assert net.get_parameter("block.fc.bias") is net.block.fc.bias
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        net.get_submodule("block.nope")
    assert {"block", "head", "tied"} <= set(dir(net))


def test_shared_parameter_is_listed_once():
    """A parameter used by two modules appears once in parameters() (but under both names in the state_dict)."""
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    b.weight = a.weight
    seq = nn.Sequential(a, b)
    assert len(list(seq.parameters())) == 3
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4


def test_reassignment_and_deletion():
    """Assigning a tensor to a parameter slot is an error; None clears it; del unregisters."""
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="cannot assign"):
        m.weight = tp.zeros(2, 2)
    m.bias = None
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    del m.weight
    assert list(m.parameters()) == []
    m.extra = nn.ReLU()
    m.extra = nn.Parameter(tp.zeros(1))
    assert "extra" not in m._modules and "extra" in m._parameters
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'missing'"):
        m.missing
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", tp.zeros(1))


def test_parameter_assignment_before_init_is_an_error():
    """Assigning a Parameter before Module.__init__ raises as in torch."""
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(tp.zeros(1))
            super().__init__()

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Bad()


def test_buffer_marker_registers_buffers():
    """Assigning nn.Buffer registers a buffer (persistent or not)."""
    m = nn.Module()
    m.a = nn.Buffer(tp.ones(2))
    m.b = nn.Buffer(tp.ones(2), persistent=False)
    assert list(dict(m.named_buffers())) == ["a", "b"] and list(m.state_dict()) == ["a"]
    m.a = tp.zeros(3)
    assert m.a.shape == (3,) and "a" in m._buffers


def test_state_dict_round_trip():
    """state_dict holds parameters and persistent buffers (detached, sharing storage); loading it
    into a fresh model reproduces the outputs."""
    net = Net()
    net.train()
    net(tp.randn(5, 3))  # moves the running statistics
    state = net.state_dict()
    assert list(state) == [
        "block.scale", "block.steps", "block.fc.weight", "block.fc.bias", "block.norm.weight", "block.norm.bias",
        "block.norm.running_mean", "block.norm.running_var", "block.norm.num_batches_tracked", "head.weight", "head.bias",
        "tied.weight", "tied.bias",  # torch lists a module registered twice under both names
    ]
    assert not state["head.weight"].requires_grad and type(state["head.weight"]) is tp.Tensor
    assert type(net.state_dict(keep_vars=True)["head.weight"]) is nn.Parameter
    assert list(net.block.state_dict(prefix="b."))[0] == "b.scale"
    other = Net()
    result = other.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == [] and repr(result) == "<All keys matched successfully>"
    net.eval()
    other.eval()
    x = tp.randn(4, 3)
    np.testing.assert_array_equal(net(x).detach().numpy(), other(x).detach().numpy())
    state["head.bias"].add_(1)  # shares storage with the parameter
    assert net.head.bias.detach().numpy().tolist() == state["head.bias"].numpy().tolist()


def test_load_state_dict_errors():
    """Missing, unexpected and mis-shaped keys give torch's message; strict=False returns them."""
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    state = model.state_dict()
    del state["2.bias"]
    state["2.extra"] = tp.zeros(1)
    state["0.weight"] = tp.zeros(3, 5)
    with pytest.raises(RuntimeError) as info:
        model.load_state_dict(state)
    assert str(info.value) == (
        "Error(s) in loading state_dict for Sequential:\n"
        '\tMissing key(s) in state_dict: "2.bias". \n'
        '\tUnexpected key(s) in state_dict: "2.extra". \n'
        "\tsize mismatch for 0.weight: copying a param with shape [3, 5] from checkpoint, "
        "the shape in current model is [3, 4]."
    )
    state["0.weight"] = tp.zeros(3, 4)
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert missing == ["2.bias"] and unexpected == ["2.extra"]
    assert model[0].weight.abs().sum().item() == 0


def test_load_state_dict_keeps_parameter_identity_and_casts():
    """Loading copies values in place (the Parameter object stays) and casts the dtype."""
    m = nn.Linear(2, 2)
    weight = m.weight
    m.load_state_dict({"weight": tp.ones(2, 2, dtype=tp.float64), "bias": tp.zeros(2)})
    assert m.weight is weight and weight.dtype is tp.float32 and weight.sum().item() == 4


def test_forward_hooks():
    """Pre-hooks can replace the input, forward hooks the output; handles remove them."""
    m = nn.Linear(2, 2)
    calls = []
    pre = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    post = m.register_forward_hook(lambda mod, args, out: calls.append((mod, out.shape)) or out + 1)
    out = m(tp.ones(3, 2))
    np.testing.assert_allclose(out.detach().numpy(), (m.bias.detach() + 1).expand(3, 2).numpy())
    assert calls == [(m, (3, 2))]
    pre.remove()
    post.remove()
    assert not m._forward_hooks and not m._forward_pre_hooks
    np.testing.assert_allclose(m(tp.ones(1, 2)).detach().numpy(), (tp.ones(1, 2) @ m.weight.detach().t() + m.bias.detach()).numpy(), rtol=1e-6)
    seen = []
    with m.register_forward_hook(lambda mod, args, kwargs, out: seen.append(sorted(kwargs)), with_kwargs=True):
        m(tp.ones(1, 2))
    assert seen == [[]] and not m._forward_hooks


def test_train_eval_and_requires_grad():
    """train()/eval() reach every descendant; requires_grad_ and zero_grad cover all parameters."""
    net = Net()
    assert net.training and net.block.norm.training
    assert net.eval() is net and not net.block.norm.training
    net.train()
    assert net.block.fc.training
    with pytest.raises(ValueError):
        net.train("yes")
    net(tp.randn(4, 3)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(p.grad.abs().sum().item() == 0 for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_to_dtype_keeps_parameter_identity():
    """to(float64), double(), float() and half() convert parameters in place (same objects, still
    requiring grad) and floating buffers only; integer buffers keep their dtype."""
    net = Net()
    weight = net.head.weight
    net(tp.randn(3, 3)).sum().backward()
    assert net.to(tp.float64) is net
    assert net.head.weight is weight and weight.dtype is tp.float64 and weight.requires_grad
    assert weight.grad.dtype is tp.float64
    assert net.block.norm.running_mean.dtype is tp.float64
    assert net.block.norm.num_batches_tracked.dtype is tp.int64
    assert net(tp.randn(2, 3, dtype=tp.float64)).dtype is tp.float64
    net.float()
    assert weight.dtype is tp.float32 and isinstance(weight, nn.Parameter)
    net.half()
    assert weight.dtype is tp.float16
    net.to("cpu", tp.float32)
    assert weight.dtype is tp.float32 and net.cpu() is net
    with pytest.raises(TypeError, match="floating point"):
        net.to(tp.int64)


def test_apply_initializes_every_submodule():
    """apply(fn) visits children before the parent; an init function reaches every Linear."""
    net = Net()
    visited = []

    def init_weights(m):
        visited.append(type(m).__name__)
        if isinstance(m, nn.Linear):
            nn.init.constant_(m.weight, 0.5)
            nn.init.zeros_(m.bias)

    assert net.apply(init_weights) is net
    assert visited == ["Linear", "BatchNorm1d", "Block", "Linear", "Net"]
    assert net.block.fc.weight.tolist() == [[0.5] * 3] * 4 and net.head.bias.tolist() == [0.0, 0.0]


def test_nested_repr():
    """repr nests children with indentation, as torch's."""
    torch = pytest.importorskip("torch")

    class TorchBlock(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 4)
            self.act = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Dropout(0.2))

    class OurBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 4)
            self.act = nn.Sequential(nn.ReLU(), nn.Dropout(0.2))

    TorchBlock.__name__ = OurBlock.__name__ = "Block"
    assert repr(OurBlock()) == repr(TorchBlock())
    assert repr(nn.Module()) == "Module()"


def test_module_pickles_and_deep_copies():
    """pickle and copy.deepcopy give an independent module with equal weights and shared parameters kept shared."""
    seq = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    seq[1].weight = seq[0].weight
    for clone in (pickle.loads(pickle.dumps(seq)), copy.deepcopy(seq)):
        assert clone[1].weight is clone[0].weight and clone[0].weight is not seq[0].weight
        assert isinstance(clone[0].weight, nn.Parameter) and clone[0].weight.requires_grad
        np.testing.assert_array_equal(clone[0].weight.detach().numpy(), seq[0].weight.detach().numpy())
        x = tp.randn(3, 2)
        np.testing.assert_array_equal(clone(x).detach().numpy(), seq(x).detach().numpy())


def test_forward_not_implemented():
    """Calling a Module without forward names the class."""
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'):
        nn.Module()(tp.zeros(1))


def _set_submodule_outcomes(L):
    """What set_submodule does (the module names after it) or raises, for each kind of target."""
    outcomes = []
    for target, module, strict in [("1.0", L.nn.Tanh(), False), ("1.new", L.nn.Tanh(), False),
                                   ("1.new", L.nn.Tanh(), True), ("5.a", L.nn.Tanh(), False),
                                   ("0.weight", L.nn.Tanh(), False), ("", L.nn.Tanh(), False), ("1.0", 3, False)]:
        net = L.nn.Sequential(L.nn.Linear(2, 2), L.nn.Sequential(L.nn.ReLU()))
        try:
            net.set_submodule(target, module, strict=strict)
            outcomes.append([(name, type(child).__name__) for name, child in net.named_modules()])
        except Exception as error:
            outcomes.append((type(error).__name__, str(error)))
    return outcomes


def test_set_submodule_matches_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here")
    assert _set_submodule_outcomes(tp) == _set_submodule_outcomes(torch)
