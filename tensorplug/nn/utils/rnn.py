"""``tp.nn.utils.rnn``: variable-length sequences as padded batches or as a ``PackedSequence``.

A packed sequence stores the time steps of a batch sorted by decreasing length, step after step:
``data`` holds the ``batch_sizes[0]`` first elements, then the ``batch_sizes[1]`` second ones,
and so on, so that the recurrent layers (RNN, LSTM, GRU) run each step on the sequences still
going. ``sorted_indices`` maps the sorted order back to the caller's batch order
(``None`` when the caller passed the batch already sorted, ``enforce_sorted=True``).

Everything here is a composite of ordinary ops (index_select, cat, stack, full), so it runs and
differentiates on every backend. Lengths and ``batch_sizes`` live on the CPU as in PyTorch: they
decide shapes, which are Python numbers.

>>> import tensorplug as tp
>>> from tensorplug.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
>>> padded = tp.tensor([[1., 2., 3.], [4., 5., 0.]]).t()   # (time, batch), lengths 3 and 2
>>> packed = pack_padded_sequence(padded, [3, 2])
>>> packed.data.tolist(), packed.batch_sizes.tolist()
([1.0, 4.0, 2.0, 5.0, 3.0], [2, 2, 1])
>>> pad_packed_sequence(packed)[0].t().tolist()
[[1.0, 2.0, 3.0], [4.0, 5.0, 0.0]]
"""
from __future__ import annotations

from collections import namedtuple

from ...frontend import dtypes as _dtypes
from ...frontend.factories import full, tensor
from ...frontend.ops.joining import cat, stack
from ...frontend.tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]

_PackedSequenceFields = namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def invert_permutation(permutation):
    """The permutation that undoes ``permutation`` (a 1-D int64 tensor), or None for None."""
    if permutation is None:
        return None
    order = permutation.tolist()
    inverse = [0] * len(order)
    for position, index in enumerate(order):
        inverse[index] = position
    return tensor(inverse, dtype=permutation.dtype, device=permutation.device)


class PackedSequence(_PackedSequenceFields):
    """The data and ``batch_sizes`` of a packed batch of sequences, with the permutation that
    sorted the batch by decreasing length. Made by :func:`pack_padded_sequence` and
    :func:`pack_sequence`; accepted by ``nn.RNN``, ``nn.LSTM`` and ``nn.GRU``."""

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            # PackedSequence((data, batch_sizes)), the older calling convention PyTorch keeps.
            if not isinstance(data, (list, tuple)) or len(data) != 2:
                raise TypeError("PackedSequence: expected data and batch_sizes, or a (data, batch_sizes) pair")
            data, batch_sizes = data
        if not isinstance(batch_sizes, Tensor):
            raise TypeError(f"PackedSequence: batch_sizes must be a Tensor, got {type(batch_sizes).__name__}")
        if batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn.")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> "PackedSequence":
        """``data.to(*args, **kwargs)``; the indices follow data's device, batch_sizes stays on the
        CPU. Returns ``self`` when data is unchanged."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_indices, unsorted_indices = (
            None if index is None else index.to(data.device) for index in (self.sorted_indices, self.unsorted_indices))
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cpu(self) -> "PackedSequence":
        return self.to("cpu")

    def double(self) -> "PackedSequence":
        return self.to(dtype=_dtypes.float64)

    def float(self) -> "PackedSequence":
        return self.to(dtype=_dtypes.float32)

    def half(self) -> "PackedSequence":
        return self.to(dtype=_dtypes.float16)

    def long(self) -> "PackedSequence":
        return self.to(dtype=_dtypes.int64)

    def int(self) -> "PackedSequence":
        return self.to(dtype=_dtypes.int32)

    def short(self) -> "PackedSequence":
        return self.to(dtype=_dtypes.int16)

    def char(self) -> "PackedSequence":
        return self.to(dtype=_dtypes.int8)

    def byte(self) -> "PackedSequence":
        return self.to(dtype=_dtypes.uint8)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda


def _lengths_list(lengths) -> list:
    """``lengths`` (a list of ints or a 1-D tensor on any device) as Python ints."""
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.ndim}D "
                               f"{lengths.device.type} {lengths.dtype} tensor")
        return [int(length) for length in lengths.tolist()]
    return [int(length) for length in lengths]


def _sorted_order(lengths: list) -> list:
    """Batch indices by decreasing length; ties keep their order (a stable sort, as PyTorch's)."""
    return sorted(range(len(lengths)), key=lambda index: -lengths[index])


def _batch_sizes(sorted_lengths: list) -> list:
    """How many sequences are still going at each time step, for lengths in decreasing order."""
    return [sum(1 for length in sorted_lengths if length > t) for t in range(sorted_lengths[0])]


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch, ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``), whose sequence ``b``
    has ``lengths[b]`` valid steps. With ``enforce_sorted`` the lengths must decrease; otherwise the
    batch is sorted here and the permutation kept in the result."""
    lengths = _lengths_list(lengths)
    batch_dim, time_dim = (0, 1) if batch_first else (1, 0)
    batch = input.shape[batch_dim]
    if enforce_sorted:
        order = None
        sorted_lengths = lengths
    else:
        order = _sorted_order(lengths)
        sorted_lengths = [lengths[index] for index in order]
    if len(lengths) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={batch})")
    if not lengths or sorted_lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if any(earlier < later for earlier, later in zip(sorted_lengths, sorted_lengths[1:])):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
            "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement "
            "if you do not need ONNX exportability.")
    steps = input.shape[time_dim]
    if sorted_lengths[0] > steps:
        # PyTorch reads past the padded input here; an error is the useful answer.
        raise RuntimeError(f"pack_padded_sequence: a length of {sorted_lengths[0]} exceeds the input's "
                           f"{steps} time steps")
    batch_sizes = _batch_sizes(sorted_lengths)
    position = order if order is not None else list(range(batch))
    # Row of (t, sorted sequence j) in the input flattened over its first two dimensions.
    if batch_first:
        rows = [position[j] * steps + t for t, size in enumerate(batch_sizes) for j in range(size)]
    else:
        rows = [t * batch + position[j] for t, size in enumerate(batch_sizes) for j in range(size)]
    flat = input.reshape((batch * steps,) + tuple(input.shape[2:]))
    data = flat.index_select(0, tensor(rows, dtype=_dtypes.int64, device=input.device))
    sorted_indices = None if order is None else tensor(order, dtype=_dtypes.int64, device=input.device)
    return PackedSequence(data, tensor(batch_sizes, dtype=_dtypes.int64), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length=None) -> tuple:
    """Undo :func:`pack_padded_sequence`: ``(padded, lengths)``, padded ``(T, B, *)`` (``(B, T, *)``
    with ``batch_first``) in the caller's batch order, ``T`` the longest length or ``total_length``;
    ``lengths`` an int64 CPU tensor."""
    data = sequence.data
    batch_sizes = [int(size) for size in sequence.batch_sizes.tolist()]
    batch = batch_sizes[0]
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {steps}")
        steps = total_length
    offsets = [0]
    for size in batch_sizes:
        offsets.append(offsets[-1] + size)
    sorted_lengths = [sum(1 for size in batch_sizes if size > j) for j in range(batch)]
    if sequence.unsorted_indices is None:
        sorted_position = list(range(batch))
    else:
        sorted_position = [int(index) for index in sequence.unsorted_indices.tolist()]
    padding_row = data.shape[0]

    def row(t: int, b: int) -> int:
        j = sorted_position[b]
        return offsets[t] + j if t < len(batch_sizes) and j < batch_sizes[t] else padding_row

    if batch_first:
        rows = [row(t, b) for b in range(batch) for t in range(steps)]
        shape = (batch, steps)
    else:
        rows = [row(t, b) for t in range(steps) for b in range(batch)]
        shape = (steps, batch)
    feature_shape = tuple(data.shape[1:])
    source = cat([data, full((1,) + feature_shape, padding_value, dtype=data.dtype, device=data.device)], 0)
    padded = source.index_select(0, tensor(rows, dtype=_dtypes.int64, device=data.device)).reshape(shape + feature_shape)
    lengths = tensor([sorted_lengths[sorted_position[b]] for b in range(batch)], dtype=_dtypes.int64)
    return padded, lengths


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stack tensors of shapes ``(L_i, *)`` into ``(max L, B, *)`` (``(B, max L, *)`` with
    ``batch_first``), filling with ``padding_value`` on the ``padding_side`` ("right" or "left")."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = list(sequences.unbind(0)) if isinstance(sequences, Tensor) else list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    trailing = tuple(sequences[0].shape[1:])
    for seq in sequences:
        if tuple(seq.shape[1:]) != trailing:
            raise RuntimeError(f"pad_sequence: every sequence must have the trailing shape {list(trailing)} of the "
                               f"first, got {list(seq.shape)}")
    longest = max(seq.shape[0] for seq in sequences)
    padded = []
    for seq in sequences:
        missing = longest - seq.shape[0]
        if missing:
            fill = full((missing,) + trailing, padding_value, dtype=seq.dtype, device=seq.device)
            seq = cat([seq, fill] if padding_side == "right" else [fill, seq], 0)
        padded.append(seq)
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list:
    """Undo :func:`pad_sequence` (right padding): the list of ``(lengths[b], *)`` tensors."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[b, :length] for b, length in enumerate(_lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors of shapes ``(L_i, *)``; with ``enforce_sorted`` the lengths must
    decrease."""
    lengths = [seq.shape[0] for seq in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """Undo :func:`pack_sequence`: the list of ``(L_i, *)`` tensors in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)

