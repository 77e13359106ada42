"""Knowledge distillation, written the way PyTorch's "Knowledge Distillation Tutorial" and Hinton
et al.'s recipe write it.

A wide teacher CNN is trained for a few steps on synthetic 10-class 8x8 images, frozen
(`eval()`, `torch.no_grad()`), and then a narrow student learns from it three ways at once: hard
labels through `nn.CrossEntropyLoss`, the teacher's temperature-softened distribution through
`nn.KLDivLoss(reduction="batchmean")` on `F.log_softmax(student / T)` scaled by T**2 (checked
against the tutorial's hand-written `sum(p * (log p - log q)) / batch * T**2` and against
`log_target=True`), and the teacher's flattened hidden features through
`nn.CosineEmbeddingLoss` with a target of ones, the students' features pooled to the teacher's
width by `F.avg_pool1d`. A student trained on hard labels alone is the baseline; both are
evaluated under `torch.no_grad()` (loss and accuracy).
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F


class DeepNN(nn.Module):
    def __init__(self, num_classes=10, width=16):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, kernel_size=3, padding=1), nn.ReLU(),
            nn.Conv2d(width, width, kernel_size=3, padding=1), nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )
        self.classifier = nn.Sequential(nn.Linear(width * 16, 64), nn.ReLU(), nn.Linear(64, num_classes))

    def forward(self, x):
        hidden = torch.flatten(self.features(x), 1)
        return self.classifier(hidden), hidden


class LightNN(nn.Module):
    def __init__(self, num_classes=10, width=8, teacher_hidden=512):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, kernel_size=3, padding=1), nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )
        self.classifier = nn.Sequential(nn.Linear(width * 16, 32), nn.ReLU(), nn.Linear(32, num_classes))
        self.teacher_hidden = teacher_hidden

    def forward(self, x):
        hidden = torch.flatten(self.features(x), 1)
        # The tutorial's cosine loss compares hidden vectors of equal length: repeat and pool the
        # student's features to the teacher's width.
        widened = hidden.repeat(1, self.teacher_hidden // hidden.shape[1] * 2)
        matched = F.avg_pool1d(widened.unsqueeze(1), kernel_size=2).squeeze(1)
        return self.classifier(hidden), matched


def synthetic_digits(rng, count, prototypes):
    labels = rng.integers(0, 10, count)
    images = prototypes[labels] + 0.6 * rng.standard_normal((count, 1, 8, 8))
    return torch.from_numpy(images.astype(np.float32)), torch.from_numpy(labels)


def init_from_numpy(model, seed):
    """Give every parameter a NumPy-drawn value within PyTorch's default bound 1/sqrt(fan_in)."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            fan_in = p[0].numel() if p.dim() > 1 else p.numel()
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def soft_target_loss(student_logits, teacher_logits, T):
    """The tutorial's hand-written KL divergence of the softened distributions, times T**2."""
    soft_targets = F.softmax(teacher_logits / T, dim=-1)
    soft_prob = F.log_softmax(student_logits / T, dim=-1)
    return torch.sum(soft_targets * (soft_targets.log() - soft_prob)) / soft_prob.size()[0] * (T ** 2)


def train_teacher(teacher, batches, lr, device):
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(teacher.parameters(), lr=lr)
    teacher.train()
    losses = []
    for inputs, labels in batches:
        inputs, labels = inputs.to(device), labels.to(device)
        optimizer.zero_grad()
        logits, _ = teacher(inputs)
        loss = criterion(logits, labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def train_student(student, teacher, batches, args, device, distill):
    ce_loss = nn.CrossEntropyLoss()
    kl_loss = nn.KLDivLoss(reduction="batchmean")
    kl_log_target = nn.KLDivLoss(reduction="batchmean", log_target=True)
    cosine_loss = nn.CosineEmbeddingLoss()
    optimizer = torch.optim.Adam(student.parameters(), lr=args.lr)
    teacher.eval()
    student.train()
    losses, kl_terms = [], []
    for inputs, labels in batches:
        inputs, labels = inputs.to(device), labels.to(device)
        optimizer.zero_grad()
        student_logits, student_hidden = student(inputs)
        loss = ce_loss(student_logits, labels)
        if distill:
            with torch.no_grad():
                teacher_logits, teacher_hidden = teacher(inputs)
            T = args.temperature
            kl = kl_loss(F.log_softmax(student_logits / T, dim=-1), F.softmax(teacher_logits / T, dim=-1)) * T ** 2
            by_hand = soft_target_loss(student_logits, teacher_logits, T)
            with_log_target = kl_log_target(F.log_softmax(student_logits / T, dim=-1),
                                            F.log_softmax(teacher_logits / T, dim=-1)) * T ** 2
            assert abs(kl.item() - by_hand.item()) <= 1e-4 * max(1.0, abs(by_hand.item())), (kl.item(), by_hand.item())
            assert abs(kl.item() - with_log_target.item()) <= 1e-4 * max(1.0, abs(kl.item()))
            hidden_loss = cosine_loss(student_hidden, teacher_hidden,
                                      target=torch.ones(inputs.size(0), device=device))
            loss = args.ce_weight * loss + args.kd_weight * kl + args.hidden_weight * hidden_loss
            kl_terms.append(kl.item())
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, kl_terms


@torch.no_grad()
def evaluate(model, inputs, labels):
    model.eval()
    logits, _ = model(inputs)
    loss = F.cross_entropy(logits, labels).item()
    accuracy = (logits.argmax(dim=1) == labels).float().mean().item()
    return loss, accuracy


def main(argv=None):
    parser = argparse.ArgumentParser(description='Knowledge distillation on synthetic digits')
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--teacher-steps', type=int, default=10)
    parser.add_argument('--student-steps', type=int, default=8)
    parser.add_argument('--lr', type=float, default=3e-3)
    parser.add_argument('--temperature', type=float, default=2.0)
    parser.add_argument('--ce-weight', type=float, default=0.25)
    parser.add_argument('--kd-weight', type=float, default=0.75)
    parser.add_argument('--hidden-weight', type=float, default=0.2)
    parser.add_argument('--seed', type=int, default=13)
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
    prototypes = rng.standard_normal((10, 1, 8, 8))
    teacher_batches = [synthetic_digits(rng, args.batch_size, prototypes) for _ in range(args.teacher_steps)]
    student_batches = [synthetic_digits(rng, args.batch_size, prototypes) for _ in range(args.student_steps)]
    test_inputs, test_labels = synthetic_digits(rng, 128, prototypes)
    test_inputs, test_labels = test_inputs.to(device), test_labels.to(device)

    teacher = DeepNN()
    init_from_numpy(teacher, args.seed)
    teacher.to(device)
    teacher_losses = train_teacher(teacher, teacher_batches, args.lr, device)
    for p in teacher.parameters():
        p.requires_grad = False

    results = {}
    for name, distill in (("baseline", False), ("distilled", True)):
        student = LightNN(teacher_hidden=16 * 16)
        init_from_numpy(student, args.seed + 1)
        student.to(device)
        losses, kl_terms = train_student(student, teacher, student_batches, args, device, distill)
        test_loss, test_accuracy = evaluate(student, test_inputs, test_labels)
        results[name] = (losses, kl_terms, test_loss, test_accuracy)
        if not args.quiet:
            print(f'{name} student: last loss {losses[-1]:.4f} test loss {test_loss:.4f} accuracy {test_accuracy:.3f}')
    teacher_test = evaluate(teacher, test_inputs, test_labels)
    if not args.quiet:
        print(f'teacher: test loss {teacher_test[0]:.4f} accuracy {teacher_test[1]:.3f}')
    return {"losses": results["distilled"][0], "kl": results["distilled"][1],
            "baseline_losses": results["baseline"][0], "teacher_losses": teacher_losses,
            "test": [teacher_test[0], results["baseline"][2], results["distilled"][2]],
            "accuracy": [teacher_test[1], results["baseline"][3], results["distilled"][3]]}


if __name__ == '__main__':
    print(json.dumps(main()))
