"""Building a model without memory, then giving it memory and weights: ``with tp.device("meta")``
or ``Module.to("meta")``, ``Module.to_empty``, ``load_state_dict``, ``nn.utils.skip_init``, and
saving meta tensors. Values computed after loading are checked against NumPy in float64."""
import copy
import io
import json
import struct

import numpy as np
import pytest

import tensorplug as tp
from meta_reference import metadata, torch_or_skip


def _mlp(L, **factory):
    nn = L.nn
    return nn.Sequential(nn.Linear(4, 8, **factory), nn.Tanh(), nn.Linear(8, 3, **factory), nn.LayerNorm(3, **factory))


def _weights(rng) -> dict:
    """A state dict for _mlp as float32 NumPy arrays (LayerNorm's affine parameters not trivial)."""
    return {"0.weight": rng.standard_normal((8, 4)), "0.bias": rng.standard_normal(8),
            "2.weight": rng.standard_normal((3, 8)), "2.bias": rng.standard_normal(3),
            "3.weight": rng.uniform(0.5, 1.5, 3), "3.bias": rng.standard_normal(3)}


def _mlp_reference(arrays: dict, x: np.ndarray) -> np.ndarray:
    """_mlp's forward in float64 NumPy, from the same (float32-rounded) weights."""
    w = {k: v.astype(np.float32).astype(np.float64) for k, v in arrays.items()}
    h = np.tanh(x @ w["0.weight"].T + w["0.bias"]) @ w["2.weight"].T + w["2.bias"]
    normalized = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5)
    return normalized * w["3.weight"] + w["3.bias"]


def _state_dict(arrays: dict) -> dict:
    return {k: tp.tensor(v, dtype=tp.float32) for k, v in arrays.items()}


def test_meta_init_then_to_empty_then_load_state_dict(rng):
    with tp.device("meta"):
        model = _mlp(tp)
    assert all(p.is_meta for p in model.parameters())
    assert model.to_empty(device="cpu") is model
    assert all(p.device.type == "cpu" and p.requires_grad for p in model.parameters())
    arrays = _weights(rng)
    result = model.load_state_dict(_state_dict(arrays))
    assert result.missing_keys == [] and result.unexpected_keys == []
    x = rng.standard_normal((5, 4))
    out = model(tp.tensor(x, dtype=tp.float32))
    np.testing.assert_allclose(out.detach().numpy(), _mlp_reference(arrays, x.astype(np.float32)), rtol=1e-5, atol=1e-5)


def test_module_to_meta_then_back(rng):
    model = _mlp(tp).to("meta")
    assert all(p.is_meta and isinstance(p, tp.nn.Parameter) for p in model.parameters())
    model.to_empty(device="cpu").load_state_dict(_state_dict(arrays := _weights(rng)))
    x = rng.standard_normal((2, 4))
    out = model(tp.tensor(x, dtype=tp.float32)).detach().numpy()
    np.testing.assert_allclose(out, _mlp_reference(arrays, x.astype(np.float32)), rtol=1e-5, atol=1e-5)


def test_buffers_follow_to_empty():
    with tp.device("meta"):
        norm = tp.nn.BatchNorm1d(3)
    assert norm.running_mean.is_meta and norm.num_batches_tracked.is_meta
    norm.to_empty(device="cpu")
    assert metadata(norm.running_var) == ((3,), "float32", (1,), 0, "cpu")
    assert norm.num_batches_tracked.dtype is tp.int64 and norm.num_batches_tracked.device.type == "cpu"


def test_to_empty_matches_pytorch():
    torch = torch_or_skip()
    states = []
    for L in (tp, torch):
        with L.device("meta"):
            model = _mlp(L)
        states.append({k: metadata(v) for k, v in model.to_empty(device="cpu").state_dict().items()})
    assert states[0] == states[1]


def test_loading_into_meta_parameters_warns_and_assign_replaces_them(rng):
    arrays = _weights(rng)
    with tp.device("meta"):
        model = _mlp(tp)
    with pytest.warns(UserWarning) as record:
        model.load_state_dict(_state_dict(arrays))
    # PyTorch's warning, once per parameter, naming it within its module.
    assert sorted(str(w.message).split(":")[0] for w in record) == ["for bias"] * 3 + ["for weight"] * 3
    assert all("copying from a non-meta parameter in the checkpoint to a meta parameter in the current model, which "
               "is a no-op. (Did you mean to pass `assign=True`" in str(w.message) for w in record)
    assert all(p.is_meta for p in model.parameters())
    model.load_state_dict(_state_dict(arrays), assign=True)
    weight = model[0].weight
    assert isinstance(weight, tp.nn.Parameter) and weight.requires_grad and weight.device.type == "cpu"
    np.testing.assert_array_equal(weight.detach().numpy(), arrays["0.weight"].astype(np.float32))


def test_skip_init(rng):
    layer = tp.nn.utils.skip_init(tp.nn.Linear, 4, 8)
    assert metadata(layer.weight) == ((8, 4), "float32", (4, 1), 0, "cpu") and layer.weight.requires_grad
    layer.load_state_dict({"weight": tp.tensor(w := rng.standard_normal((8, 4)), dtype=tp.float32),
                           "bias": tp.tensor(b := rng.standard_normal(8), dtype=tp.float32)})
    x = rng.standard_normal((3, 4))
    expected = x.astype(np.float32) @ w.astype(np.float32).astype(np.float64).T + b.astype(np.float32)
    np.testing.assert_allclose(layer(tp.tensor(x, dtype=tp.float32)).detach().numpy(), expected, rtol=1e-5, atol=1e-5)
    assert tp.nn.utils.skip_init(tp.nn.Linear, in_features=2, out_features=1, device="meta").weight.is_meta
    assert tp.nn.utils.skip_init(tp.nn.Conv2d, 3, 4, 3, dtype=tp.float64).weight.dtype is tp.float64


def test_skip_init_refusals():
    with pytest.raises(RuntimeError, match="^Module must support a 'device' arg to skip initialization$"):
        tp.nn.utils.skip_init(tp.nn.ReLU)
    with pytest.raises(TypeError, match="subclass of nn.Module"):
        tp.nn.utils.skip_init(3)
    with pytest.raises(RuntimeError, match="^Expected a Module; got <class 'int'>$"):
        tp.nn.utils.skip_init(int)


def test_skip_init_matches_pytorch():
    torch = torch_or_skip()
    ours = tp.nn.utils.skip_init(tp.nn.Linear, 5, 3, bias=False)
    theirs = torch.nn.utils.skip_init(torch.nn.Linear, 5, 3, bias=False)
    assert metadata(ours.weight) == metadata(theirs.weight) and ours.bias is theirs.bias is None
    with pytest.raises(RuntimeError) as caught:
        torch.nn.utils.skip_init(torch.nn.ReLU)
    with pytest.raises(RuntimeError, match=str(caught.value)):
        tp.nn.utils.skip_init(tp.nn.ReLU)


def test_deepcopy_of_a_meta_model():
    with tp.device("meta"):
        model = _mlp(tp)
    clone = copy.deepcopy(model)
    assert [metadata(p) for p in clone.parameters()] == [metadata(p) for p in model.parameters()]
    assert all(a is not b for a, b in zip(clone.parameters(), model.parameters()))


# --- saving meta tensors ---------------------------------------------------------------------------
def _header(data: bytes) -> dict:
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + length])


def test_save_and_load_meta_tensors():
    """Meta tensors are saved as their shape and dtype and load as meta tensors again, wherever
    map_location sends the rest (PyTorch's behaviour); one object saved twice loads as one."""
    shared = tp.empty(2, 3, device="meta", requires_grad=True)
    buffer = io.BytesIO()
    tp.save({"a": shared, "b": shared, "half": tp.empty(4, dtype=tp.float16, device="meta"), "values": tp.ones(2)}, buffer)
    buffer.seek(0)
    loaded = tp.load(buffer, map_location="cpu")
    assert loaded["a"] is loaded["b"] and loaded["a"].requires_grad
    assert metadata(loaded["a"]) == ((2, 3), "float32", (3, 1), 0, "meta")
    assert metadata(loaded["half"]) == ((4,), "float16", (1,), 0, "meta")
    assert loaded["values"].tolist() == [1.0, 1.0]
    # Only real tensors are safetensors entries: meta ones live in tensorplug's structure metadata.
    header = _header(buffer.getvalue())
    assert set(header) == {"__metadata__", "values"} and header["__metadata__"]["format"] == "tensorplug"


def test_save_and_load_a_meta_state_dict():
    with tp.device("meta"):
        model = _mlp(tp)
    buffer = io.BytesIO()
    tp.save(model.state_dict(), buffer)
    buffer.seek(0)
    loaded = tp.load(buffer)
    assert {k: metadata(v) for k, v in loaded.items()} == {k: metadata(v) for k, v in model.state_dict().items()}


def test_saved_meta_tensors_match_pytorch():
    torch = torch_or_skip()
    results = []
    for L in (tp, torch):
        buffer = io.BytesIO()
        L.save({"w": L.empty(3, 2, dtype=L.float64, device="meta", requires_grad=True)}, buffer)
        buffer.seek(0)
        loaded = L.load(buffer, map_location="cpu")["w"]
        results.append((metadata(loaded), loaded.requires_grad))
    assert results[0] == results[1]


@pytest.mark.parametrize("node", [
    {"t": "meta", "name": "w", "dtype": "F32", "shape": [-3]},
    {"t": "meta", "name": "w", "dtype": "float32", "shape": [3]},
    {"t": "meta", "name": "w", "dtype": "F32", "shape": "3"},
    {"t": "meta", "dtype": "F32", "shape": [3]},
])
def test_a_malformed_meta_node_is_refused(node):
    structure = json.dumps({"t": "dict", "keys": [{"t": "value", "v": "w"}], "values": [node]})
    header = json.dumps({"__metadata__": {"format": "tensorplug", "tensorplug.structure": structure}}).encode()
    header += b" " * (-len(header) % 8)
    with pytest.raises(ValueError, match="malformed meta tensor"):
        tp.load(io.BytesIO(struct.pack("<Q", len(header)) + header))
