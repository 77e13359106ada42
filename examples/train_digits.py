"""Train a small CNN on the handwritten digits that ship with scikit-learn, on any device.

    python examples/train_digits.py --device cpu        # or opencl, cuda, a plugin's device
    mpiexec -n 2 python examples/train_digits.py --distributed   # data-parallel on 2 processes

The data set is scikit-learn's `load_digits` (1,797 8x8 images, no download). The script shows
a progress bar, prints the test accuracy, saves a checkpoint (safetensors) and a PNG plot of the
loss and accuracy per epoch into --out-dir. Only the --device argument changes between devices.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import tensorplug as tp
import tensorplug.nn.functional as F
from tensorplug import nn
from tensorplug.utils.data import DataLoader, TensorDataset


class DigitsCNN(nn.Module):
    """conv(32) -> pool -> conv(64) -> pool -> fc(128) -> fc(10), for 1x8x8 images."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, kernel_size=3, padding=1)
        self.fc1 = nn.Linear(64 * 2 * 2, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)  # 8x8 -> 4x4
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)  # 4x4 -> 2x2
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def load_data(seed: int):
    """Images scaled to [0, 1] as (N, 1, 8, 8) float32, labels int64, split 80/20."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    cut = int(0.8 * len(labels))
    train, test = order[:cut], order[cut:]
    return (images[train], labels[train]), (images[test], labels[test])


def evaluate(model: nn.Module, images: tp.Tensor, labels: tp.Tensor) -> float:
    model.eval()
    with tp.no_grad():
        predictions = model(images).argmax(dim=1)
    model.train()
    return (predictions == labels).float().mean().item()


def save_plot(history: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    epochs = range(1, len(history["loss"]) + 1)
    left.plot(epochs, history["loss"], marker="o")
    left.set(title="training loss", xlabel="epoch", ylabel="cross entropy")
    right.plot(epochs, [100 * a for a in history["accuracy"]], marker="o", color="tab:green")
    right.set(title="test accuracy", xlabel="epoch", ylabel="%")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, opencl, cuda or a plugin's device type")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", default="digits-output")
    parser.add_argument("--min-accuracy", type=float, default=0.97, help="exit with an error below this test accuracy")
    parser.add_argument("--distributed", action="store_true",
                        help="data-parallel over the processes mpiexec started (each takes 1/N of every epoch)")
    args = parser.parse_args(argv)
    if args.distributed:
        import tensorplug.distributed as dist

        dist.init_process_group("mpi")
    rank0 = not args.distributed or dist.get_rank() == 0

    from tqdm import tqdm

    tp.manual_seed(args.seed)
    device = tp.device(args.device)
    (train_x, train_y), (test_x, test_y) = load_data(args.seed)
    train_set = TensorDataset(tp.tensor(train_x), tp.tensor(train_y))
    if args.distributed:
        from tensorplug.utils.data import DistributedSampler

        sampler = DistributedSampler(train_set, seed=args.seed)
        loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)
    else:
        sampler = None
        loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                            generator=tp.Generator().manual_seed(args.seed))
    test_images, test_labels = tp.tensor(test_x, device=device), tp.tensor(test_y, device=device)

    model = DigitsCNN().to(device)
    if args.distributed:
        from tensorplug.nn.parallel import DistributedDataParallel

        model = DistributedDataParallel(model)
    optimizer = tp.optim.Adam(model.parameters(), lr=args.lr)
    # Annealing the learning rate to zero settles the final accuracy (no last-epoch wobble).
    scheduler = tp.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    history: dict[str, list[float]] = {"loss": [], "accuracy": []}
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        total, batches = 0.0, 0
        if sampler is not None:
            sampler.set_epoch(epoch)
        progress = tqdm(loader, desc=f"epoch {epoch:2d}/{args.epochs}", leave=False, file=sys.stdout, disable=not sys.stdout.isatty())
        for images, labels in progress:
            images, labels = images.to(device), labels.to(device)
            loss = F.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            batches += 1
            progress.set_postfix(loss=f"{total / batches:.3f}")
        scheduler.step()
        accuracy = evaluate(model, test_images, test_labels)
        history["loss"].append(total / batches)
        history["accuracy"].append(accuracy)
        if rank0:
            print(f"epoch {epoch:2d}: loss {total / batches:.4f}  test accuracy {100 * accuracy:.2f}%")
    elapsed = time.perf_counter() - start
    if not rank0:  # every rank holds the same model; rank 0 saves it
        dist.destroy_process_group()
        return 0 if history["accuracy"][-1] >= args.min_accuracy else 1

    os.makedirs(args.out_dir, exist_ok=True)
    checkpoint = os.path.join(args.out_dir, "digits_cnn.safetensors")
    tp.save((model.module if args.distributed else model).state_dict(), checkpoint)
    plot = os.path.join(args.out_dir, "training.png")
    save_plot(history, plot)
    final = history["accuracy"][-1]
    where = f"{dist.get_world_size()} processes on {device}" if args.distributed else str(device)
    print(f"trained on {where} in {elapsed:.1f} s: test accuracy {100 * final:.2f}%; saved {checkpoint} and {plot}")
    if args.distributed:
        dist.destroy_process_group()
    if final < args.min_accuracy:
        print(f"test accuracy below the expected {100 * args.min_accuracy:.0f}%", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
