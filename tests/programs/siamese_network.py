"""A siamese network that tells whether two images show the same class, as pytorch/examples'
siamese_network/main.py does, with a small convolutional tower instead of a ResNet.

A Dataset subclass builds image pairs (half of the same class, half not) and returns
(image_1, image_2, target) from __getitem__; a DataLoader batches them with the default collate.
The two images go through one shared tower (forward_once), their features are concatenated and
a Linear + Sigmoid head gives the probability of "same", trained with BCELoss, Adadelta and StepLR.
The images are synthetic: ten NumPy-drawn 12x12 templates plus noise.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
import tensorplug.optim as optim
from tensorplug.optim.lr_scheduler import StepLR
from tensorplug.utils.data import DataLoader, Dataset


class SiameseNetwork(nn.Module):
    def __init__(self):
        super(SiameseNetwork, self).__init__()
        self.tower = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((1, 1)),
        )
        self.fc_in_features = 16
        # add linear layers to compare between the features of the two images
        self.fc = nn.Sequential(
            nn.Linear(self.fc_in_features * 2, 32),
            nn.ReLU(inplace=True),
            nn.Linear(32, 1),
        )
        self.sigmoid = nn.Sigmoid()

    def forward_once(self, x):
        output = self.tower(x)
        output = output.view(output.size()[0], -1)
        return output

    def forward(self, input1, input2):
        # get two images' features
        output1 = self.forward_once(input1)
        output2 = self.forward_once(input2)
        # concatenate both images' features
        output = torch.cat((output1, output2), 1)
        # pass the concatenation to the linear layers
        output = self.fc(output)
        # pass the out of the linear layers to sigmoid layer
        output = self.sigmoid(output)
        return output


class PairDataset(Dataset):
    """Pairs of images with target 1 when both show the same class, 0 otherwise."""

    def __init__(self, rng, count):
        templates = np.random.default_rng(77).uniform(0, 1, (10, 1, 12, 12))
        labels = rng.integers(0, 10, 2 * count)
        self.images = (templates[labels] + 0.4 * rng.standard_normal((2 * count, 1, 12, 12))).astype(np.float32)
        self.labels = labels
        self.pairs = []
        for index in range(count):
            same_class = np.flatnonzero(labels == labels[index])
            other_class = np.flatnonzero(labels != labels[index])
            partner = rng.choice(same_class if index % 2 == 0 else other_class)
            self.pairs.append((index, int(partner)))

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, index):
        first, second = self.pairs[index]
        image_1 = torch.from_numpy(self.images[first])
        image_2 = torch.from_numpy(self.images[second])
        if self.labels[first] == self.labels[second]:
            target = torch.tensor(1, dtype=torch.float)
        else:
            target = torch.tensor(0, dtype=torch.float)
        return image_1, image_2, target


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


def train(model, device, train_loader, optimizer, losses):
    model.train()
    criterion = nn.BCELoss()
    for batch_idx, (images_1, images_2, targets) in enumerate(train_loader):
        images_1, images_2, targets = images_1.to(device), images_2.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = model(images_1, images_2).squeeze()
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    criterion = nn.BCELoss()
    with torch.no_grad():
        for (images_1, images_2, targets) in test_loader:
            images_1, images_2, targets = images_1.to(device), images_2.to(device), targets.to(device)
            outputs = model(images_1, images_2).squeeze()
            test_loss += criterion(outputs, targets).sum().item()  # sum up batch loss
            pred = torch.where(outputs > 0.5, 1, 0)  # get the index of the max log-probability
            correct += pred.eq(targets.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    return test_loss, correct


def main(argv=None):
    parser = argparse.ArgumentParser(description='Siamese network on synthetic image pairs')
    parser.add_argument('--batch-size', type=int, default=16)
    parser.add_argument('--epochs', type=int, default=2)
    parser.add_argument('--lr', type=float, default=1.0)
    parser.add_argument('--gamma', type=float, default=0.7)
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

    rng = np.random.default_rng(args.seed)
    train_loader = DataLoader(PairDataset(rng, 64), batch_size=args.batch_size)
    test_loader = DataLoader(PairDataset(rng, 32), batch_size=args.batch_size)

    model = SiameseNetwork()
    init_from_numpy(model, args.seed)
    model = model.to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)

    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    losses, test_losses, accuracy = [], [], []
    for epoch in range(1, args.epochs + 1):
        train(model, device, train_loader, optimizer, losses)
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
