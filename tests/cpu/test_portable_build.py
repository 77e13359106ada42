"""The C++ kernels compile without their x86 SIMD paths (-DTP_NO_X86_SIMD), as they must on aarch64
and other CPUs (issue 16: the build had x86-only flags and intrinsics)."""
import os
import shutil
import subprocess
import sysconfig

import pytest

CSRC = os.path.join(os.path.dirname(__file__), "..", "..", "tensorplug", "backends", "cpu", "csrc")


def _read(name: str) -> str:
    with open(os.path.join(CSRC, name)) as f:
        return f.read()


def _includes():
    try:
        import pybind11
        import scipy_openblas32
    except ImportError as exc:
        pytest.skip(f"build headers are not installed ({exc})")
    return ["-I" + sysconfig.get_paths()["include"], "-I" + pybind11.get_include(), "-I" + scipy_openblas32.get_include_dir(),
            "-I" + CSRC]


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ to check the portable build with")
def test_simd_users_compile_without_x86_simd():
    users = [f for f in sorted(os.listdir(CSRC)) if f.endswith(".cpp") and '#include "simd.h"' in _read(f)]
    assert users, "no kernel includes simd.h"
    for name in users:
        out = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Werror", "-fopenmp", "-DTP_NO_X86_SIMD",
                              *_includes(), os.path.join(CSRC, name)], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, f"{name}:\n{out.stderr[-3000:]}"
