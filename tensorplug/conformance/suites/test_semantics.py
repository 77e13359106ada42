"""Semantic suites: type promotion, views and in-place with version counters, copies across
devices and dtypes, memory, random numbers and declared capabilities."""
import gc
import weakref

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.api import CONTRACT_VERSION, PRIMITIVES, REQUIRED_DTYPES, backend_storage
from tensorplug.conformance._checks import ConformanceFailure
from tensorplug.conformance.opdb._core import ALL_DTYPES, INT_DTYPES, round_to, to_numpy, to_tensor
from tensorplug.conformance.suites import cases, item

# --- type promotion -------------------------------------------------------------------------------
_INT_ORDER = ("uint8", "int8", "int16", "int32", "int64")
_FLOAT_ORDER = ("float16", "bfloat16", "float32", "float64")


def _category(dtype):
    return 0 if dtype == "bool" else 1 if dtype in INT_DTYPES else 2


def expected_promotion(a: str, b: str) -> str:
    """PyTorch's rule for two dimensioned tensors, written out independently of tensorplug."""
    if a == b:
        return a
    ca, cb = _category(a), _category(b)
    if ca != cb:
        return a if ca > cb else b
    if ca == 1:
        if {a, b} == {"uint8", "int8"}:
            return "int16"
        return max(a, b, key=_INT_ORDER.index)
    if {a, b} == {"float16", "bfloat16"}:
        return "float32"
    return max(a, b, key=_FLOAT_ORDER.index)


def _scalar_result(dtype: str, scalar) -> str:
    kind = 0 if isinstance(scalar, bool) else 1 if isinstance(scalar, int) else 2
    if kind > _category(dtype):
        return "int64" if kind == 1 else "float32"
    return dtype


@pytest.fixture(params=[d for d in ALL_DTYPES], ids=lambda d: d)
def promo_dtype(request, conformance):
    dtype = request.param
    if dtype not in REQUIRED_DTYPES and dtype not in conformance.declared:
        pytest.skip(f"not supported: the backend does not declare {dtype}")
    return dtype


@item("promotion", "tensor op tensor")
def test_promotion_tensor_tensor(promo_dtype, conformance):
    """a + b (mul for bool pairs) has PyTorch's promoted dtype and the promoted values."""
    dev = conformance.device
    for other in ALL_DTYPES:
        if other not in REQUIRED_DTYPES and other not in conformance.declared:
            continue
        want = expected_promotion(promo_dtype, other)
        a_vals, b_vals = np.array([1.0, 0.0, 3.0]), np.array([2.0, 1.0, 0.0])
        a, b = to_tensor(tp, a_vals, promo_dtype, dev), to_tensor(tp, b_vals, other, dev)
        result = a * b
        if result.dtype.name != want:
            raise ConformanceFailure(f"{promo_dtype} * {other}: result dtype {result.dtype.name}, expected {want}")
        want_values = round_to(to_numpy(a) * to_numpy(b), want)
        if want == "bool":
            want_values = want_values != 0
        np.testing.assert_array_equal(to_numpy(result), want_values, err_msg=f"{promo_dtype} * {other}")


@item("promotion", "tensor op scalar")
def test_promotion_tensor_scalar(promo_dtype, conformance):
    """A Python scalar promotes only across categories (bool < int < float), as in PyTorch."""
    x = to_tensor(tp, np.array([1.0, 0.0, 2.0]), promo_dtype, conformance.device)
    for scalar in (True, 2, 0.5):
        want = _scalar_result(promo_dtype, scalar)
        result = x * scalar
        if result.dtype.name != want:
            raise ConformanceFailure(f"{promo_dtype} * {scalar!r}: result dtype {result.dtype.name}, expected {want}")
        want_values = round_to(to_numpy(x) * scalar, want)
        if want == "bool":
            want_values = (want_values != 0).astype(np.float64)
        np.testing.assert_allclose(to_numpy(result), want_values, err_msg=f"{promo_dtype} * {scalar!r}")


@item("promotion", "0-d tensor operand")
def test_promotion_zero_dim(conformance):
    """A 0-d tensor of the same category does not widen a dimensioned tensor."""
    dev = conformance.device
    cases_ = [("float32", "float64", "float32"), ("int64", "float32", "float32"), ("bool", "int64", "int64")]
    for a, b, want in cases_:
        if b not in conformance.declared and b not in REQUIRED_DTYPES:
            continue
        x = to_tensor(tp, np.array([1.0, 2.0]), a, dev)
        s = to_tensor(tp, np.array(3.0), b, dev)
        if (x * s).dtype.name != want:
            raise ConformanceFailure(f"{a}[2] * {b}[] gives {(x * s).dtype.name}, expected {want}")


# --- views, aliasing, in-place and version counters ----------------------------------------------
_VIEWS = {
    "view": lambda x: x.view(4, 3),
    "reshape (contiguous)": lambda x: x.reshape(12),
    "permute": lambda x: x.permute(1, 0),
    "transpose": lambda x: x.transpose(0, 1),
    "t": lambda x: x.t(),
    "narrow": lambda x: x.narrow(1, 1, 2),
    "select": lambda x: x.select(0, 1),
    "slice": lambda x: x[1:, ::2],
    "unsqueeze": lambda x: x.unsqueeze(0),
    "squeeze": lambda x: x.unsqueeze(1).squeeze(1),
    "diagonal": lambda x: x.diagonal(),
    "flatten (contiguous)": lambda x: x.flatten(),
    "unflatten": lambda x: x.unflatten(1, (2, 2)),
    "movedim": lambda x: x.movedim(0, 1),
    "as_strided": lambda x: x.as_strided((2, 2), (1, 4)),
    "split": lambda x: x.split(2, dim=1)[1],
    "unbind": lambda x: x.unbind(0)[2],
    "detach": lambda x: x.detach(),
}


@pytest.mark.parametrize("name", list(_VIEWS))
@item("views", "view aliasing")
def test_view_aliases_base(name, conformance):
    """A view shares memory: writing through it changes the base, and both versions advance."""
    base = tp.arange(12, dtype=tp.float32, device=conformance.device).reshape(3, 4)
    view = _VIEWS[name](base)
    # Values: the same view taken on the CPU (the shape suite checks the CPU against NumPy).
    np.testing.assert_array_equal(to_numpy(view), to_numpy(_VIEWS[name](base.cpu().clone())))
    before = base._version
    view.mul_(-1)
    if base._version <= before or view._version != base._version:
        raise ConformanceFailure(f"{name}: version counters after in-place on the view: base {before} -> {base._version}, view {view._version}")
    host = to_numpy(base)
    if not (host < 0).any():
        raise ConformanceFailure(f"{name}: writing through the view did not change the base")
    if (view.detach().cpu().numpy() > 0).any():
        raise ConformanceFailure(f"{name}: view values not negated by its own in-place op")


@item("views", "copies are not views")
def test_copies_do_not_alias(conformance):
    """clone, contiguous of a transposed view, and reshape of a non-contiguous view copy."""
    base = tp.arange(12, dtype=tp.float32, device=conformance.device).reshape(3, 4)
    for name, copy in (("clone", base.clone()), ("contiguous", base.t().contiguous()), ("reshape", base.t().reshape(12))):
        copy.fill_(-1)
        if (to_numpy(base) < 0).any():
            raise ConformanceFailure(f"{name}: writing into the copy changed the original")


@item("views", "in-place version counter")
def test_inplace_bumps_version(conformance):
    """Each in-place op bumps the version counter once; out-of-place ops do not."""
    x = tp.ones(4, device=conformance.device)
    v = x._version
    x.add_(1)
    x.mul_(2)
    _ = x + 1
    if x._version != v + 2:
        raise ConformanceFailure(f"version {v} -> {x._version} after two in-place ops, expected {v + 2}")
    x[0] = 5.0
    if x._version != v + 3:
        raise ConformanceFailure(f"setitem did not bump the version ({x._version})")


@item("views", "saved tensor modified in-place")
def test_modified_saved_tensor_raises(conformance):
    """Backward through an op whose saved input was modified in-place raises RuntimeError."""
    a = tp.ones(3, device=conformance.device, requires_grad=True)
    z = a.clone()
    w = z.sin()
    z.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.sum().backward()


@item("views", "in-place on leaf requiring grad")
def test_inplace_on_leaf_raises(conformance):
    x = tp.ones(2, device=conformance.device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad is being used in an in-place operation"):
        x.add_(1)


@item("views", "gradient through in-place on a view")
def test_grad_through_view_inplace(conformance):
    """y = x.clone(); y[0] *= 2 (through a view); grad of y.sum() is [2, 1, 1]."""
    x = tp.ones(3, device=conformance.device, requires_grad=True)
    y = x.clone()
    y[0:1].mul_(2)
    (y * tp.tensor([1.0, 1.0, 1.0], device=conformance.device)).sum().backward()
    np.testing.assert_array_equal(to_numpy(x.grad), [2.0, 1.0, 1.0])


# --- copies and .to() ----------------------------------------------------------------------------
@cases("dtypes")
@item("copies", "round trip")
def test_round_trip(case, conformance):
    """cpu -> device -> cpu keeps every value, contiguous or not, for each supported dtype."""
    dtype, dev = case.dtype, conformance.device
    values = np.array([[0.0, 1.0, 2.5, -3.0], [100.0, -0.5, 7.0, 1.0]])
    if dtype == "bool":
        values = values != 0
    elif dtype in INT_DTYPES:
        values = np.abs(np.trunc(values))
    values = round_to(values.astype(np.float64), dtype)
    host = to_tensor(tp, values, dtype, "cpu")
    for name, src in (("contiguous", host), ("transposed", host.t())):
        there = src.to(dev)
        if there.device.type != dev or there.dtype.name != dtype:
            raise ConformanceFailure(f"{name}: .to({dev!r}) gave {there.device} {there.dtype.name}")
        back = there.to("cpu")
        np.testing.assert_array_equal(to_numpy(back), to_numpy(src), err_msg=name)
    filled = tp.full((3,), 1, dtype=getattr(tp, dtype), device=dev)
    np.testing.assert_array_equal(to_numpy(filled), [1, 1, 1])


_CASTS = [("float32", "int64"), ("float32", "bool"), ("int64", "float32"), ("bool", "float32"), ("int64", "bool"),
          ("float64", "float32"), ("float32", "float16"), ("float32", "bfloat16"), ("int64", "int8"), ("float32", "uint8")]


@pytest.mark.parametrize("pair", _CASTS, ids=lambda p: f"{p[0]}->{p[1]}")
@item("copies", "dtype conversion")
def test_dtype_conversion(pair, conformance):
    """.to(dtype) on the device: float to int truncates toward zero; to bool is != 0."""
    src, dst = pair
    for d in pair:
        if d not in REQUIRED_DTYPES and d not in conformance.declared:
            pytest.skip(f"not supported: the backend does not declare {d}")
    values = round_to(np.array([-2.75, -1.0, -0.5, 0.0, 0.5, 1.5, 3.25, 100.0]), src)
    if src in INT_DTYPES:
        values = np.trunc(values)
    if dst == "uint8":
        values = np.abs(values)
    if src == "bool":
        values = (values != 0).astype(np.float64)
    x = to_tensor(tp, values, src, conformance.device)
    got = to_numpy(x.to(getattr(tp, dst)))
    if dst == "bool":
        want = (values != 0).astype(np.float64)
    elif dst in INT_DTYPES:
        want = np.trunc(values)
    else:
        want = round_to(values, dst)
    np.testing.assert_array_equal(got, want)


@item("copies", "copy_ across devices and layouts")
def test_copy_between_devices(conformance):
    """copy_ from a CPU tensor into a non-contiguous device view, and back, converting dtype."""
    dev = conformance.device
    dst = tp.zeros(4, 6, device=dev)[:, ::2]
    src = tp.arange(12, dtype=tp.int64).reshape(4, 3)
    dst.copy_(src)
    np.testing.assert_array_equal(to_numpy(dst), np.arange(12).reshape(4, 3))
    host = tp.zeros(3, 4, dtype=tp.int64)
    host.copy_(dst.t())
    np.testing.assert_array_equal(to_numpy(host), np.arange(12).reshape(4, 3).T)


@item("copies", "tensor, tolist and item")
def test_tolist_item(conformance):
    x = tp.tensor([[1.5, 2.0], [3.0, -4.0]], device=conformance.device)
    assert x.tolist() == [[1.5, 2.0], [3.0, -4.0]]
    assert x[1, 1].item() == -4.0
    assert tp.tensor(True, device=conformance.device).item() is True


# --- memory --------------------------------------------------------------------------------------
def _stats(conformance):
    return conformance.backend.memory_stats(0) or {}


@item("memory", "freed when the tensor dies")
def test_memory_freed_on_death(conformance):
    """The storage goes away as soon as the last tensor using it does (reference counting)."""
    x = tp.empty(1 << 16, device=conformance.device)
    view = x[10:]
    try:
        storage = weakref.ref(backend_storage(x))
    except TypeError:
        storage = None
    before = _stats(conformance).get("allocated_bytes")
    del x
    if storage is not None and storage() is None:
        raise ConformanceFailure("storage freed while a view still uses it")
    del view
    if storage is not None and storage() is not None:
        raise ConformanceFailure("storage still alive after its last tensor died (without gc)")
    after = _stats(conformance).get("allocated_bytes")
    if before is not None and after is not None and after >= before:
        raise ConformanceFailure(f"allocated_bytes did not drop: {before} -> {after}")


@item("memory", "no growth over repeated calls")
def test_no_growth(conformance):
    """A training-like step repeated 30 times allocates no more after the first few."""
    dev = conformance.device
    w = tp.randn(64, 64, device=dev, requires_grad=True)
    x = tp.randn(32, 64, device=dev)

    def step():
        loss = (x @ w).relu().sum()
        loss.backward()
        w.grad = None

    for _ in range(3):
        step()
    gc.collect()
    first = _stats(conformance).get("allocated_bytes")
    if first is None:
        pytest.skip("not supported: the backend reports no allocated_bytes in memory_stats()")
    for _ in range(30):
        step()
    after = _stats(conformance).get("allocated_bytes")
    if after > first:
        raise ConformanceFailure(f"allocated_bytes grew from {first} to {after} over 30 identical steps")


# --- random numbers ------------------------------------------------------------------------------
@cases("random")
@item("random", "random")
def test_random(case, conformance):
    """Same seed gives the same numbers; moments and range within statistical bounds."""
    entry, dtype, dev = case.payload, case.dtype, conformance.device
    n = 20_000 if conformance.quick else 200_000
    tp.manual_seed(1234)
    first = to_numpy(entry.draw(tp, n, dtype, dev))
    tp.manual_seed(1234)
    again = to_numpy(entry.draw(tp, n, dtype, dev))
    if not np.array_equal(first, again):
        raise ConformanceFailure(f"{entry.name} {dtype}: the same seed gave different numbers")
    following = to_numpy(entry.draw(tp, n, dtype, dev))
    if np.array_equal(first, following):
        raise ConformanceFailure(f"{entry.name} {dtype}: consecutive draws were identical (generator offset not advanced)")
    if entry.low is not None and (first.min() < entry.low or first.max() >= entry.high):
        raise ConformanceFailure(f"{entry.name} {dtype}: values outside [{entry.low}, {entry.high}): min {first.min()}, max {first.max()}")
    # Six standard errors; the variance bound assumes kurtosis at most that of a normal (3).
    mean_bound = 6 * np.sqrt(entry.var / n) + (0.01 if dtype == "bfloat16" else 0.0)
    var_bound = 6 * entry.var * np.sqrt(2 / n) + (0.02 * entry.var if dtype in ("float16", "bfloat16") else 0.0)
    mean, var = first.mean(), first.var()
    if abs(mean - entry.mean) > mean_bound:
        raise ConformanceFailure(f"{entry.name} {dtype}: mean {mean:.5f}, expected {entry.mean} +- {mean_bound:.5f}", abs(mean - entry.mean))
    if abs(var - entry.var) > var_bound:
        raise ConformanceFailure(f"{entry.name} {dtype}: variance {var:.5f}, expected {entry.var} +- {var_bound:.5f}", abs(var - entry.var))


@item("random", "bit-identical to the CPU")
def test_random_matches_cpu(conformance):
    """Philox: the same seed gives bit-identical rand/randint and near-identical randn on every device."""
    dev = conformance.device
    for name, draw, exact in (("rand", lambda d: tp.rand(1001, device=d), True),
                              ("randint", lambda d: tp.randint(0, 1000, (1001,), device=d), True),
                              ("randn", lambda d: tp.randn(1001, device=d), False)):
        tp.manual_seed(7)
        here = to_numpy(draw(dev))
        tp.manual_seed(7)
        cpu = to_numpy(draw("cpu"))
        if exact and not np.array_equal(here, cpu):
            raise ConformanceFailure(f"{name}: {int((here != cpu).sum())} of 1001 values differ from the CPU's")
        if not exact:
            np.testing.assert_allclose(here, cpu, rtol=1e-5, atol=1e-6, err_msg=name)


# --- capabilities --------------------------------------------------------------------------------
@cases("dtypes")
@item("capabilities", "dtype support")
def test_declared_dtype_works(case, conformance):
    """A declared dtype supports creation, copies, arithmetic, comparison and reduction."""
    dtype, dev = case.dtype, conformance.device
    t = getattr(tp, dtype)
    x = tp.ones(5, dtype=t, device=dev)
    y = tp.zeros(5, dtype=t, device=dev)
    checks = {
        "ones": to_numpy(x), "zeros + ones": to_numpy(y + x if dtype != "bool" else y | x),
        "eq": to_numpy(x == x), "sum": np.asarray(to_numpy(x.sum())), "where": to_numpy(tp.where(x == x, x, y)),
    }
    want = {"ones": np.ones(5), "zeros + ones": np.ones(5), "eq": np.ones(5), "sum": np.asarray(5.0), "where": np.ones(5)}
    for name, got in checks.items():
        if not np.array_equal(got, want[name]):
            raise ConformanceFailure(f"{dtype}: {name} gave {got}")


@pytest.mark.parametrize("primitive", list(PRIMITIVES))
@item("capabilities", "native primitive")
def test_native_primitive(primitive, conformance):
    """Every primitive has a native kernel: one that runs through the fallback is not conformant."""
    if primitive not in conformance.backend.kernels():
        raise ConformanceFailure(f"{primitive}: no kernel in {conformance.device}'s kernels(); it runs through the fallback")


@item("capabilities", "contract version")
def test_contract_version(conformance):
    if conformance.backend.contract_version != CONTRACT_VERSION:
        raise ConformanceFailure(f"backend written for contract {conformance.backend.contract_version}, this is {CONTRACT_VERSION}")


@item("capabilities", "required dtypes declared")
def test_required_dtypes_declared(conformance):
    missing = sorted(set(REQUIRED_DTYPES) - conformance.declared)
    if missing:
        raise ConformanceFailure(f"the backend does not declare required dtypes {missing}")
