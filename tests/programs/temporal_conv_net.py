"""A temporal convolutional network on the adding problem, written the way locuslab's TCN
(Bai et al., "An Empirical Evaluation of Generic Convolutional and Recurrent Networks for Sequence
Modeling") writes it, with the current `weight_norm` parametrization.

TemporalBlocks of two dilated `nn.Conv1d`s (padding `(kernel_size - 1) * dilation`, dilations
1, 2, 4, ...) each wrapped in `nn.utils.parametrizations.weight_norm` and followed by `Chomp1d`
(`x[:, :, :-chomp_size].contiguous()`), ReLU and Dropout, a 1x1 `downsample` convolution on the
residual when the widths differ; the initial weights are assigned through the parametrization
(`conv.weight = tensor` under `no_grad`, which sets the magnitude and direction) where the
repository calls `weight.data.normal_(0, 0.01)`. A second formulation of the first convolution
pads on the left only with `F.pad(x, (left, 0))` and must give the same output; causality is
checked through autograd (the gradient of output step t with respect to inputs after t is zero,
to every input before it not). Adam trains with `clip_grad_norm_`,
evaluated on a held-out set under `no_grad`.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.nn.utils.parametrizations import weight_norm


class Chomp1d(nn.Module):
    def __init__(self, chomp_size):
        super(Chomp1d, self).__init__()
        self.chomp_size = chomp_size

    def forward(self, x):
        return x[:, :, :-self.chomp_size].contiguous()


class TemporalBlock(nn.Module):
    def __init__(self, n_inputs, n_outputs, kernel_size, stride, dilation, padding, dropout=0.2):
        super(TemporalBlock, self).__init__()
        self.conv1 = weight_norm(nn.Conv1d(n_inputs, n_outputs, kernel_size,
                                           stride=stride, padding=padding, dilation=dilation))
        self.chomp1 = Chomp1d(padding)
        self.relu1 = nn.ReLU()
        self.dropout1 = nn.Dropout(dropout)

        self.conv2 = weight_norm(nn.Conv1d(n_outputs, n_outputs, kernel_size,
                                           stride=stride, padding=padding, dilation=dilation))
        self.chomp2 = Chomp1d(padding)
        self.relu2 = nn.ReLU()
        self.dropout2 = nn.Dropout(dropout)

        self.net = nn.Sequential(self.conv1, self.chomp1, self.relu1, self.dropout1,
                                 self.conv2, self.chomp2, self.relu2, self.dropout2)
        self.downsample = nn.Conv1d(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
        self.relu = nn.ReLU()

    def init_weights(self, rng):
        def normal(shape):
            return torch.from_numpy(rng.normal(0, 0.01, tuple(shape)).astype(np.float32)).to(self.conv1.bias.device)

        with torch.no_grad():
            # assigning a weight-normed weight sets its magnitude and direction
            self.conv1.weight = normal(self.conv1.weight.shape)
            self.conv2.weight = normal(self.conv2.weight.shape)
        if self.downsample is not None:
            self.downsample.weight.data.copy_(normal(self.downsample.weight.shape))

    def forward(self, x):
        out = self.net(x)
        res = x if self.downsample is None else self.downsample(x)
        return self.relu(out + res)


class TemporalConvNet(nn.Module):
    def __init__(self, num_inputs, num_channels, kernel_size=2, dropout=0.2):
        super(TemporalConvNet, self).__init__()
        layers = []
        num_levels = len(num_channels)
        for i in range(num_levels):
            dilation_size = 2 ** i
            in_channels = num_inputs if i == 0 else num_channels[i-1]
            out_channels = num_channels[i]
            layers += [TemporalBlock(in_channels, out_channels, kernel_size, stride=1, dilation=dilation_size,
                                     padding=(kernel_size-1) * dilation_size, dropout=dropout)]

        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


class TCN(nn.Module):
    def __init__(self, input_size, output_size, num_channels, kernel_size, dropout):
        super(TCN, self).__init__()
        self.tcn = TemporalConvNet(input_size, num_channels, kernel_size=kernel_size, dropout=dropout)
        self.linear = nn.Linear(num_channels[-1], output_size)

    def init_weights(self, seed):
        rng = np.random.default_rng(seed)
        for block in self.tcn.network:
            block.init_weights(rng)
        with torch.no_grad():
            self.linear.weight.copy_(torch.from_numpy(rng.normal(0, 0.01, tuple(self.linear.weight.shape)).astype(np.float32)))
            for name, p in self.named_parameters():
                if name.endswith("bias"):
                    bound = 1.0 / np.sqrt(p.numel())
                    p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))

    def forward(self, x):
        y1 = self.tcn(x)
        return self.linear(y1[:, :, -1])


def causal_conv1d(conv, x):
    """The block's first convolution with explicit left padding instead of padding and chomping."""
    left = (conv.kernel_size[0] - 1) * conv.dilation[0]
    return F.conv1d(F.pad(x, (left, 0)), conv.weight, conv.bias, dilation=conv.dilation)


def data_generator(rng, N, seq_length):
    """The adding problem: channel 0 random in [0, 1], channel 1 marks two positions; target is
    the sum of the marked values."""
    X_num = rng.random((N, 1, seq_length))
    X_mask = np.zeros([N, 1, seq_length])
    Y = np.zeros([N, 1])
    for i in range(N):
        positions = rng.choice(seq_length, size=2, replace=False)
        X_mask[i, 0, positions[0]] = 1
        X_mask[i, 0, positions[1]] = 1
        Y[i, 0] = X_num[i, 0, positions[0]] + X_num[i, 0, positions[1]]
    X = np.concatenate((X_num, X_mask), axis=1)
    return torch.from_numpy(X.astype(np.float32)), torch.from_numpy(Y.astype(np.float32))


def main(argv=None):
    parser = argparse.ArgumentParser(description='Sequence Modeling - The Adding Problem')
    parser.add_argument('--batch_size', type=int, default=32)
    parser.add_argument('--dropout', type=float, default=0.05)
    parser.add_argument('--clip', type=float, default=1.0)
    parser.add_argument('--steps', type=int, default=10)
    parser.add_argument('--ksize', type=int, default=3)
    parser.add_argument('--levels', type=int, default=3)
    parser.add_argument('--seq_len', type=int, default=20)
    parser.add_argument('--lr', type=float, default=4e-3)
    parser.add_argument('--nhid', type=int, default=8)
    parser.add_argument('--seed', type=int, default=1111)
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
    X_train, Y_train = data_generator(rng, args.batch_size * args.steps, args.seq_len)
    X_test, Y_test = data_generator(rng, 128, args.seq_len)
    X_test, Y_test = X_test.to(device), Y_test.to(device)

    channel_sizes = [args.nhid] * args.levels
    model = TCN(2, 1, channel_sizes, kernel_size=args.ksize, dropout=args.dropout).to(device)
    model.init_weights(args.seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    first = model.tcn.network[0]
    with torch.no_grad():
        padded_then_chomped = first.chomp1(first.conv1(X_test))
        assert torch.allclose(causal_conv1d(first.conv1, X_test), padded_then_chomped, atol=1e-6)
    probe = X_test[:1].clone().requires_grad_()
    step = args.seq_len // 2
    model.tcn(probe)[:, :, step].sum().backward()
    influence = probe.grad.abs().sum(dim=1)[0]
    # causal: nothing after the step reaches it; the receptive field (29 steps) covers all before it
    assert torch.all(influence[step + 1:] == 0), influence
    assert torch.all(influence[:step + 1] != 0), influence

    losses, grad_norms = [], []
    model.train()
    for i in range(args.steps):
        x = X_train[i * args.batch_size:(i + 1) * args.batch_size].to(device)
        y = Y_train[i * args.batch_size:(i + 1) * args.batch_size].to(device)
        optimizer.zero_grad()
        output = model(x)
        loss = F.mse_loss(output, y)
        loss.backward()
        if args.clip > 0:
            grad_norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip).item())
        optimizer.step()
        losses.append(loss.item())

    model.eval()
    with torch.no_grad():
        output = model(X_test)
        test_loss = F.mse_loss(output, Y_test)
    if not args.quiet:
        print('Test set: Average loss: {:.6f}'.format(test_loss.item()))
    return {"losses": losses, "grad_norms": grad_norms, "test": [test_loss.item()]}


if __name__ == '__main__':
    print(json.dumps(main()))
