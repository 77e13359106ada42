"""tp.save / tp.load round trips: every dtype, nested containers, views, devices, file objects."""
import io
import math
from collections import Counter, OrderedDict

import numpy as np
import pytest

import tensorplug as tp


def _round_trip(obj, **load_kwargs):
    buf = io.BytesIO()
    tp.save(obj, buf)
    buf.seek(0)
    return tp.load(buf, **load_kwargs)


def _values(t):
    """Exact comparison values for any dtype (bfloat16 is exact in float32)."""
    return (t.float() if t.dtype is tp.bfloat16 else t).detach().numpy()


@pytest.mark.parametrize("dtype", [tp.bool, tp.uint8, tp.int8, tp.int16, tp.int32, tp.int64, tp.float16, tp.bfloat16,
                                   tp.float32, tp.float64], ids=lambda d: d.name)
def test_every_dtype_exact(dtype):
    """Each dtype comes back with the same dtype, shape and bit-identical values."""
    if dtype is tp.bool:
        t = tp.tensor([[True, False, True], [False, False, True]])
    elif dtype.is_floating_point:
        t = tp.tensor([[1.5, -2.25, 1e-3], [float("inf"), -0.0, 3.0e4]]).to(dtype)
    else:
        info = np.iinfo(dtype.numpy)
        t = tp.tensor([[info.min, info.max, 0], [1, 2, 3]], dtype=dtype)
    back = _round_trip(t)
    assert back.dtype is dtype and back.shape == t.shape
    np.testing.assert_array_equal(_values(back), _values(t))
    if dtype.is_floating_point:
        assert np.signbit(_values(back)[1, 1])  # -0.0 keeps its sign


def test_nan_round_trips():
    """NaN stays NaN in every floating dtype."""
    for dtype in (tp.float16, tp.bfloat16, tp.float32, tp.float64):
        back = _round_trip(tp.tensor([float("nan"), 1.0]).to(dtype))
        assert math.isnan(back[0].item()) and back[1].item() == 1.0


def test_nested_containers_and_plain_values():
    """Dicts (int and str keys), OrderedDicts, lists, tuples and plain values come back as they were."""
    a = tp.randn(3, 2)
    obj = {
        "model": OrderedDict([("layer.weight", a), ("layer.bias", tp.zeros(2))]),
        "optimizer": {"state": {0: {"step": tp.tensor(3.0), "exp_avg": tp.ones(3)}}, "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1], "amsgrad": False, "foreach": None}]},
        "epoch": 7, "big": 2**70, "loss": float("inf"), "name": "run-1", "tags": ["a", ("b", 1.5)],
    }
    back = _round_trip(obj)
    assert isinstance(back["model"], OrderedDict) and list(back["model"]) == ["layer.weight", "layer.bias"]
    np.testing.assert_array_equal(back["model"]["layer.weight"].numpy(), a.numpy())
    assert list(back["optimizer"]["state"]) == [0]
    assert back["optimizer"]["state"][0]["step"].item() == 3.0
    group = back["optimizer"]["param_groups"][0]
    assert group == {"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1], "amsgrad": False, "foreach": None}
    assert isinstance(group["betas"], tuple)
    assert back["epoch"] == 7 and back["big"] == 2**70 and back["loss"] == float("inf")
    assert back["name"] == "run-1" and back["tags"] == ["a", ("b", 1.5)]


def test_counter_comes_back_as_a_counter_and_a_multisteplr_resumes():
    """A Counter (MultiStepLR's milestones) loads as a Counter, as torch.load(weights_only=True)
    rebuilds it: a plain dict made the resumed scheduler raise KeyError at the first epoch that
    is not a milestone. The resumed rates are the closed form base * gamma^(milestones passed)."""
    back = _round_trip({"c": Counter({3: 2, 5: 1}), "nested": [Counter()]})
    assert type(back["c"]) is Counter and back["c"] == Counter({3: 2, 5: 1}) and back["c"][4] == 0
    assert type(back["nested"][0]) is Counter

    def scheduler():
        p = tp.nn.Parameter(tp.zeros(2))
        optimizer = tp.optim.SGD([p], lr=0.1, momentum=0.9)
        return optimizer, tp.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1, 3, 3], gamma=0.5)

    optimizer, first = scheduler()
    for _ in range(2):
        optimizer.step()
        first.step()
    resumed_optimizer, resumed = scheduler()
    checkpoint = _round_trip({"optimizer": optimizer.state_dict(), "scheduler": first.state_dict()}, weights_only=True)
    resumed_optimizer.load_state_dict(checkpoint["optimizer"])
    resumed.load_state_dict(checkpoint["scheduler"])
    rates = []
    for _ in range(3):
        resumed_optimizer.step()
        resumed.step()
        rates.append(resumed.get_last_lr()[0])
    np.testing.assert_allclose(rates, [0.1 * 0.5 ** 3, 0.1 * 0.5 ** 3, 0.1 * 0.5 ** 3], rtol=1e-12)


def test_single_tensor_and_empty_and_scalar():
    """A bare tensor, a 0-d tensor and an empty tensor each round-trip."""
    assert _round_trip(tp.tensor(5)).item() == 5
    empty = _round_trip(tp.zeros(0, 4))
    assert empty.shape == (0, 4)
    assert _round_trip([]) == [] and _round_trip({}) == {}


def test_views_are_saved_as_their_own_data():
    """Non-contiguous views save their elements; aliasing between saved tensors is not kept."""
    base = tp.arange(24.0).reshape(4, 6)
    views = {"t": base.t(), "col": base[:, 2], "strided": base[::2, 1::3], "base": base}
    back = _round_trip(views)
    for key, view in views.items():
        np.testing.assert_array_equal(back[key].numpy(), view.numpy())
        assert back[key].is_contiguous()
    back["base"].fill_(0.0)
    assert back["t"].sum().item() == base.sum().item()  # independent copies


def test_same_tensor_twice_loads_as_one_object():
    """A tensor object saved under two keys is stored once and loads as one object."""
    t = tp.ones(3)
    back = _round_trip({"a": t, "b": [t]})
    assert back["a"] is back["b"][0]


def test_requires_grad_is_kept():
    """Tensors that required grad load requiring grad, as with torch.save."""
    back = _round_trip({"w": tp.ones(2, requires_grad=True), "x": tp.ones(2)})
    assert back["w"].requires_grad and not back["x"].requires_grad


def test_path_and_file_object(tmp_path):
    """Paths (str and PathLike) and binary file objects both work."""
    state = {"w": tp.arange(5)}
    tp.save(state, tmp_path / "a.safetensors")
    tp.save(state, str(tmp_path / "b.safetensors"))
    with open(tmp_path / "c.safetensors", "wb") as f:
        tp.save(state, f)
    for name in "abc":
        assert tp.load(tmp_path / f"{name}.safetensors")["w"].tolist() == [0, 1, 2, 3, 4]
    with open(tmp_path / "a.safetensors", "rb") as f:
        assert tp.load(f)["w"].tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("map_location", ["cpu", tp.device("cpu"), {"cpu": "cpu"}, None])
def test_map_location_forms(map_location):
    """map_location accepts a string, a device, a dict and None."""
    back = _round_trip({"w": tp.ones(2)}, map_location=map_location)
    assert back["w"].device == tp.device("cpu")


def test_map_location_callable():
    """A callable map_location gets each tensor and its saved device name."""
    seen = []

    def move(t, location):
        seen.append(location)
        return t * 2

    back = _round_trip({"w": tp.ones(2)}, map_location=move)
    assert seen == ["cpu"] and back["w"].tolist() == [2.0, 2.0]


def test_unsupported_values_are_refused():
    """Objects outside the format (here a set) raise TypeError naming where they are."""
    with pytest.raises(TypeError, match="cannot save a value of type set"):
        tp.save({"a": {1, 2}}, io.BytesIO())


def test_weights_only_false_is_accepted():
    """weights_only=False is accepted and changes nothing (nothing is ever executed)."""
    assert _round_trip({"w": tp.ones(1)}, weights_only=False)["w"].tolist() == [1.0]


def test_interoperates_with_the_safetensors_package(tmp_path):
    """Files tp.save writes load with the official reader, and its files load with tp.load."""
    st = pytest.importorskip("safetensors.numpy")
    tp.save({"w": tp.arange(6.0).reshape(2, 3).t(), "i": tp.tensor([1, 2], dtype=tp.int16)}, tmp_path / "a.safetensors")
    loaded = st.load_file(str(tmp_path / "a.safetensors"))
    np.testing.assert_array_equal(loaded["w"], np.arange(6.0, dtype=np.float32).reshape(2, 3).T)
    st.save_file({"x": np.arange(4, dtype=np.int32)}, str(tmp_path / "b.safetensors"))
    assert tp.load(tmp_path / "b.safetensors")["x"].tolist() == [0, 1, 2, 3]


def test_saving_a_whole_module_says_to_save_its_state_dict(tmp_path):
    """torch.save(model) pickles the model; tp.save refuses, naming the object and the fix."""
    model = tp.nn.Linear(2, 3)
    with pytest.raises(TypeError, match=r"whole Linear object.*tp.save\(obj.state_dict\(\), path\)"):
        tp.save(model, tmp_path / "m.safetensors")
    optimizer = tp.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(TypeError, match="whole SGD object at 'opt'"):
        tp.save({"opt": optimizer}, tmp_path / "o.safetensors")
