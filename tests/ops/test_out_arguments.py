"""out= on the functions probe batch (d) found without it (issue 13): all, any, angle,
conj_physical, dot, mv, nansum, nanmean, nonzero, norm, narrow_copy, index_add, index_reduce and
bernoulli; and out_dtype= on mm, bmm, addmm and baddbmm.

Each out= call returns ``out`` itself holding NumPy's float64 values; dtypes are PyTorch 2.13's
rules (bool/uint8 only for all/any, the exact dtype for most, a castable one for angle/nanmean,
any for bernoulli), a wrongly shaped out= is resized (with PyTorch's warning, except for
narrow_copy and bernoulli), and an input requiring grad under grad mode is refused. Where torch is
installed, the same calls are checked against it (accepted or refused, dtypes, values)."""
import warnings

import numpy as np
import pytest

import tensorplug as tp
from device_params import every_device, torch_or_skip

MATRIX = np.array([[0.5, -1.25, 0.0, 2.0], [np.nan, 3.0, -0.75, 0.0], [1.5, 0.0, 0.25, -2.5]])
VECTOR = np.array([1.0, -2.0, 0.5, 3.0])


def _into(device, dtype=tp.float32, shape=(0,)):
    return tp.empty(shape, dtype=dtype, device=device)


def _call_into(fn, out):
    """``fn(out)``, asserting that it returns ``out`` and warns about nothing."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        returned = fn(out)
    assert returned is out
    return out.cpu().numpy()


# --- values, returned identity, every backend -----------------------------------------------------
@pytest.mark.parametrize("device", every_device())
def test_all_any_write_bool_or_uint8(device):
    x = tp.tensor(MATRIX, device=device)
    np.testing.assert_array_equal(_call_into(lambda o: tp.all(x, 1, out=o), _into(device, tp.bool)),
                                  np.all(MATRIX, axis=1))
    np.testing.assert_array_equal(_call_into(lambda o: tp.any(x, 0, out=o), _into(device, tp.uint8)),
                                  np.any(MATRIX, axis=0).astype(np.uint8))
    got = _call_into(lambda o: tp.any(x, out=o), _into(device, tp.bool))
    assert got.shape == () and bool(got) is True
    # A uint8 input reduces to uint8 in PyTorch; a bool out= still takes it.
    small = tp.tensor([[1, 2], [0, 3]], dtype=tp.uint8, device=device)
    np.testing.assert_array_equal(_call_into(lambda o: tp.all(small, 1, out=o), _into(device, tp.bool)), [True, False])


@pytest.mark.parametrize("device", every_device())
def test_angle_and_conj_physical(device):
    x = tp.tensor(MATRIX, dtype=tp.float32, device=device)
    np.testing.assert_allclose(_call_into(lambda o: tp.angle(x, out=o), _into(device, tp.float64)),
                               np.angle(MATRIX.astype(np.float32)), rtol=1e-6)
    z = MATRIX[0] + 1j * VECTOR
    zt = tp.tensor(z, dtype=tp.complex64, device=device)
    np.testing.assert_allclose(_call_into(lambda o: tp.angle(zt, out=o), _into(device)), np.angle(z), rtol=1e-5)
    np.testing.assert_allclose(_call_into(lambda o: tp.conj_physical(zt, out=o), _into(device, tp.complex64)),
                               np.conj(z), rtol=1e-6)
    real = _call_into(lambda o: tp.conj_physical(x, out=o), _into(device))
    np.testing.assert_array_equal(real, MATRIX.astype(np.float32))


@pytest.mark.parametrize("device", every_device())
def test_dot_and_mv(device):
    a = tp.tensor(np.nan_to_num(MATRIX), dtype=tp.float64, device=device)
    v = tp.tensor(VECTOR, dtype=tp.float64, device=device)
    np.testing.assert_allclose(_call_into(lambda o: tp.dot(v, v, out=o), _into(device, tp.float64)),
                               VECTOR @ VECTOR, rtol=1e-12)
    np.testing.assert_allclose(_call_into(lambda o: tp.mv(a, v, out=o), _into(device, tp.float64)),
                               np.nan_to_num(MATRIX) @ VECTOR, rtol=1e-12)


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("keepdim", [False, True])
def test_nansum_and_nanmean(device, keepdim):
    x = tp.tensor(MATRIX, dtype=tp.float32, device=device)
    expected = np.nanmean(MATRIX, axis=0, keepdims=keepdim)
    got = _call_into(lambda o: tp.nanmean(x, 0, keepdim, out=o), _into(device, tp.float64))
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    got = _call_into(lambda o: tp.nansum(x, 1, keepdim, out=o), _into(device, tp.float64))
    np.testing.assert_allclose(got, np.nansum(MATRIX, axis=1, keepdims=keepdim), rtol=1e-6)
    # dtype= must be out's dtype; the mean is then computed in it.
    got = _call_into(lambda o: tp.nanmean(x, 1, dtype=tp.float64, out=o), _into(device, tp.float64))
    np.testing.assert_allclose(got, np.nanmean(MATRIX.astype(np.float32).astype(np.float64), axis=1), rtol=1e-12)


@pytest.mark.parametrize("device", every_device())
def test_nonzero(device):
    x = tp.tensor(np.nan_to_num(MATRIX), device=device)
    got = _call_into(lambda o: tp.nonzero(x, out=o), _into(device, tp.int64))
    np.testing.assert_array_equal(got, np.argwhere(np.nan_to_num(MATRIX)))


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("p,dim", [("fro", None), (2, 1), (1, 0), (float("inf"), 1), (3, (0, 1)), ("nuc", None)])
def test_norm(device, p, dim):
    values = np.nan_to_num(MATRIX)
    x = tp.tensor(values, dtype=tp.float64, device=device)
    if p == "nuc":
        expected = np.linalg.norm(values, "nuc")
    elif p == "fro":
        expected = np.linalg.norm(values)
    else:
        expected = np.sum(np.abs(values) ** p, axis=dim) ** (1 / p) if p != float("inf") else np.max(np.abs(values), axis=dim)
    got = _call_into(lambda o: tp.norm(x, p, dim, out=o), _into(device, tp.float64))
    np.testing.assert_allclose(got, expected, rtol=1e-10)


@pytest.mark.parametrize("device", every_device())
def test_narrow_copy_index_add_index_reduce(device):
    x = tp.tensor(np.nan_to_num(MATRIX), dtype=tp.float64, device=device)
    base = np.nan_to_num(MATRIX)
    np.testing.assert_array_equal(_call_into(lambda o: tp.narrow_copy(x, 1, 1, 2, out=o), _into(device, tp.float64)),
                                  base[:, 1:3])
    index = tp.tensor([2, 0, 2], device=device)
    source = np.arange(12.0).reshape(3, 4)
    src = tp.tensor(source, dtype=tp.float64, device=device)
    expected = base.copy()
    np.add.at(expected, [2, 0, 2], 2 * source)
    got = _call_into(lambda o: tp.index_add(x, 0, index, src, alpha=2, out=o), _into(device, tp.float64))
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    expected = base.copy()
    expected[0] = np.maximum(base[0], source[1])
    expected[2] = np.maximum(base[2], np.maximum(source[0], source[2]))
    got = _call_into(lambda o: tp.index_reduce(x, 0, index, src, "amax", out=o), _into(device, tp.float64))
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.int64, tp.bool])
def test_bernoulli_writes_zeros_and_ones_into_any_dtype(device, dtype):
    probs = tp.tensor([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]], device=device)
    out = _into(device, dtype, (5,))  # resized without a warning, as PyTorch does for bernoulli
    got = _call_into(lambda o: tp.bernoulli(probs, generator=tp.Generator(device).manual_seed(0), out=o), out)
    assert out.dtype is dtype
    np.testing.assert_array_equal(got.astype(np.float64), [[0, 1, 1], [1, 0, 0]])


# --- resizing ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("call", [
    lambda x, o: tp.dot(x[0], x[0], out=o),
    lambda x, o: tp.mv(x, x[0, :4], out=o),
    lambda x, o: tp.norm(x, dim=1, out=o),
    lambda x, o: tp.nanmean(x, 1, out=o),
    lambda x, o: tp.index_add(x, 0, tp.tensor([0], device=x.device), x[:1], out=o),
], ids=["dot", "mv", "norm", "nanmean", "index_add"])
def test_a_wrongly_shaped_out_is_resized_with_a_warning(device, call):
    x = tp.ones(4, 4, device=device)
    out = tp.zeros(7, device=device)
    with pytest.warns(UserWarning, match="resized"):
        assert call(x, out) is out
    assert out.shape == tuple(call(x, None).shape)


@pytest.mark.parametrize("device", every_device())
def test_narrow_copy_resizes_silently(device):
    out = tp.zeros(7, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tp.narrow_copy(tp.ones(3, 4, device=device), 0, 0, 2, out=out)
    assert out.shape == (2, 4) and out.sum().item() == 8.0


def test_out_of_the_right_shape_keeps_its_strides():
    out = tp.empty(4, 3).t()
    assert tp.index_add(tp.zeros(3, 4), 1, tp.tensor([0]), tp.ones(3, 1), out=out) is out
    assert out.stride() == (1, 3)
    assert out.tolist() == [[1.0, 0.0, 0.0, 0.0]] * 3


# --- refusals ---------------------------------------------------------------------------------------
def test_dtype_rules():
    x = tp.tensor(np.nan_to_num(MATRIX), dtype=tp.float32)
    v = tp.tensor(VECTOR, dtype=tp.float32)
    with pytest.raises(RuntimeError, match="bool or uint8"):
        tp.all(x, out=tp.empty(0))
    with pytest.raises(RuntimeError, match="bool or uint8"):
        tp.any(x, out=tp.empty(0, dtype=tp.int64))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type int64"):
        tp.angle(x, out=tp.empty(0, dtype=tp.int64))
    exact = [
        lambda o: tp.dot(v, v, out=o), lambda o: tp.mv(x, v, out=o), lambda o: tp.norm(x, dim=1, out=o),
        lambda o: tp.narrow_copy(x, 0, 0, 1, out=o), lambda o: tp.conj_physical(x, out=o),
        lambda o: tp.index_add(x, 0, tp.tensor([0]), x[:1], out=o),
        lambda o: tp.index_reduce(x, 0, tp.tensor([0]), x[:1], "amin", out=o),
    ]
    for call in exact:
        with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float32, but got float64"):
            call(tp.empty(0, dtype=tp.float64))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype int64, but got int32"):
        tp.nonzero(x, out=tp.empty(0, dtype=tp.int32))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float64, but got float32"):
        tp.norm(x, dim=1, dtype=tp.float64, out=tp.empty(0))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float64, but got float32"):
        tp.nanmean(x, 1, dtype=tp.float64, out=tp.empty(0))
    with pytest.raises(NotImplementedError, match="int64"):
        tp.nanmean(x, 1, out=tp.empty(0, dtype=tp.int64))
    with pytest.raises(RuntimeError, match="float input"):
        tp.nanmean(tp.ones(2, dtype=tp.int64), out=tp.empty(0))


def test_argument_rules():
    x = tp.ones(2, 3)
    with pytest.raises(RuntimeError, match="as_tuple"):
        tp.nonzero(x, as_tuple=True, out=tp.empty(0, dtype=tp.int64))
    with pytest.raises(TypeError, match="without p"):
        tp.bernoulli(x, 0.5, out=tp.empty(0))
    with pytest.raises(TypeError, match="argument 'out' must be Tensor"):
        tp.mv(x, tp.ones(3), out=[0.0])


@pytest.mark.parametrize("device", [d for d in every_device() if d.values[0] != "cpu"])
def test_out_on_another_device_is_refused(device):
    with pytest.raises(RuntimeError, match="Expected out tensor to be on"):
        tp.dot(tp.ones(3, device=device), tp.ones(3, device=device), out=tp.empty(0))
    with pytest.raises(RuntimeError, match="Expected out tensor to be on"):
        tp.any(tp.ones(3, device=device), out=tp.empty(0, dtype=tp.bool))


@pytest.mark.parametrize("call", [
    lambda x, o: tp.angle(x, out=o),
    lambda x, o: tp.dot(x[0], x[0], out=o),
    lambda x, o: tp.mv(x, x[0], out=o),
    lambda x, o: tp.nanmean(x, 1, out=o),
    lambda x, o: tp.norm(x, dim=1, out=o),
    lambda x, o: tp.narrow_copy(x, 0, 0, 1, out=o),
    lambda x, o: tp.index_add(x, 0, tp.tensor([0]), x[:1], out=o),
    lambda x, o: tp.bernoulli(x.sigmoid(), out=o),
], ids=["angle", "dot", "mv", "nanmean", "norm", "narrow_copy", "index_add", "bernoulli"])
def test_out_refuses_autograd_as_pytorch(call):
    """With grad mode on, an input that requires grad (or an out= that does) is an error; under
    no_grad the same call writes; the non-differentiable ones (all, nonzero) never refuse."""
    x = tp.rand(3, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        call(x, tp.empty(0))
    with tp.no_grad():
        out = tp.empty(0)
        assert call(x, out) is out and not out.requires_grad
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        call(x.detach(), tp.empty(0).requires_grad_())
    assert tp.all(x, 1, out=tp.empty(0, dtype=tp.bool)).shape == (3,)
    assert tp.nonzero(x, out=tp.empty(0, dtype=tp.int64)).shape == (9, 2)


@pytest.mark.parametrize("call", [
    lambda x: tp.add(x, 1, out=tp.empty(0)),
    lambda x: tp.exp(x, out=tp.empty(0)),
    lambda x: tp.where(x > 0.5, x, 0.0, out=tp.empty(0)),
    lambda x: tp.sort(x, out=(tp.empty(3), tp.empty(3, dtype=tp.int64))),
], ids=["add", "exp", "where", "sort"])
def test_elementwise_and_sort_out_refuse_autograd_too(call):
    """The elementwise ops and sort write out= on their own paths; they refuse alike, while a
    comparison (no gradient) into a bool out= still writes."""
    x = tp.rand(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        call(x)
    with tp.no_grad():
        call(x)
    assert tp.eq(x, 0.5, out=tp.empty(0, dtype=tp.bool)).shape == (3,)


def test_conj_physical_lets_the_graph_through_out():
    """PyTorch's conj_physical(out=) is the exception: no refusal, out requires grad."""
    x = tp.ones(3, requires_grad=True)
    out = tp.conj_physical(x, out=tp.empty(0))
    assert out.requires_grad


# --- out_dtype on the matrix products ---------------------------------------------------------------
@pytest.mark.parametrize("device", every_device())
@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16])
def test_out_dtype_accumulates_half_precision_in_float32(device, dtype, rng):
    try:
        tp.zeros(1, dtype=dtype, device=device)
    except TypeError as undeclared:  # npdev declares no bfloat16
        pytest.skip(str(undeclared))
    a16 = tp.tensor(rng.uniform(-1, 1, (2, 6, 64)), dtype=dtype, device=device)
    b16 = tp.tensor(rng.uniform(-1, 1, (2, 64, 5)), dtype=dtype, device=device)
    bias = rng.uniform(-1, 1, (6, 5))
    a, b = a16.double().cpu().numpy(), b16.double().cpu().numpy()  # the rounded operands, exactly
    expected = a @ b
    got = tp.mm(a16[0], b16[0], tp.float32)
    assert got.dtype is tp.float32
    np.testing.assert_allclose(got.cpu().numpy(), expected[0], rtol=1e-5, atol=1e-5)
    got = tp.bmm(a16, b16, out_dtype=tp.float32)
    assert got.dtype is tp.float32
    np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-5, atol=1e-5)
    bias32 = tp.tensor(bias, dtype=tp.float32, device=device)
    got = tp.addmm(bias32, a16[1], b16[1], out_dtype=tp.float32, beta=0.5, alpha=2)
    np.testing.assert_allclose(got.cpu().numpy(), 0.5 * bias.astype(np.float32) + 2 * expected[1], rtol=1e-5,
                               atol=1e-5)
    bias16 = tp.tensor(bias, dtype=dtype, device=device)
    got = tp.baddbmm(bias16, a16, b16, out_dtype=tp.float32)
    assert got.dtype is tp.float32
    np.testing.assert_allclose(got.cpu().numpy(), bias16.double().cpu().numpy() + expected, rtol=1e-5, atol=1e-5)
    out = tp.empty(0, device=device)
    assert tp.mm(a16[0], b16[0], out_dtype=tp.float32, out=out) is out and out.shape == (6, 5)


def test_out_dtype_refusals():
    a, b = tp.ones(2, 3, dtype=tp.float16), tp.ones(3, 2, dtype=tp.float16)
    with pytest.raises(RuntimeError, match="out_dtype=float64 for float32 operands"):
        tp.mm(a.float(), b.float(), out_dtype=tp.float64)
    with pytest.raises(RuntimeError, match="out_dtype=float16 for float32 operands"):
        tp.bmm(a.float()[None], b.float()[None], out_dtype=tp.float16)
    with pytest.raises(RuntimeError, match="same dtype"):
        tp.mm(a, b.float(), out_dtype=tp.float32)
    with pytest.raises(RuntimeError, match="input must have the factors' dtype"):
        tp.addmm(tp.zeros(2, 2, dtype=tp.float64), a, b, out_dtype=tp.float32)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float32, but got float16"):
        tp.mm(a, b, out_dtype=tp.float32, out=tp.empty(0, dtype=tp.float16))
    with pytest.raises(TypeError, match="'out_dtype' must be tensorplug.dtype"):
        tp.mm(a, b, out_dtype="float32")
    # The operands' own dtype is the trivial case.
    assert tp.mm(a, b, out_dtype=tp.float16).dtype is tp.float16


def test_out_dtype_is_differentiable_to_the_half_precision_operands():
    a = tp.ones(2, 3, dtype=tp.float16, requires_grad=True)
    tp.mm(a, tp.full((3, 2), 2.0, dtype=tp.float16), tp.float32).sum().backward()
    assert a.grad.dtype is tp.float16 and a.grad.tolist() == [[4.0] * 3] * 2


# --- against PyTorch -------------------------------------------------------------------------------
_TORCH_CASES = [
    ("all", lambda m, x, o: m.all(x > 0, 1, out=o), "bool"),
    ("all_uint8", lambda m, x, o: m.all(x, 0, out=o), "uint8"),
    ("all_float", lambda m, x, o: m.all(x, out=o), "float32"),
    ("any", lambda m, x, o: m.any(x, out=o), "bool"),
    ("angle", lambda m, x, o: m.angle(x, out=o), "float64"),
    ("angle_int", lambda m, x, o: m.angle(x, out=o), "int64"),
    ("conj_physical", lambda m, x, o: m.conj_physical(x, out=o), "float32"),
    ("conj_physical_f64", lambda m, x, o: m.conj_physical(x, out=o), "float64"),
    ("dot", lambda m, x, o: m.dot(x[0], x[1], out=o), "float32"),
    ("dot_f64", lambda m, x, o: m.dot(x[0], x[1], out=o), "float64"),
    ("mv", lambda m, x, o: m.mv(x, x[0, :3], out=o), "float32"),
    ("mv_f64", lambda m, x, o: m.mv(x, x[0, :3], out=o), "float64"),
    ("nanmean", lambda m, x, o: m.nanmean(x, 1, out=o), "float64"),
    ("nanmean_f16", lambda m, x, o: m.nanmean(x, 1, out=o), "float16"),
    ("nanmean_dtype", lambda m, x, o: m.nanmean(x, 1, dtype=m.float64, out=o), "float32"),
    ("nonzero", lambda m, x, o: m.nonzero(x, out=o), "int64"),
    ("nonzero_int32", lambda m, x, o: m.nonzero(x, out=o), "int32"),
    ("norm", lambda m, x, o: m.norm(x, dim=1, out=o), "float32"),
    ("norm_f64", lambda m, x, o: m.norm(x, dim=1, out=o), "float64"),
    ("norm_dtype", lambda m, x, o: m.norm(x, dim=1, dtype=m.float64, out=o), "float64"),
    ("narrow_copy", lambda m, x, o: m.narrow_copy(x, 1, 1, 2, out=o), "float32"),
    ("narrow_copy_f64", lambda m, x, o: m.narrow_copy(x, 1, 1, 2, out=o), "float64"),
    ("index_add", lambda m, x, o: m.index_add(x, 0, m.tensor([2, 0]), x[:2], alpha=3, out=o), "float32"),
    ("index_add_f64", lambda m, x, o: m.index_add(x, 0, m.tensor([2, 0]), x[:2], out=o), "float64"),
    ("index_reduce", lambda m, x, o: m.index_reduce(x, 0, m.tensor([2, 2]), x[:2], "prod", out=o), "float32"),
    ("index_reduce_f64", lambda m, x, o: m.index_reduce(x, 0, m.tensor([2, 2]), x[:2], "mean", out=o), "float64"),
    ("bernoulli_int", lambda m, x, o: m.bernoulli((x > 0).float(), out=o), "int64"),
]


@pytest.mark.parametrize("name,call,out_dtype", _TORCH_CASES, ids=[case[0] for case in _TORCH_CASES])
def test_matches_torch(name, call, out_dtype):
    """Accepted or refused as torch; when accepted, the same dtype, shape and values."""
    torch = torch_or_skip()
    values = np.array([[0.5, -1.25, 0.0], [np.nan, 3.0, -0.75], [1.5, 0.0, 0.25]], dtype=np.float32)
    if name in ("dot", "dot_f64", "mv", "mv_f64", "norm", "norm_f64", "norm_dtype", "nonzero", "nonzero_int32",
                "bernoulli_int", "all", "all_uint8", "index_reduce", "index_reduce_f64"):
        values = np.nan_to_num(values)
    if name == "all_uint8":
        values = np.abs(values).astype(np.uint8)
    results = {}
    for lib in (torch, tp):
        x = lib.tensor(values)
        out = lib.empty(0, dtype=getattr(lib, out_dtype))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # index_reduce's beta warning in torch
            try:
                returned = call(lib, x, out)
            except (RuntimeError, TypeError, NotImplementedError) as error:
                results[lib.__name__] = type(error).__name__
                continue
        assert returned is out
        results[lib.__name__] = (str(out.dtype).split(".")[-1], tuple(out.shape), out.cpu().numpy())
    theirs, ours = results["torch"], results["tensorplug"]
    if isinstance(theirs, str) or isinstance(ours, str):
        assert isinstance(theirs, str) and isinstance(ours, str), (theirs, ours)
        return
    assert ours[:2] == theirs[:2]
    np.testing.assert_allclose(ours[2].astype(np.float64), theirs[2].astype(np.float64), rtol=1e-3, equal_nan=True)


def test_autograd_refusal_matches_torch():
    torch = torch_or_skip()
    for lib in (torch, tp):
        x = lib.ones(3, 3).requires_grad_()
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            lib.mv(x, lib.ones(3), out=lib.empty(0))
        with lib.no_grad():
            lib.mv(x, lib.ones(3), out=lib.empty(0))
