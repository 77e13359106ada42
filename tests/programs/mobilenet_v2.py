"""A MobileNetV2-style classifier, built the way torchvision's mobilenetv2 builds one and trained
with a one-cycle schedule.

Synthetic 16x16 three-channel "images" (eight NumPy-drawn class templates plus noise) stand in for
a dataset. The network keeps MobileNetV2's pieces at a toy width: Conv-BN-ReLU6 units, inverted
residual blocks (1x1 expansion, 3x3 depthwise convolution with `groups=` the channel count, linear
1x1 projection, an identity shortcut when stride is 1 and the widths match), channel counts
rounded by `_make_divisible`, a 1x1 head convolution, `adaptive_avg_pool2d`, `torch.flatten(x, 1)`
and a Dropout + Linear classifier. Training uses cross entropy, SGD with momentum and OneCycleLR
(which cycles the momentum too), `zero_grad(set_to_none=True)`; evaluation counts argmax hits.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.optim.lr_scheduler import OneCycleLR
from tensorplug.utils.data import DataLoader, TensorDataset


def _make_divisible(v, divisor, min_value=None):
    """Round a channel count to a multiple of `divisor`, never more than 10% below `v`."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class ConvBNReLU(nn.Sequential):
    def __init__(self, in_planes, out_planes, kernel_size=3, stride=1, groups=1):
        padding = (kernel_size - 1) // 2
        super().__init__(
            nn.Conv2d(in_planes, out_planes, kernel_size, stride, padding, groups=groups, bias=False),
            nn.BatchNorm2d(out_planes),
            nn.ReLU6(inplace=True),
        )


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        assert stride in [1, 2]
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(ConvBNReLU(inp, hidden_dim, kernel_size=1))
        layers.extend([
            ConvBNReLU(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim),  # depthwise
            nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),  # linear bottleneck: no activation
            nn.BatchNorm2d(oup),
        ])
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes=8, width_mult=0.25, dropout=0.2, round_nearest=8):
        super().__init__()
        input_channel = _make_divisible(32 * width_mult, round_nearest)
        self.last_channel = _make_divisible(128 * max(1.0, width_mult), round_nearest)
        # t (expansion), c (output channels), n (repeats), s (stride of the first repeat)
        inverted_residual_setting = [
            [1, 16, 1, 1],
            [6, 24, 2, 2],
            [6, 32, 2, 2],
        ]
        features = [ConvBNReLU(3, input_channel, stride=1)]
        for t, c, n, s in inverted_residual_setting:
            output_channel = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                stride = s if i == 0 else 1
                features.append(InvertedResidual(input_channel, output_channel, stride, expand_ratio=t))
                input_channel = output_channel
        features.append(ConvBNReLU(input_channel, self.last_channel, kernel_size=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(
            nn.Dropout(dropout),
            nn.Linear(self.last_channel, num_classes),
        )

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode='fan_out')
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x


def synthetic_images(rng, count, classes=8):
    templates = np.random.default_rng(99).uniform(-1, 1, (classes, 3, 16, 16))
    labels = rng.integers(0, classes, count)
    images = templates[labels] + 0.6 * rng.standard_normal((count, 3, 16, 16))
    return torch.from_numpy(images.astype(np.float32)), torch.from_numpy(labels.astype(np.int64))


def init_from_numpy(model, seed):
    """Give every randomly initialised parameter a NumPy-drawn value, so that any library starts
    from the same weights: kaiming-normal (fan_out) convolutions and N(0, 0.01) linear weights as
    the model's own init; constant ones (zero biases, BatchNorm's ones and zeros) stay."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() > 1 and p.min().item() == p.max().item():
                continue
            if p.dim() == 4:
                fan_out = p.shape[0] * p.shape[2] * p.shape[3]
                values = rng.standard_normal(tuple(p.shape)) * np.sqrt(2.0 / fan_out)
            else:
                values = rng.standard_normal(tuple(p.shape)) * 0.01
            p.copy_(torch.from_numpy(values.astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='a toy MobileNetV2 on synthetic images')
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--epochs', type=int, default=3)
    parser.add_argument('--lr', type=float, default=0.05)
    parser.add_argument('--dropout', type=float, default=0.2)
    parser.add_argument('--seed', type=int, default=11)
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
    train_loader = DataLoader(TensorDataset(*synthetic_images(rng, 64)), batch_size=args.batch_size)
    test_loader = DataLoader(TensorDataset(*synthetic_images(rng, 48)), batch_size=48)

    model = MobileNetV2(dropout=args.dropout)
    init_from_numpy(model, args.seed)
    model.to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=4e-5)
    scheduler = OneCycleLR(optimizer, max_lr=args.lr, epochs=args.epochs, steps_per_epoch=len(train_loader),
                           pct_start=0.3)

    losses, lrs, momenta, test_losses, accuracy = [], [], [], [], []
    for epoch in range(args.epochs):
        model.train()
        for images, target in train_loader:
            images, target = images.to(device), target.to(device)
            optimizer.zero_grad(set_to_none=True)
            loss = criterion(model(images), target)
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
            lrs.append(scheduler.get_last_lr()[0])
            momenta.append(optimizer.param_groups[0]['momentum'])
        model.eval()
        test_loss, correct = 0.0, 0
        with torch.no_grad():
            for images, target in test_loader:
                images, target = images.to(device), target.to(device)
                output = model(images)
                test_loss += F.cross_entropy(output, target, reduction='sum').item()
                correct += (output.argmax(1) == target).type(torch.float).sum().item()
        test_losses.append(test_loss / len(test_loader.dataset))
        accuracy.append(correct / len(test_loader.dataset))
        if not args.quiet:
            print(f'epoch {epoch}: loss {losses[-1]:.4f} lr {lrs[-1]:.4f} test loss {test_losses[-1]:.4f} '
                  f'accuracy {accuracy[-1]:.3f}')
    return {"losses": losses, "lr": lrs, "momentum": momenta, "test_loss": test_losses, "accuracy": accuracy}


if __name__ == '__main__':
    print(json.dumps(main()))
