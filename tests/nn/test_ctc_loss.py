"""F.ctc_loss, nn.CTCLoss and tp.ctc_loss (issue 13): values against a NumPy brute force over every
alignment, PyTorch's gradient formula, finite differences, PyTorch 2.13 itself on larger cases
(every reduction, zero_infinity, padded and concatenated targets, unbatched input, repeated
labels), on every backend; and the errors."""
import itertools

import numpy as np
import pytest

import tensorplug as tp
from torch_reference import compare, torch_or_skip

F = tp.nn.functional


# --- the independent reference: every alignment, enumerated ---------------------------------
def _collapse(path, blank):
    """The labelling a frame-by-frame path stands for: repeats merged, then blanks removed."""
    merged = [c for i, c in enumerate(path) if i == 0 or c != path[i - 1]]
    return tuple(c for c in merged if c != blank)


def _brute_force(log_probs, target, blank=0):
    """(loss, occupancy) of one sample, ``log_probs`` (T, C) float64: minus the log of the summed
    probability of every path of T frames that collapses to ``target``, and per frame and class
    the posterior probability that the frame emits the class."""
    steps, classes = log_probs.shape
    target = tuple(int(c) for c in target)
    total = 0.0
    occupancy = np.zeros((steps, classes))
    for path in itertools.product(range(classes), repeat=steps):
        if _collapse(path, blank) != target:
            continue
        p = np.exp(sum(log_probs[t, c] for t, c in enumerate(path)))
        total += p
        occupancy[np.arange(steps), path] += p
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.log(total), occupancy / total


# Tiny samples: (log_probs (T, C), target, input length, blank).
_RNG = np.random.default_rng(13)
TINY = {
    "distinct labels": (_RNG.standard_normal((5, 4)), [1, 2], 5, 0),
    "repeated label needs a blank": (_RNG.standard_normal((5, 3)), [1, 1], 5, 0),
    "repeated label, exactly enough frames": (_RNG.standard_normal((3, 3)), [2, 2], 3, 0),
    "repeated label, too few frames (inf)": (_RNG.standard_normal((4, 3)), [1, 1, 1], 4, 0),
    "empty target": (_RNG.standard_normal((4, 3)), [], 4, 0),
    "input shorter than T": (_RNG.standard_normal((6, 3)), [2, 1], 4, 0),
    "blank last": (_RNG.standard_normal((5, 4)), [0, 2, 1], 5, 3),
    "not normalized": (2.0 * _RNG.standard_normal((4, 4)) - 3.0, [3, 1], 4, 0),
    "one frame": (_RNG.standard_normal((1, 3)), [2], 1, 0),
    "no frames": (_RNG.standard_normal((2, 3)), [], 0, 0),
}


def _batch(names):
    """The named tiny samples (of one class count) as one padded batch: log_probs (T, N, C) and
    its arguments."""
    cases = [TINY[name] for name in names]
    steps = max(lp.shape[0] for lp, *_ in cases)
    classes = cases[0][0].shape[1]
    log_probs = np.zeros((steps, len(cases), classes))
    for i, (lp, *_) in enumerate(cases):
        log_probs[:lp.shape[0], i] = lp
    longest = max(len(t) for _, t, _, _ in cases)
    targets = np.array([list(t) + [1] * (longest - len(t)) for _, t, _, _ in cases], dtype=np.int64).reshape(len(cases), longest)
    return log_probs, targets, [c[2] for c in cases], [len(c[1]) for c in cases]


def _floats(device):
    declared = tp.backends.backend_for(device).dtypes
    return [d for d in (tp.float32, tp.float64) if d.name in declared]


@pytest.mark.parametrize("name", sorted(TINY))
def test_single_samples_match_the_brute_force(device, name):
    """Each tiny sample's loss is minus the log of its alignments' summed probability."""
    log_probs, target, length, blank = TINY[name]
    expected, _ = _brute_force(log_probs[:length], target, blank)
    for dtype in _floats(device):
        got = F.ctc_loss(tp.tensor(log_probs, dtype=dtype, device=device).unsqueeze(1),
                         tp.tensor([target], dtype=tp.int64, device=device).reshape(1, len(target)),
                         [length], [len(target)], blank=blank, reduction="none")
        assert got.shape == (1,) and got.dtype is dtype
        np.testing.assert_allclose(got.cpu().numpy()[0], expected, rtol=1e-12 if dtype is tp.float64 else 1e-5)


def test_a_batch_of_mixed_lengths_matches_the_brute_force(device):
    """One padded batch of samples with different input and target lengths (blank 0), every
    reduction: the per-sample losses are the brute force's, 'mean' divides by the target length
    (at least 1), zero_infinity zeroes the impossible one."""
    names = ["repeated label needs a blank", "repeated label, too few frames (inf)", "empty target",
             "input shorter than T", "repeated label, exactly enough frames"]
    log_probs, targets, lengths, target_lengths = _batch(names)
    expected = np.array([_brute_force(TINY[n][0][:TINY[n][2]], TINY[n][1])[0] for n in names])
    finite = np.where(np.isinf(expected), 0.0, expected)
    x = tp.tensor(log_probs, device=device)
    t = tp.tensor(targets, device=device)
    il, tl = tp.tensor(lengths), tp.tensor(target_lengths)
    np.testing.assert_allclose(F.ctc_loss(x, t, il, tl, reduction="none").cpu().numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(F.ctc_loss(x, t, il, tl, reduction="sum").item(), np.inf)
    np.testing.assert_allclose(F.ctc_loss(x, t, il, tl, reduction="sum", zero_infinity=True).item(), finite.sum(),
                               rtol=1e-12)
    mean = (finite / np.maximum(target_lengths, 1)).mean()
    np.testing.assert_allclose(F.ctc_loss(x, t, il, tl, zero_infinity=True).item(), mean, rtol=1e-12)


@pytest.mark.parametrize("name", ["distinct labels", "repeated label needs a blank", "input shorter than T",
                                  "not normalized", "blank last"])
def test_gradient_is_pytorchs_formula(device, name):
    """The gradient of log_probs is exp(log_probs) minus the brute force's occupancy on the input's
    frames and 0 after them: PyTorch's formula, also for log_probs that are not normalized."""
    log_probs, target, length, blank = TINY[name]
    _, occupancy = _brute_force(log_probs[:length], target, blank)
    x = tp.tensor(log_probs, device=device, requires_grad=True)
    F.ctc_loss(x, tp.tensor(target), [length], [len(target)], blank=blank, reduction="sum").backward()
    expected = np.zeros_like(log_probs)
    expected[:length] = np.exp(log_probs[:length]) - occupancy
    np.testing.assert_allclose(x.grad.cpu().numpy(), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_finite_differences_through_log_softmax(reduction):
    """After log_softmax (where PyTorch's formula is the true derivative), backward agrees with
    central differences in float64 on the CPU."""
    rng = np.random.default_rng(1)
    logits = tp.tensor(rng.standard_normal((6, 3, 4)), requires_grad=True)
    targets = tp.tensor([[1, 1, 2], [3, 2, 0], [2, 0, 0]])

    def loss(x):
        return F.ctc_loss(x.log_softmax(2), targets, (6, 5, 4), (3, 2, 0), reduction=reduction)

    assert tp.autograd.gradcheck(loss, (logits,))


def test_zero_infinity_zeroes_the_gradient_of_impossible_samples():
    """An impossible sample's gradient is NaN (as in PyTorch), and 0 with zero_infinity; the
    possible sample beside it keeps its gradient."""
    log_probs, targets, lengths, target_lengths = _batch(["repeated label, too few frames (inf)", "input shorter than T"])
    grads = []
    for zero_infinity in (False, True):
        x = tp.tensor(log_probs, requires_grad=True)
        F.ctc_loss(x, tp.tensor(targets), lengths, target_lengths, reduction="sum", zero_infinity=zero_infinity).backward()
        grads.append(x.grad.numpy())
    assert np.isnan(grads[0][:4, 0]).all()
    assert (grads[1][:, 0] == 0).all()
    np.testing.assert_array_equal(grads[0][:, 1], grads[1][:, 1])


# --- PyTorch 2.13 on larger cases ------------------------------------------------------------
def _random_case(seed, steps=12, batch=4, classes=6, longest=4, blank=0, repeats=False):
    """Random log_probs (unnormalized normals: the formula's exp term shows), padded targets
    without blank, and lengths that fit."""
    rng = np.random.default_rng(seed)
    log_probs = rng.standard_normal((steps, batch, classes))
    labels = [c for c in range(classes) if c != blank]
    targets = rng.choice(labels, size=(batch, longest))
    if repeats:
        targets[:, 1] = targets[:, 0]
    target_lengths = rng.integers(0, longest + 1, batch)
    target_lengths[0] = longest
    input_lengths = rng.integers(2 * longest + 1, steps + 1, batch)
    input_lengths[-1] = steps
    return log_probs, targets, [int(v) for v in input_lengths], [int(v) for v in target_lengths]


def _concatenated(targets, target_lengths):
    return np.concatenate([row[:n] for row, n in zip(targets, target_lengths)]).astype(np.int64)


@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("form", ["padded", "concatenated"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_matches_torch(reduction, form, zero_infinity):
    """Values and gradients equal torch's in float64, for every reduction and target form; one
    sample cannot be aligned (a repeated label in too few frames)."""
    torch = torch_or_skip()
    log_probs, targets, lengths, target_lengths = _random_case(2, repeats=True)
    lengths[1], target_lengths[1] = 3, 2  # labels x x need 3 frames: possible, barely
    lengths[2], target_lengths[2] = 2, 2  # impossible: inf
    tg = targets if form == "padded" else _concatenated(targets, target_lengths)
    compare(torch, lambda lib, x: lib.nn.functional.ctc_loss(
        x, lib.tensor(tg), lengths, target_lengths, reduction=reduction, zero_infinity=zero_infinity),
        [log_probs], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_matches_torch_on_every_backend(device, reduction):
    """float32 on each backend (float64 where declared) against torch, through log_softmax."""
    torch = torch_or_skip()
    log_probs, targets, lengths, target_lengths = _random_case(3, steps=10, batch=3, classes=5, longest=3)
    for dtype in _floats(device):
        # The float64 leaf's gradient is computed in float32 there: float32's tolerance.
        tolerance = dict(rtol=1e-10, atol=1e-12) if dtype is tp.float64 else dict(rtol=1e-5, atol=1e-6)
        compare(torch, lambda lib, x: lib.nn.functional.ctc_loss(
            x.to(getattr(lib, dtype.name)).log_softmax(2), lib.tensor(targets), lib.tensor(lengths),
            lib.tensor(target_lengths), reduction=reduction), [log_probs], device=device, **tolerance)


@pytest.mark.parametrize("case", ["unbatched", "unbatched padded", "blank 5", "int32 lengths", "tuple lengths",
                                  "2-d length tensors", "float targets", "transposed log_probs", "module",
                                  "top-level default", "top-level mean", "top-level sum", "top-level 7",
                                  "top-level keywords", "float32"])
def test_input_forms_match_torch(case):
    """PyTorch's other input forms and entry points give its values and gradients."""
    torch = torch_or_skip()
    log_probs, targets, lengths, target_lengths = _random_case(4, blank=5 if case == "blank 5" else 0)
    one_target = targets[0, :target_lengths[0]]
    calls = {
        "unbatched": lambda L, x: L.nn.functional.ctc_loss(x[:, 0], L.tensor(one_target), [lengths[0]],
                                                           [target_lengths[0]], reduction="none"),
        "unbatched padded": lambda L, x: L.nn.functional.ctc_loss(x[:, 0], L.tensor(targets[:1]), L.tensor(lengths[:1]),
                                                                  L.tensor(target_lengths[:1]), reduction="sum"),
        "blank 5": lambda L, x: L.nn.functional.ctc_loss(x, L.tensor(targets), lengths, target_lengths, blank=5),
        "int32 lengths": lambda L, x: L.nn.functional.ctc_loss(x, L.tensor(targets), L.tensor(lengths, dtype=L.int32),
                                                               L.tensor(target_lengths, dtype=L.int32)),
        "tuple lengths": lambda L, x: L.nn.functional.ctc_loss(x, L.tensor(targets), tuple(lengths), tuple(target_lengths)),
        "2-d length tensors": lambda L, x: L.nn.functional.ctc_loss(x, L.tensor(targets), L.tensor([lengths]),
                                                                    L.tensor([target_lengths]), reduction="none"),
        "float targets": lambda L, x: L.nn.functional.ctc_loss(x, L.tensor(targets, dtype=L.float64), lengths,
                                                               target_lengths),
        "transposed log_probs": lambda L, x: L.nn.functional.ctc_loss(
            x.transpose(0, 1).contiguous().transpose(0, 1), L.tensor(targets), lengths, target_lengths),
        "module": lambda L, x: L.nn.CTCLoss(reduction="sum", zero_infinity=True)(x, L.tensor(targets), L.tensor(lengths),
                                                                                 L.tensor(target_lengths)),
        "top-level default": lambda L, x: L.ctc_loss(x, L.tensor(targets), lengths, target_lengths),
        "top-level mean": lambda L, x: L.ctc_loss(x, L.tensor(targets), L.tensor(lengths), L.tensor(target_lengths), 0, 1),
        "top-level sum": lambda L, x: L.ctc_loss(x, L.tensor(targets), lengths, target_lengths, 0, 2),
        "top-level 7": lambda L, x: L.ctc_loss(x, L.tensor(targets), lengths, target_lengths, 0, 7),
        "top-level keywords": lambda L, x: L.ctc_loss(x, L.tensor(targets), lengths, target_lengths, blank=0,
                                                      reduction=2, zero_infinity=True),
        "float32": lambda L, x: L.nn.functional.ctc_loss(x.float(), L.tensor(targets), lengths, target_lengths),
    }
    tolerance = dict(rtol=1e-5, atol=1e-6) if case == "float32" else dict(rtol=1e-10, atol=1e-12)
    compare(torch, calls[case], [log_probs], **tolerance)


def test_autocast_computes_in_float32():
    """Under CPU autocast a bfloat16 log_probs is cast up: a float32 loss, as PyTorch's list says."""
    torch = torch_or_skip()
    log_probs, targets, lengths, target_lengths = _random_case(5)
    results = []
    for lib in (tp, torch):
        with lib.autocast("cpu", dtype=lib.bfloat16):
            x = lib.tensor(log_probs).log_softmax(2).to(lib.bfloat16)
            results.append(lib.nn.functional.ctc_loss(x, lib.tensor(targets), lengths, target_lengths))
    assert results[0].dtype is tp.float32 and results[1].dtype is torch.float32
    np.testing.assert_allclose(results[0].item(), results[1].item(), rtol=1e-6)


def test_no_second_derivative():
    """As in PyTorch, the gradient can be recorded but not differentiated again."""
    log_probs, targets, lengths, target_lengths = _random_case(6)
    x = tp.tensor(log_probs, requires_grad=True)
    (grad,) = tp.autograd.grad(F.ctc_loss(x, tp.tensor(targets), lengths, target_lengths), x, create_graph=True)
    with pytest.raises(RuntimeError, match="derivative for ctc_loss_backward is not implemented"):
        grad.sum().backward()


def test_module_keeps_its_options():
    """nn.CTCLoss stores blank, reduction and zero_infinity as attributes."""
    loss = tp.nn.CTCLoss(blank=3, reduction="sum", zero_infinity=True)
    assert (loss.blank, loss.reduction, loss.zero_infinity) == (3, "sum", True)
    assert tp.nn.CTCLoss().reduction == "mean"


# --- errors ----------------------------------------------------------------------------------
def _args(**change):
    """A valid call's arguments (T=6, N=2, C=4), with some replaced."""
    args = dict(log_probs=tp.zeros(6, 2, 4), targets=tp.tensor([[1, 2, 3], [1, 1, 0]]),
                input_lengths=tp.tensor([6, 5]), target_lengths=tp.tensor([3, 2]))
    args.update(change)
    return args


ERRORS = {
    "4-d log_probs": (_args(log_probs=tp.zeros(6, 2, 4, 1)), RuntimeError, r"\(T, N, C\).*\[6, 2, 4, 1\]"),
    "integer log_probs": (_args(log_probs=tp.zeros(6, 2, 4, dtype=tp.int64)), NotImplementedError, "int64"),
    "float16 log_probs": (_args(log_probs=tp.zeros(6, 2, 4, dtype=tp.float16)), NotImplementedError, "float16"),
    "empty log_probs": (_args(log_probs=tp.zeros(0, 2, 4), input_lengths=tp.tensor([0, 0]),
                              target_lengths=tp.tensor([0, 0])), RuntimeError, r"must not be empty.*\[0, 2, 4\]"),
    "input length beyond T": (_args(input_lengths=tp.tensor([7, 5])), RuntimeError, "at most the 6 frames.*got 7"),
    "negative input length": (_args(input_lengths=tp.tensor([-1, 5])), RuntimeError, "input_lengths must be at least 0, got -1"),
    "negative target length": (_args(target_lengths=tp.tensor([3, -2])), RuntimeError, "target_lengths must be at least 0, got -2"),
    "target length beyond S": (_args(target_lengths=tp.tensor([4, 2])), RuntimeError, r"shape \[2, 3\].*longest target length 4"),
    "targets of another batch size": (_args(targets=tp.tensor([[1, 2, 3]])), RuntimeError, r"\[1, 3\].*batch size 2"),
    "too few input lengths": (_args(input_lengths=tp.tensor([6])), RuntimeError, "input_lengths must be of size batch_size 2"),
    "too many target lengths": (_args(target_lengths=tp.tensor([3, 2, 1])), RuntimeError, "target_lengths must be of size batch_size 2"),
    "concatenated targets too short": (_args(targets=tp.tensor([1, 2, 3, 1])), RuntimeError, r"\[4\].*sum of the target lengths, 5"),
    "3-d targets": (_args(targets=tp.ones(2, 3, 1, dtype=tp.int64)), RuntimeError, r"targets of shape \[2, 3, 1\]"),
    "float lengths": (_args(input_lengths=tp.tensor([6.0, 5.0])), RuntimeError, "input_lengths must be integral"),
    "int lengths": (_args(input_lengths=6, target_lengths=3), TypeError, "both be tensors or both be tuples"),
    "mixed lengths": (_args(input_lengths=(6, 5)), TypeError, "both be tensors or both be tuples"),
    "blank out of range": (_args(blank=4), RuntimeError, r"blank must be in label range \[0, 4\), got 4"),
    "negative blank": (_args(blank=-1), RuntimeError, "blank must be in label range"),
    "bad reduction": (_args(reduction="average"), ValueError, "average is not a valid value for reduction"),
    "log_probs not a tensor": (_args(log_probs=np.zeros((6, 2, 4))), TypeError, "'log_probs' must be Tensor"),
}

# Where PyTorch 2.13 checks nothing (it reads a class's log-probability out of bounds, or takes
# the blank as a label), tensorplug raises: docs/deviations.md.
OUR_ERRORS = {
    "target beyond the classes": (_args(targets=tp.tensor([[1, 4, 3], [1, 1, 0]])), IndexError,
                                  "target 4 of sample 0 is out of bounds for 4 classes"),
    "negative target": (_args(targets=tp.tensor([[1, 2, 3], [-1, 1, 0]])), IndexError, "target -1 of sample 1"),
    "blank in a target": (_args(targets=tp.tensor([[1, 0, 3], [1, 1, 0]])), RuntimeError,
                          "target of sample 0 contains the blank label 0 .at position 1 of 3."),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    """Bad arguments raise before any kernel runs, with PyTorch's exception type and a message
    naming the op and the offending shapes or values."""
    args, error, words = ERRORS[name]
    with pytest.raises(error, match=words) as raised:
        F.ctc_loss(**args)
    assert str(raised.value).startswith("ctc_loss(): ") or name == "bad reduction"
    torch = pytest.importorskip("torch")
    theirs = {k: torch.tensor(v.numpy()) if isinstance(v, tp.Tensor) else v for k, v in args.items()}
    if name == "log_probs not a tensor":
        theirs["log_probs"] = args["log_probs"]
    with pytest.raises(error):
        torch.nn.functional.ctc_loss(**theirs)


@pytest.mark.parametrize("name", sorted(OUR_ERRORS))
def test_targets_are_checked(name):
    """Every label within a target's length is a class and not blank (padding is not read)."""
    args, error, words = OUR_ERRORS[name]
    with pytest.raises(error, match=words):
        F.ctc_loss(**args)


def test_padding_past_the_target_length_is_never_read():
    """Padding may hold anything: blank, -1, classes out of range."""
    args = _args(targets=tp.tensor([[1, 2, 3, -1], [1, 1, 99, 0]]))
    expected = F.ctc_loss(**_args(), reduction="none")
    np.testing.assert_array_equal(F.ctc_loss(**args, reduction="none").numpy(), expected.numpy())


def test_top_level_reduction_must_be_an_int():
    """tp.ctc_loss takes ATen's int reduction, as torch.ctc_loss does."""
    with pytest.raises(TypeError, match=r"ctc_loss\(\): argument 'reduction' \(position 6\) must be int, not str"):
        tp.ctc_loss(*_args().values(), 0, "mean")


@pytest.mark.parametrize("where, value", [((3, 0, 2), np.nan), ((3, 0, 3), np.nan), ((7, 1, 1), np.nan),
                                          ((1, 2, 4), np.inf), ((2, 0, 1), -np.inf), ((2, 1, 4), np.nan)],
                         ids=["NaN on a path", "NaN at a class not in the target", "NaN past the input length",
                              "+inf on a path", "-inf on a path", "NaN at a label past the target"])
def test_non_finite_log_probs_match_torch(where, value):
    """NaN and infinities reach exactly the losses and gradients they reach in PyTorch: only
    their own sample's, never a neighbour's."""
    torch = torch_or_skip()
    log_probs = np.random.default_rng(0).standard_normal((8, 3, 5))
    log_probs[where] = value
    targets = np.array([[1, 2, 2], [1, 3, 0], [4, 4, 4]])
    compare(torch, lambda lib, x: lib.nn.functional.ctc_loss(x, lib.tensor(targets), [8, 6, 7], [3, 2, 3],
                                                             reduction="none"), [log_probs], rtol=1e-10, atol=1e-12)
