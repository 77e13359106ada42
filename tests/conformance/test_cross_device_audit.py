"""The cross-device audit (tensorplug.conformance.cross_device) on the ops where PyTorch lets a 0-d
CPU tensor join another device's computation: no wrong value, dtype, device or gradient and no
crash. Each result is compared with the all-CPU call, itself compared with the op's NumPy float64
reference; the whole database is `python -m tensorplug.conformance.cross_device`."""
import pytest

from tensorplug.conformance.cross_device import SERIOUS, audit

# Elementwise ops of each kind: arithmetic, comparison, ternary, clamp (whose derivative sends a
# tie's gradient to the input, where the maximum it decomposes into splits it), a composite over
# bits (nextafter), a composite with fused backend kernels (smooth_l1_loss), isclose.
OPS = r"^(add|pow|eq|where|clamp|lerp|addcmul|nextafter|isclose|smooth_l1_loss)$"


def test_zero_dim_cpu_operands_on_another_device(device):
    if device == "cpu":
        pytest.skip("needs a device other than the CPU")
    result = audit([device], OPS)
    serious = [text for kind, text in result.findings if kind in SERIOUS]
    assert not serious, "\n".join(serious)
    assert result.counts["accepted"] > 100 and result.counts["gradient combinations"] > 20
    assert result.counts["all-CPU result checked against NumPy"] > 50
