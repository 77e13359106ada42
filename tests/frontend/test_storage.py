"""Tensor.untyped_storage(), Tensor.storage() and tp.UntypedStorage / tp.TypedStorage: the surface
PyTorch scripts use (sizes, data_ptr, bytes and elements, copies), storage sharing between views,
and PyTorch's deprecation warning. Bytes are checked against NumPy's own encoding of the values,
behaviour PyTorch defines against PyTorch where it is installed."""
import warnings

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.api import backend_storage
from tests.torch_reference import torch_or_skip

VALUES = np.array([0.5, -1.25, 2.0, 3.0, -0.75, 8.0], dtype=np.float32)
DEPRECATED = "TypedStorage is deprecated"


def _typed(t):
    with pytest.warns(UserWarning, match=DEPRECATED):
        return t.storage()


def test_views_share_one_storage_and_copies_do_not(device):
    x = tp.tensor(VALUES, device=device).reshape(2, 3)
    storage = x.untyped_storage()
    assert isinstance(storage, tp.UntypedStorage)
    for view in (x[1:], x.t(), x.view(6), x[:, 1], x.detach(), x.reshape(3, 2), x[0].expand(4, 3)):
        assert view.untyped_storage() is storage
        assert view.untyped_storage() == storage
        assert view.untyped_storage().data_ptr() == storage.data_ptr()
    for copy in (x.clone(), x.t().contiguous(), x + 0):
        assert copy.untyped_storage() is not storage
        assert copy.untyped_storage().data_ptr() != storage.data_ptr()
    # A tensor's data_ptr is its storage's plus its offset in bytes.
    assert x.data_ptr() == storage.data_ptr()
    assert x[1, 2].data_ptr() - x.data_ptr() == 5 * 4
    assert x[1:].storage_offset() == 3


def test_sizes_and_device(device):
    x = tp.tensor(VALUES, device=device)[2:5]  # a view: the storage is the whole allocation
    s = x.untyped_storage()
    assert s.nbytes() == s.size() == len(s) == VALUES.nbytes
    assert s.element_size() == 1
    assert s.device == x.device
    assert s.is_cuda is (device == "cuda")
    assert s.untyped() is s


def test_bytes_are_the_values_encoding(device):
    x = tp.tensor(VALUES, device=device)
    s = x.untyped_storage()
    expected = list(VALUES.tobytes())
    assert s.tolist() == expected
    assert list(s) == expected
    assert s[4] == expected[4] and s[-1] == expected[-1]
    s[3] = 0x40  # the top byte of 0.5 (0x3F000000) becomes 0x40: 2.0
    assert x.cpu().tolist()[0] == 2.0


def test_index_errors():
    s = tp.tensor(VALUES).untyped_storage()
    with pytest.raises(IndexError, match="index 30 out of range for storage of size 24"):
        s[30]
    with pytest.raises(IndexError, match="index -25 out of range for storage of size 24"):
        s[-25]
    with pytest.raises(TypeError, match="can't index a tensorplug.UntypedStorage with str"):
        s["a"]
    with pytest.raises(RuntimeError, match="slices are not supported"):
        s[1:3]


def test_cpu_clone_and_to(device):
    x = tp.tensor(VALUES, device=device)
    s = x.untyped_storage()
    on_cpu = s.cpu()
    assert on_cpu.device.type == "cpu" and on_cpu.tolist() == list(VALUES.tobytes())
    assert (on_cpu is s) is (device == "cpu")
    twin = s.clone()
    assert twin.device == s.device and twin.tolist() == s.tolist() and twin.data_ptr() != s.data_ptr()
    twin[0] = 1
    assert s[0] == VALUES.tobytes()[0]  # the clone owns its bytes
    assert s.to(device=device) is s
    assert s.to(device="cpu").tolist() == list(VALUES.tobytes())


def test_resize_keeps_only_the_current_size():
    s = tp.tensor(VALUES).untyped_storage()
    assert s.resize_(24) is s
    with pytest.raises(RuntimeError, match=r"keep the size they were allocated with \(24 bytes on cpu\); resizing to 100"):
        s.resize_(100)


def test_the_storage_outlives_the_tensor():
    x = tp.tensor(VALUES)
    s = x.untyped_storage()
    del x
    assert s.tolist() == list(VALUES.tobytes())


def test_an_empty_tensor_has_an_empty_storage():
    torch = torch_or_skip()
    for lib in (tp, torch):
        s = lib.empty(0).untyped_storage()
        assert (s.nbytes(), s.data_ptr(), s.tolist()) == (0, 0, [])
    assert tp.empty(0).data_ptr() == 0


def test_the_backend_storage_attributes_stay_readable(device):
    # Backends written before backends.api.backend_storage read their own fields through
    # untyped_storage() (npdev's .buffer, OpenCL's .buffer and .state).
    x = tp.ones(3, device=device)
    own = backend_storage(x)
    fields = [name for name in dir(own) if not name.startswith("_") and not hasattr(tp.UntypedStorage, name)]
    for name in fields:
        assert getattr(x.untyped_storage(), name) is getattr(own, name)
    with pytest.raises(AttributeError):
        x.untyped_storage().no_such_field


def test_untyped_storage_matches_pytorch():
    torch = torch_or_skip()
    ours, theirs = tp.tensor(VALUES).reshape(2, 3), torch.tensor(VALUES).reshape(2, 3)
    for a, b in ((ours, theirs), (ours[1:], theirs[1:]), (ours.t(), theirs.t())):
        sa, sb = a.untyped_storage(), b.untyped_storage()
        assert (sa.nbytes(), sa.size(), len(sa), sa.element_size(), sa.tolist()) == \
               (sb.nbytes(), sb.size(), len(sb), sb.element_size(), sb.tolist())
        assert a.storage_offset() == b.storage_offset()
        assert a.data_ptr() - sa.data_ptr() == b.data_ptr() - sb.data_ptr()
    assert repr(ours.untyped_storage()) == repr(theirs.untyped_storage()).replace("torch.storage.", "tensorplug.")


def test_tensor_storage_warns_and_reads_elements(device):
    x = tp.tensor(VALUES, device=device)
    t = _typed(x[2:])
    assert isinstance(t, tp.TypedStorage)
    assert t.dtype is tp.float32 and t.device == x.device
    assert t.size() == len(t) == 6 and t.nbytes() == 24 and t.element_size() == 4
    assert t.data_ptr() == x.data_ptr() == x.untyped_storage().data_ptr()
    assert t.untyped() is x.untyped_storage()
    assert t.tolist() == VALUES.tolist() and list(t) == VALUES.tolist()
    assert t[1] == -1.25 and t[-1] == 8.0
    t[0] = 100.0  # writes the tensor's memory
    assert x.cpu().tolist()[0] == 100.0
    assert t.cpu().tolist() == t.tolist()
    copy = t.clone()
    copy[1] = 7.0
    assert t[1] == -1.25


def test_typed_storage_of_other_dtypes():
    ints = _typed(tp.tensor([3, -4, 5]))
    assert ints.dtype is tp.int64 and ints.tolist() == [3, -4, 5] and ints.nbytes() == 24
    flags = _typed(tp.tensor([True, False]))
    assert flags.tolist() == [True, False] and flags.element_size() == 1


def test_typed_storage_matches_pytorch():
    torch = torch_or_skip()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # PyTorch warns once per process
        theirs = torch.tensor(VALUES)[1:].storage()
    ours = _typed(tp.tensor(VALUES)[1:])
    assert (ours.size(), ours.nbytes(), ours.element_size(), ours.tolist()) == \
           (theirs.size(), theirs.nbytes(), theirs.element_size(), theirs.tolist())
    assert repr(ours) == repr(theirs).replace("torch.storage.", "tensorplug.").replace("torch.float32", "tensorplug.float32")
    with pytest.raises(RuntimeError, match="slices are"):
        ours[0:2]
    with pytest.raises(IndexError, match="index 6 out of range for storage of size 5"):
        _typed(tp.tensor(VALUES[:5]))[6]


def test_the_storage_classes_construct_like_pytorch(device):
    s = tp.UntypedStorage(10, device=device)
    assert s.nbytes() == 10 and s.device.type == device
    assert tp.UntypedStorage([1, 2, 255]).tolist() == [1, 2, 255]
    assert tp.UntypedStorage().nbytes() == 0
    with pytest.warns(UserWarning, match=DEPRECATED):
        t = tp.TypedStorage([1.5, 2.5], dtype=tp.float64, device=device)
    assert t.tolist() == [1.5, 2.5] and t.dtype is tp.float64 and t.device.type == device
    with pytest.warns(UserWarning, match=DEPRECATED):
        assert tp.TypedStorage(3, dtype=tp.int32).nbytes() == 12
    with pytest.warns(UserWarning, match=DEPRECATED):
        wrapped = tp.TypedStorage(wrap_storage=s, dtype=tp.int16)
    assert wrapped.untyped() is s and wrapped.size() == 5
    with pytest.raises(RuntimeError, match="must be non-negative, got -1"):
        tp.UntypedStorage(-1)
    with pytest.raises(TypeError, match="expected a size .* got float"):
        tp.UntypedStorage(2.5)
