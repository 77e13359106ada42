"""Meta tensors themselves: factories, the device, views, repr, storage, moving to and from the
meta device, and the PyTorch errors for reading values. Each fact is checked against a written
expectation (so CI without PyTorch checks it) and, where PyTorch has it, against PyTorch 2.13."""
import copy
import pickle

import numpy as np
import pytest

import tensorplug as tp
from meta_reference import metadata, torch_or_skip

ALL_DTYPES = [tp.bool, tp.uint8, tp.int8, tp.int16, tp.int32, tp.int64, tp.float16, tp.bfloat16, tp.float32,
              tp.float64, tp.complex64, tp.complex128]

# (factory call, expected (shape, dtype, strides, offset, device type)); each runs on both libraries.
FACTORIES = {
    "empty": (lambda L: L.empty(2, 3, device="meta"), ((2, 3), "float32", (3, 1), 0, "meta")),
    "zeros int64": (lambda L: L.zeros(4, dtype=L.int64, device="meta"), ((4,), "int64", (1,), 0, "meta")),
    "ones 0-d": (lambda L: L.ones((), device="meta"), ((), "float32", (), 0, "meta")),
    "randn": (lambda L: L.randn(2, 3, 4, device="meta"), ((2, 3, 4), "float32", (12, 4, 1), 0, "meta")),
    "rand float64": (lambda L: L.rand(5, dtype=L.float64, device="meta"), ((5,), "float64", (1,), 0, "meta")),
    "randint": (lambda L: L.randint(0, 9, (3, 2), device="meta"), ((3, 2), "int64", (2, 1), 0, "meta")),
    "full": (lambda L: L.full((2, 2), 7.0, device="meta"), ((2, 2), "float32", (2, 1), 0, "meta")),
    "full bool": (lambda L: L.full((3,), True, device="meta"), ((3,), "bool", (1,), 0, "meta")),
    "arange": (lambda L: L.arange(10, device="meta"), ((10,), "int64", (1,), 0, "meta")),
    "arange float": (lambda L: L.arange(0, 1, 0.25, device="meta"), ((4,), "float32", (1,), 0, "meta")),
    "linspace": (lambda L: L.linspace(0, 1, 7, device="meta"), ((7,), "float32", (1,), 0, "meta")),
    "eye": (lambda L: L.eye(3, 2, device="meta"), ((3, 2), "float32", (2, 1), 0, "meta")),
    "tensor": (lambda L: L.tensor([[1.0, 2.0], [3.0, 4.0]], device="meta"), ((2, 2), "float32", (2, 1), 0, "meta")),
    "tensor ints": (lambda L: L.tensor([1, 2, 3], device="meta"), ((3,), "int64", (1,), 0, "meta")),
    "empty_like": (lambda L: L.empty_like(L.empty(2, 5, device="meta")), ((2, 5), "float32", (5, 1), 0, "meta")),
    "zeros_like to meta": (lambda L: L.zeros_like(L.ones(3, 2), device="meta"), ((3, 2), "float32", (2, 1), 0, "meta")),
    "new_ones": (lambda L: L.empty(2, device="meta").new_ones(4, 1), ((4, 1), "float32", (1, 1), 0, "meta")),
    "meta:0 is meta": (lambda L: L.empty(3, device="meta:0"), ((3,), "float32", (1,), 0, "meta")),
}


@pytest.mark.parametrize("name", list(FACTORIES))
def test_factories_make_meta_tensors(name):
    make, expected = FACTORIES[name]
    assert metadata(make(tp)) == expected


@pytest.mark.parametrize("name", list(FACTORIES))
def test_factories_match_pytorch(name):
    torch = torch_or_skip()
    make, _ = FACTORIES[name]
    assert metadata(make(tp)) == metadata(make(torch))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_dtype_is_declared(dtype):
    t = tp.empty(3, 2, dtype=dtype, device="meta")
    assert t.dtype is dtype and t.shape == (3, 2) and t.is_meta
    assert t.untyped_storage().nbytes() == 6 * dtype.itemsize


def test_the_device_has_no_index():
    t = tp.empty(2, device="meta")
    assert repr(t.device) == "device(type='meta')" and str(t.device) == "meta" and t.device.index is None
    assert t.device == tp.device("meta") and tp.empty(1, device="meta:1").device is t.device
    assert t.is_meta and not t.is_cpu and not tp.zeros(1).is_meta


def test_storage_holds_no_memory():
    t = tp.empty(4, 3, device="meta")
    assert t.untyped_storage().nbytes() == 48
    assert t.data_ptr() == 0
    assert t[1].data_ptr() == 12  # the offset in bytes past address 0, as PyTorch
    assert t[1].untyped_storage() is t.untyped_storage()


def test_storage_and_address_match_pytorch():
    torch = torch_or_skip()
    ours, theirs = tp.empty(4, 3, device="meta"), torch.empty(4, 3, device="meta")
    assert ours.untyped_storage().nbytes() == theirs.untyped_storage().nbytes()
    assert (ours.data_ptr(), ours[1].data_ptr()) == (theirs.data_ptr(), theirs[1].data_ptr())


VIEWS = {
    "t": (lambda t: t.t(), ((4, 3), "float32", (1, 4), 0, "meta")),
    "int": (lambda t: t[1], ((4,), "float32", (1,), 4, "meta")),
    "negative int": (lambda t: t[-1, -2], ((), "float32", (), 10, "meta")),
    "slice": (lambda t: t[:, 1:], ((3, 3), "float32", (4, 1), 1, "meta")),
    "step": (lambda t: t[::2, ::3], ((2, 2), "float32", (8, 3), 0, "meta")),
    "None and ellipsis": (lambda t: t[None, ..., 2], ((1, 3), "float32", (12, 4), 2, "meta")),
    "expand": (lambda t: t[:1].expand(5, 4), ((5, 4), "float32", (0, 1), 0, "meta")),
    "view": (lambda t: t.view(2, 6), ((2, 6), "float32", (6, 1), 0, "meta")),
    "permute": (lambda t: t.reshape(3, 2, 2).permute(2, 0, 1), ((2, 3, 2), "float32", (1, 4, 2), 0, "meta")),
    "unsqueeze": (lambda t: t.unsqueeze(1), ((3, 1, 4), "float32", (4, 4, 1), 0, "meta")),
    "diagonal": (lambda t: t.diagonal(), ((3,), "float32", (5,), 0, "meta")),
    "narrow": (lambda t: t.narrow(1, 1, 2), ((3, 2), "float32", (4, 1), 1, "meta")),
    "unfold": (lambda t: t.unfold(1, 2, 2), ((3, 2, 2), "float32", (4, 2, 1), 0, "meta")),
    "mT contiguous": (lambda t: t.mT.contiguous(), ((4, 3), "float32", (3, 1), 0, "meta")),
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_views_and_basic_indexing(name):
    view, expected = VIEWS[name]
    assert metadata(view(tp.empty(3, 4, device="meta"))) == expected


@pytest.mark.parametrize("name", list(VIEWS))
def test_views_match_pytorch(name):
    torch = torch_or_skip()
    view, _ = VIEWS[name]
    assert metadata(view(tp.empty(3, 4, device="meta"))) == metadata(view(torch.empty(3, 4, device="meta")))


def test_views_share_the_storage_and_version():
    t = tp.empty(3, 4, device="meta")
    view = t[1:]
    view.add_(1)
    assert view.untyped_storage() is t.untyped_storage() and t._version == view._version == 1


REPRS = {
    "float32": (lambda L: L.empty(2, 3, device="meta"), "tensor(..., device='meta', size=(2, 3))"),
    "empty": (lambda L: L.empty(0, device="meta"), "tensor(..., device='meta', size=(0,))"),
    "0-d": (lambda L: L.zeros((), device="meta"), "tensor(..., device='meta', size=())"),
    "int64": (lambda L: L.empty(2, dtype=L.int64, device="meta"), "tensor(..., device='meta', size=(2,), dtype={lib}.int64)"),
    "bool": (lambda L: L.empty(2, dtype=L.bool, device="meta"), "tensor(..., device='meta', size=(2,), dtype={lib}.bool)"),
    "requires_grad": (lambda L: L.empty(2, 3, device="meta", requires_grad=True),
                      "tensor(..., device='meta', size=(2, 3), requires_grad=True)"),
    "grad_fn": (lambda L: L.empty(2, device="meta", requires_grad=True).sum(),
                "tensor(..., device='meta', size=(), grad_fn=<SumBackward0>)"),
}


@pytest.mark.parametrize("name", list(REPRS))
def test_repr(name):
    make, text = REPRS[name]
    t = make(tp)
    assert repr(t) == str(t) == text.format(lib="tensorplug")


@pytest.mark.parametrize("name", list(REPRS))
def test_repr_matches_pytorch(name):
    torch = torch_or_skip()
    make, _ = REPRS[name]
    assert repr(make(tp)).replace("tensorplug.", "torch.") == repr(make(torch))


def test_repr_of_a_parameter_and_a_long_line():
    p = tp.nn.Parameter(tp.empty(4, 3, device="meta"))
    assert repr(p) == "Parameter containing:\ntensor(..., device='meta', size=(4, 3), requires_grad=True)"
    long = tp.empty(2, 3, dtype=tp.float16, device="meta", requires_grad=True) * 2
    # Past 80 characters the next suffix starts a new line under the first value, as PyTorch's.
    assert repr(long) == ("tensor(..., device='meta', size=(2, 3), dtype=tensorplug.float16,\n"
                          "       grad_fn=<MulBackward0>)")


# --- reading values: PyTorch's exceptions and words ------------------------------------------
READS = {
    "item": (lambda t: t[0].item(), RuntimeError, "Tensor.item() cannot be called on meta tensors"),
    "bool": (lambda t: bool(t[0]), RuntimeError, "Tensor.item() cannot be called on meta tensors"),
    "float": (lambda t: float(t[0]), RuntimeError, "Tensor.item() cannot be called on meta tensors"),
    "int": (lambda t: int(t[0]), RuntimeError, "Tensor.item() cannot be called on meta tensors"),
    "tolist": (lambda t: t.tolist(), NotImplementedError, "Cannot copy out of meta tensor; no data!"),
    "cpu": (lambda t: t.cpu(), NotImplementedError, "Cannot copy out of meta tensor; no data!"),
    "to cpu": (lambda t: t.to("cpu"), NotImplementedError, "Cannot copy out of meta tensor; no data!"),
    "copy into cpu": (lambda t: t.new_empty(3, device="cpu").copy_(t), NotImplementedError,
                      "Cannot copy out of meta tensor; no data!"),
    "numpy": (lambda t: t.numpy(), TypeError,
              "can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."),
}


@pytest.mark.parametrize("name", list(READS))
def test_reading_values_raises(name):
    read, error, message = READS[name]
    with pytest.raises(error) as caught:
        read(tp.empty(3, device="meta"))
    assert str(caught.value) == message


@pytest.mark.parametrize("name", list(READS))
def test_reading_values_raises_as_pytorch(name):
    torch = torch_or_skip()
    read, _, _ = READS[name]
    with pytest.raises(Exception) as theirs:
        read(torch.empty(3, device="meta"))
    with pytest.raises(type(theirs.value)) as ours:
        read(tp.empty(3, device="meta"))
    assert str(ours.value) == str(theirs.value)


# --- moving to the meta device -------------------------------------------------------------------
def test_to_meta_keeps_shape_and_dtype_and_drops_values():
    source = tp.tensor([[1, 2, 3], [4, 5, 6]], dtype=tp.int32)
    moved = source.to("meta")
    assert metadata(moved) == ((2, 3), "int32", (3, 1), 0, "meta")
    assert metadata(source.t().to("meta", tp.float64)) == ((3, 2), "float64", (2, 1), 0, "meta")
    assert source.tolist() == [[1, 2, 3], [4, 5, 6]]  # the source is untouched


def test_copy_into_a_meta_tensor_and_mixed_devices():
    target = tp.empty(2, 3, device="meta")
    assert target.copy_(tp.ones(2, 3)) is target and target._version == 1
    with pytest.raises(RuntimeError, match="meta and cpu"):
        tp.empty(3, device="meta") + tp.ones(3)
    # A 0-d CPU tensor joins as a number, as in PyTorch.
    assert metadata(tp.empty(3, device="meta") + tp.tensor(2.0)) == ((3,), "float32", (1,), 0, "meta")


def test_default_device_context_and_setter():
    with tp.device("meta"):
        assert tp.empty(2).is_meta and tp.tensor([1, 2]).is_meta and tp.arange(3).is_meta
    assert not tp.empty(2).is_meta
    tp.set_default_device("meta")
    assert tp.get_default_device() == tp.device("meta") and tp.zeros(4).is_meta
    tp.set_default_device(None)
    assert not tp.zeros(4).is_meta


def test_pickle_and_deepcopy_keep_metadata():
    t = tp.empty(2, 3, dtype=tp.float16, device="meta", requires_grad=True)
    for restored in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert metadata(restored) == ((2, 3), "float16", (3, 1), 0, "meta") and restored.requires_grad


def test_testing_assert_close_compares_metadata_only():
    tp.testing.assert_close(tp.empty(2, 3, device="meta"), tp.empty(2, 3, device="meta"))
    with pytest.raises(AssertionError, match="shape"):
        tp.testing.assert_close(tp.empty(2, 3, device="meta"), tp.empty(3, 2, device="meta"))
    with pytest.raises(AssertionError, match="device"):
        tp.testing.assert_close(tp.empty(2, device="meta"), tp.zeros(2))


def test_from_a_numpy_array():
    t = tp.tensor(np.arange(6.0).reshape(2, 3), device="meta")
    assert metadata(t) == ((2, 3), "float64", (3, 1), 0, "meta")
