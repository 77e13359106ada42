"""LoRA fine-tuning, written the way loralib (Hu et al.), PEFT-style wrappers and minLoRA write it.

A small MLP classifier is pre-trained on one synthetic task, then adapted to a shifted task with
low-rank adapters, two ways:

- loralib style: every `nn.Linear` found by `named_modules()` is swapped (`get_submodule` of the
  parent, `setattr`) for a `LoRALinear` that keeps the frozen base layer and adds
  `lora_A`/`lora_B` parameters (A drawn by NumPy where loralib calls `kaiming_uniform_`, B
  `nn.init.zeros_`), `(x @ A.T @ B.T) * scaling` beside the base output; `mark_only_lora_as_trainable`
  sets `requires_grad` by name, the optimizer gets
  `filter(lambda p: p.requires_grad, ...)`; the adapter is saved as a state_dict filtered on
  `'lora_'` (`torch.save` to a buffer) and loaded into a fresh copy with
  `load_state_dict(strict=False)` (its missing keys checked), then merged into the base weight
  under `torch.no_grad()` (`weight += (B @ A) * scaling`), the merged plain model giving the same
  outputs;
- minLoRA style: the base frozen with `requires_grad_(False)`, the same adapters as a parametrization of each weight
  (`nn.utils.parametrize.register_parametrization`), trained, then
  `remove_parametrizations(leave_parametrized=True)` bakes them in.

The two fine-tuning runs start from the same adapters and must follow the same losses.
"""
import argparse
import copy
import io
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
import tensorplug.nn.utils.parametrize as parametrize


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, r: int, lora_alpha: int):
        super().__init__()
        self.base = base
        self.r = r
        self.scaling = lora_alpha / r
        self.lora_A = nn.Parameter(base.weight.new_zeros((r, base.in_features)))
        self.lora_B = nn.Parameter(base.weight.new_zeros((base.out_features, r)))
        nn.init.zeros_(self.lora_B)

    def forward(self, x):
        result = self.base(x)
        return result + (x @ self.lora_A.transpose(0, 1) @ self.lora_B.transpose(0, 1)) * self.scaling

    @torch.no_grad()
    def merged(self):
        layer = copy.deepcopy(self.base)
        layer.weight += (self.lora_B @ self.lora_A) * self.scaling
        return layer


class LoRAParametrization(nn.Module):
    """minLoRA: the weight seen by the layer is W + B A * scaling."""

    def __init__(self, lora_A, lora_B, scaling):
        super().__init__()
        self.lora_A = nn.Parameter(lora_A)
        self.lora_B = nn.Parameter(lora_B)
        self.scaling = scaling

    def forward(self, original_weights):
        return original_weights + torch.matmul(self.lora_B, self.lora_A).view(original_weights.shape) * self.scaling


def make_classifier(in_features=10, hidden=32, classes=4):
    return nn.Sequential(
        nn.Linear(in_features, hidden), nn.GELU(),
        nn.Linear(hidden, hidden), nn.GELU(),
        nn.Linear(hidden, classes),
    )


def inject_lora(model, r, lora_alpha):
    for name, module in list(model.named_modules()):
        if isinstance(module, nn.Linear):
            parent_name, _, child = name.rpartition('.')
            parent = model.get_submodule(parent_name)
            setattr(parent, child, LoRALinear(module, r, lora_alpha))
    return model


def mark_only_lora_as_trainable(model):
    for n, p in model.named_parameters():
        if 'lora_' not in n:
            p.requires_grad = False


def lora_state_dict(model):
    return {k: v for k, v in model.state_dict().items() if 'lora_' in k}


def merge_lora(model):
    for name, module in list(model.named_modules()):
        if isinstance(module, LoRALinear):
            parent_name, _, child = name.rpartition('.')
            setattr(model.get_submodule(parent_name), child, module.merged())
    return model


def synthetic_task(rng, count, prototypes, rotation):
    labels = rng.integers(0, len(prototypes), count)
    x = prototypes[labels] + 0.8 * rng.standard_normal((count, prototypes.shape[1]))
    return torch.from_numpy((x @ rotation).astype(np.float32)), torch.from_numpy(labels)


def init_from_numpy(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            fan_in = p.shape[1] if p.dim() > 1 else p.numel()
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def train(model, parameters, batches, lr, device, steps_per_batch=1):
    optimizer = torch.optim.AdamW(parameters, lr=lr, weight_decay=0.0)
    losses = []
    model.train()
    for x, y in batches:
        x, y = x.to(device), y.to(device)
        for _ in range(steps_per_batch):
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


@torch.no_grad()
def evaluate(model, x, y):
    model.eval()
    logits = model(x)
    return F.cross_entropy(logits, y).item(), (logits.argmax(1) == y).float().mean().item(), logits


def main(argv=None):
    parser = argparse.ArgumentParser(description='LoRA fine-tuning of a frozen classifier')
    parser.add_argument('--pretrain-steps', type=int, default=6)
    parser.add_argument('--finetune-steps', type=int, default=8)
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--rank', type=int, default=4)
    parser.add_argument('--lora-alpha', type=int, default=8)
    parser.add_argument('--lr', type=float, default=1e-2)
    parser.add_argument('--seed', type=int, default=5)
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
    prototypes = 1.5 * rng.standard_normal((4, 10))
    identity = np.eye(10)
    shifted, _ = np.linalg.qr(identity + 0.6 * rng.standard_normal((10, 10)))
    pretrain = [synthetic_task(rng, args.batch_size, prototypes, identity) for _ in range(args.pretrain_steps)]
    finetune = [synthetic_task(rng, args.batch_size, prototypes, shifted) for _ in range(args.finetune_steps)]
    test_x, test_y = synthetic_task(rng, 256, prototypes, shifted)
    test_x, test_y = test_x.to(device), test_y.to(device)

    base = make_classifier()
    init_from_numpy(base, args.seed)
    base.to(device)
    pretrain_losses = train(base, base.parameters(), pretrain, 1e-2, device)
    base_test = evaluate(base, test_x, test_y)

    # loralib style: wrap every Linear, train only the adapters.
    model = inject_lora(copy.deepcopy(base), args.rank, args.lora_alpha)
    mark_only_lora_as_trainable(model)
    adapter_rng = np.random.default_rng(args.seed + 1)
    adapters = {}
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, LoRALinear):
                bound = 1.0 / np.sqrt(module.base.in_features)
                drawn = adapter_rng.uniform(-bound, bound, tuple(module.lora_A.shape)).astype(np.float32)
                module.lora_A.copy_(torch.from_numpy(drawn))
                adapters[name] = drawn
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    lora_losses = train(model, filter(lambda p: p.requires_grad, model.parameters()), finetune, args.lr, device)
    assert all(torch.equal(a, b) for a, b in zip(base.state_dict().values(),
                                                 [v for k, v in model.state_dict().items() if 'lora_' not in k]))
    lora_test = evaluate(model, test_x, test_y)

    # The adapter alone goes through a checkpoint into a fresh wrapped copy of the base.
    buffer = io.BytesIO()
    torch.save(lora_state_dict(model), buffer)
    buffer.seek(0)
    restored = inject_lora(copy.deepcopy(base), args.rank, args.lora_alpha)
    incompatible = restored.load_state_dict(torch.load(buffer, weights_only=True), strict=False)
    assert not incompatible.unexpected_keys
    assert sorted(incompatible.missing_keys) == sorted(k for k in restored.state_dict() if 'lora_' not in k)
    restored_test = evaluate(restored, test_x, test_y)
    merged = merge_lora(restored)
    assert not any(isinstance(m, LoRALinear) for m in merged.modules())
    merged_test = evaluate(merged, test_x, test_y)
    assert torch.allclose(merged_test[2], lora_test[2], rtol=1e-4, atol=1e-5)
    assert restored_test[0] == lora_test[0]

    # minLoRA style: freeze the model, then the same adapters as parametrizations of the weights.
    base.requires_grad_(False)
    param_model = copy.deepcopy(base)
    for name, module in param_model.named_modules():
        if isinstance(module, nn.Linear):
            lora_A = torch.from_numpy(adapters[name]).to(device)
            lora_B = torch.zeros(module.out_features, args.rank, device=device)
            parametrize.register_parametrization(
                module, "weight", LoRAParametrization(lora_A, lora_B, args.lora_alpha / args.rank))
    assert [n for n, p in param_model.named_parameters() if p.requires_grad] == \
        [n for n, _ in param_model.named_parameters() if 'lora_' in n]
    param_losses = train(param_model, [p for p in param_model.parameters() if p.requires_grad], finetune,
                         args.lr, device)
    np.testing.assert_allclose(param_losses, lora_losses, rtol=1e-4)
    for module in param_model.modules():
        if parametrize.is_parametrized(module, "weight"):
            parametrize.remove_parametrizations(module, "weight", leave_parametrized=True)
    baked_test = evaluate(param_model, test_x, test_y)
    assert sorted(param_model.state_dict()) == sorted(base.state_dict())

    if not args.quiet:
        print(f'trainable {trainable} of {total} parameters; test loss base {base_test[0]:.4f} '
              f'LoRA {lora_test[0]:.4f} merged {merged_test[0]:.4f} minLoRA {baked_test[0]:.4f}')
    return {"losses": lora_losses, "minlora_losses": param_losses, "pretrain_losses": pretrain_losses,
            "test": [base_test[0], lora_test[0], merged_test[0], baked_test[0]],
            "accuracy": [base_test[1], lora_test[1], merged_test[1], baked_test[1]],
            "trainable": [trainable, total]}


if __name__ == '__main__':
    print(json.dumps(main()))
