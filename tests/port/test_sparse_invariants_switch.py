"""tp.sparse.check_sparse_tensor_invariants (issue 13; found probing around the graph attention
program): the static switch, the context manager (its refusal to be entered twice) and the
decorator report the same states as PyTorch 2.13's, while tensorplug keeps validating every
sparse tensor (docs/deviations.md)."""
import pytest

import tensorplug as tp
from torch_reference import torch_or_skip


def _states(lib):
    """is_enabled() through every way of setting it, and the error of a re-entered instance."""
    switch = lib.sparse.check_sparse_tensor_invariants
    states = [switch.is_enabled()]
    manager = switch()
    with manager:
        states.append(switch.is_enabled())
        with switch(enable=False):
            states.append(switch.is_enabled())
        states.append(switch.is_enabled())
        with pytest.raises(RuntimeError) as raised:
            with manager:
                pass
        states.append(str(raised.value))
    states.append(switch.is_enabled())
    switch.enable()
    states.append(switch.is_enabled())
    switch.disable()
    states.append(switch.is_enabled())

    @switch(enable=True)
    def checked(depth):
        return [switch.is_enabled()] + (checked(depth - 1) if depth else [])

    states.append(checked(2))
    states.append(switch.is_enabled())
    return states


def test_switch_states_match_pytorch():
    torch = torch_or_skip()
    assert _states(tp) == _states(torch)


def test_out_of_range_indices_raise_with_the_switch_off():
    """The switch off (PyTorch's default, where torch builds the tensor unchecked) still refuses an
    index outside the size before anything reads it."""
    assert not tp.sparse.check_sparse_tensor_invariants.is_enabled()
    with pytest.raises(RuntimeError, match=r"sparse_coo_tensor: indices out of range for size \[3\]"):
        tp.sparse_coo_tensor(tp.tensor([[0, 5]]), tp.ones(2), (3,))
    with tp.sparse.check_sparse_tensor_invariants():
        with pytest.raises(RuntimeError, match="out of range"):
            tp.sparse_coo_tensor(tp.tensor([[0, -1]]), tp.ones(2), (3,))
