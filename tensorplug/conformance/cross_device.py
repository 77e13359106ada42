"""Audit: a 0-d CPU tensor beside tensors on another device, for every op database sample.

PyTorch lets a 0-d CPU tensor join a TensorIterator-style op (elementwise, comparisons, where,
clamp, lerp, ...) whose other tensors live on another device, and refuses any other mix with
"Expected all tensors to be on the same device". For every op sample with two or more tensor
arguments the audit replaces one argument by a 0-d CPU tensor, puts the others on each
non-CPU device, and checks:

1. the call either raises a clear error (when PyTorch refuses the same mix) or returns the
   all-CPU result, on the other device, with the dtype PyTorch gives (a 0-d float64 CPU tensor
   with an int64 device tensor promotes to float64);
2. a 0-d CPU tensor that requires grad gets its gradient 0-d, on the CPU, with the all-CPU value;
3. the device tensors' gradients arrive on their device with their shape and the all-CPU values.

Which mixes PyTorch accepts is learned by running torch (if installed) with the other tensors on
the ``meta`` device, which applies the device rules without computing anything (where meta's
rules differ from a real device's, ``META_DIFFERS`` says so). The reference is the same call with
every tensor on the CPU, itself checked against the op's NumPy float64 reference (float32
samples); gradients are compared with the all-CPU backward.

    python -m tensorplug.conformance.cross_device [--devices opencl,npdev] [--ops REGEX] [-v]

Prints one line per finding and a summary; exits 1 when a silent wrong answer or a crash is found.
"""
from __future__ import annotations

import argparse
import re
import sys
import warnings
import zlib
from collections import Counter
from dataclasses import replace

import numpy as np

import tensorplug as tp
from .opdb import op_database
from .opdb._core import FLOAT_DTYPES, Arg, Sample, materialize, to_numpy

__all__ = ["Audit", "audit", "SERIOUS", "main"]

#: The dtypes probed: float32 for values and gradients; int64 with a float64 0-d tensor for the
#: 0-d promotion rule (the result is float64: a 0-d tensor's dtype counts within its category,
#: where a Python float would give the default float32).
PROBED_DTYPES = ("float32", "int64")

#: Where the meta device's rules differ from a real device's, by (op, argument position): meta
#: kernels skip checks that PyTorch's CUDA kernels make (masked_fill's mask and self, searchsorted's
#: boundaries and values, addmm's bias go through same-device checks), and the meta versions of
#: copysign, floor_divide and the mse/smooth_l1/huber losses refuse a CPU scalar that the CUDA
#: kernels (TensorIterator binary ops) take. Refusals and acceptances at these positions are
#: counted apart, not reported as gaps.
META_DIFFERS = {
    (name, position)
    for name in ("masked_fill", "searchsorted", "bucketize", "copysign", "floor_divide", "mse_loss",
                 "smooth_l1_loss", "huber_loss")
    for position in (0, 1)
} | {("addmm", 0), ("masked_fill", 2)}

#: Entries whose database call is not the op alone, by name, and why they are left out.
LEFT_OUT = {
    "full (edge values)": "its call reads int64 results back to the host to compare halves",
}

SAME_DEVICE_WORDS = re.compile(r"same device|expected device|device", re.IGNORECASE)


def _seed(*parts) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def _call(entry, module, tensors, kwargs, form="function"):
    """Run ``entry``'s function form (or method form) with ``module`` as tensorplug or torch."""
    if form == "method":
        return getattr(tensors[0], entry.method)(*tensors[1:], **kwargs)
    if entry.call is not None:
        return entry.call(module, *tensors, **kwargs)
    if entry.func is not None:
        return getattr(module, entry.func or entry.name)(*tensors, **kwargs)
    return getattr(tensors[0], entry.method)(*tensors[1:], **kwargs)


def _outputs(result):
    items = result if isinstance(result, (tuple, list)) else (result,)
    return [o for o in items if hasattr(o, "dtype") and hasattr(o, "device")]


def _is_tensor(value) -> bool:
    return hasattr(value, "dtype") and hasattr(value, "device") and hasattr(value, "shape")


def _to_torch(value, device):
    """A tensorplug tensor (or a kwarg holding a tensorplug dtype) as torch sees it."""
    torch = _torch()
    if _is_tensor(value):
        array = to_numpy(value)
        dtype = getattr(torch, value.dtype.name)
        return torch.tensor(array).to(dtype).to(device)
    if isinstance(value, tp.dtype):
        return getattr(torch, value.name)
    if isinstance(value, list):
        return [_to_torch(v, device) for v in value]
    return value


def _torch():
    try:
        import torch
    except ImportError:  # the oracle is optional: without it a refusal is only checked for clarity
        return None
    return torch


def torch_accepts(entry, args, position, kwargs):
    """(accepted, result dtype names) with every tensor on ``meta`` except the 0-d CPU one;
    None when torch is missing or cannot express the call."""
    torch = _torch()
    if torch is None:
        return None
    try:
        torch_args = [_to_torch(a, "cpu" if k == position else "meta") for k, a in enumerate(args)]
        torch_kwargs = {k: _to_torch(v, "meta") for k, v in kwargs.items()}
    except Exception:
        return None
    try:
        result = _call(entry, torch, torch_args, torch_kwargs)
    except NotImplementedError:
        return None  # no meta kernel: the oracle does not know
    except Exception as exc:
        if "meta tensors" in str(exc):  # a number argument the op reads with item(): unknown
            return None
        return (False, str(exc).splitlines()[0][:120])
    return (True, [str(o.dtype).replace("torch.", "") for o in _outputs(result)])


def _numbers_as_tensors(sample: Sample) -> Sample:
    """``sample`` with its positional numbers (clamp's bounds, lerp's weight, pow's exponent)
    as 0-d tensor arguments, which PyTorch's elementwise ops take in their place: a float in the
    sample's dtype (so it is differentiated), an int as int64 (a Python int does not promote a
    float tensor, nor does an int64 0-d tensor)."""
    args = tuple(Arg((), values=a, dtype=None if isinstance(a, float) else "int64")
                 if isinstance(a, (int, float)) and not isinstance(a, bool) else a for a in sample.args)
    return replace(sample, args=args) if args != sample.args else sample


def _was_a_number(arg: Arg) -> bool:
    return arg.shape == () and arg.values is not None and not isinstance(arg.values, (list, tuple))


class Audit:
    """Counts per outcome and the findings (kind, description) of one run; see the module."""

    def __init__(self, devices, verbose):
        self.devices = devices
        self.verbose = verbose
        self.counts = Counter()
        self.findings: list[tuple[str, str]] = []

    def report(self, kind: str, where: str, message: str):
        self.counts[kind] += 1
        self.findings.append((kind, f"{where}: {message}"))
        print(f"[{kind}] {where}: {message}", flush=True)

    # --- one combination ------------------------------------------------------------------

    def probe(self, entry, sample, dtype, index, position, tie=False):
        """One argument as a 0-d CPU tensor: its own first value, or with ``tie`` the first
        value of another argument of its dtype (ties decide where clamp, maximum, sort-like
        derivatives send a gradient, so both devices must agree there too)."""
        seed = _seed(entry.name, dtype, index)
        tensors, arrays = materialize(tp, sample, dtype, "cpu", seed)
        arg = sample.args[position]
        values = np.asarray(arrays[position])
        if tie:
            others = [np.asarray(arrays[k]) for k, a in enumerate(sample.args)
                      if k != position and isinstance(a, Arg) and (a.dtype or dtype) == (arg.dtype or dtype)]
            others = [o for o in others if o.size]
            if not others:
                return
            values = others[0]
        if values.size == 0:
            return
        scalar_dtype = arg.dtype or dtype
        if dtype == "int64" and arg.dtype is None:
            scalar_dtype = "float64"  # the promotion probe
        scalar_value = float(values.reshape(-1)[0])
        if scalar_dtype == "float64" and dtype == "int64":
            scalar_value += 0.5
        try:
            zero_d = tp.tensor(scalar_value, dtype=getattr(tp, scalar_dtype))
        except (RuntimeError, OverflowError):  # an int64 extreme read back as a float
            self.counts["value not representable as a 0-d tensor"] += 1
            return
        cpu_args = list(tensors)
        cpu_args[position] = zero_d
        try:
            expected = _call(entry, tp, cpu_args, dict(sample.kwargs))
        except Exception:
            self.counts["cpu refuses a 0-d argument here"] += 1
            return
        expected_outs = _outputs(expected)
        self.check_numpy(entry, sample, dtype, arrays, position, scalar_value, expected_outs)
        oracle = torch_accepts(entry, cpu_args, position, dict(sample.kwargs))
        if (entry.name, position) in META_DIFFERS and oracle is not None:
            self.counts["meta oracle not trusted (META_DIFFERS)"] += 1
            oracle = None
        for device in self.devices:
            where = (f"{entry.name} '{sample.name}' {dtype} arg {position} -> 0-d cpu {scalar_dtype}"
                     f"{' (a tie)' if tie else ''}, others on {device}")
            self.counts["combinations"] += 1
            accepted = self.check_forward(entry, sample, cpu_args, position, device, expected_outs, oracle, where)
            if entry.method and (entry.call is not None or entry.func is not None):
                # The method form too (``cpu_0d.add(device_tensor)`` has a CPU self).
                self.counts["combinations"] += 1
                self.check_forward(entry, sample, cpu_args, position, device, expected_outs, oracle,
                                   where.replace(entry.name, f"Tensor.{entry.method}", 1), "method")
            if entry.inplace and position > 0:
                self.check_inplace(entry, sample, cpu_args, position, device, where)
            if accepted and entry.differentiable and sample.grad and dtype == "float32" and scalar_dtype in FLOAT_DTYPES:
                self.check_gradient(entry, sample, cpu_args, position, device, where)

    def check_numpy(self, entry, sample, dtype, arrays, position, scalar_value, expected_outs):
        """The all-CPU result against the op's NumPy float64 reference with the same 0-d value,
        so that every mixed-device result compared with it is checked independently too.
        float32 only: the int64 probe's float64 0-d value is outside what the int references
        were written for."""
        if dtype != "float32":
            return
        numpy_args = list(arrays)
        numpy_args[position] = np.array(scalar_value)
        try:
            with np.errstate(all="ignore"):
                reference = entry.reference(dtype)(*numpy_args, **sample.kwargs)
        except Exception:
            self.counts["no NumPy reference for a 0-d argument"] += 1
            return
        references = reference if isinstance(reference, (tuple, list)) else (reference,)
        for got, want in zip(expected_outs, references):
            want = np.asarray(want, dtype=np.float64)
            if want.shape != tuple(got.shape):
                self.counts["no NumPy reference for a 0-d argument"] += 1
                return
            if not self._close(to_numpy(got), want, got.dtype.name):
                self.report("CPU differs from NumPy", f"{entry.name} '{sample.name}' arg {position} 0-d", "values")
                return
        self.counts["all-CPU result checked against NumPy"] += 1

    def _move(self, args, position, device):
        return [a if k == position or not _is_tensor(a) else a.to(device) for k, a in enumerate(args)]

    def check_forward(self, entry, sample, cpu_args, position, device, expected_outs, oracle, where,
                      form="function"):
        mixed = self._move(cpu_args, position, device)
        try:
            got = _call(entry, tp, mixed, dict(sample.kwargs), form)
        except (RuntimeError, ValueError, TypeError, IndexError) as exc:
            message = str(exc).splitlines()[0][:160]
            if oracle is not None and oracle[0]:
                self.report("GAP: torch accepts, tensorplug raises", where, f"{type(exc).__name__}: {message}")
            elif not SAME_DEVICE_WORDS.search(str(exc)) and oracle is None:
                self.report("unclear refusal", where, f"{type(exc).__name__}: {message}")
            elif oracle is None:
                self.counts["refused naming the devices (no oracle)"] += 1
            else:
                self.counts["refused as torch does"] += 1
            return False
        except Exception as exc:  # noqa: BLE001 - anything else is a crash of the op
            self.report("CRASH", where, f"{type(exc).__name__}: {exc}")
            return False
        if oracle is not None and not oracle[0]:
            self.counts["lenient: torch refuses, tensorplug accepts"] += 1
            if self.verbose:
                print(f"[lenient] {where}: torch says {oracle[1]}")
        got_outs = _outputs(got)
        # Where every tensor moved to the device was a number in the sample (a dim, a size), the
        # op may read it as a number and answer on the CPU, as PyTorch does through __index__.
        moved = [a for k, a in enumerate(sample.args) if k != position and isinstance(a, Arg)]
        device_expected = not all(_was_a_number(a) for a in moved)
        if len(got_outs) != len(expected_outs):
            self.report("WRONG", where, f"{len(got_outs)} outputs, the all-CPU call gives {len(expected_outs)}")
            return True
        for k, (g, e) in enumerate(zip(got_outs, expected_outs)):
            label = f"output {k}"
            if device_expected and g.device.type != device:
                self.report("WRONG", where, f"{label} on {g.device}, expected {device}")
            if g.dtype != e.dtype:
                self.report("WRONG", where, f"{label} dtype {g.dtype.name}, the all-CPU call gives {e.dtype.name}")
            if oracle is not None and oracle[0] and k < len(oracle[1]) and g.dtype.name != oracle[1][k]:
                self.report("WRONG", where, f"{label} dtype {g.dtype.name}, torch gives {oracle[1][k]}")
            if tuple(g.shape) != tuple(e.shape):
                self.report("WRONG", where, f"{label} shape {list(g.shape)}, expected {list(e.shape)}")
                continue
            if not self._close(to_numpy(g), to_numpy(e), e.dtype.name):
                self.report("WRONG", where, f"{label} values differ from the all-CPU call")
        self.counts["accepted"] += 1
        return True

    def check_inplace(self, entry, sample, cpu_args, position, device, where):
        """``device_tensor.op_(..., cpu_0d, ...)`` writes what the same call does on the CPU."""
        where = where.replace(entry.name, entry.inplace, 1)
        on_cpu = [a.clone() if _is_tensor(a) else a for a in cpu_args]
        try:
            getattr(on_cpu[0], entry.inplace)(*on_cpu[1:], **sample.kwargs)
        except Exception:
            return  # the in-place form refuses this sample on the CPU too (a dtype it cannot hold)
        mixed = self._move(cpu_args, position, device)
        mixed[0] = mixed[0].clone()
        self.counts["in-place combinations"] += 1
        try:
            result = getattr(mixed[0], entry.inplace)(*mixed[1:], **sample.kwargs)
        except (RuntimeError, ValueError, TypeError, IndexError) as exc:
            kind = "in-place refuses" if (entry.name, position) not in META_DIFFERS else "in-place refuses (as CUDA)"
            self.report(kind, where, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
            return
        except Exception as exc:  # noqa: BLE001
            self.report("CRASH", where, f"{type(exc).__name__}: {exc}")
            return
        if result is not mixed[0] or result.device.type != device:
            self.report("WRONG", where, "did not return self on its device")
        elif not self._close(to_numpy(result), to_numpy(on_cpu[0]), on_cpu[0].dtype.name):
            self.report("WRONG", where, "values differ from the all-CPU in-place call")

    @staticmethod
    def _close(got, expected, dtype):
        if dtype in ("float32", "float16", "bfloat16"):
            return np.allclose(got, expected, rtol=1e-4, atol=1e-5, equal_nan=True)
        return np.allclose(got, expected, rtol=1e-9, atol=0, equal_nan=True)

    def _gradients(self, entry, sample, args, device_of_cotangent):
        """(wrt tensors, their gradients) of sum(output * fixed cotangent)."""
        wrt = []
        for arg, t in zip(sample.args, args):
            if isinstance(arg, Arg) and arg.grad and arg.dtype is None and t.dtype.name in FLOAT_DTYPES:
                t.requires_grad_(True)
                wrt.append(t)
        outs = [o for o in _outputs(_call(entry, tp, args, dict(sample.kwargs)))
                if o.requires_grad and o.dtype.name in FLOAT_DTYPES]
        if not outs or not wrt:
            return wrt, None
        rng = np.random.default_rng(7)
        cotangents = [tp.tensor(rng.uniform(-1, 1, size=tuple(o.shape)), dtype=o.dtype, device=o.device) for o in outs]
        return wrt, tp.autograd.grad(outs, wrt, cotangents, allow_unused=True)

    def check_gradient(self, entry, sample, cpu_args, position, device, where):
        fresh = [a.detach().clone() if _is_tensor(a) else a for a in cpu_args]
        try:
            cpu_wrt, cpu_grads = self._gradients(entry, sample, fresh, "cpu")
        except Exception:
            return  # the all-CPU backward does not run: nothing to compare with
        if cpu_grads is None:
            return
        mixed = [a.detach().clone() if _is_tensor(a) else a for a in self._move(cpu_args, position, device)]
        try:
            wrt, grads = self._gradients(entry, sample, mixed, device)
        except Exception as exc:  # noqa: BLE001
            self.report("GRAD CRASH", where, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
            return
        self.counts["gradient combinations"] += 1
        for k, (w, g, cg) in enumerate(zip(wrt, grads, cpu_grads)):
            label = f"gradient of input {k} ({'0-d cpu' if w is mixed[position] else w.device.type})"
            if (g is None) != (cg is None):
                self.report("GRAD WRONG", where, f"{label}: {'lost' if g is None else 'unexpected'}")
                continue
            if g is None:
                continue
            if g.device != w.device:
                self.report("GRAD WRONG", where, f"{label} on {g.device}")
            if tuple(g.shape) != tuple(w.shape):
                self.report("GRAD WRONG", where, f"{label} shape {list(g.shape)}, input {list(w.shape)}")
                continue
            if not np.allclose(to_numpy(g), to_numpy(cg), rtol=1e-3, atol=1e-4, equal_nan=True):
                self.report("GRAD WRONG", where, f"{label} values differ from the all-CPU backward")

    # --- the whole database -----------------------------------------------------------------

    def run(self, pattern):
        # Warnings (a loss's target size) would read as refusals where they are errors.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._run(pattern)

    def _run(self, pattern):
        for entry in op_database().values():
            if entry.needs_autocast or entry.name in LEFT_OUT or (pattern and not re.search(pattern, entry.name)):
                continue
            for dtype in PROBED_DTYPES:
                if dtype not in entry.dtypes:
                    continue
                samples = list(entry.samples(dtype))
                if dtype == "float32" and entry.grad_samples is not None:
                    samples += list(entry.grad_samples())
                for index, sample in enumerate(samples):
                    if sample.large:
                        continue
                    sample = _numbers_as_tensors(sample)
                    positions = [k for k, a in enumerate(sample.args) if isinstance(a, Arg)]
                    if len(positions) < 2:
                        continue
                    for position in positions:
                        try:
                            self.probe(entry, sample, dtype, index, position)
                            if dtype == "float32":
                                self.probe(entry, sample, dtype, index, position, tie=True)
                        except Exception as exc:  # noqa: BLE001 - an audit bug must not end the audit
                            self.report("audit error", f"{entry.name} '{sample.name}'", f"{type(exc).__name__}: {exc}")


#: The findings that are bugs of the first order (a wrong answer, a lost gradient, a crash).
SERIOUS = ("WRONG", "CRASH", "GRAD WRONG", "GRAD CRASH", "CPU differs from NumPy")


def audit(devices, pattern=None, verbose=False) -> Audit:
    """Run the audit on ``devices`` for the ops whose name matches ``pattern``."""
    result = Audit(list(devices), verbose)
    result.run(pattern)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", default="opencl,npdev")
    parser.add_argument("--ops", default=None, help="regex on op names")
    parser.add_argument("-v", "--verbose", action="store_true")
    options = parser.parse_args(argv)
    result = audit(options.devices.split(","), options.ops, options.verbose)
    print("\nsummary:")
    for kind, count in sorted(result.counts.items()):
        print(f"  {kind}: {count}")
    return 1 if any(kind in SERIOUS for kind, _ in result.findings) else 0


if __name__ == "__main__":
    sys.exit(main())
