"""Helpers that tensorplug.backends.api gives kernels agree with the accessors of the contract."""
import pytest

import tensorplug as tp
from tensorplug.backends import api


@pytest.mark.parametrize("make", [
    lambda: tp.arange(12.0).reshape(3, 4),
    lambda: tp.arange(12.0).reshape(3, 4).t(),
    lambda: tp.arange(12.0).reshape(3, 4)[1:, 2:],
    lambda: tp.ones(()),
    lambda: tp.ones(3).expand(2, 3),
    lambda: tp.nn.Parameter(tp.ones(2, 2)).detach(),
], ids=["contiguous", "transposed", "offset", "0-d", "expanded", "detached"])
def test_strided_is_the_three_accessors(make):
    """strided(t) is (backend_storage(t), storage_offset(), stride()) for any layout, and
    untyped_storage() is PyTorch's UntypedStorage over that same backend storage."""
    t = make()
    storage, offset, strides = api.strided(t)
    assert storage is api.backend_storage(t) is t.untyped_storage()._backend_storage
    assert (offset, strides) == (t.storage_offset(), t.stride())
