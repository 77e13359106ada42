"""Hooks for every module (``tp.nn.modules.module.register_module_forward_pre_hook``,
``register_module_forward_hook`` and the parameter, buffer and module registration hooks) against
hand-written call logs and PyTorch 2.13's (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.modules.module as tp_module


@pytest.fixture
def handles():
    """Handles to remove after the test: the hooks are global, and must not leak into other tests."""
    registered = []
    yield registered
    for handle in registered:
        handle.remove()


def _hook_api(lib):
    return tp_module if lib is tp else lib.nn.modules.module


def _scaled(lib):
    """A module whose forward logs its arguments and returns ``x * scale``."""

    class Scaled(lib.nn.Module):
        def __init__(self, log):
            super().__init__()
            self.log = log

        def forward(self, x, scale=1):
            self.log.append(("forward", x, scale))
            return x * scale

    return Scaled


def _order_scenario(lib, log):
    """Global and per-module hooks on one module, pre and post, some prepended; one call."""
    api = _hook_api(lib)
    module = _scaled(lib)(log)
    handles = [
        api.register_module_forward_pre_hook(lambda m, a: log.append(("global pre", a))),
        module.register_forward_pre_hook(lambda m, a: log.append(("own pre", a))),
        api.register_module_forward_hook(lambda m, a, o: log.append(("global post", a, o))),
        module.register_forward_hook(lambda m, a, o: log.append(("own post", a, o))),
        module.register_forward_pre_hook(lambda m, a: log.append(("own pre, prepended", a)), prepend=True),
        module.register_forward_hook(lambda m, a, o: log.append(("own post, prepended", a, o)), prepend=True),
    ]
    try:
        module(2)
    finally:
        for handle in handles:
            handle.remove()
    module(3)  # no hook left
    return log


EXPECTED_ORDER = [
    ("global pre", (2,)), ("own pre, prepended", (2,)), ("own pre", (2,)), ("forward", 2, 1),
    ("global post", (2,), 2), ("own post, prepended", (2,), 2), ("own post", (2,), 2), ("forward", 3, 1),
]


def test_global_forward_hooks_run_before_own():
    """Global pre-hooks run before the module's (prepended ones included); global hooks likewise."""
    assert _order_scenario(tp, []) == EXPECTED_ORDER


def test_global_forward_hook_order_matches_torch():
    torch = pytest.importorskip("torch")
    assert _order_scenario(torch, []) == _order_scenario(tp, [])


def test_global_hooks_replace_arguments_and_output(handles):
    """A global pre-hook's returned args (a tuple, or one value) reach the module's pre-hooks; a
    global hook's returned output reaches the module's hooks and the caller."""
    module = _scaled(tp)([])
    handles.append(tp_module.register_module_forward_pre_hook(lambda m, a: (a[0] + 1,)))
    handles.append(module.register_forward_pre_hook(lambda m, a: (a[0] * 10,)))
    assert module(1) == 20  # (1 + 1) * 10
    handles.pop().remove()
    handles.pop().remove()
    handles.append(tp_module.register_module_forward_pre_hook(lambda m, a: a[0] + 1))  # not a tuple
    assert module(1) == 2
    handles.pop().remove()
    handles.append(tp_module.register_module_forward_hook(lambda m, a, o: o + 1))
    handles.append(module.register_forward_hook(lambda m, a, o: o * 10))
    assert module(1) == 20  # (1 + 1) * 10


def test_global_forward_hook_with_kwargs(handles):
    """with_kwargs=True hands forward's keyword arguments to the global hook; the pre-hook form
    has no such option, as in PyTorch."""
    seen = []
    handles.append(tp_module.register_module_forward_hook(lambda m, a, k, o: seen.append((a, k, o)), with_kwargs=True))
    assert _scaled(tp)([])(3, scale=2) == 6
    assert seen == [((3,), {"scale": 2}, 6)]
    with pytest.raises(TypeError, match="with_kwargs"):
        tp_module.register_module_forward_pre_hook(lambda m, a, k: None, with_kwargs=True)


def test_global_hooks_reach_every_module_of_a_tree(handles):
    """A global pre-hook runs for the container and for each child it calls, parent first; the
    values pass through unchanged."""
    seen = []
    model = tp.nn.Sequential(tp.nn.Linear(2, 2), tp.nn.ReLU())
    with tp.no_grad():
        model[0].weight.copy_(tp.tensor([[1.0, -2.0], [0.5, 3.0]]))
        model[0].bias.copy_(tp.tensor([0.25, -4.0]))
    handles.append(tp_module.register_module_forward_pre_hook(lambda m, a: seen.append(type(m).__name__)))
    result = model(tp.tensor([[1.0, 2.0]]))
    assert seen == ["Sequential", "Linear", "ReLU"]
    expected = np.maximum(np.array([[1.0, 2.0]]) @ np.array([[1.0, -2.0], [0.5, 3.0]]).T + [0.25, -4.0], 0)
    np.testing.assert_allclose(result.detach().numpy(), expected)


def test_removed_global_hooks_stop_running():
    """handle.remove() and leaving the handle's with block unregister a global hook."""
    seen = []
    module = tp.nn.Identity()
    with tp_module.register_module_forward_pre_hook(lambda m, a: seen.append("context")):
        module(1)
    handle = tp_module.register_module_forward_hook(lambda m, a, o: seen.append("handle"))
    module(1)
    handle.remove()
    module(1)
    assert seen == ["context", "handle"]


def _failing_call_scenario(lib, log):
    """A forward that raises, with a global and an own always_call hook, and one global hook
    that is not always called."""
    api = _hook_api(lib)

    class Boom(lib.nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    module = Boom()
    handles = [
        api.register_module_forward_hook(lambda m, a, o: log.append(("global always", a, o)), always_call=True),
        api.register_module_forward_hook(lambda m, a, o: log.append(("global, not always", a, o))),
        module.register_forward_hook(lambda m, a, o: log.append(("own always", a, o)), always_call=True),
    ]
    try:
        with pytest.raises(ValueError, match="boom"):
            module(5)
    finally:
        for handle in handles:
            handle.remove()
    return log


def test_global_always_call_hook_runs_when_forward_raises():
    """always_call hooks run, global first, with output None, and the forward's error propagates."""
    assert _failing_call_scenario(tp, []) == [("global always", (5,), None), ("own always", (5,), None)]


def test_global_always_call_matches_torch():
    torch = pytest.importorskip("torch")
    assert _failing_call_scenario(torch, []) == _failing_call_scenario(tp, [])


def test_global_always_call_hook_sees_pre_hook_failure_and_passes_output_on(handles):
    """A raising global pre-hook still owes the always_call hooks their run; an output returned by
    one of them reaches the next (PyTorch's order and values)."""
    seen = []
    handles.append(tp_module.register_module_forward_pre_hook(lambda m, a: 1 / 0))
    handles.append(tp_module.register_module_forward_hook(lambda m, a, o: "from global", always_call=True))
    module = tp.nn.Identity()
    handles.append(module.register_forward_hook(lambda m, a, o: seen.append(o), always_call=True))
    with pytest.raises(ZeroDivisionError):
        module(5)
    assert seen == ["from global"]


def test_global_always_call_hook_error_becomes_a_warning(handles):
    """When forward raised, an always_call global hook's own error is a UserWarning naming it global."""
    handles.append(tp_module.register_module_forward_hook(lambda m, a, o: 1 / 0, always_call=True))

    class Boom(tp.nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    with pytest.warns(UserWarning, match=r"^global module forward hook with ``always_call=True`` raised .*division"):
        with pytest.raises(ValueError, match="boom"):
            Boom()(1)


def test_global_hook_does_not_run_twice_after_own_hook_raises(handles):
    """A global always_call hook already run is not run again when a later hook raises."""
    seen = []
    handles.append(tp_module.register_module_forward_hook(lambda m, a, o: seen.append(o), always_call=True))
    module = tp.nn.Identity()
    handles.append(module.register_forward_hook(lambda m, a, o: 1 / 0))
    with pytest.raises(ZeroDivisionError):
        module(7)
    assert seen == [7]


def _shape(value):
    return None if value is None else tuple(value.shape)


def _registration_scenario(lib):
    """Build layers and containers and assign attributes with the three registration hooks on;
    the log holds (kind, module class, name, what was registered)."""
    api = _hook_api(lib)
    log = []
    handles = [
        api.register_module_parameter_registration_hook(
            lambda m, n, p: log.append(("parameter", type(m).__name__, n, _shape(p)))),
        api.register_module_buffer_registration_hook(
            lambda m, n, b: log.append(("buffer", type(m).__name__, n, _shape(b)))),
        api.register_module_module_registration_hook(
            lambda m, n, s: log.append(("module", type(m).__name__, n, type(s).__name__))),
    ]
    try:
        lib.nn.Linear(2, 3)
        lib.nn.Linear(2, 3, bias=False)
        lib.nn.BatchNorm1d(2)
        lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh())
        modules = lib.nn.ModuleList([lib.nn.ReLU()])
        modules.append(lib.nn.Tanh())
        modules[0] = lib.nn.GELU()
        lib.nn.ModuleDict({"a": lib.nn.ReLU()})["b"] = lib.nn.Tanh()
        lib.nn.ParameterDict({"w": lib.nn.Parameter(lib.ones(1))})
        holder = lib.nn.Module()
        holder.w = lib.nn.Parameter(lib.ones(4))
        holder.w = None  # a None parameter is not reported
        holder.register_parameter("q", None)
        holder.register_buffer("b", lib.ones(2))
        holder.b = lib.ones(3)
        holder.b = None
        holder.register_buffer("c", None)
        holder.child = lib.nn.ReLU()
        holder.child = None
        holder.add_module("empty", None)
        holder.register_module("named", lib.nn.Tanh())
    finally:
        for handle in handles:
            handle.remove()
    lib.nn.Linear(1, 1)  # nothing after removal
    return log


EXPECTED_REGISTRATIONS = [
    ("parameter", "Linear", "weight", (3, 2)), ("parameter", "Linear", "bias", (3,)),
    ("parameter", "Linear", "weight", (3, 2)),
    ("parameter", "BatchNorm1d", "weight", (2,)), ("parameter", "BatchNorm1d", "bias", (2,)),
    ("buffer", "BatchNorm1d", "running_mean", (2,)), ("buffer", "BatchNorm1d", "running_var", (2,)),
    ("buffer", "BatchNorm1d", "num_batches_tracked", ()),
    ("module", "Sequential", "0", "ReLU"), ("module", "Sequential", "1", "Tanh"),
    ("module", "ModuleList", "0", "ReLU"), ("module", "ModuleList", "1", "Tanh"), ("module", "ModuleList", "0", "GELU"),
    ("module", "ModuleDict", "a", "ReLU"), ("module", "ModuleDict", "b", "Tanh"),
    ("parameter", "ParameterDict", "w", (1,)),
    ("parameter", "Module", "w", (4,)),
    ("buffer", "Module", "b", (2,)), ("buffer", "Module", "b", (3,)), ("buffer", "Module", "b", None),
    ("buffer", "Module", "c", None),
    ("module", "Module", "child", "ReLU"), ("module", "Module", "child", "NoneType"),
    ("module", "Module", "empty", "NoneType"), ("module", "Module", "named", "Tanh"),
]


def test_registration_hooks_see_every_registration():
    """Parameters (not None ones), buffers and child modules (None included), by every path."""
    assert _registration_scenario(tp) == EXPECTED_REGISTRATIONS


def test_registration_hooks_match_torch():
    torch = pytest.importorskip("torch")
    assert _registration_scenario(torch) == _registration_scenario(tp)


def test_registration_hooks_replace_what_is_registered(handles):
    """A returned value is registered instead; the next hook sees the replacement."""
    seen = []
    handles.append(tp_module.register_module_parameter_registration_hook(
        lambda m, n, p: tp.nn.Parameter(tp.zeros(7))))
    handles.append(tp_module.register_module_parameter_registration_hook(lambda m, n, p: seen.append(p.shape)))
    handles.append(tp_module.register_module_buffer_registration_hook(lambda m, n, b: tp.full((2,), 5.0)))
    handles.append(tp_module.register_module_module_registration_hook(lambda m, n, s: tp.nn.Tanh()))
    holder = tp.nn.Module()
    holder.w = tp.nn.Parameter(tp.ones(1))
    holder.register_buffer("b", tp.ones(1))
    holder.child = tp.nn.ReLU()
    assert seen == [(7,)] and holder.w.tolist() == [0.0] * 7
    assert holder.b.tolist() == [5.0, 5.0] and isinstance(holder.child, tp.nn.Tanh)
    holder.b = tp.ones(3)  # assigning to a buffer's name runs the hooks too
    assert holder.b.tolist() == [5.0, 5.0]
    assert [name for name, _ in holder.named_parameters()] == ["w"]


def test_registration_hook_bad_replacement_is_refused(handles):
    """A replacement of the wrong kind raises TypeError naming the hook, the kind and the name
    (PyTorch stores it, and the module breaks later)."""
    handles.append(tp_module.register_module_parameter_registration_hook(lambda m, n, p: tp.zeros(2)))
    with pytest.raises(TypeError, match=r"parameter registration hook .* returned 'Tensor' for parameter 'w' of Module "
                                        r"\(Parameter or None expected\)"):
        tp.nn.Module().register_parameter("w", tp.nn.Parameter(tp.ones(1)))
    handles.append(tp_module.register_module_module_registration_hook(lambda m, n, s: 5))
    with pytest.raises(TypeError, match=r"module registration hook .* returned 'int' for module 'c'"):
        tp.nn.Module().add_module("c", tp.nn.ReLU())
    handles.append(tp_module.register_module_buffer_registration_hook(lambda m, n, b: [1.0]))
    with pytest.raises(TypeError, match=r"buffer registration hook .* returned 'list' for buffer 'b'"):
        tp.nn.Module().register_buffer("b", tp.ones(1))


def test_registration_hooks_run_after_the_name_checks(handles):
    """A bad name is refused before any hook sees it, as in PyTorch."""
    seen = []
    handles.append(tp_module.register_module_parameter_registration_hook(lambda m, n, p: seen.append(n)))
    with pytest.raises(KeyError, match="contain"):
        tp.nn.Module().register_parameter("a.b", tp.nn.Parameter(tp.ones(1)))
    assert seen == []


def test_names_on_pytorch_path():
    """The hooks are reachable where PyTorch has them (and only there, as in PyTorch)."""
    for name in ("register_module_forward_pre_hook", "register_module_forward_hook",
                 "register_module_parameter_registration_hook", "register_module_buffer_registration_hook",
                 "register_module_module_registration_hook"):
        assert callable(getattr(tp_module, name)) and name in tp_module.__all__
        assert not hasattr(tp.nn, name)
