"""The extra dtypes outside kernels: safetensors save/load (also with the safetensors library),
NumPy and DLPack, finfo/iinfo, printing."""
import math

import numpy as np
import pytest

import tensorplug as tp

FLOAT8 = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"]
UNSIGNED = ["uint16", "uint32", "uint64"]
SAFETENSORS_NAMES = {"uint16": "U16", "uint32": "U32", "uint64": "U64", "float8_e4m3fn": "F8_E4M3",
                     "float8_e5m2": "F8_E5M2", "float8_e4m3fnuz": "F8_E4M3FNUZ", "float8_e5m2fnuz": "F8_E5M2FNUZ"}


def _state():
    codes = np.arange(256, dtype=np.uint8).reshape(16, 16)
    state = {name: tp.from_numpy(codes.copy()).view(getattr(tp, name)) for name in FLOAT8}
    state["uint16"] = tp.from_numpy(np.array([[0, 1], [2 ** 15, 2 ** 16 - 1]], dtype=np.uint16))
    state["uint32"] = tp.from_numpy(np.array([0, 2 ** 31, 2 ** 32 - 1], dtype=np.uint32))
    state["uint64"] = tp.from_numpy(np.array([0, 2 ** 63, 2 ** 64 - 1], dtype=np.uint64))
    return state


def _raw(t):
    return t.contiguous().view(tp.uint8).numpy().tobytes() if t.dtype.itemsize == 1 else t.numpy().tobytes()


def test_save_load_round_trip_keeps_every_byte(tmp_path):
    state = _state()
    path = tmp_path / "extra.safetensors"
    tp.save(state, path)
    loaded = tp.load(path)
    for name, t in state.items():
        assert loaded[name].dtype is t.dtype and loaded[name].shape == t.shape
        assert _raw(loaded[name]) == _raw(t), name
    # a transposed view is saved as its own values
    view = state["float8_e5m2"].t()
    tp.save({"v": view}, tmp_path / "view.safetensors")
    assert _raw(tp.load(tmp_path / "view.safetensors")["v"]) == _raw(view)


def test_header_names_are_the_safetensors_ones(tmp_path):
    import json
    import struct

    path = tmp_path / "names.safetensors"
    tp.save(_state(), path)
    raw = path.read_bytes()
    header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
    for name, st_name in SAFETENSORS_NAMES.items():
        assert header[name]["dtype"] == st_name


def test_interoperates_with_the_safetensors_library(tmp_path):
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    state = _state()
    ours = tmp_path / "ours.safetensors"
    tp.save(state, ours)
    read = st.load_file(str(ours))
    for name, t in state.items():
        assert str(read[name].dtype) == f"torch.{name}"
        assert read[name].contiguous().view(torch.uint8).numpy().tobytes() == _raw(t)
    theirs = tmp_path / "theirs.safetensors"
    st.save_file({name: v.contiguous() for name, v in read.items()}, str(theirs))
    back = tp.load(theirs)
    for name, t in state.items():
        assert back[name].dtype is t.dtype and _raw(back[name]) == _raw(t)


@pytest.mark.parametrize("name", UNSIGNED)
def test_numpy_and_dlpack_for_unsigned(name):
    values = np.array([0, 5, np.iinfo(name).max], dtype=name)
    t = tp.from_numpy(values)
    assert t.numpy().dtype == np.dtype(name)
    shared = np.from_dlpack(t)
    np.testing.assert_array_equal(shared, values)
    back = tp.from_dlpack(values)
    assert back.dtype is getattr(tp, name) and back.tolist() == [int(v) for v in values]


@pytest.mark.parametrize("name", FLOAT8)
def test_float8_host_values_go_through_float32(name):
    t = tp.tensor([1.5, -2.0, 0.0], dtype=getattr(tp, name))
    assert t.tolist() == [1.5, -2.0, 0.0]
    assert t[1].item() == -2.0 and isinstance(t[1].item(), float)
    try:
        import ml_dtypes  # noqa: F401
    except ImportError:
        with pytest.raises(TypeError, match=f"{name} tensors need the ml_dtypes package"):
            t.numpy()
    with pytest.raises(BufferError, match=f"cannot exchange {name}"):
        t.__dlpack__()


@pytest.mark.parametrize("name", FLOAT8)
def test_finfo(name):
    info = tp.finfo(getattr(tp, name))
    mant, largest = {"float8_e4m3fn": (3, 448.0), "float8_e5m2": (2, 57344.0), "float8_e4m3fnuz": (3, 240.0),
                     "float8_e5m2fnuz": (2, 57344.0)}[name]
    assert info.bits == 8 and info.max == largest and info.min == -largest
    bias = {"float8_e4m3fn": 7, "float8_e5m2": 15, "float8_e4m3fnuz": 8, "float8_e5m2fnuz": 16}[name]
    assert info.tiny == info.smallest_normal == 2.0 ** (1 - bias)
    assert info.resolution == 1.0
    # PyTorch 2.13 reports 2**-3 for e5m2fnuz although its mantissa has 2 bits; tensorplug agrees.
    assert info.eps == (2.0 ** -3 if name == "float8_e5m2fnuz" else 2.0 ** -mant)


@pytest.mark.parametrize("name", FLOAT8 + UNSIGNED)
def test_limits_and_printing_match_torch(name):
    torch = pytest.importorskip("torch")
    if name in FLOAT8:
        ours, theirs = tp.finfo(getattr(tp, name)), torch.finfo(getattr(torch, name))
        for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
            assert getattr(ours, field) == getattr(theirs, field), field
        values = [1.5, -2.0, 0.0, 448.0 if "e4m3fn" == name[-6:] else 3.0, math.nan]
    else:
        ours, theirs = tp.iinfo(getattr(tp, name)), torch.iinfo(getattr(torch, name))
        assert (ours.bits, ours.min, ours.max) == (theirs.bits, theirs.min, theirs.max)
        assert str(ours) == str(theirs)
        values = [0, 7, int(theirs.max)]
    a = tp.tensor(values, dtype=getattr(tp, name))
    b = torch.tensor(values, dtype=getattr(torch, name))

    def text(x, prefix):  # tensorplug never moves the suffix to a line of its own: compare words
        return " ".join(repr(x).replace(prefix, "").split())

    assert text(a, "tensorplug.") == text(b, "torch.")
    assert text(a[:1].reshape(()), "tensorplug.") == text(b[:1].reshape(()), "torch.")


@pytest.mark.parametrize("name", UNSIGNED)
def test_iinfo(name):
    info = tp.iinfo(getattr(tp, name))
    bits = int(name[4:])
    assert (info.bits, info.min, info.max) == (bits, 0, 2 ** bits - 1)
