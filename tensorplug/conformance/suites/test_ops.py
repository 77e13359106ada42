"""Op database suites: forward values, gradients and error inputs, on the device under test."""
from tensorplug.conformance import _checks
from tensorplug.conformance.suites import cases


@cases("forward")
def test_forward(case, conformance):
    """Every sample of the op, through every call form, matches the float64 NumPy reference."""
    _checks.check_forward(case.payload, case.dtype, conformance.device, conformance.quick)


@cases("gradient")
def test_gradient(case, conformance):
    """Backward matches finite differences (float64), or the CPU's float64 backward."""
    _checks.check_gradient(case.payload, conformance.device, conformance.has_float64)


@cases("errors")
def test_error(case, conformance):
    """A bad call raises the documented exception type and message on every device."""
    entry, err = case.payload
    _checks.check_error(entry, err, conformance.device)
