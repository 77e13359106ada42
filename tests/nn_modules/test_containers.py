"""Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict."""
from collections import OrderedDict

import pytest

import tensorplug as tp

nn = tp.nn


def test_sequential_indexing_slicing_and_append():
    """Sequential indexes, slices (a new Sequential), appends and runs its modules in order."""
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear) and seq[0] is seq._modules["0"]
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and len(head) == 2 and head[0] is seq[0]
    assert head(tp.randn(4, 2)).shape == (4, 3)
    seq.append(nn.Sigmoid())
    assert len(seq) == 4 and [n for n, _ in seq.named_children()][-1] == "3"
    del seq[1]
    assert [type(m).__name__ for m in seq] == ["Linear", "Linear", "Sigmoid"] and list(seq._modules) == ["0", "1", "2"]
    with pytest.raises(IndexError):
        seq[5]


def test_sequential_from_ordered_dict():
    """An OrderedDict names the children."""
    seq = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.Tanh())]))
    assert seq.fc is seq[0] and list(seq.state_dict()) == ["fc.weight", "fc.bias"]


def test_module_list_registers_parameters():
    """ModuleList children are registered, so their parameters are the parent's."""
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    m = Stack()
    assert len(list(m.parameters())) == 6 and len(m.layers) == 3
    m.layers.append(nn.Linear(2, 2))
    m.layers.extend([nn.Linear(2, 2)])
    assert len(m.layers) == 5 and m(tp.ones(1, 2)).shape == (1, 2)
    assert isinstance(m.layers[1:3], nn.ModuleList) and len(m.layers[1:3]) == 2
    assert repr(nn.ModuleList()) == "ModuleList()"


def test_module_dict():
    """ModuleDict behaves as an ordered dict of registered modules."""
    d = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.ReLU()})
    assert list(d.keys()) == ["a", "b"] and "a" in d and len(d) == 2
    d["c"] = nn.Tanh()
    assert list(d) == ["a", "b", "c"] and isinstance(d.pop("b"), nn.ReLU) and list(d) == ["a", "c"]
    assert list(d.state_dict()) == ["a.weight", "a.bias"]


def test_parameter_list_and_dict():
    """ParameterList / ParameterDict wrap tensors as Parameters and register them."""
    plist = nn.ParameterList([nn.Parameter(tp.zeros(2)), tp.ones(3)])
    assert len(plist) == 2 and all(isinstance(p, nn.Parameter) for p in plist)
    plist.append(tp.zeros(1))
    assert [n for n, _ in plist.named_parameters()] == ["0", "1", "2"]
    pdict = nn.ParameterDict({"w": tp.ones(2)})
    assert isinstance(pdict["w"], nn.Parameter) and list(pdict.state_dict()) == ["w"]
