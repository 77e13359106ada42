"""List the parameter names PyTorch accepts as keywords that tensorplug's function of the same
name does not (issue 13, probe batch (d)).

For every public callable both ``torch``/``tensorplug`` (and ``Tensor``, ``nn.functional``)
have, PyTorch's parameter names come from ``inspect.signature`` where it works, else from the
signature lines of its docstring (``add(input, other, *, alpha=1, out=None) -> Tensor``; each
overload's line counts); tensorplug's from ``inspect.signature``. A name PyTorch lists that
tensorplug's signature lacks (and no ``**kwargs`` takes) is a candidate; ``--verify`` then calls
torch with that keyword on small arguments to keep only the ones PyTorch really accepts.

Both libraries are imported into this one process only to read signatures; nothing is computed
with tensorplug here.

    python tools/probes/keyword_names.py [--namespace torch|Tensor|functional]
"""
from __future__ import annotations

import argparse
import inspect
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Parameters that are positional-only in PyTorch's own parser or never keywords in practice.
_IGNORED = {"self", "args", "kwargs", "size", "*", "/", "", "names", "memory_format"}


def _docstring_parameter_names(name: str, doc: str | None) -> set[str] | None:
    """Every parameter name on the docstring's signature lines for ``name`` (all overloads)."""
    if not doc:
        return None
    names: set[str] = set()
    pattern = re.compile(rf"^\s*(?:\.\. function:: )?(?:torch\.)?(?:Tensor\.)?{re.escape(name)}\((.*)\)\s*(->.*)?$")
    found = False
    for line in doc.splitlines():
        match = pattern.match(line)
        if not match:
            continue
        found = True
        depth, current, parts = 0, "", []
        for ch in match.group(1):
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(current)
                current = ""
            else:
                current += ch
        parts.append(current)
        for part in parts:
            word = part.strip().split("=")[0].split(":")[0].strip().lstrip("*")
            if word.isidentifier():
                names.add(word)
    return names if found else None


def torch_parameter_names(obj, name: str) -> set[str] | None:
    try:
        params = inspect.signature(obj).parameters.values()
        return {p.name for p in params if p.kind not in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    except (TypeError, ValueError):
        return _docstring_parameter_names(name, getattr(obj, "__doc__", None))


def ours_parameter_names(obj) -> tuple[set[str], bool] | None:
    """(keyword-able names, takes **kwargs) of a tensorplug callable, or None if unreadable."""
    try:
        params = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return None
    names = {p.name for p in params if p.kind not in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    return names, any(p.kind is p.VAR_KEYWORD for p in params)


def candidates(theirs_ns, ours_ns) -> list[tuple[str, list[str]]]:
    """(name, PyTorch keyword names tensorplug's signature lacks) for every shared public callable."""
    found = []
    for name in sorted(dir(theirs_ns)):
        if name.startswith("_") or not hasattr(ours_ns, name):
            continue
        theirs, ours = getattr(theirs_ns, name), getattr(ours_ns, name)
        if not callable(theirs) or not callable(ours) or inspect.isclass(theirs) or inspect.isclass(ours):
            continue
        their_names = torch_parameter_names(theirs, name)
        our_names = ours_parameter_names(ours)
        if not their_names or our_names is None or our_names[1]:
            continue
        missing = sorted(their_names - our_names[0] - _IGNORED)
        if missing:
            found.append((name, missing))
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespace", choices=("torch", "Tensor", "functional"), action="append")
    args = parser.parse_args(argv)
    sys.path.insert(0, ROOT)
    import torch

    import tensorplug

    spaces = {"torch": (torch, tensorplug), "Tensor": (torch.Tensor, tensorplug.Tensor),
              "functional": (torch.nn.functional, tensorplug.nn.functional)}
    total = 0
    for key in args.namespace or list(spaces):
        rows = candidates(*spaces[key])
        total += len(rows)
        print(f"== {key}: {len(rows)} functions with PyTorch keyword names tensorplug lacks")
        for name, missing in rows:
            print(f"  {name}: {', '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
