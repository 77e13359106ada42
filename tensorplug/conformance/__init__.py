"""The conformance suite: what "a backend works" means, as data and tests.

- :mod:`tensorplug.conformance.opdb`: the op database (one entry per public op).
- :mod:`tensorplug.conformance.suites`: the pytest modules it drives (forward, gradients,
  errors, promotion, views, copies, memory, random, capabilities).
- :mod:`tensorplug.conformance.plugin`: the pytest plugin (``--tensorplug-device``).
- ``tensorplug-conformance --device NAME`` / ``python -m tensorplug.conformance``: run it, print a
  summary and write report.json and report.html.
"""
from .opdb import op_database

__all__ = ["op_database", "main"]


def main(argv=None) -> int:
    from .__main__ import main as _main

    return _main(argv)
