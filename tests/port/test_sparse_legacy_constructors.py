"""tp.sparse.FloatTensor(indices, values, size) and the other deprecated sparse typed
constructors (issue 13): PyTorch 2.13's call forms, dtypes, shapes, warnings and errors, against
torch.sparse's own constructors."""
import warnings

import numpy as np
import pytest

import tensorplug as tp
from torch_reference import torch_or_skip

NAMES = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor", "ShortTensor",
         "IntTensor", "LongTensor"]
INDICES = [[0, 1, 1, 0], [2, 0, 2, 2]]
WARNING = r"torch\.sparse\.SparseTensor\({}\) is deprecated\.  Please use torch\.sparse_coo_tensor\({}\)\."


def _theirs(torch, name, *args, **kwargs):
    """torch.sparse.<name>(...), its deprecation warning (printed once per process) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(torch.sparse, name)(*args, **kwargs)


def _ours(name, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(tp.sparse, name)(*args, **kwargs)


def _ours_call(call, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(*args)


def _same(ours, theirs) -> None:
    assert ours.is_sparse and theirs.is_sparse
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert ours.sparse_dim() == theirs.sparse_dim() and ours._nnz() == theirs._nnz()
    assert ours.is_coalesced() == theirs.is_coalesced()
    np.testing.assert_array_equal(ours.to_dense().float().numpy(), theirs.to_dense().float().numpy())


@pytest.mark.parametrize("values_dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("name", NAMES)
def test_indices_values_size_keep_the_values_dtype(name, values_dtype):
    """(indices, values, size) is sparse_coo_tensor's: the values keep their dtype whatever the type's name, as in torch."""
    torch = torch_or_skip()
    values = np.array([1, 2, 3, 4], dtype=values_dtype)
    with pytest.warns(UserWarning, match=WARNING.format("indices, values, shape, \\*, device=",
                                                        "indices, values, shape, dtype=, device=")):
        ours = getattr(tp.sparse, name)(tp.tensor(INDICES), tp.tensor(values), (3, 4))
    _same(ours, _theirs(torch, name, torch.tensor(INDICES), torch.tensor(values), (3, 4)))


@pytest.mark.parametrize("call", [
    lambda lib, i, v: lib.sparse.FloatTensor(i, v),
    lambda lib, i, v: lib.sparse.FloatTensor(i, v, lib.Size([2, 3, 2])),
    lambda lib, i, v: lib.sparse.FloatTensor(i, v, [2, 4, 2]),
    lambda lib, i, v: lib.sparse.FloatTensor(indices=i, values=v, size=(2, 3, 2)),
    lambda lib, i, v: lib.sparse.FloatTensor(i, v, size=(5, 3, 2), device="cpu"),
], ids=["inferred", "Size", "list", "keywords", "device"])
def test_indices_values_forms_with_dense_dims(call):
    """Inferred and given sizes (tuple, list, Size, keyword) over 2-d values: one sparse dim more than dense ones."""
    torch = torch_or_skip()
    values = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    ours = _ours_call(call, tp, tp.tensor(INDICES), tp.tensor(values))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = call(torch, torch.tensor(INDICES), torch.tensor(values))
    _same(ours, theirs)


def test_indices_values_warns_its_own_form():
    """Without a size the warning names the two-argument form, as torch's."""
    with pytest.warns(UserWarning, match=WARNING.format("indices, values, \\*, device=", "indices, values, dtype=, device=")):
        tp.sparse.DoubleTensor(tp.tensor(INDICES), tp.ones(4))


@pytest.mark.parametrize("args, kwargs", [
    ((), {}), ((2, 3), {}), ((0,), {}), ((np.int64(4),), {}), ((), dict(size=(2, 3))), ((), dict(device="cpu")),
], ids=["none", "ints", "zero", "numpy-int", "size-keyword", "device"])
@pytest.mark.parametrize("name", NAMES)
def test_sizes_give_an_empty_tensor_of_the_types_dtype(name, args, kwargs):
    """No argument, ints or size= give an empty coalesced tensor of the type's dtype, as torch's."""
    torch = torch_or_skip()
    _same(_ours(name, *args, **kwargs), _theirs(torch, name, *args, **kwargs))


def test_a_size_object_is_a_size_and_the_empty_forms_warn():
    """tp.Size is a shape; () and shapes warn with torch's texts."""
    torch = torch_or_skip()
    with pytest.warns(UserWarning, match=WARNING.format("shape, \\*, device=", "shape, dtype=, device=")):
        ours = tp.sparse.LongTensor(tp.Size([2, 3]))
    _same(ours, _theirs(torch, "LongTensor", torch.Size([2, 3])))
    with pytest.warns(UserWarning, match=WARNING.format("", "\\(0,\\), dtype=")):
        tp.sparse.FloatTensor()


@pytest.mark.parametrize("call, error, words", [
    (lambda lib: lib.sparse.FloatTensor(lib.tensor(INDICES, dtype=lib.int32), lib.ones(4)), RuntimeError,
     "expected scalar type Long but found Int"),
    (lambda lib: lib.sparse.FloatTensor((2, 3)), TypeError, r"SparseTensor\(sequence\) only accepts sizes"),
    (lambda lib: lib.sparse.FloatTensor(2.0), TypeError, "invalid combination of arguments - got \\(float\\)"),
    (lambda lib: lib.sparse.FloatTensor(True), TypeError, "invalid combination of arguments - got \\(bool\\)"),
    (lambda lib: lib.sparse.FloatTensor(INDICES, [1.0, 2.0, 3.0, 4.0]), TypeError,
     "invalid combination of arguments - got \\(list, list\\)"),
    (lambda lib: lib.sparse.FloatTensor(lib.tensor(INDICES), lib.ones(4), (3, 4), dtype=lib.float64), TypeError,
     "unexpected keyword argument 'dtype'"),
    (lambda lib: lib.sparse.FloatTensor(lib.tensor(INDICES), lib.ones(4), (3, 4), (3, 4)), TypeError,
     "takes 3 positional arguments but 4 were given"),
    (lambda lib: lib.sparse.FloatTensor(lib.tensor(INDICES), lib.ones(4), (3, 4), device="cuda"), RuntimeError,
     "legacy constructor expects device type: cpu but device type: cuda was passed"),
    (lambda lib: lib.sparse.FloatTensor(lib.tensor(INDICES), lib.ones(3)), RuntimeError, "3"),
    (lambda lib: lib.sparse.FloatTensor(lib.tensor([0, 1, 1, 0]), lib.ones(4)), RuntimeError, "sparse_dim"),
], ids=["int32-indices", "tuple", "float", "bool", "lists", "dtype-keyword", "four-arguments", "device",
        "nnz-mismatch", "1d-indices"])
def test_errors_as_torch(call, error, words):
    """Bad indices dtypes, data instead of sizes, other devices and mismatched entries are refused as in torch."""
    torch = torch_or_skip()
    for lib in (tp, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(error, match=words):
                call(lib)


def test_indices_outside_the_size_are_refused():
    """tensorplug checks the indices against the size (torch's legacy form stores them unchecked: docs/deviations.md)."""
    with pytest.raises(RuntimeError, match="out of range"):
        _ours("FloatTensor", tp.tensor([[0, 5]]), tp.ones(2), (3,))


def test_isinstance_and_names():
    """isinstance holds for CPU sparse tensors of the type's dtype only, as torch's; the types print their names."""
    torch = torch_or_skip()
    for lib in (tp, torch):
        s = lib.sparse_coo_tensor(lib.tensor(INDICES), lib.ones(4), (3, 4), check_invariants=True)
        assert isinstance(s, lib.sparse.FloatTensor) and not isinstance(s, lib.sparse.DoubleTensor)
        assert isinstance(s.double(), lib.sparse.DoubleTensor)
        assert not isinstance(lib.ones(2), lib.sparse.FloatTensor)
        assert lib.sparse.FloatTensor.is_sparse and lib.sparse.LongTensor.dtype == lib.int64
    assert repr(tp.sparse.FloatTensor) == "<class 'tensorplug.sparse.FloatTensor'>"
    assert sorted(NAMES) == sorted(n for n in dir(torch.sparse) if n.endswith("Tensor") and n[0].isupper()
                                   and n not in ("Tensor", "SparseSemiStructuredTensor"))


def test_values_keep_their_gradient():
    """The values are the tensor's: a loss over to_dense() reaches them."""
    values = tp.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    s = _ours("FloatTensor", tp.tensor(INDICES), values, (3, 4))
    assert s.requires_grad
    (s.to_dense() * tp.arange(12.0).reshape(3, 4)).sum().backward()
    assert values.grad.tolist() == [2.0, 4.0, 6.0, 2.0]
