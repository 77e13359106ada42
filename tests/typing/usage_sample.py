"""Typed uses of tensorplug that a type checker must accept, and misuses it must report.

tests/typing/test_static_types.py runs mypy over this file; nothing imports or runs it. Each
misuse carries ``# type: ignore[<code>]`` and mypy runs with ``warn_unused_ignores``: if the stubs
stopped catching a misuse (a signature that fell back to ``Any``, say), its ignore would be
unused and mypy would fail. An annotated assignment checks the type on its right.
"""
from __future__ import annotations

import tensorplug as tp
from tensorplug import nn, optim


def tensor_methods() -> None:
    x: tp.Tensor = tp.ones(2, 3)
    total: tp.Tensor = x.sum()
    shaped: tp.Tensor = x.view(3, 2).transpose(0, 1).reshape(-1).unsqueeze(0)
    chained: tp.Tensor = (x.exp() * 2 + 1).mean(dim=1, keepdim=True).clamp(min=0.0)
    value: float = total.item()
    count: int = x.numel() + x.dim() + x.shape[0]
    pieces: tuple[tp.Tensor, ...] = x.chunk(2, dim=1)
    values: tp.Tensor = x.sort(dim=1).values
    top: tp.Tensor = x.topk(1).indices
    moved: tp.Tensor = x.to("cpu").float().detach().clone()
    x.add_(1).mul_(2).zero_()
    kind: tp.dtype = x.dtype
    where: tp.device = x.device
    grad: tp.Tensor | None = x.grad
    print(shaped, chained, value, count, pieces, values, top, moved, kind, where, grad)


def operators() -> None:
    a = tp.randn(2, 2)
    results: list[tp.Tensor] = [a + 1, 2 * a, a @ a, a ** 2, -a, a > 0, a == a, 1.5 - a, a[0], abs(a)]
    a += 1
    flag: bool = bool((a > 0).all())
    print(results, flag)


def module_functions() -> None:
    x = tp.arange(6, dtype=tp.float32)
    ys: list[tp.Tensor] = [tp.exp(x), tp.add(x, x, alpha=2), tp.cat([x, x]), tp.where(x > 2, x, 0.0), tp.zeros_like(x)]
    tp.manual_seed(0)
    tp.npdev.synchronize()  # a device's runtime module, made on first access
    with tp.no_grad():
        print(ys, tp.get_default_dtype(), tp.float64)


def nn_and_optim() -> None:
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss = nn.functional.mse_loss(model(tp.randn(4, 3)), tp.zeros(4, 2))
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    weight: tp.Tensor = nn.Linear(3, 2).weight


def misuses() -> None:
    """Each line is wrong; the ignore code names the error mypy must report."""
    x = tp.ones(2)
    as_text: str = x.sum()  # type: ignore[assignment]
    as_int: int = x.view(2)  # type: ignore[assignment]
    x.no_such_method()  # type: ignore[attr-defined]
    tp.ones(2, dtype="float32")  # type: ignore[arg-type]
    x.sum(keepdim="yes")  # type: ignore[arg-type]
    x.clamp(min="0")  # type: ignore[arg-type]
    x + "1"  # type: ignore[operator]
    tp.exp(1.0)  # type: ignore[arg-type]
    # An unknown tp.<name> may be a device's runtime module (tp.npdev), never a function.
    tp.no_such_function(x)  # type: ignore[operator]
    x.sort().no_such_field  # type: ignore[attr-defined]
    shape: str = x.shape  # type: ignore[assignment]
    optim.SGD(nn.Linear(2, 2).parameters(), lr="fast")  # type: ignore[arg-type]
    print(as_text, as_int, shape)
