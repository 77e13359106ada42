"""Chi2: the sum of ``df`` squared standard normals, a Gamma of shape df / 2 and rate 1 / 2."""
from __future__ import annotations

from . import constraints
from .gamma import Gamma
from .utils import broadcast_all


class Chi2(Gamma):
    """Chi-squared distributions with ``df`` degrees of freedom (any positive real), as
    torch.distributions.Chi2; everything, KL divergences included, comes from Gamma.

    >>> import tensorplug as tp
    >>> round(Chi2(2.0).cdf(tp.tensor(2.0)).item(), 6)
    0.632121
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, df.new_full(tuple(df.shape), 0.5), validate_args=validate_args)

    @property
    def df(self):
        return self.concentration * 2

    def _parameters(self) -> dict:
        return {"df": self.df}
