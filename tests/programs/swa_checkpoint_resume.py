"""Saving a training checkpoint, resuming from it, and stochastic weight averaging, written the
way PyTorch's recipe "Saving and loading a general checkpoint" and its SWA/EMA documentation
(`torch.optim.swa_utils`) write them.

A small MLP with `BatchNorm1d` classifies synthetic points. Training runs SGD with momentum,
weight decay and `CosineAnnealingLR`. Halfway through, the recipe's checkpoint dict (epoch,
`model_state_dict`, `optimizer_state_dict`, `scheduler_state_dict`, loss) goes through
`torch.save` into a temporary file; a fresh model, optimizer and scheduler are built, loaded
with `torch.load(PATH, map_location=device, weights_only=True)` and `load_state_dict`, and
training continues: the resumed run must repeat the uninterrupted one's losses and learning
rates exactly. The last epochs average the weights two ways: an `AveragedModel` (equal
weights) stepped by `SWALR(anneal_strategy="cos")` in place of the cosine schedule, and an EMA
`AveragedModel(multi_avg_fn=get_ema_multi_avg_fn(0.9), use_buffers=True)`; `update_bn`
recomputes the SWA model's BatchNorm statistics over the training loader before both are
evaluated under `torch.no_grad()`.
"""
import argparse
import json
import os
import tempfile

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn
from tensorplug.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, in_features=2, hidden=32, num_classes=3):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.bn1 = nn.BatchNorm1d(hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.bn2 = nn.BatchNorm1d(hidden)
        self.fc3 = nn.Linear(hidden, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.fc1(x)))
        x = F.relu(self.bn2(self.fc2(x)))
        return self.fc3(x)


def spirals(rng, count, classes=3):
    labels = rng.integers(0, classes, count)
    radius = rng.uniform(0.1, 1.0, count)
    angle = labels * (2 * np.pi / classes) + 2.5 * radius + 0.2 * rng.standard_normal(count)
    points = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    return torch.from_numpy(points.astype(np.float32)), torch.from_numpy(labels)


def init_from_numpy(model, seed):
    """Give every Linear PyTorch's default bound 1/sqrt(fan_in), drawn by NumPy; BatchNorm keeps
    its ones and zeros."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Linear):
                bound = 1.0 / np.sqrt(module.in_features)
                for p in (module.weight, module.bias):
                    p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def build(args, device):
    model = Net()
    init_from_numpy(model, args.seed)
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    return model, optimizer, scheduler


def train_epoch(model, optimizer, loader, device):
    model.train()
    losses = []
    for data, target in loader:
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@torch.no_grad()
def evaluate(model, data, target):
    model.eval()
    output = model(data)
    return F.cross_entropy(output, target).item(), (output.argmax(1) == target).float().mean().item()


def main(argv=None):
    parser = argparse.ArgumentParser(description='Checkpoint, resume and SWA')
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--epochs', type=int, default=6)
    parser.add_argument('--swa-start', type=int, default=4)
    parser.add_argument('--train-size', type=int, default=128)
    parser.add_argument('--lr', type=float, default=0.1)
    parser.add_argument('--swa-lr', type=float, default=0.05)
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
    train_set = TensorDataset(*spirals(rng, args.train_size))
    test_data, test_target = (t.to(device) for t in spirals(rng, 256))
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=False)
    checkpoint_epoch = args.swa_start // 2

    # The uninterrupted run, up to the start of averaging.
    model, optimizer, scheduler = build(args, device)
    straight_losses, straight_lrs = [], []
    for epoch in range(args.swa_start):
        straight_losses += train_epoch(model, optimizer, train_loader, device)
        scheduler.step()
        straight_lrs.append(scheduler.get_last_lr()[0])

    # The same run, saved after `checkpoint_epoch` epochs and resumed in fresh objects.
    model, optimizer, scheduler = build(args, device)
    losses, lrs = [], []
    with tempfile.TemporaryDirectory() as directory:
        PATH = os.path.join(directory, "checkpoint.pt")
        for epoch in range(checkpoint_epoch):
            losses += train_epoch(model, optimizer, train_loader, device)
            scheduler.step()
            lrs.append(scheduler.get_last_lr()[0])
        torch.save({
            'epoch': epoch,
            'model_state_dict': model.state_dict(),
            'optimizer_state_dict': optimizer.state_dict(),
            'scheduler_state_dict': scheduler.state_dict(),
            'loss': losses[-1],
        }, PATH)
        del model, optimizer, scheduler

        model, optimizer, scheduler = build(args, device)
        checkpoint = torch.load(PATH, map_location=device, weights_only=True)
        model.load_state_dict(checkpoint['model_state_dict'])
        optimizer.load_state_dict(checkpoint['optimizer_state_dict'])
        scheduler.load_state_dict(checkpoint['scheduler_state_dict'])
        start_epoch = checkpoint['epoch'] + 1
        assert checkpoint['loss'] == losses[-1]
    for epoch in range(start_epoch, args.swa_start):
        losses += train_epoch(model, optimizer, train_loader, device)
        scheduler.step()
        lrs.append(scheduler.get_last_lr()[0])
    assert np.allclose(losses, straight_losses, rtol=1e-6, atol=1e-7), (losses, straight_losses)
    assert np.allclose(lrs, straight_lrs, rtol=1e-12), (lrs, straight_lrs)
    if not args.quiet:
        print(f'resumed from epoch {start_epoch}: losses repeat the uninterrupted run; test {evaluate(model, test_data, test_target)}')

    swa_model = AveragedModel(model)
    ema_model = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9), use_buffers=True)
    swa_scheduler = SWALR(optimizer, swa_lr=args.swa_lr, anneal_epochs=1, anneal_strategy="cos")
    for epoch in range(args.swa_start, args.epochs):
        losses += train_epoch(model, optimizer, train_loader, device)
        swa_model.update_parameters(model)
        ema_model.update_parameters(model)
        swa_scheduler.step()
        lrs.append(swa_scheduler.get_last_lr()[0])
    update_bn(train_loader, swa_model, device=device)

    test = [evaluate(m, test_data, test_target) for m in (model, swa_model, ema_model)]
    if not args.quiet:
        for name, (loss, accuracy) in zip(('model', 'swa', 'ema'), test):
            print(f'{name}: test loss {loss:.4f} accuracy {accuracy:.3f}')
    return {"losses": losses, "lr": lrs, "test_loss": [t[0] for t in test], "test_accuracy": [t[1] for t in test],
            "n_averaged": [swa_model.n_averaged.item(), ema_model.n_averaged.item()],
            "swa_running_mean": swa_model.module.bn1.running_mean[:4].tolist()}


if __name__ == '__main__':
    print(json.dumps(main()))
