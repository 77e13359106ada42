"""Handed a PyTorch .pt checkpoint, tp.load says what it is and how to convert it."""
import io
import pickle

import pytest

import tensorplug as tp


def test_zip_checkpoint_from_bytes():
    """A zip file (torch.save's default format) is named a PyTorch checkpoint."""
    with pytest.raises(ValueError, match=r"(?s)PyTorch checkpoint.*zip.*safetensors\.torch\.save_file"):
        tp.load(io.BytesIO(b"PK\x03\x04" + b"\0" * 60))


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_pickle_checkpoint_from_bytes(protocol):
    """A pickle stream (legacy torch.save) is named a PyTorch checkpoint and is never unpickled."""
    blob = pickle.dumps({"weight": [1.0, 2.0]}, protocol=protocol)
    with pytest.raises(ValueError, match=r"(?s)PyTorch checkpoint.*legacy pickle"):
        tp.load(io.BytesIO(blob))


def test_real_torch_files(tmp_path):
    """Files written by torch.save, new and legacy formats, both get the conversion message."""
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.ones(2)}, tmp_path / "new.pt")
    torch.save({"w": torch.ones(2)}, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    for name in ("new.pt", "old.pt"):
        with pytest.raises(ValueError, match=r"(?s)is a PyTorch checkpoint.*torch\.load\('model\.pt', weights_only=True\)"):
            tp.load(tmp_path / name)
