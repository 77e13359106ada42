"""Devices whose backend does not declare the extra dtypes refuse them before any kernel runs,
with a TypeError naming the device, the dtype and what the backend declares (docs/dtypes.md)."""
import pytest

import tensorplug as tp

EXTRA = ["uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"]


def _undeclaring(device):
    if device in ("cpu", "opencl"):
        pytest.skip(f"the {device} backend declares every extra dtype")
    if device == "cuda":
        pytest.skip("the CUDA backend is checked without a GPU in test_cuda_declares_none")
    return device


@pytest.mark.parametrize("name", EXTRA)
def test_factories_refuse(device, name):
    dev = _undeclaring(device)
    for make in (lambda: tp.zeros(2, dtype=getattr(tp, name), device=dev),
                 lambda: tp.empty(3, dtype=getattr(tp, name), device=dev),
                 lambda: tp.full((2,), 1, dtype=getattr(tp, name), device=dev),
                 lambda: tp.tensor([1, 2], dtype=getattr(tp, name), device=dev)):
        with pytest.raises(TypeError, match=f"{dev}.*does not support {name}.*declares"):
            make()


@pytest.mark.parametrize("name", EXTRA)
def test_conversion_and_moves_refuse(device, name):
    dev = _undeclaring(device)
    with pytest.raises(TypeError, match=f"to\\(\\): device {dev}.* does not support {name}: .* declares"):
        tp.ones(2, device=dev).to(getattr(tp, name))
    on_cpu = tp.ones(2).to(getattr(tp, name))
    with pytest.raises(TypeError, match=f"to\\(\\): device {dev}.* does not support {name}: .* declares"):
        on_cpu.to(dev)
    with pytest.raises(TypeError, match=f"view\\(\\): device {dev}.* does not support {name}"):
        tp.zeros(8, dtype=tp.uint8, device=dev).view(getattr(tp, name))


def test_cuda_declares_none():
    from tensorplug.backends.cuda import CUDABackend

    assert not set(EXTRA) & set(CUDABackend().dtypes)


def test_cpu_meta_and_opencl_declare_all():
    from tensorplug.backends.api import EXTRA_DTYPES
    from tensorplug.backends.opencl import OpenCLBackend

    assert set(EXTRA_DTYPES) == set(EXTRA)
    assert set(EXTRA) <= set(OpenCLBackend().dtypes)  # before load(): they need nothing of the device
    for device in ("cpu", "meta"):
        for name in EXTRA:
            assert tp.empty(2, dtype=getattr(tp, name), device=device).dtype is getattr(tp, name)
