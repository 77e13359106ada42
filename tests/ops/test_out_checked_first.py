"""A bad out= raises before any kernel runs (issue 13): the exception is PyTorch 2.13's (type,
and a message naming the op or the dtypes), nothing is written into ``out``, and the profiler
sees no op on a device that holds values (the rehearsal's meta ops are all it records)."""
import importlib.util
import inspect

import pytest

import tensorplug as tp
from device_params import torch_or_skip


def _cases(L):
    x = L.arange(6.0).reshape(2, 3)
    x_grad = L.arange(6.0).reshape(2, 3).requires_grad_()
    square = L.eye(3) * 2
    positive = x > 0
    probabilities = L.tensor([0.2, 0.8])
    sparse = L.sparse_coo_tensor(L.tensor([[0, 1], [1, 0]]), L.tensor([1.0, 2.0]), (2, 2), check_invariants=True)

    return {
        "exp into int64": (lambda o: L.exp(x, out=o), L.zeros(2, 3, dtype=L.int64)),
        "add into int64": (lambda o: L.add(x, 1, out=o), L.zeros(2, 3, dtype=L.int64)),
        "add with alpha into int64": (lambda o: L.add(x, x, alpha=2, out=o), L.zeros(2, 3, dtype=L.int64)),
        "sin into an expanded out": (lambda o: L.sin(x[0], out=o), L.zeros(1).expand(3)),
        "sum requiring grad": (lambda o: L.sum(x_grad, 0, out=o), L.zeros(3)),
        "cumsum requiring grad": (lambda o: L.cumsum(x_grad, 1, out=o), L.zeros(2, 3)),
        "cat requiring grad": (lambda o: L.cat([x_grad, x], out=o), L.zeros(4, 3)),
        "matmul into int64": (lambda o: L.matmul(x, x.T, out=o), L.zeros(2, 2, dtype=L.int64)),
        "max's indices as float": (lambda o: L.max(x, 1, out=o), (L.zeros(2), L.zeros(2))),
        "sort's indices as float": (lambda o: L.sort(x, out=o), (L.zeros(2, 3), L.zeros(2, 3))),
        "linalg.inv into int64": (lambda o: L.linalg.inv(square, out=o), L.zeros(3, 3, dtype=L.int64)),
        "clamp into float64": (lambda o: L.clamp(x, 0, 1, out=o), L.zeros(2, 3, dtype=L.float64)),
        "sum into a list": (lambda o: L.sum(x, 0, out=o), [0.0, 0.0, 0.0]),
        "F.normalize into int64": (lambda o: L.nn.functional.normalize(x, out=o), L.zeros(2, 3, dtype=L.int64)),
        # out by position, where PyTorch's signature allows it
        "F.normalize into int64 by position": (lambda o: L.nn.functional.normalize(x, 2.0, 1, 1e-12, o),
                                               L.zeros(2, 3, dtype=L.int64)),
        "tensordot into int64 by position": (lambda o: L.tensordot(x, x, 2, o), L.zeros((), dtype=L.int64)),
        # the result's shape depends on values (no rehearsal): the other checks come first
        "nonzero into float32": (lambda o: L.nonzero(x, out=o), L.zeros(1, dtype=L.float32)),
        "masked_select into int64": (lambda o: L.masked_select(x, positive, out=o), L.zeros(1, dtype=L.int64)),
        "masked_select requiring grad": (lambda o: L.masked_select(x_grad, positive, out=o), L.zeros(0)),
        "multinomial into float32": (lambda o: L.multinomial(probabilities, 2, out=o), L.zeros(2)),
        # its bin edges depend on values, its shapes do not: rehearsed with placeholder edges
        "histogram's counts into int64": (lambda o: L.histogram(x, bins=3, out=o), (L.zeros(3, dtype=L.int64), L.zeros(4))),
        # a sparse operand is rehearsed as a sparse tensor of meta indices and values
        "mm of a sparse matrix into int64": (lambda o: L.mm(sparse, square[:2, :2], out=o), L.zeros(2, 2, dtype=L.int64)),
        "matmul by a sparse matrix into int64": (lambda o: L.matmul(x.T, sparse, out=o), L.zeros(3, 2, dtype=L.int64)),
    }


def _values(out):
    return [t.tolist() for t in out] if isinstance(out, tuple) else out.tolist() if hasattr(out, "tolist") else out


@pytest.mark.parametrize("case", list(_cases(tp)))
def test_bad_out_raises_pytorchs_exception_before_computing(case):
    torch = torch_or_skip()
    call, theirs_out = _cases(torch)[case]
    with pytest.raises(Exception) as theirs:
        call(theirs_out)
    call, out = _cases(tp)[case]
    before = _values(out)
    with tp.profiler.profile() as prof:
        with pytest.raises(theirs.type) as ours:
            call(out)
    assert [e.name for e in prof.events() if e.device != "meta"] == []
    assert _values(out) == before
    message = str(ours.value)
    assert "out" in message or "can't be cast" in message or "Expected" in message or "memory location" in message


def test_a_failed_sampler_draws_nothing():
    torch_or_skip()
    tp.manual_seed(3)
    state = tp.get_rng_state()
    with pytest.raises(RuntimeError, match="normal"):
        tp.normal(tp.zeros(4), 1.0, out=tp.zeros(4, dtype=tp.int64))
    assert tp.equal(tp.get_rng_state(), state)


def test_out_on_another_device_is_named_before_computing():
    if importlib.util.find_spec("tensorplug_npdev") is None:
        pytest.skip("the example plugin is not installed: python -m pip install ./plugins/tensorplug-npdev")
    x = tp.ones(3, device="npdev")
    out = tp.zeros(3)
    with tp.profiler.profile() as prof, pytest.raises(RuntimeError, match="Expected out tensor to be on npdev"):
        tp.cumsum(x, 0, out=out)
    assert [e.name for e in prof.events() if e.device != "meta"] == []


def _takes_out(function) -> bool:
    try:
        return "out" in inspect.signature(function).parameters
    except (TypeError, ValueError):  # C objects (the elementwise ops check out= themselves)
        return False


def _rehearses(function) -> bool:
    """Whether ``function``'s own code calls rehearse_out (below any wrapping decorators)."""
    return "rehearse_out" in inspect.unwrap(function).__code__.co_names


def test_every_public_function_with_out_checks_it_first():
    """A new function taking out= calls rehearse_out too, or is one of these, which check their
    out= themselves before computing (the elementwise ops, which have a ``spec``, too)."""
    checks_itself = {"where", "cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack",
                     "column_stack"}
    missing = []
    for namespace, prefix in ((tp, "tp."), (tp.linalg, "tp.linalg."), (tp.special, "tp.special."),
                              (tp.nn.functional, "F.")):
        for name in dir(namespace):
            function = getattr(namespace, name)
            if name.startswith("_") or isinstance(function, type) or not callable(function) or hasattr(function, "spec"):
                continue
            if _takes_out(function) and not _rehearses(function) and name not in checks_itself:
                missing.append(prefix + name)
    assert missing == []


def test_factories_with_device_and_out():
    """A factory's device= is compared with out's (the rehearsal runs on meta, not there)."""
    torch = torch_or_skip()
    for L in (torch, tp):
        out = L.empty(3)
        assert L.zeros(3, out=out, device="cpu") is out and L.arange(3, out=out, device="cpu").tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError):
        torch.zeros(3, out=torch.empty(3), device="meta")
    with pytest.raises(RuntimeError, match="on meta"):
        tp.zeros(3, out=tp.empty(3), device="meta")


def test_randperm_refuses_bool_as_pytorch_does():
    torch = torch_or_skip()
    for L in (torch, tp):
        for call in (lambda: L.randperm(4, dtype=L.bool), lambda: L.randperm(4, out=L.zeros(4, dtype=L.bool))):
            with pytest.raises(NotImplementedError, match="randperm"):
                call()


def test_masked_select_resizes_out_as_pytorch_does():
    torch = torch_or_skip()
    results = []
    for L in (torch, tp):
        x = L.tensor([[1.0, -2.0], [0.5, 3.0]])
        out = L.zeros(0)
        assert L.masked_select(x, x > 0, out=out) is out
        results.append(out.tolist())
    assert results[0] == results[1]
