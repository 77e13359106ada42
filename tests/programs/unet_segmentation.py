"""A U-Net binary segmentation model, built the way the popular PyTorch U-Net implementations build
one and trained with BCE + Dice loss.

Synthetic 3-channel 18x18 images, each holding a few NumPy-drawn bright discs on a noisy
background, stand in for a segmentation dataset; the mask marks the discs. The network is U-Net
at a toy width and two levels deep: DoubleConv (Conv-BN-ReLU twice), MaxPool2d down-sampling, ConvTranspose2d
up-sampling (or bilinear `F.interpolate(scale_factor=2, align_corners=False)` with `--bilinear`),
`F.pad` to fix up odd sizes (18 -> 9 -> 4 leaves the decoder one pixel short) before
`torch.cat` of the skip connection, and a 1x1 output convolution giving logits. Training uses
`BCEWithLogitsLoss` plus a soft Dice loss on `sigmoid` probabilities, AdamW; evaluation reports
the hard Dice score and pixel accuracy of `logits > 0`.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.utils.data import DataLoader, TensorDataset


class DoubleConv(nn.Module):
    """(convolution => [BN] => ReLU) * 2"""

    def __init__(self, in_channels, out_channels, mid_channels=None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    """Downscaling with maxpool then double conv"""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_channels, out_channels))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    """Upscaling then double conv"""

    def __init__(self, in_channels, out_channels, bilinear=False):
        super().__init__()
        self.bilinear = bilinear
        if bilinear:
            self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
        else:
            self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        if self.bilinear:
            x1 = F.interpolate(x1, scale_factor=2, mode="bilinear", align_corners=False)
        else:
            x1 = self.up(x1)
        # input is CHW; pad the up-sampled map to the skip connection's size
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class OutConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1)

    def forward(self, x):
        return self.conv(x)


class UNet(nn.Module):
    def __init__(self, n_channels=3, n_classes=1, width=4, bilinear=False):
        super().__init__()
        self.n_channels = n_channels
        self.n_classes = n_classes
        factor = 2 if bilinear else 1
        self.inc = DoubleConv(n_channels, width)
        self.down1 = Down(width, width * 2)
        self.down2 = Down(width * 2, width * 4 // factor)
        self.up1 = Up(width * 4, width * 2 // factor, bilinear)
        self.up2 = Up(width * 2, width, bilinear)
        self.outc = OutConv(width, n_classes)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        logits = self.outc(x)
        return logits


def dice_coeff(input, target, reduce_batch_first=False, epsilon=1e-6):
    """Average Dice coefficient over the batch (or over everything at once)."""
    assert input.size() == target.size()
    sum_dim = (-1, -2) if input.dim() == 2 or not reduce_batch_first else (-1, -2, -3)
    inter = 2 * (input * target).sum(dim=sum_dim)
    sets_sum = input.sum(dim=sum_dim) + target.sum(dim=sum_dim)
    sets_sum = torch.where(sets_sum == 0, inter, sets_sum)
    dice = (inter + epsilon) / (sets_sum + epsilon)
    return dice.mean()


def dice_loss(input, target):
    return 1 - dice_coeff(input, target, reduce_batch_first=True)


def synthetic_discs(rng, count, size=18):
    """Images with two to four bright discs on noise; the mask is 1 inside the discs."""
    yy, xx = np.mgrid[0:size, 0:size]
    images = np.empty((count, 3, size, size))
    masks = np.zeros((count, 1, size, size))
    for i in range(count):
        for _ in range(rng.integers(2, 5)):
            cy, cx = rng.uniform(3, size - 3, 2)
            radius = rng.uniform(2, 4)
            masks[i, 0][(yy - cy) ** 2 + (xx - cx) ** 2 <= radius ** 2] = 1.0
        colour = rng.uniform(0.5, 1.0, (3, 1, 1))
        images[i] = masks[i] * colour + 0.4 * rng.standard_normal((3, size, size))
    return torch.from_numpy(images.astype(np.float32)), torch.from_numpy(masks.astype(np.float32))


def init_from_numpy(model, seed):
    """Give every randomly initialised parameter a NumPy-drawn value, so that any library starts
    from the same weights: uniform within 1/sqrt(fan_in), PyTorch's default bound; constant ones
    (BatchNorm's ones and zeros) stay."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.numel() > 1 and p.min().item() == p.max().item():
                continue
            if p.dim() > 1:
                # ConvTranspose2d weights are (in, out, kH, kW): their fan-in is out * kH * kW.
                fan_in = p[0].numel()
            else:
                fan_in = p.numel()
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='a toy U-Net on synthetic discs')
    parser.add_argument('--batch-size', type=int, default=8)
    parser.add_argument('--epochs', type=int, default=3)
    parser.add_argument('--lr', type=float, default=3e-3)
    parser.add_argument('--weight-decay', type=float, default=1e-4)
    parser.add_argument('--bilinear', action='store_true', help='up-sample with interpolation, not ConvTranspose2d')
    parser.add_argument('--seed', type=int, default=21)
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
    train_loader = DataLoader(TensorDataset(*synthetic_discs(rng, 24)), batch_size=args.batch_size)
    val_loader = DataLoader(TensorDataset(*synthetic_discs(rng, 8)), batch_size=8)

    model = UNet(n_channels=3, n_classes=1, bilinear=args.bilinear)
    init_from_numpy(model, args.seed)
    model = model.to(device=device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    criterion = nn.BCEWithLogitsLoss()

    losses, bce_losses, val_dice, val_accuracy = [], [], [], []
    for epoch in range(args.epochs):
        model.train()
        for images, true_masks in train_loader:
            images = images.to(device=device, dtype=torch.float32)
            true_masks = true_masks.to(device=device, dtype=torch.float32)
            masks_pred = model(images)
            bce = criterion(masks_pred, true_masks)
            loss = bce + dice_loss(F.sigmoid(masks_pred), true_masks)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            bce_losses.append(bce.item())
        model.eval()
        dice_score, correct, total = 0.0, 0, 0
        with torch.no_grad():
            for images, true_masks in val_loader:
                images, true_masks = images.to(device), true_masks.to(device)
                mask_pred = (model(images) > 0).float()
                dice_score += dice_coeff(mask_pred, true_masks, reduce_batch_first=False).item()
                correct += (mask_pred == true_masks).sum().item()
                total += true_masks.numel()
        val_dice.append(dice_score / len(val_loader))
        val_accuracy.append(correct / total)
        if not args.quiet:
            print(f'epoch {epoch}: loss {losses[-1]:.4f} validation Dice {val_dice[-1]:.4f} '
                  f'pixel accuracy {val_accuracy[-1]:.4f}')
    return {"losses": losses, "bce": bce_losses, "val_dice": val_dice, "val_accuracy": val_accuracy}


if __name__ == '__main__':
    print(json.dumps(main()))
