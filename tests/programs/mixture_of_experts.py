"""A sparse mixture-of-experts layer, written the way Mixtral's and the Switch Transformer's
PyTorch implementations (and Shazeer et al.'s noisy top-k gating) write it.

Tokens of a synthetic regression task (each of four hidden "regimes" applies its own map) go
through a router (`nn.Linear`), whose logits get NumPy-drawn noise scaled by a learned
`F.softplus` width (noisy top-k gating), then `torch.topk(k=2)`; the chosen logits are
renormalised with `softmax` over the two, and the dense gate matrix is rebuilt with
`torch.zeros_like(logits).scatter(1, indices, weights)`. Each expert (a small MLP in an
`nn.ModuleList`) runs only on its tokens: Mixtral's loop finds them with
`torch.where(selected_experts == i)` and accumulates with `index_add_`, and a second formulation
sorts the token-expert pairs (`argsort`, `bincount` for the group sizes, `split` of the sorted
tokens) as grouped-GEMM code does; the two must agree. The auxiliary losses are the Switch
Transformer's load-balancing loss (fraction of tokens per expert from `F.one_hot(...).sum`,
times the mean router probability, times the number of experts) and ST-MoE's router z-loss
(`torch.logsumexp(logits, dim=-1)` squared). AdamW trains; the expert loads are reported with
`torch.bincount(minlength=)`.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        # SwiGLU, as Mixtral's experts
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SparseMoE(nn.Module):
    def __init__(self, dim, hidden, num_experts, top_k):
        super().__init__()
        self.num_experts = num_experts
        self.top_k = top_k
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.noise = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(dim, hidden) for _ in range(num_experts)])

    def route(self, x, noise):
        logits = self.gate(x)
        if noise is not None:
            logits = logits + noise * F.softplus(self.noise(x))
        weights, selected_experts = torch.topk(logits, self.top_k, dim=-1)
        weights = F.softmax(weights, dim=-1, dtype=torch.float).to(x.dtype)
        gates = torch.zeros_like(logits).scatter(1, selected_experts, weights)
        return logits, weights, selected_experts, gates

    def forward(self, x, noise=None):
        logits, weights, selected_experts, gates = self.route(x, noise)
        results = torch.zeros_like(x)
        for i, expert in enumerate(self.experts):
            batch_idx, nth_expert = torch.where(selected_experts == i)
            if batch_idx.numel() == 0:
                continue
            out = expert(x[batch_idx]) * weights[batch_idx, nth_expert, None]
            results.index_add_(0, batch_idx, out)
        return results, logits, selected_experts, gates

    def forward_grouped(self, x, noise=None):
        """The same layer computed by sorting token-expert pairs by expert (grouped GEMM style)."""
        logits, weights, selected_experts, gates = self.route(x, noise)
        flat_experts = selected_experts.reshape(-1)
        order = torch.argsort(flat_experts, stable=True)
        token_of_pair = torch.arange(x.shape[0], device=x.device).repeat_interleave(self.top_k)[order]
        counts = torch.bincount(flat_experts, minlength=self.num_experts).tolist()
        outputs = [expert(chunk) for expert, chunk in zip(self.experts, x[token_of_pair].split(counts))]
        pair_out = torch.cat(outputs) * weights.reshape(-1)[order].unsqueeze(-1)
        results = x.new_zeros(x.shape).index_add(0, token_of_pair, pair_out)
        return results, logits, selected_experts, gates


def load_balancing_loss(logits, selected_experts, num_experts):
    """Switch Transformer: num_experts * sum_i (fraction of routings to i) * (mean probability of i)."""
    probs = logits.softmax(dim=-1)
    expert_mask = F.one_hot(selected_experts, num_experts).sum(dim=1).float()
    tokens_per_expert = expert_mask.mean(dim=0) / selected_experts.shape[1]
    router_prob_per_expert = probs.mean(dim=0)
    return num_experts * torch.sum(tokens_per_expert * router_prob_per_expert)


def router_z_loss(logits):
    return torch.logsumexp(logits, dim=-1).pow(2).mean()


class Model(nn.Module):
    def __init__(self, dim=8, hidden=16, num_experts=4, top_k=2):
        super().__init__()
        self.inp = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.moe = SparseMoE(dim, hidden, num_experts, top_k)
        self.out = nn.Linear(dim, 1)

    def forward(self, x, noise=None, grouped=False):
        h = self.inp(x)
        moe = self.moe.forward_grouped if grouped else self.moe
        y, logits, selected, gates = moe(self.norm(h), noise)
        return self.out(h + y).squeeze(-1), logits, selected, gates


def synthetic_tokens(rng, count, centers, maps):
    regime = rng.integers(0, len(centers), count)
    x = centers[regime] + 0.5 * rng.standard_normal((count, centers.shape[1]))
    y = np.einsum('nd,nd->n', x, maps[regime])
    return x.astype(np.float32), y.astype(np.float32)


def init_from_numpy(model, seed):
    """Every randomly initialised parameter redrawn within PyTorch's default bound 1/sqrt(fan_in)."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith('norm.'):
                continue
            fan_in = p.shape[1] if p.dim() > 1 else p.numel()
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='sparse mixture of experts with top-k routing')
    parser.add_argument('--steps', type=int, default=8)
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--lr', type=float, default=1e-2)
    parser.add_argument('--aux-weight', type=float, default=1e-2)
    parser.add_argument('--z-weight', type=float, default=1e-3)
    parser.add_argument('--seed', type=int, default=3)
    parser.add_argument('--device', default=None, help='default: the accelerator if any, else cpu')
    parser.add_argument('--quiet', action='store_true')
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    if args.device is not None:
        device = torch.device(args.device)
    elif torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    rng = np.random.default_rng(args.seed)
    dim, num_experts = 8, 4
    centers = 2.0 * rng.standard_normal((4, dim))
    maps = rng.standard_normal((4, dim)) / np.sqrt(dim)
    batches = [synthetic_tokens(rng, args.batch_size, centers, maps) for _ in range(args.steps)]
    noises = [rng.standard_normal((args.batch_size, num_experts)).astype(np.float32) for _ in range(args.steps)]
    test_x, test_y = synthetic_tokens(rng, 128, centers, maps)

    model = Model(dim=dim, num_experts=num_experts)
    init_from_numpy(model, args.seed)
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-2)

    losses, balance, zloss, loads = [], [], [], []
    for (x, y), noise in zip(batches, noises):
        x, y = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
        noise = torch.from_numpy(noise).to(device)
        model.train()
        optimizer.zero_grad()
        pred, logits, selected, gates = model(x, noise)
        mse = F.mse_loss(pred, y)
        aux = load_balancing_loss(logits, selected, num_experts)
        z = router_z_loss(logits)
        loss = mse + args.aux_weight * aux + args.z_weight * z
        loss.backward()
        optimizer.step()
        assert torch.allclose(gates.sum(dim=-1), torch.ones(x.shape[0], device=device))
        assert int((gates > 0).sum()) == 2 * x.shape[0]
        losses.append(mse.item())
        balance.append(aux.item())
        zloss.append(z.item())
        loads.append(torch.bincount(selected.flatten(), minlength=num_experts).tolist())

    model.eval()
    with torch.no_grad():
        tx, ty = torch.from_numpy(test_x).to(device), torch.from_numpy(test_y).to(device)
        pred, _, selected, _ = model(tx)
        grouped, _, grouped_selected, _ = model(tx, grouped=True)
        assert torch.equal(selected, grouped_selected)
        assert torch.allclose(pred, grouped, rtol=1e-5, atol=1e-5), (pred - grouped).abs().max()
        test_loss = F.mse_loss(pred, ty).item()
        test_load = torch.bincount(selected.flatten(), minlength=num_experts).tolist()
    if not args.quiet:
        print(f'last train mse {losses[-1]:.4f} test mse {test_loss:.4f} test load {test_load}')
    return {"losses": losses, "balance": balance, "z_loss": zloss, "loads": loads, "test": [test_loss],
            "test_load": test_load}


if __name__ == '__main__':
    print(json.dumps(main()))
