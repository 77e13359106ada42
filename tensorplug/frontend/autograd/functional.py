"""``backward``, ``grad``, gradient checks and anomaly detection: the functions users call."""
from __future__ import annotations

import warnings

from ...dispatcher import local_state
from ..ops.copying import FILL, fill_
from ..tensor import Tensor, empty_tensor
from .engine import run_backward, run_from_scalar
from .graph import anomaly_mode, autograd_meta

__all__ = ["backward", "grad", "gradcheck", "gradgradcheck", "set_detect_anomaly", "detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "tensor_backward", "retain_grad", "register_hook",
           "register_post_accumulate_grad_hook"]


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _seed_gradients(outputs: tuple, grad_outputs, create_graph: bool) -> tuple:
    grads = []
    for i, out in enumerate(outputs):
        g = None if grad_outputs is None else grad_outputs[i]
        if g is None:
            if out.numel() != 1:
                raise RuntimeError(f"grad can be implicitly created only for scalar outputs (output {i} has shape {list(out._shape)})")
            if not out._dtype.is_floating_point:
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs, got {out._dtype.name}")
            g = fill_(empty_tensor(out._shape, out._dtype, out._device), 1)
        elif isinstance(g, Tensor) and g._shape != out._shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {list(g._shape)} and output[{i}] has a shape of {list(out._shape)}.")
        grads.append(g)
    return tuple(grads)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves they depend on."""
    outputs = _as_tuple(tensors)
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
    grads = _seed_gradients(outputs, _as_tuple(grad_tensors), create_graph)
    retain = create_graph if retain_graph is None else retain_graph
    run_backward(outputs, grads, retain, create_graph, inputs=_as_tuple(inputs), accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs``, returned (not accumulated)."""
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    for i, out in enumerate(outs):
        if not out.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
    grads = _seed_gradients(outs, _as_tuple(grad_outputs), create_graph)
    retain = create_graph if retain_graph is None else retain_graph
    result = run_backward(outs, grads, retain, create_graph, inputs=ins, accumulate=False, allow_unused=allow_unused or materialize_grads)
    if materialize_grads:
        import tensorplug as tp

        result = tuple(tp.zeros_like(i) if g is None else g for g, i in zip(result, ins))
    return result


# (device, dtype) -> (the 0-d one that seeds loss.backward(), its version when it was filled).
_unit_seeds: dict = {}


def _unit_seed(dtype, device) -> Tensor:
    """A 0-d one of ``dtype`` on ``device`` to seed ``loss.backward()``, filled once per device and
    dtype: on OpenCL the fill of a fresh seed was a kernel launch of its own in every step (issue
    14). The engine cannot let it escape: ``.grad`` takes a gradient's memory only when nothing
    else holds it (csrc/autograd_core.cpp's may_steal), so a leaf gets a copy, and a formula
    only reads its gradient. A hook that writes into it moves its version, and the next
    backward fills a new one. A fresh seed every time on CUDA (a cached one filled on one stream
    could be read on another before the fill ran) and under a mode that forces dispatch keys on
    (local_state.include), which sees every seed's fill, as before."""
    key = (device, dtype)
    cached = _unit_seeds.get(key)
    forced = local_state.include
    if cached is not None and not forced and cached[0]._version_ref[0] == cached[1]:
        return cached[0]
    seed = empty_tensor((), dtype, device)
    keys = (seed._keys | forced) & local_state.mask
    (FILL.table.get(keys) or FILL.lookup(keys))(seed, 1)
    if device.type != "cuda" and not forced:
        _unit_seeds[key] = (seed, seed._version_ref[0])
    return seed


def tensor_backward(self: Tensor, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    node = self.grad_fn
    if (gradient is None and inputs is None and not create_graph and node is not None and not self._shape
            and self._autograd is None and self._dtype.is_floating_point and not anomaly_mode.enabled):
        # loss.backward(), the call of every training step: a seed of one and the engine, with
        # the checks below already true (a real 0-d output of a node, as its output 0).
        run_from_scalar(node, _unit_seed(self._dtype, self._device), bool(retain_graph))
        return
    backward(self, None if gradient is None else (gradient,), retain_graph, create_graph, inputs)


def retain_grad(self: Tensor) -> None:
    """Keep ``.grad`` for a non-leaf tensor after backward."""
    if not self.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self.grad_fn is None:
        return
    meta = autograd_meta(self)
    if meta.retains_grad:
        return
    meta.retains_grad = True
    import weakref

    ref = weakref.ref(self)
    nr = meta.output_nr

    def keep(grads):
        t = ref()
        if t is not None and grads[nr] is not None:
            t.grad = grads[nr].detach().clone() if t.grad is None else t.grad + grads[nr].detach()
        return None

    self.grad_fn.register_prehook(keep)


def register_hook(self: Tensor, hook):
    """``hook(grad)`` runs when this tensor's gradient is computed and may return a replacement."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    meta = autograd_meta(self)
    if self.grad_fn is None:
        if meta.hooks is None:
            meta.hooks = []
        meta.hooks.append(hook)
        from .graph import _RemovableHandle

        return _RemovableHandle(meta.hooks, hook)
    nr = meta.output_nr

    def on_grad(grads):
        replaced = hook(grads[nr]) if grads[nr] is not None else None
        if replaced is None:
            return None
        return grads[:nr] + (replaced,) + grads[nr + 1:]

    return self.grad_fn.register_prehook(on_grad)


def register_post_accumulate_grad_hook(self: Tensor, hook):
    """``hook(tensor)`` runs after a backward pass has accumulated into this leaf's ``.grad``
    (PyTorch 2.1's API; DistributedDataParallel starts its all-reduces from it)."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    meta = autograd_meta(self)
    if meta.post_accumulate_hooks is None:
        meta.post_accumulate_hooks = []
    meta.post_accumulate_hooks.append(hook)
    from .graph import _RemovableHandle

    return _RemovableHandle(meta.post_accumulate_hooks, hook)


class set_detect_anomaly:
    """Record the forward traceback of every op, and report it when its backward fails."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._previous = (anomaly_mode.enabled, anomaly_mode.check_nan)
        anomaly_mode.enabled, anomaly_mode.check_nan = bool(mode), bool(check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        anomaly_mode.enabled, anomaly_mode.check_nan = self._previous
        return False


class detect_anomaly:
    """``with detect_anomaly():`` turns anomaly detection on for the block (and warns, as PyTorch
    does, that it slows every op down)."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = bool(check_nan)
        self._previous = None
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self):
        self._previous = (anomaly_mode.enabled, anomaly_mode.check_nan)
        anomaly_mode.enabled, anomaly_mode.check_nan = True, self.check_nan
        return self

    def __exit__(self, *exc_info):
        anomaly_mode.enabled, anomaly_mode.check_nan = self._previous
        return False


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on (``set_detect_anomaly`` / ``detect_anomaly``)."""
    return anomaly_mode.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks every gradient for NaN."""
    return anomaly_mode.check_nan


def _outputs(result):
    return (result,) if isinstance(result, Tensor) else tuple(r for r in result if isinstance(r, Tensor))


def _flat_outputs(func, inputs):
    import numpy as np

    outs = _outputs(func(*inputs))
    with _no_grad():
        return np.concatenate([o.detach().cpu().numpy().astype(np.float64).reshape(-1) for o in outs]) if outs else np.zeros(0)


def _no_grad():
    from .grad_mode import no_grad

    return no_grad()


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **ignored) -> bool:
    """Compare analytical gradients with central finite differences (use float64 inputs).

    Builds both Jacobians: numerically, one input element at a time; analytically, one output
    element at a time through ``autograd.grad``.
    """
    import numpy as np

    import tensorplug as tp

    inputs = _as_tuple(inputs)
    differentiable = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    outputs = _outputs(func(*inputs))
    sizes = [o.numel() for o in outputs]
    total = sum(sizes)
    # Finite differences perturb copies, so the graph built on the real inputs stays valid.
    # (They keep requires_grad: gradgradcheck's function differentiates inside.)
    work = [x.detach().clone().requires_grad_(x.requires_grad) if isinstance(x, Tensor) else x for x in inputs]
    for i in differentiable:
        x = inputs[i]
        flat = work[i].detach().reshape(-1)
        numerical = np.zeros((x.numel(), total))
        for k in range(x.numel()):
            original = float(flat[k].item())
            flat[k] = original + eps
            plus = _flat_outputs(func, work)
            flat[k] = original - eps
            minus = _flat_outputs(func, work)
            flat[k] = original
            numerical[k] = (plus - minus) / (2 * eps)
        analytical = np.zeros_like(numerical)
        column = 0
        for out, size in zip(outputs, sizes):
            for j in range(size):
                if out.requires_grad:
                    seed = np.zeros(size)
                    seed[j] = 1.0
                    grad_out = tp.tensor(seed.reshape(out._shape), dtype=out._dtype, device=out._device)
                    (g,) = grad([out], [x], [grad_out], retain_graph=True, allow_unused=True)
                    if g is not None:
                        analytical[:, column] = g.detach().cpu().numpy().astype(np.float64).reshape(-1)
                column += 1
        if not np.allclose(analytical, numerical, atol=atol, rtol=rtol):
            worst = np.unravel_index(np.argmax(np.abs(analytical - numerical)), numerical.shape)
            message = (
                f"Jacobian mismatch for output {worst[1]} with respect to input {i}, element {worst[0]}: "
                f"numerical {numerical[worst]} vs analytical {analytical[worst]}"
            )
            if raise_exception:
                raise RuntimeError(message)
            return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **ignored) -> bool:
    """gradcheck of the first derivative (checks that backward is itself differentiable)."""
    import tensorplug as tp

    inputs = _as_tuple(inputs)
    outputs = _outputs(func(*inputs))
    if grad_outputs is None:
        grad_outputs = tuple(tp.randn(o._shape, dtype=o._dtype, device=o._device, requires_grad=True) for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    differentiable = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def first_derivative(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = _outputs(func(*ins))
        grads = grad(outs, [ins[i] for i in differentiable], gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivative, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception)


# PyTorch's torch.autograd.functional API (jacobian, hessian, vjp, jvp, hvp, vhp) lives in its own
# module, written with grad above; imported last so that module can import this one (issue 13).
from .jacobians import hessian, hvp, jacobian, jvp, vhp, vjp  # noqa: E402

__all__ += ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"]
