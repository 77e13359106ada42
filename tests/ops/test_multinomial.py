"""multinomial on every backend (sample frequencies against the probabilities, reproducibility
under tensorplug's generators), and tp.get_rng_state/set_rng_state (issue 13)."""
import numpy as np
import pytest

import tensorplug as tp
from device_params import every_device, torch_or_skip

DRAWS = 4000


def _within_4_standard_errors(frequencies, probs, n):
    return np.all(np.abs(frequencies - probs) <= 4 * np.sqrt(probs * (1 - probs) / n) + 1e-12)


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.float16])
def test_with_replacement_follows_the_weights(device, dtype):
    """Frequencies are within 4 standard errors of the normalized weights, row by row; a zero
    weight is never drawn; int64 results of shape (rows, num_samples)."""
    weights = np.array([[1.0, 0.0, 6.0, 3.0], [2.0, 2.0, 2.0, 2.0]])
    samples = tp.multinomial(tp.tensor(weights, dtype=dtype, device=device), DRAWS, replacement=True)
    assert samples.shape == (2, DRAWS) and samples.dtype is tp.int64 and samples.device.type == device
    drawn = samples.cpu().numpy()
    probs = weights / weights.sum(1, keepdims=True)
    for row in range(2):
        frequencies = np.bincount(drawn[row], minlength=4) / DRAWS
        assert _within_4_standard_errors(frequencies, probs[row], DRAWS), (frequencies, probs[row])
    assert not (drawn[0] == 1).any()


@pytest.mark.parametrize("device", every_device())
def test_without_replacement_draws_distinct_categories(device):
    """Each row holds distinct categories; the first draw follows the weights; positive weights
    come before zero weights; a 1-D input gives a 1-D result."""
    weights = tp.tensor([0.1, 0.0, 0.6, 0.3], device=device).expand(DRAWS, 4)
    samples = tp.multinomial(weights, 3).cpu().numpy()
    assert samples.shape == (DRAWS, 3)
    assert all(len(set(row)) == 3 for row in samples[:200])
    assert not (samples == 1).any()  # three positive weights fill three draws first
    frequencies = np.bincount(samples[:, 0], minlength=4) / DRAWS
    assert _within_4_standard_errors(frequencies, np.array([0.1, 0.0, 0.6, 0.3]), DRAWS), frequencies
    every = tp.multinomial(tp.tensor([1.0, 0.0, 0.0], device=device), 3)
    assert every.shape == (3,) and sorted(every.tolist()) == [0, 1, 2] and every[0].item() == 0
    assert tp.tensor([1.0, 2.0], device=device).multinomial(2).shape == (2,)


@pytest.mark.parametrize("device", every_device())
def test_seeded_draws_repeat_and_agree_across_devices(device):
    """manual_seed and a Generator make draws reproducible; with weights whose cumulative sums
    are exact, a seed draws the same indices on every device (Philox is the same everywhere)."""
    weights = tp.tensor([0.25, 0.5, 0.125, 0.125], dtype=tp.float64, device=device)
    tp.manual_seed(7)
    first = tp.multinomial(weights, 50, replacement=True).tolist()
    tp.manual_seed(7)
    assert tp.multinomial(weights, 50, replacement=True).tolist() == first
    tp.manual_seed(7)
    assert tp.multinomial(weights.cpu(), 50, replacement=True).tolist() == first
    g = tp.Generator(device).manual_seed(3)
    a = tp.multinomial(weights, 3, generator=g).tolist()
    g.manual_seed(3)
    assert tp.multinomial(weights, 3, generator=g).tolist() == a


def test_empty_rows_and_errors_match_torch():
    """No rows give an empty (0, n) result; bad weights and sizes raise PyTorch's errors."""
    torch = torch_or_skip()
    assert tp.multinomial(tp.ones(0, 3), 2, True).shape == tuple(torch.multinomial(torch.ones(0, 3), 2, True).shape)
    cases = [
        (lambda lib: lib.multinomial(lib.tensor([1, 2]), 1), "only supports floating-point dtypes"),
        (lambda lib: lib.multinomial(lib.tensor([1.0, 2.0]), 3), "cannot sample n_sample > prob_dist.size"),
        (lambda lib: lib.multinomial(lib.tensor([1.0, 2.0]), 0), "cannot sample n_sample <= 0 samples"),
        (lambda lib: lib.multinomial(lib.ones(1, 1, 2), 1), "prob_dist must be 1 or 2 dim"),
        (lambda lib: lib.multinomial(lib.tensor(1.0), 1), "prob_dist must be 1 or 2 dim"),
        (lambda lib: lib.multinomial(lib.tensor([1.0, -2.0]), 1), "contains either `inf`, `nan` or element < 0"),
        (lambda lib: lib.multinomial(lib.tensor([1.0, float("nan")]), 1), "contains either `inf`, `nan` or element < 0"),
        (lambda lib: lib.multinomial(lib.tensor([0.0, 0.0]), 1), r"sum of probabilities <= 0"),
        (lambda lib: lib.multinomial(lib.tensor([]), 2, True), r"sum of probabilities <= 0"),
    ]
    for call, message in cases:
        for lib in (tp, torch):
            with pytest.raises(RuntimeError, match=message):
                call(lib)


def test_rng_state_round_trips():
    """get_rng_state gives a uint8 tensor; after set_rng_state the same numbers come out, for
    rand, randn and multinomial; Generator.get_state/set_state take the same form."""
    tp.manual_seed(11)
    tp.rand(5)
    state = tp.get_rng_state()
    assert state.dtype is tp.uint8 and state.ndim == 1 and state.device.type == "cpu"
    a, b = tp.rand(3).tolist(), tp.multinomial(tp.tensor([0.2, 0.8]), 4, True).tolist()
    tp.set_rng_state(state)
    assert tp.rand(3).tolist() == a and tp.multinomial(tp.tensor([0.2, 0.8]), 4, True).tolist() == b
    g = tp.Generator().manual_seed(4)
    g.set_state(state)
    assert tp.rand(3, generator=g).tolist() == a
    state[0] = 99  # the state is a copy: changing it changes nothing
    tp.set_rng_state(g.get_state())


def test_set_rng_state_refuses_other_objects():
    """A non-tensor, another dtype or another size raises a clear error."""
    with pytest.raises(TypeError, match="uint8"):
        tp.set_rng_state([1, 2])
    with pytest.raises(TypeError, match="uint8"):
        tp.set_rng_state(tp.zeros(16))
    with pytest.raises(RuntimeError, match="16 bytes"):
        tp.set_rng_state(tp.zeros(3, dtype=tp.uint8))
