"""The forward hook options prepend, with_kwargs and always_call (PyTorch 2.13 semantics).

Each scenario runs in tensorplug and, where it is installed, in PyTorch, and both are held to the
same expectations written out by hand from PyTorch's documented behaviour, so that CI (which has
no PyTorch) still checks tensorplug's."""
import warnings

import pytest

import tensorplug as tp

try:
    import torch
except ImportError:  # CI: the hand-written expectations alone
    torch = None

LIBS = pytest.mark.parametrize("lib", [
    pytest.param(tp, id="tensorplug"),
    pytest.param(torch, id="torch",
                 marks=pytest.mark.skipif(torch is None, reason="PyTorch is the reference; CI has none")),
])


def _error(fn):
    """(exception type name, message) of what ``fn()`` raises, or None."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001  (the test compares which and what)
        return type(exc).__name__, str(exc)
    return None


# --- forward hook options ------------------------------------------------------------------------

def _failing(lib):
    class Failing(lib.nn.Module):
        def forward(self, x, **kwargs):
            raise ValueError("forward failed")

    return Failing()


def _adding_one(lib):
    class AddOne(lib.nn.Module):
        def forward(self, x):
            return x + 1

    return AddOne()


def _value(output):
    return None if output is None else float(output)


@LIBS
def test_prepend_orders_pre_hooks_and_hooks(lib):
    """prepend=True puts a hook ahead of those registered before it, for both kinds."""
    module, calls = _adding_one(lib), []
    module.register_forward_pre_hook(lambda m, args: calls.append("pre-1"))
    module.register_forward_pre_hook(lambda m, args, kwargs: calls.append("pre-0"), prepend=True, with_kwargs=True)
    module.register_forward_hook(lambda m, args, out: calls.append("hook-1"))
    module.register_forward_hook(lambda m, args, out: calls.append("hook-0"), prepend=True, always_call=True)
    module(lib.ones(1))
    assert calls == ["pre-0", "pre-1", "hook-0", "hook-1"]


@LIBS
def test_always_call_hooks_run_when_forward_raises(lib):
    """When forward raises, only the always_call hooks run, with output None (and kwargs for a
    with_kwargs one); what one returns is the next one's output, and forward's error propagates."""
    module, calls = _failing(lib), []
    module.register_forward_pre_hook(lambda m, args: calls.append(("pre", args)))
    module.register_forward_hook(lambda m, args, out: calls.append(("plain", args, out)))
    module.register_forward_hook(lambda m, args, out: calls.append(("always", args, out)) or 5, always_call=True)
    module.register_forward_hook(lambda m, args, kwargs, out: calls.append(("always-kw", args, kwargs, out)),
                                 always_call=True, with_kwargs=True)
    assert _error(lambda: module(1, y=2)) == ("ValueError", "forward failed")
    assert calls == [("pre", (1,)), ("always", (1,), None), ("always-kw", (1,), {"y": 2}, 5)]


@LIBS
def test_always_call_hook_runs_once_when_the_call_succeeds(lib):
    """On success an always_call hook is an ordinary forward hook: once, with the output."""
    module, calls = _adding_one(lib), []
    module.register_forward_hook(lambda m, args, out: calls.append(_value(out)), always_call=True)
    assert float(module(lib.ones(()))) == 2.0
    assert calls == [2.0]


@LIBS
def test_always_call_hooks_see_arguments_a_pre_hook_replaced(lib):
    """A pre-hook raising after another replaced the arguments: the always_call hooks get the
    replaced ones."""
    module, calls = _adding_one(lib), []
    module.register_forward_pre_hook(lambda m, args: (args[0] * 5,))

    def broken_pre_hook(m, args):
        raise KeyError("pre-hook failed")

    module.register_forward_pre_hook(broken_pre_hook)
    module.register_forward_hook(lambda m, args, out: calls.append((_value(args[0]), out)), always_call=True)
    assert _error(lambda: module(lib.ones(()))) == ("KeyError", "'pre-hook failed'")
    assert calls == [(5.0, None)]


@LIBS
def test_hook_failure_runs_the_remaining_always_call_hooks(lib):
    """A forward hook raising after forward: the always_call hooks it comes before run with the
    output as it stands; one that already ran is not run again."""
    module, calls = _adding_one(lib), []
    module.register_forward_hook(lambda m, args, out: calls.append(("early", _value(out))), always_call=True)
    module.register_forward_hook(lambda m, args, out: out * 10)

    def broken_hook(m, args, out):
        raise KeyError("hook failed")

    module.register_forward_hook(broken_hook)
    module.register_forward_hook(lambda m, args, out: calls.append(("late", _value(out))), always_call=True)
    module.register_forward_hook(lambda m, args, out: calls.append(("plain", _value(out))))
    assert _error(lambda: module(lib.ones(()))) == ("KeyError", "'hook failed'")
    assert calls == [("early", 2.0), ("late", 20.0)]


@LIBS
def test_always_call_hook_errors_after_a_failure_become_warnings(lib):
    """An always_call hook raising while another error propagates is reported as a UserWarning,
    and the next always_call hook still runs."""
    module, calls = _failing(lib), []

    def broken_hook(m, args, out):
        raise KeyError("always hook failed")

    module.register_forward_hook(broken_hook, always_call=True)
    module.register_forward_hook(lambda m, args, out: calls.append("next"), always_call=True)
    with pytest.warns(UserWarning) as record:
        assert _error(lambda: module(1)) == ("ValueError", "forward failed")
    assert [str(w.message) for w in record] == [
        "module forward hook with ``always_call=True`` raised an exception that was silenced as another error was "
        "raised in forward: 'always hook failed'"
    ]
    assert calls == ["next"]


@LIBS
def test_always_call_hook_error_on_success_propagates(lib):
    """An always_call hook raising in a call that went well: its error propagates, without a
    warning, and the always_call hooks after it still run."""
    module, calls = _adding_one(lib), []

    def broken_hook(m, args, out):
        calls.append("broken")
        raise KeyError("always hook failed")

    module.register_forward_hook(broken_hook, always_call=True)
    module.register_forward_hook(lambda m, args, out: calls.append(("next", _value(out))), always_call=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _error(lambda: module(lib.ones(()))) == ("KeyError", "'always hook failed'")
    assert calls == ["broken", ("next", 2.0)]


@LIBS
def test_removed_always_call_hook_does_not_run(lib):
    """handle.remove() also forgets an always_call hook."""
    module, calls = _failing(lib), []
    handle = module.register_forward_hook(lambda m, args, out: calls.append("always"), always_call=True)
    handle.remove()
    assert _error(lambda: module(1)) == ("ValueError", "forward failed")
    assert calls == []
    assert not module._forward_hooks


def test_forward_hook_signatures_match_pytorch():
    """The keyword-only options of both registration methods, as PyTorch 2.13 names them."""
    import inspect

    def options(method):
        return [(p.name, p.default) for p in inspect.signature(method).parameters.values() if p.kind is p.KEYWORD_ONLY]

    assert options(tp.nn.Module.register_forward_hook) == [("prepend", False), ("with_kwargs", False),
                                                           ("always_call", False)]
    assert options(tp.nn.Module.register_forward_pre_hook) == [("prepend", False), ("with_kwargs", False)]
    if torch is not None:
        assert options(torch.nn.Module.register_forward_hook) == options(tp.nn.Module.register_forward_hook)
        assert options(torch.nn.Module.register_forward_pre_hook) == options(tp.nn.Module.register_forward_pre_hook)
