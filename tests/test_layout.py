"""The test tree itself: test modules need unique file names, because the test folders have no
__init__.py and pytest imports them by basename (a clash stops collection on a clean clone)."""
import collections
import os

TESTS = os.path.dirname(os.path.abspath(__file__))


def test_test_module_names_are_unique():
    seen = collections.defaultdict(list)
    for folder, _, files in os.walk(TESTS):
        for name in files:
            if name.endswith(".py") and name != "conftest.py" and name != "__init__.py":
                seen[name].append(os.path.relpath(os.path.join(folder, name), TESTS))
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not clashes, f"module names used twice under tests/: {clashes}"
