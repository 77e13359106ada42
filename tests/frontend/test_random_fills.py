"""Tensor.exponential_, geometric_, cauchy_ and log_normal_ (missing before; found by a probe of
torch 2.13's Tensor methods). Draws differ from PyTorch's for a seed (another generator), so
their distributions are checked against the formulas, and their refusals against PyTorch."""
import math

import numpy as np
import pytest

import tensorplug as tp

N = 40000


def test_exponential_and_geometric_moments():
    tp.manual_seed(1)
    draws = tp.empty(N, dtype=tp.float64).exponential_(2.0).numpy()
    assert draws.min() >= 0 and abs(draws.mean() - 0.5) < 0.02 and abs(draws.var() - 0.25) < 0.02
    trials = tp.empty(N, dtype=tp.int64).geometric_(0.3).numpy()
    assert trials.min() == 1 and abs(trials.mean() - 1 / 0.3) < 0.08
    # P(X = 1) = p, P(X = 2) = (1 - p) p
    assert abs((trials == 1).mean() - 0.3) < 0.015 and abs((trials == 2).mean() - 0.21) < 0.015


def test_cauchy_and_log_normal_distributions():
    tp.manual_seed(2)
    draws = tp.empty(N, dtype=tp.float64).cauchy_(1.0, 2.0).numpy()
    quartiles = np.quantile(draws, [0.25, 0.5, 0.75])
    np.testing.assert_allclose(quartiles, [-1.0, 1.0, 3.0], atol=0.1)  # median -+ sigma
    logs = np.log(tp.empty(N, dtype=tp.float64).log_normal_(0.5, 0.3).numpy())
    assert abs(logs.mean() - 0.5) < 0.01 and abs(logs.std() - 0.3) < 0.01


def test_a_generator_gives_the_same_draws():
    first = tp.empty(5).exponential_(generator=tp.Generator().manual_seed(7))
    second = tp.empty(5).exponential_(generator=tp.Generator().manual_seed(7))
    assert first.tolist() == second.tolist() and math.isfinite(first.sum().item())


@pytest.mark.parametrize("call", [
    lambda L: L.empty(3).exponential_(0), lambda L: L.empty(3).geometric_(1.0), lambda L: L.empty(3).cauchy_(0, 0),
    lambda L: L.empty(3).log_normal_(1, 0), lambda L: L.empty(3, dtype=L.int64).exponential_(),
    lambda L: L.empty(3, dtype=L.int64).cauchy_(), lambda L: L.empty(3, dtype=L.int64).log_normal_(),
    lambda L: L.empty(3, dtype=L.bool).geometric_(0.5),
])
def test_refusals_match_pytorch(call):
    torch = pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here")
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(theirs.type):
        call(tp)
