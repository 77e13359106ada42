"""Sampling from a small GPT with a key-value cache and top-k / top-p (nucleus) filtering, written
the way nanoGPT, Llama's reference `generate` and Hugging Face's `top_k_top_p_filtering` write it.

A character-level GPT (`F.scaled_dot_product_attention(is_causal=True)`, learned positions) is
trained for a few steps on a synthetic corpus. Each attention layer owns Llama-style
preallocated cache buffers (`register_buffer(..., persistent=False)`, so they stay out of the
`state_dict`) written by slice assignment at `start_pos`; generation runs under
`@torch.inference_mode()`: one prefill over the prompt, then one token at a time reading the
cache. The cached logits must equal a full recomputation, and greedy decoding must give the same
tokens with and without the cache. Sampling filters the last logits by temperature, `torch.topk`
(`logits < v[:, [-1]]` set to `-float('Inf')`) and top-p (`torch.sort(descending=True)`,
`torch.cumsum` of the softmax, the mask shifted right with `[..., 1:] = [..., :-1].clone()`,
returned to vocabulary order with `scatter`, then `masked_fill`), and draws with
`torch.multinomial(probs, 1, generator=...)` from a seeded `torch.Generator`, or (compared runs,
`--numpy-sampling`) by inverse CDF with `torch.searchsorted` on NumPy uniforms, since the two
libraries' generators differ by design.
"""
import argparse
import json
import math

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, max_batch, block_size):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        head_size = n_embd // n_head
        self.register_buffer("cache_k", torch.zeros(max_batch, n_head, block_size, head_size), persistent=False)
        self.register_buffer("cache_v", torch.zeros(max_batch, n_head, block_size, head_size), persistent=False)

    def forward(self, x, start_pos=None):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if start_pos is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            self.cache_k[:B, :, start_pos:start_pos + T] = k
            self.cache_v[:B, :, start_pos:start_pos + T] = v
            keys = self.cache_k[:B, :, :start_pos + T]
            values = self.cache_v[:B, :, :start_pos + T]
            scores = torch.matmul(q, keys.transpose(2, 3)) / math.sqrt(q.size(-1))
            if T > 1:
                mask = torch.full((T, T), float("-inf"), device=x.device).triu(1)
                scores = scores + torch.hstack([torch.zeros((T, start_pos), device=x.device), mask])
            y = torch.matmul(F.softmax(scores.float(), dim=-1).type_as(q), values)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, n_embd, n_head, max_batch, block_size):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, max_batch, block_size)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(approximate="tanh"), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x, start_pos=None):
        x = x + self.attn(self.ln_1(x), start_pos)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size=24, n_layer=2, n_head=2, n_embd=16, max_batch=4):
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.h = nn.ModuleList([Block(n_embd, n_head, max_batch, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx, targets=None, start_pos=None):
        b, t = idx.size()
        offset = 0 if start_pos is None else start_pos
        pos = torch.arange(offset, offset + t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x, start_pos)
        logits = self.lm_head(self.ln_f(x))
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def top_k_top_p_filtering(logits, top_k=0, top_p=1.0, filter_value=-float("Inf")):
    if top_k > 0:
        v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
        logits[logits < v[:, [-1]]] = filter_value
    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(logits, descending=True)
        cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
        # Remove tokens with cumulative probability above the threshold, keeping the first one above it
        sorted_indices_to_remove = cumulative_probs > top_p
        sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
        sorted_indices_to_remove[..., 0] = 0
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
        logits = logits.masked_fill(indices_to_remove, filter_value)
    return logits


def inverse_cdf_sample(probs, uniforms):
    cdf = torch.cumsum(probs, dim=-1)
    return torch.searchsorted(cdf, uniforms.unsqueeze(-1) * cdf[:, -1:]).clamp_(max=probs.size(-1) - 1)


@torch.inference_mode()
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=0, top_p=1.0, draw=None, use_cache=True):
    """`draw(probs)` picks the next tokens; None is greedy. Returns the tokens and their log-probs."""
    idx = prompt
    logprobs = []
    logits, _ = model(idx, start_pos=0) if use_cache else model(idx)
    for step in range(max_new_tokens):
        logits = logits[:, -1, :] / temperature
        filtered = top_k_top_p_filtering(logits.clone(), top_k=top_k, top_p=top_p)
        probs = F.softmax(filtered, dim=-1)
        idx_next = torch.argmax(probs, dim=-1, keepdim=True) if draw is None else draw(probs)
        logprobs.append(torch.log(probs.gather(1, idx_next)))
        idx = torch.cat((idx, idx_next), dim=1)
        if use_cache:
            logits, _ = model(idx_next, start_pos=idx.size(1) - 1)
        else:
            logits, _ = model(idx)
    return idx, torch.cat(logprobs, dim=1)


def synthetic_corpus(rng, length):
    words = ["abc", "bca", "cab", "dd", "ee", "fab"]
    return " ".join(words[i] for i in rng.integers(0, len(words), length // 3))[:length]


def init_from_numpy(model, seed):
    """nanoGPT's N(0, 0.02) for weights and embeddings, zero biases, LayerNorm ones and zeros."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "ln_" in name:
                continue
            if name.endswith("bias"):
                p.zero_()
            else:
                p.copy_(torch.from_numpy(rng.normal(0.0, 0.02, tuple(p.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='GPT sampling with a KV cache, top-k and top-p')
    parser.add_argument('--steps', type=int, default=8)
    parser.add_argument('--batch-size', type=int, default=8)
    parser.add_argument('--block-size', type=int, default=24)
    parser.add_argument('--lr', type=float, default=1e-2)
    parser.add_argument('--max-new-tokens', type=int, default=8)
    parser.add_argument('--temperature', type=float, default=0.8)
    parser.add_argument('--top-k', type=int, default=5)
    parser.add_argument('--top-p', type=float, default=0.9)
    parser.add_argument('--numpy-sampling', action='store_true',
                        help='draw by inverse CDF from NumPy uniforms instead of torch.multinomial')
    parser.add_argument('--seed', type=int, default=1337)
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
    text = synthetic_corpus(rng, 600)
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    offsets = rng.integers(0, len(data) - args.block_size - 1, (args.steps, args.batch_size))

    model = GPT(len(chars), block_size=args.block_size)
    init_from_numpy(model, args.seed)
    model.to(device)
    assert not any("cache" in key for key in model.state_dict())
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    losses = []
    model.train()
    for step_offsets in offsets:
        x = torch.stack([data[i:i + args.block_size] for i in step_offsets]).to(device)
        y = torch.stack([data[i + 1:i + 1 + args.block_size] for i in step_offsets]).to(device)
        _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())

    model.eval()
    prompt = torch.tensor([[stoi[c] for c in "abc "], [stoi[c] for c in "dd e"]], device=device)
    with torch.inference_mode():
        full, _ = model(prompt)
        cached, _ = model(prompt[:, :2], start_pos=0)
        cached_next, _ = model(prompt[:, 2:], start_pos=2)
    assert torch.allclose(torch.cat([cached, cached_next], dim=1), full, atol=1e-5)
    greedy, _ = generate(model, prompt, args.max_new_tokens)
    greedy_uncached, _ = generate(model, prompt, args.max_new_tokens, use_cache=False)
    assert torch.equal(greedy, greedy_uncached)

    if args.numpy_sampling:
        uniforms = rng.random((args.max_new_tokens, prompt.size(0))).astype(np.float32)
        draws = iter(torch.from_numpy(u).to(device) for u in uniforms)
        draw = lambda probs: inverse_cdf_sample(probs, next(draws))
    else:
        generator = torch.Generator(device=device).manual_seed(args.seed)
        draw = lambda probs: torch.multinomial(probs, num_samples=1, generator=generator)
    sampled, logprobs = generate(model, prompt, args.max_new_tokens, temperature=args.temperature,
                                 top_k=args.top_k, top_p=args.top_p, draw=draw)
    assert torch.isfinite(logprobs).all()
    decode = lambda row: "".join(chars[i] for i in row.tolist())
    samples = [decode(row) for row in sampled]
    if not args.quiet:
        print(f'last loss {losses[-1]:.4f}; greedy {[decode(r) for r in greedy]}; sampled {samples}')
    return {"losses": losses, "greedy": " | ".join(decode(r) for r in greedy),
            "sampled": " | ".join(samples) if args.numpy_sampling else "",
            "logprobs": logprobs.flatten().tolist() if args.numpy_sampling else []}


if __name__ == '__main__':
    print(json.dumps(main()))
