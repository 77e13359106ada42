"""A dtype a backend did not declare is refused at the frontend, before any allocation or kernel:
a TypeError naming the device and the dtypes it declares, whatever the way in (a factory,
``.to``, ``tp.tensor``, a result the CPU fallback copies back)."""
import pytest

import tensorplug as tp
from tensorplug.backends import plugin_manager


@pytest.fixture(scope="module")
def dev():
    """fallbackdev: declares float32, int64, bool and float64 only; counts its allocations."""
    if "fallbackdev" not in plugin_manager.records:
        plugin_manager.add("fallbackdev", "fallback_backend:plugin")
    return "fallbackdev"


_MESSAGE = r"device fallbackdev:0 does not support {}: the 'fallbackdev' backend declares bool, float32, float64, int64$"


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "int32", "uint8"])
def test_factories_refuse_undeclared_dtypes(dev, dtype, monkeypatch):
    backend = tp.backends.backend_for(dev)
    calls = []
    monkeypatch.setattr(backend, "allocate", lambda *args: calls.append(args))  # must never be reached
    with pytest.raises(TypeError, match=_MESSAGE.format(dtype)):
        tp.zeros(2, dtype=getattr(tp, dtype), device=dev)
    with pytest.raises(TypeError, match=_MESSAGE.format(dtype)):
        tp.empty(3, dtype=getattr(tp, dtype), device=dev)
    assert calls == []


def test_conversions_refuse_undeclared_dtypes(dev):
    x = tp.ones(3, device=dev)
    with pytest.raises(TypeError, match=_MESSAGE.format("int16")):
        x.to(tp.int16)
    with pytest.raises(TypeError, match=_MESSAGE.format("int8")):
        tp.tensor([1, 2], dtype=tp.int8, device=dev)
    with pytest.raises(TypeError, match=_MESSAGE.format("bfloat16")):
        tp.ones(2, dtype=tp.bfloat16).to(dev)


def test_declared_dtypes_still_work(dev):
    for dtype in (tp.float32, tp.int64, tp.bool, tp.float64):
        assert tp.ones(2, dtype=dtype, device=dev).cpu().tolist() == [1, 1]
    assert tp.zeros(2, dtype=tp.bfloat16).tolist() == [0.0, 0.0]  # the CPU declares every dtype


@pytest.mark.skipif(__import__("importlib").util.find_spec("tensorplug_npdev") is None,
                    reason="the example plugin is not installed: python -m pip install ./plugins/tensorplug-npdev")
def test_npdev_refuses_bfloat16():
    """The issue's example: npdev used to fail inside NumPy with a TypeError about the buffer."""
    with pytest.raises(TypeError, match=r"device npdev:0 does not support bfloat16: the 'npdev' backend declares bool, float16, "):
        tp.zeros(2, dtype=tp.bfloat16, device="npdev")
