"""Sine-wave prediction with LSTM cells and L-BFGS, as pytorch/examples' time_sequence_prediction.

Two nn.LSTMCell layers and a Linear head unrolled by hand over a sequence, in double precision,
fitted with optim.LBFGS through a closure; the test pass predicts beyond the input (future > 0).
The waves are generated with NumPy, as the example's generate_sine_wave.py does, only shorter.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.optim as optim


class Sequence(nn.Module):
    def __init__(self, hidden=16):
        super(Sequence, self).__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double, device=input.device)
        c_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double, device=input.device)
        h_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double, device=input.device)
        c_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double, device=input.device)

        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):  # if we should predict the future
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


def sine_waves(rng, count=12, length=24, period=20):
    x = np.empty((count, length), np.int64)
    x[:] = np.array(range(length)) + rng.integers(-2 * period, 2 * period, count).reshape(count, 1)
    return np.sin(x / 1.0 / period).astype('float64')


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
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float64)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='sine-wave prediction with LSTMCell and LBFGS')
    parser.add_argument('--steps', type=int, default=2, help='steps to run')
    parser.add_argument('--future', type=int, default=10)
    parser.add_argument('--seed', type=int, default=2)
    parser.add_argument('--device', default=None, help='default: the accelerator if any, else cpu')
    parser.add_argument('--quiet', action='store_true')
    opt = parser.parse_args(argv)

    # set random seed to 0
    np.random.seed(0)
    torch.manual_seed(0)
    if opt.device is not None:
        device = torch.device(opt.device)
    elif torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    # load data and make training set
    data = sine_waves(np.random.default_rng(opt.seed))
    input = torch.from_numpy(data[3:, :-1]).to(device)
    target = torch.from_numpy(data[3:, 1:]).to(device)
    test_input = torch.from_numpy(data[:3, :-1]).to(device)
    test_target = torch.from_numpy(data[:3, 1:]).to(device)
    # build the model
    seq = Sequence()
    seq.double()
    init_from_numpy(seq, opt.seed)
    seq.to(device)
    criterion = nn.MSELoss()
    # use LBFGS as optimizer since we can load the whole data to train
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=4)
    losses, closure_losses, test_losses = [], [], []
    # begin to train
    for i in range(opt.steps):
        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            closure_losses.append(loss.item())
            loss.backward()
            return loss
        loss = optimizer.step(closure)
        losses.append(loss.item())
        # begin to predict, no need to track gradient here
        with torch.no_grad():
            future = opt.future
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            test_losses.append(loss.item())
            y = pred.detach().cpu().numpy()
        if not opt.quiet:
            print('step %d: loss %.6f, test loss %.6f' % (i, losses[-1], test_losses[-1]))
    return {"losses": losses, "closure_losses": closure_losses, "test_loss": test_losses,
            "prediction_end": y[:, -1].tolist()}


if __name__ == '__main__':
    print(json.dumps(main()))
