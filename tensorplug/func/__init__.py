"""``tp.func``: PyTorch's torch.func (functorch) API: function transforms over tensorplug's autograd.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd`` and ``hessian`` compose
with each other and with ``vmap`` and ``functional_call``, as in PyTorch; per-sample gradients
are ``vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)`` with ``loss`` calling
``functional_call(model, params, (x,))``. Where the computation differs (vmap loops over the
batch, forward mode is computed with reverse mode), docs/autograd.md and docs/deviations.md say so.
"""
from ._functional_call import functional_call
from ._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from ._vmap import vmap

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "vjp", "vmap"]
