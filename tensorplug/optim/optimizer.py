"""The Optimizer base class: parameter groups, per-parameter state, zero_grad and state dicts.

Follows ``torch.optim.Optimizer``: ``param_groups`` is a list of dicts (``params`` plus the
hyperparameters, filled from ``defaults``), ``state`` maps a parameter to its dict of state, and
``state_dict()`` names parameters by their position across groups (ints), so a state dict can be
loaded into an optimizer built over other parameter objects of the same shapes.
"""
from __future__ import annotations

import copy
import itertools
from collections import defaultdict
from functools import wraps
from typing import Any, Callable, Iterable

from ..frontend import dtypes as _dt
from ..frontend.autograd import enable_grad, no_grad
from ..frontend.factories import tensor, zeros_like
from ..frontend.tensor import Tensor

__all__ = ["Optimizer", "required"]


class _Required:
    """The default of a hyperparameter every param group must give (``SGD``'s lr in old PyTorch)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


def _use_grad(step: Callable) -> Callable:
    """Run an optimizer's ``step`` without recording autograd (the closure re-enables it)."""

    @wraps(step)
    def step_without_autograd(self, *args, **kwargs):
        with no_grad():
            return step(self, *args, **kwargs)

    return step_without_autograd


# --- parameter groups ---------------------------------------------------------------------------
def _param_list(params) -> list:
    """A group's ``params`` as a list: one tensor, or an ordered collection of them."""
    if isinstance(params, Tensor):
        return [params]
    if isinstance(params, set):
        # A set's order changes from run to run, and state dicts name parameters by position.
        raise TypeError(
            "optimizer parameters need to be organized in ordered collections, but the ordering of "
            "tensors in sets will change between runs. Please use a list instead."
        )
    return list(params)


def _check_optimizable(param) -> None:
    if not isinstance(param, Tensor):
        raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(param).__name__}")
    if not param.is_leaf:
        raise ValueError("can't optimize a non-leaf Tensor")


def _cleared(grad: Tensor) -> Tensor:
    """``grad`` zeroed in place, cut from any graph that computed it (PyTorch's zero_grad(False))."""
    if grad.grad_fn is not None:
        grad = grad.detach()
    else:
        grad.requires_grad_(False)
    return grad.zero_()


class Optimizer:
    """Base class of all optimizers.

    ``params`` is an iterable of tensors, or of dicts each holding ``params`` and per-group
    hyperparameters that override ``defaults``.
    """

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {type(params).__name__}")
        self.defaults = defaults
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        entries = list(params)
        if not entries:
            raise ValueError("optimizer got an empty parameter list")
        # Either every entry is a group dict, or the entries are the tensors of a single group.
        groups = entries if isinstance(entries[0], dict) else [{"params": entries}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (a dict with ``params`` and optional hyperparameters)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        members = _param_list(param_group["params"])
        for member in members:
            _check_optimizable(member)
        missing = [name for name, value in self.defaults.items() if value is required and name not in param_group]
        if missing:
            raise ValueError(f"parameter group didn't specify a value of required optimization parameter {missing[0]}")
        new_ids = [id(member) for member in members]
        if len(set(new_ids)) < len(new_ids):
            raise ValueError(
                "optimizer contains a parameter group with duplicate parameters; in future, this will cause an error"
            )
        if not self._param_ids().isdisjoint(new_ids):
            raise ValueError("some parameters appear in more than one parameter group")
        # The caller's dict becomes the group (PyTorch's param_groups hold the dicts passed in).
        param_group["params"] = members
        for name, value in self.defaults.items():
            param_group.setdefault(name, value)
        self.param_groups.append(param_group)

    def _all_params(self) -> Iterable[Tensor]:
        """Every parameter, group by group, in the order state dicts number them."""
        return itertools.chain.from_iterable(group["params"] for group in self.param_groups)

    def _param_ids(self) -> set[int]:
        return {id(param) for param in self._all_params()}

    # --- gradients ---------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters (to None by default, as PyTorch does)."""
        for param in self._all_params():
            if param.grad is not None:
                param.grad = None if set_to_none else _cleared(param.grad)

    def step(self, closure: Callable | None = None):
        """Update the parameters once; ``closure`` re-evaluates the loss where the algorithm needs it."""
        raise NotImplementedError

    @staticmethod
    def _evaluate(closure: Callable | None):
        """The closure's loss, computed with autograd on (step itself runs without); None without one."""
        if closure is None:
            return None
        with enable_grad():
            return closure()

    #: How the optimizer refuses a sparse gradient (nn.Embedding(sparse=True)); None: PyTorch's
    #: "<name> does not support sparse gradients".
    _sparse_refusal: str | None = None

    def _check_dense(self, grad) -> None:
        """Refuse a sparse gradient as PyTorch does in optimizers without a sparse update."""
        if not isinstance(grad, Tensor):
            raise RuntimeError(self._sparse_refusal or f"{type(self).__name__} does not support sparse gradients")

    def _counted_grads(self, group: dict, *buffers: str):
        """``(param, state, grad)`` for each parameter of ``group`` that has a gradient, after
        the bookkeeping the Adam-family updates share: state made on first use (a float32 step
        counter, then a zero buffer per name in ``buffers``), the step counted, and the gradient
        negated when the group maximizes."""
        for p in group["params"]:
            if p.grad is None:
                continue
            self._check_dense(p.grad)
            state = self.state[p]
            if not state:
                state["step"] = tensor(0.0, dtype=_dt.float32)
                state.update((name, zeros_like(p)) for name in buffers)
            state["step"].add_(1)
            yield p, state, (-p.grad if group["maximize"] else p.grad)

    # --- state dicts -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [index, ...]}]}``.

        Parameters are named by their position across all groups. State tensors are the
        optimizer's own (not copies), as in PyTorch; save or deep-copy the dict to keep it.
        """
        position = {id(param): index for index, param in enumerate(self._all_params())}
        saved_groups, first = [], 0
        for group in self.param_groups:
            count = len(group["params"])
            saved = {key: value for key, value in group.items() if key != "params"}
            saved["params"] = list(range(first, first + count))
            saved_groups.append(saved)
            first += count
        saved_state = {}
        for key, value in self.state.items():
            if not isinstance(key, Tensor):
                saved_state[key] = value  # loaded for an index this optimizer has no parameter for
            elif id(key) in position:
                saved_state[position[id(key)]] = value
        return {"state": saved_state, "param_groups": saved_groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a dict made by ``state_dict()`` (hyperparameters and per-parameter state)."""
        loaded_groups = copy.deepcopy(state_dict["param_groups"])
        if len(loaded_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(mine["params"]) != len(loaded["params"]) for mine, loaded in zip(self.param_groups, loaded_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of optimizer's group")
        param_at = {}
        for mine, loaded in zip(self.param_groups, loaded_groups):
            param_at.update(zip(loaded["params"], mine["params"]))
            loaded["params"] = mine["params"]  # the hyperparameters are the saved ones, the tensors ours
        new_state: defaultdict = defaultdict(dict)
        for index, entry in state_dict["state"].items():
            param = param_at.get(int(index))  # formats with only string keys give "0", "1", ...
            if param is None:
                new_state[index] = entry
            else:
                new_state[param] = {key: _placed_like(param, key, value) for key, value in entry.items()}
        self.state = new_state
        self.param_groups = loaded_groups

    # --- printing and pickling ---------------------------------------------------------------
    def __repr__(self) -> str:
        blocks = []
        for number, group in enumerate(self.param_groups):
            settings = [f"    {key}: {group[key]}" for key in sorted(group) if key != "params"]
            blocks.append("\n".join([f"Parameter Group {number}", *settings]))
        # PyTorch leaves an empty line between groups.
        return f"{type(self).__name__} (\n" + "\n\n".join(blocks) + "\n)"

    def __getstate__(self) -> dict[str, Any]:
        # Only what defines the optimizer: subclasses' caches are rebuilt from it.
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}


def _placed_like(param: Tensor, key: str, value):
    """A loaded state value on the parameter's device, floating tensors also in its dtype; the
    tensors inside dicts, lists and tuples too (LBFGS keeps lists of them)."""
    if isinstance(value, dict):
        return {k: _placed_like(param, k, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_placed_like(param, key, v) for v in value)
    if not isinstance(value, Tensor) or key == "step":
        return value  # numbers as they are; the step count stays a float32 CPU tensor, as in PyTorch
    if param.is_floating_point() and value.is_floating_point():
        return value.to(device=param.device, dtype=param.dtype)
    return value.to(device=param.device)


def check_unsupported(name: str, **flags) -> None:
    """Reject PyTorch's implementation switches that tensorplug does not have."""
    for flag, value in flags.items():
        if value:
            raise NotImplementedError(f"{name}: {flag}=True is not supported by tensorplug")
