"""Per-sample gradients with `torch.func` and DP-SGD, written the way PyTorch's tutorial
"Per-sample-gradients" and the public DP-SGD recipes (Abadi et al.) write them.

A small CNN classifies synthetic 8x8 images. Each step takes the model's parameters and buffers
as dicts of detached tensors, writes the loss of one sample as a function of them through
`functional_call`, and maps `grad` of it over the batch with `vmap(in_dims=(None, None, 0, 0))`.
The first step checks the result against the tutorial's slow path (one `loss.backward()` per
sample). DP-SGD clips each sample's gradient to a maximum norm (the norms stacked from every
parameter's flattened per-sample gradients), adds Gaussian noise (drawn with NumPy) and takes an
SGD step on `p.grad`. `torch.vmap` over `jacrev` of the model's input gives per-sample input
gradients (saliency maps), and `grad_and_value` the mean loss with its gradient in one call.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.func import functional_call, grad, grad_and_value, jacrev, vmap


class SimpleCNN(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3, 1)
        self.conv2 = nn.Conv2d(6, 8, 3, 1)
        self.fc1 = nn.Linear(8 * 2 * 2, 16)
        self.fc2 = nn.Linear(16, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def loss_fn(predictions, targets):
    return F.nll_loss(predictions, targets)


def make_batch(rng, count, prototypes):
    labels = rng.integers(0, len(prototypes), count)
    images = prototypes[labels] + 0.8 * rng.standard_normal((count, 1, 8, 8))
    return torch.from_numpy(images.astype(np.float32)), torch.from_numpy(labels)


def init_from_numpy(model, seed):
    """Give every parameter a NumPy-drawn value within PyTorch's default bound 1/sqrt(fan_in)."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            fan_in = p[0].numel() if p.dim() > 1 else p.numel()
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='Per-sample gradients and DP-SGD with torch.func')
    parser.add_argument('--batch-size', type=int, default=16)
    parser.add_argument('--steps', type=int, default=8)
    parser.add_argument('--lr', type=float, default=0.2)
    parser.add_argument('--max-grad-norm', type=float, default=1.0)
    parser.add_argument('--noise-multiplier', type=float, default=0.5)
    parser.add_argument('--seed', type=int, default=5)
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
    noise_rng = np.random.default_rng(args.seed + 1)
    prototypes = rng.standard_normal((4, 1, 8, 8))
    model = SimpleCNN()
    init_from_numpy(model, args.seed)
    model.to(device)

    def compute_loss(params, buffers, sample, target):
        batch = sample.unsqueeze(0)
        targets = target.unsqueeze(0)
        predictions = functional_call(model, (params, buffers), (batch,))
        return loss_fn(predictions, targets)

    ft_compute_sample_grad = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))

    losses, clipped_fraction = [], []
    for step in range(args.steps):
        data, targets = make_batch(rng, args.batch_size, prototypes)
        data, targets = data.to(device), targets.to(device)
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}
        per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)

        if step == 0:
            for i in range(3):
                model.zero_grad()
                loss_fn(model(data[i:i + 1]), targets[i:i + 1]).backward()
                for name, p in model.named_parameters():
                    difference = (per_sample_grads[name][i] - p.grad).abs().max().item()
                    assert difference <= 1e-5, (name, i, difference)
            model.zero_grad()
            mean_grads, mean_loss = grad_and_value(lambda p: loss_fn(functional_call(model, p, (data,)), targets))(params)
            with torch.no_grad():
                assert abs(mean_loss.item() - loss_fn(model(data), targets).item()) <= 1e-6
            for name in params:
                difference = (per_sample_grads[name].mean(0) - mean_grads[name]).abs().max().item()
                assert difference <= 1e-5, (name, difference)

        norms = torch.stack([g.reshape(g.shape[0], -1).norm(2, dim=1) for g in per_sample_grads.values()], dim=1).norm(2, dim=1)
        clip_factor = (args.max_grad_norm / (norms + 1e-6)).clamp(max=1.0)
        clipped_fraction.append((norms > args.max_grad_norm).float().mean().item())
        with torch.no_grad():
            for name, p in model.named_parameters():
                g = per_sample_grads[name]
                clipped = (g * clip_factor.view(-1, *([1] * (g.dim() - 1)))).sum(0)
                noise = torch.from_numpy(noise_rng.standard_normal(tuple(p.shape)).astype(np.float32)).to(device)
                p.grad = (clipped + args.noise_multiplier * args.max_grad_norm * noise) / args.batch_size
                p.add_(p.grad, alpha=-args.lr)
            losses.append(loss_fn(model(data), targets).item())
        if not args.quiet:
            print(f'step {step}: loss {losses[-1]:.4f} clipped {clipped_fraction[-1]:.2f}')

    # Saliency: the gradient of each sample's true-class log-probability with respect to its input.
    params = {k: v.detach() for k, v in model.named_parameters()}

    def class_log_prob(sample, target):
        # Indexing by a mapped tensor would call .item(), which vmap refuses: gather instead.
        return functional_call(model, params, (sample.unsqueeze(0),))[0].gather(0, target.unsqueeze(0)).squeeze(0)

    data, targets = make_batch(rng, 8, prototypes)
    data, targets = data.to(device), targets.to(device)
    input_grads = torch.vmap(jacrev(class_log_prob))(data, targets)
    saliency = input_grads.abs().flatten(1).sum(1).tolist()
    return {"losses": losses, "clipped": clipped_fraction, "saliency": saliency,
            "first_norms": norms[:4].tolist()}


if __name__ == '__main__':
    print(json.dumps(main()))
