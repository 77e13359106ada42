"""A neural ODE fitted to a spiral, written the way torchdiffeq's `examples/ode_demo.py` writes it,
with its fixed-step solvers written out by hand in place of `torchdiffeq.odeint`.

The true dynamics are a `Lambda` module (`torch.mm(y ** 3, true_A)`) integrated under
`torch.no_grad()` by classic RK4 (`odeint(func, y0, t, method='rk4')`, one step between
consecutive times from `t[1:] - t[:-1]`, the states `torch.stack`ed). `get_batch` picks random
start times (NumPy's `np.random.choice`, as the example does) and slices the true trajectory into
(batch_time, batch, 1, 2) targets. `ODEFunc` (Linear-Tanh-Linear on `y ** 3`, weights from
`nn.init.normal_(std=0.1)` in the example, drawn by NumPy here, biases `constant_(0)`) counts its
evaluations; the loss is `torch.mean(torch.abs(pred_y - batch_y))`, the optimizer RMSprop, and a
`RunningAverageMeter` tracks the loss as the example's does. Every few iterations the whole
trajectory is predicted under `no_grad` and its loss reported; an Euler solve and the midpoint
rule of the same model must approach RK4 in order.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.optim as optim


class Lambda(nn.Module):
    def __init__(self, true_A):
        super().__init__()
        self.true_A = true_A

    def forward(self, t, y):
        return torch.mm(y**3, self.true_A)


class ODEFunc(nn.Module):

    def __init__(self):
        super(ODEFunc, self).__init__()

        self.net = nn.Sequential(
            nn.Linear(2, 50),
            nn.Tanh(),
            nn.Linear(50, 2),
        )
        self.nfe = 0

        for m in self.net.modules():
            if isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, val=0)

    def forward(self, t, y):
        self.nfe += 1
        return self.net(y**3)


class RunningAverageMeter(object):
    """Computes and stores the average and current value"""

    def __init__(self, momentum=0.99):
        self.momentum = momentum
        self.reset()

    def reset(self):
        self.val = None
        self.avg = 0

    def update(self, val):
        if self.val is None:
            self.avg = val
        else:
            self.avg = self.avg * self.momentum + val * (1 - self.momentum)
        self.val = val


def rk4_step(func, t0, dt, y0):
    k1 = func(t0, y0)
    k2 = func(t0 + dt / 2, y0 + dt * k1 / 2)
    k3 = func(t0 + dt / 2, y0 + dt * k2 / 2)
    k4 = func(t0 + dt, y0 + dt * k3)
    return y0 + dt * (k1 + 2 * k2 + 2 * k3 + k4) / 6


def midpoint_step(func, t0, dt, y0):
    return y0 + dt * func(t0 + dt / 2, y0 + dt / 2 * func(t0, y0))


def euler_step(func, t0, dt, y0):
    return y0 + dt * func(t0, y0)


STEPS = {'rk4': rk4_step, 'midpoint': midpoint_step, 'euler': euler_step}


def odeint(func, y0, t, method='rk4'):
    """The state at every time in `t`, stacked along a new first dim (torchdiffeq's layout)."""
    step = STEPS[method]
    ys = [y0]
    for t0, dt in zip(t[:-1], t[1:] - t[:-1]):
        ys.append(step(func, t0, dt, ys[-1]))
    return torch.stack(ys)


def get_batch(true_y, t, args, device):
    s = torch.from_numpy(np.random.choice(np.arange(args.data_size - args.batch_time, dtype=np.int64),
                                          args.batch_size, replace=False))
    batch_y0 = true_y[s]  # (M, D)
    batch_t = t[:args.batch_time]  # (T)
    batch_y = torch.stack([true_y[s + i] for i in range(args.batch_time)], dim=0)  # (T, M, D)
    return batch_y0.to(device), batch_t.to(device), batch_y.to(device)


def init_from_numpy(func, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for m in func.net.modules():
            if isinstance(m, nn.Linear):
                m.weight.copy_(torch.from_numpy(rng.normal(0, 0.1, tuple(m.weight.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser('ODE demo')
    parser.add_argument('--data_size', type=int, default=40)
    parser.add_argument('--batch_time', type=int, default=5)
    parser.add_argument('--batch_size', type=int, default=8)
    parser.add_argument('--niters', type=int, default=8)
    parser.add_argument('--test_freq', type=int, default=4)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--device', default=None, help='default: the accelerator if any, else cpu')
    parser.add_argument('--quiet', action='store_true')
    args = parser.parse_args(argv)

    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    if args.device is not None:
        device = torch.device(args.device)
    elif torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    true_y0 = torch.tensor([[2., 0.]]).to(device)
    t = torch.linspace(0., 2.5, args.data_size).to(device)
    true_A = torch.tensor([[-0.1, 2.0], [-2.0, -0.1]]).to(device)

    with torch.no_grad():
        true_y = odeint(Lambda(true_A), true_y0, t, method='rk4')

    func = ODEFunc().to(device)
    init_from_numpy(func, args.seed)
    optimizer = optim.RMSprop(func.parameters(), lr=1e-3)
    loss_meter = RunningAverageMeter(0.97)

    losses, test_losses, averages = [], [], []
    for itr in range(1, args.niters + 1):
        optimizer.zero_grad()
        batch_y0, batch_t, batch_y = get_batch(true_y, t, args, device)
        pred_y = odeint(func, batch_y0, batch_t).to(device)
        loss = torch.mean(torch.abs(pred_y - batch_y))
        loss.backward()
        optimizer.step()
        loss_meter.update(loss.item())
        losses.append(loss.item())
        averages.append(loss_meter.avg)

        if itr % args.test_freq == 0:
            with torch.no_grad():
                pred_y = odeint(func, true_y0, t)
                loss = torch.mean(torch.abs(pred_y - true_y))
                test_losses.append(loss.item())
                if not args.quiet:
                    print('Iter {:04d} | Total Loss {:.6f}'.format(itr, loss.item()))

    with torch.no_grad():
        coarse = t[::4]
        solutions = {method: odeint(func, true_y0, coarse, method=method) for method in STEPS}
        fine = odeint(func, true_y0, torch.linspace(0., float(coarse[-1]), 4 * (len(coarse) - 1) + 1).to(device))[::4]
        errors = {method: (y - fine).abs().max().item() for method, y in solutions.items()}
    assert errors['rk4'] < errors['midpoint'] < errors['euler'], errors
    return {"losses": losses, "running_avg": averages, "test": test_losses,
            "solver_errors": [errors['euler'], errors['midpoint'], errors['rk4']], "nfe": [func.nfe]}


if __name__ == '__main__':
    print(json.dumps(main()))
