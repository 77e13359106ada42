"""A raw-waveform audio classifier, written the way PyTorch's tutorial "Speech Command
Classification with torchaudio" writes its M5 network and training loop.

Synthetic clips stand in for speech commands: each class is a pair of tones with its own pitch
glide, of slightly varying length, with noise. The tutorial's `collate_fn` pads them with
`torch.nn.utils.rnn.pad_sequence(batch, batch_first=True, padding_value=0.)` after transposing
each (channels, time) clip to (time, channels), and stacks the labels with `torch.stack`. M5 is
a stack of `nn.Conv1d` (a wide strided first layer; no bias before a norm), `nn.BatchNorm1d` and `nn.MaxPool1d` layers,
then `F.avg_pool1d(x, x.shape[-1])`, `permute(0, 2, 1)`, a Linear and `F.log_softmax(x, dim=2)`;
the loss is `F.nll_loss(output.squeeze(), target)`. Adam with weight decay and `StepLR` train
it; the test counts `pred.squeeze().eq(target).sum().item()` of `tensor.argmax(dim=-1)`. A
second head on `nn.AdaptiveAvgPool1d(1)` features must give the same pooled features as the
tutorial's `avg_pool1d`.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
import tensorplug.optim as optim
from tensorplug.utils.data import DataLoader, Dataset

SAMPLE_RATE = 4000
LABELS = ["down", "go", "left", "no", "right", "up"]


class SyntheticCommands(Dataset):
    def __init__(self, rng, count):
        self.items = []
        for _ in range(count):
            label = int(rng.integers(0, len(LABELS)))
            # Clips differ by under 40 samples (the first kernel's width): a longer zero padding
            # makes runs of equal activations, whose max-pool ties are broken by last-place
            # rounding differences, so two libraries would send gradients to different positions.
            length = int(rng.integers(SAMPLE_RATE // 4, SAMPLE_RATE // 4 + 40))
            t = np.arange(length) / SAMPLE_RATE
            base = 200.0 + 90.0 * label
            glide = (1.0 if label % 2 else -1.0) * 150.0 * t
            wave = np.sin(2 * np.pi * (base + glide) * t) + 0.5 * np.sin(2 * np.pi * 2.5 * base * t)
            wave = wave * np.hanning(length) + 0.3 * rng.standard_normal(length)
            self.items.append((torch.from_numpy(wave[None, :].astype(np.float32)), LABELS[label]))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, n):
        waveform, label = self.items[n]
        return waveform, SAMPLE_RATE, label


def label_to_index(word):
    return torch.tensor(LABELS.index(word))


def index_to_label(index):
    return LABELS[index]


def pad_sequence(batch):
    batch = [item.t() for item in batch]
    batch = torch.nn.utils.rnn.pad_sequence(batch, batch_first=True, padding_value=0.)
    return batch.permute(0, 2, 1)


def collate_fn(batch):
    tensors, targets = [], []
    for waveform, _, label in batch:
        tensors += [waveform]
        targets += [label_to_index(label)]
    tensors = pad_sequence(tensors)
    targets = torch.stack(targets)
    return tensors, targets


class M5(nn.Module):
    def __init__(self, n_input=1, n_output=35, stride=8, n_channel=16):
        super().__init__()
        # No bias before BatchNorm (as torchvision's convolutions): BatchNorm cancels it, so its
        # gradient is rounding noise, which Adam would scale up to full-size steps.
        self.conv1 = nn.Conv1d(n_input, n_channel, kernel_size=40, stride=stride, bias=False)
        self.bn1 = nn.BatchNorm1d(n_channel)
        self.pool1 = nn.MaxPool1d(4)
        self.conv2 = nn.Conv1d(n_channel, n_channel, kernel_size=3, bias=False)
        self.bn2 = nn.BatchNorm1d(n_channel)
        self.pool2 = nn.MaxPool1d(4)
        self.conv3 = nn.Conv1d(n_channel, 2 * n_channel, kernel_size=3, bias=False)
        self.bn3 = nn.BatchNorm1d(2 * n_channel)
        self.pool3 = nn.MaxPool1d(2)
        self.adaptive_pool = nn.AdaptiveAvgPool1d(1)
        self.fc1 = nn.Linear(2 * n_channel, n_output)

    def features(self, x):
        x = self.pool1(F.relu(self.bn1(self.conv1(x))))
        x = self.pool2(F.relu(self.bn2(self.conv2(x))))
        return self.pool3(F.relu(self.bn3(self.conv3(x))))

    def forward(self, x):
        x = self.features(x)
        x = F.avg_pool1d(x, x.shape[-1])
        x = x.permute(0, 2, 1)
        x = self.fc1(x)
        return F.log_softmax(x, dim=2)


def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def number_of_correct(pred, target):
    return pred.squeeze().eq(target).sum().item()


def get_likely_index(tensor):
    return tensor.argmax(dim=-1)


def init_from_numpy(model, seed):
    """Give every Conv1d and Linear PyTorch's default bound 1/sqrt(fan_in), drawn by NumPy;
    BatchNorm keeps its ones and zeros."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Conv1d, nn.Linear)):
                bound = 1.0 / np.sqrt(module.weight[0].numel())
                for p in (module.weight, module.bias):
                    if p is None:
                        continue
                    p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='M5 on synthetic speech commands')
    parser.add_argument('--batch-size', type=int, default=16)
    parser.add_argument('--epochs', type=int, default=2)
    parser.add_argument('--train-size', type=int, default=64)
    parser.add_argument('--lr', type=float, default=0.01)
    parser.add_argument('--seed', type=int, default=3)
    parser.add_argument('--device', default=None, help='default: cuda if available, else cpu')
    parser.add_argument('--quiet', action='store_true')
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu") if args.device is None else torch.device(args.device)
    if device.type == "cuda":
        num_workers, pin_memory = 1, True
    else:
        num_workers, pin_memory = 0, False

    rng = np.random.default_rng(args.seed)
    train_set, test_set = SyntheticCommands(rng, args.train_size), SyntheticCommands(rng, 48)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=False, drop_last=False,
                              collate_fn=collate_fn, num_workers=num_workers, pin_memory=pin_memory)
    test_loader = DataLoader(test_set, batch_size=args.batch_size, shuffle=False, drop_last=False,
                             collate_fn=collate_fn, num_workers=num_workers, pin_memory=pin_memory)

    waveform, sample_rate, label = train_set[0]
    model = M5(n_input=waveform.shape[0], n_output=len(LABELS))
    init_from_numpy(model, args.seed)
    model.to(device)
    if not args.quiet:
        print(f"Number of parameters: {count_parameters(model)}")
    optimizer = optim.Adam(model.parameters(), lr=args.lr, weight_decay=0.0001)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)

    losses, test_accuracy, test_losses = [], [], []
    for epoch in range(1, args.epochs + 1):
        model.train()
        for data, target in train_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            loss = F.nll_loss(output.squeeze(), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()

        model.eval()
        correct, total_loss = 0, 0.0
        with torch.no_grad():
            for data, target in test_loader:
                data, target = data.to(device), target.to(device)
                output = model(data)
                total_loss += F.nll_loss(output.squeeze(), target, reduction='sum').item()
                pred = get_likely_index(output)
                correct += number_of_correct(pred, target)
                features = model.features(data)
                tutorial_pool = F.avg_pool1d(features, features.shape[-1])
                adaptive_pool = model.adaptive_pool(features)
                assert (tutorial_pool - adaptive_pool).abs().max().item() < 1e-5
        test_accuracy.append(correct / len(test_set))
        test_losses.append(total_loss / len(test_set))
        if not args.quiet:
            print(f"Test Epoch: {epoch}\tAccuracy: {correct}/{len(test_set)} ({100. * correct / len(test_set):.0f}%)")

    with torch.no_grad():
        probe, _ = collate_fn([test_set[0]])
        predicted = index_to_label(get_likely_index(model(probe.to(device))).squeeze().item())
    return {"losses": losses, "test_loss": test_losses, "test_accuracy": test_accuracy,
            "running_mean": model.bn1.running_mean.tolist(), "predicted": predicted}


if __name__ == '__main__':
    print(json.dumps(main()))
