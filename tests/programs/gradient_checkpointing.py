"""Activation (gradient) checkpointing in a deep residual MLP, written the way training scripts
use `torch.utils.checkpoint` to trade compute for memory.

Each residual block (LayerNorm, Linear, GELU, Dropout, Linear) runs under
`checkpoint(block, x, use_reentrant=False)` when the model's `gradient_checkpointing` flag is on
and it is training, as Hugging Face models switch it; a plain stack of layers runs through
`checkpoint_sequential(self.stem, segments, x, use_reentrant=False)`. The first step computes
the gradients twice, with and without checkpointing, and checks that they agree; with dropout on
(the default run) the recomputed forward must replay the same dropout masks
(`preserve_rng_state`). The model then trains on a synthetic regression task with SGD (momentum)
and `ReduceLROnPlateau`, and the evaluation under `torch.no_grad()` skips checkpointing.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.utils.checkpoint import checkpoint, checkpoint_sequential


class ResidualBlock(nn.Module):
    def __init__(self, width, dropout):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 2 * width)
        self.fc2 = nn.Linear(2 * width, width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return x + self.fc2(self.dropout(F.gelu(self.fc1(self.norm(x)))))


class DeepMLP(nn.Module):
    def __init__(self, in_features=16, width=32, depth=6, dropout=0.1, segments=2):
        super().__init__()
        self.stem = nn.Sequential(nn.Linear(in_features, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh())
        self.blocks = nn.ModuleList([ResidualBlock(width, dropout) for _ in range(depth)])
        self.head = nn.Linear(width, 1)
        self.segments = segments
        self.gradient_checkpointing = False

    def forward(self, x):
        use_checkpoint = self.gradient_checkpointing and self.training and torch.is_grad_enabled()
        if use_checkpoint:
            x = checkpoint_sequential(self.stem, self.segments, x, use_reentrant=False)
        else:
            x = self.stem(x)
        for block in self.blocks:
            if use_checkpoint:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return self.head(x).squeeze(-1)


def make_data(rng, count, in_features):
    x = rng.standard_normal((count, in_features))
    y = np.sin(x[:, 0] * 2) + 0.5 * x[:, 1] * x[:, 2] - 0.3 * x[:, 3] ** 2 + 0.05 * rng.standard_normal(count)
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y.astype(np.float32))


def init_from_numpy(model, seed):
    """Give every Linear a NumPy-drawn value within PyTorch's default bound 1/sqrt(fan_in);
    LayerNorms keep their ones and zeros."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Linear):
                bound = 1.0 / np.sqrt(module.in_features)
                for p in (module.weight, module.bias):
                    p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def gradients(model, x, y, seed):
    """The loss and the parameters' gradients of one forward/backward pass, with dropout's
    generator reseeded so that two passes draw the same masks."""
    torch.manual_seed(seed)
    model.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    return loss.item(), [p.grad.clone() for p in model.parameters()]


def main(argv=None):
    parser = argparse.ArgumentParser(description='Gradient checkpointing in a deep residual MLP')
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--steps', type=int, default=12)
    parser.add_argument('--lr', type=float, default=0.02)
    parser.add_argument('--dropout', type=float, default=0.1)
    parser.add_argument('--seed', type=int, default=21)
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
    model = DeepMLP(dropout=args.dropout)
    init_from_numpy(model, args.seed)
    model.to(device)
    model.train()

    x, y = make_data(rng, args.batch_size, 16)
    x, y = x.to(device), y.to(device)
    plain_loss, plain_grads = gradients(model, x, y, args.seed)
    model.gradient_checkpointing = True
    checkpointed_loss, checkpointed_grads = gradients(model, x, y, args.seed)
    assert abs(plain_loss - checkpointed_loss) <= 1e-6 * max(1.0, abs(plain_loss)), (plain_loss, checkpointed_loss)
    grad_difference = max((a - b).abs().max().item() for a, b in zip(plain_grads, checkpointed_grads))
    assert grad_difference <= 1e-5, grad_difference

    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode='min', factor=0.5, patience=0)
    test_x, test_y = make_data(rng, 256, 16)
    test_x, test_y = test_x.to(device), test_y.to(device)
    losses, test_losses, lrs = [], [], []
    for step in range(args.steps):
        x, y = make_data(rng, args.batch_size, 16)
        x, y = x.to(device), y.to(device)
        model.train()
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 3 == 2:
            model.eval()
            with torch.no_grad():
                test_loss = F.mse_loss(model(test_x), test_y).item()
            scheduler.step(test_loss)
            test_losses.append(test_loss)
            lrs.append(optimizer.param_groups[0]['lr'])
            if not args.quiet:
                print(f'step {step}: loss {losses[-1]:.4f} test loss {test_loss:.4f} lr {lrs[-1]}')
    return {"losses": losses, "first_step": [plain_loss, checkpointed_loss], "test_losses": test_losses, "lr": lrs}


if __name__ == '__main__':
    print(json.dumps(main()))
