"""A tabular classifier with one embedding per categorical column, written the way the public
tabular-data recipes (fast.ai's TabularModel, "entity embeddings" tutorials) write one in plain
PyTorch.

A synthetic, imbalanced table (a 15% positive class) has three categorical columns of different
cardinalities and four continuous ones. A `Dataset` subclass returns one row as a dict of NumPy
values, and a `collate_fn` builds the batch with `torch.as_tensor(np.stack(...))` and
`torch.tensor(list, dtype=torch.float32)`. Class imbalance is handled twice over as the recipes
do: a `WeightedRandomSampler` with per-row weights `1 / class_count[label]` (drawing from a
seeded `torch.Generator`), and `BCEWithLogitsLoss(pos_weight=...)` in the evaluation loss. The
model concatenates `nn.Embedding(cardinality, min(50, (cardinality + 1) // 2))` outputs (held
in an `nn.ModuleList`), applies embedding dropout, a `BatchNorm1d` on the continuous columns,
and Linear-ReLU-BatchNorm1d-Dropout blocks. AdamW and `ExponentialLR` train it; evaluation runs
under `torch.inference_mode()` and reports the loss, accuracy and a rank-based ROC AUC
(`argsort` twice).

`--numpy-sampler` swaps the WeightedRandomSampler for a `Sampler` subclass drawing the same
distribution with NumPy, so that two libraries can be compared.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.utils.data import DataLoader, Dataset, Sampler, WeightedRandomSampler

CARDINALITIES = (7, 12, 4)
NUM_CONTINUOUS = 4


def make_table(rng, rows):
    categories = np.stack([rng.integers(0, c, rows) for c in CARDINALITIES], axis=1)
    continuous = rng.standard_normal((rows, NUM_CONTINUOUS)) * np.array([1.0, 3.0, 0.5, 10.0]) + np.array([0, 5, 0, 40])
    effect = np.array([0.8, -0.4, 0.3, -0.6, 0.2, 0.9, -0.9])[categories[:, 0]] + 0.15 * (categories[:, 1] % 3)
    score = effect + 0.7 * continuous[:, 0] - 0.2 * (continuous[:, 1] - 5) + 0.05 * (continuous[:, 3] - 40)
    labels = (score + 0.5 * rng.standard_normal(rows) > 1.6).astype(np.int64)
    return categories, continuous.astype(np.float32), labels


class TabularDataset(Dataset):
    def __init__(self, categories, continuous, labels):
        self.categories, self.continuous, self.labels = categories, continuous, labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return {"cat": self.categories[idx], "cont": self.continuous[idx], "label": self.labels[idx]}


def collate_rows(rows):
    categories = torch.as_tensor(np.stack([row["cat"] for row in rows]), dtype=torch.long)
    continuous = torch.as_tensor(np.stack([row["cont"] for row in rows]))
    labels = torch.tensor([float(row["label"]) for row in rows], dtype=torch.float32)
    return categories, continuous, labels


class NumpyWeightedSampler(Sampler):
    """WeightedRandomSampler's distribution (with replacement), drawn by NumPy."""

    def __init__(self, weights, num_samples, rng):
        self.probabilities = np.asarray(weights, dtype=np.float64) / np.sum(weights)
        self.num_samples, self.rng = num_samples, rng

    def __iter__(self):
        return iter(self.rng.choice(len(self.probabilities), self.num_samples, p=self.probabilities).tolist())

    def __len__(self):
        return self.num_samples


class TabularModel(nn.Module):
    def __init__(self, cardinalities, num_continuous, hidden=(32, 16), emb_dropout=0.1, dropout=0.1):
        super().__init__()
        self.embeds = nn.ModuleList([nn.Embedding(c, min(50, (c + 1) // 2)) for c in cardinalities])
        self.emb_drop = nn.Dropout(emb_dropout)
        self.bn_cont = nn.BatchNorm1d(num_continuous)
        sizes = [sum(e.embedding_dim for e in self.embeds) + num_continuous, *hidden]
        layers = []
        for n_in, n_out in zip(sizes[:-1], sizes[1:]):
            layers += [nn.Linear(n_in, n_out), nn.ReLU(inplace=True), nn.BatchNorm1d(n_out), nn.Dropout(dropout)]
        layers.append(nn.Linear(sizes[-1], 1))
        self.layers = nn.Sequential(*layers)

    def forward(self, x_cat, x_cont):
        x = torch.cat([e(x_cat[:, i]) for i, e in enumerate(self.embeds)], 1)
        x = self.emb_drop(x)
        x = torch.cat([x, self.bn_cont(x_cont)], 1)
        return self.layers(x).squeeze(1)


def roc_auc(scores, labels):
    """The Mann-Whitney form of the area under the ROC curve (scores assumed distinct)."""
    ranks = scores.argsort().argsort().double() + 1
    positives = labels.bool()
    n_pos = positives.sum().item()
    n_neg = labels.numel() - n_pos
    return ((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)).item()


def init_from_numpy(model, seed):
    """Give every embedding a N(0, 1) value and every Linear PyTorch's default bound
    1/sqrt(fan_in), drawn by NumPy; BatchNorm keeps its ones and zeros."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Embedding):
                module.weight.copy_(torch.from_numpy(rng.standard_normal(tuple(module.weight.shape)).astype(np.float32)))
            elif isinstance(module, nn.Linear):
                bound = 1.0 / np.sqrt(module.in_features)
                for p in (module.weight, module.bias):
                    p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='Tabular classifier with categorical embeddings')
    parser.add_argument('--rows', type=int, default=512)
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--epochs', type=int, default=3)
    parser.add_argument('--lr', type=float, default=1e-2)
    parser.add_argument('--dropout', type=float, default=0.1)
    parser.add_argument('--numpy-sampler', action='store_true', help='draw the weighted sample with NumPy')
    parser.add_argument('--seed', type=int, default=17)
    parser.add_argument('--device', default=None, help='default: cuda if available, else cpu')
    parser.add_argument('--quiet', action='store_true')
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    device = torch.device(args.device if args.device is not None else "cuda" if torch.cuda.is_available() else "cpu")

    rng = np.random.default_rng(args.seed)
    train_set = TabularDataset(*make_table(rng, args.rows))
    test_set = TabularDataset(*make_table(rng, 256))
    class_count = np.bincount(train_set.labels, minlength=2)
    sample_weights = (1.0 / class_count)[train_set.labels]
    steps_per_epoch = args.rows // args.batch_size // 2
    if args.numpy_sampler:
        sampler = NumpyWeightedSampler(sample_weights, steps_per_epoch * args.batch_size, rng)
    else:
        sampler = WeightedRandomSampler(torch.as_tensor(sample_weights, dtype=torch.double),
                                        num_samples=steps_per_epoch * args.batch_size, replacement=True,
                                        generator=torch.Generator().manual_seed(args.seed))
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler, collate_fn=collate_rows,
                              drop_last=True)
    test_loader = DataLoader(test_set, batch_size=128, shuffle=False, collate_fn=collate_rows)

    model = TabularModel(CARDINALITIES, NUM_CONTINUOUS, emb_dropout=args.dropout, dropout=args.dropout)
    init_from_numpy(model, args.seed)
    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-2)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.7)
    pos_weight = torch.tensor([class_count[0] / class_count[1]], device=device)
    eval_criterion = nn.BCEWithLogitsLoss(pos_weight=pos_weight)

    losses, positive_fraction, test_losses, accuracies, aucs = [], [], [], [], []
    for epoch in range(args.epochs):
        model.train()
        for x_cat, x_cont, y in train_loader:
            x_cat, x_cont, y = x_cat.to(device), x_cont.to(device), y.to(device)
            optimizer.zero_grad()
            loss = F.binary_cross_entropy_with_logits(model(x_cat, x_cont), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            positive_fraction.append(y.mean().item())
        scheduler.step()

        model.eval()
        all_scores, all_labels, total_loss = [], [], 0.0
        with torch.inference_mode():
            for x_cat, x_cont, y in test_loader:
                x_cat, x_cont, y = x_cat.to(device), x_cont.to(device), y.to(device)
                logits = model(x_cat, x_cont)
                total_loss += eval_criterion(logits, y).item() * y.size(0)
                all_scores.append(logits)
                all_labels.append(y)
        scores, labels = torch.cat(all_scores), torch.cat(all_labels)
        test_losses.append(total_loss / len(test_set))
        accuracies.append(((scores > 0).float() == labels).float().mean().item())
        aucs.append(roc_auc(scores, labels))
        if not args.quiet:
            print(f'epoch {epoch}: train loss {losses[-1]:.4f} test loss {test_losses[-1]:.4f} '
                  f'accuracy {accuracies[-1]:.3f} AUC {aucs[-1]:.3f} lr {scheduler.get_last_lr()[0]:.5f}')
    return {"losses": losses, "positive_fraction": positive_fraction, "test_losses": test_losses,
            "accuracy": accuracies, "auc": aucs, "running_var": model.bn_cont.running_var.tolist()}


if __name__ == '__main__':
    print(json.dumps(main()))
