"""An image classifier trained with automatic mixed precision, the way PyTorch's AMP recipe and
pytorch/examples' imagenet script (`--amp`) train one.

Synthetic 16x16 three-channel "images" (eight NumPy-drawn class templates plus noise) stand in for
a dataset. The forward pass and the loss run under `torch.autocast(device_type, dtype)`:
convolutions and linear layers in bfloat16 (or float16), the cross entropy in float32. A
`torch.amp.GradScaler` scales the loss when the dtype is float16 (bfloat16 needs none, so the
scaler is created disabled, as the recipe does); a device without autocast trains in float32; SGD with momentum and weight decay, a cosine
learning-rate schedule, `zero_grad(set_to_none=True)`, and an evaluation pass under autocast.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, classes=8):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(2),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32 * 2 * 2, 64), nn.ReLU(), nn.Linear(64, classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def synthetic_images(rng, count, classes=8):
    templates = np.random.default_rng(4321).uniform(-1, 1, (classes, 3, 16, 16))
    labels = rng.integers(0, classes, count)
    images = templates[labels] + 0.5 * rng.standard_normal((count, 3, 16, 16))
    return torch.from_numpy(images.astype(np.float32)), torch.from_numpy(labels.astype(np.int64))


def init_from_numpy(model, seed):
    """Give every randomly initialised parameter a NumPy-drawn value, so that any library
    starts from the same weights; constant ones (norm layers' ones and zeros) stay."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() > 1 and p.min().item() == p.max().item():
                continue
            fan_in = p[0].numel() if p.dim() > 1 else p.numel()
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='mixed-precision training on synthetic images')
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--epochs', type=int, default=2)
    parser.add_argument('--lr', type=float, default=0.05)
    parser.add_argument('--amp-dtype', default='bfloat16', choices=['bfloat16', 'float16'])
    parser.add_argument('--seed', type=int, default=1)
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
    amp_dtype = getattr(torch, args.amp_dtype)
    # Mixed precision where the device supports it, float32 elsewhere.
    use_amp = torch.amp.is_autocast_available(device.type)

    rng = np.random.default_rng(args.seed)
    train_loader = DataLoader(TensorDataset(*synthetic_images(rng, 128)), batch_size=args.batch_size)
    test_loader = DataLoader(TensorDataset(*synthetic_images(rng, 64)), batch_size=64)

    model = Net()
    init_from_numpy(model, args.seed)
    model = model.to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    steps = args.epochs * len(train_loader)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp and amp_dtype == torch.float16)

    losses, output_dtypes, test_losses, accuracy = [], [], [], []
    for epoch in range(args.epochs):
        model.train()
        for images, target in train_loader:
            images, target = images.to(device), target.to(device)
            with torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=use_amp):
                output = model(images)
                loss = criterion(output, target)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()
            losses.append(loss.item())
            output_dtypes.append(str(output.dtype).split('.')[-1] + '/' + str(loss.dtype).split('.')[-1])
        model.eval()
        test_loss, correct = 0.0, 0
        with torch.no_grad(), torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=use_amp):
            for images, target in test_loader:
                images, target = images.to(device), target.to(device)
                output = model(images)
                test_loss += F.cross_entropy(output, target, reduction='sum').item()
                correct += (output.argmax(1) == target).sum().item()
        test_losses.append(test_loss / len(test_loader.dataset))
        accuracy.append(correct / len(test_loader.dataset))
        if not args.quiet:
            print(f'epoch {epoch}: loss {losses[-1]:.4f}, test loss {test_losses[-1]:.4f}, accuracy {accuracy[-1]:.3f}')
    return {"losses": losses, "test_loss": test_losses, "accuracy": accuracy, "dtypes": ",".join(sorted(set(output_dtypes)))}


if __name__ == '__main__':
    print(json.dumps(main()))
