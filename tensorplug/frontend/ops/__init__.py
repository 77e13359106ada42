"""Operator definitions: each op's schema, meta function (shape/dtype inference and checks) and,
for composite ops, its decomposition, grouped by kind."""
