"""float32 exp, log, sigmoid, tanh and erf on the CPU (eight lanes at a time on AVX2 CPUs, libm
elsewhere) and on OpenCL (the same formulas with operators only, _source._FLOAT_LANES) against
float64 references: within 4 units in the last place over a wide range,
PyTorch's special values (signed zeros, infinities, NaN), and the same value for an element
whatever its layout (contiguous, strided) or position (a run's tail is padded, not computed by
another formula)."""
import math

import numpy as np
import pytest

import tensorplug as tp


def _device(name: str) -> str:
    if name == "opencl":
        from tensorplug.backends.opencl import OpenCLBackend

        available, reason = OpenCLBackend().is_available()
        if not available:
            pytest.skip(f"OpenCL backend unavailable: {reason}")
    return name


def _apply(name: str, x, device: str) -> np.ndarray:
    return getattr(tp.tensor(x, device=device), name)().cpu().numpy()


DEVICES = ["cpu", "opencl"]


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


REFERENCES = {
    "exp": np.exp,
    "log": np.log,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "tanh": np.tanh,
    "erf": _erf,
}


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in units of float32's spacing at want (0 where both agree, NaN and inf included)."""
    want32 = want.astype(np.float32)
    spacing = np.spacing(np.abs(want32)).astype(np.float64)
    spacing[spacing == 0] = np.finfo(np.float32).smallest_subnormal
    same = (got == want) | (np.isnan(got) & np.isnan(want)) | (np.isinf(want) & (got == want32))
    with np.errstate(invalid="ignore"):
        return np.where(same, 0.0, np.abs(got.astype(np.float64) - want) / spacing)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_within_four_ulps(name, device):
    device = _device(device)
    # Arguments where the result is a normal float32 (sigmoid's below -87 are subnormal, which the
    # formula 1 / (1 + exp(-x)) flushes to 0 once exp(-x) overflows, as the scalar kernel did).
    low = {"exp": -87.0, "sigmoid": -87.0}.get(name, -12.0)
    high = {"exp": 88.0}.get(name, 12.0)
    x = np.concatenate([np.linspace(low, high, 400_003), np.logspace(-38, 1.2, 20_001),
                        -np.logspace(-38, 1.2, 20_001)]).astype(np.float32)
    if name == "log":  # its domain, subnormals and the largest float included
        x = np.concatenate([np.logspace(-45, 38.5, 400_003), np.linspace(0.5, 2.0, 20_001)]).astype(np.float32)
    with np.errstate(over="ignore"):
        want = REFERENCES[name](x.astype(np.float64))
    got = _apply(name, x, device)
    worst = _ulps(got, want)
    assert worst.max() <= 4.0, f"{name}: {worst.max():.2f} ulp at x = {x[worst.argmax()]!r}"


SPECIAL_X = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 100.0, -100.0]
#: PyTorch 2.13's float32 results (sigmoid(-100) is 0: exp(100) overflows in float32 first).
SPECIAL = {
    "exp": [1.0, 1.0, np.inf, 0.0, np.nan, 1.0, 1.0, np.inf, 3.783505853677006e-44],
    "log": [-np.inf, -np.inf, np.inf, np.nan, np.nan, -103.27892990343184, np.nan, 4.605170249938965, np.nan],
    "sigmoid": [0.5, 0.5, 1.0, 0.0, np.nan, 0.5, 0.5, 1.0, 0.0],
    "tanh": [0.0, -0.0, 1.0, -1.0, np.nan, 1e-45, -1e-45, 1.0, -1.0],
    "erf": [0.0, -0.0, 1.0, -1.0, np.nan, 1.401298464324817e-45, -1.401298464324817e-45, 1.0, -1.0],
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_special_values(name, device):
    got = _apply(name, np.array(SPECIAL_X, np.float32), _device(device))
    want = np.array(SPECIAL[name], np.float32)
    np.testing.assert_array_equal(got, want)  # NaN where NaN is expected
    np.testing.assert_array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))  # tanh(-0.0) is -0.0


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_layout_and_position_do_not_change_values(name):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(4 * 37) * 3).astype(np.float32)
    if name == "log":
        x = np.abs(x)
    whole = getattr(tp.tensor(x), name)().numpy()
    for size in range(1, 18):  # runs of every length mod 8
        np.testing.assert_array_equal(getattr(tp.tensor(x[:size]), name)().numpy(), whole[:size])
    strided = getattr(tp.tensor(x)[::4], name)().numpy()
    np.testing.assert_array_equal(strided, whole[::4])
    transposed = getattr(tp.tensor(x.reshape(4, 37)).t(), name)().numpy()
    np.testing.assert_array_equal(transposed, whole.reshape(4, 37).T)
