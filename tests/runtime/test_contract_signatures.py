"""docs/backend-contract.md's table of fused-kernel signatures matches the registered composite ops
that a backend may override: every such op is listed, with its parameters in order."""
import inspect
import os
import re

import tensorplug as tp  # noqa: F401  (registers every op)
from tensorplug import dispatcher

CONTRACT = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "backend-contract.md")


def _documented() -> dict[str, list[str]]:
    """op name -> the parameter names of its row in the 'Fused kernels' table."""
    with open(CONTRACT) as f:
        text = f.read()
    section = text.split("## Fused kernels for composite ops", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        names = re.findall(r"`(\w+)`", cells[0])
        params = re.match(r"`\(([^)]*)\)`", cells[1])
        for name in names:
            rows[name] = None if params is None else [p.strip() for p in params.group(1).split(",")]
    return rows


def _overridable() -> dict[str, list[str]]:
    ops = dispatcher.operators()
    # Only tensorplug's own ops: other tests define throwaway operators in the same process.
    return {name: list(inspect.signature(op.decomposition).parameters) for name, op in ops.items()
            if op.is_composite and (not op.differentiable or dispatcher.AUTOGRAD in op.kernels)
            and op.decomposition.__module__.startswith("tensorplug.")}


def test_every_overridable_op_is_documented():
    missing = sorted(set(_overridable()) - set(_documented()))
    assert missing == [], f"composite ops a backend may fuse but docs/backend-contract.md does not list: {missing}"


def test_documented_signatures_match_the_ops():
    """Rows whose op is registered give its parameters in order ("as max_pool2d" rows are skipped)."""
    actual = _overridable()
    for name, params in _documented().items():
        if params is not None and name in actual:
            assert params == actual[name], f"{name}: documented {params}, registered {actual[name]}"
