"""In-place writes into views (cat, slice assignment) backpropagate a gradient that starts inside its storage."""
import numpy as np

import tensorplug as tp


def test_cat_gradient_arriving_as_a_row_of_a_stack():
    """cat's backward reads its own rows when its gradient is a row of stack's gradient (offset > 0)."""
    p = tp.tensor([[1.0], [2.0]], requires_grad=True)
    q = tp.tensor([[1.0], [2.0]], requires_grad=True)
    first, second = tp.stack([p * 1, tp.cat([q[:1], q[1:]], 0)], 0).unbind(0)
    ((first * tp.tensor([[5.0], [7.0]])).sum() + (second * tp.tensor([[3.0], [4.0]])).sum()).backward()
    np.testing.assert_array_equal(p.grad.numpy(), [[5.0], [7.0]])
    np.testing.assert_array_equal(q.grad.numpy(), [[3.0], [4.0]])


def test_slice_assignment_gradient_with_offset():
    """A tensor written through a slice gets the gradient of its own region, not the storage's first."""
    source = tp.tensor([1.0, 2.0], requires_grad=True)
    target = tp.zeros(2, 2)
    target[1] = source * 1
    grad = tp.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])[1:]  # contiguous, storage offset 2
    target.backward(grad)
    np.testing.assert_array_equal(source.grad.numpy(), [5.0, 6.0])
