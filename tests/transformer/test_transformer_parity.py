"""nn.Transformer, TransformerDecoderLayer/TransformerDecoder and the attention masks against
torch.nn 2.13 on the CPU in float64: names, shapes, outputs and gradients."""
import math

import numpy as np
import pytest

import tensorplug as tp
from transformer_reference import compare, torch_single_thread  # noqa: F401 (an autouse fixture)

torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference for nn.Transformer")
nn = tp.nn
# torch.nn.Transformer warns that its nested-tensor fast path is off (batch_first=False): not ours to test.
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning")

SMALL = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16, dropout=0.0)


def _pair(name, *args, **kwargs):
    return getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs).eval()


def _state_shapes(module):
    return [(k, tuple(v.shape)) for k, v in module.state_dict().items()]


def _causal(size):
    return np.triu(np.full((size, size), -np.inf), 1)


def _additive(bool_mask):
    """A bool mask (True blocks) as the equivalent float mask."""
    return np.where(bool_mask, -np.inf, 0.0)


def _padding(batch, length, padded):
    """Key padding mask with the last ``padded[b]`` positions of sequence b masked out."""
    mask = np.zeros((batch, length), dtype=bool)
    for b, count in enumerate(padded):
        if count:
            mask[b, -count:] = True
    return mask


@pytest.mark.parametrize("kwargs", [SMALL, dict(SMALL, bias=False, norm_first=True, batch_first=True),
                                    dict(SMALL, activation="gelu", layer_norm_eps=1e-3)])
def test_transformer_state_dict_matches_torch(kwargs):
    """Transformer's state_dict has PyTorch's keys in PyTorch's order with the same shapes."""
    ours, theirs = _pair("Transformer", **kwargs)
    assert _state_shapes(ours) == _state_shapes(theirs)
    ours.load_state_dict({k: tp.tensor(v.numpy()) for k, v in theirs.state_dict().items()})


def test_decoder_state_dicts_and_repr_match_torch():
    """TransformerDecoderLayer and TransformerDecoder name and shape their weights as PyTorch."""
    ours, theirs = _pair("TransformerDecoderLayer", 8, 2, 16)
    assert _state_shapes(ours) == _state_shapes(theirs)
    assert repr(ours) == repr(theirs)
    stack = nn.TransformerDecoder(ours, 3, norm=nn.LayerNorm(8))
    reference = torch.nn.TransformerDecoder(theirs, 3, norm=torch.nn.LayerNorm(8))
    assert _state_shapes(stack) == _state_shapes(reference)
    assert stack.layers[0].linear1.weight is not stack.layers[1].linear1.weight


def test_transformer_initialisation_is_xavier_uniform():
    """Every matrix starts uniform within xavier_uniform_'s bound (and fills it); attention biases start at zero."""
    model = nn.Transformer(d_model=32, nhead=4, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=64)
    for name, p in model.named_parameters():
        values = p.detach().numpy()
        if p.dim() > 1:
            bound = math.sqrt(6.0 / (p.shape[0] + p.shape[1]))
            assert np.abs(values).max() <= bound, name
            assert np.abs(values).max() > 0.9 * bound, name
            assert abs(values.std() - bound / math.sqrt(3)) < 0.1 * bound, name
        elif "in_proj_bias" in name or "out_proj.bias" in name:
            assert not values.any(), name
    layers = model.encoder.layers
    assert len(layers) == 1 and model.d_model == 32 and model.nhead == 4 and model.batch_first is False


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_matches_torch(batch_first, norm_first):
    """Outputs and gradients match torch with every mask kind: a bool src_mask with a bool key
    padding mask, a float causal tgt_mask and a float memory_mask with float padding masks."""
    kwargs = dict(SMALL, batch_first=batch_first, norm_first=norm_first)
    rng = np.random.default_rng(0)
    src_len, tgt_len, batch = 5, 4, 2
    shape = (lambda length: (batch, length, 8)) if batch_first else (lambda length: (length, batch, 8))
    src, tgt = rng.standard_normal(shape(src_len)), rng.standard_normal(shape(tgt_len))
    src_mask = rng.random((src_len, src_len)) < 0.3
    np.fill_diagonal(src_mask, False)
    masks = dict(src_mask=src_mask, tgt_mask=_causal(tgt_len), memory_mask=rng.standard_normal((tgt_len, src_len)),
                 src_key_padding_mask=_padding(batch, src_len, [0, 2]),
                 tgt_key_padding_mask=_additive(_padding(batch, tgt_len, [1, 0])),
                 memory_key_padding_mask=_additive(_padding(batch, src_len, [0, 2])))
    compare(torch, *_pair("Transformer", **kwargs), [src, tgt], masks)


def test_transformer_without_masks_and_with_causal_hints():
    """No masks at all, and the is_causal hints with the matching causal masks, match torch."""
    rng = np.random.default_rng(1)
    src, tgt = rng.standard_normal((6, 2, 8)), rng.standard_normal((3, 2, 8))
    compare(torch, *_pair("Transformer", **SMALL), [src, tgt])
    hints = dict(src_mask=_causal(6), tgt_mask=_causal(3), src_is_causal=True, tgt_is_causal=True)
    compare(torch, *_pair("Transformer", **SMALL), [src, tgt], hints)


def test_unbatched_transformer():
    """Unbatched (S, E) / (T, E) inputs with 1-D key padding masks match torch."""
    rng = np.random.default_rng(2)
    masks = dict(tgt_mask=_causal(3), src_key_padding_mask=np.array([False, False, False, True]))
    compare(torch, *_pair("Transformer", **SMALL), [rng.standard_normal((4, 8)), rng.standard_normal((3, 8))], masks)


@pytest.mark.parametrize("activation", ["gelu", "callable"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch(activation, norm_first):
    """TransformerDecoderLayer with a string or a callable activation matches torch."""
    act = {"gelu": ("gelu", "gelu"), "callable": (tp.tanh, torch.tanh)}[activation]
    kwargs = dict(dim_feedforward=16, dropout=0.0, norm_first=norm_first, batch_first=True)
    ours = nn.TransformerDecoderLayer(8, 2, activation=act[0], **kwargs)
    theirs = torch.nn.TransformerDecoderLayer(8, 2, activation=act[1], **kwargs)
    rng = np.random.default_rng(3)
    # A bool mask (True blocks): each position sees itself and the one before.
    ones = np.ones((4, 4), dtype=bool)
    masks = dict(tgt_mask=np.triu(ones, 1) | np.tril(ones, -2), memory_key_padding_mask=_padding(2, 5, [1, 0]))
    compare(torch, ours, theirs, [rng.standard_normal((2, 4, 8)), rng.standard_normal((2, 5, 8))], masks)


def test_decoder_stack_matches_torch():
    """TransformerDecoder (layers then norm) matches torch, tgt_is_causal hint included."""
    ours = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 2, norm=nn.LayerNorm(8))
    theirs = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 2, norm=torch.nn.LayerNorm(8))
    rng = np.random.default_rng(4)
    args = [rng.standard_normal((4, 2, 8)), rng.standard_normal((5, 2, 8))]
    compare(torch, ours, theirs.eval(), args, dict(tgt_mask=_causal(4), tgt_is_causal=True))


class _SelfAttend:
    """MultiheadAttention called as self-attention with fixed keyword arguments."""

    @staticmethod
    def pair(need_weights, is_causal=False, batch_first=False):
        def wrap(base, attn):
            class Attend(base.Module):
                def __init__(self):
                    super().__init__()
                    self.attn = attn

                def forward(self, x, **masks):
                    return self.attn(x, x, x, need_weights=need_weights, is_causal=is_causal, **masks)[0]

            return Attend()

        return (wrap(nn, nn.MultiheadAttention(8, 2, batch_first=batch_first)),
                wrap(torch.nn, torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)))


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("kind", ["bool", "float", "float3d", "padding", "both", "causal-hint", "causal-hint-padded"])
def test_attention_masks_match_torch(kind, need_weights):
    """Every mask form MultiheadAttention takes gives torch's outputs and gradients, with the
    weights asked for (softmax path) or not (fused path)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((5, 2, 8))
    blocked = rng.random((5, 5)) < 0.4
    np.fill_diagonal(blocked, False)
    float_mask = rng.standard_normal((5, 5))
    padding = _padding(2, 5, [0, 2])
    masks = {
        "bool": dict(attn_mask=blocked),
        "float": dict(attn_mask=float_mask),
        "float3d": dict(attn_mask=rng.standard_normal((4, 5, 5))),
        "padding": dict(key_padding_mask=padding),
        "both": dict(attn_mask=np.where(blocked, -np.inf, float_mask), key_padding_mask=padding.astype(float) * -1e9),
        "causal-hint": dict(attn_mask=_causal(5)),
        "causal-hint-padded": dict(attn_mask=_causal(5), key_padding_mask=_additive(padding)),
    }[kind]
    compare(torch, *_SelfAttend.pair(need_weights, is_causal=kind.startswith("causal")), [x], masks)


def test_causal_hint_overrides_a_non_causal_mask_as_in_torch():
    """With is_causal=True and no padding, PyTorch applies a causal mask whatever attn_mask says; so do we."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 5, 8))
    compare(torch, *_SelfAttend.pair(False, is_causal=True, batch_first=True), [x], dict(attn_mask=np.zeros((5, 5))))


def test_fully_padded_sequence_gives_zero_attention_not_nan():
    """A sequence whose every key is padded gets a zero attention output (then the output
    projection's bias) and finite gradients, as torch's fused path; the weights path gives NaN as torch's."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 2, 8)).astype(np.float32)
    padding = _padding(2, 4, [0, 4])
    compare(torch, *_SelfAttend.pair(False), [x], dict(key_padding_mask=padding))
    ours = nn.MultiheadAttention(8, 2)
    out, _ = ours(tp.tensor(x), tp.tensor(x), tp.tensor(x), key_padding_mask=tp.tensor(padding))
    assert np.isnan(out.detach().numpy()[:, 1]).all() and not np.isnan(out.detach().numpy()[:, 0]).any()


def test_generate_square_subsequent_mask_matches_torch():
    """The causal mask is torch's, as a static method, in the asked dtype."""
    np.testing.assert_array_equal(nn.Transformer.generate_square_subsequent_mask(5).numpy(),
                                  torch.nn.Transformer.generate_square_subsequent_mask(5).numpy())
    mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=tp.float64)
    assert mask.dtype == tp.float64 and mask.shape == (3, 3)


def test_mismatched_mask_types_warn_as_torch():
    """A bool padding mask beside a float attention mask works and warns as PyTorch does."""
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    src = tp.randn(4, 2, 8)
    with pytest.warns(UserWarning, match="Support for mismatched src_key_padding_mask and src_mask is deprecated"):
        layer(src, src_mask=tp.tensor(_causal(4)).float(), src_key_padding_mask=tp.zeros(2, 4, dtype=tp.bool))


def test_transformer_errors_name_the_shapes():
    """Mismatched batch or feature sizes raise PyTorch's message plus the shapes."""
    model = nn.Transformer(**SMALL)
    with pytest.raises(RuntimeError, match=r"the batch number of src and tgt must be equal .*src \[5, 2, 8\], tgt \[4, 3, 8\]"):
        model(tp.zeros(5, 2, 8), tp.zeros(4, 3, 8))
    with pytest.raises(RuntimeError, match=r"the feature number of src and tgt must be equal to d_model .*tgt \[4, 2, 6\]"):
        model(tp.zeros(5, 2, 8), tp.zeros(4, 2, 6))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerDecoderLayer(8, 2, activation="tanh")
    with pytest.raises(AssertionError, match="expected `key_padding_mask` to be `None` or 2-D but found 1-D"):
        nn.MultiheadAttention(8, 2)(tp.zeros(3, 2, 8), tp.zeros(3, 2, 8), tp.zeros(3, 2, 8), key_padding_mask=tp.zeros(3, dtype=tp.bool))


def _word_model_class(base):
    """pytorch/examples' word_language_model TransformerModel, written against ``base``."""

    class TransformerModel(base.nn.Transformer):
        def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
            super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid, num_encoder_layers=nlayers, dropout=dropout)
            self.model_type = "Transformer"
            self.input_emb = base.nn.Embedding(ntoken, ninp)
            self.ninp = ninp
            self.decoder = base.nn.Linear(ninp, ntoken)

        def forward(self, src):
            mask = self.generate_square_subsequent_mask(len(src)).to(src.device)
            output = self.encoder(self.input_emb(src) * math.sqrt(self.ninp), mask=mask)
            return base.nn.functional.log_softmax(self.decoder(output), dim=-1)

    return TransformerModel


def test_subclass_replacing_the_decoder_matches_torch():
    """A subclass that calls super().__init__ and replaces self.decoder with a Linear layer, as the
    word language model example does: same state_dict keys (decoder.* now the Linear's), same outputs and gradients."""
    ours, theirs = _word_model_class(tp)(11, 8, 2, 16, 2, dropout=0.0), _word_model_class(torch)(11, 8, 2, 16, 2, dropout=0.0)
    assert _state_shapes(ours) == _state_shapes(theirs)
    assert isinstance(ours.decoder, nn.Linear) and isinstance(ours, nn.Transformer)
    tokens = np.random.default_rng(8).integers(0, 11, (6, 2))
    theirs.eval()
    out_ours, out_theirs = ours.double(), theirs.double()
    compare(torch, out_ours, out_theirs, [tokens])
