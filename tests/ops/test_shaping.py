"""Shaping ops (split, chunk, unbind, flip, roll, repeat, tile, tril/triu, pad, masks, index_add,
meshgrid, atleast_nd) against NumPy and PyTorch."""
import numpy as np
import pytest

import tensorplug as tp
from ops_helpers import as_layout, check

LAYOUTS = ["contiguous", "transposed", "sliced"]
DTYPES = [tp.float32, tp.float64, tp.int64, tp.int32, tp.bool]


def _values(rng, dtype, shape):
    if dtype is tp.bool:
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(-9, 10, shape).astype(np.dtype(dtype.name))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_split_chunk_unbind_are_views_matching_numpy(layout, rng):
    """split by size or sections, chunk and unbind give NumPy's pieces, as views."""
    a = rng.standard_normal((4, 7, 3))
    x = as_layout(a, layout)
    for got, want in zip(tp.split(x, 3, dim=1), np.split(a, [3, 6], axis=1)):
        check(got, want)
    for got, want in zip(x.split([2, 0, 5], -2), np.split(a, [2, 2], axis=1)):
        check(got, want)
    for got, want in zip(tp.chunk(x, 3, 1), np.split(a, [3, 6], axis=1)):
        check(got, want)
    for got, want in zip(x.unbind(2), [a[:, :, i] for i in range(3)]):
        check(got, want)
    piece = tp.split(x, 2)[0]
    assert piece.untyped_storage() is x.untyped_storage()
    assert len(tp.chunk(tp.ones(6), 4)) == 3  # like PyTorch: ceil(6 / 4) = 2 per chunk, so 3 chunks


def test_split_errors():
    """Bad sizes are RuntimeErrors, bad dims IndexErrors naming the op."""
    x = tp.ones(4, 5)
    with pytest.raises(RuntimeError, match="split_with_sizes"):
        tp.split(x, [1, 2])
    with pytest.raises(IndexError, match="split"):
        tp.split(x, 2, dim=2)
    with pytest.raises(RuntimeError, match="chunk"):
        tp.chunk(x, 0)
    with pytest.raises(IndexError, match="unbind"):
        tp.unbind(x, -3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_flip_roll_match_numpy(dtype, layout, rng):
    """flip and roll (with and without dims, negative and oversized shifts) equal NumPy's."""
    a = _values(rng, dtype, (3, 4, 5))
    x = as_layout(a, layout).to(dtype)
    check(tp.flip(x, (0, -1)), np.flip(a, (0, 2)), dtype=dtype)
    check(x.flip(1), np.flip(a, 1))
    check(tp.fliplr(x), np.fliplr(a))
    check(tp.flipud(x), np.flipud(a))
    check(tp.roll(x, 7), np.roll(a, 7))
    check(tp.roll(x, (1, -7), (0, -1)), np.roll(a, (1, -7), (0, 2)))
    check(x.roll(-2, 1), np.roll(a, -2, 1))


def test_flip_roll_empty_and_errors():
    """Empty tensors pass through; mismatched shifts/dims and bad dims raise."""
    check(tp.roll(tp.ones(0, 3), 2, 0), np.ones((0, 3)))
    check(tp.flip(tp.ones(2, 0), (1,)), np.ones((2, 0)))
    with pytest.raises(RuntimeError, match="roll"):
        tp.roll(tp.ones(3), (1, 2), 0)
    with pytest.raises(IndexError, match="flip"):
        tp.flip(tp.ones(3), (1,))
    with pytest.raises(IndexError, match="roll"):
        tp.roll(tp.ones(3), 1, 3)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_repeat_tile_match_numpy(layout, rng):
    """repeat (new leading dims allowed) and tile equal np.tile."""
    a = rng.standard_normal((2, 3))
    x = as_layout(a, layout)
    check(x.repeat(2, 1, 3), np.tile(a, (2, 1, 3)))
    check(tp.repeat(x, (1, 2)), np.tile(a, (1, 2)))
    check(tp.tile(x, (2,)), np.tile(a, 2))
    check(x.tile((3, 1, 1)), np.tile(a, (3, 1, 1)))
    check(x.repeat(0, 2), np.tile(a, (0, 2)))
    with pytest.raises(RuntimeError, match="repeat"):
        x.repeat(2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("diagonal", [-2, 0, 1, 5])
def test_tril_triu_match_numpy(dtype, diagonal, rng):
    """tril/triu over batched, non-contiguous matrices keep dtype and follow np.tril/np.triu."""
    a = _values(rng, dtype, (2, 4, 5))
    x = as_layout(a, "transposed").to(dtype)
    check(tp.tril(x, diagonal), np.tril(a, diagonal), dtype=dtype)
    check(x.triu(diagonal=diagonal), np.triu(a, diagonal), dtype=dtype)
    y = x.clone()
    y.tril_(diagonal)
    check(y, np.tril(a, diagonal))
    with pytest.raises(RuntimeError, match="tril"):
        tp.tril(tp.ones(3))


@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap"), ("constant", "constant")])
def test_pad_modes_match_numpy(mode, np_mode, rng):
    """pad's modes equal np.pad, with PyTorch's pad order (last dim first)."""
    a = rng.standard_normal((2, 4, 5))
    x = as_layout(a, "sliced")
    got = tp.pad(x, (2, 1, 3, 0), mode=mode)
    check(got, np.pad(a, ((0, 0), (3, 0), (2, 1)), mode=np_mode))
    check(tp.pad(x, (1, 2), mode=mode), np.pad(a, ((0, 0), (0, 0), (1, 2)), mode=np_mode))


def test_pad_constant_value_crop_and_dtypes():
    """Constant padding takes a value, crops with negative pads and keeps integer dtypes."""
    a = np.arange(12).reshape(3, 4)
    check(tp.pad(tp.tensor(a), (1, -2, -1, 2), value=7), np.pad(a, ((0, 2), (1, 0)), constant_values=7)[1:, :-2], dtype=tp.int64)
    check(tp.pad(tp.ones(0, 2), (1, 1)), np.zeros((0, 4)))


def test_pad_errors():
    """Odd or too long pads, reflect pads >= the size and unknown modes are rejected."""
    x = tp.ones(1, 2, 3)
    with pytest.raises(RuntimeError, match="divisible by 2"):
        tp.pad(x, (1,))
    with pytest.raises(RuntimeError, match="Padding length"):
        tp.pad(x, (1,) * 8)
    with pytest.raises(RuntimeError, match="Padding size should be less"):
        tp.pad(x, (3, 0), mode="reflect")
    with pytest.raises(NotImplementedError):
        tp.pad(x, (1, 1), mode="mirror")
    with pytest.raises(RuntimeError, match="negative output size"):
        tp.pad(x, (-2, -2))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_non_constant_pad_takes_one_or_two_dims_before_the_padded_ones(mode):
    """As in PyTorch, a non-constant pad of k trailing dims needs a (k+1)- or (k+2)-d input: a 4-d
    image with a 2-long pad, or a 2-d one with a 4-long pad, raises NotImplementedError before any
    kernel runs (PyTorch 2.13 refuses them; padding them anyway would hide a wrong pad length)."""
    for shape, pad in [((1, 1, 4, 4), (1, 1)), ((2, 5), (1, 1, 1, 1)), ((4,), (1, 1)), ((1, 1, 3, 3, 3), (1, 1))]:
        with pytest.raises(NotImplementedError, match=f"{len(pad)}"):
            tp.pad(tp.ones(*shape), pad, mode=mode)
    for shape, pad in [((2, 5), (1, 1)), ((1, 2, 5), (1, 1)), ((1, 3, 3), (1, 1, 1, 1)), ((1, 1, 3, 3), (1, 1, 1, 1)),
                       ((1, 3, 3, 3), (1,) * 6), ((1, 1, 3, 3, 3), (1,) * 6)]:
        assert tp.pad(tp.ones(*shape), pad, mode=mode).shape[-1] == shape[-1] + 2
    torch = pytest.importorskip("torch")
    with pytest.raises(NotImplementedError):
        torch.nn.functional.pad(torch.ones(1, 1, 4, 4), (1, 1), mode=mode)


def test_pad_roll_repeat_gradients():
    """Gradients of the composites agree with finite differences."""
    x = tp.randn(2, 5, dtype=tp.float64, requires_grad=True)
    assert tp.autograd.gradcheck(lambda t: tp.pad(t.unsqueeze(0), (2, 3, 1, 0), mode="reflect"), (x,))
    assert tp.autograd.gradcheck(lambda t: tp.pad(t, (1, 2), mode="replicate"), (x,))
    assert tp.autograd.gradcheck(lambda t: tp.pad(t, (1, -1, 1, 1), value=3.0), (x,))
    assert tp.autograd.gradcheck(lambda t: tp.roll(t, (1, -2), (0, 1)), (x,))
    assert tp.autograd.gradcheck(lambda t: t.repeat(2, 1, 2), (x,))
    assert tp.autograd.gradcheck(lambda t: tp.flip(t, (1,)).triu(1), (x,))


def test_masked_select_fill_broadcast(rng):
    """masked_select/masked_fill broadcast the mask; values cast to the input dtype."""
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((3, 4))
    m = rng.integers(0, 2, (4,)).astype(bool)
    x = as_layout(a, "transposed")
    check(tp.masked_select(x, tp.tensor(m)), torch.masked_select(torch.tensor(a), torch.tensor(m)))
    check(x.masked_fill(tp.tensor(m), -1.5), torch.tensor(a).masked_fill(torch.tensor(m), -1.5))
    ints = tp.tensor(np.arange(4))
    check(ints.masked_fill(tp.tensor(m), 2.7), np.where(m, 2, np.arange(4)), dtype=tp.int64)
    y = x.clone()
    y.masked_fill_(tp.tensor(m), tp.tensor(9.0))
    check(y, np.where(m, 9.0, a))
    assert tp.masked_select(tp.ones(0), tp.ones(0, dtype=tp.bool)).shape == (0,)
    with pytest.raises(RuntimeError, match="BoolTensor"):
        x.masked_fill(tp.ones(4), 0.0)
    with pytest.raises(RuntimeError, match="masked_fill_"):
        tp.ones(4).masked_fill_(tp.ones(3, 4, dtype=tp.bool), 0.0)
    with pytest.raises(RuntimeError, match="masked_select"):
        tp.masked_select(x, tp.ones(5, dtype=tp.bool))


def test_masked_fill_gradient():
    """Filled positions get no gradient."""
    x = tp.randn(3, 4, dtype=tp.float64, requires_grad=True)
    mask = tp.tensor([True, False, True, False])
    assert tp.autograd.gradcheck(lambda t: t.masked_fill(mask, 0.5) * 2, (x,))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_add_matches_torch(dim, rng):
    """index_add accumulates repeated indices, scaled by alpha; index_add_ works in place."""
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((4, 5))
    index = np.array([0, 3, 0])
    src_shape = list(a.shape)
    src_shape[dim] = 3
    s = rng.standard_normal(src_shape)
    want = torch.tensor(a).index_add(dim, torch.tensor(index), torch.tensor(s), alpha=2.0)
    check(tp.index_add(tp.tensor(a), dim, tp.tensor(index), tp.tensor(s), alpha=2.0), want)
    y = tp.tensor(a)
    y.index_add_(dim, tp.tensor(index), tp.tensor(s), alpha=2.0)
    check(y, want)


def test_index_add_errors_and_gradient():
    """Size and dtype mismatches raise; gradients reach both input and source."""
    x = tp.zeros(4, 5)
    with pytest.raises(RuntimeError, match="Number of indices"):
        tp.index_add(x, 0, tp.tensor([0, 1]), tp.ones(3, 5))
    with pytest.raises(RuntimeError, match="same scalar type"):
        tp.index_add(x, 0, tp.tensor([0]), tp.ones(1, 5, dtype=tp.float64))
    with pytest.raises(IndexError, match="index_add"):
        tp.index_add(x, 2, tp.tensor([0]), tp.ones(1, 5))
    with pytest.raises(IndexError):
        tp.index_add(x, 0, tp.tensor([7]), tp.ones(1, 5))
    a = tp.randn(4, 3, dtype=tp.float64, requires_grad=True)
    s = tp.randn(2, 3, dtype=tp.float64, requires_grad=True)
    assert tp.autograd.gradcheck(lambda u, v: tp.index_add(u, 0, tp.tensor([1, 1]), v, alpha=3), (a, s))


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_matches_numpy(indexing):
    """meshgrid gives NumPy's grids for both indexing conventions."""
    a, b, c = np.arange(3.0), np.arange(4.0) * 10, np.arange(2.0) * 100
    got = tp.meshgrid(tp.tensor(a), tp.tensor(b), tp.tensor(c), indexing=indexing)
    for g, w in zip(got, np.meshgrid(a, b, c, indexing=indexing)):
        check(g, w)
    with pytest.raises(RuntimeError, match="meshgrid"):
        tp.meshgrid(tp.ones(2, 2))
    with pytest.raises(ValueError, match="indexing"):
        tp.meshgrid(tp.ones(2), indexing="ji")


def test_atleast_nd_narrow_copy_and_aliases():
    """atleast_Nd follow NumPy's shapes; narrow_copy copies; swapdims/moveaxis are aliases."""
    for f, g in ((tp.atleast_1d, np.atleast_1d), (tp.atleast_2d, np.atleast_2d), (tp.atleast_3d, np.atleast_3d)):
        for shape in ((), (3,), (2, 3), (2, 3, 4)):
            assert f(tp.ones(shape)).shape == g(np.ones(shape)).shape
    assert [t.shape for t in tp.atleast_2d(tp.ones(()), tp.ones(3))] == [(1, 1), (1, 3)]
    x = tp.arange(10.0).reshape(2, 5)
    y = tp.narrow_copy(x, 1, 1, 3)
    check(y, np.arange(10.0).reshape(2, 5)[:, 1:4])
    assert y.untyped_storage() is not x.untyped_storage()
    assert tp.swapdims(x, 0, 1).shape == (5, 2) and x.moveaxis(0, -1).shape == (5, 2)
