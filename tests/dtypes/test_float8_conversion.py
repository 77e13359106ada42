"""float8 conversions on every device that declares the float8 types, bit-exact against the float64 reference in float8_reference.py
(and against PyTorch 2.13 where it is installed): every code both ways, float32 values at and
beside every rounding boundary, float64 (rounded through float32), integers and bool."""
import math

import numpy as np
import pytest

import tensorplug as tp
from float8_reference import FORMATS, boundary_float32_values, decode, encode, encode_array

NAMES = list(FORMATS)


def _codes_of(t: tp.Tensor) -> np.ndarray:
    return t.view(tp.uint8).cpu().numpy().copy()


def _same_float32(got: np.ndarray, expected: np.ndarray) -> bool:
    """Equal bit patterns, or both NaN (NaN payloads are not part of the contract)."""
    got, expected = got.astype(np.float32), expected.astype(np.float32)
    return bool(np.all((got.view(np.uint32) == expected.view(np.uint32)) | (np.isnan(got) & np.isnan(expected))))


@pytest.mark.parametrize("name", NAMES)
def test_every_code_decodes_exactly(name, extra_device):
    codes = tp.arange(256, dtype=tp.int64, device=extra_device).to(tp.uint8).view(getattr(tp, name))
    got = codes.to(tp.float32).cpu().numpy()
    expected = np.array([decode(c, name) for c in range(256)], dtype=np.float32)
    assert _same_float32(got, expected)
    # to float64 too: exact, the same values
    assert _same_float32(codes.to(tp.float64).cpu().numpy().astype(np.float32), expected)


@pytest.mark.parametrize("name", NAMES)
def test_every_code_round_trips_through_float32(name, extra_device):
    """float8 -> float32 -> float8 gives the code back (the one NaN code of fnuz; NaNs keep their sign)."""
    codes = tp.arange(256, dtype=tp.int64, device=extra_device).to(tp.uint8)
    back = _codes_of(codes.view(getattr(tp, name)).float().to(getattr(tp, name)))
    expected = np.array([encode(decode(c, name), name) for c in range(256)], dtype=np.uint8)
    np.testing.assert_array_equal(back, expected)


@pytest.mark.parametrize("name", NAMES)
def test_float32_boundaries_round_to_nearest_even(name, extra_device):
    values = boundary_float32_values(name)
    got = _codes_of(tp.from_numpy(values).to(extra_device).to(getattr(tp, name)))
    np.testing.assert_array_equal(got, encode_array(values, name))


@pytest.mark.parametrize("name", NAMES)
def test_float32_values_across_the_range(name, extra_device):
    """Every float32 exponent from 2**-30 to 2**20 with random significands."""
    rng = np.random.default_rng(5)
    values = (rng.uniform(1, 2, 4000) * 2.0 ** rng.integers(-30, 20, 4000)).astype(np.float32)
    values = np.concatenate([values, -values])
    got = _codes_of(tp.from_numpy(values).to(extra_device).to(getattr(tp, name)))
    np.testing.assert_array_equal(got, encode_array(values, name))


@pytest.mark.parametrize("name", NAMES)
def test_float64_and_integers_go_through_float32(name, extra_device):
    dtype = getattr(tp, name)
    doubles = np.array([1.0625 + 1e-12, 1.0 + 2.0 ** -40, 1e308, -1e308, 2.0 ** -200, 300.0, 1e-300], dtype=np.float64)
    with np.errstate(over="ignore"):  # 1e308 is inf in float32, as in the conversion
        expected = encode_array(doubles.astype(np.float32), name)
    if tp.float64 in tp.device(extra_device)._dtypes:  # OpenCL devices without cl_khr_fp64 have none
        np.testing.assert_array_equal(_codes_of(tp.from_numpy(doubles).to(extra_device).to(dtype)), expected)
    ints = np.array([0, 1, -7, 300, 2 ** 40, -(2 ** 40), 17], dtype=np.int64)
    np.testing.assert_array_equal(_codes_of(tp.from_numpy(ints).to(extra_device).to(dtype)),
                                  encode_array(ints.astype(np.float32), name))
    flags = tp.tensor([True, False], device=extra_device).to(dtype).float().tolist()
    assert flags == [1.0, 0.0]


@pytest.mark.parametrize("name", NAMES)
def test_float8_to_integers_truncates(name, extra_device):
    dtype = getattr(tp, name)
    t = tp.tensor([3.5, -2.5, 0.75, 14.0], dtype=dtype, device=extra_device)
    assert t.to(tp.int64).tolist() == [3, -2, 0, 14]
    assert t.to(tp.bool).tolist() == [True, True, True, True]
    assert tp.zeros(2, dtype=dtype, device=extra_device).to(tp.bool).tolist() == [False, False]


@pytest.mark.parametrize("source", NAMES)
@pytest.mark.parametrize("target", NAMES)
def test_float8_to_float8(source, target, extra_device):
    codes = tp.arange(256, dtype=tp.int64, device=extra_device).to(tp.uint8).view(getattr(tp, source))
    got = _codes_of(codes.to(getattr(tp, target)))
    if source == target:  # no conversion at all: NaN payloads stay as they are
        expected = np.arange(256, dtype=np.uint8)
    else:
        expected = np.array([encode(decode(c, source), target) for c in range(256)], dtype=np.uint8)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", NAMES)
def test_fill_and_factories_round_like_conversion(name, extra_device):
    dtype = getattr(tp, name)
    dev = extra_device
    for value in (3.3, -0.0, 1e6, float("inf"), float("nan"), 0.001, tp.finfo(dtype).max + 1e-3):
        expected = encode(float(np.float32(value)), name)
        assert _codes_of(tp.tensor([value], dtype=dtype, device=dev)).tolist() == [expected]
        if math.isfinite(value) and abs(value) > tp.finfo(dtype).max:
            # a Python number beyond the largest value is refused by fill_ and full, as in PyTorch
            with pytest.raises(RuntimeError, match=f"value {value} cannot be converted to type {name} without overflow"):
                tp.full((2,), value, dtype=dtype, device=dev)
            with pytest.raises(RuntimeError, match="without overflow"):
                tp.zeros(2, dtype=dtype, device=dev).fill_(-value)
        else:
            assert _codes_of(tp.full((2,), value, dtype=dtype, device=dev)).tolist() == [expected] * 2
    assert _codes_of(tp.zeros(3, dtype=dtype, device=dev)).tolist() == [0, 0, 0]
    assert tp.ones(2, dtype=dtype, device=dev).float().tolist() == [1.0, 1.0]


@pytest.mark.parametrize("name", NAMES)
def test_against_torch(name, extra_device):
    torch = pytest.importorskip("torch")
    dtype, torch_dtype = getattr(tp, name), getattr(torch, name)
    values = boundary_float32_values(name)
    ours = _codes_of(tp.from_numpy(values).to(extra_device).to(dtype))
    theirs = torch.from_numpy(values).to(torch_dtype).view(torch.uint8).numpy()
    np.testing.assert_array_equal(ours, theirs)
    codes = np.arange(256, dtype=np.uint8)
    ours_back = tp.from_numpy(codes).to(extra_device).view(dtype).float().cpu().numpy()
    theirs_back = torch.from_numpy(codes).view(torch_dtype).float().numpy()
    assert _same_float32(ours_back, theirs_back)


def test_reference_agrees_with_the_spec_on_landmarks():
    """The reference itself, on values the formats' definitions give directly."""
    assert decode(0x7E, "float8_e4m3fn") == 448.0 and math.isnan(decode(0x7F, "float8_e4m3fn"))
    assert decode(0x7C, "float8_e5m2") == math.inf and decode(0x7B, "float8_e5m2") == 57344.0
    assert decode(0x7F, "float8_e4m3fnuz") == 240.0 and math.isnan(decode(0x80, "float8_e4m3fnuz"))
    assert decode(0x01, "float8_e5m2fnuz") == 2.0 ** -17
    assert encode(464.0, "float8_e4m3fn") == 0x7E  # saturates
    assert encode(61440.0, "float8_e5m2") == 0x7C  # the halfway point rounds to even: infinity
    assert encode(248.0, "float8_e4m3fnuz") == 0x80  # rounds up past the largest: NaN
    assert encode(-0.0, "float8_e5m2fnuz") == 0
