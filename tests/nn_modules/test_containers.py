"""Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict."""
from collections import OrderedDict

import numpy as np
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


# --- Sequential and ModuleList: positions, renumbering, concatenation -------------------------------
def _layout(container):
    return [(name, type(child).__name__) for name, child in container._modules.items()]


def test_sequential_positions_and_renumbering():
    """Negative positions, slices that keep the names, and numbering made contiguous again after
    a deletion or an insertion."""
    seq = nn.Sequential(OrderedDict([("a", nn.ReLU()), ("b", nn.Tanh()), ("c", nn.Sigmoid())]))
    assert _layout(seq[1:]) == [("b", "Tanh"), ("c", "Sigmoid")]
    assert type(seq[-1]).__name__ == "Sigmoid"
    seq[-1] = nn.ELU()
    assert _layout(seq) == [("a", "ReLU"), ("b", "Tanh"), ("c", "ELU")]
    del seq[0]
    assert _layout(seq) == [("0", "Tanh"), ("1", "ELU")]
    seq.insert(-1, nn.ReLU())
    assert _layout(seq) == [("0", "Tanh"), ("1", "ReLU"), ("2", "ELU")]
    assert seq.insert(3, nn.Sigmoid()) is seq and _layout(seq)[-1] == ("3", "Sigmoid")
    assert isinstance(seq.pop(0), nn.Tanh) and _layout(seq) == [("0", "ReLU"), ("1", "ELU"), ("2", "Sigmoid")]
    popped = seq.pop(slice(0, 2))
    assert isinstance(popped, nn.Sequential) and _layout(seq) == [("0", "Sigmoid")]
    big = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.ELU(), nn.Sigmoid())
    del big[::2]
    assert _layout(big) == [("0", "Tanh"), ("1", "Sigmoid")]


@pytest.mark.parametrize("action, error, message", [
    (lambda s: s[2], IndexError, "index 2 is out of range"),
    (lambda s: s[-3], IndexError, "index -3 is out of range"),
    (lambda s: s["0"], TypeError, "cannot be interpreted as an integer"),
    (lambda s: s.insert(3, nn.ReLU()), IndexError, "Index out of range: 3"),
    (lambda s: s.insert(-3, nn.ReLU()), IndexError, "Index out of range: -3"),
    (lambda s: s.insert(0, 3), AssertionError, "module should be of type"),
    (lambda s: s.__delitem__(5), IndexError, "index 5 is out of range"),
    (lambda s: s.extend(5), TypeError, "iterable"),
    (lambda s: s + [nn.ReLU()], ValueError, "add operator supports only objects of Sequential class"),
    (lambda s: s.__iadd__([nn.ReLU()]), ValueError, "add operator supports only objects of Sequential class"),
    (lambda s: s * 0, ValueError, "Non-positive multiplication factor 0"),
    (lambda s: s * 1.5, TypeError, "unsupported operand type"),
    (lambda s: s.__imul__(-1), ValueError, "Non-positive multiplication factor -1"),
])
def test_sequential_refusals(action, error, message):
    with pytest.raises(error, match=message):
        action(nn.Sequential(nn.ReLU(), nn.Tanh()))


def test_sequential_concatenation_and_repetition():
    """+ and * make new Sequentials of the same module objects; += and *= extend in place."""
    relu, tanh = nn.ReLU(), nn.Tanh()
    seq = nn.Sequential(relu, tanh)
    twice = seq * 2
    assert list(twice) == [relu, tanh, relu, tanh] and list(2 * seq) == list(twice) and len(seq) == 2
    both = seq + nn.Sequential(nn.ELU())
    assert type(both) is nn.Sequential and _layout(both) == [("0", "ReLU"), ("1", "Tanh"), ("2", "ELU")]
    seq += nn.Sequential(nn.Sigmoid())
    assert _layout(seq) == [("0", "ReLU"), ("1", "Tanh"), ("2", "Sigmoid")]
    seq *= 2
    assert list(seq._modules) == [str(i) for i in range(6)] and seq[3] is relu
    x = tp.tensor([[-1.0, 0.5]])
    np.testing.assert_allclose(nn.Sequential(nn.ReLU(), nn.Tanh())(x).numpy(), np.tanh(np.maximum([[-1.0, 0.5]], 0)))


def test_module_list_positions_and_renumbering():
    class Stack(nn.ModuleList):
        pass

    layers = Stack([nn.ReLU(), nn.Tanh(), nn.ELU()])
    assert type(layers[::-1]) is Stack and _layout(layers[::-1]) == [("0", "ELU"), ("1", "Tanh"), ("2", "ReLU")]
    assert layers.insert(-1, nn.Sigmoid()) is None
    assert _layout(layers) == [("0", "ReLU"), ("1", "Tanh"), ("2", "Sigmoid"), ("3", "ELU")]
    assert isinstance(layers.pop(1), nn.Tanh) and _layout(layers) == [("0", "ReLU"), ("1", "Sigmoid"), ("2", "ELU")]
    assert _layout(layers.pop(slice(1, None))) == [("0", "Sigmoid"), ("1", "ELU")]
    combined = layers + [nn.Tanh()]
    assert type(combined) is nn.ModuleList and _layout(combined) == [("0", "ReLU"), ("1", "Tanh")]
    layers += [nn.ELU()]
    assert _layout(layers) == [("0", "ReLU"), ("1", "ELU")]
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, but got int"):
        layers.extend(5)
    with pytest.raises(TypeError, match="not a Module subclass"):
        layers.append(5)
    with pytest.raises(NotImplementedError):
        layers(tp.ones(1))


def test_module_list_repr_folds_runs_of_equal_children():
    shared = nn.Linear(2, 2)
    layers = nn.ModuleList([shared, shared, nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 3)])
    linear = "Linear(in_features=2, out_features=2, bias=True)"
    assert repr(layers) == ("ModuleList(\n"
                            f"  (0-2): 3 x {linear}\n"
                            "  (3): ReLU()\n"
                            "  (4): Linear(in_features=2, out_features=3, bias=True)\n"
                            ")")
    nested = nn.ModuleList([nn.ModuleList([nn.ReLU(), nn.ReLU()]) for _ in range(2)])
    assert repr(nested) == "ModuleList(\n  (0-1): 2 x ModuleList(\n    (0-1): 2 x ReLU()\n  )\n)"


# --- ModuleDict ------------------------------------------------------------------------------------
def test_module_dict_update_forms_and_refusals():
    d = nn.ModuleDict([("b", nn.ReLU()), ("a", nn.Tanh())])
    d.update({"z": nn.ELU(), "c": nn.Sigmoid()})  # a plain dict keeps its order here (not ParameterDict's)
    assert list(d) == ["b", "a", "z", "c"]
    keys, items = d.keys(), d.items()
    del d["a"]
    assert list(keys) == ["b", "z", "c"] and [k for k, _ in items] == ["b", "z", "c"]  # views stay live
    d.clear()
    assert len(d) == 0 and repr(d) == "ModuleDict()"
    with pytest.raises(TypeError, match="ModuleDict.update should be called with an iterable of key/value pairs"):
        d.update(5)
    with pytest.raises(ValueError, match="element #0 has length 1; 2 is required"):
        d.update([("a",)])
    with pytest.raises(TypeError, match="element #0 should be Iterable; isReLU"):
        d.update([nn.ReLU()])
    with pytest.raises(KeyError):
        d.pop("missing")


# --- ParameterList and ParameterDict ---------------------------------------------------------------
def test_parameter_list_entries_and_repr():
    """Tensors (and Buffers) become Parameters that require grad; other objects stay as they are."""
    plist = nn.ParameterList([tp.zeros(2), nn.Parameter(tp.ones(3, 2), requires_grad=False)])
    plist.append("label").append(nn.Buffer(tp.ones(1, dtype=tp.float64)))
    assert isinstance(plist[0], nn.Parameter) and plist[0].requires_grad and not plist[1].requires_grad
    assert plist[2] == "label" and isinstance(plist[-1], nn.Parameter)
    assert [name for name, _ in plist.named_parameters()] == ["0", "1", "3"]
    assert repr(plist) == ("ParameterList(\n"
                           "    (0): Parameter containing: [tensorplug.float32 of size 2]\n"
                           "    (1): Parameter containing: [tensorplug.float32 of size 3x2]\n"
                           "    (2): Object of type: str\n"
                           "    (3): Parameter containing: [tensorplug.float64 of size 1]\n"
                           ")")
    plist[-1] = tp.zeros(4)
    assert plist[3].shape == (4,) and isinstance(plist[3], nn.Parameter)
    assert type(plist[1:3]) is nn.ParameterList and plist[1:3][0] is plist[1]
    with pytest.raises(IndexError, match="index 4 is out of range"):
        plist[4] = tp.zeros(1)
    with pytest.raises(TypeError, match="ParameterList.extend should be called with an iterable, but got Tensor"):
        plist.extend(tp.ones(3))
    with pytest.raises(RuntimeError, match="ParameterList should not be called"):
        plist(tp.ones(1))
    assert repr(nn.ParameterList([tp.ones(())])) == "ParameterList(  (0): Parameter containing: [tensorplug.float32 of size ])"


def test_parameter_dict_as_a_dict():
    pdict = nn.ParameterDict({"b": tp.ones(2), "a": tp.zeros(3), "note": "text"})
    assert list(pdict) == ["a", "b", "note"]  # a plain dict is taken in key order, as PyTorch does
    assert list(nn.ParameterDict(OrderedDict([("z", tp.ones(1)), ("a", tp.ones(1))]))) == ["z", "a"]
    assert isinstance(pdict["b"], nn.Parameter) and pdict["note"] == "text"
    assert pdict.get("missing", 7) == 7 and "missing" not in pdict and 3 not in pdict
    assert pdict.setdefault("q", tp.ones(1)).shape == (1,) and pdict.setdefault("b", tp.ones(5)).shape == (2,)
    assert pdict.popitem()[0] == "q" and list(reversed(pdict)) == ["note", "b", "a"]
    assert pdict.pop("note") == "text" and list(pdict.state_dict()) == ["a", "b"]
    copied = pdict.copy()
    assert type(copied) is nn.ParameterDict and copied["a"] is pdict["a"]
    assert list(pdict | {"z": tp.ones(1)}) == ["a", "b", "z"] and list(pdict) == ["a", "b"]
    assert list({"w": tp.ones(1)} | pdict) == ["w", "a", "b"]
    pdict |= [("k", tp.ones(1))]
    assert list(pdict) == ["a", "b", "k"]
    assert list(pdict.fromkeys(["u", "v"])) == ["u", "v"]
    pdict["none"] = None
    assert pdict["none"] is None and [n for n, _ in pdict.named_parameters()] == ["a", "b", "k"]
    with pytest.raises(TypeError, match="not a string \\(type is 'int'\\)"):
        pdict[1] = tp.ones(1)
    with pytest.raises(KeyError, match="parameter name can"):
        pdict["x.y"] = tp.ones(1)
    assert list(pdict) == ["a", "b", "k", "none"]  # refused keys are not kept
    with pytest.raises(KeyError):
        pdict["missing"]
    with pytest.raises(RuntimeError, match="ParameterDict should not be called"):
        pdict()
    pdict.clear()
    assert len(pdict) == 0 and list(pdict.parameters()) == []


def test_parameter_dict_reads_entries_after_conversion():
    """Entries live in the module's tables, so .double() and load_state_dict reach them."""
    pdict = nn.ParameterDict({"w": tp.ones(2)}).double()
    assert pdict["w"].dtype == tp.float64 and pdict["w"] is dict(pdict.named_parameters())["w"]
    pdict.load_state_dict({"w": tp.tensor([3.0, 4.0], dtype=tp.float64)})
    np.testing.assert_array_equal(pdict["w"].detach().numpy(), [3.0, 4.0])
    assert repr(pdict) == "ParameterDict(  (w): Parameter containing: [tensorplug.DoubleTensor of size 2])"


def test_container_layouts_match_torch():
    """The same operations give PyTorch's names, types and reprs (with the library's name swapped)."""
    torch = pytest.importorskip("torch")

    def script(lib):
        n = lib.nn
        seq = n.Sequential(OrderedDict([("a", n.ReLU()), ("b", n.Tanh()), ("c", n.ELU())]))
        out = [_layout(seq[1:])]
        del seq[1]
        seq.insert(0, n.Sigmoid())
        seq += n.Sequential(n.ReLU())
        out += [_layout(seq), _layout(seq * 2), _layout(seq.pop(slice(1, 3))), _layout(seq)]
        layers = n.ModuleList([n.Linear(2, 2), n.ReLU(), n.ReLU(), n.Tanh()])
        layers.insert(1, n.ELU())
        out += [_layout(layers), _layout(layers[::-2]), type(layers.pop(-1)).__name__, repr(layers[2:])]
        plist = n.ParameterList([lib.ones(2), "x", lib.zeros(3, 1, dtype=lib.float64)])
        plist[0] = lib.zeros(1)
        out += [repr(plist), [k for k, _ in plist.named_parameters()]]
        pdict = n.ParameterDict({"b": lib.ones(2), "a": 1})
        pdict |= {"z": lib.ones(1)}
        out += [list(pdict), repr(pdict), list(reversed(pdict)), list(pdict.copy())]
        return [str(item).replace(lib.__name__, "LIB") for item in out]

    assert script(tp) == script(torch)
