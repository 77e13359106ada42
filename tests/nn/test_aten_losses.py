"""PyTorch's top-level ATen loss forms (tp.kl_div, tp.cosine_embedding_loss, ...; issue 13):
values and gradients against torch's own top-level functions in float64, for every int
reduction, the defaults, and the errors."""
import numpy as np
import pytest

import tensorplug as tp
from torch_reference import assert_same_error, compare, torch_or_skip


def _signs(rng, shape):
    return np.where(rng.random(shape) < 0.5, -1.0, 1.0)


def _arrays(name: str, seed: int = 0) -> list:
    """Random float64 operands for the loss ``name`` (targets away from the formulas' kinks)."""
    rng = np.random.default_rng(seed)
    normal = rng.standard_normal
    if name in ("cosine_embedding_loss",):
        return [normal((5, 4)), normal((5, 4)), _signs(rng, 5)]
    if name == "hinge_embedding_loss":
        return [normal((5, 4)), _signs(rng, (5, 4))]
    if name == "margin_ranking_loss":
        return [normal(6), normal(6), _signs(rng, 6)]
    if name == "triplet_margin_loss":
        return [normal((5, 4)), normal((5, 4)), normal((5, 4))]
    if name == "poisson_nll_loss":
        return [rng.uniform(0.2, 2.0, (5, 4)), rng.uniform(0.0, 4.0, (5, 4))]
    if name == "kl_div":
        return [np.log(rng.dirichlet(np.ones(4), 5)), rng.dirichlet(np.ones(4), 5)]
    if name == "binary_cross_entropy_with_logits":
        return [normal((5, 4)), rng.random((5, 4)), rng.uniform(0.5, 2.0, 4), rng.uniform(0.5, 2.0, 4)]
    raise KeyError(name)


# name -> how each library calls it, with ATen's positional arguments and the int reduction.
CALLS = {
    "cosine_embedding_loss": lambda lib, a, b, t, r: lib.cosine_embedding_loss(a, b, t, 0.2, r),
    "hinge_embedding_loss": lambda lib, x, t, r: lib.hinge_embedding_loss(x, t, 0.7, r),
    "margin_ranking_loss": lambda lib, a, b, t, r: lib.margin_ranking_loss(a, b, t, 0.1, r),
    "triplet_margin_loss": lambda lib, a, p, n, r: lib.triplet_margin_loss(a, p, n, 0.5, 1.5, 1e-6, True, r),
    "poisson_nll_loss": lambda lib, x, t, r: lib.poisson_nll_loss(x, t, True, True, 1e-8, r),
    "kl_div": lambda lib, x, t, r: lib.kl_div(x, t, r),
    "binary_cross_entropy_with_logits":
        lambda lib, x, t, w, pw, r: lib.binary_cross_entropy_with_logits(x, t, w.detach(), pw.detach(), r),
}


@pytest.mark.parametrize("reduction", [0, 1, 2], ids=["none", "mean", "sum"])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_values_and_gradients_match_torch(name, reduction):
    """Each loss and the gradients of its float operands equal torch's top-level function's."""
    torch = torch_or_skip()
    call = CALLS[name]
    compare(torch, lambda lib, *args: call(lib, *args, reduction), _arrays(name), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, call", [
    ("poisson_nll_loss", lambda lib, x, t, r: lib.poisson_nll_loss(x, t, False, False, 1e-3, r)),
    ("poisson_nll_loss", lambda lib, x, t, r: lib.poisson_nll_loss(input=x, target=t, log_input=True, full=False,
                                                                   eps=1e-8, reduction=r)),
    ("kl_div", lambda lib, x, t, r: lib.kl_div(x, lib.log(t), r, log_target=True)),
    ("triplet_margin_loss", lambda lib, a, p, n, r: lib.triplet_margin_loss(a, p, n, p=1, swap=False, reduction=r)),
    ("triplet_margin_loss", lambda lib, a, p, n, r: lib.triplet_margin_loss(a, p, n, -0.3, reduction=r)),
    ("binary_cross_entropy_with_logits",
     lambda lib, x, t, w, pw, r: lib.binary_cross_entropy_with_logits(x, t, pos_weight=pw.detach(), reduction=r)),
    ("cosine_embedding_loss", lambda lib, a, b, t, r: lib.cosine_embedding_loss(a[0], b[0], t[0], reduction=r)),
    ("margin_ranking_loss", lambda lib, a, b, t, r: lib.margin_ranking_loss(a, b.reshape(2, 3)[:, :1], t, reduction=r)),
], ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("reduction", [0, 1, 2], ids=["none", "mean", "sum"])
def test_other_options_match_torch(name, call, reduction):
    """Flags, keywords, a negative triplet margin, unbatched inputs and the broadcasts ATen's ops
    take (an input broadcast to the target, operands of different dims) give torch's values."""
    torch = torch_or_skip()
    compare(torch, lambda lib, *args: call(lib, *args, reduction), _arrays(name, seed=1), rtol=1e-10, atol=1e-12)


# The tensors each loss requires (the rest have defaults; poisson_nll_loss has none).
REQUIRED = {"cosine_embedding_loss": 3, "hinge_embedding_loss": 2, "margin_ranking_loss": 3, "triplet_margin_loss": 3,
            "kl_div": 2, "binary_cross_entropy_with_logits": 2}


@pytest.mark.parametrize("call", [
    lambda lib, x, t, w, pw, r: lib.binary_cross_entropy_with_logits(x[0], t, w.detach(), None, r),
    lambda lib, x, t, w, pw, r: lib.binary_cross_entropy_with_logits(x[:, :1], t, None, None, r),
], ids=["row", "column"])
@pytest.mark.parametrize("reduction", [0, 1, 2], ids=["none", "mean", "sum"])
def test_bce_with_logits_broadcasts_the_input_to_the_target(call, reduction):
    """An input that broadcasts to the target's shape gives torch's values (torch's backward
    cannot take that input's gradient, so only the values are compared)."""
    torch = torch_or_skip()
    compare(torch, lambda lib, *args: call(lib, *args, reduction), _arrays("binary_cross_entropy_with_logits", 1),
            grad=False, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_default_arguments_are_torchs(name):
    """Omitted arguments give what torch gives (2.13's binding reads the default reduction as 0: unreduced)."""
    torch = torch_or_skip()
    compare(torch, lambda lib, *args: getattr(lib, name)(*args), _arrays(name)[:REQUIRED[name]])


@pytest.mark.parametrize("reduction", [3, -1, np.int64(2)], ids=["3", "-1", "numpy2"])
def test_other_ints_are_accepted_as_torch(reduction):
    """Ints other than 1 and 2 give the unreduced loss, as in torch; NumPy ints are ints."""
    torch = torch_or_skip()
    compare(torch, lambda lib, x, t: lib.kl_div(x, t, reduction), _arrays("kl_div"))


@pytest.mark.parametrize("reduction", ["mean", 1.0, True, None], ids=["str", "float", "bool", "None"])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_reduction_that_is_no_int_is_a_type_error(name, reduction):
    """'mean', a float, a bool or None as reduction raise torch's TypeError, naming the position."""
    torch = torch_or_skip()
    arrays = _arrays(name)

    def call(lib):
        return CALLS[name](lib, *[lib.tensor(a) for a in arrays], reduction)

    position = {"hinge_embedding_loss": 4, "triplet_margin_loss": 8, "poisson_nll_loss": 6, "kl_div": 3}.get(name, 5)
    assert_same_error(torch, call, TypeError,
                      rf"{name}\(\): argument 'reduction' \(position {position}\) must be int, not {type(reduction).__name__}")


def test_bce_with_logits_refuses_operands_broader_than_the_target():
    """The loss has the target's shape: an input or weight that would broaden it is refused, and so is an input
    narrower than the target with pos_weight, as in torch."""
    torch = torch_or_skip()
    x, t, w, _ = _arrays("binary_cross_entropy_with_logits")
    assert_same_error(torch, lambda lib: lib.binary_cross_entropy_with_logits(lib.tensor(x), lib.tensor(t[0])),
                      RuntimeError, r"output with shape \[4\] doesn't match the broadcast shape \[5, 4\]")
    assert_same_error(torch, lambda lib: lib.binary_cross_entropy_with_logits(lib.tensor(x[0]), lib.tensor(t[0]),
                                                                              lib.tensor(x)),
                      RuntimeError, r"output with shape \[4\] doesn't match the broadcast shape \[5, 4\]")
    assert_same_error(torch, lambda lib: lib.binary_cross_entropy_with_logits(lib.tensor(x[:, :1]), lib.tensor(t), None,
                                                                              lib.tensor(w)),
                      RuntimeError, r"output with shape \[5, 1\] doesn't match the broadcast shape \[5, 4\]")


def test_kl_div_takes_log_target_by_keyword_only_and_does_not_warn():
    """log_target is keyword-only, and mean warns about batchmean in F.kl_div only (warnings are errors here)."""
    torch = torch_or_skip()
    x, t = (tp.tensor(a) for a in _arrays("kl_div"))
    assert tp.kl_div(x, t, 1).shape == ()
    with pytest.raises(TypeError):
        tp.kl_div(x, t, 1, True)
    with pytest.raises(TypeError):
        torch.kl_div(torch.zeros(2), torch.zeros(2), 1, True)


def test_poisson_nll_loss_wants_every_argument():
    """torch.poisson_nll_loss has no defaults: leaving out reduction is a TypeError in both."""
    torch = torch_or_skip()
    x, t = _arrays("poisson_nll_loss")
    for lib in (tp, torch):
        with pytest.raises(TypeError):
            lib.poisson_nll_loss(lib.tensor(x), lib.tensor(t), True, False, 1e-8)
