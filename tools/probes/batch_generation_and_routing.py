"""Probe batch (g): idioms around program batch (g): Llama-style generation (rotary embeddings
through complex numbers, RMSNorm, grouped-query attention), samplers, sparse routing, edge
softmaxes, CRFs, masked and causal convolutions, neural-ODE steps."""
import numpy as np

from probe_common import data


# --- Llama-style attention ----------------------------------------------------------------------

def probe_rope_polar_view_as_complex(torch):
    dim, end = 8, 6
    freqs = 1.0 / (10000.0 ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
    xq = data(torch, 2, end, 3, dim)
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    shape = [d if i == 1 or i == xq_.ndim - 1 else 1 for i, d in enumerate(xq_.shape)]
    out = torch.view_as_real(xq_ * freqs_cis.view(*shape)).flatten(3)
    return out.type_as(xq)


def probe_rope_rotate_half_cos_sin(torch):
    x = data(torch, 2, 3, 5, 8)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, 8, 2, dtype=torch.int64).float() / 8))
    freqs = torch.einsum("i,j->ij", torch.arange(5).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[None, None], emb.sin()[None, None]
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def probe_rms_norm_rsqrt(torch):
    x = data(torch, 2, 4, 8)
    weight = torch.ones(8)
    out = x.float() * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return out.type_as(x) * weight, torch.nn.functional.rms_norm(x, (8,), weight, eps=1e-6)


def probe_gqa_repeat_kv(torch):
    x = data(torch, 2, 5, 2, 4)  # (bs, slen, n_kv_heads, head_dim)
    n_rep = 3
    bs, slen, n_kv_heads, head_dim = x.shape
    repeated = x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim).reshape(bs, slen, n_kv_heads * n_rep, head_dim)
    return repeated, torch.repeat_interleave(x, n_rep, dim=2)


def probe_sdpa_enable_gqa(torch):
    import torch.nn.functional as F
    q = data(torch, 1, 6, 4, 8, seed=1)
    k = data(torch, 1, 2, 4, 8, seed=2)
    v = data(torch, 1, 2, 4, 8, seed=3)
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


def probe_sdpa_bool_mask_broadcast(torch):
    import torch.nn.functional as F
    q, k, v = (data(torch, 2, 2, 4, 8, seed=s) for s in (1, 2, 3))
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask[None, None])


def probe_kv_cache_cat_and_narrow(torch):
    past = data(torch, 1, 2, 3, 4)
    new = data(torch, 1, 2, 1, 4, seed=1)
    cache = torch.cat([past, new], dim=-2)
    return cache.narrow(2, 1, 3), cache[:, :, -2:].contiguous().stride()


# --- sampling -------------------------------------------------------------------------------------

def probe_min_p_filter(torch):
    logits = data(torch, 2, 10)
    probs = torch.softmax(logits, dim=-1)
    top_probs, _ = probs.max(dim=-1, keepdim=True)
    return logits.masked_fill(probs < 0.1 * top_probs, float("-inf"))


def probe_repetition_penalty_gather_scatter(torch):
    logits = data(torch, 2, 10)
    input_ids = torch.tensor([[1, 3, 3], [0, 9, 2]])
    score = torch.gather(logits, 1, input_ids)
    score = torch.where(score < 0, score * 1.3, score / 1.3)
    return logits.scatter(1, input_ids, score)


def probe_searchsorted_right_and_sorter(torch):
    seq = torch.tensor([1.0, 3.0, 3.0, 7.0])
    values = torch.tensor([[3.0, 0.5], [7.0, 8.0]])
    unsorted = torch.tensor([7.0, 1.0, 3.0, 3.0])
    return (torch.searchsorted(seq, values, right=True), torch.searchsorted(seq, values, side="left"),
            torch.searchsorted(unsorted, values, sorter=torch.argsort(unsorted)),
            torch.bucketize(values, seq, right=True))


def probe_topk_smallest_unsorted_values(torch):
    x = data(torch, 3, 7)
    values, indices = torch.topk(x, 3, dim=1, largest=False)
    return values, indices, torch.sort(torch.topk(x, 3, sorted=False).values, dim=1).values


def probe_sort_stable_descending(torch):
    x = torch.tensor([3, 1, 3, 2, 1, 3])
    return torch.sort(x, descending=True, stable=True)


def probe_multinomial_shapes(torch):
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(data(torch, 3, 6), dim=-1)
    a = torch.multinomial(probs, 4, replacement=True, generator=g)
    b = torch.multinomial(probs[0], 2, generator=g)
    return list(a.shape), list(b.shape), a.dtype == torch.long, len(set(b.tolist()))


# --- routing and graphs -------------------------------------------------------------------------

def probe_scatter_reduce_mean_and_amin(torch):
    src = data(torch, 6, 3)
    index = torch.tensor([0, 2, 2, 0, 1, 2]).unsqueeze(-1).expand(-1, 3)
    zeros = torch.zeros(4, 3)
    return (zeros.scatter_reduce(0, index, src, reduce="mean", include_self=False),
            zeros.scatter_reduce(0, index, src, reduce="amin"))


def probe_index_add_alpha(torch):
    x = torch.zeros(4, 2)
    return x.index_add_(0, torch.tensor([1, 1, 3]), data(torch, 3, 2), alpha=0.5)


def probe_scatter_multiply_value(torch):
    x = torch.ones(2, 4)
    return x.scatter_(1, torch.tensor([[0, 2], [3, 3]]), 2.0, reduce="multiply")


def probe_expert_capacity_cumsum(torch):
    # Switch Transformer's position of each token in its expert's buffer.
    expert_index = torch.tensor([0, 1, 0, 2, 0, 1])
    mask = torch.nn.functional.one_hot(expert_index, 3)
    position = torch.cumsum(mask, dim=0) * mask - 1
    keep = (position < 2) & (mask > 0)
    return position, keep.any(dim=1), mask.sum(dim=0)


def probe_unique_consecutive_and_counts(torch):
    x = torch.tensor([2, 2, 5, 5, 5, 1, 2, 2])
    out, inverse, counts = torch.unique_consecutive(x, return_inverse=True, return_counts=True)
    values, counts_sorted = torch.unique(x, return_counts=True)
    return out, inverse, counts, values, counts_sorted


def probe_segment_softmax_via_sparse(torch):
    index = torch.tensor([[0, 0, 1, 1, 1], [1, 2, 0, 2, 3]])
    values = data(torch, 5)
    sparse = torch.sparse_coo_tensor(index, values, (2, 4), check_invariants=True)
    return torch.sparse.softmax(sparse, dim=1).to_dense()


# --- sequence models ----------------------------------------------------------------------------

def probe_logsumexp_tuple_dim(torch):
    x = data(torch, 2, 3, 4)
    return torch.logsumexp(x, dim=(1, 2)), torch.logsumexp(x, dim=-1, keepdim=True)


def probe_viterbi_max_with_indices_gather(torch):
    scores = data(torch, 2, 4, 4)
    best, idx = scores.max(dim=2)
    path = idx.gather(1, torch.tensor([[1], [3]]))
    return best, idx, path, torch.flip(idx, dims=[1])


def probe_pack_padded_lstm_bidirectional(torch):
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    lstm = torch.nn.LSTM(3, 2, batch_first=True, bidirectional=True)
    rng = np.random.default_rng(5)
    with torch.no_grad():
        for p in lstm.parameters():
            p.copy_(torch.tensor(rng.uniform(-0.5, 0.5, tuple(p.shape)).astype("float32")))
    x = data(torch, 3, 4, 3)
    packed = pack_padded_sequence(x, torch.tensor([4, 2, 3]), batch_first=True, enforce_sorted=False)
    out, (h, c) = lstm(packed)
    padded, lengths = pad_packed_sequence(out, batch_first=True)
    return padded, lengths, h


# --- convolutions -------------------------------------------------------------------------------

def probe_masked_conv_register_buffer_and_mul(torch):
    conv = torch.nn.Conv2d(4, 4, 3, padding=1, bias=False)
    with torch.no_grad():
        conv.weight.copy_(data(torch, 4, 4, 3, 3, seed=4))
    mask = torch.ones_like(conv.weight)
    mask[:, :, 1, 1:] = 0
    mask[:, :, 2:] = 0
    x = data(torch, 1, 4, 6, 6, requires_grad=True)
    torch.nn.functional.conv2d(x, conv.weight * mask, padding=1)[0, :, 3, 3].sum().backward()
    return x.grad != 0


def probe_causal_conv1d_pad_left_dilated(torch):
    import torch.nn.functional as F
    x = data(torch, 2, 3, 10)
    w = data(torch, 4, 3, 2, seed=1)
    return F.conv1d(F.pad(x, (2, 0)), w, dilation=2)


def probe_weight_norm_dim_none_parametrization(torch):
    from torch.nn.utils.parametrizations import weight_norm
    lin = torch.nn.Linear(3, 2)
    with torch.no_grad():
        lin.weight.copy_(data(torch, 2, 3))
    lin = weight_norm(lin, dim=None)
    return lin.parametrizations.weight.original0, lin.weight


# --- neural ODEs --------------------------------------------------------------------------------

def probe_rk4_step_autograd_grad(torch):
    def f(t, y, a):
        return -a * y + torch.sin(t)

    a = torch.tensor(0.7, requires_grad=True)
    y = torch.tensor([1.0, 2.0])
    t, h = torch.tensor(0.0), 0.1
    for _ in range(3):
        k1 = f(t, y, a)
        k2 = f(t + h / 2, y + h * k1 / 2, a)
        k3 = f(t + h / 2, y + h * k2 / 2, a)
        k4 = f(t + h, y + h * k3, a)
        y = y + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6
        t = t + h
    (grad,) = torch.autograd.grad(y.sum(), a)
    return y, grad


def probe_vjp_adjoint_style(torch):
    func = torch.nn.Linear(2, 2)
    with torch.no_grad():
        func.weight.copy_(torch.tensor([[0.1, -0.2], [0.3, 0.4]]))
        func.bias.copy_(torch.tensor([0.05, -0.05]))
    y = torch.tensor([[1.0, -1.0]], requires_grad=True)
    out = torch.tanh(func(y))
    adj = torch.tensor([[0.5, 2.0]])
    grads = torch.autograd.grad(out, (y,) + tuple(func.parameters()), adj, allow_unused=True, retain_graph=True)
    return grads
