"""Mistakes raise Python exceptions from the frontend, before any kernel runs, naming what is wrong."""
import numpy as np
import pytest

import tensorplug as tp


def unchanged(t, before, version):
    """``t`` still holds ``before`` and was not written (its version did not move)."""
    np.testing.assert_array_equal(t.numpy(), before)
    assert t._version == version


def test_broadcast_mismatch_names_both_shapes():
    """Shapes that do not broadcast raise RuntimeError naming both shapes."""
    with pytest.raises(RuntimeError, match=r"\[2, 3\].*\[4\]"):
        tp.ones(2, 3) + tp.ones(4)
    with pytest.raises(RuntimeError, match=r"\[5, 1, 3\].*\[2, 4\]|\[2, 4\].*\[5, 1, 3\]"):
        tp.maximum(tp.ones(5, 1, 3), tp.ones(2, 4))


def test_broadcast_mismatch_in_place_leaves_self_untouched():
    """A failed in-place op does not write its target."""
    t = tp.zeros(2, 3)
    version = t._version
    with pytest.raises(RuntimeError):
        t.add_(tp.ones(4))
    with pytest.raises(RuntimeError):
        t.add_(tp.ones(2, 1, 3))  # broadcasts to a bigger shape than self
    unchanged(t, np.zeros((2, 3)), version)


@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"])
@pytest.mark.parametrize("dtype", [tp.float16, tp.float32, tp.float64])
def test_bitwise_on_float_raises_type_error(op, dtype):
    """Bitwise ops on floating tensors raise TypeError naming the op and the dtype."""
    with pytest.raises(TypeError, match=f"{op}.*{dtype.name}|{dtype.name}.*{op}"):
        getattr(tp, op)(tp.ones(2, dtype=dtype), tp.ones(2, dtype=dtype))
    with pytest.raises(TypeError, match=op):
        getattr(tp, op)(tp.ones(2, dtype=tp.int64), 1.5)


def test_bitwise_not_on_float_raises_type_error():
    """~ and bitwise_not on floats raise TypeError naming the op."""
    with pytest.raises(TypeError, match="bitwise_not"):
        tp.bitwise_not(tp.ones(2))
    with pytest.raises(TypeError):
        ~tp.ones(2)


def test_matmul_shape_mismatch():
    """matmul of incompatible shapes raises RuntimeError naming both shapes."""
    with pytest.raises(RuntimeError, match=r"2x3.*4x5"):
        tp.ones(2, 3) @ tp.ones(4, 5)


@pytest.mark.parametrize(
    "call",
    [
        lambda t: t.sum(3),
        lambda t: t.sum(-4),
        lambda t: t.transpose(0, 3),
        lambda t: t.select(5, 0),
        lambda t: t.unsqueeze(5),
        lambda t: t.squeeze(3),
        lambda t: t.cumsum(-4),
        lambda t: t.argmax(3),
        lambda t: tp.cat([t, t], 3),
        lambda t: t.movedim(0, 3),
        lambda t: t.size(3),
        lambda t: tp.gather(t, 3, tp.zeros(2, 3, 4, dtype=tp.int64)),
    ],
    ids=["sum", "sum_negative", "transpose", "select", "unsqueeze", "squeeze", "cumsum", "argmax", "cat", "movedim",
         "size", "gather"],
)
def test_dim_out_of_range_raises_index_error(call):
    """A dim outside [-ndim, ndim) raises IndexError saying the dim is out of range."""
    with pytest.raises(IndexError, match="out of range|Dimension"):
        call(tp.zeros(2, 3, 4))


def test_view_impossible_for_strides():
    """view() of a transposed tensor raises RuntimeError pointing at reshape, naming size and stride."""
    with pytest.raises(RuntimeError, match=r"\[3, 2\].*\.reshape"):
        tp.zeros(2, 3).t().view(6)


def test_item_of_multi_element():
    """item() of a tensor with several elements raises RuntimeError naming the count."""
    with pytest.raises(RuntimeError, match="6"):
        tp.zeros(2, 3).item()


def test_ragged_lists():
    """tp.tensor of ragged nested lists raises ValueError."""
    with pytest.raises(ValueError):
        tp.tensor([[1, 2], [3]])
    with pytest.raises(ValueError):
        tp.tensor([[1.0], [2.0, 3.0]])


def test_bool_minus_bool():
    """sub on two bool tensors is not supported and says so (use logical_xor)."""
    a, b = tp.tensor([True, False]), tp.tensor([True, True])
    with pytest.raises((TypeError, RuntimeError), match="sub"):
        a - b
    with pytest.raises((TypeError, RuntimeError), match="sub"):
        tp.sub(a, True)
    with pytest.raises((TypeError, RuntimeError), match="neg"):
        -a


def test_fill_int_tensor_with_nan():
    """Filling an integer tensor with nan raises RuntimeError and writes nothing."""
    t = tp.zeros(3, dtype=tp.int64)
    version = t._version
    with pytest.raises(RuntimeError, match="nan"):
        t.fill_(float("nan"))
    with pytest.raises(RuntimeError, match="nan"):
        tp.full((2,), float("nan"), dtype=tp.int32)
    unchanged(t, np.zeros(3), version)


def test_inplace_downcast_raises_before_writing():
    """int_tensor.add_(float) raises and leaves the tensor and its version alone."""
    t = tp.tensor([1, 2, 3])
    version = t._version
    with pytest.raises(RuntimeError, match="can't be cast"):
        t.mul_(tp.tensor([0.5, 0.5, 0.5]))
    unchanged(t, np.array([1, 2, 3]), version)


def test_out_argument_errors_leave_out_untouched():
    """out= of a dtype the result cannot be cast to raises RuntimeError naming both dtypes and
    writes nothing (an out= of the wrong shape is resized instead: tests/differential)."""
    out = tp.zeros(3, dtype=tp.int64)
    version = out._version
    with pytest.raises(RuntimeError, match=r"float32.*int64"):
        tp.add(tp.ones(3), tp.ones(3), out=out)
    unchanged(out, np.zeros(3), version)


def test_out_of_the_wrong_shape_is_resized_with_a_warning():
    """As in PyTorch: a warning when out= held elements, silence when it was empty."""
    out = tp.zeros(5)
    with pytest.warns(UserWarning, match=r"resized.*\[5\].*\[3\]"):
        assert tp.add(tp.ones(3), tp.ones(3), out=out) is out
    assert out.shape == (3,) and out.tolist() == [2.0, 2.0, 2.0]
    empty = tp.zeros(0)
    tp.add(tp.ones(2), 1, out=empty)
    assert empty.tolist() == [2.0, 2.0]


@pytest.mark.parametrize(
    "call, pattern",
    [
        (lambda: tp.add(tp.ones(2), "a"), "other"),
        (lambda: tp.add([1.0], tp.ones(2)), "input"),
        (lambda: tp.exp([1.0, 2.0]), "exp"),
        (lambda: tp.neg(3.0), "neg"),
        (lambda: tp.sum([1, 2]), "sum"),
        (lambda: tp.matmul(tp.ones(2, 2), [[1.0, 0.0], [0.0, 1.0]]), "matmul"),
        (lambda: tp.where(tp.ones(2), tp.ones(2), tp.ones(2)), "where"),
    ],
    ids=["add_string", "add_list", "exp_list", "neg_float", "sum_list", "matmul_list", "where_float_condition"],
)
def test_wrong_argument_types_raise_type_error(call, pattern):
    """Non-tensor arguments where a tensor is needed raise TypeError naming the op or argument."""
    with pytest.raises(TypeError, match=pattern):
        call()


def test_integer_tensor_cannot_require_grad():
    """requires_grad on an integer tensor raises RuntimeError naming the dtype."""
    with pytest.raises(RuntimeError, match="int64"):
        tp.tensor([1, 2]).requires_grad_()


def test_matmul_dtype_mismatch_names_both_dtypes():
    """matmul of float32 and int64 raises RuntimeError naming both dtypes."""
    with pytest.raises(RuntimeError, match=r"float32.*int64"):
        tp.matmul(tp.ones(2, 2), tp.ones(2, 2, dtype=tp.int64))


def test_unsupported_dtype_for_op_raises_type_error():
    """Ops that exclude bool (neg, sub, pow, floor_divide) raise TypeError naming the op."""
    b = tp.tensor([True, False])
    for op in ("floor_divide", "remainder", "pow", "fmod"):
        with pytest.raises(TypeError, match=op):
            getattr(tp, op)(b, b)


def test_setitem_shape_mismatch():
    """Assigning a value that does not broadcast to the indexed shape raises RuntimeError."""
    t = tp.zeros(3, 4)
    version = t._version
    with pytest.raises(RuntimeError):
        t[0] = tp.ones(3)
    with pytest.raises(RuntimeError):
        t[tp.tensor([0, 1])] = tp.ones(3, 4)
    unchanged(t, np.zeros((3, 4)), version)


def test_cat_and_stack_errors():
    """cat of mismatched shapes or dtypes-free empty lists raises with the shapes named."""
    with pytest.raises(RuntimeError):
        tp.cat([tp.ones(2, 3), tp.ones(2, 4)], 0)
    with pytest.raises(RuntimeError):
        tp.stack([tp.ones(2), tp.ones(3)])
    with pytest.raises((RuntimeError, ValueError)):
        tp.cat([])
