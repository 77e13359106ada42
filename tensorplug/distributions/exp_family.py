"""ExponentialFamily: the base of distributions with densities
p(x) = h(x) exp(<eta, t(x)> - A(eta)), as torch.distributions.ExponentialFamily.

A subclass names its natural parameters eta (``_natural_params``), its log normalizer A
(``_log_normalizer(*eta)``) and E[log h(x)] (``_mean_carrier_measure``); the entropy and the
KL divergence between two members of one family then follow from A and its gradient, which
autograd computes: H = A(eta) - <eta, grad A(eta)> - E[log h], and
KL(p || q) = A(eta_q) - A(eta_p) - <eta_q - eta_p, grad A(eta_p)> (the Bregman divergence of A).
"""
from __future__ import annotations

from ..frontend.autograd import grad as autograd_grad
from ..frontend.autograd.grad_mode import enable_grad
from .distribution import Distribution


def _summed_over_event(value, batch_shape: tuple):
    """value reduced to batch_shape by summing what lies right of it."""
    return value.reshape(tuple(batch_shape) + (-1,)).sum(-1)


class ExponentialFamily(Distribution):
    """Distributions of an exponential family; see the module docstring for what subclasses give."""

    @property
    def _natural_params(self) -> tuple:
        raise self._missing("_natural_params")

    def _log_normalizer(self, *natural_params):
        raise self._missing("_log_normalizer")

    @property
    def _mean_carrier_measure(self):
        raise self._missing("_mean_carrier_measure")

    def _normalizer_and_gradients(self):
        """A at detached copies of eta, and grad A there (kept differentiable)."""
        with enable_grad():
            eta = [value.detach().requires_grad_() for value in self._natural_params]
            normalizer = self._log_normalizer(*eta)
            gradients = autograd_grad(normalizer.sum(), eta, create_graph=True)
        return eta, normalizer, gradients

    def entropy(self):
        """A(eta) - <eta, grad A(eta)> - E[log h(x)]."""
        eta, normalizer, gradients = self._normalizer_and_gradients()
        result = normalizer - self._mean_carrier_measure
        for value, gradient in zip(eta, gradients):
            result = result - _summed_over_event(value * gradient, self._batch_shape)
        return result


def bregman_kl(p: ExponentialFamily, q: ExponentialFamily):
    """KL(p || q) for two members of one exponential family, as the Bregman divergence of A."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot be "
                                  f"computed using Bregman divergences ({type(p).__name__} and {type(q).__name__})")
    eta_p, normalizer_p, gradients = p._normalizer_and_gradients()
    result = q._log_normalizer(*q._natural_params) - normalizer_p
    for value_q, value_p, gradient in zip(q._natural_params, eta_p, gradients):
        result = result - _summed_over_event((value_q - value_p) * gradient, p.batch_shape)
    return result
