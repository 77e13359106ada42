"""(Filled by the op-library work, issue 3.)"""
from __future__ import annotations

__all__: list = []

#: Tensor methods this module provides: name -> function (attached by frontend.methods).
TENSOR_METHODS: dict = {}
