"""The namespace as a whole: how tensors reach it, what it contains, inspection, data types."""
import importlib
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tensorplug as tp
from tensorplug import array_api

from array_api_support import SETTINGS

# The 2024.12 standard's functions of the main namespace and of the linalg extension.
STANDARD_FUNCTIONS = {
    "creation": ["arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace",
                 "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like"],
    "data types": ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"],
    "elementwise": ["abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
                    "bitwise_left_shift", "bitwise_invert", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
                    "ceil", "clip", "conj", "copysign", "cos", "cosh", "divide", "equal", "exp", "expm1", "floor",
                    "floor_divide", "greater", "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan",
                    "less", "less_equal", "log", "log1p", "log2", "log10", "logaddexp", "logical_and",
                    "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative",
                    "nextafter", "not_equal", "positive", "pow", "real", "reciprocal", "remainder", "round", "sign",
                    "signbit", "sin", "sinh", "square", "sqrt", "subtract", "tan", "tanh", "trunc"],
    "indexing": ["take", "take_along_axis"],
    "inspection": ["__array_namespace_info__"],
    "linear algebra": ["matmul", "matrix_transpose", "tensordot", "vecdot"],
    "manipulation": ["broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
                     "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack"],
    "searching": ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"],
    "set": ["unique_all", "unique_counts", "unique_inverse", "unique_values"],
    "sorting": ["argsort", "sort"],
    "statistical": ["cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var"],
    "utility": ["all", "any", "diff"],
}
LINALG_FUNCTIONS = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
                    "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve",
                    "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm"]


def test_every_tensor_returns_the_namespace(device):
    x = tp.ones(2, device=device)
    assert x.__array_namespace__() is array_api
    assert x.__array_namespace__(api_version="2024.12") is array_api
    assert x.__array_namespace__(api_version="2023.12") is array_api
    with pytest.raises(ValueError, match="unsupported array API version"):
        x.__array_namespace__(api_version="2099.12")


def test_version_and_constants(xp):
    assert xp.__array_api_version__ == "2024.12"
    assert xp.e == math.e and xp.pi == math.pi and xp.inf == math.inf and math.isnan(xp.nan)
    assert xp.newaxis is None
    x = xp.asarray([[1, 2], [3, 4]])
    assert x[xp.newaxis].shape == (1, 2, 2)


@pytest.mark.parametrize("group", sorted(STANDARD_FUNCTIONS))
def test_every_standard_function_is_present(xp, group):
    missing = [name for name in STANDARD_FUNCTIONS[group] if not callable(getattr(xp, name, None))]
    assert not missing, f"missing {group} functions: {missing}"


def test_every_linalg_function_is_present(xp):
    missing = [name for name in LINALG_FUNCTIONS if not callable(getattr(xp.linalg, name, None))]
    assert not missing


def test_lazy_name_table_matches_the_modules():
    for module, names in array_api._MODULE_NAMES.items():
        if module == "_info":
            continue
        assert tuple(importlib.import_module(f"tensorplug.array_api.{module}").__all__) == names, module
    for name in array_api.__all__:
        assert hasattr(array_api, name), name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        array_api.nope


def test_import_tensorplug_does_not_load_the_functions():
    import subprocess
    import sys

    code = ("import sys, tensorplug as tp; assert hasattr(tp.Tensor, '__array_namespace__');"
            "print(any(m.startswith('tensorplug.array_api._elementwise') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_to_device_and_device_attribute(device):
    x = tp.ones(3)
    y = x.to_device(device)
    assert y.device.type == device
    assert np.array_equal(y.cpu().numpy(), x.numpy())
    with pytest.raises(ValueError, match="no streams"):
        x.to_device("cpu", stream=1)


def test_inspection(xp):
    info = xp.__array_namespace_info__()
    caps = info.capabilities()
    assert caps["boolean indexing"] is True and caps["data-dependent shapes"] is True
    assert isinstance(caps["max dimensions"], int) and caps["max dimensions"] > 0
    devices = info.devices()
    assert isinstance(devices, list) and info.default_device() in devices
    for dev in devices:
        defaults = info.default_dtypes(device=dev)
        assert defaults["real floating"] is tp.get_default_dtype()
        assert defaults["integral"] is xp.int64 and defaults["indexing"] is xp.int64
        assert defaults["complex floating"] is tp.get_default_dtype().to_complex()
    all_dtypes = info.dtypes()
    assert set(all_dtypes) == {"bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64",
                               "complex64", "complex128"}
    assert set(info.dtypes(kind="real floating")) == {"float32", "float64"}
    assert set(info.dtypes(kind="complex floating")) == {"complex64", "complex128"}
    assert set(info.dtypes(kind=("bool", "unsigned integer"))) == {"bool", "uint8"}
    for dev in devices:
        for dt in all_dtypes.values():
            assert xp.empty(1, dtype=dt, device=dev).dtype is dt


NP_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64", "complex64", "complex128"]
dtype_names = st.sampled_from(NP_DTYPES)


@SETTINGS
@given(a=dtype_names, b=dtype_names)
def test_result_type_and_can_cast_match_numpy_within_kinds(xp, a, b):
    da, db = getattr(xp, a), getattr(xp, b)
    # real and complex floating dtypes share one lattice in the standard (float64 + complex64 is complex128)
    same_kind = da.category == db.category or {da.category, db.category} == {2, 3}
    if same_kind:
        assert xp.result_type(da, db).name == np.result_type(a, b).name
        # arrays take part like dtypes, 0-d ones included (unlike PyTorch's 0-d rule)
        assert xp.result_type(xp.zeros((), dtype=da), db).name == np.result_type(a, b).name
        assert xp.can_cast(da, db) == np.can_cast(a, b)
    else:
        assert xp.can_cast(da, db) is False


def test_result_type_with_python_scalars(xp):
    assert xp.result_type(xp.int8, 1) is xp.int8
    assert xp.result_type(xp.float32, 1.5) is xp.float32
    assert xp.result_type(xp.float64, 1) is xp.float64
    assert xp.result_type(xp.bool, True) is xp.bool
    assert xp.result_type(xp.int16, xp.uint8, 3) is xp.int16
    with pytest.raises(ValueError, match="at least one array or dtype"):
        xp.result_type(1, 2.0)


def test_binary_functions_promote_0d_arrays_like_arrays(xp):
    big = xp.asarray(1, dtype=xp.int64)
    small = xp.asarray([1, 2], dtype=xp.int8)
    assert xp.add(big, small).dtype is xp.int64  # PyTorch's big + small would be int8
    assert xp.multiply(small, 3).dtype is xp.int8
    assert xp.add(xp.asarray([1.0], dtype=xp.float32), 2).dtype is xp.float32


@pytest.mark.parametrize("name", ["float32", "float64", "complex64", "complex128"])
def test_finfo(xp, name):
    """A complex dtype's limits are its parts' (the standard: finfo(complex64).dtype is float32)."""
    got, want = xp.finfo(getattr(xp, name)), np.finfo(name)
    assert (got.bits, got.eps, got.max, got.min, got.smallest_normal) == (
        want.bits, float(want.eps), float(want.max), float(want.min), float(want.smallest_normal))
    assert got.dtype is getattr(xp, want.dtype.name)
    assert all(isinstance(v, float) for v in (got.eps, got.max, got.min, got.smallest_normal))
    assert xp.finfo(xp.ones(1, dtype=getattr(xp, name))).bits == want.bits
    with pytest.raises(ValueError, match="floating-point"):
        xp.finfo(xp.int32)


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8"])
def test_iinfo(xp, name):
    got, want = xp.iinfo(getattr(xp, name)), np.iinfo(name)
    assert (got.bits, got.max, got.min) == (want.bits, int(want.max), int(want.min))
    assert all(isinstance(v, int) for v in (got.bits, got.max, got.min))
    with pytest.raises(ValueError, match="integer"):
        xp.iinfo(xp.float32)


@pytest.mark.parametrize("kind", ["bool", "signed integer", "unsigned integer", "integral", "real floating",
                                  "complex floating", "numeric"])
@pytest.mark.parametrize("name", NP_DTYPES)
def test_isdtype_matches_numpy(xp, name, kind):
    assert xp.isdtype(getattr(xp, name), kind) == np.isdtype(np.dtype(name), kind)


def test_isdtype_tuples_and_errors(xp):
    assert xp.isdtype(xp.uint8, ("bool", xp.uint8))
    assert not xp.isdtype(xp.float32, (xp.float64, "integral"))
    with pytest.raises(ValueError, match="unknown dtype kind"):
        xp.isdtype(xp.float32, "floats")
    with pytest.raises(TypeError, match="tensorplug dtype"):
        xp.isdtype("float32", "numeric")


@SETTINGS
@given(src=dtype_names, dst=dtype_names)
def test_astype_matches_numpy(xp, src, dst):
    values = np.array([0, 1, 5, 100], dtype=src)
    x = xp.asarray(values)
    if x.dtype.category == 3 and getattr(xp, dst).category in (1, 2):
        # complex to a real numeric dtype: "should not be permitted" (the standard's astype)
        with pytest.raises(TypeError, match="imaginary part"):
            xp.astype(x, getattr(xp, dst))
        return
    out = xp.astype(x, getattr(xp, dst))
    assert out.dtype is getattr(xp, dst)
    np.testing.assert_array_equal(out.numpy(), values.astype(dst))
    assert xp.astype(x, x.dtype, copy=False) is x
    copied = xp.astype(x, x.dtype)
    assert copied is not x and copied.data_ptr() != x.data_ptr()


def test_astype_moves_devices(xp, device):
    x = xp.asarray([1.5, 2.5])
    y = xp.astype(x, xp.int32, device=device)
    assert y.device.type == device and y.dtype is xp.int32
    np.testing.assert_array_equal(y.cpu().numpy(), [1, 2])


def test_hypothesis_array_api_strategies_draw_tensors(xp):
    """Hypothesis's own array API strategies (which the standard's test suite builds on) work on
    this namespace for every dtype it has."""
    from hypothesis.extra.array_api import make_strategies_namespace

    xps = make_strategies_namespace(xp, api_version="2024.12")
    dtypes = st.sampled_from([xp.bool, xp.int8, xp.uint8, xp.int16, xp.int32, xp.int64, xp.float32, xp.float64])
    seen = set()

    @SETTINGS
    @given(x=dtypes.flatmap(lambda dt: xps.arrays(dtype=dt, shape=xps.array_shapes(min_dims=0, max_dims=3))))
    def draw(x):
        assert isinstance(x, tp.Tensor)
        seen.add(x.dtype)

    draw()
    assert seen
