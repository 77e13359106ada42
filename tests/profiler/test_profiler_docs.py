"""docs/profiling.md's first example runs as written and prints the table it shows."""
import pathlib
import re

import pytest

import tensorplug as tp

_DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "profiling.md"


def test_first_example_runs(tmp_path, monkeypatch, capsys):
    """The quick-start block profiles on npdev, prints a table with device columns, writes a trace."""
    status = {line.device_type: line for line in tp.backends.status()}
    npdev = status.get("npdev")
    if npdev is None or npdev.state not in ("loaded", "ready"):
        pytest.skip(f"npdev: {npdev.state + ': ' + npdev.detail if npdev else 'not installed'} (tp.backends.status())")
    block = re.search(r"```python\n(.*?)```", _DOC.read_text(), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(block, str(_DOC), "exec"), {})
    printed = capsys.readouterr().out
    assert "Self Device" in printed and "Dispatched to" in printed
    assert "npdev kernel" in printed
    assert (tmp_path / "trace.json").stat().st_size > 0
