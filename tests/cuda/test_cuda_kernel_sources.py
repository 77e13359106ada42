"""Every CUDA program the backend compiles, rendered and compiled by nvcc: kernel syntax checked
without a GPU (CI machines with the CUDA toolkit but no device)."""
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from tensorplug.backends.cuda import _dialect

NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc (the CUDA toolkit) is not installed")


def _nvrtc_missing() -> str:
    try:
        from cupy.cuda import nvrtc

        nvrtc.getVersion()
    except Exception as exc:  # CuPy absent, or present without libnvrtc
        return f"CuPy's NVRTC cannot be loaded: {type(exc).__name__}: {str(exc).splitlines()[0]}"
    return ""


def test_translation_leaves_no_opencl_constructs():
    """The translated text keeps no OpenCL-only spelling that the preamble does not define."""
    for family in _dialect.FAMILIES:
        for dtype in _dialect.DTYPES:
            text = _dialect.cuda_source(family, dtype)[len(_dialect.PREAMBLE):]
            assert "#pragma OPENCL" not in text and "reqd_work_group_size" not in text, (family, dtype)
            assert ".s0" not in text and "(uint4)(" not in text, (family, dtype)
            assert "\nvoid " not in text, (family, dtype)  # every helper became __device__


def test_fused_kernels_the_backend_registers_are_in_the_cuda_program():
    """Every kernel the registered fused adapters launch survives the removal of vector code."""
    import re

    from tensorplug.backends.cuda import kernels

    assert set(kernels.FUSED) == {"relu", "relu_backward", "max_pool2d", "max_pool2d_with_indices",
                                  "max_pool2d_backward", "max_pool2d_with_indices_backward", "adam_step_"}
    for dtype in ("float32", "float64", "float16", "bfloat16"):
        names = set(re.findall(r"__kernel void (\w+)\(", _dialect.scalar_fused_source(dtype)))
        assert {"relu_c", "relu_s", "relu_backward_c", "relu_backward_s", "max_pool2d", "max_pool2d_scatter",
                "adam_step"} <= names, dtype
        assert "max_pool2d_rows" not in names, dtype  # vector code: CUDA's adapters launch max_pool2d
    for dtype in ("int64", "uint8", "int8", "int16", "int32"):
        names = set(re.findall(r"__kernel void (\w+)\(", _dialect.scalar_fused_source(dtype)))
        assert {"relu_c", "relu_s", "max_pool2d"} <= names, dtype


def _compile(path: str) -> tuple[str, int, str]:
    # The options NVRTC gets at run time (_cupy.CuPyRuntime.compile), for the H100's sm_90.
    result = subprocess.run([NVCC, "-arch=sm_90", "--ptx", "-fmad=false", "-std=c++17", path, "-o", path + ".ptx"],
                            capture_output=True, text=True, timeout=600)
    return path, result.returncode, result.stderr


@needs_nvcc
@pytest.mark.parametrize("family", _dialect.FAMILIES)
def test_every_program_compiles_with_nvcc(family, tmp_path):
    """The family's program for every dtype compiles for sm_90 (warnings allowed, no errors)."""
    paths = []
    for dtype in _dialect.DTYPES:
        path = str(tmp_path / f"{family}_{dtype}.cu")
        with open(path, "w") as f:
            f.write(_dialect.cuda_source(family, dtype))
        paths.append(path)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(_compile, paths))
    failures = [f"{os.path.basename(p)}:\n{err}" for p, code, err in results if code != 0]
    assert not failures, "\n".join(failures)


@pytest.mark.skipif(bool(_nvrtc_missing()), reason=_nvrtc_missing() or "NVRTC present")
def test_every_program_compiles_with_nvrtc(tmp_path, monkeypatch):
    """What the backend does at run time, minus loading onto a GPU: NVRTC compiles every program
    (through precompile, which fills the on-disk kernel cache)."""
    from tensorplug.backends.cuda import kernels

    monkeypatch.setenv("TENSORPLUG_CUDA_CACHE", str(tmp_path))
    done = kernels.precompile((9, 0))
    assert len(done) == len(_dialect.FAMILIES) * len(_dialect.DTYPES)
    assert len(list(tmp_path.glob("*.cubin"))) == len(done)
