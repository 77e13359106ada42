"""The Optimizer base class: parameter groups, per-parameter state, zero_grad and state dicts.

Follows ``torch.optim.Optimizer``: ``param_groups`` is a list of dicts (``params`` plus the
hyperparameters, filled from ``defaults``), ``state`` maps a parameter to its dict of state, and
``state_dict()`` names parameters by their position across groups (ints), so a state dict can be
loaded into an optimizer built over other parameter objects of the same shapes.
"""
from __future__ import annotations

import copy
import functools
from collections import defaultdict
from typing import Any, Callable, Iterable

from ..frontend import dtypes as _dt
from ..frontend.autograd import enable_grad, no_grad
from ..frontend.factories import tensor, zeros_like
from ..frontend.tensor import Tensor

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Marks a hyperparameter that every param group must give (``SGD``'s lr in old PyTorch)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _use_grad(step: Callable) -> Callable:
    """Run an optimizer's ``step`` without recording autograd (the closure re-enables it)."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        with no_grad():
            return step(self, *args, **kwargs)

    return wrapper


class Optimizer:
    """Base class of all optimizers.

    ``params`` is an iterable of tensors, or of dicts each holding ``params`` and per-group
    hyperparameters that override ``defaults``.
    """

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, but got "
                f"{type(params).__name__}"
            )
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    # --- groups ------------------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (a dict with ``params`` and optional hyperparameters)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering of "
                "tensors in sets will change between runs. Please use a list instead."
            )
        else:
            param_group["params"] = list(params)
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(param).__name__}")
            if not param.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        ids = [id(p) for p in param_group["params"]]
        if len(set(ids)) != len(ids):
            raise ValueError(
                "optimizer contains a parameter group with duplicate parameters; in future, this will cause an error"
            )
        existing = {id(p) for group in self.param_groups for p in group["params"]}
        if existing.intersection(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # --- gradients ---------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters (to None by default, as PyTorch does)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    grad = p.grad if p.grad.grad_fn is None else p.grad.detach()
                    grad.requires_grad_(False)
                    p.grad = grad
                    grad.zero_()

    def step(self, closure: Callable | None = None):
        raise NotImplementedError

    @staticmethod
    def _evaluate(closure: Callable | None):
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
            if len(state) == 0:
                state["step"] = tensor(0.0, dtype=_dt.float32)
                for name in buffers:
                    state[name] = zeros_like(p)
            state["step"].add_(1)
            yield p, state, (-p.grad if group["maximize"] else p.grad)

    # --- state dicts -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [index, ...]}]}``.

        Parameters are named by their position across all groups. State tensors are the
        optimizer's own (not copies), as in PyTorch; save or deep-copy the dict to keep it.
        """
        index_of: dict[int, int] = {}
        groups = []
        next_index = 0
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            indices = []
            for p in group["params"]:
                if id(p) not in index_of:
                    index_of[id(p)] = next_index
                    next_index += 1
                indices.append(index_of[id(p)])
            packed["params"] = indices
            groups.append(packed)
        state = {index_of[id(p)]: value for p, value in self.state.items() if id(p) in index_of}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a dict made by ``state_dict()`` (hyperparameters and per-parameter state)."""
        state_dict = state_dict.copy()
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for group, saved in zip(groups, saved_groups):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of optimizer's group")
        param_of = {}
        for group, saved in zip(groups, saved_groups):
            for index, p in zip(saved["params"], group["params"]):
                param_of[index] = p
        state: defaultdict = defaultdict(dict)
        for index, value in state_dict["state"].items():
            index = int(index)  # keys may come back as strings from formats that only have string keys
            if index in param_of:
                param = param_of[index]
                state[param] = {key: _cast_state(param, key, v) for key, v in value.items()}
            else:
                state[index] = value
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            new_groups.append(saved)
        self.state = state
        self.param_groups = new_groups

    # --- printing ----------------------------------------------------------------------------
    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def _cast_state(param: Tensor, key: str, value):
    """A loaded state value moved to the parameter's device (and dtype, for floating state)."""
    if isinstance(value, Tensor):
        if key == "step":
            return value  # the step count stays a float32 CPU tensor, as in PyTorch
        if param.is_floating_point() and value.is_floating_point():
            return value.to(device=param.device, dtype=param.dtype)
        return value.to(device=param.device)
    if isinstance(value, dict):
        return {k: _cast_state(param, k, v) for k, v in value.items()}
    return value


def check_unsupported(name: str, **flags) -> None:
    """Reject PyTorch's implementation switches that tensorplug does not have."""
    for flag, value in flags.items():
        if value:
            raise NotImplementedError(f"{name}: {flag}=True is not supported by tensorplug")
