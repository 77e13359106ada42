"""Probe batch (f), issue 13: the API surfaces ordinary programs lean on, called as PyTorch's
documentation writes them: sorting and selection results (their named fields and type names),
``unique``, ``einsum``'s forms, ``nn.functional`` keywords, ``nn.init`` and the learning-rate
schedulers (their learning rates step by step, and a state_dict round trip mid-schedule).
Random initializers are probed through what does not depend on the generator."""
from probe_common import data


def _x(torch, *shape, seed=0):
    return data(torch, *(shape or (3, 4)), seed=seed)


def _F(torch):
    return torch.nn.functional


def _fields(result, names=("values", "indices")):
    """A named result as its type's name, its named fields and its items."""
    return type(result).__name__, {name: getattr(result, name) for name in names}, tuple(result)


def _ints(torch):
    return torch.tensor([[3, 1, 3, 2], [1, 1, 0, 2], [3, 1, 3, 2]])


IDIOMS = {
    # --- sorting and selection: named results
    "sort_stable_keyword": lambda t: _fields(t.sort(_ints(t), dim=1, descending=True, stable=True)),
    "sort_method_stable_only": lambda t: _fields(_ints(t).sort(stable=True)),
    "argsort_stable": lambda t: t.argsort(_ints(t), dim=0, stable=True),
    "max_dim_keepdim": lambda t: _fields(t.max(_x(t), dim=1, keepdim=True)),
    "min_dim_positional": lambda t: _fields(_x(t).min(0)),
    "max_of_two_tensors": lambda t: t.max(_x(t), _x(t, seed=1)),
    "median_dim": lambda t: _fields(_x(t).median(dim=1)),
    "mode_dim": lambda t: _fields(t.mode(_ints(t), dim=1)),
    "kthvalue_keywords": lambda t: _fields(t.kthvalue(_x(t), k=2, dim=0, keepdim=False)),
    "topk_keywords": lambda t: _fields(t.topk(_x(t), k=2, dim=1, largest=False, sorted=True)),
    "topk_method_default_dim": lambda t: _fields(_x(t).topk(3)),
    "aminmax_fields": lambda t: _fields(t.aminmax(_x(t), dim=0), ("min", "max")),
    "cummax_fields": lambda t: _fields(_x(t).cummax(dim=1)),
    "msort": lambda t: t.msort(_x(t)),
    # --- unique
    "unique_sorted_counts_inverse": lambda t: t.unique(_ints(t), sorted=True, return_inverse=True, return_counts=True),
    "unique_dim": lambda t: t.unique(_ints(t), dim=0, return_counts=True),
    "unique_dim1_inverse": lambda t: _ints(t).unique(dim=1, return_inverse=True),
    "unique_consecutive_counts": lambda t: t.unique_consecutive(t.tensor([1, 1, 2, 2, 3, 1, 1]), return_counts=True,
                                                                return_inverse=True),
    "unique_consecutive_dim": lambda t: t.unique_consecutive(t.tensor([[1, 1], [1, 1], [2, 0]]), dim=0),
    "unique_method_plain": lambda t: _ints(t).unique(),
    # --- einsum forms
    "einsum_matmul": lambda t: t.einsum("ij,jk->ik", _x(t), _x(t, 4, 2)),
    "einsum_implicit_output": lambda t: t.einsum("ij,jk", _x(t), _x(t, 4, 2)),
    "einsum_list_operands": lambda t: t.einsum("ij,jk->ik", [_x(t), _x(t, 4, 2)]),
    "einsum_trace_and_diagonal": lambda t: (t.einsum("ii", _x(t, 3, 3)), t.einsum("ii->i", _x(t, 3, 3))),
    "einsum_ellipsis_batch": lambda t: t.einsum("...ij,...jk->...ik", _x(t, 2, 3, 4), _x(t, 2, 4, 2)),
    "einsum_outer_and_dot": lambda t: (t.einsum("i,j->ij", _x(t, 3), _x(t, 2)), t.einsum("i,i->", _x(t, 3), _x(t, 3))),
    "einsum_spaces": lambda t: t.einsum(" b i j , b j k -> b i k ", _x(t, 2, 3, 4), _x(t, 2, 4, 2)),
    "einsum_sublists": lambda t: t.einsum(_x(t), [0, 1], _x(t, 4, 2), [1, 2], [0, 2]),
    "einsum_transpose_sum": lambda t: (t.einsum("ij->ji", _x(t)), t.einsum("ij->", _x(t))),
    "einsum_bilinear": lambda t: t.einsum("bn,anm,bm->ba", _x(t, 2, 3), _x(t, 4, 3, 5), _x(t, 2, 5)),
    # --- nn.functional keywords
    "F_cross_entropy_smoothing": lambda t: _F(t).cross_entropy(_x(t, 4, 5), t.tensor([0, 4, -100, 2]), ignore_index=-100,
                                                               label_smoothing=0.1, reduction="sum"),
    "F_cross_entropy_probabilities": lambda t: _F(t).cross_entropy(_x(t, 4, 5), _x(t, 4, 5, seed=1).softmax(1)),
    "F_nll_loss_weight": lambda t: _F(t).nll_loss(_x(t, 4, 5).log_softmax(1), t.tensor([0, 4, 1, 2]),
                                                  weight=_x(t, 5).abs(), reduction="mean"),
    "F_interpolate_bilinear": lambda t: _F(t).interpolate(_x(t, 1, 2, 3, 4), scale_factor=2, mode="bilinear",
                                                          align_corners=False),
    "F_interpolate_size_nearest": lambda t: _F(t).interpolate(_x(t, 1, 2, 3, 4), size=(5, 7), mode="nearest"),
    "F_interpolate_recompute": lambda t: _F(t).interpolate(_x(t, 1, 1, 5), scale_factor=1.5, mode="linear",
                                                           recompute_scale_factor=True),
    "F_layer_norm_keywords": lambda t: _F(t).layer_norm(_x(t), normalized_shape=(4,), weight=None, bias=None, eps=1e-3),
    "F_group_norm": lambda t: _F(t).group_norm(_x(t, 2, 4, 3), num_groups=2, eps=1e-4),
    "F_normalize_keywords": lambda t: _F(t).normalize(_x(t), p=1.0, dim=0, eps=1e-6),
    "F_softmax_dtype": lambda t: _F(t).softmax(_x(t), dim=-1, dtype=t.float64),
    "F_log_softmax_dim": lambda t: _F(t).log_softmax(_x(t), dim=0),
    "F_gelu_tanh": lambda t: _F(t).gelu(_x(t), approximate="tanh"),
    "F_one_hot_classes": lambda t: _F(t).one_hot(t.tensor([0, 2, 1]), num_classes=4),
    "F_one_hot_inferred": lambda t: _F(t).one_hot(t.tensor([[0, 2], [1, 3]])),
    "F_pad_reflect_replicate": lambda t: (_F(t).pad(_x(t, 1, 2, 4), (2, 1), mode="reflect"),
                                          _F(t).pad(_x(t, 1, 1, 3, 3), (1, 1, 2, 0), mode="replicate")),
    "F_pad_circular": lambda t: _F(t).pad(_x(t, 1, 1, 3, 3), (1, 1, 1, 1), mode="circular"),
    "F_dropout_eval": lambda t: _F(t).dropout(_x(t), p=0.5, training=False),
    "F_sdpa_causal_scale": lambda t: _F(t).scaled_dot_product_attention(_x(t, 1, 2, 3, 4), _x(t, 1, 2, 3, 4, seed=1),
                                                                        _x(t, 1, 2, 3, 4, seed=2), is_causal=True, scale=0.3),
    "F_leaky_relu_slope": lambda t: _F(t).leaky_relu(_x(t), negative_slope=0.2),
    "F_elu_alpha": lambda t: _F(t).elu(_x(t), alpha=0.5),
    "F_cosine_similarity": lambda t: _F(t).cosine_similarity(_x(t), _x(t, seed=1), dim=0, eps=1e-6),
    "F_pairwise_distance": lambda t: _F(t).pairwise_distance(_x(t), _x(t, seed=1), p=1.0, keepdim=True),
    "F_mse_sum": lambda t: _F(t).mse_loss(_x(t), _x(t, seed=1), reduction="sum"),
    "F_bce_logits_pos_weight": lambda t: _F(t).binary_cross_entropy_with_logits(_x(t), (_x(t, seed=1) > 0).float(),
                                                                                pos_weight=t.tensor([1.0, 2.0, 0.5, 3.0])),
    "F_smooth_l1_beta": lambda t: _F(t).smooth_l1_loss(_x(t), _x(t, seed=1), beta=0.5),
    "F_huber_delta": lambda t: _F(t).huber_loss(_x(t), _x(t, seed=1), delta=0.3, reduction="none"),
    "F_kl_div_log_target": lambda t: _F(t).kl_div(_x(t).log_softmax(1), _x(t, seed=1).log_softmax(1),
                                                   reduction="batchmean", log_target=True),
    "F_embedding_padding": lambda t: _F(t).embedding(t.tensor([[0, 2], [1, 0]]), _x(t, 3, 2), padding_idx=0),
    "F_avg_pool_options": lambda t: _F(t).avg_pool2d(_x(t, 1, 1, 5, 5), kernel_size=2, stride=2, ceil_mode=True,
                                                     count_include_pad=False),
    "F_max_pool_indices": lambda t: _F(t).max_pool2d(_x(t, 1, 1, 4, 4), 2, return_indices=True),
    "F_adaptive_avg_pool": lambda t: _F(t).adaptive_avg_pool2d(_x(t, 1, 2, 5, 7), output_size=(2, 3)),
    "F_conv2d_keywords": lambda t: _F(t).conv2d(_x(t, 1, 2, 5, 5), _x(t, 4, 1, 3, 3, seed=1), bias=None, stride=1,
                                                padding="same", dilation=1, groups=2),
    "F_linear_keywords": lambda t: _F(t).linear(input=_x(t), weight=_x(t, 2, 4, seed=1), bias=_x(t, 2, seed=2)),
    "F_triplet_margin": lambda t: _F(t).triplet_margin_loss(_x(t), _x(t, seed=1), _x(t, seed=2), margin=0.5, p=1),
    "F_margin_ranking": lambda t: _F(t).margin_ranking_loss(_x(t, 4), _x(t, 4, seed=1), t.tensor([1.0, -1.0, 1.0, -1.0]),
                                                            margin=0.1),
    "F_glu_dim": lambda t: _F(t).glu(_x(t), dim=1),
    "F_hardtanh_bounds": lambda t: _F(t).hardtanh(_x(t), min_val=-0.5, max_val=0.5),
    "F_softplus_beta": lambda t: _F(t).softplus(_x(t), beta=2.0, threshold=1.0),
    "F_unfold_fold": lambda t: _F(t).fold(_F(t).unfold(_x(t, 1, 2, 4, 4), kernel_size=2, stride=2), output_size=(4, 4),
                                          kernel_size=2, stride=2),
    # --- nn.init
    "init_calculate_gain": lambda t: (t.nn.init.calculate_gain("leaky_relu", 0.2), t.nn.init.calculate_gain("tanh"),
                                      t.nn.init.calculate_gain("selu"), t.nn.init.calculate_gain("conv2d")),
    "init_deterministic": lambda t: _deterministic_inits(t),
    "init_bounds": lambda t: _init_bounds(t),
    "init_orthogonal": lambda t: _orthogonal(t),
    "init_returns_its_tensor": lambda t: _init_returns(t),
    # --- learning-rate schedulers
    "sched_one_cycle": lambda t: _lrs(t, lambda o: t.optim.lr_scheduler.OneCycleLR(o, max_lr=0.5, total_steps=12,
                                                                                  pct_start=0.25, anneal_strategy="cos")),
    "sched_one_cycle_three_phase": lambda t: _lrs(t, lambda o: t.optim.lr_scheduler.OneCycleLR(
        o, max_lr=[0.5], epochs=3, steps_per_epoch=4, three_phase=True, anneal_strategy="linear",
        div_factor=10.0, final_div_factor=100.0)),
    "sched_one_cycle_momentum": lambda t: _momenta(t),
    "sched_cosine_warm_restarts": lambda t: _lrs(t, lambda o: t.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.01), steps=14),
    "sched_cosine_warm_restarts_fractional": lambda t: _warm_restarts_fractional(t),
    "sched_reduce_on_plateau": lambda t: _plateau(t),
    "sched_cyclic": lambda t: _lrs(t, lambda o: t.optim.lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3,
                                                                              mode="triangular2", cycle_momentum=False)),
    "sched_step_multistep_exp": lambda t: (_lrs(t, lambda o: t.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5)),
                                           _lrs(t, lambda o: t.optim.lr_scheduler.MultiStepLR(o, milestones=[2, 5], gamma=0.1)),
                                           _lrs(t, lambda o: t.optim.lr_scheduler.ExponentialLR(o, gamma=0.9))),
    "sched_cosine_linear_poly": lambda t: (_lrs(t, lambda o: t.optim.lr_scheduler.CosineAnnealingLR(o, T_max=5, eta_min=0.001)),
                                           _lrs(t, lambda o: t.optim.lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=4)),
                                           _lrs(t, lambda o: t.optim.lr_scheduler.PolynomialLR(o, total_iters=6, power=2.0))),
    "sched_sequential_warmup": lambda t: _lrs(t, lambda o: t.optim.lr_scheduler.SequentialLR(
        o, schedulers=[t.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=3),
                       t.optim.lr_scheduler.CosineAnnealingLR(o, T_max=6)], milestones=[3])),
    "sched_lambda_multiplicative": lambda t: (_lrs(t, lambda o: t.optim.lr_scheduler.LambdaLR(o, lambda e: 0.95 ** e)),
                                              _lrs(t, lambda o: t.optim.lr_scheduler.MultiplicativeLR(o, lambda e: 0.9))),
    "sched_state_dict_round_trips": lambda t: _round_trips(t),
}


def _deterministic_inits(t):
    init = t.nn.init
    w = t.empty(3, 4)
    conv = t.empty(4, 2, 3, 3)
    return (init.constant_(w, 0.3).clone(), init.ones_(t.empty(2)).clone(), init.zeros_(t.empty(2)).clone(),
            init.eye_(t.empty(3, 4)).clone(), init.dirac_(conv, groups=2).clone(), init._calculate_fan_in_and_fan_out(conv))


def _init_bounds(t):
    """Each random initializer's draws stay within (or are scaled to) PyTorch's bounds."""
    import math

    init = t.nn.init
    w = t.empty(64, 32)
    checks = {}
    checks["xavier_uniform"] = float(init.xavier_uniform_(w, gain=2.0).abs().max()) <= 2.0 * math.sqrt(6 / 96) + 1e-6
    checks["kaiming_uniform"] = float(init.kaiming_uniform_(w, a=math.sqrt(5)).abs().max()) <= 1 / math.sqrt(32) + 1e-6
    checks["kaiming_fan_out"] = float(init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu").abs().max()) <= \
        math.sqrt(2) * math.sqrt(3 / 64) + 1e-6
    checks["uniform"] = bool(((init.uniform_(w, a=-0.1, b=0.2) >= -0.1) & (w <= 0.2)).all())
    checks["trunc_normal"] = bool(((init.trunc_normal_(w, mean=0.0, std=1.0, a=-0.5, b=0.5) >= -0.5) & (w <= 0.5)).all())
    checks["normal_std"] = abs(float(init.normal_(t.empty(20000), mean=1.0, std=0.1).std()) - 0.1) < 0.01
    checks["kaiming_normal_std"] = abs(float(init.kaiming_normal_(t.empty(200, 100), mode="fan_in").std())
                                       - math.sqrt(2 / 100)) < 0.01
    checks["xavier_normal_std"] = abs(float(init.xavier_normal_(t.empty(200, 100)).std()) - math.sqrt(2 / 300)) < 0.01
    checks["sparse_zeros"] = int((init.sparse_(t.empty(10, 6), sparsity=0.3, std=0.01) == 0).sum(0).min())
    return checks


def _orthogonal(t):
    w = t.nn.init.orthogonal_(t.empty(3, 5), gain=2.0)
    return bool(t.allclose(w @ w.T, 4 * t.eye(3), atol=1e-5)), tuple(w.shape)


def _init_returns(t):
    w = t.empty(2, 3)
    return [f(w) is w for f in (t.nn.init.xavier_uniform_, t.nn.init.kaiming_normal_, t.nn.init.zeros_,
                                lambda x: t.nn.init.normal_(x, std=0.02), lambda x: t.nn.init.trunc_normal_(x, std=0.02))]


def _optimizer(t, momentum=False):
    p = t.nn.Parameter(t.zeros(2))
    if momentum:
        return t.optim.SGD([p], lr=0.1, momentum=0.9)
    return t.optim.SGD([p], lr=0.1)


def _lrs(t, make, steps=12):
    o = _optimizer(t)
    scheduler = make(o)
    rates = []
    for _ in range(steps):
        o.step()
        scheduler.step()
        rates.append(round(scheduler.get_last_lr()[0], 10))
    return rates


def _momenta(t):
    o = _optimizer(t, momentum=True)
    s = t.optim.lr_scheduler.OneCycleLR(o, max_lr=0.5, total_steps=8, base_momentum=0.8, max_momentum=0.95)
    momenta = []
    for _ in range(7):
        o.step()
        s.step()
        momenta.append(round(o.param_groups[0]["momentum"], 10))
    return momenta


def _warm_restarts_fractional(t):
    o = _optimizer(t)
    s = t.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=4, eta_min=0.0)
    rates = []
    for epoch in (0.5, 1.25, 3.9, 4.0, 6.5):
        s.step(epoch)
        rates.append(round(o.param_groups[0]["lr"], 10))
    return rates


def _plateau(t):
    o = _optimizer(t)
    s = t.optim.lr_scheduler.ReduceLROnPlateau(o, mode="max", factor=0.5, patience=1, threshold=0.01,
                                               threshold_mode="abs", cooldown=1, min_lr=0.01)
    rates = []
    for metric in (1.0, 1.0, 1.005, 0.9, 0.9, 0.9, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0):
        o.step()
        s.step(metric)
        rates.append(round(o.param_groups[0]["lr"], 10))
    return rates, s.get_last_lr(), s.num_bad_epochs, s.best


def _round_trips(t):
    """Step a scheduler 5 times, save its state_dict, load it into a fresh one on a fresh
    optimizer (whose state_dict is loaded too), and go on: the rates must continue. (The
    state_dict's private keys are tensorplug's own: PyTorch's cannot be loaded, being pickles.)"""
    lr_scheduler = t.optim.lr_scheduler
    makers = {
        "OneCycleLR": lambda o: lr_scheduler.OneCycleLR(o, max_lr=0.5, total_steps=12),
        "CosineAnnealingWarmRestarts": lambda o: lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
        "ReduceLROnPlateau": lambda o: lr_scheduler.ReduceLROnPlateau(o, patience=0, factor=0.5),
        "StepLR": lambda o: lr_scheduler.StepLR(o, step_size=2, gamma=0.5),
        "CyclicLR": lambda o: lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2),
        "CosineAnnealingLR": lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=6),
    }
    results = {}
    for name, make in makers.items():
        plateau = name == "ReduceLROnPlateau"
        o = _optimizer(t, momentum=True)
        s = make(o)

        def step(scheduler, k):
            scheduler.step(1.0) if plateau else scheduler.step()

        for k in range(5):
            o.step()
            step(s, k)
        state, opt_state = s.state_dict(), o.state_dict()
        o2 = _optimizer(t, momentum=True)
        o2.load_state_dict(opt_state)
        s2 = make(o2)
        s2.load_state_dict(state)
        rates = []
        for k in range(4):
            o2.step()
            step(s2, k)
            rates.append(round(o2.param_groups[0]["lr"], 10))
        results[name] = rates
    return results


for _name, _idiom in IDIOMS.items():
    globals()["probe_" + _name] = _idiom
