"""Module.get_extra_state / set_extra_state in state_dict and load_state_dict, and the forward
hook options prepend, with_kwargs and always_call (PyTorch 2.13 semantics).

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


def _key_error(module_name: str, what: str, key: str) -> tuple:
    """What _error gives for a strict load_state_dict failing on one key (PyTorch's message)."""
    return "RuntimeError", (
        f'Error(s) in loading state_dict for {module_name}:\n\t{what} key(s) in state_dict: "{key}". '
    )


def _error(fn):
    """(exception type name, message) of what ``fn()`` raises, or None."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001  (the test compares which and what)
        return type(exc).__name__, str(exc)
    return None


# --- extra state ---------------------------------------------------------------------------------

def _stateful(lib):
    """A module with a parameter, a buffer, a child and a dict of extra state."""

    class Stateful(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lib.nn.Parameter(lib.ones(1))
            self.register_buffer("b", lib.zeros(1))
            self.c = lib.nn.Linear(1, 1)
            self.extra = {"step": 3}
            self.loaded = []

        def get_extra_state(self):
            return self.extra

        def set_extra_state(self, state):
            # What the parameters hold when the extra state arrives: they load first.
            self.loaded.append((state, self.w.item()))
            self.extra = state

    return Stateful()


@LIBS
def test_state_dict_holds_extra_state_after_own_tensors(lib):
    """The extra state follows the module's parameters and buffers, before its children's keys,
    and is get_extra_state's own object (also with keep_vars)."""
    module = _stateful(lib)
    sd = module.state_dict()
    assert list(sd) == ["w", "b", "_extra_state", "c.weight", "c.bias"]
    assert sd["_extra_state"] is module.extra
    assert module.state_dict(keep_vars=True)["_extra_state"] is module.extra


@LIBS
def test_load_state_dict_passes_extra_state_to_set_extra_state(lib):
    """Loading hands the saved value to set_extra_state, after the parameters are loaded; the
    key of a child module carries its prefix."""
    net = lib.nn.Sequential(_stateful(lib))
    sd = net.state_dict()
    assert "0._extra_state" in sd
    sd["0.w"] = lib.full((1,), 5.0)
    sd["0._extra_state"] = {"step": 7}
    result = net.load_state_dict(sd)
    assert str(result) == "<All keys matched successfully>"
    assert net[0].loaded == [({"step": 7}, 5.0)]
    assert net[0].extra == {"step": 7}


@LIBS
def test_missing_extra_state_is_a_missing_key(lib):
    """A state dict without the extra state key misses it: an error when strict, reported in
    missing_keys otherwise (set_extra_state is not called)."""
    net = lib.nn.Sequential(_stateful(lib))
    sd = net.state_dict()
    del sd["0._extra_state"]
    assert _error(lambda: net.load_state_dict(sd)) == _key_error("Sequential", "Missing", "0._extra_state")
    result = net.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["0._extra_state"] and result.unexpected_keys == []
    assert net[0].loaded == []


def _saves_only(lib):
    class SavesOnly(lib.nn.Module):
        def get_extra_state(self):
            return 7

    return SavesOnly()


@LIBS
def test_extra_state_without_set_extra_state_cannot_load(lib):
    """A module that defines get_extra_state but not set_extra_state saves its extra state, and a
    strict load of it fails on the key it cannot take; a non-strict one reports it."""
    module = _saves_only(lib)
    sd = module.state_dict()
    assert dict(sd) == {"_extra_state": 7}
    assert _error(lambda: module.load_state_dict(sd)) == _key_error("SavesOnly", "Unexpected", "_extra_state")
    result = module.load_state_dict(sd, strict=False)
    assert result.missing_keys == [] and result.unexpected_keys == ["_extra_state"]


@LIBS
def test_set_extra_state_alone_loads_but_saves_nothing(lib):
    """set_extra_state without get_extra_state: nothing is saved, a given value is loaded, and a
    strict load without one misses it."""
    seen = []

    class LoadsOnly(lib.nn.Module):
        def set_extra_state(self, state):
            seen.append(state)

    module = LoadsOnly()
    assert list(module.state_dict()) == []
    assert str(module.load_state_dict({"_extra_state": "v1"})) == "<All keys matched successfully>"
    assert seen == ["v1"]
    assert _error(lambda: module.load_state_dict({})) == _key_error("LoadsOnly", "Missing", "_extra_state")


@LIBS
def test_extra_state_key_is_unexpected_for_plain_modules(lib):
    """A module without extra state rejects the key when strict."""
    layer = lib.nn.Linear(1, 1)
    sd = dict(layer.state_dict(), _extra_state=1)
    assert _error(lambda: layer.load_state_dict(sd)) == _key_error("Linear", "Unexpected", "_extra_state")


@LIBS
def test_set_extra_state_errors_propagate(lib):
    """An exception raised by set_extra_state propagates as it is (not as a state_dict error)."""

    class Strict(lib.nn.Module):
        def get_extra_state(self):
            return 1

        def set_extra_state(self, state):
            raise ValueError(f"bad extra state {state}")

    assert _error(lambda: Strict().load_state_dict({"_extra_state": 2})) == ("ValueError", "bad extra state 2")


@LIBS
@pytest.mark.parametrize("method, args", [("get_extra_state", ()), ("set_extra_state", (1,))])
def test_base_class_extra_state_methods_raise(lib, method, args):
    """Module's own get_extra_state / set_extra_state are never meant to run: RuntimeError."""
    name, message = _error(lambda: getattr(lib.nn.Linear(1, 1), method)(*args))
    assert name == "RuntimeError"
    assert message.startswith(f"Reached a code path in Module.{method}() that should never be called.")


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
