"""The committed type stubs are what tools/generate_stubs.py writes from the package today, and
they ship: py.typed marks the package as typed and nothing is git-ignored (the wheel copies every
unignored file under tensorplug/)."""
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHIPPED = ["tensorplug/py.typed", "tensorplug/__init__.pyi", "tensorplug/frontend/tensor.pyi"]


def test_stubs_are_fresh():
    """Regenerating the stubs changes nothing (else: run python tools/generate_stubs.py and commit)."""
    command = [sys.executable, os.path.join(ROOT, "tools", "generate_stubs.py"), "--check"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_typing_files_ship():
    """py.typed and the stubs exist and no .gitignore rule keeps them out of the wheel."""
    for path in SHIPPED:
        assert os.path.isfile(os.path.join(ROOT, path)), path
    if shutil.which("git") is None or not os.path.exists(os.path.join(ROOT, ".git")):
        pytest.skip("not a git checkout: cannot ask git which files are ignored")
    done = subprocess.run(["git", "check-ignore", *SHIPPED], cwd=ROOT, capture_output=True, text=True)
    assert done.stdout == "", f"git-ignored, so left out of the wheel: {done.stdout}"
