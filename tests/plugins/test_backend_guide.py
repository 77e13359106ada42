"""docs/writing-a-backend.md works as written: every code block in it is exercised here.

Blocks are read in order. A block after ``<!-- excerpt: PATH -->`` must appear verbatim in that
file (the file itself runs in the npdev tests and conformance run); a ``text`` block after
``<!-- tree: DIR -->`` lists files that must exist there. ``bash`` blocks run first, in a scratch
directory (``pip install`` lines are checked against the installed package instead of run, and
``tensorplug-conformance`` runs as ``python -m tensorplug.conformance``); then all ``python``
blocks run in order as one script in that directory.
"""
import importlib.util
import os
import re
import shlex
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GUIDE = os.path.join(ROOT, "docs", "writing-a-backend.md")
_BLOCK = re.compile(r"(?:<!-- (excerpt|tree): (\S+) -->\n)?```(\w+)\n(.*?)```", re.S)

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tensorplug_npdev") is None,
    reason="the guide's example plugin is not installed: python -m pip install ./plugins/tensorplug-npdev",
)


def _blocks():
    with open(GUIDE) as f:
        return [(m.group(1), m.group(2), m.group(3), m.group(4)) for m in _BLOCK.finditer(f.read())]


def test_every_block_has_a_known_kind():
    """Each block is an excerpt, a file tree, a shell block or runnable Python."""
    blocks = _blocks()
    assert len(blocks) >= 15
    for marker, _, language, _ in blocks:
        assert marker is not None or language in ("python", "bash"), f"a {language} block with no excerpt/tree marker"


def test_excerpts_match_the_example_plugin():
    for marker, path, _, code in _blocks():
        if marker == "excerpt":
            with open(os.path.join(ROOT, path)) as f:
                assert code in f.read(), f"the guide's excerpt of {path} is out of date:\n{code}"


def test_file_tree_exists():
    for marker, path, _, code in _blocks():
        if marker == "tree":
            for line in code.split():
                assert os.path.isfile(os.path.join(ROOT, path, line)), f"{path}/{line} is in the guide but not in the example"


def _installed_from(folder: str) -> bool:
    """Whether the installed tensorplug_npdev has the sources of ``folder`` (editable or not)."""
    installed = os.path.dirname(importlib.util.find_spec("tensorplug_npdev").origin)
    source = os.path.join(folder, "src", "tensorplug_npdev")
    names = [n for n in os.listdir(source) if n.endswith(".py")]
    return bool(names) and all(_read(os.path.join(source, n)) == _read(os.path.join(installed, n)) for n in names)


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def test_shell_then_python_blocks_run(tmp_path):
    """The shell commands run (the conformance command passes), then the Python blocks run as one script."""
    blocks = _blocks()
    for marker, _, language, code in blocks:
        if marker or language != "bash":
            continue
        for line in filter(None, (line.strip() for line in code.splitlines())):
            words = shlex.split(line)
            if words[:4] == ["python", "-m", "pip", "install"]:
                assert _installed_from(os.path.join(ROOT, words[-1])), "the installed npdev differs from the guide's folder"
                continue
            assert words[0] == "tensorplug-conformance", f"unexpected command in the guide: {line}"
            out = subprocess.run([sys.executable, "-m", "tensorplug.conformance", *words[1:], "--no-progress"],
                                 cwd=tmp_path, capture_output=True, text=True, timeout=600)
            assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    script = "\n\n".join(code for marker, _, language, code in blocks if not marker and language == "python")
    (tmp_path / "guide.py").write_text(script)
    out = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "guide.py"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "has no kernel for 'mul'" in out.stdout
