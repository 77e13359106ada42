"""A character-level MLP language model over names, as Karpathy's makemore lectures build it
after Bengio et al. (2003).

The lecture's steps: a vocabulary from the names with '.' as the start and end token, (context,
next character) pairs over a sliding window of `block_size` characters, train/dev/test splits
of the shuffled names, raw parameter tensors drawn with torch.randn(..., generator=g) from a
seeded torch.Generator, embeddings looked up by indexing C[X] and flattened with view, a tanh
hidden layer, the loss by hand (counts / counts.sum(1, keepdims=True), prob[torch.arange(n), Y])
and then F.cross_entropy, minibatches from torch.randint(..., generator=g), a hand-written
SGD step (p.grad = None, loss.backward(), p.data += -lr * p.grad), @torch.no_grad() split
losses, and names sampled with torch.multinomial(probs, num_samples=1, generator=g).

The names are a short built-in list rather than names.txt. The two libraries' generators draw
different numbers, so compared runs draw the parameters (--numpy-init) and the minibatch rows
(--numpy-batches) with NumPy and sample nothing (--num-samples 0).
"""
import argparse
import json
import random

import numpy as np

import tensorplug as torch
import tensorplug.nn.functional as F

NAMES = """
emma olivia ava isabella sophia charlotte mia amelia harper evelyn abigail emily elizabeth mila
ella avery sofia camila aria scarlett victoria madison luna grace chloe penelope layla riley zoey
nora lily eleanor hannah lillian addison aubrey ellie stella natalie zoe leah hazel violet aurora
savannah audrey brooklyn bella claire skylar lucy paisley everly anna caroline nova genesis emilia
kennedy samantha maya willow kinsley naomi aaliyah elena sarah ariana allison gabriella alice
madelyn cora ruby eva serenity autumn adeline hailey gianna valentina isla eliana quinn nevaeh
ivy sadie piper lydia alexa josephine emery julia delilah arianna vivian kaylee sophie brielle
madeline liam noah william james oliver benjamin elijah lucas mason logan alexander ethan jacob
michael daniel henry jackson sebastian aiden matthew samuel david joseph carter owen wyatt john
jack luke jayden dylan grayson levi isaac gabriel julian mateo anthony jaxon lincoln joshua
christopher andrew theodore caleb ryan asher nathan thomas leo isaiah charles josiah hudson
christian hunter connor eli ezra aaron landon adrian jonathan nolan jeremiah easton elias colton
cameron carson robert angel maverick nicholas dominic jaxson greyson adam ian austin santiago
jordan cooper brayden roman evan ezekiel xavier jose jace jameson leonardo bryson axel everett
""".split()


def build_dataset(words, stoi, block_size, device):
    """Every (previous block_size characters, next character) pair of the words, '.'-padded."""
    X, Y = [], []
    for w in words:
        context = [0] * block_size
        for ch in w + '.':
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = context[1:] + [ix]  # crop and append
    X = torch.tensor(X, device=device)
    Y = torch.tensor(Y, device=device)
    return X, Y


def main(argv=None):
    parser = argparse.ArgumentParser(description='makemore MLP on a built-in list of names')
    parser.add_argument('--block-size', type=int, default=3, help='context length')
    parser.add_argument('--n-embd', type=int, default=10, help='embedding dimensions per character')
    parser.add_argument('--n-hidden', type=int, default=64, help='neurons in the hidden layer')
    parser.add_argument('--max-steps', type=int, default=30)
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--lr', type=float, default=0.1)
    parser.add_argument('--seed', type=int, default=2147483647)
    parser.add_argument('--num-samples', type=int, default=5)
    parser.add_argument('--numpy-init', action='store_true', help='draw the parameters with NumPy')
    parser.add_argument('--numpy-batches', action='store_true', help='draw the minibatch rows with NumPy')
    parser.add_argument('--device', default=None, help='default: the accelerator if any, else cpu')
    parser.add_argument('--quiet', action='store_true')
    args = parser.parse_args(argv)

    if args.device is not None:
        device = torch.device(args.device)
    elif torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    # The vocabulary: the letters the names use, and '.' (index 0) marking a name's start and end.
    words = list(NAMES)
    chars = sorted(list(set(''.join(words))))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi['.'] = 0
    itos = {i: s for s, i in stoi.items()}
    vocab_size = len(itos)
    block_size = args.block_size

    random.Random(42).shuffle(words)
    n1 = int(0.8 * len(words))
    n2 = int(0.9 * len(words))
    Xtr, Ytr = build_dataset(words[:n1], stoi, block_size, device)    # 80%
    Xdev, Ydev = build_dataset(words[n1:n2], stoi, block_size, device)  # 10%
    Xte, Yte = build_dataset(words[n2:], stoi, block_size, device)     # 10%

    n_embd, n_hidden = args.n_embd, args.n_hidden
    fan_in = n_embd * block_size
    g = torch.Generator().manual_seed(args.seed)
    if args.numpy_init:
        rng = np.random.default_rng(args.seed % 2 ** 32)
        normal = lambda *shape: torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    else:
        normal = lambda *shape: torch.randn(shape, generator=g)
    C = normal(vocab_size, n_embd).to(device)
    W1 = (normal(fan_in, n_hidden) * (5 / 3) / fan_in ** 0.5).to(device)  # kaiming init for tanh
    b1 = (normal(n_hidden) * 0.01).to(device)
    W2 = (normal(n_hidden, vocab_size) * 0.01).to(device)  # small logits at first: a calm first loss
    b2 = (normal(vocab_size) * 0).to(device)
    parameters = [C, W1, b1, W2, b2]
    n_params = sum(p.nelement() for p in parameters)
    for p in parameters:
        p.requires_grad = True

    # The lecture first writes the loss out by hand (exponentiate, normalise the rows, pick each
    # target's probability) and then switches to F.cross_entropy, which gives the same number.
    with torch.no_grad():
        emb = C[Xtr]
        h = torch.tanh(emb.view(-1, block_size * n_embd) @ W1 + b1)
        logits = h @ W2 + b2
        counts = logits.exp()
        prob = counts / counts.sum(1, keepdims=True)
        manual_loss = -prob[torch.arange(Xtr.shape[0], device=device), Ytr].log().mean()
        initial_losses = [manual_loss.item(), F.cross_entropy(logits, Ytr).item()]

    batch_rng = np.random.default_rng(args.seed % 2 ** 32 + 1)
    lossi, log10_losses = [], []
    for i in range(args.max_steps):
        # minibatch construct
        if args.numpy_batches:
            ix = torch.from_numpy(batch_rng.integers(0, Xtr.shape[0], (args.batch_size,)))
        else:
            ix = torch.randint(0, Xtr.shape[0], (args.batch_size,), generator=g)
        Xb, Yb = Xtr[ix], Ytr[ix]

        # forward pass
        emb = C[Xb]  # (batch, block_size, n_embd)
        h = torch.tanh(emb.view(-1, block_size * n_embd) @ W1 + b1)
        logits = h @ W2 + b2
        loss = F.cross_entropy(logits, Yb)

        # backward pass
        for p in parameters:
            p.grad = None
        loss.backward()

        # update: the rate drops for the last quarter of the steps
        lr = args.lr if i < 3 * args.max_steps // 4 else args.lr / 10
        for p in parameters:
            p.data += -lr * p.grad

        lossi.append(loss.item())
        log10_losses.append(loss.log10().item())

    @torch.no_grad()  # this decorator disables gradient tracking
    def split_loss(split):
        x, y = {
            'train': (Xtr, Ytr),
            'val': (Xdev, Ydev),
            'test': (Xte, Yte),
        }[split]
        emb = C[x]
        h = torch.tanh(emb.view(-1, block_size * n_embd) @ W1 + b1)
        logits = h @ W2 + b2
        return F.cross_entropy(logits, y).item()

    split_losses = {split: split_loss(split) for split in ('train', 'val', 'test')}
    if not args.quiet:
        print(f"{n_params} parameters; " + ", ".join(f"{k} {v:.4f}" for k, v in split_losses.items()))

    # sample from the model
    g = torch.Generator(device=device).manual_seed(args.seed + 10)
    samples = []
    for _ in range(args.num_samples):
        out = []
        context = [0] * block_size  # initialize with all ...
        while True:
            emb = C[torch.tensor([context], device=device)]  # (1, block_size, n_embd)
            h = torch.tanh(emb.view(1, -1) @ W1 + b1)
            logits = h @ W2 + b2
            probs = F.softmax(logits, dim=1)
            ix = torch.multinomial(probs, num_samples=1, generator=g).item()
            context = context[1:] + [ix]
            if ix == 0:
                break
            out.append(ix)
        samples.append(''.join(itos[i] for i in out))
    if samples and not args.quiet:
        print(samples)

    results = {"losses": lossi, "log10_losses": log10_losses, "initial_losses": initial_losses,
               "split_losses": [split_losses['train'], split_losses['val'], split_losses['test']],
               "n_params": [n_params]}
    if samples:
        results["samples"] = samples
    return results


if __name__ == '__main__':
    print(json.dumps(main()))
