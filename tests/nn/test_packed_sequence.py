"""tp.nn.utils.rnn (pad, pack, unpack) and RNN/LSTM/GRU over a PackedSequence, against NumPy and torch."""
import importlib.util

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.nn.utils.rnn import (PackedSequence, invert_permutation, pack_padded_sequence, pack_sequence,
                                     pad_packed_sequence, pad_sequence, unpack_sequence, unpad_sequence)

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed: the torch comparisons need it")


def _numpy_pack(padded: np.ndarray, lengths: list, batch_first: bool):
    """(data, batch_sizes, order) of a padded batch, written out step by step."""
    if batch_first:
        padded = padded.swapaxes(0, 1)
    order = sorted(range(len(lengths)), key=lambda b: -lengths[b])
    rows, batch_sizes = [], []
    for t in range(max(lengths)):
        going = [b for b in order if lengths[b] > t]
        batch_sizes.append(len(going))
        rows.extend(padded[t, b] for b in going)
    return np.stack(rows), batch_sizes, order


# --- torch-free: layouts against NumPy ----------------------------------------------------------------
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths", [[5, 3, 3, 1], [2, 5, 1, 5]])
def test_pack_padded_matches_numpy_layout(batch_first, lengths):
    """data and batch_sizes are the steps of the length-sorted batch, one after another; ties keep order."""
    padded = np.random.randn(*((4, 5, 2) if batch_first else (5, 4, 2))).astype(np.float32)
    packed = pack_padded_sequence(tp.tensor(padded), tp.tensor(lengths), batch_first=batch_first, enforce_sorted=False)
    data, batch_sizes, order = _numpy_pack(padded, lengths, batch_first)
    np.testing.assert_array_equal(packed.data.numpy(), data)
    assert packed.batch_sizes.tolist() == batch_sizes and packed.batch_sizes.dtype == tp.int64
    assert packed.sorted_indices.tolist() == order
    assert packed.unsorted_indices.tolist() == list(np.argsort(order))


@pytest.mark.parametrize("batch_first", [False, True])
def test_pad_pack_round_trip(batch_first):
    """pad_packed_sequence undoes pack_padded_sequence: padding_value past each length, total_length steps."""
    lengths = [3, 6, 1]
    padded = np.random.randn(*((3, 6, 2) if batch_first else (6, 3, 2)))
    packed = pack_padded_sequence(tp.tensor(padded), lengths, batch_first=batch_first, enforce_sorted=False)
    out, out_lengths = pad_packed_sequence(packed, batch_first=batch_first, padding_value=-7.0, total_length=8)
    expected = np.full((3, 8, 2), -7.0)
    for b, length in enumerate(lengths):
        expected[b, :length] = (padded[b] if batch_first else padded[:, b])[:length]
    np.testing.assert_array_equal(out.numpy(), expected if batch_first else expected.swapaxes(0, 1))
    assert out_lengths.tolist() == lengths and out_lengths.device.type == "cpu"


@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_and_unpad(side):
    """pad_sequence fills on the chosen side; unpad_sequence gives back the (right-padded) sequences."""
    seqs = [np.random.randn(n, 3) for n in (2, 4, 1)]
    out = pad_sequence([tp.tensor(s) for s in seqs], batch_first=True, padding_value=9.0, padding_side=side).numpy()
    for b, s in enumerate(seqs):
        pad = np.full((4 - len(s), 3), 9.0)
        np.testing.assert_array_equal(out[b], np.concatenate([s, pad] if side == "right" else [pad, s]))
    time_major = pad_sequence([tp.tensor(s) for s in seqs])
    assert tuple(time_major.shape) == (4, 3, 3)
    for s, back in zip(seqs, unpad_sequence(time_major, tp.tensor([2, 4, 1]))):
        np.testing.assert_array_equal(back.numpy(), s)


def test_pack_sequence_round_trip_and_integer_data():
    """pack_sequence/unpack_sequence keep order and dtype, 1-D sequences included."""
    seqs = [tp.tensor([1, 2]), tp.tensor([3, 4, 5]), tp.tensor([6])]
    packed = pack_sequence(seqs, enforce_sorted=False)
    assert packed.data.tolist() == [3, 1, 6, 4, 2, 5] and packed.batch_sizes.tolist() == [3, 2, 1]
    assert [s.tolist() for s in unpack_sequence(packed)] == [[1, 2], [3, 4, 5], [6]]
    assert pack_sequence([tp.ones(3, 2), tp.ones(2, 2)]).sorted_indices is None


def test_errors_say_what_is_wrong():
    """Unsorted lengths with enforce_sorted, empty sequences, wrong counts and short total_length raise."""
    x = tp.randn(5, 3, 2)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order when `enforce_sorted` is True"):
        pack_padded_sequence(x, [3, 5, 1])
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        pack_sequence([tp.ones(1), tp.ones(2)])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        pack_padded_sequence(x, [5, 3, 0], enforce_sorted=False)
    with pytest.raises(RuntimeError, match=r"Expected `len\(lengths\)` to be equal to batch_size, but got 2 \(batch_size=3\)"):
        pack_padded_sequence(x, [5, 3])
    with pytest.raises(RuntimeError, match="1D CPU int64 tensor, but got 2D"):
        pack_padded_sequence(x, tp.tensor([[5, 3, 1]]))
    packed = pack_padded_sequence(x, [5, 3, 1])
    with pytest.raises(ValueError, match="total_length=4 and max sequence length being 5"):
        pad_packed_sequence(packed, total_length=4)
    with pytest.raises(RuntimeError, match="Expected padding_side to be one of left or right, but got middle."):
        pad_sequence([tp.ones(2)], padding_side="middle")
    with pytest.raises(RuntimeError, match="received an empty list of sequences"):
        pad_sequence([])


def test_packed_sequence_type():
    """A namedtuple of four fields; .to() moves data, returns self when nothing changes; inverse indices."""
    packed = pack_padded_sequence(tp.randn(4, 3, 2), [2, 4, 3], enforce_sorted=False)
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert PackedSequence._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert packed.to("cpu") is packed and packed.to(tp.float32) is packed
    double = packed.double()
    assert isinstance(double, PackedSequence) and double.data.dtype == tp.float64 and double.batch_sizes is batch_sizes
    assert invert_permutation(sorted_indices).tolist() == unsorted_indices.tolist() and invert_permutation(None) is None
    rebuilt = PackedSequence(data, batch_sizes, sorted_indices)
    assert rebuilt.unsorted_indices.tolist() == unsorted_indices.tolist() and not packed.is_cuda


def test_gradient_flows_through_pack_and_pad():
    """d(sum of pad(pack(x)))/dx is 1 inside each length and 0 in the padding."""
    x = tp.randn(4, 3, 2, requires_grad=True)
    out, _ = pad_packed_sequence(pack_padded_sequence(x, [2, 4, 1], enforce_sorted=False), padding_value=5.0)
    out.sum().backward()
    mask = (np.arange(4)[:, None] < np.array([2, 4, 1])[None, :]).astype(np.float32)
    np.testing.assert_array_equal(x.grad.numpy(), np.broadcast_to(mask[:, :, None], (4, 3, 2)))


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_packed_rnn_equals_each_sequence_alone(kind):
    """Without torch: the packed output and final state of each sequence are those of running it alone."""
    module = getattr(tp.nn, kind)(3, 4, num_layers=2, bidirectional=True).double()
    lengths = [2, 5, 3]
    padded = tp.tensor(np.random.randn(5, 3, 3))
    with tp.no_grad():
        out, hidden = module(pack_padded_sequence(padded, lengths, enforce_sorted=False))
        out, _ = pad_packed_sequence(out)
        h_n = hidden[0] if kind == "LSTM" else hidden
        for b, length in enumerate(lengths):
            alone, alone_hidden = module(padded[:length, b:b + 1])
            np.testing.assert_allclose(out[:length, b].numpy(), alone[:, 0].numpy(), rtol=1e-10, atol=1e-12)
            alone_h = alone_hidden[0] if kind == "LSTM" else alone_hidden
            np.testing.assert_allclose(h_n[:, b].numpy(), alone_h[:, 0].numpy(), rtol=1e-10, atol=1e-12)
        assert np.all(out[length:, b].numpy() == 0)


# --- every backend ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_packed_rnn_on_device_matches_cpu(device, kind):
    """pack -> bidirectional RNN -> pad on a device, with gradients, gives the CPU's numbers."""
    cpu_module = getattr(tp.nn, kind)(3, 4, bidirectional=True, batch_first=True)
    array = np.random.randn(3, 5, 3).astype(np.float32)
    results = []
    for where in ("cpu", device):
        module = getattr(tp.nn, kind)(3, 4, bidirectional=True, batch_first=True)
        module.load_state_dict(cpu_module.state_dict())
        module = module.to(where)
        x = tp.tensor(array, device=where, requires_grad=True)
        packed = pack_padded_sequence(x, [4, 5, 2], batch_first=True, enforce_sorted=False)
        out, hidden = module(packed)
        padded, lengths = pad_packed_sequence(out, batch_first=True)
        h_n = hidden[0] if kind == "LSTM" else hidden
        (padded.sum() + (h_n * h_n).sum()).backward()
        assert padded.device.type == where and lengths.tolist() == [4, 5, 2]
        results.append([padded.detach().cpu().numpy(), h_n.detach().cpu().numpy(), x.grad.cpu().numpy(),
                        module.weight_hh_l0_reverse.grad.cpu().numpy()])
    for ours, reference in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, reference, rtol=1e-4, atol=1e-5)


# --- against torch 2.13 ----------------------------------------------------------------------------------
CONFIGS = [
    dict(),
    dict(num_layers=2),
    dict(bidirectional=True, batch_first=True),
    dict(num_layers=2, bidirectional=True),
    dict(num_layers=2, bidirectional=True, batch_first=True, bias=False),
]


def _run(lib, module, padded, lengths, batch_first, enforce_sorted, state, grads):
    """Pack, run, pad; backward of a fixed weighted sum. Returns every number to compare."""
    x = lib.tensor(padded, requires_grad=True)
    state = None if state is None else (
        tuple(lib.tensor(s, requires_grad=True) for s in state) if isinstance(state, tuple) else lib.tensor(state, requires_grad=True))
    packed = lib.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    out, hidden = module(packed, state)
    padded_out, out_lengths = lib.nn.utils.rnn.pad_packed_sequence(out, batch_first=batch_first)
    hidden = hidden if isinstance(hidden, tuple) else (hidden,)
    loss = (padded_out * lib.tensor(grads[0])).sum()
    for h, g in zip(hidden, grads[1:]):
        loss = loss + (h * lib.tensor(g)).sum()
    loss.backward()
    numbers = [out.data, out.batch_sizes, padded_out, out_lengths, *hidden, x.grad]
    if state is not None:
        numbers += [s.grad for s in (state if isinstance(state, tuple) else (state,))]
    numbers += [p.grad for p in module.parameters()]
    return [n.detach().numpy() for n in numbers]


@needs_torch
@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_packed_rnn_matches_torch(kind, config, enforce_sorted):
    """Packed output, h_n (c_n), padded output, and gradients of input, initial state and weights match torch."""
    import torch

    theirs = getattr(torch.nn, kind)(3, 4, **config).double()
    ours = getattr(tp.nn, kind)(3, 4, **config).double()
    ours.load_state_dict({k: tp.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    batch_first = config.get("batch_first", False)
    lengths = [6, 4, 4, 1] if enforce_sorted else [4, 6, 1, 4]
    padded = np.random.randn(*((4, 6, 3) if batch_first else (6, 4, 3)))
    layers = config.get("num_layers", 1) * (2 if config.get("bidirectional") else 1)
    state_shape = (layers, 4, 4)
    state = None
    if not enforce_sorted:  # an explicit initial state checks that it is permuted into sorted order
        state = (np.random.randn(*state_shape), np.random.randn(*state_shape)) if kind == "LSTM" else np.random.randn(*state_shape)
    out_shape = padded.shape[:2] + (4 * (2 if config.get("bidirectional") else 1),)
    grads = [np.random.randn(*out_shape)] + [np.random.randn(*state_shape) for _ in range(2 if kind == "LSTM" else 1)]
    expected = _run(torch, theirs, padded, lengths, batch_first, enforce_sorted, state, grads)
    got = _run(tp, ours, padded, lengths, batch_first, enforce_sorted, state, grads)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-11)


@needs_torch
@pytest.mark.parametrize("lengths", [[3, 5, 3, 5, 1], [1, 1, 2, 5, 4]])
def test_pack_functions_match_torch(lengths):
    """pack_padded_sequence, pad_sequence, pack_sequence give torch's fields and values, ties included."""
    import torch

    padded = np.random.randn(5, 5, 2)
    ours = pack_padded_sequence(tp.tensor(padded), lengths, enforce_sorted=False)
    theirs = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(padded), lengths, enforce_sorted=False)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    seqs = [np.random.randn(n, 2) for n in lengths]
    for side in ("left", "right"):
        np.testing.assert_array_equal(
            pad_sequence([tp.tensor(s) for s in seqs], True, 2.5, side).numpy(),
            torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], True, 2.5, side).numpy())
    theirs_packed = torch.nn.utils.rnn.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    ours_packed = pack_sequence([tp.tensor(s) for s in seqs], enforce_sorted=False)
    np.testing.assert_array_equal(ours_packed.data.numpy(), theirs_packed.data.numpy())


@needs_torch
def test_error_messages_match_torch():
    """The errors a user meets most often read as torch's."""
    import torch

    cases = [
        lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(5, 3, 2), [3, 5, 1]),
        lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(5, 3, 2), [5, 3, 0], enforce_sorted=False),
        lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(5, 3, 2), [5, 3]),
        lambda lib: lib.nn.utils.rnn.pad_packed_sequence(
            lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(5, 3, 2), [5, 3, 1]), total_length=4),
        lambda lib: lib.nn.utils.rnn.pad_sequence([lib.ones(2)], padding_side="middle"),
        lambda lib: lib.nn.utils.rnn.pad_sequence([]),
        lambda lib: lib.nn.LSTM(3, 4)(lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(5, 3, 2), [5, 3, 1])),
    ]
    for case in cases:
        with pytest.raises(Exception) as theirs:
            case(torch)
        with pytest.raises(Exception) as ours:
            case(tp)
        if "mat1 and mat2" in str(theirs.value):  # torch only fails in its matmul
            assert "input_size" in str(ours.value)
            continue
        assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)
