"""SimCLR-style contrastive representation learning, written the way the public SimCLR
implementations write the NT-Xent (InfoNCE) loss, then checked with a linear probe.

Synthetic 12x12 single-channel "images" (six NumPy-drawn class templates plus noise) stand in for
a dataset. Each batch gets two augmented views made with tensor ops: a random horizontal flip
(`torch.where` on a per-sample mask with `flip(-1)`), a random shift (`torch.roll`) and brightness
jitter; the flip and shift choices and the jitter come from NumPy. A small conv encoder and an MLP (Linear-BatchNorm1d-ReLU-Linear)
projection head map both views; the loss L2-normalises the projections (`F.normalize`), builds the
2N x 2N cosine-similarity matrix, masks its diagonal with `masked_fill(mask, -9e15)` (self
similarity must never be a candidate), divides by the temperature and scores each row's positive
(the other view, found with `torch.arange` and `roll`) with `F.cross_entropy`; the view-retrieval
metric builds the same matrix with `F.cosine_similarity` and `fill_diagonal_(-inf)`, and the loss is
checked against the other common formulation (`torch.diag(sim, +-N)` positives, negatives through a
`torch.ones((2N, 2N), dtype=bool)` mask). Plain SGD with
momentum trains it (no LARS). A linear probe on the frozen encoder's features then reports how
well the representation separates the classes, with the top-1 accuracy of the contrastive task.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F


class Encoder(nn.Module):
    def __init__(self, feature_dim=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(2),
        )
        self.fc = nn.Linear(16 * 2 * 2, feature_dim)

    def forward(self, x):
        return self.fc(torch.flatten(self.net(x), 1))


class SimCLR(nn.Module):
    def __init__(self, feature_dim=32, projection_dim=16):
        super().__init__()
        self.encoder = Encoder(feature_dim)
        self.projector = nn.Sequential(nn.Linear(feature_dim, feature_dim), nn.BatchNorm1d(feature_dim), nn.ReLU(),
                                       nn.Linear(feature_dim, projection_dim))

    def forward(self, x):
        h = self.encoder(x)
        return h, self.projector(h)


def info_nce_loss(features, batch_size, temperature):
    """NT-Xent over 2N projections: row i's positive is its other view; every other row but
    itself is a negative. Returns the loss and the share of rows whose positive ranks first."""
    features = F.normalize(features, dim=1)
    similarity = torch.matmul(features, features.T) / temperature
    self_mask = torch.eye(2 * batch_size, dtype=torch.bool, device=features.device)
    similarity = similarity.masked_fill(self_mask, -9e15)
    labels = torch.arange(2 * batch_size, device=features.device).roll(batch_size)
    loss = F.cross_entropy(similarity, labels)
    top1 = (similarity.argmax(dim=1) == labels).float().mean()
    return loss, top1


def nt_xent_by_masks(projections, batch_size, temperature):
    """The same loss as the other common implementations write it: positives from the two
    off-diagonals (`torch.diag(sim, +-N)`), negatives picked with an (2N, 2N) `dtype=bool` mask,
    and the positive in column 0 of each row's logits."""
    n = 2 * batch_size
    z = F.normalize(projections, dim=1)
    sim = torch.mm(z, z.T) / temperature
    positives = torch.cat((torch.diag(sim, batch_size), torch.diag(sim, -batch_size)), dim=0).reshape(n, 1)
    mask = torch.ones((n, n), dtype=bool, device=z.device).fill_diagonal_(0)
    for i in range(batch_size):
        mask[i, batch_size + i] = 0
        mask[batch_size + i, i] = 0
    negatives = sim[mask].reshape(n, -1)
    logits = torch.cat((positives, negatives), dim=1)
    labels = torch.zeros(n, device=z.device).long()
    return nn.CrossEntropyLoss(reduction="sum")(logits, labels) / n


def view_retrieval_top1(projections, batch_size):
    """The share of views whose nearest other view (by cosine similarity) is their partner:
    the evaluation form, with the diagonal filled in place."""
    similarity = F.cosine_similarity(projections.unsqueeze(1), projections.unsqueeze(0), dim=2)
    similarity.fill_diagonal_(-float('inf'))
    partner = torch.arange(2 * batch_size, device=projections.device).roll(batch_size)
    return (similarity.argmax(dim=1) == partner).float().mean()


def augment(images, rng):
    """One random view per image: horizontal flip, a shift of up to two pixels, brightness."""
    batch = images.shape[0]
    flip = torch.from_numpy(rng.random(batch) < 0.5).to(images.device).view(-1, 1, 1, 1)
    views = torch.where(flip, images.flip(-1), images)
    shifts = rng.integers(-2, 3, (batch, 2))
    views = torch.stack([torch.roll(view, shifts=(int(dy), int(dx)), dims=(-2, -1))
                         for view, (dy, dx) in zip(views, shifts)])
    brightness = torch.from_numpy(rng.uniform(0.8, 1.2, (batch, 1, 1, 1)).astype(np.float32)).to(images.device)
    return views * brightness


def synthetic_images(rng, count, classes=6):
    templates = np.random.default_rng(4321).uniform(-1, 1, (classes, 1, 12, 12))
    labels = rng.integers(0, classes, count)
    images = templates[labels] + 0.3 * rng.standard_normal((count, 1, 12, 12))
    return torch.from_numpy(images.astype(np.float32)), torch.from_numpy(labels.astype(np.int64))


def init_from_numpy(model, seed):
    """Give every parameter a NumPy-drawn value within PyTorch's default bound 1/sqrt(fan_in)."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1 and p.numel() > 1 and p.min().item() == p.max().item():
                continue  # BatchNorm1d ones and zeros
            fan_in = p[0].numel() if p.dim() > 1 else p.numel()
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def linear_probe(encoder, images, labels, device, steps, classes=6):
    """Train a linear classifier on frozen features; its final loss and training accuracy."""
    encoder.eval()
    with torch.no_grad():
        features = encoder(images.to(device))
    labels = labels.to(device)
    probe = nn.Linear(features.shape[1], classes).to(device)
    with torch.no_grad():
        probe.weight.zero_()
        probe.bias.zero_()
    optimizer = torch.optim.Adam(probe.parameters(), lr=0.05)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(probe(features), labels)
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        accuracy = (probe(features).argmax(1) == labels).float().mean().item()
    return loss.item(), accuracy


def main(argv=None):
    parser = argparse.ArgumentParser(description='SimCLR on synthetic images')
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--epochs', type=int, default=3)
    parser.add_argument('--lr', type=float, default=0.1)
    parser.add_argument('--temperature', type=float, default=0.5)
    parser.add_argument('--probe-steps', type=int, default=20)
    parser.add_argument('--seed', type=int, default=14)
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
    images, labels = synthetic_images(rng, 96)
    model = SimCLR()
    init_from_numpy(model, args.seed)
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)

    losses, top1, retrieval, mask_losses = [], [], [], []
    for epoch in range(args.epochs):
        model.train()
        for start in range(0, len(images), args.batch_size):
            batch = images[start:start + args.batch_size].to(device)
            views = torch.cat([augment(batch, rng), augment(batch, rng)], dim=0)
            _, projections = model(views)
            loss, accuracy = info_nce_loss(projections, batch.shape[0], args.temperature)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            top1.append(accuracy.item())
            with torch.no_grad():
                retrieval.append(view_retrieval_top1(projections, batch.shape[0]).item())
                mask_losses.append(nt_xent_by_masks(projections, batch.shape[0], args.temperature).item())
        if not args.quiet:
            print(f'epoch {epoch}: loss {losses[-1]:.4f} contrastive top-1 {top1[-1]:.3f}')

    probe_loss, probe_accuracy = linear_probe(model.encoder, images, labels, device, args.probe_steps)
    if not args.quiet:
        print(f'linear probe: loss {probe_loss:.4f} accuracy {probe_accuracy:.3f}')
    assert all(abs(a - b) <= 1e-5 * abs(a) for a, b in zip(losses, mask_losses)), (losses, mask_losses)
    return {"losses": losses, "top1": top1, "retrieval_top1": retrieval, "mask_losses": mask_losses, "probe_loss": probe_loss, "probe_accuracy": probe_accuracy}


if __name__ == '__main__':
    print(json.dumps(main()))
