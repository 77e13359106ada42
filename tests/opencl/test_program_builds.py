"""Every OpenCL program keeps its kernels when the compiler's cache gives it back.

pip's PoCL 3.0 passes 512-bit vectors (double8, float16) to its built-in library with another ABI
than the library was built for on CPUs that have AVX-512 while LLVM's target for them does not
(AMD Zen 4, taken for znver3): a kernel that hands such a vector to exp, log or vload8 crashes when
it first runs, and the same program read back from PoCL's kernel cache has no kernels at all.
The generated sources therefore call the library lane by lane there (``_source.lanewise``). On such
a compiler, this builds each program twice (the second build comes from the cache) and checks that
both have every kernel the source declares; elsewhere the probe program keeps its kernel and the
test skips, saying so."""
import subprocess
import sys
import warnings

import pytest

from tensorplug.backends.opencl import OpenCLBackend

AVAILABLE, REASON = OpenCLBackend().is_available()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"OpenCL backend unavailable: {REASON}")

# One 512-bit vector through the library's exp, what the kernels must not do, built twice in a
# process of its own: where the compiler mishandles it, PoCL also aborts that process at exit
# ("still have references to IRs"), which must not happen to the test run.
PROBE = r"""
import sys, warnings
import pyopencl as cl
platform = next(p for p in cl.get_platforms() if p.name == sys.argv[1])
context = cl.Context([next(d for d in platform.get_devices() if d.name == sys.argv[2])])
source = "__kernel void probe(__global double* a) { double8 v = (double8)(a[0]); a[0] = exp(v).s0; }"
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    names = [cl.Program(context, source).build().get_info(cl.program_info.KERNEL_NAMES) for _ in range(2)]
print("kept" if all(n == "probe" for n in names) else "lost", flush=True)
"""
FAMILIES = ["elementwise", "reduce", "matmul", "matmul_blocked", "index", "random", "sort", "fused",
            "recurrent", "ctc", "copy"]


def _kernel_names(context, text: str) -> set:
    import pyopencl as cl

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        program = cl.Program(context, text).build()
    return set(filter(None, program.get_info(cl.program_info.KERNEL_NAMES).split(";")))


@pytest.fixture(scope="module")
def state():
    import tensorplug as tp
    from tensorplug.backends.opencl import kernels

    state = kernels._state(tp.zeros(1, device="opencl"))
    if not state.has_fp64:
        pytest.skip(f"{state.name} has no float64, so no 512-bit vectors of double")
    device = state.context.devices[0]
    probe = subprocess.run([sys.executable, "-c", PROBE, device.platform.name, device.name], capture_output=True,
                           text=True, timeout=120)
    if "kept" in probe.stdout:
        pytest.skip(f"the OpenCL compiler of {state.name} keeps programs whose 512-bit vectors reach its "
                    "library; the check needs one that loses them (pip's PoCL 3.0 on AMD Zen 4)")
    return state


@pytest.mark.parametrize("family", FAMILIES)
def test_programs_keep_their_kernels_when_built_again(state, family):
    from tensorplug.backends.opencl import _source, kernels

    for dtype in ("float32", "float64"):
        if family == "copy":
            text = _source.copy(dtype, True, list(_source.DTYPES))
        else:
            text = kernels._GENERATORS[family](dtype, True)
        declared = set(kernels._signatures(text, _source.DTYPES[dtype][1]))
        for attempt in ("first build", "from the cache"):
            missing = declared - _kernel_names(state.context, text)
            assert not missing, f"{family} for {dtype}, {attempt}: no {sorted(missing)[:5]}"
