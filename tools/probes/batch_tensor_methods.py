"""Probe batch (g), issue 13: Tensor methods and torch functions as training and data scripts
call them, with PyTorch's keyword names and defaults (reductions' dim/keepdim/correction forms,
splitting and reshaping, the new_* factories, conversions, searching and binning, grids and
combinations), and the nn/optim utilities around a training step (clip_grad_norm_,
pad_sequence, load_state_dict's result, optimizer defaults). ``x.type()`` is left out: it names
the library ('tensorplug.FloatTensor'), as ``str(dtype)`` does."""
from probe_common import data, linear_weights


def _x(torch, *shape, seed=0):
    return data(torch, *(shape or (3, 4)), seed=seed)


IDIOMS = {
    # --- reductions
    "std_unbiased_keyword": lambda t: (_x(t).std(dim=0, unbiased=False), _x(t).std(1, keepdim=True)),
    "var_correction": lambda t: (_x(t).var(correction=0), t.var(_x(t), dim=1, correction=2)),
    "std_mean_tuple": lambda t: t.std_mean(_x(t), dim=1),
    "var_mean_unbiased": lambda t: t.var_mean(_x(t), 0, unbiased=False, keepdim=True),
    "argmax_keepdim": lambda t: (_x(t).argmax(dim=1, keepdim=True), _x(t).argmin()),
    "cumsum_dtype": lambda t: (_x(t).cumsum(dim=1, dtype=t.float64), _x(t).cumprod(0)),
    "norm_p_dim": lambda t: (_x(t).norm(p=2, dim=1, keepdim=True), _x(t).norm(p="fro"), _x(t).norm(1)),
    "linalg_norm_ord": lambda t: (t.linalg.norm(_x(t), ord=2), t.linalg.vector_norm(_x(t), ord=3, dim=1)),
    "logsumexp_keepdim": lambda t: t.logsumexp(_x(t), dim=1, keepdim=True),
    "count_nonzero_dims": lambda t: (t.count_nonzero(_x(t) > 0, dim=0), (_x(t) > 0).count_nonzero()),
    "quantile_nearest": lambda t: t.quantile(_x(t), t.tensor([0.25, 0.5]), dim=1, keepdim=True,
                                             interpolation="nearest"),
    "nanquantile_midpoint": lambda t: t.nanquantile(t.tensor([1.0, float("nan"), 3.0, 2.0]), 0.5,
                                                    interpolation="midpoint"),
    "sum_dtype_and_tuple_dims": lambda t: (_x(t, 2, 3, 4).sum(dim=(0, 2)), _x(t).sum(dtype=t.float64)),
    "mean_keepdim_negative": lambda t: _x(t, 2, 3, 4).mean(-1, keepdim=True),
    "prod_dim_dtype": lambda t: t.prod(_x(t), 1, dtype=t.float64),
    # --- splitting, joining, reshaping
    "split_sizes": lambda t: (_x(t).split(2, dim=1), _x(t).split([1, 3], dim=1), t.split(_x(t), 2)),
    "chunk_unbind": lambda t: (t.chunk(_x(t), 3, dim=1), _x(t).unbind(1)),
    "repeat_interleave_tensor": lambda t: (_x(t).repeat_interleave(t.tensor([1, 2, 0]), dim=0),
                                           t.repeat_interleave(t.tensor([2, 1]))),
    "flatten_unflatten": lambda t: (_x(t, 2, 3, 4).flatten(start_dim=1), _x(t).unflatten(1, (2, 2)),
                                    _x(t, 2, 3, 4).flatten(0, 1)),
    "permute_forms": lambda t: (_x(t, 2, 3, 4).permute(2, 0, 1), _x(t, 2, 3, 4).permute((1, 0, 2)),
                                _x(t, 2, 3, 4).permute(dims=[2, 1, 0]), _x(t, 2, 3, 4).movedim(0, -1)),
    "view_reshape_forms": lambda t: (_x(t).view(-1, 2), _x(t).view((2, 6)), t.reshape(_x(t), shape=(6, 2)),
                                     _x(t).reshape(-1)),
    "expand_forms": lambda t: (_x(t, 1, 4).expand(3, -1), _x(t, 1, 4).expand_as(_x(t)), _x(t, 4).expand((2, 4))),
    "squeeze_unsqueeze": lambda t: (_x(t, 1, 3, 1).squeeze(), _x(t, 1, 3, 1).squeeze(-1), _x(t, 1, 3, 1).squeeze((0, 2)),
                                    _x(t).unsqueeze(dim=1).shape),
    "transpose_T_mT": lambda t: (_x(t).T, _x(t, 2, 3, 4).mT, _x(t).t(), _x(t).transpose(dim0=0, dim1=1)),
    "roll_flip_rot90": lambda t: (t.roll(_x(t), shifts=(1, -1), dims=(0, 1)), t.flip(_x(t), dims=[0]),
                                  t.rot90(_x(t), k=3, dims=[0, 1]), _x(t).fliplr()),
    "tril_triu_indices": lambda t: (t.tril(_x(t), diagonal=-1), t.triu_indices(3, 4, offset=1),
                                    t.tril_indices(row=3, col=3)),
    # --- new_* factories and conversions
    "new_factories": lambda t: (_x(t).new_zeros(2, 3), _x(t).new_full((2,), 3.0), _x(t).new_tensor([1, 2]),
                                _x(t).new_ones((1, 2)).dtype, _x(t).new_empty(2, 2).shape,
                                _x(t, seed=1).double().new_zeros(1).dtype),
    "like_factories": lambda t: (t.full_like(_x(t), 7), t.zeros_like(_x(t), dtype=t.int32), t.ones_like(_x(t)).dtype,
                                 t.empty_like(_x(t)).shape, t.rand_like(_x(t)).shape),
    "conversions": lambda t: (_x(t).type(t.float64).dtype, _x(t).to(t.float16).dtype, _x(t).to("cpu", t.float64).dtype,
                              _x(t).to(_x(t).long()).dtype, _x(t).long().float().dtype,
                              _x(t).to(dtype=t.bfloat16, copy=True).dtype),
    "ranges": lambda t: (t.arange(0, 1, 0.25), t.linspace(0, 1, steps=5), t.logspace(0, 2, steps=3, base=2),
                         t.arange(5, dtype=t.float32), t.arange(start=1, end=4)),
    "item_tolist_numpy": lambda t: (_x(t)[0, 0].item(), _x(t, 2).tolist(), type(_x(t).numpy()).__name__),
    # --- comparisons, search, binning
    "allclose_isclose": lambda t: (t.allclose(_x(t), _x(t) + 1e-6, rtol=1e-5, atol=1e-8),
                                   t.isclose(t.tensor([float("nan")]), t.tensor([float("nan")]), equal_nan=True)),
    "searchsorted_bucketize": lambda t: (t.searchsorted(t.tensor([1.0, 3.0, 5.0]), t.tensor([3.0, 4.0]), side="right"),
                                         t.bucketize(t.tensor([3.0, 4.0]), t.tensor([1.0, 3.0, 5.0]), right=True),
                                         t.searchsorted(t.tensor([5.0, 1.0, 3.0]), t.tensor([2.0]),
                                                        sorter=t.tensor([1, 2, 0]))),
    "diff_prepend": lambda t: (t.diff(_x(t), n=2, dim=1), t.diff(_x(t, 4), prepend=t.zeros(1), append=t.ones(2))),
    "histc_bincount": lambda t: (t.histc(_x(t), bins=5, min=-1, max=1), t.bincount(t.tensor([0, 2, 2]), minlength=5),
                                 t.bincount(t.tensor([0, 1, 1]), weights=t.tensor([0.5, 1.0, 2.0]))),
    "where_single_argument": lambda t: (t.where(_x(t) > 0), t.nonzero(_x(t) > 0, as_tuple=True),
                                        (_x(t) > 0).nonzero()),
    "masked_fill_value_keyword": lambda t: (_x(t).masked_fill(_x(t) > 0, value=0.0),
                                            _x(t).masked_fill(mask=_x(t) < 0, value=t.tensor(-1.0))),
    "scatter_value_and_reduce": lambda t: (t.zeros(3, 4).scatter(1, t.tensor([[0], [1], [3]]), value=2.0),
                                           t.ones(3, 4).scatter(1, t.tensor([[0], [1], [3]]), 2.0, reduce="multiply")),
    "clamp_tensor_bounds": lambda t: t.clamp(_x(t), min=t.zeros(4) - 0.5, max=t.ones(4) * 0.5),
    "meshgrid_indexing": lambda t: (t.meshgrid(t.arange(3), t.arange(2), indexing="ij"),
                                    t.meshgrid(t.arange(3), t.arange(2), indexing="xy")),
    "cartesian_combinations": lambda t: (t.cartesian_prod(t.tensor([1, 2]), t.tensor([3, 4, 5])),
                                         t.combinations(t.tensor([1, 2, 3]), r=2, with_replacement=True)),
    "cdist_p": lambda t: (t.cdist(_x(t), _x(t, 2, 4, seed=1), p=1.0), t.cdist(_x(t), _x(t, 2, 4, seed=1))),
    "topk_largest_default_sorted": lambda t: t.topk(_x(t, 6), 3, largest=True).indices,
    # --- nn and optim utilities around a training step
    "clip_grad_norm_keywords": lambda t: _clip(t),
    "pad_sequence_options": lambda t: (t.nn.utils.rnn.pad_sequence([t.ones(2), t.ones(3) * 2], batch_first=True,
                                                                   padding_value=-1.0),
                                       t.nn.utils.rnn.pad_sequence([t.ones(2), t.ones(3) * 2], padding_side="left")),
    "parameters_to_vector_round_trip": lambda t: _vector_round_trip(t),
    "load_state_dict_result": lambda t: _load_result(t),
    "named_parameters_prefix": lambda t: [n for n, _ in t.nn.Sequential(t.nn.Linear(2, 3), t.nn.ReLU(), t.nn.Linear(3, 1))
                                          .named_parameters(prefix="model", recurse=True)],
    "zero_grad_set_to_none": lambda t: _zero_grad(t),
    "optimizer_defaults": lambda t: (t.optim.AdamW([t.nn.Parameter(t.zeros(1))]).defaults["weight_decay"],
                                     t.optim.Adam([t.nn.Parameter(t.zeros(1))]).defaults["betas"],
                                     t.optim.SGD([t.nn.Parameter(t.zeros(1))], lr=0.1).defaults["momentum"],
                                     t.optim.RMSprop([t.nn.Parameter(t.zeros(1))]).defaults["alpha"]),
    "adam_amsgrad_steps": lambda t: _adam_steps(t),
    "module_apply_init": lambda t: _apply_init(t),
}


def _clip(t):
    p = t.nn.Parameter(t.ones(3))
    p.grad = t.tensor([3.0, 4.0, 0.0])
    q = t.nn.Parameter(t.ones(2))
    q.grad = t.tensor([1.0, -5.0])
    total = t.nn.utils.clip_grad_norm_([p, q], max_norm=1.0, norm_type=2.0, error_if_nonfinite=True)
    t.nn.utils.clip_grad_value_([q], clip_value=0.1)
    return total, p.grad, q.grad


def _vector_round_trip(t):
    model = linear_weights(t, t.nn.Linear(3, 2))
    vector = t.nn.utils.parameters_to_vector(model.parameters())
    t.nn.utils.vector_to_parameters(vector * 2, model.parameters())
    return vector, model.weight


def _load_result(t):
    model = t.nn.Linear(2, 2)
    result = model.load_state_dict({"weight": t.zeros(2, 2), "extra": t.zeros(1)}, strict=False)
    return type(result).__name__, result.missing_keys, result.unexpected_keys, tuple(result)


def _zero_grad(t):
    model = t.nn.Linear(2, 1)
    model(t.ones(1, 2)).sum().backward()
    model.zero_grad(set_to_none=False)
    kept = model.weight.grad
    model.zero_grad()
    return kept, model.weight.grad


def _adam_steps(t):
    model = linear_weights(t, t.nn.Linear(3, 1))
    o = t.optim.Adam(model.parameters(), lr=0.1, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.01, amsgrad=True)
    x = data(t, 4, 3, seed=5)
    for _ in range(3):
        o.zero_grad()
        (model(x) ** 2).mean().backward()
        o.step()
    return model.weight, sorted(o.state_dict()["state"][0])


def _apply_init(t):
    def init(m):
        if isinstance(m, t.nn.Linear):
            t.nn.init.constant_(m.weight, 0.5)
            t.nn.init.zeros_(m.bias)

    model = t.nn.Sequential(t.nn.Linear(2, 2), t.nn.Tanh()).apply(init)
    return model(t.ones(1, 2))


for _name, _idiom in IDIOMS.items():
    globals()["probe_" + _name] = _idiom
