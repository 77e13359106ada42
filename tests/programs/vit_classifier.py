"""A tiny Vision Transformer image classifier, written and trained the way ViT training scripts
(DeiT- and timm-style recipes) write and train one.

Synthetic 16x16 three-channel "images" (six NumPy-drawn class templates plus noise) stand in for a
dataset. The model cuts each image into 4x4 patches with a strided Conv2d, prepends a learnable
CLS token, adds a learnable positional embedding, and runs a pre-norm `nn.TransformerEncoder`
(batch_first, GELU); the CLS token's final LayerNorm feeds a linear head. Training uses
label-smoothed cross entropy, AdamW with weight decay on the weight matrices only, a linear-warmup
+ cosine learning-rate schedule through `LambdaLR`, and gradient clipping; evaluation runs under
`torch.no_grad()` and counts argmax hits and top-3 hits (the imagenet example's `accuracy`).
"""
import argparse
import json
import math

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.optim.lr_scheduler import LambdaLR
from tensorplug.utils.data import DataLoader, TensorDataset


class PatchEmbed(nn.Module):
    """Image to a sequence of patch embeddings: one strided convolution, then (B, N, D)."""

    def __init__(self, img_size=16, patch_size=4, in_chans=3, embed_dim=32):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        x = self.proj(x)  # (B, D, H/p, W/p)
        return x.flatten(2).transpose(1, 2)


class VisionTransformer(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, num_classes=6, embed_dim=32, depth=2,
                 num_heads=4, mlp_ratio=2.0, dropout=0.1):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim))
        self.pos_drop = nn.Dropout(p=dropout)
        encoder_layer = nn.TransformerEncoderLayer(
            d_model=embed_dim, nhead=num_heads, dim_feedforward=int(embed_dim * mlp_ratio), dropout=dropout,
            activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(encoder_layer, num_layers=depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)

        nn.init.trunc_normal_(self.pos_embed, std=.02)
        nn.init.trunc_normal_(self.cls_token, std=.02)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=.02)
            if m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.LayerNorm):
            nn.init.constant_(m.bias, 0)
            nn.init.constant_(m.weight, 1.0)

    def forward(self, x):
        x = self.patch_embed(x)
        cls_tokens = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls_tokens, x), dim=1)
        x = self.pos_drop(x + self.pos_embed)
        x = self.encoder(x)
        x = self.norm(x)
        return self.head(x[:, 0])


def synthetic_images(rng, count, classes=6):
    templates = np.random.default_rng(2024).uniform(-1, 1, (classes, 3, 16, 16))
    labels = rng.integers(0, classes, count)
    images = templates[labels] + 0.8 * rng.standard_normal((count, 3, 16, 16))
    return torch.from_numpy(images.astype(np.float32)), torch.from_numpy(labels.astype(np.int64))


def init_from_numpy(model, seed):
    """Give every randomly initialised parameter a NumPy-drawn value, so that any library
    starts from the same weights: truncated normals of std 0.02, as the model's own init;
    constant ones (zero biases, norm layers' ones and zeros) stay."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() > 1 and p.min().item() == p.max().item():
                continue
            values = np.clip(rng.standard_normal(tuple(p.shape)), -2.0, 2.0) * 0.02
            p.copy_(torch.from_numpy(values.astype(np.float32)))


def param_groups(model, weight_decay):
    """Weight decay on the weight matrices only: not on biases, norms, the CLS token or the
    positional embedding."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if p.ndim <= 1 or name in ('cls_token', 'pos_embed'):
            no_decay.append(p)
        else:
            decay.append(p)
    return [{'params': decay, 'weight_decay': weight_decay}, {'params': no_decay, 'weight_decay': 0.0}]


def topk_accuracy(output, target, topk=(1,)):
    """The share of samples, in percent, whose target is among the k highest scores, for each k."""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


def warmup_cosine(warmup_steps, total_steps):
    def lr_lambda(step):
        if step < warmup_steps:
            return float(step + 1) / float(warmup_steps)
        progress = float(step - warmup_steps) / float(max(1, total_steps - warmup_steps))
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    return lr_lambda


def main(argv=None):
    parser = argparse.ArgumentParser(description='a tiny ViT on synthetic images')
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--epochs', type=int, default=3)
    parser.add_argument('--lr', type=float, default=3e-3)
    parser.add_argument('--weight-decay', type=float, default=0.05)
    parser.add_argument('--warmup-steps', type=int, default=3)
    parser.add_argument('--label-smoothing', type=float, default=0.1)
    parser.add_argument('--clip-grad', type=float, default=1.0)
    parser.add_argument('--dropout', type=float, default=0.1)
    parser.add_argument('--seed', type=int, default=5)
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
    train_loader = DataLoader(TensorDataset(*synthetic_images(rng, 160)), batch_size=args.batch_size)
    test_loader = DataLoader(TensorDataset(*synthetic_images(rng, 64)), batch_size=32)

    model = VisionTransformer(dropout=args.dropout)
    init_from_numpy(model, args.seed)
    model.to(device)
    criterion = nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    optimizer = torch.optim.AdamW(param_groups(model, args.weight_decay), lr=args.lr, betas=(0.9, 0.999))
    total_steps = args.epochs * len(train_loader)
    scheduler = LambdaLR(optimizer, lr_lambda=warmup_cosine(args.warmup_steps, total_steps))

    losses, grad_norms, lrs, test_losses, accuracy, top3_accuracy = [], [], [], [], [], []
    for epoch in range(args.epochs):
        model.train()
        for images, target in train_loader:
            images, target = images.to(device), target.to(device)
            optimizer.zero_grad()
            output = model(images)
            loss = criterion(output, target)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad)
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
            grad_norms.append(grad_norm.item())
            lrs.append(scheduler.get_last_lr()[0])
        model.eval()
        test_loss, correct, top3 = 0.0, 0, 0.0
        with torch.no_grad():
            for images, target in test_loader:
                images, target = images.to(device), target.to(device)
                output = model(images)
                test_loss += F.cross_entropy(output, target, reduction='sum').item()
                pred = output.argmax(dim=-1)
                correct += (pred == target).sum().item()
                top3 += topk_accuracy(output, target, topk=(3,))[0].item() * target.size(0) / 100.0
        test_losses.append(test_loss / len(test_loader.dataset))
        accuracy.append(correct / len(test_loader.dataset))
        top3_accuracy.append(top3 / len(test_loader.dataset))
        if not args.quiet:
            print(f'epoch {epoch}: loss {losses[-1]:.4f}, lr {lrs[-1]:.2e}, test loss {test_losses[-1]:.4f}, '
                  f'accuracy {accuracy[-1]:.3f}')
    return {"losses": losses, "grad_norm": grad_norms, "lr": lrs, "test_loss": test_losses, "accuracy": accuracy,
            "top3_accuracy": top3_accuracy}


if __name__ == '__main__':
    print(json.dumps(main()))
