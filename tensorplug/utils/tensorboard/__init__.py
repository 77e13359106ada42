"""``tp.utils.tensorboard``: ``SummaryWriter``, PyTorch's TensorBoard logger, writing real event
files through the ``tensorboard`` package (``pip install tensorboard``, or
``tensorplug[tensorboard]``).

    from tensorplug.utils.tensorboard import SummaryWriter

    with SummaryWriter("runs/exp1") as writer:
        for step in range(100):
            writer.add_scalar("loss", loss, step)   # a 0-d tensor on any device, or a number

Like ``torch.utils.tensorboard``, importing this module without TensorBoard raises ImportError.
"""
try:
    import tensorboard
except ImportError as error:  # the message PyTorch gives, and how to fix it
    raise ImportError(
        "TensorBoard logging requires TensorBoard version 1.15 or above: "
        "pip install tensorboard (or tensorplug[tensorboard])") from error


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit()) or "0"
        parts.append(int(digits))
    return tuple(parts)


if _version_tuple(getattr(tensorboard, "__version__", "0")) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above: "
                      "pip install --upgrade tensorboard")

from ._writer import FileWriter, SummaryWriter  # noqa: E402  (after the version check)

__all__ = ["FileWriter", "SummaryWriter"]
