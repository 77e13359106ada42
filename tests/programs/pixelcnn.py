"""A PixelCNN, written the way the classic pixelcnn-pytorch example (van den Oord et al.) writes it.

`MaskedConv2d` subclasses `nn.Conv2d`: its mask is a buffer registered as
`self.weight.data.clone()`, filled with ones and zeroed to the right of and below the centre
(`kW // 2 + (mask_type == 'B')`: type A hides the centre pixel, type B shows it), and `forward`
multiplies it into the weight in place (`self.weight.data *= self.mask`) before calling
`super().forward`. A stack of masked convolutions with BatchNorm2d and in-place ReLU predicts a
categorical distribution over a few grey levels per pixel; `F.cross_entropy` on the (N, levels,
H, W) logits against `(input.data[:, 0] * (levels - 1)).long()` targets, reported in bits per
dimension. The autoregressive property is checked through autograd (no output pixel depends on
itself or later pixels). Sampling, in `eval()` and `no_grad`, fills a legacy `torch.Tensor(n, 1,
H, W)` one pixel at a time from `F.softmax(out[:, :, i, j])`, with `torch.multinomial` (default
run) or by inverse CDF from NumPy uniforms (compared runs, `--numpy-sampling`).
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F


class MaskedConv2d(nn.Conv2d):
    def __init__(self, mask_type, *args, **kwargs):
        super(MaskedConv2d, self).__init__(*args, **kwargs)
        assert mask_type in {'A', 'B'}
        self.register_buffer('mask', self.weight.data.clone())
        _, _, kH, kW = self.weight.size()
        self.mask.fill_(1)
        self.mask[:, :, kH // 2, kW // 2 + (mask_type == 'B'):] = 0
        self.mask[:, :, kH // 2 + 1:] = 0

    def forward(self, x):
        self.weight.data *= self.mask
        return super(MaskedConv2d, self).forward(x)


def pixel_cnn(levels, fm=8):
    return nn.Sequential(
        MaskedConv2d('A', 1, fm, 5, 1, 2, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
        MaskedConv2d('B', fm, fm, 3, 1, 1, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
        MaskedConv2d('B', fm, fm, 3, 1, 1, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
        nn.Conv2d(fm, levels, 1))


def synthetic_images(rng, count, size, levels):
    """Quantised blurry strokes: a bright bar at a random row or column on a dark background."""
    images = np.zeros((count, 1, size, size))
    for image in images:
        position = rng.integers(1, size - 1)
        if rng.random() < 0.5:
            image[0, position - 1:position + 1, :] = 1.0
        else:
            image[0, :, position - 1:position + 1] = 1.0
        image[0] += 0.35 * rng.random((size, size))
    return (np.clip(np.round(images * (levels - 1)), 0, levels - 1) / (levels - 1)).astype(np.float32)


def init_from_numpy(model, seed):
    """Convolution weights redrawn within PyTorch's default bound; BatchNorm keeps ones and zeros."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Conv2d):
                bound = 1.0 / np.sqrt(module.weight[0].numel())
                module.weight.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(module.weight.shape)).astype(np.float32)))
                if module.bias is not None:
                    module.bias.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(module.bias.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='PixelCNN with masked convolutions')
    parser.add_argument('--epochs', type=int, default=2)
    parser.add_argument('--batch-size', type=int, default=16)
    parser.add_argument('--train-size', type=int, default=64)
    parser.add_argument('--size', type=int, default=8)
    parser.add_argument('--levels', type=int, default=4)
    parser.add_argument('--lr', type=float, default=3e-3)
    parser.add_argument('--samples', type=int, default=4)
    parser.add_argument('--numpy-sampling', action='store_true',
                        help='draw pixels by inverse CDF from NumPy uniforms instead of torch.multinomial')
    parser.add_argument('--seed', type=int, default=9)
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
    train = torch.from_numpy(synthetic_images(rng, args.train_size, args.size, args.levels))
    test = torch.from_numpy(synthetic_images(rng, 32, args.size, args.levels)).to(device)

    net = pixel_cnn(args.levels)
    init_from_numpy(net, args.seed)
    net.to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=args.lr)

    # No output pixel may see itself or anything after it in raster order.
    probe = test[:1].clone().requires_grad_()
    i, j = args.size // 2, args.size // 2
    net.eval()
    net(probe)[0, :, i, j].sum().backward()
    seen = probe.grad[0, 0] != 0
    assert not seen[i, j:].any() and not seen[i + 1:].any(), seen
    assert seen[:i].any() and seen[i, :j].any()
    net.zero_grad()

    losses = []
    for epoch in range(args.epochs):
        net.train()
        for start in range(0, args.train_size, args.batch_size):
            input = train[start:start + args.batch_size].to(device)
            target = (input.data[:, 0] * (args.levels - 1)).round().long()
            loss = F.cross_entropy(net(input), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item() / np.log(2.0))

    net.eval()
    with torch.no_grad():
        target = (test[:, 0] * (args.levels - 1)).round().long()
        test_bits = F.cross_entropy(net(test), target).item() / np.log(2.0)

        sample = torch.Tensor(args.samples, 1, args.size, args.size).to(device)
        sample.fill_(0)
        uniforms = rng.random((args.size, args.size, args.samples, 1)).astype(np.float32)
        for i in range(args.size):
            for j in range(args.size):
                out = net(sample)
                probs = F.softmax(out[:, :, i, j], dim=1)
                if args.numpy_sampling:
                    cdf = probs.cumsum(dim=1)
                    u = torch.from_numpy(uniforms[i, j]).to(device) * cdf[:, -1:]
                    level = (cdf < u).sum(dim=1, keepdim=True).clamp(max=args.levels - 1)
                else:
                    level = torch.multinomial(probs, 1)
                sample[:, :, i, j] = level.float() / (args.levels - 1)
    levels = (sample * (args.levels - 1)).round().long().flatten(1)
    if not args.quiet:
        print(f'train bits/dim {losses[-1]:.4f} test bits/dim {test_bits:.4f}')
    return {"losses": losses, "test": [test_bits],
            "samples": " ".join("".join(map(str, row.tolist())) for row in levels) if args.numpy_sampling else ""}


if __name__ == '__main__':
    print(json.dumps(main()))
