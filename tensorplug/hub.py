"""``tp.hub``: present so that ``import tensorplug.hub`` works; tensorplug has no model hub.

``torch.hub`` downloads repositories and checkpoints from the network and runs their PyTorch
code: the checkpoints are pickled ``.pt`` files, which ``tp.load`` refuses to unpickle, and the
entry points build PyTorch modules. Loading such a model needs PyTorch and network access;
convert its state_dict to safetensors with PyTorch and load that (docs/deviations.md,
``tp.save``/``tp.load``).
"""
from __future__ import annotations

import os

__all__ = ["load", "list", "help", "load_state_dict_from_url", "download_url_to_file", "get_dir", "set_dir"]

_MESSAGE = (
    "tp.hub.{} is not available: PyTorch's hub downloads PyTorch code and pickled .pt checkpoints from the network, "
    "which tensorplug neither runs nor unpickles. Load the model with PyTorch, save its state_dict with "
    "safetensors.torch.save_file, and load that with tp.load into the same architecture written with tensorplug."
)
_hub_dir = None


def load(repo_or_dir, model, *args, **kwargs):
    raise NotImplementedError(_MESSAGE.format("load"))


def list(github, force_reload=False, skip_validation=False, trust_repo=None, verbose=True):  # noqa: A001  (PyTorch's name)
    raise NotImplementedError(_MESSAGE.format("list"))


def help(github, model, force_reload=False, skip_validation=False, trust_repo=None):  # noqa: A001  (PyTorch's name)
    raise NotImplementedError(_MESSAGE.format("help"))


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False, file_name=None,
                             weights_only=False):
    raise NotImplementedError(_MESSAGE.format("load_state_dict_from_url"))


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    raise NotImplementedError(_MESSAGE.format("download_url_to_file"))


def get_dir() -> str:
    """Where PyTorch would cache hub downloads ($TORCH_HOME/hub); nothing is stored there."""
    if _hub_dir is not None:
        return _hub_dir
    home = os.environ.get("TORCH_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "torch")
    return os.path.join(os.path.expanduser(home), "hub")


def set_dir(d) -> None:
    """Record ``d`` as the hub directory (returned by ``get_dir``)."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))
