"""Ops on meta tensors give their results' shapes, dtypes and strides without computing, and
autograd gives meta gradients of the inputs' shapes. Every case has a written expectation (so CI
without PyTorch checks it) and is compared with PyTorch 2.13's meta result."""
import pytest

import tensorplug as tp
from meta_reference import all_metadata, torch_or_skip

F32, I64 = "float32", "int64"


def M(L, *shape, dtype=None):
    """An uninitialized meta tensor (float32 unless ``dtype``)."""
    return L.empty(*shape, dtype=dtype or L.float32, device="meta")


def I(L, *shape):
    """An int64 meta tensor: indices and targets, which have no values either."""
    return L.empty(*shape, dtype=L.int64, device="meta")


def contiguous(shape, dtype=F32):
    """The expected metadata of a new contiguous meta tensor of ``shape``."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return (tuple(shape), dtype, tuple(reversed(strides)), 0, "meta")


# name -> (call on a library, expected metadata of each result). Strides are PyTorch's.
CASES = {
    "matmul": (lambda L: M(L, 4, 5) @ M(L, 5, 3), [contiguous((4, 3))]),
    "matmul batched broadcast": (lambda L: M(L, 2, 1, 4, 5) @ M(L, 3, 5, 6), [contiguous((2, 3, 4, 6))]),
    "matmul vector": (lambda L: M(L, 4, 5) @ M(L, 5), [contiguous((4,))]),
    "bmm": (lambda L: L.bmm(M(L, 2, 4, 5), M(L, 2, 5, 3)), [contiguous((2, 4, 3))]),
    "einsum": (lambda L: L.einsum("bij,bjk->bik", M(L, 2, 4, 5), M(L, 2, 5, 3)), [contiguous((2, 4, 3))]),
    "linear": (lambda L: L.nn.functional.linear(M(L, 8, 3, 5), M(L, 7, 5), M(L, 7)), [contiguous((8, 3, 7))]),
    "conv2d": (lambda L: L.nn.functional.conv2d(M(L, 2, 3, 9, 9), M(L, 6, 3, 3, 3), stride=2, padding=1),
               [contiguous((2, 6, 5, 5))]),
    "conv2d groups dilation": (lambda L: L.nn.functional.conv2d(M(L, 1, 4, 10, 10), M(L, 8, 2, 3, 3), groups=2,
                                                                dilation=2), [contiguous((1, 8, 6, 6))]),
    "conv1d": (lambda L: L.nn.functional.conv1d(M(L, 2, 3, 10), M(L, 4, 3, 3)), [contiguous((2, 4, 8))]),
    "conv_transpose2d": (lambda L: L.nn.functional.conv_transpose2d(M(L, 2, 3, 8, 8), M(L, 3, 4, 3, 3), stride=2),
                         [contiguous((2, 4, 17, 17))]),
    "max_pool2d": (lambda L: L.nn.functional.max_pool2d(M(L, 2, 3, 8, 8), 2), [contiguous((2, 3, 4, 4))]),
    "avg_pool2d ceil": (lambda L: L.nn.functional.avg_pool2d(M(L, 1, 2, 7, 7), 2, ceil_mode=True),
                        [contiguous((1, 2, 4, 4))]),
    "adaptive_avg_pool2d": (lambda L: L.nn.functional.adaptive_avg_pool2d(M(L, 1, 2, 7, 7), (3, 2)),
                            [contiguous((1, 2, 3, 2))]),
    "softmax": (lambda L: M(L, 4, 5).softmax(-1), [contiguous((4, 5))]),
    "log_softmax float64": (lambda L: M(L, 4, 5).log_softmax(0, dtype=L.float64), [contiguous((4, 5), "float64")]),
    "layer_norm": (lambda L: L.nn.functional.layer_norm(M(L, 2, 3, 4), (4,)), [contiguous((2, 3, 4))]),
    "batch_norm": (lambda L: L.nn.functional.batch_norm(M(L, 2, 3, 4), M(L, 3), M(L, 3), training=True),
                   [contiguous((2, 3, 4))]),
    "gelu": (lambda L: L.nn.functional.gelu(M(L, 3, 4)), [contiguous((3, 4))]),
    "dropout": (lambda L: L.nn.functional.dropout(M(L, 3, 4), 0.5), [contiguous((3, 4))]),
    "sdpa": (lambda L: L.nn.functional.scaled_dot_product_attention(M(L, 2, 4, 8, 16), M(L, 2, 4, 6, 16),
                                                                    M(L, 2, 4, 6, 16)), [contiguous((2, 4, 8, 16))]),
    "pad": (lambda L: L.nn.functional.pad(M(L, 2, 3), (1, 2)), [contiguous((2, 6))]),
    "sum dim": (lambda L: M(L, 3, 4, 5).sum(1), [contiguous((3, 5))]),
    "mean keepdim": (lambda L: M(L, 3, 4, 5).mean((0, 2), keepdim=True), [contiguous((1, 4, 1))]),
    "sum of int is int64": (lambda L: M(L, 3, 4, dtype=L.int32).sum(), [contiguous((), I64)]),
    "max dim": (lambda L: M(L, 4, 5).max(1), [contiguous((4,)), contiguous((4,), I64)]),
    "argmax": (lambda L: M(L, 4, 5).argmax(), [contiguous((), I64)]),
    "std": (lambda L: M(L, 4, 5).std(1), [contiguous((4,))]),
    "logsumexp": (lambda L: M(L, 4, 5).logsumexp(1), [contiguous((4,))]),
    "cumsum": (lambda L: M(L, 4, 5).cumsum(1), [contiguous((4, 5))]),
    "sort": (lambda L: M(L, 4, 5).sort(1), [contiguous((4, 5)), contiguous((4, 5), I64)]),
    "cat": (lambda L: L.cat([M(L, 4, 5), M(L, 2, 5)]), [contiguous((6, 5))]),
    "stack": (lambda L: L.stack([M(L, 4, 5), M(L, 4, 5)], 1), [contiguous((4, 2, 5))]),
    "split": (lambda L: M(L, 5, 2).split(2), [((2, 2), F32, (2, 1), 0, "meta"), ((2, 2), F32, (2, 1), 4, "meta"),
                                              ((1, 2), F32, (2, 1), 8, "meta")]),
    "where": (lambda L: L.where(M(L, 4, 1) > 0, M(L, 1, 5), 0.0), [contiguous((4, 5))]),
    "compare is bool": (lambda L: M(L, 3) < M(L, 3), [contiguous((3,), "bool")]),
    "int plus float promotes": (lambda L: I(L, 3) + 1.5, [contiguous((3,))]),
    "half plus float32 tensor": (lambda L: M(L, 3, dtype=L.float16) + M(L, 3), [contiguous((3,))]),
    "clamp": (lambda L: M(L, 5).clamp(0, 1), [contiguous((5,))]),
    "masked_fill": (lambda L: M(L, 4, 5).masked_fill(M(L, 4, 5) > 0, 0.0), [contiguous((4, 5))]),
    "flip": (lambda L: M(L, 4, 5).flip(0), [contiguous((4, 5))]),
    "roll": (lambda L: M(L, 4, 5).roll(1, 0), [contiguous((4, 5))]),
    "tril": (lambda L: M(L, 4, 5).tril(), [contiguous((4, 5))]),
    "cdist": (lambda L: L.cdist(M(L, 4, 3), M(L, 5, 3)), [contiguous((4, 5))]),
    "complex product": (lambda L: M(L, 3, dtype=L.complex64) * M(L, 3, dtype=L.complex64),
                        [contiguous((3,), "complex64")]),
    "to half": (lambda L: M(L, 2, 3).half(), [contiguous((2, 3), "float16")]),
    # Tensor indices have no values on meta: bounds cannot be (and, as in PyTorch, are not) checked.
    "index with a meta index": (lambda L: M(L, 4, 5)[I(L, 2, 3)], [contiguous((2, 3, 5))]),
    "index with two meta indices": (lambda L: M(L, 4, 5, 6)[I(L, 2), :, I(L, 2)], [contiguous((2, 5))]),
    "index with a CPU index": (lambda L: M(L, 4, 5)[L.tensor([0, 3])], [contiguous((2, 5))]),
    "gather": (lambda L: M(L, 4, 5).gather(1, I(L, 4, 2)), [contiguous((4, 2))]),
    "scatter": (lambda L: M(L, 4, 5).scatter(1, I(L, 4, 2), 1.0), [contiguous((4, 5))]),
    "index_add": (lambda L: M(L, 4, 5).index_add(0, I(L, 3), M(L, 3, 5)), [contiguous((4, 5))]),
    "scatter_reduce": (lambda L: M(L, 6).scatter_reduce(0, I(L, 4), M(L, 4), "amax"), [contiguous((6,))]),
    "masked_scatter": (lambda L: M(L, 4, 5).masked_scatter(M(L, 4, 5) > 0, M(L, 20)), [contiguous((4, 5))]),
    "embedding": (lambda L: L.nn.functional.embedding(I(L, 2, 3), M(L, 10, 4)), [contiguous((2, 3, 4))]),
    "embedding_bag": (lambda L: L.nn.functional.embedding_bag(I(L, 6), M(L, 10, 3), I(L, 2)),
                      [contiguous((2, 3))]),
    "one_hot": (lambda L: L.nn.functional.one_hot(I(L, 3), 5), [contiguous((3, 5), I64)]),
    "cross_entropy": (lambda L: L.nn.functional.cross_entropy(M(L, 4, 5), I(L, 4)), [contiguous(())]),
    "nll_loss none": (lambda L: L.nn.functional.nll_loss(M(L, 4, 5), I(L, 4), reduction="none"),
                      [contiguous((4,))]),
    "mse_loss": (lambda L: L.nn.functional.mse_loss(M(L, 4, 5), M(L, 4, 5)), [contiguous(())]),
    "histc": (lambda L: L.histc(M(L, 10), bins=4), [contiguous((4,))]),
    "repeat_interleave with output_size": (lambda L: L.repeat_interleave(M(L, 3, 4), I(L, 3), dim=0, output_size=7),
                                           [contiguous((7, 4))]),
    "repeat_interleave of counts": (lambda L: L.repeat_interleave(I(L, 3), output_size=5), [contiguous((5,), I64)]),
    "fft": (lambda L: L.fft.fft(M(L, 8)), [contiguous((8,), "complex64")]),
    "rfft": (lambda L: L.fft.rfft(M(L, 3, 8)), [contiguous((3, 5), "complex64")]),
    "irfft": (lambda L: L.fft.irfft(M(L, 5, dtype=L.complex64)), [contiguous((8,))]),
    "fft2 float64": (lambda L: L.fft.fft2(M(L, 2, 4, 6, dtype=L.float64)), [contiguous((2, 4, 6), "complex128")]),
}

# Ops whose results tensorplug lays out differently from PyTorch on every device, the CPU
# included (docs/deviations.md, memory formats): the factorizations are row-major where PyTorch's
# LAPACK results are column-major, index_select along dim 1 and multinomial give views. Only
# shapes and dtypes are compared.
SHAPE_ONLY_CASES = {
    "index_select": (lambda L: M(L, 4, 5).index_select(1, I(L, 3)), [((4, 3), F32)]),
    "multinomial": (lambda L: L.multinomial(M(L, 3, 5), 2), [((3, 2), I64)]),
    "nonzero_static": (lambda L: L.nonzero_static(M(L, 4, 5), size=3), [((3, 2), I64)]),
    "inv": (lambda L: L.linalg.inv(M(L, 2, 3, 3)), [((2, 3, 3), F32)]),
    "det": (lambda L: L.linalg.det(M(L, 2, 3, 3)), [((2,), F32)]),
    "slogdet complex": (lambda L: L.linalg.slogdet(M(L, 3, 3, dtype=L.complex64)), [((), "complex64"), ((), F32)]),
    "cholesky": (lambda L: L.linalg.cholesky(M(L, 4, 4)), [((4, 4), F32)]),
    "solve": (lambda L: L.linalg.solve(M(L, 3, 3), M(L, 3, 2)), [((3, 2), F32)]),
    "solve vector": (lambda L: L.linalg.solve(M(L, 2, 3, 3), M(L, 2, 3)), [((2, 3), F32)]),
    "solve_triangular": (lambda L: L.linalg.solve_triangular(M(L, 3, 3), M(L, 3, 4), upper=True), [((3, 4), F32)]),
    "cholesky_solve": (lambda L: L.cholesky_solve(M(L, 3, 2), M(L, 3, 3)), [((3, 2), F32)]),
    "qr reduced": (lambda L: L.linalg.qr(M(L, 5, 3)), [((5, 3), F32), ((3, 3), F32)]),
    "qr complete": (lambda L: L.linalg.qr(M(L, 5, 3), mode="complete"), [((5, 5), F32), ((5, 3), F32)]),
    "svd": (lambda L: L.linalg.svd(M(L, 3, 4)), [((3, 3), F32), ((3,), F32), ((4, 4), F32)]),
    "svd reduced": (lambda L: L.linalg.svd(M(L, 2, 5, 3), full_matrices=False),
                    [((2, 5, 3), F32), ((2, 3), F32), ((2, 3, 3), F32)]),
    "svdvals": (lambda L: L.linalg.svdvals(M(L, 5, 3)), [((3,), F32)]),
    "eigh": (lambda L: L.linalg.eigh(M(L, 3, 3)), [((3,), F32), ((3, 3), F32)]),
    "eigvalsh complex": (lambda L: L.linalg.eigvalsh(M(L, 3, 3, dtype=L.complex128)), [((3,), "float64")]),
    "eig": (lambda L: L.linalg.eig(M(L, 3, 3)), [((3,), "complex64"), ((3, 3), "complex64")]),
    "eigvals": (lambda L: L.linalg.eigvals(M(L, 2, 3, 3, dtype=L.float64)), [((2, 3), "complex128")]),
    "pinv": (lambda L: L.linalg.pinv(M(L, 4, 3)), [((3, 4), F32)]),
    "matrix_exp": (lambda L: L.linalg.matrix_exp(M(L, 2, 3, 3)), [((2, 3, 3), F32)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_op_metadata(name):
    call, expected = CASES[name]
    assert all_metadata(call(tp)) == expected


@pytest.mark.parametrize("name", list(CASES))
def test_op_metadata_matches_pytorch(name):
    torch = torch_or_skip()
    call, _ = CASES[name]
    assert all_metadata(call(tp)) == all_metadata(call(torch))


def _shapes_and_dtypes(result) -> list:
    return [metadata[:2] for metadata in all_metadata(result)]


@pytest.mark.parametrize("name", list(SHAPE_ONLY_CASES))
def test_op_shapes_and_dtypes(name):
    call, expected = SHAPE_ONLY_CASES[name]
    result = call(tp)
    assert _shapes_and_dtypes(result) == expected
    assert all(t.is_meta for t in (result if isinstance(result, tuple) else (result,)))


@pytest.mark.parametrize("name", list(SHAPE_ONLY_CASES))
def test_op_shapes_and_dtypes_match_pytorch(name):
    torch = torch_or_skip()
    call, _ = SHAPE_ONLY_CASES[name]
    assert _shapes_and_dtypes(call(tp)) == _shapes_and_dtypes(call(torch))


def test_shape_inference_without_memory():
    """The idiom: a function run on meta inputs to learn its output shape (here 4096 x 4096
    float64 matrices, 128 MiB each, that are never allocated)."""
    x = tp.empty(4096, 4096, dtype=tp.float64, device="meta")
    y = (x @ x).relu().sum(0, keepdim=True)
    assert y.shape == (1, 4096) and y.dtype is tp.float64 and y.is_meta


# --- autograd -------------------------------------------------------------------------------------
GRADIENTS = {
    "matmul softmax": (lambda L, a: (a @ a.T).softmax(-1).sum(), (4, 5)),
    "conv2d": (lambda L, a: L.nn.functional.conv2d(a, L.ones(2, 3, 3, 3, device="meta"), padding=1).mean(), (1, 3, 5, 5)),
    "linear": (lambda L, a: L.nn.functional.linear(a, L.ones(6, 5, device="meta")).pow(2).sum(), (3, 5)),
    "index and expand": (lambda L, a: a[1:, ::2].unsqueeze(0).expand(4, -1, -1).sum(), (3, 6)),
    "cross_entropy": (lambda L, a: L.nn.functional.cross_entropy(a, L.zeros(4, dtype=L.int64, device="meta")), (4, 7)),
    "cumprod": (lambda L, a: a.cumprod(1).sum(), (3, 4)),
    "det": (lambda L, a: L.linalg.det(a).sum(), (2, 3, 3)),
    "fft": (lambda L, a: L.fft.rfft(a).abs().sum(), (2, 8)),
    "gather with meta indices": (lambda L, a: a.gather(1, L.empty(3, 2, dtype=L.int64, device="meta")).sum(), (3, 5)),
}


@pytest.mark.parametrize("name", list(GRADIENTS))
def test_backward_gives_meta_gradients(name):
    loss_of, shape = GRADIENTS[name]
    a = tp.empty(*shape, device="meta", requires_grad=True)
    loss = loss_of(tp, a)
    assert loss.is_meta and loss.shape == ()
    loss.backward()
    assert a.grad is not None and a.grad.is_meta and a.grad.shape == shape and a.grad.dtype is tp.float32


@pytest.mark.parametrize("name", list(GRADIENTS))
def test_backward_matches_pytorch(name):
    torch = torch_or_skip()
    loss_of, shape = GRADIENTS[name]
    grads = []
    for L in (tp, torch):
        a = L.empty(*shape, device="meta", requires_grad=True)
        loss_of(L, a).backward()
        grads.append(all_metadata(a.grad))
    assert grads[0] == grads[1]


class _SmallNet:
    """A module of each common kind, for the library given (tensorplug or torch)."""

    def __new__(cls, L):
        nn = L.nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3, padding=1)
                self.bn = nn.BatchNorm2d(8)
                self.fc = nn.Linear(8 * 4 * 4, 10)
                self.emb = nn.Embedding(20, 6)
                self.attn = nn.MultiheadAttention(6, 2, batch_first=True)
                self.lstm = nn.LSTM(6, 5, batch_first=True)
                self.head = nn.Linear(5, 10)

            def forward(self, x, tokens):
                y = L.nn.functional.max_pool2d(L.relu(self.bn(self.conv(x))), 2)
                y = self.fc(L.nn.functional.dropout(y.flatten(1), 0.1))
                e = self.emb(tokens)
                a, _ = self.attn(e, e, e)
                h, _ = self.lstm(a)
                return y + self.head(h[:, -1])

        return Net()


def _train_step_on_meta(L):
    with L.device("meta"):
        net = _SmallNet(L)
    x = L.randn(2, 3, 8, 8, device="meta")
    tokens = L.randint(0, 20, (2, 7), device="meta")
    out = net(x, tokens)
    loss = L.nn.functional.cross_entropy(out, L.randint(0, 10, (2,), device="meta"))
    loss.backward()
    L.optim.AdamW(net.parameters()).step()
    return out, loss, net


def test_a_model_trains_a_step_on_meta():
    out, loss, net = _train_step_on_meta(tp)
    assert out.shape == (2, 10) and out.is_meta and loss.shape == ()
    for name, p in net.named_parameters():
        assert p.is_meta and p.grad is not None and p.grad.is_meta and p.grad.shape == p.shape, name
    assert net.bn.running_mean.is_meta and net.bn.num_batches_tracked.dtype is tp.int64


def test_a_model_trains_a_step_like_pytorch():
    torch = torch_or_skip()
    (ours, our_loss, our_net), (theirs, their_loss, their_net) = _train_step_on_meta(tp), _train_step_on_meta(torch)
    assert all_metadata(ours) == all_metadata(theirs) and all_metadata(our_loss) == all_metadata(their_loss)
    our_grads = {n: all_metadata(p.grad) for n, p in our_net.named_parameters()}
    assert our_grads == {n: all_metadata(p.grad) for n, p in their_net.named_parameters()}


def test_check_mode_on_meta():
    """Check mode still checks the meta primitives (each leaves its output as allocated and
    returns nothing); its FFT and linalg kernels, which it would compare with a decomposition run
    on values, are left unchecked."""
    previous = tp.backends.check_kernels_enabled()
    tp.backends.set_check_kernels(True)
    try:
        x = M(tp, 3, 3)
        assert (x @ x).sum(0).shape == (3,)
        assert tp.linalg.inv(x).shape == (3, 3) and tp.fft.rfft(x).shape == (3, 2)
    finally:
        tp.backends.set_check_kernels(previous)
