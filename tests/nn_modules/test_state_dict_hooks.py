"""Module state_dict and load_state_dict hooks, per-module ``_load_from_state_dict``,
``load_state_dict(assign=True)`` and ``to_empty``, each run in PyTorch 2.13 and in tensorplug
and compared (issue 13)."""
import copy
import warnings

import numpy as np
import pytest

import tensorplug as tp

torch = pytest.importorskip("torch", reason="PyTorch is the reference; CI has none")

LIBS = pytest.mark.parametrize("lib", [torch, tp], ids=["torch", "tp"])


def _net(lib):
    """Linear, then a child Sequential holding a Linear and a BatchNorm1d."""
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Sequential(lib.nn.Linear(4, 2), lib.nn.BatchNorm1d(2)))


def _named(net):
    return {id(module): name for name, module in net.named_modules()}


def _to_tp(state_dict):
    """A torch state dict as tensorplug tensors (a plain dict: no _metadata, as in a file)."""
    return {k: tp.tensor(v.detach().numpy()) for k, v in state_dict.items()}


def _both(fn):
    """fn(lib) for torch and tensorplug, to compare."""
    return fn(torch), fn(tp)


def _error(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001  (the test compares which and what)
        return type(exc).__name__, str(exc)
    return None


# --- state_dict hooks ----------------------------------------------------------------------------

def test_state_dict_hooks_order_arguments_and_metadata():
    """Pre-hooks run before a module saves, post-hooks after its descendants, with its prefix."""
    def run(lib):
        net, calls = _net(lib), []
        names = _named(net)
        for module in net.modules():
            module.register_state_dict_pre_hook(
                lambda m, prefix, keep_vars: calls.append(("pre", names[id(m)], prefix, keep_vars)))
            module.register_state_dict_post_hook(
                lambda m, sd, prefix, meta: calls.append(("post", names[id(m)], prefix, list(sd), dict(meta))))
        sd = net.state_dict(keep_vars=True)
        return calls, list(sd), dict(sd._metadata)

    assert run(tp) == run(torch)


def test_state_dict_prefix_keys_and_metadata():
    """A prefix is put before every key as given, and the metadata keys drop its last character."""
    def run(lib):
        sd = _net(lib).state_dict(prefix="model.")
        return list(sd), list(sd._metadata)

    assert run(tp) == run(torch)


def test_private_state_dict_hook_return_value_root_only():
    """_register_state_dict_hook's returned dict replaces the result at the root only."""
    def run(lib):
        net = _net(lib)
        net[1]._register_state_dict_hook(lambda m, sd, prefix, meta: {"ignored": 1})
        net._register_state_dict_hook(lambda m, sd, prefix, meta: {"n": len(sd)})
        return net.state_dict()

    assert run(tp) == run(torch) == {"n": 9}


def test_public_state_dict_post_hook_must_return_none():
    """register_state_dict_post_hook's hook returning a value is an error, and the same function
    can then not be registered through the private form."""
    def run(lib):
        net = lib.nn.Linear(2, 2)

        def hook(m, sd, prefix, meta):
            return {}

        net.register_state_dict_post_hook(hook)
        return _error(net.state_dict), _error(lambda: net._register_state_dict_hook(hook))

    assert run(tp) == run(torch)


def test_state_dict_hook_removal():
    """A removed hook (handle.remove() or the handle as a context manager) is not called."""
    def run(lib):
        net, calls = lib.nn.Linear(2, 2), []
        handle = net.register_state_dict_pre_hook(lambda *a: calls.append("pre"))
        with net.register_state_dict_post_hook(lambda *a: calls.append("post")):
            net.state_dict()
        net.state_dict()
        handle.remove()
        net.state_dict()
        return calls

    assert run(tp) == run(torch) == ["pre", "post", "pre"]


# --- load_state_dict hooks -----------------------------------------------------------------------

def test_load_pre_and_post_hooks_order_and_arguments():
    """Load pre-hooks get each module's prefix, metadata and own keys; post-hooks run after the
    module's descendants loaded, with the incompatible keys so far."""
    def run(lib):
        net, calls = _net(lib), []
        names = _named(net)
        sd = net.state_dict()
        for module in net.modules():
            module.register_load_state_dict_pre_hook(
                lambda m, sd, prefix, meta, strict, missing, unexpected, errors: calls.append(
                    ("pre", names[id(m)], prefix, dict(meta), strict, sorted(sd), list(missing))))
            module._register_load_state_dict_pre_hook(
                lambda sd, prefix, meta, *rest: calls.append(("private", prefix, len(rest))))
            module.register_load_state_dict_post_hook(
                lambda m, keys: calls.append(("post", names[id(m)], list(keys.missing_keys),
                                              list(keys.unexpected_keys))))
        del sd["1.0.bias"]
        sd["extra"] = net[0].weight.detach()
        result = net.load_state_dict(sd, strict=False)
        return calls, result.missing_keys, result.unexpected_keys

    assert run(tp) == run(torch)


def test_private_load_pre_hook_with_module():
    """_register_load_state_dict_pre_hook(with_module=True) passes the module first."""
    def run(lib):
        net, seen = lib.nn.Linear(2, 2), []
        net._register_load_state_dict_pre_hook(lambda m, sd, prefix, *rest: seen.append(m is net), with_module=True)
        net.load_state_dict(net.state_dict())
        return seen

    assert run(tp) == run(torch) == [True]


def test_load_pre_hook_renames_keys_of_its_prefix():
    """A pre-hook on a child renames old keys under its prefix before the child loads."""
    def run(lib):
        net = _net(lib)
        saved = {k.replace("0.weight", "0.old_weight"): v for k, v in net.state_dict().items()}

        def rename(sd, prefix, *rest):
            if prefix + "old_weight" in sd:
                sd[prefix + "weight"] = sd.pop(prefix + "old_weight")

        for module in (net[0], net[1][0]):
            module._register_load_state_dict_pre_hook(rename)
        return str(net.load_state_dict(saved)), sorted(saved)[0]

    assert run(tp) == run(torch)


def test_load_post_hook_edits_incompatible_keys_in_place():
    """A post-hook clearing the missing keys avoids the strict error; one adding keys causes it."""
    def run(lib):
        net = _net(lib)
        sd = net.state_dict()
        del sd["0.bias"]
        handle = net.register_load_state_dict_post_hook(lambda m, keys: keys.missing_keys.clear())
        cleared = str(net.load_state_dict(sd))
        handle.remove()
        net.register_load_state_dict_post_hook(lambda m, keys: keys.unexpected_keys.append("made.up"))
        return cleared, _error(lambda: net.load_state_dict(sd))

    tp_result, torch_result = run(tp), run(torch)
    assert tp_result == torch_result
    assert "Missing key(s)" in tp_result[1][1] and '"made.up"' in tp_result[1][1]


def test_load_post_hook_returning_a_value_is_an_error():
    """A load post-hook must edit the keys in place, not return new ones."""
    def run(lib):
        net = lib.nn.Linear(2, 2)
        net.register_load_state_dict_post_hook(lambda m, keys: keys)
        return _error(lambda: net.load_state_dict(net.state_dict()))[0]

    assert run(tp) == run(torch) == "AssertionError"


def test_strict_errors_see_keys_a_pre_hook_added():
    """Keys a pre-hook adds to its module's dict are checked as the checkpoint's own."""
    def run(lib):
        net = _net(lib)

        def add(sd, prefix, *rest):
            sd[prefix + "stray"] = sd[prefix + "weight"]

        net[1][0]._register_load_state_dict_pre_hook(add)
        return _error(lambda: net.load_state_dict(net.state_dict()))

    assert run(tp) == run(torch)


def test_load_hook_removal():
    """Removed load hooks are not called."""
    def run(lib):
        net, calls = lib.nn.Linear(2, 2), []
        pre = net.register_load_state_dict_pre_hook(lambda *a: calls.append("pre"))
        post = net.register_load_state_dict_post_hook(lambda *a: calls.append("post"))
        net.load_state_dict(net.state_dict())
        pre.remove()
        post.remove()
        net.load_state_dict(net.state_dict())
        return calls

    assert run(tp) == run(torch) == ["pre", "post"]


def test_load_pre_hook_with_module_follows_a_deepcopy():
    """A deep copy's bound load pre-hook receives the copy."""
    def run(lib):
        net, seen = lib.nn.Linear(2, 2), []
        net.register_load_state_dict_pre_hook(lambda m, *rest: seen.append(m))
        clone = copy.deepcopy(net)
        clone.load_state_dict(clone.state_dict())
        return seen[0] is clone

    assert run(tp) == run(torch) is True


# --- _load_from_state_dict and versions ----------------------------------------------------------

def test_overridden_load_from_state_dict_sees_version():
    """A subclass overriding _load_from_state_dict gets its metadata (version) and can convert."""
    def run(lib):
        class Scaled(lib.nn.Linear):
            _version = 3

            def _load_from_state_dict(self, state_dict, prefix, local_metadata, *rest):
                seen.append(local_metadata.get("version"))
                if local_metadata.get("version") is None:
                    state_dict[prefix + "weight"] = state_dict[prefix + "weight"] * 2
                super()._load_from_state_dict(state_dict, prefix, local_metadata, *rest)

        seen = []
        net = lib.nn.Sequential(Scaled(2, 2))
        sd = net.state_dict()
        net.load_state_dict(sd)
        before = net[0].weight.detach().clone()
        net.load_state_dict(dict(sd))  # no metadata: version None
        return seen, (net[0].weight.detach() / before).tolist()

    tp_seen, tp_ratio = run(tp)
    torch_seen, torch_ratio = run(torch)
    assert tp_seen == torch_seen == [3, None]
    np.testing.assert_allclose(tp_ratio, torch_ratio)


def test_batchnorm_without_metadata_loads_without_num_batches_tracked():
    """Without a version, a BatchNorm state dict may lack num_batches_tracked; with version 2 it
    may not."""
    def run(lib):
        net = lib.nn.BatchNorm1d(2)
        sd = net.state_dict()
        del sd["num_batches_tracked"]
        return str(net.load_state_dict(dict(sd))), _error(lambda: net.load_state_dict(sd))

    assert run(tp) == run(torch)


def test_instancenorm_without_metadata_rejects_running_stats():
    """Without a version, running statistics given to an InstanceNorm tracking none are an error."""
    def run(lib):
        sd = {"running_mean": lib.zeros(2), "running_var": lib.ones(2)}
        return _error(lambda: lib.nn.InstanceNorm1d(2).load_state_dict(sd))

    assert run(tp) == run(torch)


# --- weight_norm's legacy keys -------------------------------------------------------------------

def test_parametrized_weight_norm_loads_legacy_checkpoint(device):
    """A state dict saved with the legacy nn.utils.weight_norm (weight_g, weight_v) loads into the
    parametrized weight_norm, renamed as PyTorch does."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the legacy form is deprecated in both
        legacy = torch.nn.utils.weight_norm(torch.nn.Linear(3, 2))
    with torch.no_grad():
        legacy.weight_g.mul_(1.5)
    saved = legacy.state_dict()
    reference = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(3, 2))
    reference.load_state_dict(saved)
    layer = tp.nn.utils.parametrizations.weight_norm(tp.nn.Linear(3, 2)).to(device)
    result = layer.load_state_dict({k: v.to(device) for k, v in _to_tp(saved).items()})
    assert str(result) == "<All keys matched successfully>"
    assert sorted(layer.state_dict()) == sorted(reference.state_dict())
    np.testing.assert_allclose(layer.weight.cpu().detach().numpy(), reference.weight.detach().numpy(), rtol=1e-6)


# --- to_empty and assign -------------------------------------------------------------------------

def test_to_empty_then_load_state_dict(device):
    """to_empty keeps shapes, dtypes, Parameter identity and requires_grad; loading fills it."""
    reference = _net(torch)
    net = _net(tp)
    net[0].weight.requires_grad_(False)
    params = list(net.parameters())
    assert net.to_empty(device=device) is net
    assert all(p is q for p, q in zip(net.parameters(), params))
    assert [p.requires_grad for p in net.parameters()] == [False] + [True] * 5
    assert all(t.device.type == device for t in net.state_dict().values())
    assert [(t.shape, t.dtype) for t in net.state_dict().values()] == [
        (tuple(t.shape), getattr(tp, str(t.dtype).split(".")[1])) for t in reference.state_dict().values()]
    net.load_state_dict(_to_tp(reference.state_dict()))
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)[:, :3]
    net.eval()
    reference.eval()
    np.testing.assert_allclose(net(tp.tensor(x, device=device)).cpu().detach().numpy(),
                               reference(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_to_empty_not_recursive():
    """recurse=False replaces this module's own tensors only."""
    net = _net(tp)
    own, child = net[0], net[1][0]
    before = child.weight.detach().clone()
    child_storage = child.weight.data_ptr()
    own_storage = own.weight.data_ptr()
    child.to_empty(device="cpu", recurse=False)
    assert child.weight.data_ptr() != child_storage
    assert own.weight.data_ptr() == own_storage
    assert before.shape == child.weight.shape


def test_assign_identity_requires_grad_and_wrapping():
    """assign=True uses the state dict's tensors: buffers as they are, parameters wrapped in a
    Parameter sharing their data and keeping the module's requires_grad."""
    def run(lib):
        net = _net(lib)
        net[0].weight.requires_grad_(False)
        sd = _net(lib).state_dict()
        given = lib.nn.Parameter(sd["1.0.weight"].clone(), requires_grad=False)
        sd["1.0.weight"] = given
        net.load_state_dict(sd, assign=True)
        return (
            net[1][1].running_mean is sd["1.1.running_mean"],
            net[1][0].weight is given,
            given.requires_grad,
            type(net[0].weight).__name__,
            net[0].weight is sd["0.weight"],
            net[0].weight.requires_grad,
            net[0].bias.requires_grad,
            net[0].weight.data_ptr() == sd["0.weight"].data_ptr(),
        )

    assert run(tp) == run(torch)


def test_assign_takes_the_checkpoints_device_and_dtype(device):
    """With assign=True the module's tensors take the state dict's device and dtype."""
    net = tp.nn.Linear(2, 3)
    sd = {"weight": tp.ones(3, 2, dtype=tp.float64, device=device), "bias": tp.zeros(3, dtype=tp.float64, device=device)}
    net.load_state_dict(sd, assign=True)
    assert net.weight.device.type == device and net.weight.dtype == tp.float64
    assert isinstance(net.weight, tp.nn.Parameter) and net.weight.requires_grad
    out = net(tp.ones(1, 2, dtype=tp.float64, device=device))
    assert out.cpu().tolist() == [[2.0, 2.0, 2.0]]


def test_assign_metadata_reaches_hooks():
    """assign=True shows in the local metadata a pre-hook receives."""
    def run(lib):
        net, seen = lib.nn.Linear(2, 2), []
        net._register_load_state_dict_pre_hook(lambda sd, prefix, meta, *rest: seen.append(dict(meta)))
        net.load_state_dict(net.state_dict(), assign=True)
        return seen

    assert run(tp) == run(torch)


def test_state_dict_positional_arguments_warn():
    """The old positional form state_dict(destination, prefix, keep_vars) works and warns."""
    def run(lib):
        destination = {}
        with pytest.warns(FutureWarning, match="Positional args are being deprecated"):
            result = lib.nn.Linear(2, 2).state_dict(destination, "p.")
        return result is destination, list(destination)

    assert run(tp) == run(torch) == (True, ["p.weight", "p.bias"])
