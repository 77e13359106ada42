"""Load the compiled CPU kernels (`_kernels`), making OpenBLAS findable first.

The extension links against libscipy_openblas.so from the scipy-openblas32 wheel. Installed in
site-packages it finds the library through its rpath; built in place (editable installs, running
from the repository) it may not, so the library is loaded here with RTLD_GLOBAL before the import:
the dynamic loader then resolves the extension's dependency by its soname.
"""

import ctypes
import importlib.util
import os

_kernels = None


def _preload_openblas():
    # The wheel's library sits in its package's lib/ folder. Finding the package without importing
    # it saves a program's first tensor ~50 ms: its __init__ imports importlib.metadata to read
    # its own version.
    spec = importlib.util.find_spec("scipy_openblas32")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the CPU kernels need OpenBLAS from the scipy-openblas32 package: pip install scipy-openblas32")
    lib_dir = os.path.join(spec.submodule_search_locations[0], "lib")
    for name in sorted(os.listdir(lib_dir)):
        if name.startswith("libscipy_openblas") and ".so" in name:
            ctypes.CDLL(os.path.join(lib_dir, name), mode=ctypes.RTLD_GLOBAL)
            return


def load_kernels():
    """Return the `_kernels` extension module, preloading OpenBLAS on the first call."""
    global _kernels
    if _kernels is None:
        # OpenMP threads that keep spinning after a parallel kernel starve OpenBLAS's threads
        # on the same cores (a 13 ms conv2d gemm was measured at 540 ms): let them sleep.
        # Read once by libgomp when the extension loads; a user's own setting wins.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        _preload_openblas()
        from . import _kernels as module

        _kernels = module
    return _kernels
