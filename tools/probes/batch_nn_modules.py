"""Probe batch (h), issue 13: nn layers built with PyTorch's constructor keywords, their
outputs (weights overwritten from NumPy so both libraries compute the same thing), their reprs
(``print(model)``) and state_dict keys, as model definitions in public code write them."""
from probe_common import data, linear_weights


def _x(torch, *shape, seed=0):
    return data(torch, *shape, seed=seed)


def _run(t, module, *inputs):
    """The module's output (weights from NumPy), its repr and its state_dict's keys and shapes."""
    module = linear_weights(t, module).eval()
    with t.no_grad():
        out = module(*inputs)
    return out, repr(module), [(k, tuple(v.shape)) for k, v in module.state_dict().items()]


IDIOMS = {
    "conv2d_same_reflect": lambda t: _run(t, t.nn.Conv2d(2, 4, 3, padding="same", padding_mode="reflect", bias=False),
                                          _x(t, 1, 2, 5, 5)),
    "conv2d_stride_dilation_groups": lambda t: _run(t, t.nn.Conv2d(4, 4, kernel_size=(3, 2), stride=(2, 1), padding=1,
                                                                   dilation=(1, 2), groups=2), _x(t, 1, 4, 6, 6)),
    "conv1d_circular": lambda t: _run(t, t.nn.Conv1d(2, 3, 3, padding=1, padding_mode="circular"), _x(t, 2, 2, 7)),
    "conv_transpose2d_output_padding": lambda t: _run(t, t.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1,
                                                                              output_padding=1), _x(t, 1, 2, 4, 4)),
    "batchnorm_no_running_stats": lambda t: _run(t, t.nn.BatchNorm2d(3, momentum=None, track_running_stats=False),
                                                 _x(t, 2, 3, 4, 4)),
    "batchnorm_eval_defaults": lambda t: _run(t, t.nn.BatchNorm1d(4, eps=1e-3, affine=True), _x(t, 5, 4)),
    "layernorm_no_bias": lambda t: _run(t, t.nn.LayerNorm(4, elementwise_affine=True, bias=False), _x(t, 2, 4)),
    "layernorm_no_affine": lambda t: _run(t, t.nn.LayerNorm([3, 4], elementwise_affine=False), _x(t, 2, 3, 4)),
    "groupnorm_instancenorm": lambda t: (_run(t, t.nn.GroupNorm(2, 4, eps=1e-4), _x(t, 2, 4, 3)),
                                         _run(t, t.nn.InstanceNorm1d(4, affine=True), _x(t, 2, 4, 5))),
    "embedding_max_norm": lambda t: _run(t, t.nn.Embedding(5, 3, padding_idx=0, max_norm=1.0), t.tensor([[0, 2], [4, 2]])),
    "lstm_bidirectional_batch_first": lambda t: _run(t, t.nn.LSTM(3, 4, num_layers=2, batch_first=True,
                                                                  bidirectional=True), _x(t, 2, 5, 3)),
    "lstm_proj_size": lambda t: _run(t, t.nn.LSTM(3, 4, proj_size=2), _x(t, 5, 2, 3)),
    "gru_layers": lambda t: _run(t, t.nn.GRU(input_size=3, hidden_size=4, num_layers=2, bias=False), _x(t, 5, 2, 3)),
    "rnn_relu": lambda t: _run(t, t.nn.RNN(3, 4, nonlinearity="relu", batch_first=True), _x(t, 2, 5, 3)),
    "multihead_attention_batch_first": lambda t: _run(t, t.nn.MultiheadAttention(4, 2, batch_first=True),
                                                      _x(t, 2, 3, 4), _x(t, 2, 3, 4, seed=1), _x(t, 2, 3, 4, seed=2)),
    "multihead_attention_kdim_vdim": lambda t: _run(t, t.nn.MultiheadAttention(4, 2, kdim=3, vdim=5, bias=False),
                                                    _x(t, 3, 2, 4), _x(t, 6, 2, 3), _x(t, 6, 2, 5)),
    "transformer_encoder_layer_norm_first": lambda t: _run(t, t.nn.TransformerEncoderLayer(
        d_model=4, nhead=2, dim_feedforward=8, dropout=0.0, activation="gelu", batch_first=True, norm_first=True),
        _x(t, 2, 3, 4)),
    "transformer_decoder_layer": lambda t: _run(t, t.nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0), _x(t, 3, 2, 4),
                                                _x(t, 5, 2, 4, seed=1)),
    "flatten_unflatten_modules": lambda t: (_run(t, t.nn.Flatten(start_dim=1, end_dim=-1), _x(t, 2, 3, 4)),
                                            _run(t, t.nn.Unflatten(1, (2, 2)), _x(t, 3, 4))),
    "upsample_pixel_shuffle": lambda t: (_run(t, t.nn.Upsample(scale_factor=2, mode="nearest"), _x(t, 1, 1, 2, 2)),
                                         _run(t, t.nn.PixelShuffle(2), _x(t, 1, 4, 2, 2))),
    "activations_with_options": lambda t: [_run(t, m, _x(t, 3, 4)) for m in (
        t.nn.GELU(approximate="tanh"), t.nn.PReLU(num_parameters=4, init=0.1), t.nn.Softmax(dim=1),
        t.nn.LeakyReLU(negative_slope=0.2, inplace=False), t.nn.ELU(alpha=0.5), t.nn.Hardswish(), t.nn.SiLU(),
        t.nn.Softplus(beta=2.0, threshold=10.0), t.nn.Hardtanh(-0.5, 0.5), t.nn.Threshold(0.1, 20.0), t.nn.Mish())],
    "losses_with_options": lambda t: [_run(t, m, _x(t, 4, 5), target) for m, target in (
        (t.nn.CrossEntropyLoss(label_smoothing=0.1, ignore_index=1), t.tensor([0, 1, 4, 2])),
        (t.nn.MSELoss(reduction="sum"), _x(t, 4, 5, seed=1)),
        (t.nn.HuberLoss(delta=0.5), _x(t, 4, 5, seed=1)),
        (t.nn.BCEWithLogitsLoss(pos_weight=t.ones(5) * 2), (_x(t, 4, 5, seed=1) > 0).float()),
        (t.nn.KLDivLoss(reduction="batchmean", log_target=False), _x(t, 4, 5, seed=1).softmax(1)))],
    "pools_with_options": lambda t: (_run(t, t.nn.MaxPool2d(2, stride=2, ceil_mode=True), _x(t, 1, 1, 5, 5)),
                                     _run(t, t.nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False),
                                          _x(t, 1, 1, 4, 4)),
                                     _run(t, t.nn.AdaptiveAvgPool2d((None, 2)), _x(t, 1, 1, 4, 5)),
                                     _run(t, t.nn.AdaptiveMaxPool1d(3), _x(t, 1, 2, 7))),
    "bilinear_and_identity": lambda t: (_run(t, t.nn.Bilinear(3, 2, 4), _x(t, 5, 3), _x(t, 5, 2, seed=1)),
                                        _run(t, t.nn.Identity(54, unused="argument"), _x(t, 2, 2))),
    "containers": lambda t: _containers(t),
    "sequential_ordered_dict_repr": lambda t: _ordered(t),
}


def _containers(t):
    layers = t.nn.ModuleDict({"a": t.nn.Linear(2, 2), "b": t.nn.ReLU()})
    params = t.nn.ParameterList([t.nn.Parameter(t.ones(2)), t.nn.Parameter(t.zeros(3))])
    pdict = t.nn.ParameterDict({"w": t.nn.Parameter(t.ones(1))})
    seq = t.nn.Sequential(t.nn.Linear(2, 3), t.nn.ReLU())
    seq.append(t.nn.Linear(3, 1))
    return (repr(layers), repr(params), repr(pdict), repr(seq), len(seq), list(layers.keys()),
            [n for n, _ in seq.named_modules()], repr(seq[0:2]))


def _ordered(t):
    from collections import OrderedDict

    model = t.nn.Sequential(OrderedDict([("fc", t.nn.Linear(2, 3, bias=False)), ("act", t.nn.Tanh()),
                                         ("drop", t.nn.Dropout(p=0.25)), ("bn", t.nn.BatchNorm1d(3))]))
    return repr(model), list(model.state_dict())


for _name, _idiom in IDIOMS.items():
    globals()["probe_" + _name] = _idiom
