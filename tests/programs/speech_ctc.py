"""A small speech recognizer trained with CTC, after the acoustic models of the PyTorch speech
tutorials (DeepSpeech-style): a Conv1d front end over a spectrogram, a bidirectional GRU, a
Linear layer to characters plus the blank, log_softmax over time-major output and nn.CTCLoss
with per-utterance input and target lengths; greedy decoding measures the character error rate.

The "spectrograms" are synthetic (NumPy): each character of a random transcript is a burst of
its own frequency profile over a few frames, with noise and silences between, so the model
has something learnable to align. Utterances are padded to the longest in the batch.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F


class AcousticModel(nn.Module):
    def __init__(self, n_mels, n_classes, hidden=24):
        super().__init__()
        self.conv = nn.Conv1d(n_mels, hidden, kernel_size=3, padding=1)
        self.rnn = nn.GRU(hidden, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, n_classes)

    def forward(self, x):  # x: (batch, n_mels, time)
        x = F.relu(self.conv(x))
        x, _ = self.rnn(x.transpose(1, 2))  # (batch, time, 2 * hidden)
        x = self.fc(x)
        return F.log_softmax(x, dim=2).transpose(0, 1)  # (time, batch, classes), as CTCLoss takes it


def make_batch(rng, profiles, batch, max_chars, frames_per_char=3):
    """Spectrograms (batch, n_mels, T), padded targets (batch, S), input and target lengths."""
    n_chars, n_mels = profiles.shape
    transcripts = [rng.integers(1, n_chars + 1, rng.integers(2, max_chars + 1)) for _ in range(batch)]
    lengths = [len(t) * (frames_per_char + 1) + 1 for t in transcripts]
    T = max(lengths)
    specs = rng.normal(0, 0.1, (batch, n_mels, T)).astype(np.float32)
    targets = np.zeros((batch, max_chars), np.int64)
    for b, text in enumerate(transcripts):
        t = 1
        for c in text:
            specs[b, :, t:t + frames_per_char] += profiles[c - 1][:, None]
            t += frames_per_char + 1
        targets[b, :len(text)] = text
    return specs, targets, np.array(lengths), np.array([len(t) for t in transcripts])


def greedy_decode(log_probs, lengths):
    best = log_probs.argmax(dim=2).transpose(0, 1).cpu().numpy()  # (batch, time)
    texts = []
    for row, n in zip(best, lengths):
        text, previous = [], 0
        for k in row[:n]:
            if k != previous and k != 0:
                text.append(int(k))
            previous = k
        texts.append(text)
    return texts


def edit_distance(a, b):
    d = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, d[0] = d[0], i
        for j, y in enumerate(b, 1):
            previous, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, previous + (x != y))
    return d[len(b)]


def init_from_numpy(model, seed):
    """Every parameter drawn by NumPy, so that any library starts from the same weights."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            fan_in = p[0].numel() if p.dim() > 1 else p.numel()
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='CTC speech recognition on synthetic spectrograms')
    parser.add_argument('--steps', type=int, default=6)
    parser.add_argument('--batch-size', type=int, default=6)
    parser.add_argument('--lr', type=float, default=0.01)
    parser.add_argument('--seed', type=int, default=3)
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
    n_mels, n_chars = 16, 5
    profiles = rng.uniform(0, 1, (n_chars, n_mels)).astype(np.float32)
    model = AcousticModel(n_mels, n_chars + 1)
    init_from_numpy(model, opt.seed)
    model.to(device)
    criterion = nn.CTCLoss(blank=0, zero_infinity=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=opt.lr)

    losses, blank_probs, error_rates = [], [], []
    for step in range(opt.steps):
        specs, targets, input_lengths, target_lengths = make_batch(rng, profiles, opt.batch_size, max_chars=4)
        x = torch.from_numpy(specs).to(device)
        y = torch.from_numpy(targets).to(device)
        model.train()
        optimizer.zero_grad()
        log_probs = model(x)
        loss = criterion(log_probs, y, torch.from_numpy(input_lengths), torch.from_numpy(target_lengths))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            log_probs = model(x)
            decoded = greedy_decode(log_probs, input_lengths)
            blank_probs.append(log_probs[..., 0].exp().mean().item())
        errors = sum(edit_distance(d, list(t[:n])) for d, t, n in zip(decoded, targets, target_lengths))
        error_rates.append(errors / int(target_lengths.sum()))
        if not opt.quiet:
            print('step %d: ctc loss %.4f, blank probability %.3f, character error rate %.3f'
                  % (step, losses[-1], blank_probs[-1], error_rates[-1]))
    # The error rate counts discrete decisions (a near-tie of two classes may fall either way in
    # another library's rounding), so the compared results are the continuous ones.
    return {"losses": losses, "blank_probs": blank_probs}


if __name__ == '__main__':
    print(json.dumps(main()))
