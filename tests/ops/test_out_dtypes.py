"""Which dtypes an out= tensor may have, op by op, as PyTorch 2.13 decides (issue 16): ops that
keep their input's dtype and the matrix products want exactly the result's dtype; the others
take any dtype the result casts to without a category change."""
import numpy as np
import pytest

import tensorplug as tp
from device_params import every_device, torch_or_skip


def _calls(L, device):
    def t(*values, dtype="float32"):
        x = L.tensor(values, dtype=getattr(L, dtype))
        return x if L.__name__ == "torch" else x.to(device)

    a, v = t([1.5, -2.0], [0.5, 3.0]), t(1.0, -2.0)
    i = t(3, -4, dtype="int16")
    return {
        "abs": lambda o: L.abs(a, out=o),
        "neg of int16": lambda o: L.neg(i, out=o),
        "floor": lambda o: L.floor(a, out=o),
        "ceil": lambda o: L.ceil(a, out=o),
        "round": lambda o: L.round(a, out=o),
        "trunc of int16": lambda o: L.trunc(i, out=o),
        "sign": lambda o: L.sign(a, out=o),
        "bitwise_not": lambda o: L.bitwise_not(i, out=o),
        "frac": lambda o: L.frac(a, out=o),
        "nan_to_num": lambda o: L.nan_to_num(a, out=o),
        "clamp": lambda o: L.clamp(a, -1, 1, out=o),
        "clip": lambda o: L.clip(a, -1, 1, out=o),
        "where": lambda o: L.where(a > 0, a, a * 2, out=o),
        "mm": lambda o: L.mm(a, a, out=o),
        "matmul": lambda o: L.matmul(a, v, out=o),
        "bmm": lambda o: L.bmm(a[None], a[None], out=o),
        "addmm": lambda o: L.addmm(a, a, a, out=o),
        "addmv": lambda o: L.addmv(v, a, v, out=o),
        # These take an out= of a wider dtype (the result is cast into it):
        "exp": lambda o: L.exp(a, out=o),
        "square": lambda o: L.square(a, out=o),
        "add": lambda o: L.add(a, v, out=o),
        "lerp": lambda o: L.lerp(a, a, 0.5, out=o),
        "var": lambda o: L.var(a, 0, out=o),
        "cat": lambda o: L.cat([a, a], out=o),
        # Reductions and scans compute in out's dtype (mean refuses an integer one):
        "sum": lambda o: L.sum(a, 0, out=o),
        "sum of int16": lambda o: L.sum(i, 0, out=o),
        "prod": lambda o: L.prod(a, 1, out=o),
        "mean": lambda o: L.mean(a, 0, out=o),
        "cumsum": lambda o: L.cumsum(a, 1, out=o),
        "cumprod of int16": lambda o: L.cumprod(i, 0, out=o),
    }


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("out_dtype", ["float64", "float16", "float32", "int16", "int64"])
def test_out_dtype_is_accepted_or_refused_as_in_pytorch(device, out_dtype):
    """Each op accepts out= of ``out_dtype`` exactly when PyTorch does, and then writes PyTorch's values."""
    torch = torch_or_skip()
    expected_calls, calls = _calls(torch, device), _calls(tp, device)
    for name, expected_call in expected_calls.items():
        expected_out = torch.empty(0, dtype=getattr(torch, out_dtype))
        out = tp.empty(0, dtype=getattr(tp, out_dtype), device=device)
        try:
            expected_call(expected_out)
        except (RuntimeError, TypeError):  # torch.cat raises TypeError, the others RuntimeError
            with pytest.raises((RuntimeError, TypeError), match="out tensor to have dtype|can't be cast"):
                calls[name](out)
            continue
        calls[name](out)
        assert out.dtype.name == out_dtype and out.shape == tuple(expected_out.shape), name
        np.testing.assert_allclose(out.cpu().numpy().astype(np.float64), expected_out.double().numpy(), rtol=1e-3,
                                   err_msg=name)
