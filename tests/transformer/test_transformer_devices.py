"""nn.Transformer on every backend (cpu, opencl, npdev) in float32 against torch.nn on the CPU:
one forward and backward with masks, and a few training steps of a tiny sequence-to-sequence model."""
import numpy as np
import pytest

import tensorplug as tp
from transformer_reference import DEVICE_PARAMS, TOL, compare, load_torch_weights, numpy_of
from transformer_reference import torch_single_thread  # noqa: F401 (an autouse fixture)

torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference for nn.Transformer")
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning")

SMALL = dict(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16, dropout=0.0)


@pytest.mark.parametrize("device", DEVICE_PARAMS)
def test_transformer_forward_backward_on_device(device):
    """Output, input and parameter gradients match torch with a causal, a bool and a padding mask."""
    rng = np.random.default_rng(0)
    kwargs = dict(SMALL, batch_first=True, norm_first=True)
    padding = np.zeros((2, 5), dtype=bool)
    padding[1, 3:] = True
    masks = dict(tgt_mask=np.triu(np.full((4, 4), -np.inf), 1), src_key_padding_mask=padding,
                 memory_key_padding_mask=padding, src_mask=np.eye(5, k=1, dtype=bool))
    compare(torch, tp.nn.Transformer(**kwargs), torch.nn.Transformer(**kwargs),
            [rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 4, 8))], masks, device=device, dtype="float32")


def _seq2seq(lib, vocab=7):
    """Embeddings into a small Transformer and a Linear head, written against ``lib``."""

    class Seq2Seq(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = lib.nn.Embedding(vocab, 8)
            self.transformer = lib.nn.Transformer(**SMALL)
            self.head = lib.nn.Linear(8, vocab)

        def forward(self, src, tgt):
            mask = lib.nn.Transformer.generate_square_subsequent_mask(tgt.shape[0]).to(tgt.device)
            out = self.transformer(self.embed(src), self.embed(tgt), tgt_mask=mask, tgt_is_causal=True)
            return self.head(out)

    return Seq2Seq()


@pytest.mark.parametrize("device", DEVICE_PARAMS)
def test_seq2seq_training_matches_torch(device):
    """Four Adam steps teaching a tiny model to copy a batch of sequences give torch's losses and weights."""
    rng = np.random.default_rng(1)
    torch.manual_seed(0)
    theirs = _seq2seq(torch)
    ours = load_torch_weights(theirs, _seq2seq(tp), device)
    opt_ours = tp.optim.Adam(ours.parameters(), lr=0.01)
    opt_theirs = torch.optim.Adam(theirs.parameters(), lr=0.01)
    ours_losses, theirs_losses = [], []
    seq = rng.integers(1, 7, (6, 3))
    for _ in range(4):
        src, tgt_in, tgt_out = seq, np.concatenate([np.zeros((1, 3), dtype=seq.dtype), seq[:-1]]), seq
        for lib, model, opt, losses in ((tp, ours, opt_ours, ours_losses), (torch, theirs, opt_theirs, theirs_losses)):
            to = (lambda a: lib.tensor(a).to(device)) if lib is tp else lib.tensor
            logits = model(to(src), to(tgt_in))
            loss = lib.nn.functional.cross_entropy(logits.reshape(-1, 7), to(tgt_out).reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    np.testing.assert_allclose(ours_losses, theirs_losses, **TOL["float32"])
    assert theirs_losses[-1] < theirs_losses[0]
    for name, p in theirs.named_parameters():
        if name.endswith("in_proj_bias"):
            # The key bias's gradient is 0 in exact arithmetic (it shifts a whole row of scores),
            # so Adam turns each library's rounding noise into full-size steps of either sign.
            continue
        np.testing.assert_allclose(numpy_of(dict(ours.named_parameters())[name]), numpy_of(p), rtol=1e-3, atol=1e-4,
                                   err_msg=name)
