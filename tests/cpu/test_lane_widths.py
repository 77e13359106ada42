"""The float32 kernels' AVX2 paths, which a CPU with AVX-512 never takes by itself: a few of the
accuracy and special-value tests again in a process capped at eight lanes by
TENSORPLUG_CPU_LANES (csrc/simd.h)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = [
    os.path.join(HERE, "..", "cpu_kernels", "test_vectorized_transcendentals.py"),
    os.path.join(HERE, "test_fused_kernels.py"),
    os.path.join(HERE, "..", "cpu_kernels", "test_reduction_extremes.py"),
]
# The lane kernels' cheapest tests: the transcendental functions, softmax (rows and columns) and
# layer_norm in float32.
SELECTION = ("not opencl and (ulps or special_values or layout_and or softmax_special or softmax_float32"
             " or (every_dim and float32 and contiguous) or (layer_norm and float32))")


def test_eight_lanes_pass_the_same_tests():
    env = dict(os.environ, TENSORPLUG_CPU_LANES="8")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-k", SELECTION, *TESTS],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
