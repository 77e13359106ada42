"""map_location in every form PyTorch accepts, checkpoints saved on devices this machine lacks,
and loading onto a second device (OpenCL, when it is available)."""
import json
import struct

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.opencl import OpenCLBackend

OPENCL, OPENCL_REASON = OpenCLBackend().is_available()
needs_opencl = pytest.mark.skipif(not OPENCL, reason=f"OpenCL backend unavailable: {OPENCL_REASON}")

WEIGHT = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
STEPS = np.array([3, -1], np.int64)


def _checkpoint(path, devices):
    """A file as tp.save writes it, except that tensors claim the given saved devices."""
    tensors = {"weight": ("F32", WEIGHT), "steps": ("I64", STEPS)}
    structure = {"t": "dict", "keys": [{"t": "value", "v": k} for k in tensors],
                 "values": [{"t": "tensor", "name": k, "device": devices[k]} for k in tensors]}
    header, chunks, offset = {"__metadata__": {"tensorplug.structure": json.dumps(structure)}}, [], 0
    for name, (dtype_name, array) in tensors.items():
        data = array.tobytes()
        header[name] = {"dtype": dtype_name, "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(chunks))
    return path


def _check_values(loaded, device="cpu"):
    for name, array in (("weight", WEIGHT), ("steps", STEPS)):
        assert loaded[name].device == tp.device(device)
        np.testing.assert_array_equal(loaded[name].cpu().numpy(), array)


@pytest.fixture
def cuda_file(tmp_path):
    return _checkpoint(tmp_path / "cuda.safetensors", {"weight": "cuda:0", "steps": "cuda:0"})


@pytest.mark.parametrize("mmap", [False, True], ids=["copy", "mmap"])
@pytest.mark.parametrize("device", ["cuda:0", "acmeaccel:1"], ids=["cuda", "plugin"])
def test_unavailable_saved_device_is_a_clear_error(tmp_path, device, mmap):
    """Without map_location, a tensor saved on a missing device names it and suggests map_location='cpu'."""
    path = _checkpoint(tmp_path / "f.safetensors", {"weight": device, "steps": "cpu"})
    with pytest.raises(RuntimeError, match=rf"(?s)'weight'.*saved on device '{device}'.*not available.*map_location='cpu'"):
        tp.load(path, mmap=mmap)


@pytest.mark.parametrize("mmap", [False, True], ids=["copy", "mmap"])
@pytest.mark.parametrize(
    "map_location",
    ["cpu", tp.device("cpu"), {"cuda:0": "cpu"}, {"cuda:0": tp.device("cpu")}, lambda t, saved: t],
    ids=["str", "device", "dict-str", "dict-device", "callable"],
)
def test_map_location_brings_a_cuda_checkpoint_to_the_cpu(cuda_file, map_location, mmap):
    """Each form of map_location loads a checkpoint saved on CUDA onto the CPU."""
    _check_values(tp.load(cuda_file, map_location=map_location, mmap=mmap))


def test_dict_without_the_saved_device_keeps_it(cuda_file):
    """A dict that does not mention the saved device leaves it, which here is an error naming it."""
    with pytest.raises(RuntimeError, match="saved on device 'cuda:0'"):
        tp.load(cuda_file, map_location={"cuda:1": "cpu"})


def test_callable_sees_each_saved_device(tmp_path):
    """The callable gets a CPU tensor and the saved device's name, and its result is used."""
    path = _checkpoint(tmp_path / "f.safetensors", {"weight": "cuda:0", "steps": "cpu"})
    seen = {}

    def place(t, saved):
        seen[tuple(t.shape)] = (saved, t.device)
        return t + 1

    loaded = tp.load(path, map_location=place)
    assert seen == {(3, 4): ("cuda:0", tp.device("cpu")), (2,): ("cpu", tp.device("cpu"))}
    np.testing.assert_array_equal(loaded["weight"].numpy(), WEIGHT + 1)
    np.testing.assert_array_equal(loaded["steps"].numpy(), STEPS + 1)


def test_callable_returning_none_means_the_saved_device(tmp_path, cuda_file):
    """As in PyTorch, a callable returning None restores the saved device."""
    cpu_file = _checkpoint(tmp_path / "cpu.safetensors", {"weight": "cpu", "steps": "cpu"})
    _check_values(tp.load(cpu_file, map_location=lambda t, saved: None))
    with pytest.raises(RuntimeError, match="saved on device 'cuda:0'"):
        tp.load(cuda_file, map_location=lambda t, saved: None)


def test_callable_returning_a_non_tensor(cuda_file):
    with pytest.raises(TypeError, match="map_location returned int for tensor 'weight'"):
        tp.load(cuda_file, map_location=lambda t, saved: 3)


def test_map_location_naming_a_missing_device(tmp_path):
    """A map_location that asks for a missing device names that device."""
    path = _checkpoint(tmp_path / "f.safetensors", {"weight": "cpu", "steps": "cpu"})
    with pytest.raises(RuntimeError, match="map_location sends tensor 'weight'.* to device 'cuda'.*not available"):
        tp.load(path, map_location="cuda")
    with pytest.raises(RuntimeError, match="device 'cuda:0'"):
        tp.load(path, map_location={"cpu": "cuda:0"})


@pytest.mark.parametrize("map_location", [3, 1.5, ["cpu"]], ids=["int", "float", "list"])
def test_map_location_of_the_wrong_type(tmp_path, map_location):
    path = _checkpoint(tmp_path / "f.safetensors", {"weight": "cpu", "steps": "cpu"})
    with pytest.raises(TypeError, match="map_location must be"):
        tp.load(path, map_location=map_location)


def test_garbage_device_name_in_the_file(tmp_path):
    """A device string that is not even well formed is reported like a missing device."""
    path = _checkpoint(tmp_path / "f.safetensors", {"weight": "::not a device::", "steps": "cpu"})
    with pytest.raises(RuntimeError, match="saved on device '::not a device::'.*map_location='cpu'"):
        tp.load(path)
    _check_values(tp.load(path, map_location="cpu"))


@needs_opencl
@pytest.mark.parametrize("mmap", [False, True], ids=["copy", "mmap"])
@pytest.mark.parametrize("map_location", ["opencl", tp.device("opencl", 0), {"cpu": "opencl:0"}],
                         ids=["str", "device", "dict"])
def test_onto_opencl(tmp_path, map_location, mmap):
    """Tensors read from the file are copied onto another device, one at a time."""
    path = _checkpoint(tmp_path / "f.safetensors", {"weight": "cpu", "steps": "cpu"})
    before = path.read_bytes()
    loaded = tp.load(path, map_location=map_location, mmap=mmap)
    _check_values(loaded, "opencl:0")
    loaded["weight"].fill_(0.0)
    assert path.read_bytes() == before


@needs_opencl
def test_saved_on_opencl_comes_back_there(tmp_path):
    """tp.save records the device; tp.load without map_location restores it, with it moves it."""
    bf = tp.tensor([1.5, -2.5]).to(tp.bfloat16)
    tp.save({"w": tp.tensor(WEIGHT).to("opencl"), "bf": bf.to("opencl"), "c": tp.tensor(STEPS)}, tmp_path / "o.safetensors")
    for mmap in (False, True):
        back = tp.load(tmp_path / "o.safetensors", mmap=mmap)
        assert back["w"].device == tp.device("opencl:0") and back["c"].device == tp.device("cpu")
        np.testing.assert_array_equal(back["w"].cpu().numpy(), WEIGHT)
        assert back["bf"].dtype is tp.bfloat16 and back["bf"].device == tp.device("opencl:0")
        np.testing.assert_array_equal(back["bf"].float().cpu().numpy(), [1.5, -2.5])
        on_cpu = tp.load(tmp_path / "o.safetensors", map_location={"opencl:0": "cpu"}, mmap=mmap)
        assert on_cpu["w"].device == tp.device("cpu")
        np.testing.assert_array_equal(on_cpu["w"].numpy(), WEIGHT)
