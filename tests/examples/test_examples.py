"""The examples run as documented (short versions)."""
import importlib.util
import os

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_paper_listings_run(capsys):
    """Listing 1 gives a softmax per row and Listing 2 runs three GAN steps."""
    _load("paper_listings").main(["--device", "cpu"])
    out = capsys.readouterr().out
    assert "rows sum to [1.0, 1.0, 1.0, 1.0]" in out
    assert out.count("GAN step") == 3


def test_train_digits_learns(tmp_path):
    """Three epochs on the digits reach well above chance and write the checkpoint and plot."""
    pytest.importorskip("sklearn", reason="the digits example needs scikit-learn (the 'examples' extra)")
    pytest.importorskip("matplotlib", reason="the digits example needs matplotlib (the 'examples' extra)")
    pytest.importorskip("tqdm", reason="the digits example needs tqdm (the 'examples' extra)")
    status = _load("train_digits").main(["--epochs", "3", "--out-dir", str(tmp_path), "--min-accuracy", "0.8"])
    assert status == 0
    assert (tmp_path / "digits_cnn.safetensors").exists() and (tmp_path / "training.png").exists()
