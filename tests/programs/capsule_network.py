"""A capsule network with dynamic routing by agreement, written the way the public CapsNet
implementations (Sabour et al.; gram-ai's capsule-networks, CapsNet-Pytorch) write it.

Conv2d features, primary capsules from a strided Conv2d viewed as (batch, routes, dim) vectors and
`squash`ed (`(s ** 2).sum(keepdim=True)`, `torch.sqrt(... + eps)`), digit capsules predicted by a
broadcast `torch.matmul` of a `(1, routes, caps, out, in)` weight with `x[:, :, None, :, None]`
(checked against `torch.einsum`), three routing iterations over zero logits
(`F.softmax(b, dim=2)`, `(c * u_hat).sum(dim=1, keepdim=True)`, agreement added to the logits
from the `detach()`ed predictions, gradients only through the last iteration), the margin loss
(`F.relu(0.9 - lengths) ** 2` and `F.relu(lengths - 0.1) ** 2` weighted by one-hot labels from
`torch.eye(n).index_select`), and the reconstruction decoder on the capsules masked by the
predicted class (`lengths.max(dim=1)`, training masks with the true labels) with a
`reduction='sum'` MSE scaled by 0.0005. Adam with ExponentialLR, test accuracy under `no_grad`.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F


def squash(s, dim=-1):
    squared_norm = (s ** 2).sum(dim=dim, keepdim=True)
    scale = squared_norm / (1 + squared_norm)
    return scale * s / torch.sqrt(squared_norm + 1e-8)


class PrimaryCaps(nn.Module):
    def __init__(self, in_channels, num_types, capsule_dim):
        super().__init__()
        self.capsule_dim = capsule_dim
        self.conv = nn.Conv2d(in_channels, num_types * capsule_dim, kernel_size=3, stride=2)

    def forward(self, x):
        out = self.conv(x)
        batch, _, h, w = out.shape
        out = out.view(batch, -1, self.capsule_dim, h, w).permute(0, 1, 3, 4, 2).contiguous()
        return squash(out.view(batch, -1, self.capsule_dim))


class DigitCaps(nn.Module):
    def __init__(self, num_routes, in_dim, num_caps, out_dim, routing_iterations=3):
        super().__init__()
        self.num_routes, self.num_caps = num_routes, num_caps
        self.routing_iterations = routing_iterations
        self.W = nn.Parameter(0.01 * torch.randn(1, num_routes, num_caps, out_dim, in_dim))

    def predictions(self, x):
        # (1, routes, caps, out, in) @ (batch, routes, 1, in, 1) -> (batch, routes, caps, out)
        return torch.matmul(self.W, x[:, :, None, :, None]).squeeze(-1)

    def forward(self, x):
        u_hat = self.predictions(x)
        u_hat_detached = u_hat.detach()
        b = torch.zeros(x.size(0), self.num_routes, self.num_caps, 1, device=x.device)
        for iteration in range(self.routing_iterations):
            c = F.softmax(b, dim=2)
            if iteration == self.routing_iterations - 1:
                v = squash((c * u_hat).sum(dim=1, keepdim=True))
            else:
                v = squash((c * u_hat_detached).sum(dim=1, keepdim=True))
                b = b + (u_hat_detached * v).sum(dim=-1, keepdim=True)
        return v.squeeze(1)


class CapsNet(nn.Module):
    def __init__(self, num_classes=4, image_size=10):
        super().__init__()
        self.num_classes = num_classes
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3)
        grid = (image_size - 2 - 3) // 2 + 1
        self.primary = PrimaryCaps(16, num_types=4, capsule_dim=4)
        self.digits = DigitCaps(num_routes=4 * grid * grid, in_dim=4, num_caps=num_classes, out_dim=8)
        self.decoder = nn.Sequential(
            nn.Linear(8 * num_classes, 32), nn.ReLU(inplace=True),
            nn.Linear(32, image_size * image_size), nn.Sigmoid())

    def forward(self, images, labels=None):
        x = F.relu(self.conv1(images), inplace=True)
        capsules = self.digits(self.primary(x))
        lengths = torch.sqrt((capsules ** 2).sum(dim=-1))
        if labels is None:
            _, predicted = lengths.max(dim=1)
            labels = torch.eye(self.num_classes, device=images.device).index_select(dim=0, index=predicted)
        reconstructions = self.decoder((capsules * labels[:, :, None]).view(images.size(0), -1))
        return lengths, reconstructions


def capsule_loss(images, labels, lengths, reconstructions):
    left = F.relu(0.9 - lengths, inplace=True) ** 2
    right = F.relu(lengths - 0.1, inplace=True) ** 2
    margin_loss = (labels * left + 0.5 * (1. - labels) * right).sum()
    reconstruction_loss = F.mse_loss(reconstructions, images.view(images.size(0), -1), reduction='sum')
    return (margin_loss + 0.0005 * reconstruction_loss) / images.size(0)


def synthetic_glyphs(rng, count, size, num_classes):
    """Four shapes (horizontal bar, vertical bar, diagonal, box) at random offsets, in [0, 1]."""
    labels = rng.integers(0, num_classes, count)
    images = np.zeros((count, 1, size, size), np.float32)
    for image, label in zip(images, labels):
        r, c = rng.integers(1, size - 6, 2)
        if label == 0:
            image[0, r + 2, c:c + 6] = 1
        elif label == 1:
            image[0, r:r + 6, c + 2] = 1
        elif label == 2:
            image[0, np.arange(r, r + 5), np.arange(c, c + 5)] = 1
        else:
            image[0, r:r + 5, [c, c + 4]] = 1
            image[0, [r, r + 4], c:c + 5] = 1
    images += 0.1 * rng.random(images.shape).astype(np.float32)
    return torch.from_numpy(np.clip(images, 0, 1)), torch.from_numpy(labels)


def init_from_numpy(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name == "digits.W":
                value = 0.01 * rng.standard_normal(tuple(p.shape))
            else:
                fan_in = p[0].numel() if p.dim() > 1 else p.numel()
                value = rng.uniform(-1, 1, tuple(p.shape)) / np.sqrt(fan_in)
            p.copy_(torch.from_numpy(value.astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='CapsNet with dynamic routing on synthetic glyphs')
    parser.add_argument('--steps', type=int, default=10)
    parser.add_argument('--batch-size', type=int, default=16)
    parser.add_argument('--lr', type=float, default=2e-2)
    parser.add_argument('--seed', type=int, default=2)
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

    num_classes, size = 4, 10
    rng = np.random.default_rng(args.seed)
    batches = [synthetic_glyphs(rng, args.batch_size, size, num_classes) for _ in range(args.steps)]
    test_images, test_labels = synthetic_glyphs(rng, 64, size, num_classes)
    test_images, test_labels = test_images.to(device), test_labels.to(device)

    model = CapsNet(num_classes, size)
    init_from_numpy(model, args.seed)
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)

    with torch.no_grad():
        primary = model.primary(F.relu(model.conv1(test_images[:4])))
        by_einsum = torch.einsum('rcoi,bri->brco', model.digits.W[0], primary)
        assert torch.allclose(model.digits.predictions(primary), by_einsum, atol=1e-6)

    losses = []
    model.train()
    for images, target in batches:
        images, target = images.to(device), target.to(device)
        labels = torch.eye(num_classes, device=device).index_select(dim=0, index=target)
        optimizer.zero_grad()
        lengths, reconstructions = model(images, labels)
        loss = capsule_loss(images, labels, lengths, reconstructions)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())

    model.eval()
    with torch.no_grad():
        lengths, reconstructions = model(test_images)
        labels = torch.eye(num_classes, device=device).index_select(dim=0, index=test_labels)
        test_loss = capsule_loss(test_images, labels, lengths, reconstructions).item()
        accuracy = (lengths.argmax(dim=1) == test_labels).float().mean().item()
    if not args.quiet:
        print(f'last loss {losses[-1]:.4f} test loss {test_loss:.4f} accuracy {accuracy:.3f}')
    return {"losses": losses, "test": [test_loss], "accuracy": [accuracy],
            "lr": [scheduler.get_last_lr()[0]]}


if __name__ == '__main__':
    print(json.dumps(main()))
