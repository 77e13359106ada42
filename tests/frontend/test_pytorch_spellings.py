"""PyTorch's other names, legacy methods, constants and in-place shape changes (issue 13): values,
shapes and errors against PyTorch 2.13 where it is installed."""
import math
import warnings

import numpy as np
import pytest

import tensorplug as tp

R = np.random.default_rng(21)


@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="PyTorch 2.13 is the reference here (pip install torch==2.13.0)")


def test_constants():
    assert (tp.pi, tp.e, tp.inf) == (math.pi, math.e, math.inf) and math.isnan(tp.nan) and tp.newaxis is None
    assert tp.ones(3)[:, tp.newaxis].shape == (3, 1)


@pytest.mark.parametrize("name,args", [
    ("arccos", ()), ("arcsin", ()), ("arctan", ()), ("arctan2", ("other",)), ("absolute", ()), ("negative", ()),
    ("greater", (0.1,)), ("greater_equal", (0.1,)), ("less", (0.1,)), ("less_equal", (0.1,)), ("not_equal", (0.1,)),
    ("fix", ()), ("ravel", ()), ("i0", ()),
])
def test_method_spellings_match_pytorch(torch, name, args):
    a, b = R.uniform(-0.9, 0.9, (2, 3)), R.uniform(-0.9, 0.9, (2, 3))
    values = []
    for lib in (tp, torch):
        x = lib.tensor(a)
        call_args = [lib.tensor(b) if arg == "other" else arg for arg in args]
        values.append(getattr(x, name)(*call_args).numpy())
        if hasattr(lib, name):
            np.testing.assert_allclose(getattr(lib, name)(x, *call_args).numpy(), values[-1], rtol=1e-12)
    np.testing.assert_allclose(values[0], values[1], rtol=1e-12)


def test_inplace_spellings_write_into_self():
    x = tp.tensor([-1.5, 2.5])
    assert tp.abs_(x) is x and x.tolist() == [1.5, 2.5]
    assert x.negative_() is x and x.tolist() == [-1.5, -2.5]
    assert x.fix_().tolist() == [-1.0, -2.0] and x.multiply_(2).subtract_(1).tolist() == [-3.0, -5.0]
    assert x.greater_(-4).tolist() == [1.0, 0.0]  # comparisons in place keep the dtype
    y = tp.tensor([0.5, 1.0])
    np.testing.assert_allclose(y.clone().arctan2_(tp.tensor([1.0, 1.0])).numpy(), np.arctan2([0.5, 1.0], 1.0))


def test_conjugate_transposes_and_their_errors(torch):
    a = R.standard_normal((2, 3)) + 1j * R.standard_normal((2, 3))
    for lib in (tp, torch):
        x = lib.tensor(a)
        np.testing.assert_array_equal(x.H.resolve_conj().numpy(), a.conj().T)
        np.testing.assert_array_equal(lib.adjoint(x).resolve_conj().numpy(), a.conj().T)
        with pytest.raises(RuntimeError, match="only supported on matrices"):
            lib.ones(2, 2, 2).H
        with pytest.raises(RuntimeError, match="only supported on matrices or batches"):
            lib.ones(3).adjoint()


def test_legacy_methods_match_pytorch(torch):
    for lib in (tp, torch):
        x = lib.arange(6.0).reshape(2, 3)
        assert x.get_device() == -1 and lib.get_device(x) == -1
        assert tuple(x.new(2, 3).shape) == (2, 3) and x.new(2, 3).dtype == x.dtype
        assert x.new([1, 2]).tolist() == [1.0, 2.0] and tuple(x.new().shape) == (0,)
        assert x.new(x).data_ptr() == x.data_ptr()
        assert x.new_empty_strided((2, 2), (1, 2)).stride() == (1, 2)
        assert lib.empty_permuted((2, 3, 4), (0, 2, 1)).stride() == (12, 1, 3)
        assert [tuple(p.shape) for p in lib.split_with_sizes(x, [1, 2], 1)] == [(2, 1), (2, 2)]
        assert [tuple(p.shape) for p in x.unsafe_chunk(3, 1)] == [(2, 1)] * 3
        assert x.is_set_to(x) and not x.is_set_to(x.clone())
        assert x.to_dense() is x and x.cfloat().dtype == lib.complex64 and x.cdouble().dtype == lib.complex128
        assert not (x.is_mps or x.is_quantized or x.is_nested or x.is_sparse_csr or lib.is_inference(x) or x.is_neg())
        assert x.split(1)[1].output_nr == 0  # no graph: every tensor is output 0
        with pytest.raises(RuntimeError, match="is not expandable to size"):
            x.sum_to_size(4)
        with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly to 3"):
            lib.split_with_sizes(x, [1, 1], 1)
    # Which output of its node a tensor is, with a graph.
    square = R.standard_normal((3, 3))
    outputs = [lib.linalg.qr(lib.tensor(square, requires_grad=True)) for lib in (tp, torch)]
    assert [o.output_nr for o in outputs[0]] == [o.output_nr for o in outputs[1]] == [0, 1]
    assert tp.typename(tp.ones(1)) == "tensorplug.FloatTensor" and torch.typename(torch.ones(1)) == "torch.FloatTensor"
    assert tp.typename(3) == torch.typename(3) == "int"
    assert tp.typename(tp.nn.Linear(1, 1)).endswith(".Linear")


def test_special_function_spellings_match_pytorch(torch):
    a, b = R.uniform(0.5, 3.0, 5), R.uniform(0.5, 3.0, 5)
    for name, args in (("igamma", (b,)), ("igammac", (b,)), ("mvlgamma", (2,))):
        ours = getattr(tp.tensor(a + 1), name)(*[tp.tensor(v) if isinstance(v, np.ndarray) else v for v in args])
        theirs = getattr(torch.tensor(a + 1), name)(*[torch.tensor(v) if isinstance(v, np.ndarray) else v for v in args])
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10)


def test_set_default_tensor_type_warns_and_sets_the_default_dtype():
    before = tp.get_default_dtype()
    try:
        with pytest.warns(UserWarning, match="deprecated"):
            tp.set_default_tensor_type("torch.DoubleTensor")
        assert tp.ones(1).dtype == tp.float64
        with pytest.warns(UserWarning), pytest.raises(TypeError, match="floating-point"):
            tp.set_default_tensor_type(tp.LongTensor)
    finally:
        tp.set_default_dtype(before)


def test_module_lookups():
    assert tp.get_device_module() is tp.cpu and tp.get_device_module("cpu:0") is tp.cpu
    with pytest.raises(RuntimeError, match="does not have a corresponding module"):
        tp.get_device_module("xyz")
    assert tp.is_storage(tp.ones(2).untyped_storage()) and not tp.is_storage(tp.ones(2))
    assert tp.default_generator is tp.random.default_generator("cpu")
    assert issubclass(tp.OutOfMemoryError, RuntimeError) and tp.GradScaler is tp.amp.GradScaler
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert tp.set_flush_denormal(True) is False


# --- in-place shape changes -------------------------------------------------------------------

@pytest.mark.parametrize("name,args", [("unsqueeze_", (1,)), ("squeeze_", ()), ("t_", ()), ("transpose_", (0, 1)),
                                       ("swapaxes_", (0, 1)), ("as_strided_", ((2, 2), (1, 2), 1))])
def test_inplace_views_change_the_tensor_itself_as_pytorch(torch, name, args):
    results = []
    for lib in (tp, torch):
        x = lib.arange(6.0).reshape(2, 3) if name != "squeeze_" else lib.arange(6.0).reshape(1, 2, 1, 3)
        base = x
        assert getattr(x, name)(*args) is x
        results.append((tuple(x.shape), x.stride(), x.tolist()))
        x.mul_(2)  # still the same memory
        assert base.data_ptr() == x.data_ptr()
    assert results[0] == results[1]


def test_inplace_views_refuse_tensors_that_require_grad():
    with pytest.raises(RuntimeError, match="use the out-of-place unsqueeze"):
        tp.ones(3, requires_grad=True).unsqueeze_(0)
    with tp.no_grad():
        assert tp.ones(3, requires_grad=True).unsqueeze_(0).shape == (1, 3)


def test_resize_keeps_the_first_elements_as_pytorch(torch):
    for lib in (tp, torch):
        x = lib.arange(6.0)
        view = x[:]
        assert x.resize_(2, 2) is x and x.tolist() == [[0.0, 1.0], [2.0, 3.0]]
        x.resize_(3, 3)
        assert tuple(x.shape) == (3, 3) and x.stride() == (3, 1) and x.flatten()[:6].tolist() == [0, 1, 2, 3, 4, 5]
        assert x.resize_as_(lib.empty(4)).tolist() == [0.0, 1.0, 2.0, 3.0] and view.tolist() == [0, 1, 2, 3, 4, 5]
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            lib.ones(2, requires_grad=True).resize_(3)
