"""A ResNet-18-style CIFAR classifier, built and trained the way torchvision's resnet and the
common CIFAR training scripts build and train one.

Synthetic 16x16 three-channel "images" (ten NumPy-drawn class templates plus noise) stand in for
CIFAR-10. The network is ResNet-18's layout, narrowed and shortened: a 3x3 stem, four stages of
BasicBlocks whose first block down-samples through a 1x1 convolution + BatchNorm2d shortcut,
AdaptiveAvgPool2d and a linear head; convolutions get `kaiming_normal_(mode="fan_out",
nonlinearity="relu")`, BatchNorm weights 1 and biases 0. Training uses label-smoothed cross
entropy, SGD with Nesterov momentum and weight decay, and MultiStepLR; evaluation runs in eval
mode (running statistics) under `torch.no_grad()`.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.optim.lr_scheduler import MultiStepLR
from tensorplug.utils.data import DataLoader, TensorDataset


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=10, width=8):
        super().__init__()
        self.inplanes = width
        # CIFAR stem: one 3x3 convolution, no 7x7 and no max pooling on such small images.
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, width * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(block, width * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(block, width * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8 * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.fc(x)
        return x


def resnet18_narrow(num_classes=10, width=8, blocks_per_stage=1):
    """ResNet-18 has two BasicBlocks per stage; one keeps this program fast."""
    return ResNet(BasicBlock, [blocks_per_stage] * 4, num_classes=num_classes, width=width)


def synthetic_cifar(rng, count, classes=10):
    templates = np.random.default_rng(77).uniform(-1, 1, (classes, 3, 16, 16))
    labels = rng.integers(0, classes, count)
    images = templates[labels] + 0.7 * rng.standard_normal((count, 3, 16, 16))
    return torch.from_numpy(images.astype(np.float32)), torch.from_numpy(labels.astype(np.int64))


def init_from_numpy(model, seed):
    """Give every randomly initialised parameter a NumPy-drawn value, so that any library starts
    from the same weights: kaiming-normal (fan_out) convolutions as the model's own init, uniform
    linear layers; constant ones (BatchNorm's ones and zeros) stay."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.numel() > 1 and p.min().item() == p.max().item():
                continue
            if p.dim() == 4:
                fan_out = p.shape[0] * p.shape[2] * p.shape[3]
                values = rng.standard_normal(tuple(p.shape)) * np.sqrt(2.0 / fan_out)
            else:
                fan_in = p.shape[1] if p.dim() > 1 else p.numel()
                bound = 1.0 / np.sqrt(fan_in)
                values = rng.uniform(-bound, bound, tuple(p.shape))
            p.copy_(torch.from_numpy(values.astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='a narrow ResNet-18 on synthetic CIFAR-like images')
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--epochs', type=int, default=3)
    parser.add_argument('--lr', type=float, default=0.05)
    parser.add_argument('--momentum', type=float, default=0.9)
    parser.add_argument('--weight-decay', type=float, default=5e-4)
    parser.add_argument('--label-smoothing', type=float, default=0.1)
    parser.add_argument('--seed', type=int, default=3)
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
    train_loader = DataLoader(TensorDataset(*synthetic_cifar(rng, 64)), batch_size=args.batch_size)
    test_loader = DataLoader(TensorDataset(*synthetic_cifar(rng, 48)), batch_size=48)

    model = resnet18_narrow()
    init_from_numpy(model, args.seed)
    model = model.to(device)
    criterion = nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                                weight_decay=args.weight_decay, nesterov=True)
    scheduler = MultiStepLR(optimizer, milestones=[1, 2], gamma=0.2)

    losses, lrs, test_losses, accuracy, running_mean = [], [], [], [], []
    for epoch in range(args.epochs):
        model.train()
        for images, target in train_loader:
            images, target = images.to(device, non_blocking=True), target.to(device, non_blocking=True)
            output = model(images)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            lrs.append(optimizer.param_groups[0]['lr'])
        scheduler.step()
        model.eval()
        test_loss, correct = 0.0, 0
        with torch.no_grad():
            for images, target in test_loader:
                images, target = images.to(device), target.to(device)
                output = model(images)
                test_loss += F.cross_entropy(output, target, reduction='sum').item()
                _, predicted = output.max(1)
                correct += predicted.eq(target).sum().item()
        test_losses.append(test_loss / len(test_loader.dataset))
        accuracy.append(100.0 * correct / len(test_loader.dataset))
        running_mean.append(model.layer4[0].bn2.running_mean.abs().mean().item())
        if not args.quiet:
            print(f'epoch {epoch}: loss {losses[-1]:.4f} lr {lrs[-1]:.4f} test loss {test_losses[-1]:.4f} '
                  f'acc {accuracy[-1]:.1f}%')
    return {"losses": losses, "lr": lrs, "test_loss": test_losses, "accuracy": accuracy,
            "running_mean": running_mean}


if __name__ == '__main__':
    print(json.dumps(main()))
