"""tp.load from files, with mmap=True (tensors view a copy-on-write mapping) and mmap=False
(independent copies): values against NumPy, writes never reach the file, unaligned offsets."""
import io
import json
import os
import struct

import numpy as np
import pytest

import tensorplug as tp

MODES = [pytest.param(False, id="copy"), pytest.param(True, id="mmap"), pytest.param(None, id="default")]


def _write_safetensors(path, tensors, header_pad=True, gap_before=b""):
    """A safetensors file built by hand from NumPy arrays, in the given order and packing.

    ``header_pad=False`` leaves the header unpadded, so data offsets are not aligned in the file;
    ``gap_before`` is written between the header and the first tensor (counted in the offsets)."""
    header, chunks, offset = {}, [gap_before], len(gap_before)
    for name, (dtype_name, array) in tensors.items():
        data = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": dtype_name, "shape": list(np.shape(array)), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    raw = json.dumps(header).encode()
    if header_pad:
        raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + b"".join(chunks))
    return 8 + len(raw)  # where the data section starts


@pytest.fixture
def state_file(tmp_path):
    rng = np.random.default_rng(1)
    arrays = {
        "w": rng.standard_normal((64, 33)).astype(np.float32),
        "b": rng.standard_normal(33).astype(np.float64),
        "h": rng.standard_normal((5, 3)).astype(np.float16),
        "idx": rng.integers(-2**40, 2**40, size=7),
        "mask": rng.random(9) > 0.5,
        "empty": np.zeros((0, 4), np.float32),
    }
    path = tmp_path / "state.safetensors"
    _write_safetensors(path, {"w": ("F32", arrays["w"]), "b": ("F64", arrays["b"]), "h": ("F16", arrays["h"]),
                              "idx": ("I64", arrays["idx"]), "mask": ("BOOL", arrays["mask"]),
                              "empty": ("F32", arrays["empty"])})
    return path, arrays


@pytest.mark.parametrize("mmap", MODES)
def test_values_match_numpy(state_file, mmap):
    """Every tensor has the dtype, shape and values of the arrays written, in either mode."""
    path, arrays = state_file
    loaded = tp.load(path, mmap=mmap)
    assert list(loaded) == list(arrays)
    for name, array in arrays.items():
        t = loaded[name]
        assert t.shape == array.shape and t.device == tp.device("cpu")
        assert t.numpy().dtype == array.dtype
        np.testing.assert_array_equal(t.numpy(), array)


@pytest.mark.parametrize("mmap", MODES)
def test_round_trip_through_tp_save(tmp_path, mmap):
    """tp.save then tp.load, nested structure and bfloat16 included, from a path and an open file."""
    a = np.arange(24, dtype=np.float32).reshape(4, 6) / 8
    obj = {"model": {"a": tp.tensor(a), "bf": tp.tensor(a[0]).to(tp.bfloat16)}, "step": 3, "list": [tp.tensor([1, 2])]}
    tp.save(obj, tmp_path / "x.safetensors")
    with open(tmp_path / "x.safetensors", "rb") as f:
        from_file = tp.load(f, mmap=mmap)
    for back in (tp.load(tmp_path / "x.safetensors", mmap=mmap), from_file):
        np.testing.assert_array_equal(back["model"]["a"].numpy(), a)
        np.testing.assert_array_equal(back["model"]["bf"].float().numpy(), a[0])  # these values are exact in bfloat16
        assert back["model"]["bf"].dtype is tp.bfloat16
        assert back["step"] == 3 and back["list"][0].tolist() == [1, 2]


@pytest.mark.parametrize("mmap", MODES)
def test_writes_never_reach_the_file(state_file, mmap):
    """In-place writes to loaded tensors leave the file's bytes alone and do not show in a second load."""
    path, arrays = state_file
    before = path.read_bytes()
    first = tp.load(path, mmap=mmap)
    first["w"].fill_(7.0)
    first["b"].mul_(-1.0)
    first["idx"][0] = 5
    first["mask"].logical_not_()
    assert path.read_bytes() == before
    second = tp.load(path, mmap=mmap)
    for name, array in arrays.items():
        np.testing.assert_array_equal(second[name].numpy(), array)
    np.testing.assert_array_equal(first["w"].numpy(), np.full_like(arrays["w"], 7.0))  # the write itself held


@pytest.mark.parametrize("mmap", MODES)
def test_tensors_of_one_load_are_independent(state_file, mmap):
    """Writing to one loaded tensor changes no other tensor of the same load."""
    path, arrays = state_file
    loaded = tp.load(path, mmap=mmap)
    loaded["w"].zero_()
    loaded["h"].fill_(1.0)
    np.testing.assert_array_equal(loaded["b"].numpy(), arrays["b"])
    np.testing.assert_array_equal(loaded["idx"].numpy(), arrays["idx"])


@pytest.mark.parametrize("mmap", MODES)
def test_file_closed_and_deleted_after_load(tmp_path, state_file, mmap):
    """The tensors outlive the file object and the file itself."""
    path, arrays = state_file
    with open(path, "rb") as f:
        loaded = tp.load(f, mmap=mmap)
    os.remove(path)
    for name, array in arrays.items():
        np.testing.assert_array_equal(loaded[name].numpy(), array)
    assert (loaded["w"] * 2).sum().item() == pytest.approx(float(arrays["w"].astype(np.float64).sum() * 2), rel=1e-5)


def test_mapped_tensor_outlives_its_siblings(state_file):
    """One mapped tensor keeps the mapping alive after the rest of the load is gone."""
    path, arrays = state_file
    w = tp.load(path, mmap=True)["w"]
    import gc

    gc.collect()
    np.testing.assert_array_equal(w.numpy(), arrays["w"])


@pytest.mark.parametrize("mmap", MODES)
@pytest.mark.parametrize("header_pad", [True, False], ids=["padded", "unpadded-header"])
def test_unaligned_offsets(tmp_path, mmap, header_pad):
    """Tensors whose bytes sit at offsets unaligned for their dtype load with the right values."""
    rng = np.random.default_rng(2)
    arrays = {
        "byte": ("U8", np.array([9], np.uint8)),                                  # shifts everything after it by 1
        "f32": ("F32", rng.standard_normal((3, 5)).astype(np.float32)),
        "f64": ("F64", rng.standard_normal(4)),
        "i16": ("I16", np.array([-3, 300, 7], np.int16)),
        "i64": ("I64", np.array([2**62, -1], np.int64)),
        "bf16": ("BF16", np.array([0x3FC0, 0xC020], np.uint16)),                  # 1.5 and -2.5 as bfloat16 bits
    }
    path = tmp_path / "unaligned.safetensors"
    _write_safetensors(path, arrays, header_pad=header_pad, gap_before=b"\0" * 3)
    loaded = tp.load(path, mmap=mmap)
    for name, (_, array) in arrays.items():
        if name == "bf16":
            np.testing.assert_array_equal(loaded[name].float().numpy(), [1.5, -2.5])
        else:
            np.testing.assert_array_equal(loaded[name].numpy(), array)
    loaded["f32"].fill_(0.0)  # copied or mapped, still never written back
    _, f32 = arrays["f32"]
    np.testing.assert_array_equal(tp.load(path, mmap=mmap)["f32"].numpy(), f32)


def test_mmap_needs_a_real_file():
    """mmap=True on an in-memory stream is a clear error; mmap=False reads it."""
    buf = io.BytesIO()
    tp.save({"w": tp.ones(2)}, buf)
    buf.seek(0)
    with pytest.raises(ValueError, match="mmap=True needs a file path"):
        tp.load(buf, mmap=True)
    buf.seek(0)
    assert tp.load(buf, mmap=False)["w"].tolist() == [1.0, 1.0]


def test_file_object_at_an_offset(tmp_path):
    """A safetensors blob that starts partway into a file loads from the file object's position."""
    buf = io.BytesIO()
    tp.save({"w": tp.tensor([1.0, 2.0, 3.0])}, buf)
    path = tmp_path / "prefixed.bin"
    path.write_bytes(b"junk" * 5 + buf.getvalue())
    for mmap in (False, True):
        with open(path, "rb") as f:
            f.seek(20)
            assert tp.load(f, mmap=mmap)["w"].tolist() == [1.0, 2.0, 3.0]


def test_non_seekable_stream():
    """A stream that cannot seek (a pipe, a socket) is read to its end, then loaded."""

    class Stream(io.RawIOBase):
        def __init__(self, data):
            self._inner = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self._inner.readinto(b)

    buf = io.BytesIO()
    tp.save({"w": tp.arange(4.0), "i": tp.tensor([3], dtype=tp.int64)}, buf)
    loaded = tp.load(io.BufferedReader(Stream(buf.getvalue())))
    assert loaded["w"].tolist() == [0.0, 1.0, 2.0, 3.0] and loaded["i"].tolist() == [3]


@pytest.mark.parametrize("mmap", MODES)
def test_large_tensors(tmp_path, mmap):
    """Tensors of several MiB (their own memory blocks) load exactly, are writable and stay independent."""
    rng = np.random.default_rng(3)
    big = rng.standard_normal((700, 1000)).astype(np.float32)  # 2.8 MB
    wide = rng.integers(0, 2**60, size=300_000)                   # 2.4 MB of int64
    path = tmp_path / "big.safetensors"
    _write_safetensors(path, {"big": ("F32", big), "small": ("F32", big[0, :3]), "wide": ("I64", wide)})
    before = path.read_bytes()
    first, second = tp.load(path, mmap=mmap), tp.load(path, mmap=mmap)
    np.testing.assert_array_equal(first["big"].numpy(), big)
    np.testing.assert_array_equal(first["wide"].numpy(), wide)
    first["big"].mul_(0.0)
    first["wide"].add_(1)
    np.testing.assert_array_equal(first["big"].numpy(), np.zeros_like(big))
    np.testing.assert_array_equal(first["wide"].numpy(), wide + 1)
    np.testing.assert_array_equal(second["big"].numpy(), big)
    np.testing.assert_array_equal(second["wide"].numpy(), wide)
    assert path.read_bytes() == before
