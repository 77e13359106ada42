"""A RealNVP normalizing flow on 2-D data, written the way the public RealNVP/normalizing-flow
tutorials write one.

Two interleaved half-moons (NumPy-drawn) are the data. The flow stacks affine coupling layers
with alternating binary masks registered as buffers: the masked half of x conditions an MLP whose
outputs are a log-scale (through `tanh`) and a shift for the other half, so
`y = x_masked + (1 - mask) * (x * exp(s) + t)` and the log-determinant is `((1 - mask) * s).sum(dim=1)`.
The base distribution is `torch.distributions.MultivariateNormal(zeros, eye)`; the negative
log-likelihood is `-(base.log_prob(z) + log_det).mean()`, trained with Adam and gradient clipping
(`clip_grad_norm_`, its returned norm reported). The inverse pass maps base samples
(`Normal(0, 1).sample` in the default run, NumPy draws with `--numpy-samples`) back to data space,
and the test log-likelihood is evaluated under `torch.no_grad()` with an independent `Normal`
base (`log_prob(z).sum(dim=1)`) to check that both bases agree.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
from tensorplug.distributions import MultivariateNormal, Normal


class CouplingLayer(nn.Module):
    def __init__(self, mask, hidden=32):
        super().__init__()
        self.register_buffer('mask', mask)
        dim = mask.numel()
        self.net = nn.Sequential(
            nn.Linear(dim, hidden), nn.LeakyReLU(0.2),
            nn.Linear(hidden, hidden), nn.LeakyReLU(0.2),
            nn.Linear(hidden, 2 * dim),
        )
        self.scale = nn.Parameter(torch.ones(1, dim))

    def _scale_shift(self, x_masked):
        s, t = self.net(x_masked).chunk(2, dim=1)
        s = self.scale * torch.tanh(s)
        return s * (1 - self.mask), t * (1 - self.mask)

    def forward(self, x):
        """Data to latent; returns y and log|det dy/dx| per sample."""
        x_masked = x * self.mask
        s, t = self._scale_shift(x_masked)
        y = x_masked + (1 - self.mask) * (x * torch.exp(s) + t)
        return y, s.sum(dim=1)

    def inverse(self, y):
        y_masked = y * self.mask
        s, t = self._scale_shift(y_masked)
        return y_masked + (1 - self.mask) * ((y - t) * torch.exp(-s))


class RealNVP(nn.Module):
    def __init__(self, num_layers=4, hidden=32):
        super().__init__()
        masks = [torch.tensor([1.0, 0.0]) if i % 2 == 0 else torch.tensor([0.0, 1.0]) for i in range(num_layers)]
        self.layers = nn.ModuleList([CouplingLayer(mask, hidden) for mask in masks])
        self.register_buffer('base_loc', torch.zeros(2))
        self.register_buffer('base_cov', torch.eye(2))

    @property
    def base(self):
        return MultivariateNormal(self.base_loc, self.base_cov)

    def forward(self, x):
        log_det = torch.zeros(x.shape[0], device=x.device)
        for layer in self.layers:
            x, ld = layer(x)
            log_det = log_det + ld
        return x, log_det

    def log_prob(self, x):
        z, log_det = self(x)
        return self.base.log_prob(z) + log_det

    def inverse(self, z):
        for layer in reversed(self.layers):
            z = layer.inverse(z)
        return z


def two_moons(rng, count, noise=0.08):
    n_upper = count // 2
    angles_upper = rng.uniform(0, np.pi, n_upper)
    angles_lower = rng.uniform(0, np.pi, count - n_upper)
    upper = np.stack([np.cos(angles_upper), np.sin(angles_upper)], axis=1)
    lower = np.stack([1 - np.cos(angles_lower), 0.5 - np.sin(angles_lower)], axis=1)
    points = np.concatenate([upper, lower]) + noise * rng.standard_normal((count, 2))
    points = (points - np.array([0.5, 0.25])) / np.array([0.9, 0.5])
    return torch.from_numpy(points[rng.permutation(count)].astype(np.float32))


def init_from_numpy(model, seed):
    """Give every randomly initialised parameter a NumPy-drawn value within PyTorch's default
    bound 1/sqrt(fan_in); the output layers start small so that every coupling starts near the
    identity, and the scales stay at one."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith('scale'):
                continue
            fan_in = p.shape[1] if p.dim() > 1 else p.numel()
            bound = 1.0 / np.sqrt(fan_in)
            if name.endswith('net.4.weight') or name.endswith('net.4.bias'):
                bound *= 0.1
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='RealNVP on two moons')
    parser.add_argument('--batch-size', type=int, default=128)
    parser.add_argument('--steps', type=int, default=15)
    parser.add_argument('--lr', type=float, default=5e-3)
    parser.add_argument('--clip', type=float, default=1.0)
    parser.add_argument('--num-samples', type=int, default=64)
    parser.add_argument('--numpy-samples', action='store_true', help='draw base samples with NumPy')
    parser.add_argument('--seed', type=int, default=6)
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
    test_data = two_moons(rng, 256).to(device)
    flow = RealNVP()
    init_from_numpy(flow, args.seed)
    flow.to(device)
    optimizer = torch.optim.Adam(flow.parameters(), lr=args.lr)

    losses, grad_norms, test_nll = [], [], []
    for step in range(args.steps):
        x = two_moons(rng, args.batch_size).to(device)
        loss = -flow.log_prob(x).mean()
        optimizer.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(flow.parameters(), max_norm=args.clip)
        optimizer.step()
        losses.append(loss.item())
        grad_norms.append(float(grad_norm))
        if step % 5 == 4:
            with torch.no_grad():
                z, log_det = flow(test_data)
                standard = Normal(torch.zeros(2, device=device), torch.ones(2, device=device))
                nll_normal = -(standard.log_prob(z).sum(dim=1) + log_det).mean().item()
                nll_mvn = -flow.log_prob(test_data).mean().item()
            test_nll.append(nll_mvn)
            if not args.quiet:
                print(f'step {step}: loss {loss.item():.4f} test NLL {nll_mvn:.4f} (Normal base {nll_normal:.4f})')
            assert abs(nll_normal - nll_mvn) < 1e-4 * max(1.0, abs(nll_mvn)), (nll_normal, nll_mvn)

    with torch.no_grad():
        if args.numpy_samples:
            z = torch.from_numpy(rng.standard_normal((args.num_samples, 2)).astype(np.float32)).to(device)
        else:
            z = Normal(torch.zeros(2, device=device), torch.ones(2, device=device)).sample((args.num_samples,))
        samples = flow.inverse(z)
        z_back, _ = flow(samples)
        roundtrip = (z_back - z).abs().max().item()
    if not args.quiet:
        print(f'samples: mean {samples.mean(0).tolist()} inverse round trip error {roundtrip:.2e}')
    assert roundtrip < 1e-4, roundtrip
    return {"losses": losses, "grad_norm": grad_norms, "test_nll": test_nll,
            "sample_mean": samples.mean(0).tolist(), "sample_std": samples.std(0).tolist()}


if __name__ == '__main__':
    print(json.dumps(main()))
