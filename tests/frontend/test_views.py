"""View ops share storage with their base, match NumPy's views, and share the version counter."""
import numpy as np
import pytest

import tensorplug as tp


@pytest.fixture
def base():
    """A (2, 3, 4) float64 tensor holding 0..23, and the same values in NumPy."""
    values = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    return tp.tensor(values), values


# name -> (tensorplug view, the same view in NumPy)
VIEWS = {
    "view": (lambda t: t.view(6, 4), lambda a: a.reshape(6, 4)),
    "view_infer": (lambda t: t.view(-1, 2), lambda a: a.reshape(-1, 2)),
    "reshape": (lambda t: tp.reshape(t, (4, 6)), lambda a: a.reshape(4, 6)),
    "transpose": (lambda t: tp.transpose(t, 0, 2), lambda a: a.transpose(2, 1, 0)),
    "transpose_negative": (lambda t: t.transpose(-1, -2), lambda a: a.swapaxes(-1, -2)),
    "swapaxes": (lambda t: tp.swapaxes(t, 0, 1), lambda a: a.swapaxes(0, 1)),
    "t": (lambda t: tp.t(t[0]), lambda a: a[0].T),
    "T": (lambda t: t.T, lambda a: a.T),
    "mT": (lambda t: t.mT, lambda a: a.swapaxes(-1, -2)),
    "permute": (lambda t: tp.permute(t, (2, 0, 1)), lambda a: a.transpose(2, 0, 1)),
    "permute_varargs": (lambda t: t.permute(1, 2, 0), lambda a: a.transpose(1, 2, 0)),
    "expand": (lambda t: t[:, :1].expand(2, 5, 4), lambda a: np.broadcast_to(a[:, :1], (2, 5, 4))),
    "expand_new_dims": (lambda t: tp.expand(t[0, 0], (3, 4)), lambda a: np.broadcast_to(a[0, 0], (3, 4))),
    "broadcast_to": (lambda t: tp.broadcast_to(t[:, 1:2], (2, 3, 4)), lambda a: np.broadcast_to(a[:, 1:2], (2, 3, 4))),
    "squeeze": (lambda t: tp.squeeze(t[:, :1, :]), lambda a: a[:, :1, :].squeeze()),
    "squeeze_dim": (lambda t: t[:1].squeeze(0), lambda a: a[:1].squeeze(0)),
    "squeeze_non_one": (lambda t: t.squeeze(1), lambda a: a),
    "unsqueeze": (lambda t: tp.unsqueeze(t, 1), lambda a: a[:, None]),
    "unsqueeze_end": (lambda t: t.unsqueeze(-1), lambda a: a[..., None]),
    "flatten": (lambda t: tp.flatten(t), lambda a: a.reshape(-1)),
    "flatten_range": (lambda t: t.flatten(1, 2), lambda a: a.reshape(2, 12)),
    "unflatten": (lambda t: tp.unflatten(t, 2, (2, 2)), lambda a: a.reshape(2, 3, 2, 2)),
    "select": (lambda t: tp.select(t, 1, 2), lambda a: a[:, 2]),
    "select_negative": (lambda t: t.select(-1, -1), lambda a: a[..., -1]),
    "narrow": (lambda t: tp.narrow(t, 2, 1, 2), lambda a: a[:, :, 1:3]),
    "slice_step": (lambda t: t[:, ::2, 1::3], lambda a: a[:, ::2, 1::3]),
    "slice_negative_bounds": (lambda t: t[-1:, -2:, :-1], lambda a: a[-1:, -2:, :-1]),
    "int_index": (lambda t: t[1, 2], lambda a: a[1, 2]),
    "ellipsis_none": (lambda t: t[..., None, 1], lambda a: a[..., None, 1]),
    "diagonal": (lambda t: tp.diagonal(t[0]), lambda a: np.diagonal(a[0])),
    "diagonal_offset": (lambda t: t[0].diagonal(1), lambda a: np.diagonal(a[0], 1)),
    "diagonal_negative_offset": (lambda t: t[0].diagonal(-1), lambda a: np.diagonal(a[0], -1)),
    "diagonal_dims": (lambda t: tp.diagonal(t, 0, 1, 2), lambda a: np.diagonal(a, 0, 1, 2)),
    "movedim": (lambda t: tp.movedim(t, 0, -1), lambda a: np.moveaxis(a, 0, -1)),
    "movedim_many": (lambda t: t.movedim((0, 1), (2, 0)), lambda a: np.moveaxis(a, (0, 1), (2, 0))),
    "chained": (lambda t: t.transpose(0, 1)[1:, :, ::2].unsqueeze(0), lambda a: a.swapaxes(0, 1)[1:, :, ::2][None]),
}
# Views into which writes make sense (no stride-0 dims).
WRITABLE = [name for name in VIEWS if not name.startswith(("expand", "broadcast"))]


@pytest.mark.parametrize("name", list(VIEWS))
def test_view_matches_numpy(base, name):
    """Each view op gives NumPy's shape and values."""
    t, a = base
    make, reference = VIEWS[name]
    v = make(t)
    expected = reference(a)
    assert tuple(v.shape) == expected.shape
    np.testing.assert_array_equal(v.numpy(), expected)


@pytest.mark.parametrize("name", list(VIEWS))
def test_view_shares_storage(base, name):
    """A view is a window on its base's storage: same storage, no copy."""
    t, a = base
    v = VIEWS[name][0](t)
    assert v.untyped_storage() is t.untyped_storage()
    # Element strides in the view are the NumPy strides of the same view (in elements).
    expected = VIEWS[name][1](a)
    nonzero_dims = [i for i, n in enumerate(expected.shape) if n > 1]
    assert [v.stride()[i] for i in nonzero_dims] == [expected.strides[i] // 8 for i in nonzero_dims]


@pytest.mark.parametrize("name", WRITABLE)
def test_write_through_view_is_seen_by_base(base, name):
    """Filling a view changes exactly the base elements NumPy's view covers."""
    t, a = base
    v = VIEWS[name][0](t)
    v.fill_(-1.0)
    expected = a.copy()
    touched = VIEWS[name][1](a).astype(np.int64)  # a holds its own flat indices
    expected.reshape(-1)[touched.reshape(-1)] = -1.0
    np.testing.assert_array_equal(t.numpy(), expected)


@pytest.mark.parametrize("name", WRITABLE)
def test_write_through_base_is_seen_by_view(base, name):
    """An in-place change of the base shows through an existing view."""
    t, a = base
    v = VIEWS[name][0](t)
    t.mul_(2)
    np.testing.assert_array_equal(v.numpy(), VIEWS[name][1](a * 2))


@pytest.mark.parametrize("name", WRITABLE)
def test_version_counter_is_shared(base, name):
    """An in-place op through a view bumps the version seen by the base and by other views."""
    t, _ = base
    v = VIEWS[name][0](t)
    other = t[1:]
    before = t._version
    assert v._version == before
    v.add_(1)
    assert t._version > before
    assert v._version == t._version == other._version
    later = VIEWS[name][0](t)
    assert later._version == t._version


def test_version_counter_counts_each_inplace_op():
    """Every in-place op (op_, setitem, copy_, fill_, zero_) adds to the version."""
    t = tp.zeros(4)
    start = t._version
    t.add_(1)
    t[0] = 5.0
    t.copy_(tp.ones(4))
    t.fill_(2.0)
    t.zero_()
    assert t._version == start + 5


def test_out_of_place_op_does_not_bump_version():
    """Reading a tensor (t + 1, views, clone) leaves its version alone."""
    t = tp.zeros(4)
    start = t._version
    _ = t + 1
    _ = t.view(2, 2).t()
    _ = t.clone()
    assert t._version == start


@pytest.mark.parametrize("make", [lambda t: t.t(), lambda t: t[:, :3], lambda t: t[:, ::3], lambda t: t.expand(2, 3, 4)[0].t()],
                         ids=["transposed", "narrowed", "stepped", "expanded"])
def test_view_of_non_contiguous_raises(make):
    """view() across non-mergeable strides raises RuntimeError pointing at .reshape."""
    t = make(tp.zeros(3, 4))
    with pytest.raises(RuntimeError, match=r"\.reshape"):
        t.view(-1)


def test_view_of_mergeable_non_contiguous_dims_works():
    """view() may merge dims whose strides line up even when the tensor is not contiguous."""
    a = np.arange(24.0).reshape(2, 3, 4)
    t = tp.tensor(a)[:, :, 1:3]  # dims 0 and 1 are still mergeable
    v = t.view(6, 2)
    assert v.untyped_storage() is t.untyped_storage()
    np.testing.assert_array_equal(v.numpy(), a[:, :, 1:3].reshape(6, 2))


def test_reshape_copies_only_when_needed():
    """reshape is a view of a contiguous tensor and a copy of a transposed one."""
    a = np.arange(12.0).reshape(3, 4)
    t = tp.tensor(a)
    r = t.reshape(4, 3)
    assert r.untyped_storage() is t.untyped_storage()
    tt = t.t()
    copy = tt.reshape(12)
    np.testing.assert_array_equal(copy.numpy(), a.T.reshape(12))
    assert copy.untyped_storage() is not t.untyped_storage()
    copy.fill_(0.0)
    np.testing.assert_array_equal(t.numpy(), a)


def test_contiguous_copies_only_when_needed():
    """contiguous() returns self when already contiguous, else a contiguous copy."""
    t = tp.arange(12.0).view(3, 4)
    assert t.contiguous() is t
    tt = t.t()
    c = tt.contiguous()
    assert c.is_contiguous() and not tt.is_contiguous()
    assert c.untyped_storage() is not t.untyped_storage()
    np.testing.assert_array_equal(c.numpy(), np.arange(12.0).reshape(3, 4).T)
    assert c.stride() == (3, 1)


def test_is_contiguous():
    """is_contiguous is true for row-major layouts (ignoring size-1 dims) only."""
    t = tp.zeros(2, 3, 4)
    assert t.is_contiguous()
    assert t[1].is_contiguous()
    assert not t[:, :1].is_contiguous()
    assert not t.transpose(0, 1).is_contiguous()
    assert not t[..., ::2].is_contiguous()
    assert t.unsqueeze(0).is_contiguous()
    assert tp.zeros(1, 4).t().is_contiguous()  # size-1 dims do not matter


def test_expand_has_stride_zero_and_no_copy():
    """expand() sets the stride of expanded dims to 0."""
    t = tp.tensor([[1.0], [2.0], [3.0]])
    e = t.expand(3, 5)
    assert e.stride() == (1, 0)
    assert e.untyped_storage() is t.untyped_storage()
    t[1, 0] = 9.0
    np.testing.assert_array_equal(e.numpy(), np.broadcast_to([[1.0], [9.0], [3.0]], (3, 5)))


def test_storage_offset_and_data_ptr_follow_numpy():
    """storage_offset() and data_ptr() point at the view's first element."""
    t = tp.arange(24, dtype=tp.int32).view(2, 3, 4)
    v = t[1, 1:, 2:]
    assert v.storage_offset() == 12 + 4 + 2
    assert v.data_ptr() == t.data_ptr() + (12 + 4 + 2) * 4


def test_view_errors():
    """Impossible reshapes and permutations raise with what was asked."""
    t = tp.zeros(2, 3)
    with pytest.raises(RuntimeError, match="invalid for input of size 6"):
        t.view(4, 2)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        t.view(-1, -1)
    with pytest.raises(RuntimeError):
        t.permute(0, 0)
    with pytest.raises(RuntimeError):
        t.permute(0)
    with pytest.raises(RuntimeError, match="must match the existing size"):
        t.expand(4, 3)
    with pytest.raises(IndexError):
        t.select(0, 2)
    with pytest.raises(IndexError):
        t.narrow(1, 2, 2)
    with pytest.raises(IndexError):
        t.transpose(0, 2)
    with pytest.raises(RuntimeError):
        tp.zeros(2, 3, 4).t()
