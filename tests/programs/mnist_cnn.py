"""A convolutional digit classifier, trained the way pytorch/examples' mnist/main.py trains one.

Synthetic 14x14 "digits" (ten NumPy-drawn templates plus noise) stand in for MNIST, and the
network is that example's, narrowed: two convolutions, max pooling, dropout, log_softmax and
nll_loss, Adadelta with StepLR, and a test pass that counts correct predictions.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
import tensorplug.optim as optim
from tensorplug.optim.lr_scheduler import StepLR
from tensorplug.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, dropout1=0.25, dropout2=0.5):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(dropout1)
        self.dropout2 = nn.Dropout(dropout2)
        self.fc1 = nn.Linear(16 * 5 * 5, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def synthetic_digits(rng, count):
    """Ten fixed 14x14 templates; each sample is one of them plus Gaussian noise."""
    templates = np.random.default_rng(1234).uniform(0, 1, (10, 1, 14, 14))
    labels = rng.integers(0, 10, count)
    images = templates[labels] + 0.3 * rng.standard_normal((count, 1, 14, 14))
    images = (images - 0.5) / 0.5
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


def train(args, model, device, train_loader, optimizer, epoch, losses):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if batch_idx % args.log_interval == 0 and not args.quiet:
            print('Train Epoch: {} [{}/{}]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset), loss.item()))


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    return test_loss, correct


def main(argv=None):
    parser = argparse.ArgumentParser(description='MNIST-style example on synthetic digits')
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--epochs', type=int, default=2)
    parser.add_argument('--lr', type=float, default=1.0)
    parser.add_argument('--gamma', type=float, default=0.7)
    parser.add_argument('--dropout', type=float, default=None,
                        help='one rate for both dropout layers (default: 0.25 and 0.5)')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--log-interval', type=int, default=2)
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
    train_set = TensorDataset(*synthetic_digits(rng, 128))
    test_set = TensorDataset(*synthetic_digits(rng, 64))
    train_loader = DataLoader(train_set, batch_size=args.batch_size)
    test_loader = DataLoader(test_set, batch_size=64)

    if args.dropout is None:
        model = Net()
    else:
        model = Net(args.dropout, args.dropout)
    init_from_numpy(model, args.seed)
    model = model.to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)

    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    losses, test_losses, accuracy = [], [], []
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch, losses)
        test_loss, correct = test(model, device, test_loader)
        test_losses.append(test_loss)
        accuracy.append(correct / len(test_loader.dataset))
        if not args.quiet:
            print('Test set: Average loss: {:.4f}, Accuracy: {}/{}'.format(
                test_loss, correct, len(test_loader.dataset)))
        scheduler.step()
    return {"losses": losses, "test_loss": test_losses, "accuracy": accuracy}


if __name__ == '__main__':
    print(json.dumps(main()))
