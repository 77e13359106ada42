"""RNN, LSTM and GRU over a ``PackedSequence``: each time step runs the cell on the sequences still
going, as ``batch_sizes`` says, so that every sequence's final state is taken at its own last step.

The packed data keeps the sorted sequences of step ``t`` in rows ``offsets[t]:offsets[t+1]``, the
longest first, so step ``t`` is the first ``batch_sizes[t]`` rows of the state:

- forward in time the batch shrinks; the rows past ``batch_sizes[t]`` hold the final states of the
  sequences that have ended and are carried unchanged;
- backward in time the batch grows; the rows past ``batch_sizes[t]`` still hold the initial state
  of the sequences that have not started (each starts at its own last step).

Cost: the input projection is one matmul over all packed rows per layer direction, as for padded
input; the recurrence is the per-step cell (about 15 ops per LSTM step, fewer for RNN and GRU) plus
a slice and a ``cat`` per state tensor on steps where the batch size changes. The whole-sequence
ops (``_lstm_sequence``, ``_gru_sequence``, ``_rnn_sequence``) are not used: they run a fixed batch.
"""
from __future__ import annotations

from ..frontend.ops.joining import cat
from . import functional as F
from .utils.rnn import PackedSequence

__all__ = ["run_packed"]


def _run_direction(module, x, batch_sizes: list, offsets: list, state: tuple, weights: tuple, reverse: bool) -> tuple:
    w_ih, w_hh, b_ih, b_hh, *projection = weights  # an LSTM with proj_size also has w_hr
    projected = F.linear(x, w_ih, b_ih)
    steps = range(len(batch_sizes) - 1, -1, -1) if reverse else range(len(batch_sizes))
    outputs = [None] * len(batch_sizes)
    for t in steps:
        size = batch_sizes[t]
        active = tuple(part[:size] for part in state) if size < state[0].shape[0] else state
        new = module._cell(projected[offsets[t]:offsets[t + 1]], active, w_hh, b_hh, *projection)
        outputs[t] = new[0]
        state = new if size == state[0].shape[0] else tuple(cat([a, s[size:]], 0) for a, s in zip(new, state))
    return cat(outputs, 0), state


def run_packed(module, packed: PackedSequence, hx) -> tuple:
    """``module.forward`` for a PackedSequence: ``(output PackedSequence, h_n)`` (LSTM: ``(h_n, c_n)``),
    the final states in the caller's batch order."""
    data = packed.data
    if data.ndim != 2:
        raise RuntimeError(f"input must have 2 dimensions, got {data.ndim}")
    if data.shape[-1] != module.input_size:
        raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {module.input_size}, "
                           f"got {data.shape[-1]}")
    batch_sizes = [int(size) for size in packed.batch_sizes.tolist()]
    offsets = [0]
    for size in batch_sizes:
        offsets.append(offsets[-1] + size)
    directions = 2 if module.bidirectional else 1
    states = module._initial_states(hx, batch_sizes[0], True, module.num_layers * directions, data)
    if packed.sorted_indices is not None:
        # hx is in the caller's order; the packed rows are in sorted order.
        states = [tuple(part.index_select(0, packed.sorted_indices) for part in state) for state in states]
    x = data
    finals = []
    for layer in range(module.num_layers):
        outputs = []
        for direction in range(directions):
            weights = module._layer_weights(layer, direction)
            out, final = _run_direction(module, x, batch_sizes, offsets, states[layer * directions + direction],
                                        weights, direction == 1)
            outputs.append(out)
            finals.append(final)
        x = outputs[0] if directions == 1 else cat(outputs, -1)
        if module.dropout and module.training and layer < module.num_layers - 1:
            x = F.dropout(x, module.dropout, True)
    hidden = module._pack_finals(finals, True)
    if packed.unsorted_indices is not None:
        if isinstance(hidden, tuple):
            hidden = tuple(part.index_select(1, packed.unsorted_indices) for part in hidden)
        else:
            hidden = hidden.index_select(1, packed.unsorted_indices)
    return PackedSequence(x, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices), hidden
