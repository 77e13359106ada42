"""Ops whose result depends on values a meta tensor does not have: each refuses before reading
anything, with an error naming the op and the meta device (PyTorch's exception type where PyTorch
refuses too), and the writes and checks that do not change a shape still run."""
import pytest

import tensorplug as tp
from meta_reference import metadata, torch_or_skip


def M(L, *shape, dtype=None):
    return L.empty(*shape, dtype=dtype or L.float32, device="meta")


def B(L, *shape):
    return L.empty(*shape, dtype=L.bool, device="meta")


def I(L, *shape):
    return L.empty(*shape, dtype=L.int64, device="meta")


# name -> (call, exception type, what the message names). PyTorch raises the same type for each.
REFUSED = {
    "nonzero": (lambda L: L.nonzero(M(L, 4, 5)), NotImplementedError, r"^nonzero\(\): cannot run on a meta tensor"),
    "argwhere": (lambda L: L.argwhere(M(L, 4, 5)), NotImplementedError, r"^argwhere\(\): cannot run on a meta tensor"),
    "where(condition)": (lambda L: L.where(B(L, 4, 5)), NotImplementedError, r"^where\(condition\): cannot run on a meta"),
    "boolean mask": (lambda L: M(L, 4, 5)[B(L, 4, 5)], NotImplementedError,
                     r"^indexing with a boolean mask: cannot run on a meta tensor \(shape \[4, 5\], dtype bool\)"),
    "boolean mask of the first dim": (lambda L: M(L, 4, 5)[B(L, 4)], NotImplementedError,
                                      r"^indexing with a boolean mask: cannot run on a meta tensor"),
    "masked_select": (lambda L: L.masked_select(M(L, 4, 5), B(L, 4, 5)), NotImplementedError,
                      r"^masked_select\(\): cannot run on a meta tensor"),
    "unique": (lambda L: L.unique(M(L, 6)), NotImplementedError, r"^unique\(\): cannot run on a meta tensor"),
    "unique along a dim": (lambda L: L.unique(M(L, 3, 4), dim=0), NotImplementedError, r"^unique\(\): cannot run"),
    "unique_consecutive": (lambda L: L.unique_consecutive(M(L, 6)), NotImplementedError,
                           r"^unique_consecutive\(\): cannot run on a meta tensor"),
    "bincount": (lambda L: L.bincount(I(L, 5)), NotImplementedError, r"^bincount\(\): cannot run on a meta tensor"),
    "equal": (lambda L: L.equal(M(L, 3), M(L, 3)), NotImplementedError,
              r"^equal\(\): cannot run on a meta tensor .*whether the values are equal"),
    "repeat_interleave without output_size": (lambda L: L.repeat_interleave(M(L, 3, 4), I(L, 3), dim=0), RuntimeError,
                                              r"^repeat_interleave\(\) without output_size: cannot run on a meta"),
    "lstsq": (lambda L: L.linalg.lstsq(M(L, 5, 3), M(L, 5, 2)), NotImplementedError,
              r"^linalg.lstsq: cannot run on meta tensors .*rank of A"),
    "ctc_loss with meta lengths": (lambda L: L.nn.functional.ctc_loss(M(L, 10, 2, 5), I(L, 2, 3), I(L, 2), I(L, 2)),
                                   NotImplementedError, r"^ctc_loss\(\) with input_lengths on the meta device"),
    # Python answers about values: PyTorch's item() error.
    "allclose": (lambda L: L.allclose(M(L, 3), M(L, 3)), RuntimeError, r"^Tensor.item\(\) cannot be called on meta"),
    "is_nonzero": (lambda L: M(L, 1).is_nonzero(), RuntimeError, r"^Tensor.item\(\) cannot be called on meta tensors"),
    "a 0-d boolean mask": (lambda L: M(L, 3)[B(L)], (NotImplementedError, RuntimeError), r"meta"),
    "one_hot without num_classes": (lambda L: L.nn.functional.one_hot(I(L, 3)), (NotImplementedError, RuntimeError),
                                    r"meta"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_with_the_op_named(name):
    call, error, message = REFUSED[name]
    with pytest.raises(error, match=message):
        call(tp)


@pytest.mark.parametrize("name", list(REFUSED))
def test_pytorch_refuses_too(name):
    """PyTorch has no meta result for these either; where it names one exception type, ours is it."""
    torch = torch_or_skip()
    call, error, _ = REFUSED[name]
    with pytest.raises(Exception) as theirs:
        call(torch)
    if isinstance(error, type):
        assert isinstance(theirs.value, error), theirs.value


def test_tensor_split_at_meta_points_is_refused():
    # PyTorch needs the points on the CPU (RuntimeError); here any device's points are read, but
    # a meta tensor has none to read.
    with pytest.raises(NotImplementedError, match=r"^tensor_split\(\) with a tensor of split points: cannot run on a meta"):
        tp.tensor_split(M(tp, 6), I(tp, 2))
    assert [p.shape for p in tp.tensor_split(M(tp, 6), tp.tensor([1, 4]))] == [(1,), (3,), (2,)]


def test_refusal_reads_nothing():
    """The refusal is a check of the device, made before any value is asked for: the backend's
    generic 'no data' error never appears."""
    for call, _, _ in REFUSED.values():
        with pytest.raises(Exception) as caught:
            call(tp)
        assert "Cannot copy out of meta tensor" not in str(caught.value)


def test_a_mask_from_the_cpu_selects_on_meta():
    """A mask with values (on the CPU) gives a known count, so a meta tensor can be indexed by it."""
    assert metadata(M(tp, 4, 5)[tp.tensor([True, False, True, True])]) == ((3, 5), "float32", (5, 1), 0, "meta")


# --- writes and checks that keep working --------------------------------------------------------
def test_one_value_written_through_a_meta_mask():
    """``t[mask] = v`` with one value changes no shape: it runs (as masked_fill_) and records the
    gradient of the value, where PyTorch's meta backward fails."""
    t = tp.empty(4, 5, device="meta", requires_grad=True).clone()
    value = tp.empty((), device="meta", requires_grad=True)
    t[t > 0] = value
    assert t.shape == (4, 5) and t.grad_fn is not None and t._version == 1
    t.sum().backward()
    assert value.grad.shape == () and value.grad.is_meta
    wide = M(tp, 4, 5, 3)
    wide[B(tp, 4)] = 0.0  # the mask covers the leading dims
    assert wide._version == 1
    with pytest.raises(IndexError, match="shape of the mask"):
        wide[B(tp, 5)] = 0.0
    with pytest.raises(NotImplementedError, match="boolean mask"):
        wide[B(tp, 4)] = M(tp, 2, 5, 3)  # how many rows it needs is unknown


def test_one_value_written_through_a_meta_mask_as_pytorch():
    torch = torch_or_skip()
    results = []
    for L in (tp, torch):
        t = M(L, 4, 5)
        t[B(L, 4, 5)] = 1.0
        results.append(metadata(t))
    assert results[0] == results[1]


def test_value_checks_are_skipped():
    """Index bounds, probabilities and mask counts cannot be checked without values; as in
    PyTorch the op runs and gives its result's metadata."""
    assert M(tp, 3, 4).gather(1, I(tp, 3, 9)).shape == (3, 9)
    assert tp.nn.functional.nll_loss(M(tp, 4, 5), I(tp, 4)).shape == ()
    assert tp.multinomial(M(tp, 2, 5), 3).shape == (2, 3)
    assert M(tp, 4).masked_scatter(B(tp, 4), M(tp, 1)).shape == (4,)
    assert tp.nn.functional.embedding_bag(I(tp, 2, 3), M(tp, 10, 4)).shape == (2, 4)


def test_values_on_the_cpu_are_still_checked():
    """Only meta tensors skip the checks: a CPU index with values out of range is refused even
    for a meta input."""
    with pytest.raises(IndexError, match="out of bounds"):
        M(tp, 4, 5).index_select(0, tp.tensor([7]))
