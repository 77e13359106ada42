"""Writes into memory that repeats or overlaps (issue 16): ``x[True] = v`` on an expanded tensor,
values and indices sharing memory with the target of ``x[index] = v``, ``index_put_``,
``scatter_``, ``index_add_`` and ``masked_fill_`` are refused (or warned about) as PyTorch 2.13
does, before any kernel runs, on every backend; the last test compares a table of cases with
torch itself."""
import warnings

import numpy as np
import pytest

import tensorplug as tp

REPEATED = "more than one element of the written-to tensor refers to a single memory location"
SHARED = "some elements of the input tensor and the written-to tensor refer to a single memory location"


def _expanded(device, *shape):
    """(base, view): a zero base and a view repeating its elements along the first dim."""
    base = tp.zeros(*shape[1:] or (1,), device=device)
    return base, base.expand(*shape)


def test_lone_true_writes_through_a_view_and_refuses_repeats(device):
    """x[True] = v is x[None] = v: a copy into a new leading dim, refused when x repeats elements."""
    base, x = _expanded(device, 3)
    for value in (5.0, tp.ones(3, device=device), tp.tensor(2.0, device=device)):
        with pytest.raises(RuntimeError, match=REPEATED):
            x[True] = value
    assert base.tolist() == [0.0]
    y = tp.zeros(3, device=device)
    y[True] = tp.tensor([1.0, 2.0, 3.0], device=device)
    assert y.tolist() == [1.0, 2.0, 3.0]


def test_lone_false_writes_nothing(device):
    """x[False] = v does nothing, even with a value of another shape (PyTorch does not broadcast it)."""
    _, x = _expanded(device, 3)
    x[False] = tp.ones(5, device=device)
    y = tp.zeros(3, device=device)
    y[False] = 7.0
    assert y.tolist() == [0.0, 0.0, 0.0]


def test_advanced_index_into_repeats_warns_and_writes(device):
    """An index tensor or mask into an expanded tensor warns (PyTorch's deprecation) and writes."""
    base, x = _expanded(device, 3)
    with pytest.warns(UserWarning, match="index_put_ on expanded tensors is deprecated"):
        x[tp.tensor([0], device=device)] = 4.0
    assert base.tolist() == [4.0]
    with pytest.warns(UserWarning, match="index_put_ on expanded tensors is deprecated"):
        x.index_put_((tp.tensor([1], device=device),), tp.tensor(6.0, device=device))
    assert base.tolist() == [6.0]


@pytest.mark.parametrize("write", [
    lambda y, d: y.__setitem__(tp.tensor([0, 1], device=d), y[1:3]),
    lambda y, d: y.__setitem__(tp.tensor([0, 1], device=d), y[3]),
    lambda y, d: y.__setitem__(y > 1, y[:2]),
    lambda y, d: y.__setitem__(slice(1, None), y[:3]),
    lambda y, d: y.index_put_((tp.tensor([0, 1], device=d),), y[2:]),
    lambda y, d: y.index_put_((tp.tensor([0, 1], device=d),), y[1:3], accumulate=True),
    lambda y, d: y[1:].scatter_(0, tp.tensor([0, 1], device=d), y[:3]),
    lambda y, d: y[1:].index_add_(0, tp.tensor([0, 1, 2], device=d), y[:3]),
], ids=["index", "index 0-d value", "mask", "slice", "index_put_", "index_put_ accumulate", "scatter_", "index_add_"])
def test_values_sharing_memory_with_the_target_are_refused(device, write):
    """A value overlapping the written-to tensor is refused and nothing is written."""
    y = tp.arange(4.0, device=device)
    with pytest.raises(RuntimeError, match=SHARED):
        write(y, device)
    assert y.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_indices_sharing_memory_with_the_target_are_refused(device):
    """An int64 index tensor that is a view of the target is refused too (a 0-d one selects)."""
    y = tp.arange(4, device=device)
    with pytest.raises(RuntimeError, match=SHARED):
        y[y[:2]] = 5
    with pytest.raises(RuntimeError, match=SHARED):
        y.index_put_((y[:2],), tp.tensor(5, device=device))
    y[y[1]] = 5
    assert y.tolist() == [0, 5, 2, 3]


def test_disjoint_broadcast_and_same_element_values_pass(device):
    """Disjoint parts of one tensor, broadcast values, strided views and a value that is the target
    element for element are written, as in PyTorch."""
    y = tp.arange(4.0, device=device)
    y[0:2] = y[2:4]
    assert y.tolist() == [2.0, 3.0, 2.0, 3.0]
    y[:2] = y[3]
    y[None] = y
    y[True] = y
    assert y.tolist() == [3.0, 3.0, 2.0, 3.0]
    z = tp.arange(4.0, device=device)
    z[::2] = z[1::2]
    assert z.tolist() == [1.0, 1.0, 3.0, 3.0]
    m = tp.arange(4.0, device=device).reshape(2, 2)
    with pytest.raises(RuntimeError, match=SHARED):
        m[...] = m.t()


def test_scatter_and_index_add_refuse_repeats(device):
    """scatter_ and index_add_ into a tensor with repeated elements raise, even with nothing to write."""
    _, x = _expanded(device, 3)
    empty = tp.zeros(0, dtype=tp.int64, device=device)
    with pytest.raises(RuntimeError, match=REPEATED):
        x.scatter_(0, empty, 1.0)
    with pytest.raises(RuntimeError, match=REPEATED):
        x.index_add_(0, tp.tensor([0], device=device), tp.ones(1, device=device))


def test_masked_fill_into_repeats_fills_each_location_once(device):
    """masked_fill_ warns and fills a location that repeated elements share when any of their mask
    entries is true (what PyTorch's loop leaves)."""
    base = tp.zeros(3, 1, device=device)
    x = base.expand(3, 2)
    mask = tp.tensor([[True, False], [False, False], [False, True]], device=device)
    with pytest.warns(UserWarning, match="masked_fill_ on expanded tensors is deprecated"):
        assert x.masked_fill_(mask, 5.0) is x
    assert base.tolist() == [[5.0], [0.0], [5.0]]


def _cases(L):
    def s(x, index, value):
        x[index] = value
        return x

    expanded = lambda: L.zeros(1).expand(3)  # noqa: E731
    arange = lambda: L.arange(4.0)  # noqa: E731
    return {
        "x[True] = 5 on expanded": lambda: s(expanded(), True, 5.0),
        "x[(True,)] = 5 on expanded": lambda: s(expanded(), (True,), 5.0),
        "x[True, 0] = 5 on expanded": lambda: s(expanded(), (True, 0), 5.0),
        "x[..., True] = 5 on expanded": lambda: s(expanded(), (Ellipsis, True), 5.0),
        "x[tensor(True)] = 5 on expanded": lambda: s(expanded(), L.tensor(True), 5.0),
        "x[False] = ones(5)": lambda: s(expanded(), False, L.ones(5)),
        "x[True] = 2-d expanded": lambda: s(L.zeros(3, 1).expand(3, 2), True, 5.0),
        "x[0] = 5 on 2-d expanded": lambda: s(L.zeros(3, 1).expand(3, 2), 0, 5.0),
        "x[:, 0] = 5 on 2-d expanded": lambda: s(L.zeros(3, 1).expand(3, 2), (slice(None), 0), 5.0),
        "x[mask] = 5 on expanded": lambda: s(expanded(), L.tensor([True, False, True]), 5.0),
        "x[[0]] = 5 on expanded": lambda: s(expanded(), [0], 5.0),
        "y[1:] = y[:3]": lambda: (lambda y: s(y, slice(1, None), y[:3]))(arange()),
        "y[:] = y": lambda: (lambda y: s(y, slice(None), y))(arange()),
        "y[idx] = y": lambda: (lambda y: s(y, L.arange(4), y))(arange()),
        "y[idx] = y[1]": lambda: (lambda y: s(y, L.tensor([0, 1]), y[1]))(arange()),
        "y[idx] = y[1].expand(2)": lambda: (lambda y: s(y, L.tensor([0, 1]), y[1].expand(2)))(arange()),
        "y[1:][idx] = y[:1]": lambda: (lambda y: s(y[1:], L.tensor([0]), y[:1]))(arange()),
        "y[(True,)] = y": lambda: (lambda y: s(y, (True,), y))(arange()),
        "y[::2][idx] = y[1::2][:1]": lambda: (lambda y: s(y[::2], L.tensor([0]), y[1::2][:1]))(arange()),
        "m[:, idx] = m[:, 1:]":
            lambda: (lambda m: s(m, (slice(None), L.tensor([0])), m[:, 1:]))(arange().reshape(2, 2)),
        "m[0] = m[:, 0]": lambda: (lambda m: s(m, 0, m[:, 0]))(arange().reshape(2, 2)),
        "index_put_ on disjoint part": lambda: (lambda y: y[2:].index_put_((y[:2].long(),), L.tensor(5.0)))(arange()),
        "masked_fill_ on expanded, no mask": lambda: expanded().masked_fill_(L.tensor(False), 5.0),
        "masked_fill_ value of self": lambda: (lambda y: y.masked_fill_(y > 1, y[0]))(arange()),
        "scatter_ index of self": lambda: (lambda y: y.scatter_(0, y[:1], 5))(L.arange(4)),
        "index_add_ alpha on expanded": lambda: expanded().index_add_(0, L.tensor([0]), L.ones(1), alpha=2),
    }


def _outcome(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = ("value", np.asarray(call().tolist()).tolist())
        except RuntimeError as exc:
            text = str(exc)
            result = ("raised", "repeated" if REPEATED in text else "shared" if SHARED in text else "other")
    warned = sorted({op for w in caught for op in ("index_put_", "masked_fill_") if f"Use of {op}" in str(w.message)})
    return result, warned


def test_outcomes_match_pytorch():
    """Each case raises for the same reason, warns about the same ops and writes the same values."""
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference for which writes it refuses")
    expected_cases = _cases(torch)
    for name, call in _cases(tp).items():
        got, want = _outcome(call), _outcome(expected_cases[name])
        if name == "x[mask] = 5 on expanded":  # PyTorch warns twice (index_put_ through masked_fill_)
            want = (want[0], ["index_put_"])
        assert got == want, name
