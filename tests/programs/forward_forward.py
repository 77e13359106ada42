"""Hinton's Forward-Forward algorithm, as pytorch/examples' mnist_forward_forward trains it: each
Linear + ReLU layer is trained on its own with Adam to give positive data (the image with its
true label written into its first pixels) a high "goodness" (mean squared activation) and
negative data (a wrong label) a low one; a label is predicted as the one whose overlay gives
the highest goodness summed over the layers.

The images are synthetic (NumPy: a noisy class template per label, 10 classes of 7x7 pixels),
and the negative labels come from a NumPy permutation where the example calls torch.randperm
(`--torch-randperm` uses the library's own, for the random run).
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
from tensorplug.optim import Adam


def overlay_y_on_x(x, y):
    """The example's label encoding: the first 10 pixels zeroed, pixel y set to the image's max."""
    x_ = x.clone()
    x_[:, :10] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class Layer(nn.Linear):
    def __init__(self, in_features, out_features, epochs, lr, bias=True, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.relu = torch.nn.ReLU()
        self.opt = Adam(self.parameters(), lr=lr)
        self.threshold = 2.0
        self.num_epochs = epochs

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train(self, x_pos, x_neg, losses):
        for i in range(self.num_epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            # The following loss pushes pos (neg) samples to values larger (smaller) than the self.threshold.
            loss = torch.log(1 + torch.exp(torch.cat([-g_pos + self.threshold, g_neg - self.threshold]))).mean()
            self.opt.zero_grad()
            # this backward just compute the derivative and hence is not considered backpropagation.
            loss.backward()
            self.opt.step()
            losses.append(loss.item())
        return self.forward(x_pos).detach(), self.forward(x_neg).detach()


class Net(torch.nn.Module):
    def __init__(self, dims, epochs, lr):
        super().__init__()
        self.layers = [Layer(dims[d], dims[d + 1], epochs, lr) for d in range(len(dims) - 1)]

    def predict(self, x):
        goodness_per_label = []
        for label in range(10):
            h = overlay_y_on_x(x, label)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness += [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        goodness_per_label = torch.cat(goodness_per_label, 1)
        return goodness_per_label.argmax(1), goodness_per_label

    def train(self, x_pos, x_neg, losses):
        h_pos, h_neg = x_pos, x_neg
        for layer in self.layers:
            h_pos, h_neg = layer.train(h_pos, h_neg, losses)


def synthetic_digits(rng, count, side=7):
    templates = rng.uniform(0, 1, (10, side * side))
    labels = rng.integers(0, 10, count)
    images = templates[labels] + rng.normal(0, 0.3, (count, side * side))
    return images.astype(np.float32), labels


def init_from_numpy(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for layer in model.layers:
            for p in layer.parameters():
                bound = 1.0 / np.sqrt(layer.in_features)
                p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='Forward-Forward training on synthetic digits')
    parser.add_argument('--epochs', type=int, default=6)
    parser.add_argument('--lr', type=float, default=0.03)
    parser.add_argument('--train-size', type=int, default=200)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--numpy-permutation', action='store_true', help='negative labels from a NumPy permutation')
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
    images, labels = synthetic_digits(rng, opt.train_size + 100)
    x, y = torch.from_numpy(images[:opt.train_size]).to(device), torch.from_numpy(labels[:opt.train_size]).to(device)
    x_te, y_te = torch.from_numpy(images[opt.train_size:]).to(device), torch.from_numpy(labels[opt.train_size:]).to(device)

    net = Net([49, 64, 64], opt.epochs, opt.lr)
    init_from_numpy(net, opt.seed)
    for layer in net.layers:
        layer.to(device)
    x_pos = overlay_y_on_x(x, y)
    if opt.numpy_permutation:
        rnd = torch.from_numpy(rng.permutation(x.size(0)))
    else:
        rnd = torch.randperm(x.size(0))
    x_neg = overlay_y_on_x(x, y[rnd.to(device)])
    losses = []
    net.train(x_pos, x_neg, losses)
    predictions, goodness = net.predict(x)
    train_error = 1.0 - predictions.eq(y).float().mean().item()
    test_predictions, test_goodness = net.predict(x_te)
    test_error = 1.0 - test_predictions.eq(y_te).float().mean().item()
    if not opt.quiet:
        print('train error: %.3f, test error: %.3f, last loss %.4f' % (train_error, test_error, losses[-1]))
    # The errors count argmax decisions (a near-tie may fall either way in another library's
    # rounding); the compared results are the continuous losses and goodness sums.
    return {"losses": losses, "goodness": goodness.sum(0).tolist(), "test_goodness": test_goodness.sum(0).tolist()}


if __name__ == '__main__':
    print(json.dumps(main()))
