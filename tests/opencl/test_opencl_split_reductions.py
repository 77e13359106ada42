"""Reductions with few outputs and many elements run in two passes on OpenCL (partials per range,
then their combination), so a full sum is not one work-item's loop. Both passes must give what
NumPy gives in float64, for every op, dtype and reduced-dims layout, NaN wherever it falls."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.opencl import OpenCLBackend
from tensorplug.backends.opencl import kernels as opencl_kernels

AVAILABLE, REASON = OpenCLBackend().is_available()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"OpenCL backend unavailable: {REASON}")

_REFERENCE = {"sum": np.sum, "amax": np.max, "amin": np.min, "all": np.all, "any": np.any}
# (shape, dims): a full reduction, one long row each, a strided column each, two reduced dims
# around a kept one (the ranges cross rows of the reduced space), and a size just over the split.
_LAYOUTS = [((200000,), None), ((3, 70000), 1), ((70000, 3), 0), ((30, 7, 900), (0, 2)), ((8193,), None)]


@pytest.mark.parametrize("shape,dims", _LAYOUTS, ids=lambda v: str(v))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32", "uint8", "bool"])
def test_split_reductions_match_numpy(shape, dims, dtype):
    assert opencl_kernels._split_parts("sum", 1, int(np.prod(shape))) > 1  # the layouts do split
    rng = np.random.default_rng(0)
    values = rng.standard_normal(shape) * 3
    a = (values > 0) if dtype == "bool" else values.astype(dtype)
    x = tp.tensor(a, device="opencl")
    axis = dims if dims is not None else None
    for op, reference in _REFERENCE.items():
        if op in ("amax", "amin") and dtype == "bool":
            continue
        got = (getattr(tp, op)(x, dim=dims) if dims is not None else getattr(tp, op)(x)).cpu().numpy()
        wide = a.astype(np.float64) if dtype.startswith("float") else a
        expected = reference(wide, axis=axis)
        rtol = 3e-3 if dtype == "float16" else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), np.asarray(expected, dtype=np.float64), rtol=rtol,
                                   err_msg=f"{op} {dtype}")


@pytest.mark.parametrize("where", [0, 4095, 4096, 100000, 199999])
def test_nan_propagates_from_any_part(where):
    """A NaN in any range (first element, a range's last or first, the last element) reaches the
    result of amax, amin and sum."""
    a = np.ones(200000, np.float32)
    a[where] = np.nan
    x = tp.tensor(a, device="opencl")
    for op in ("amax", "amin", "sum"):
        assert np.isnan(getattr(tp, op)(x).item()), (op, where)


def test_split_sum_accumulates_in_the_wide_type():
    """A float32 sum of 3 * 2**24 + 4 ones is exact (a float32 running sum would stop at 2**24):
    partials accumulate wider than float32 where the device has it, and no range is long
    enough to lose ones either way."""
    x = tp.ones(3 * 2**24 + 4, device="opencl")
    assert x.sum().item() == 3 * 2**24 + 4
