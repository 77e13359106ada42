"""Which index dtypes the indexing ops take, as PyTorch 2.13 decides (issue 13): advanced
indexing and index_put_ take int64 and int32 (uint8 and bool are masks), gather and the scatter
family int32 and int64, take and index_fill_ int64 only, embedding and embedding_bag int32 and int64. A refused
dtype raises PyTorch's exception type; an accepted one gives PyTorch's values."""
import pytest

import tensorplug as tp
from device_params import torch_or_skip

_CALLS = {
    "x[index]": lambda L, x, i, i2: x[i],
    "x[index] = 1": lambda L, x, i, i2: x.__setitem__(i, 1.0) or x,
    "index_put_": lambda L, x, i, i2: x.index_put_((i,), L.tensor(1.0), accumulate=True),
    "gather": lambda L, x, i, i2: L.gather(x, 0, i2),
    "scatter_add": lambda L, x, i, i2: x.scatter_add_(0, i2, x.clone()),
    "scatter_reduce": lambda L, x, i, i2: x.scatter_reduce(0, i2, x.clone(), "amax"),
    "index_fill_": lambda L, x, i, i2: x.index_fill_(0, i, 1.0),
    "take": lambda L, x, i, i2: L.take(x, i),
    "embedding": lambda L, x, i, i2: L.nn.functional.embedding(i, x),
    "embedding_bag": lambda L, x, i, i2: L.nn.functional.embedding_bag(i, x, L.tensor([0])),
}


def _run(L, call, dtype):
    x = L.arange(12.0).reshape(3, 4)
    i = L.tensor([0, 2], dtype=getattr(L, dtype))
    i2 = L.tensor([[0, 2, 1, 0], [1, 0, 2, 2]], dtype=getattr(L, dtype))
    try:
        return "ok", call(L, x, i, i2).tolist()
    except Exception as error:  # the type is what is compared
        return type(error), None


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "uint8"])
@pytest.mark.parametrize("op", list(_CALLS))
def test_index_dtype_is_taken_or_refused_as_in_pytorch(op, dtype):
    torch = torch_or_skip()
    theirs = _run(torch, _CALLS[op], dtype)
    ours = _run(tp, _CALLS[op], dtype)
    if theirs[0] == "ok":
        assert ours == theirs
    else:
        assert ours[0] is theirs[0], (ours, theirs)


def test_index_put_reads_a_bool_mask_as_a_mask():
    # It used to read the mask's 0s and 1s as row numbers.
    torch = torch_or_skip()
    mask = [True, False, True]
    want = torch.zeros(3, 2).index_put_((torch.tensor(mask),), torch.tensor(1.0)).tolist()
    assert tp.zeros(3, 2).index_put_((tp.tensor(mask),), tp.tensor(1.0)).tolist() == want
