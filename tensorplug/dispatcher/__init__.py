"""The dispatcher: dispatch keys, the operator table, call/redispatch and explain().

It knows nothing of tensors or of any backend: the frontend tells it how to read a call's key
set (``set_keyset_extractor``) and backends register kernels against keys.
"""
from ._explain import explain
from ._keys import AUTOCAST, AUTOGRAD, COMPLEX, INPLACE_OR_VIEW, PROFILER, DispatchKey, allocate_backend_key, backend_keys, highest_key, keys_in
from ._operator import (
    Operator,
    Resolution,
    call,
    get_operator,
    keyset_of,
    operators,
    redispatch,
    register_backend_fallback,
    register_fallthrough,
    register_key_fallback,
    register_kernel,
    set_keyset_extractor,
)
from ._state import ExcludeKeys, IncludeKeys, MaskKeys, local_state

__all__ = [
    "AUTOCAST",
    "AUTOGRAD",
    "COMPLEX",
    "INPLACE_OR_VIEW",
    "PROFILER",
    "DispatchKey",
    "ExcludeKeys",
    "IncludeKeys",
    "MaskKeys",
    "Operator",
    "Resolution",
    "allocate_backend_key",
    "backend_keys",
    "call",
    "explain",
    "get_operator",
    "highest_key",
    "keys_in",
    "keyset_of",
    "local_state",
    "operators",
    "redispatch",
    "register_backend_fallback",
    "register_fallthrough",
    "register_key_fallback",
    "register_kernel",
    "set_keyset_extractor",
]
