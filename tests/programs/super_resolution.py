"""Sub-pixel convolution super-resolution, trained the way pytorch/examples' super_resolution does.

The example's Net (four convolutions, orthogonal init scaled by calculate_gain('relu'), and
nn.PixelShuffle to rearrange channels into a larger image), trained with MSELoss and Adam and
tested by PSNR; the trained weights are checkpointed with torch.save(state_dict) and loaded into
a fresh model, whose PSNR must be the same. The images are synthetic: smooth NumPy-drawn fields,
with the low-resolution inputs made by averaging blocks of the targets.
"""
import argparse
import json
import os
import tempfile
from math import log10

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.init as init
import tensorplug.optim as optim
from tensorplug.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, upscale_factor):
        super(Net, self).__init__()

        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 16, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(16, 16, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(16, 8, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(8, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv2.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv3.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv4.weight)


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


def image_pairs(rng, count, size=16, factor=2):
    """(low-resolution input, high-resolution target) pairs of smooth images in [0, 1]."""
    grid = np.linspace(0, 1, size)
    targets = np.empty((count, 1, size, size))
    for target in targets:
        fx, fy, phase = rng.uniform(0.5, 2.5), rng.uniform(0.5, 2.5), rng.uniform(0, 6.3)
        target[0] = 0.5 + 0.4 * np.sin(2 * np.pi * (fx * grid[:, None] + fy * grid[None, :]) + phase)
    inputs = targets.reshape(count, 1, size // factor, factor, size // factor, factor).mean(axis=(3, 5))
    return torch.from_numpy(inputs.astype(np.float32)), torch.from_numpy(targets.astype(np.float32))


def main(argv=None):
    parser = argparse.ArgumentParser(description='super-resolution on synthetic images')
    parser.add_argument('--upscale_factor', type=int, default=2, help="super resolution upscale factor")
    parser.add_argument('--batchSize', type=int, default=8, help='training batch size')
    parser.add_argument('--testBatchSize', type=int, default=8, help='testing batch size')
    parser.add_argument('--nEpochs', type=int, default=3, help='number of epochs to train for')
    parser.add_argument('--lr', type=float, default=0.01, help='Learning Rate. Default=0.01')
    parser.add_argument('--seed', type=int, default=123, help='random seed to use. Default=123')
    parser.add_argument('--device', default=None, help='default: the accelerator if any, else cpu')
    parser.add_argument('--quiet', action='store_true')
    opt = parser.parse_args(argv)

    torch.manual_seed(opt.seed)
    if opt.device is not None:
        device = torch.device(opt.device)
    elif torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    rng = np.random.default_rng(opt.seed)
    training_data_loader = DataLoader(TensorDataset(*image_pairs(rng, 24, factor=opt.upscale_factor)),
                                      batch_size=opt.batchSize)
    testing_data_loader = DataLoader(TensorDataset(*image_pairs(rng, 8, factor=opt.upscale_factor)),
                                     batch_size=opt.testBatchSize)

    model = Net(upscale_factor=opt.upscale_factor)
    init_from_numpy(model, opt.seed)
    model = model.to(device)
    criterion = nn.MSELoss()
    optimizer = optim.Adam(model.parameters(), lr=opt.lr)

    def train(epoch, losses):
        epoch_loss = 0
        for iteration, batch in enumerate(training_data_loader, 1):
            input, target = batch[0].to(device), batch[1].to(device)

            optimizer.zero_grad()
            loss = criterion(model(input), target)
            epoch_loss += loss.item()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        if not opt.quiet:
            print("===> Epoch {} Complete: Avg. Loss: {:.4f}".format(epoch, epoch_loss / len(training_data_loader)))

    def test(net):
        avg_psnr = 0
        with torch.no_grad():
            for batch in testing_data_loader:
                input, target = batch[0].to(device), batch[1].to(device)
                prediction = net(input)
                mse = criterion(prediction, target)
                psnr = 10 * log10(1 / mse.item())
                avg_psnr += psnr
        return avg_psnr / len(testing_data_loader)

    losses, psnrs = [], []
    for epoch in range(1, opt.nEpochs + 1):
        train(epoch, losses)
        psnrs.append(test(model))
        if not opt.quiet:
            print("===> Avg. PSNR: {:.4f} dB".format(psnrs[-1]))

    with tempfile.TemporaryDirectory() as folder:
        model_out_path = os.path.join(folder, "model_epoch_{}.pth".format(opt.nEpochs))
        torch.save(model.state_dict(), model_out_path)
        restored = Net(upscale_factor=opt.upscale_factor)
        restored.load_state_dict(torch.load(model_out_path, map_location="cpu"))
    restored_psnr = test(restored.to(device))
    return {"losses": losses, "psnr": psnrs, "restored_psnr": [restored_psnr]}


if __name__ == '__main__':
    print(json.dumps(main()))
