"""The nested containers ``tp.func`` takes and returns (PyTorch's pytrees): tuples, lists, dicts
and namedtuples hold other trees; anything else (a tensor, a number, None) is a leaf."""
from __future__ import annotations

from typing import Any, NamedTuple


class TreeSpec(NamedTuple):
    """A tree's shape without its leaves: ``kind`` is "leaf", "tuple", "list", "dict" or
    "namedtuple"; ``context`` the dict keys or the namedtuple class."""
    kind: str
    context: Any
    children: tuple

    def __repr__(self) -> str:
        if self.kind == "leaf":
            return "*"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind == "dict":
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.context, self.children))
            return "{" + inner + "}"
        if self.kind == "list":
            return f"[{inner}]"
        if self.kind == "namedtuple":
            return f"{self.context.__name__}({inner})"
        return f"({inner}{',' if len(self.children) == 1 else ''})"


LEAF = TreeSpec("leaf", None, ())


def _node(tree):
    """(kind, context, children) of a container, or None for a leaf."""
    if isinstance(tree, tuple):
        if hasattr(type(tree), "_fields"):
            return "namedtuple", type(tree), tuple(tree)
        return "tuple", None, tree
    if isinstance(tree, list):
        return "list", None, tuple(tree)
    if isinstance(tree, dict):
        keys = tuple(tree)
        return "dict", keys, tuple(tree[k] for k in keys)
    return None


def tree_flatten(tree) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` in order, and its spec (iterative: deep trees are fine)."""
    leaves: list = []

    def build(node):
        found = _node(node)
        if found is None:
            leaves.append(node)
            return LEAF
        kind, context, children = found
        return TreeSpec(kind, context, tuple(build(c) for c in children))

    return leaves, build(tree)


def tree_unflatten(leaves, spec: TreeSpec):
    """The tree of shape ``spec`` holding ``leaves`` in order."""
    source = iter(leaves)

    def build(s: TreeSpec):
        if s.kind == "leaf":
            return next(source)
        children = [build(c) for c in s.children]
        if s.kind == "tuple":
            return tuple(children)
        if s.kind == "list":
            return children
        if s.kind == "dict":
            return dict(zip(s.context, children))
        return s.context(*children)

    return build(spec)


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(leaf) for leaf in leaves], spec)


def broadcast_prefix(prefix, tree, what: str) -> list:
    """One value per leaf of ``tree``: ``prefix`` is a tree whose leaves stand for whole subtrees
    of ``tree`` (vmap's ``in_dims`` and ``out_dims``)."""
    result: list = []

    def walk(p, t):
        p_node, t_node = _node(p), _node(t)
        if p_node is None:
            result.extend([p] * len(tree_flatten(t)[0]))
            return
        if t_node is None or p_node[0] != t_node[0] or len(p_node[2]) != len(t_node[2]) or p_node[1] != t_node[1]:
            raise ValueError(f"{what}: the structure of {p!r} is not a prefix of the structure of the values it describes")
        for pc, tc in zip(p_node[2], t_node[2]):
            walk(pc, tc)

    walk(prefix, tree)
    return result
