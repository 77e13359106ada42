"""The operator table: per operator, which kernel handles each key set.

An :class:`Operator` keeps the kernels registered for it per dispatch key. The kernel that runs
for a key set is resolved once and cached in ``Operator.table`` (a dict from key set to callable);
every registration clears the caches, so the hot path is one dict lookup.

Resolution walks the keys of the set from the highest priority down:

* Autograd: the op's registered Autograd kernel (its derivative wrapper); else, for a composite
  op that the call's backend does not override, the decomposition, so that it runs above autograd
  and every primitive it calls records its own graph node; else the key falls through.
* InplaceOrView and Profiler: the registered kernel, else the key's fallback (a boxed kernel for
  every op, see :func:`register_key_fallback`), else the key falls through.
* a backend key: the backend's kernel, else the op's decomposition (CompositeImplicit), else the
  backend's boxed fallback, else a kernel that raises ``NotImplementedError``.

A composite op called with tensors of two backends (a 0-d CPU tensor beside another device's
tensors, which PyTorch allows in elementwise ops) runs its decomposition in the backend slot: a
backend's fused kernel reads the storages of its own device only, while the decomposition's
primitives move the 0-d CPU tensor or refuse the mix with a clear error. The Autograd slot is
unchanged, so an op's explicit derivative still defines its gradient (clamp's at ties differs from
that of the maximum it decomposes into). The choice is cached per key set like any other, so calls
on one device pay nothing for it.

Kernels on Autograd and InplaceOrView receive, as their first argument, the key set that lies
below them, to hand to :func:`redispatch`.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable

from . import _keys
from ._keys import AUTOGRAD, DispatchKey
from ._state import local_state

__all__ = [
    "Operator",
    "operators",
    "get_operator",
    "register_kernel",
    "register_fallthrough",
    "register_backend_fallback",
    "register_key_fallback",
    "call",
    "redispatch",
    "set_keyset_extractor",
    "Resolution",
]

_operators: dict[str, "Operator"] = {}
_backend_fallbacks: dict[DispatchKey, Callable[..., Any]] = {}
_key_fallbacks: dict[DispatchKey, Callable[..., Any]] = {}


def _no_keys_extractor(args: tuple, kwargs: dict) -> int:
    raise RuntimeError("tensorplug.dispatcher: no key set extractor registered")


_keyset_of: Callable[[tuple, dict], int] = _no_keys_extractor


def set_keyset_extractor(extractor: Callable[[tuple, dict], int]) -> None:
    """Install the function that computes a call's key set from its arguments.

    The frontend owns tensors, so it provides this; the dispatcher never looks inside arguments.
    """
    global _keyset_of
    _keyset_of = extractor


class Resolution:
    """Why a key set resolves to a kernel: the answer :func:`explain` prints."""

    __slots__ = ("kernel", "key", "source", "skipped")

    def __init__(self, kernel: Callable[..., Any], key: DispatchKey | None, source: str, skipped: list[str]):
        self.kernel = kernel
        self.key = key
        self.source = source
        self.skipped = skipped


class Operator:
    """A named operation and its kernels per dispatch key.

    ``decomposition`` makes the op composite: a function written with other ops that fills the
    backend slots (and the Autograd slot) of every backend that does not override it.
    ``differentiable`` says whether an Autograd kernel is expected; a composite op that is
    differentiable can only be overridden by a backend once it has an explicit derivative.
    """

    __slots__ = ("name", "kernels", "fallthroughs", "decomposition", "differentiable", "table", "__weakref__")

    def __init__(self, name: str, *, decomposition: Callable[..., Any] | None = None, differentiable: bool = True):
        if name in _operators:
            raise ValueError(f"operator {name!r} is already defined")
        self.name = name
        self.kernels: dict[DispatchKey, Callable[..., Any]] = {}
        self.fallthroughs: set[DispatchKey] = set()
        self.decomposition = decomposition
        self.differentiable = differentiable
        self.table: dict[int, Callable[..., Any]] = {}
        _operators[name] = self

    def __repr__(self) -> str:
        kind = "composite" if self.decomposition is not None else "primitive"
        return f"<Operator {self.name} ({kind})>"

    @property
    def is_composite(self) -> bool:
        return self.decomposition is not None

    def lookup(self, keyset: int) -> Callable[..., Any]:
        """The kernel for ``keyset`` (thread-local include/exclude already applied)."""
        kernel = self.table.get(keyset)
        if kernel is None:
            kernel = self.resolve(keyset).kernel
            self.table[keyset] = kernel
        return kernel

    def resolve(self, keyset: int) -> Resolution:
        """Work out, without caching, which kernel handles ``keyset`` and why."""
        skipped: list[str] = []
        keys = _keys.keys_in(keyset)
        backends = [key for key in keys if key.is_backend]
        backend = backends[0] if backends else None
        for key in keys:
            below = keyset & ((1 << key.bit) - 1)
            if key is AUTOGRAD:
                kernel = self.kernels.get(key)
                if kernel is not None and key not in self.fallthroughs:
                    return Resolution(_bind_keyset(kernel, below), key, "autograd kernel", skipped)
                if self.decomposition is not None and (backend is None or backend not in self.kernels):
                    return Resolution(self.decomposition, key, "CompositeImplicit decomposition above autograd", skipped)
                skipped.append(f"{key.name}: fallthrough (no autograd kernel)")
                continue
            if not key.is_backend:
                kernel = self.kernels.get(key)
                if kernel is not None and key not in self.fallthroughs:
                    return Resolution(_bind_keyset(kernel, below), key, f"{key.name} kernel", skipped)
                fallback = _key_fallbacks.get(key)
                if fallback is not None and key not in self.fallthroughs:
                    return Resolution(_bind_key_fallback(fallback, self, below), key, f"{key.name} fallback", skipped)
                skipped.append(f"{key.name}: fallthrough")
                continue
            kernel = self.kernels.get(key)
            if len(backends) > 1 and self.decomposition is not None:
                # Tensors of two devices: no backend's fused kernel can read both (module
                # docstring). Below autograd, so an explicit derivative still applies.
                return Resolution(self.decomposition, key,
                                  f"CompositeImplicit decomposition (tensors on {len(backends)} backends)", skipped)
            if kernel is not None:
                return Resolution(kernel, key, f"{key.name} kernel", skipped)
            if self.decomposition is not None:
                return Resolution(self.decomposition, key, "CompositeImplicit decomposition", skipped)
            fallback = _backend_fallbacks.get(key)
            if fallback is not None:
                return Resolution(_bind_fallback(fallback, self), key, f"{key.name} boxed fallback", skipped)
            return Resolution(_missing_kernel(self, key), key, "missing kernel (raises NotImplementedError)", skipped)
        return Resolution(_missing_kernel(self, None), None, "no dispatch key (raises)", skipped)


def _bind_keyset(kernel: Callable[..., Any], keyset: int) -> Callable[..., Any]:
    # A partial, not a closure: it prepends the key set in C, one Python frame fewer on every
    # call that goes through Autograd (issue 14).
    with_keyset = partial(kernel, keyset)
    with_keyset.__wrapped__ = kernel  # type: ignore[attr-defined]
    return with_keyset


def _bind_fallback(fallback: Callable[..., Any], op: Operator) -> Callable[..., Any]:
    def boxed(*args: Any, **kwargs: Any) -> Any:
        return fallback(op, args, kwargs)

    boxed.__wrapped__ = fallback  # type: ignore[attr-defined]
    return boxed


def _bind_key_fallback(fallback: Callable[..., Any], op: Operator, keyset: int) -> Callable[..., Any]:
    def boxed(*args: Any, **kwargs: Any) -> Any:
        return fallback(op, keyset, args, kwargs)

    boxed.__wrapped__ = fallback  # type: ignore[attr-defined]
    return boxed


def _missing_kernel(op: Operator, key: DispatchKey | None) -> Callable[..., Any]:
    where = f"the {key.name!r} backend" if key is not None else "any backend"
    message = (
        f"{op.name}: no kernel for {where}, and the op has no decomposition "
        f"and the backend no fallback"
    )

    def missing(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(message)

    return missing


def _invalidate_tables() -> None:
    for op in _operators.values():
        op.table.clear()


def operators() -> dict[str, Operator]:
    """Every defined operator, by name."""
    return dict(_operators)


def get_operator(name: str) -> Operator:
    try:
        return _operators[name]
    except KeyError:
        raise KeyError(f"no operator named {name!r}") from None


def register_kernel(op: Operator | str, key: DispatchKey, kernel: Callable[..., Any]) -> None:
    """Register ``kernel`` for ``op`` under ``key`` (replacing an earlier one).

    A backend may override a composite op only when the op is not differentiable or has an
    explicit derivative (an Autograd kernel): otherwise gradients through the fused kernel
    would silently be missing.
    """
    op = get_operator(op) if isinstance(op, str) else op
    if key.is_backend and op.decomposition is not None and op.differentiable and AUTOGRAD not in op.kernels:
        raise ValueError(
            f"cannot override composite op {op.name!r} for backend {key.name!r}: the op has no "
            f"explicit derivative, so its gradient would be lost; register an Autograd kernel first"
        )
    op.kernels[key] = kernel
    op.fallthroughs.discard(key)
    _invalidate_tables()


def register_fallthrough(op: Operator | str, key: DispatchKey) -> None:
    """Make ``key`` pass calls of ``op`` on to the next key."""
    op = get_operator(op) if isinstance(op, str) else op
    op.fallthroughs.add(key)
    _invalidate_tables()


def register_backend_fallback(key: DispatchKey, fallback: Callable[..., Any]) -> None:
    """A boxed kernel ``fallback(op, args, kwargs)`` for every op the backend lacks."""
    if not key.is_backend:
        raise ValueError(f"fallbacks are per backend key, not {key!r}")
    _backend_fallbacks[key] = fallback
    _invalidate_tables()


def register_key_fallback(key: DispatchKey, fallback: Callable[..., Any]) -> None:
    """A boxed kernel ``fallback(op, below, args, kwargs)`` that handles every op on a
    non-backend ``key`` (an op's own kernel for the key, or a fallthrough, takes precedence).

    ``below`` is the call's key set under ``key``: the fallback continues the call with
    ``redispatch(op, below, *args, **kwargs)``. This is how a cross-cutting layer (the profiler)
    sees every op without one registration per op; the key only costs anything while a thread
    has it in its include set.
    """
    if key.is_backend or key is AUTOGRAD:
        raise ValueError(f"key fallbacks are for non-backend keys other than Autograd, not {key!r}")
    _key_fallbacks[key] = fallback
    _invalidate_tables()


def call(op: Operator, *args: Any, **kwargs: Any) -> Any:
    """Dispatch ``op`` on its arguments' key sets (with this thread's include/exclude)."""
    keyset = (_keyset_of(args, kwargs) | local_state.include) & local_state.mask
    return op.lookup(keyset)(*args, **kwargs)


def redispatch(op: Operator, keyset: int, *args: Any, **kwargs: Any) -> Any:
    """Call ``op`` with an explicit key set: how a wrapper kernel calls the keys below it."""
    return op.lookup(keyset)(*args, **kwargs)


def keyset_of(args: tuple, kwargs: dict) -> int:
    return (_keyset_of(args, kwargs) | local_state.include) & local_state.mask
