"""A type checker (mypy) sees tensorplug's public API: the examples and a typed usage sample pass,
deliberate misuses are reported, and the generated stubs are themselves valid."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("mypy", reason="the static type checks need mypy (the 'test' extra)")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join("tests", "typing", "mypy.ini")
STUBS = [os.path.join("tensorplug", "__init__.pyi"), os.path.join("tensorplug", "frontend", "tensor.pyi")]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """One mypy cache for the module: tensorplug is analysed once, later runs reuse it."""
    return str(tmp_path_factory.mktemp("mypy-cache"))


def run_mypy(paths, cache_dir):
    command = [sys.executable, "-m", "mypy", "--config-file", CONFIG, "--cache-dir", cache_dir, *paths]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


def test_stubs_are_valid(cache_dir):
    """The generated stubs type-check on their own (no clash of names, overrides or syntax)."""
    status, output = run_mypy(STUBS, cache_dir)
    assert status == 0, output


def test_examples_type_check(cache_dir):
    """Every program in examples/ passes mypy against the stubs."""
    status, output = run_mypy(["examples"], cache_dir)
    assert status == 0, output


def test_usage_sample_types_and_misuses(cache_dir):
    """Typed uses pass, and each deliberate misuse is reported (its ignore comment is used)."""
    status, output = run_mypy([os.path.join("tests", "typing", "usage_sample.py")], cache_dir)
    assert status == 0, output


def test_misuse_is_reported(tmp_path, cache_dir):
    """Without the ignore comments the sample's misuses are errors: the check has teeth."""
    source = pathlib.Path(ROOT, "tests", "typing", "usage_sample.py").read_text(encoding="utf-8")
    misuses = source[source.index("def misuses"):]
    expected = misuses.count("# type: ignore[")
    bare = tmp_path / "misuse_sample.py"
    bare.write_text("import tensorplug as tp\nfrom tensorplug import nn, optim\n\n\n" + misuses.replace("# type: ignore", "# was"))
    status, output = run_mypy([str(bare)], cache_dir)
    errors = [line for line in output.splitlines() if ": error:" in line]
    assert status == 1
    assert len({line.split(":")[1] for line in errors}) == expected, output


def ported_programs():
    """The programs in tests/programs: modules that import tensorplug (not its tests or harness)."""
    folder = pathlib.Path(ROOT, "tests", "programs")
    imports_tensorplug = re.compile(r"^(import|from) tensorplug\b", re.MULTILINE)
    return sorted(
        str(path.relative_to(ROOT)) for path in folder.glob("*.py")
        if not path.name.startswith("test_") and imports_tensorplug.search(path.read_text(encoding="utf-8"))
    )


def test_ported_programs_type_check(cache_dir):
    """The ported PyTorch programs in tests/programs pass mypy too."""
    programs = ported_programs()
    if not programs:
        pytest.skip("no ported programs in tests/programs in this checkout")
    status, output = run_mypy(programs, cache_dir)
    assert status == 0, output
