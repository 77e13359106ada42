"""tp.random: torch.random's names, and fork_rng restoring the generators' states on exit."""
import pytest

import tensorplug as tp


def test_names_are_the_top_level_functions():
    for name in ("manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state"):
        assert getattr(tp.random, name) is getattr(tp, name)


def test_fork_rng_restores_the_cpu_stream():
    tp.random.manual_seed(7)
    expected = tp.rand(4).tolist()
    tp.random.manual_seed(7)
    with tp.random.fork_rng():
        inside = tp.rand(4).tolist()
        tp.manual_seed(123)  # even a re-seed inside is undone
        tp.rand(10)
    assert inside == expected
    tp.random.manual_seed(7)
    tp.rand(4)
    after_plain = tp.rand(4).tolist()
    tp.random.manual_seed(7)
    tp.rand(4)
    with tp.random.fork_rng(devices=[]):
        tp.rand(100)
    assert tp.rand(4).tolist() == after_plain


def test_fork_rng_restores_on_exception_and_can_be_disabled():
    tp.manual_seed(3)
    state = tp.get_rng_state()
    with pytest.raises(ValueError):
        with tp.random.fork_rng():
            tp.rand(5)
            raise ValueError("inside")
    assert tp.get_rng_state().tolist() == state.tolist()
    with tp.random.fork_rng(enabled=False):
        tp.rand(5)
    assert tp.get_rng_state().tolist() != state.tolist()


def test_fork_rng_named_device(device):
    # a device given by name has its own generator saved and restored too
    dev = device
    tp.manual_seed(11)
    first = tp.rand(3, device=dev).tolist()
    tp.manual_seed(11)
    with tp.random.fork_rng(devices=[dev]):
        tp.rand(50, device=dev)
    assert tp.rand(3, device=dev).tolist() == first


def test_fork_rng_rejects_a_single_device():
    with pytest.raises(TypeError, match="fork_rng"):
        with tp.random.fork_rng(devices="cpu"):
            pass
