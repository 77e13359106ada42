"""A DDPM (denoising diffusion probabilistic model) on 2-D toy data, written the way the public
DDPM implementations (the annotated diffusion tutorials, denoising-diffusion-pytorch) write one.

Points on a noisy ring of eight clusters stand in for images. A linear beta schedule from
`torch.linspace`, its `cumprod`, and the square roots the forward process needs are registered as
buffers; `extract` picks each sample's schedule values with `gather` and reshapes them to
broadcast. The noise-prediction network is an MLP conditioned on a sinusoidal time embedding
(`torch.exp(torch.arange(...) * -scale)`, `sin`/`cos` concatenated). Training draws timesteps and
noise, forms `q_sample`, regresses the noise with MSE under Adam, and keeps an exponential moving
average of the weights under `torch.no_grad()` (`lerp_` on parameters, `mul_().add_()` on
buffers). Sampling runs the reverse chain from pure noise with the EMA model.

The noise and timesteps come from the library's generator (`torch.randn_like`, `torch.randint`);
`--numpy-noise` draws them with NumPy instead, so that two libraries can be compared.
"""
import argparse
import copy
import json
import math

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F


class SinusoidalPositionEmbeddings(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, time):
        device = time.device
        half_dim = self.dim // 2
        embeddings = math.log(10000) / (half_dim - 1)
        embeddings = torch.exp(torch.arange(half_dim, device=device) * -embeddings)
        embeddings = time[:, None] * embeddings[None, :]
        embeddings = torch.cat((embeddings.sin(), embeddings.cos()), dim=-1)
        return embeddings


class NoisePredictor(nn.Module):
    """An MLP on (x_t, embedding of t) predicting the noise that made x_t."""

    def __init__(self, data_dim=2, hidden=64, time_dim=16):
        super().__init__()
        self.time_mlp = nn.Sequential(
            SinusoidalPositionEmbeddings(time_dim),
            nn.Linear(time_dim, hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
        )
        self.input = nn.Linear(data_dim, hidden)
        self.blocks = nn.ModuleList([nn.Sequential(nn.SiLU(), nn.Linear(hidden, hidden)) for _ in range(2)])
        self.out = nn.Sequential(nn.SiLU(), nn.Linear(hidden, data_dim))

    def forward(self, x, t):
        h = self.input(x) + self.time_mlp(t.float())
        for block in self.blocks:
            h = h + block(h)
        return self.out(h)


def extract(a, t, x_shape):
    """The schedule values a[t] for each sample, shaped to broadcast against x."""
    batch_size = t.shape[0]
    out = a.gather(-1, t)
    return out.reshape(batch_size, *((1,) * (len(x_shape) - 1)))


class GaussianDiffusion(nn.Module):
    def __init__(self, model, timesteps=40, beta_start=1e-4, beta_end=0.2):
        super().__init__()
        self.model = model
        self.num_timesteps = timesteps
        betas = torch.linspace(beta_start, beta_end, timesteps, dtype=torch.float64)
        alphas = 1.0 - betas
        alphas_cumprod = torch.cumprod(alphas, dim=0)
        alphas_cumprod_prev = F.pad(alphas_cumprod[:-1], (1, 0), value=1.0)
        posterior_variance = betas * (1.0 - alphas_cumprod_prev) / (1.0 - alphas_cumprod)

        def register(name, value):
            self.register_buffer(name, value.to(torch.float32))

        register('betas', betas)
        register('sqrt_alphas_cumprod', torch.sqrt(alphas_cumprod))
        register('sqrt_one_minus_alphas_cumprod', torch.sqrt(1.0 - alphas_cumprod))
        register('sqrt_recip_alphas', torch.sqrt(1.0 / alphas))
        register('posterior_variance', posterior_variance)

    def q_sample(self, x_start, t, noise):
        return (extract(self.sqrt_alphas_cumprod, t, x_start.shape) * x_start
                + extract(self.sqrt_one_minus_alphas_cumprod, t, x_start.shape) * noise)

    def p_losses(self, x_start, t, noise):
        x_noisy = self.q_sample(x_start, t, noise)
        predicted_noise = self.model(x_noisy, t)
        return F.mse_loss(noise, predicted_noise)

    @torch.no_grad()
    def p_sample(self, x, t, t_index, noise):
        betas_t = extract(self.betas, t, x.shape)
        sqrt_one_minus_alphas_cumprod_t = extract(self.sqrt_one_minus_alphas_cumprod, t, x.shape)
        sqrt_recip_alphas_t = extract(self.sqrt_recip_alphas, t, x.shape)
        model_mean = sqrt_recip_alphas_t * (x - betas_t * self.model(x, t) / sqrt_one_minus_alphas_cumprod_t)
        if t_index == 0:
            return model_mean
        posterior_variance_t = extract(self.posterior_variance, t, x.shape)
        return model_mean + torch.sqrt(posterior_variance_t) * noise

    @torch.no_grad()
    def sample(self, shape, draw_noise):
        device = self.betas.device
        x = draw_noise(torch.zeros(shape, device=device))
        for i in reversed(range(0, self.num_timesteps)):
            t = torch.full((shape[0],), i, device=device, dtype=torch.long)
            x = self.p_sample(x, t, i, draw_noise(x))
        return x


class EMA:
    """An exponential moving average of a model's parameters (and a copy of its buffers)."""

    def __init__(self, model, beta=0.9):
        self.beta = beta
        self.ema_model = copy.deepcopy(model)
        self.ema_model.requires_grad_(False)

    @torch.no_grad()
    def update(self, model):
        for ema_p, p in zip(self.ema_model.parameters(), model.parameters()):
            ema_p.lerp_(p, 1.0 - self.beta)
        for ema_b, b in zip(self.ema_model.buffers(), model.buffers()):
            if ema_b.is_floating_point():
                ema_b.mul_(self.beta).add_(b, alpha=1.0 - self.beta)
            else:
                ema_b.copy_(b)


def ring_of_clusters(rng, count):
    angles = rng.integers(0, 8, count) * (2 * np.pi / 8)
    points = 2.0 * np.stack([np.cos(angles), np.sin(angles)], axis=1) + 0.1 * rng.standard_normal((count, 2))
    return torch.from_numpy(points.astype(np.float32))


def init_from_numpy(model, seed):
    """Give every parameter a NumPy-drawn value within PyTorch's default bound 1/sqrt(fan_in)."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            fan_in = p.shape[1] if p.dim() > 1 else p.numel()
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='DDPM on a 2-D ring of clusters')
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--steps', type=int, default=12)
    parser.add_argument('--timesteps', type=int, default=40)
    parser.add_argument('--lr', type=float, default=2e-3)
    parser.add_argument('--ema-decay', type=float, default=0.9)
    parser.add_argument('--num-samples', type=int, default=32)
    parser.add_argument('--numpy-noise', action='store_true', help='draw noise and timesteps with NumPy')
    parser.add_argument('--seed', type=int, default=8)
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

    def draw_noise(like):
        if args.numpy_noise:
            return torch.from_numpy(noise_rng.standard_normal(tuple(like.shape)).astype(np.float32)).to(like.device)
        return torch.randn_like(like)

    def draw_timesteps(n):
        if args.numpy_noise:
            return torch.from_numpy(noise_rng.integers(0, args.timesteps, n)).to(device)
        return torch.randint(0, args.timesteps, (n,), device=device).long()

    network = NoisePredictor()
    init_from_numpy(network, args.seed)
    diffusion = GaussianDiffusion(network, timesteps=args.timesteps).to(device)
    ema = EMA(diffusion, beta=args.ema_decay)
    optimizer = torch.optim.Adam(network.parameters(), lr=args.lr)

    losses, ema_losses = [], []
    for step in range(args.steps):
        x_start = ring_of_clusters(rng, args.batch_size).to(device)
        t = draw_timesteps(args.batch_size)
        noise = draw_noise(x_start)
        optimizer.zero_grad()
        loss = diffusion.p_losses(x_start, t, noise)
        loss.backward()
        optimizer.step()
        ema.update(diffusion)
        losses.append(loss.item())
        with torch.no_grad():
            ema_losses.append(ema.ema_model.p_losses(x_start, t, noise).item())
        if not args.quiet and step % 4 == 0:
            print(f'step {step}: loss {losses[-1]:.4f} ema loss {ema_losses[-1]:.4f}')

    samples = ema.ema_model.sample((args.num_samples, 2), draw_noise)
    radius = samples.norm(dim=1)
    return {"losses": losses, "ema_losses": ema_losses, "sample_mean": samples.mean(0).tolist(),
            "sample_radius": [radius.mean().item(), radius.std().item()],
            "betas": [diffusion.betas[0].item(), diffusion.betas[-1].item(), diffusion.sqrt_alphas_cumprod[-1].item()]}


if __name__ == '__main__':
    print(json.dumps(main()))
