"""MultiheadAttention and TransformerEncoderLayer against torch.nn."""
import numpy as np
import pytest

import tensorplug as tp
from module_parity import check_module

torch = pytest.importorskip("torch")
nn = tp.nn


class _Attend:
    """Calls attention with fixed keyword arguments; built for either library."""

    @staticmethod
    def make(base, lib, **kwargs):
        class Attend(base.Module):
            def __init__(self, attn):
                super().__init__()
                self.attn = attn

            def forward(self, q, k, v):
                return self.attn(q, k, v, **{k_: (lib.tensor(v_) if isinstance(v_, np.ndarray) else v_) for k_, v_ in kwargs.items()})

        return Attend


def attend_pair(ours, theirs, **kwargs):
    return _Attend.make(nn, tp, **kwargs)(ours), _Attend.make(torch.nn, torch, **kwargs)(theirs)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights, average", [(True, True), (True, False), (False, True)])
def test_self_attention(batch_first, need_weights, average):
    """Outputs, attention weights and gradients match for self-attention in both layouts."""
    ours, theirs = nn.MultiheadAttention(8, 2, batch_first=batch_first), torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    with torch.no_grad():
        theirs.in_proj_bias.normal_()
        theirs.out_proj.bias.normal_()
    x = np.random.randn(3, 5, 8)
    a, b = attend_pair(ours, theirs, need_weights=need_weights, average_attn_weights=average)
    check_module(torch, a, b, [x, x, x])


def test_masks_and_cross_attention():
    """A bool attn_mask (True = blocked), a bool key_padding_mask, float masks and kdim/vdim match torch."""
    causal = np.triu(np.ones((4, 6), dtype=bool), k=1)
    padding = np.zeros((2, 6), dtype=bool)
    padding[1, -2:] = True
    q, kv = np.random.randn(4, 2, 8), np.random.randn(6, 2, 8)
    a, b = attend_pair(nn.MultiheadAttention(8, 4), torch.nn.MultiheadAttention(8, 4), attn_mask=causal, key_padding_mask=padding)
    check_module(torch, a, b, [q, kv, kv])
    float_mask = np.random.randn(2 * 4, 4, 6)
    a, b = attend_pair(nn.MultiheadAttention(8, 4), torch.nn.MultiheadAttention(8, 4), attn_mask=float_mask, need_weights=False)
    check_module(torch, a, b, [q, kv, kv])
    ours, theirs = nn.MultiheadAttention(8, 2, kdim=3, vdim=5), torch.nn.MultiheadAttention(8, 2, kdim=3, vdim=5)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    a, b = attend_pair(ours, theirs)
    check_module(torch, a, b, [q, np.random.randn(6, 2, 3), np.random.randn(6, 2, 5)])


def test_bias_kv_zero_attn_and_unbatched():
    """add_bias_kv, add_zero_attn and unbatched (L, E) inputs match torch."""
    kwargs = dict(add_bias_kv=True, add_zero_attn=True, bias=False)
    a, b = attend_pair(nn.MultiheadAttention(6, 3, **kwargs), torch.nn.MultiheadAttention(6, 3, **kwargs))
    x = np.random.randn(5, 2, 6)
    check_module(torch, a, b, [x, x, x])
    a, b = attend_pair(nn.MultiheadAttention(6, 3), torch.nn.MultiheadAttention(6, 3))
    x = np.random.randn(5, 6)
    check_module(torch, a, b, [x, x, x])


def test_attention_state_dict_names_and_repr():
    """Parameter names (in_proj_weight, in_proj_bias, out_proj.*) and the repr are torch's."""
    ours, theirs = nn.MultiheadAttention(8, 2), torch.nn.MultiheadAttention(8, 2)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    assert ours.in_proj_bias.abs().sum().item() == 0 and ours.out_proj.bias.abs().sum().item() == 0
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(8, 3)
    with pytest.raises(RuntimeError, match=r"expected query of shape \(L, 8\) or 3-D with last dimension 8, got shape \[2, 3, 7\]"):
        ours(tp.zeros(2, 3, 7), tp.zeros(2, 3, 7), tp.zeros(2, 3, 7))


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer(norm_first, activation):
    """TransformerEncoderLayer (eval, no dropout) matches torch with a padding mask."""
    kwargs = dict(dim_feedforward=16, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first)
    ours, theirs = nn.TransformerEncoderLayer(8, 2, **kwargs), torch.nn.TransformerEncoderLayer(8, 2, **kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x = np.random.randn(2, 5, 8)
    check_module(torch, ours, theirs, [x])
    padding = np.zeros((2, 5), dtype=bool)
    padding[0, -1] = True
    kw = {"tp": {"src_key_padding_mask": tp.tensor(padding)}, "torch": {"src_key_padding_mask": torch.tensor(padding)}}
    check_module(torch, ours, theirs, [x], kwargs=kw)


def test_encoder_stack():
    """TransformerEncoder stacks independent copies of the layer, as torch does."""
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8))
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    theirs = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2, norm=torch.nn.LayerNorm(8),
                                         enable_nested_tensor=False)
    assert list(enc.state_dict()) == list(theirs.state_dict())
    check_module(torch, enc, theirs, [np.random.randn(5, 2, 8)])
