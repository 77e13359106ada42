"""Fitting sin(x) with a custom autograd Function, as PyTorch's "Defining new autograd functions"
tutorial does, followed by pytorch/examples' regression/main.py (polynomial features, a Linear
layer, smooth_l1_loss and a hand-written parameter update).

LegendrePolynomial3 subclasses autograd.Function with static forward and backward methods, keeps
its input with ctx.save_for_backward and is called through .apply; the four scalar weights are
updated by hand inside torch.no_grad() and their gradients reset to None.
"""
import argparse
import json
import math

import numpy as np

import tensorplug as torch
import tensorplug.nn.functional as F


class LegendrePolynomial3(torch.autograd.Function):
    """
    We can implement our own custom autograd Functions by subclassing
    torch.autograd.Function and implementing the forward and backward passes
    which operate on Tensors.
    """

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


POLY_DEGREE = 4


def make_features(x):
    """Builds features i.e. a matrix with columns [x, x^2, x^3, x^4]."""
    x = x.unsqueeze(1)
    return torch.cat([x ** i for i in range(1, POLY_DEGREE + 1)], 1)


def main(argv=None):
    parser = argparse.ArgumentParser(description='custom autograd Function and regression')
    parser.add_argument('--iterations', type=int, default=40)
    parser.add_argument('--device', default=None, help='default: the accelerator if any, else cpu')
    parser.add_argument('--quiet', action='store_true')
    args = parser.parse_args(argv)

    dtype = torch.float
    if args.device is not None:
        device = torch.device(args.device)
    elif torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    # Create Tensors to hold input and outputs.
    x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
    y = torch.sin(x)

    # For this example, we need 4 weights: y = a + b * P3(c + d * x), these weights need to be
    # initialized not too far from the correct result to ensure convergence.
    a = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)

    learning_rate = 5e-6
    losses = []
    for t in range(args.iterations):
        # To apply our Function, we use Function.apply method. We alias this as 'P3'.
        P3 = LegendrePolynomial3.apply

        # Forward pass: compute predicted y using operations; we compute
        # P3 using our custom autograd operation.
        y_pred = a + b * P3(c + d * x)

        # Compute and print loss
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())

        # Use autograd to compute the backward pass.
        loss.backward()

        # Update weights using gradient descent
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad

            # Manually zero the gradients after updating weights
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    if not args.quiet:
        print(f'Result: y = {a.item()} + {b.item()} * P3({c.item()} + {d.item()} x)')

    # regression/main.py: fit a degree-4 polynomial with a Linear layer.
    rng = np.random.default_rng(42)
    W_target = torch.from_numpy(rng.standard_normal((POLY_DEGREE, 1)).astype(np.float32) * 5)
    b_target = torch.from_numpy(rng.standard_normal(1).astype(np.float32) * 5)

    def f(x):
        """Approximated function."""
        return x.mm(W_target) + b_target.item()

    def get_batch(batch_size=32):
        """Builds a batch i.e. (x, f(x)) pair."""
        random = torch.from_numpy(rng.standard_normal(batch_size).astype(np.float32))
        x = make_features(random)
        y = f(x)
        return x.to(device), y.to(device)

    fc = torch.nn.Linear(W_target.size(0), 1)
    with torch.no_grad():
        fc.weight.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, (1, POLY_DEGREE)).astype(np.float32)))
        fc.bias.zero_()
    fc.to(device)
    regression_losses = []
    for batch_idx in range(1, 25):
        batch_x, batch_y = get_batch()
        # Reset gradients
        fc.zero_grad()
        # Forward pass
        output = F.smooth_l1_loss(fc(batch_x), batch_y)
        loss = output.item()
        # Backward pass
        output.backward()
        # Apply gradients
        for param in fc.parameters():
            param.data.add_(-0.05 * param.grad)
        regression_losses.append(loss)
    if not args.quiet:
        print('Loss: {:.6f} after {} batches'.format(loss, batch_idx))
    return {"losses": losses, "weights": [a.item(), b.item(), c.item(), d.item()],
            "regression_losses": regression_losses}


if __name__ == '__main__':
    print(json.dumps(main()))
