"""``FullyShardedDataParallel``: each rank stores 1/world of the model's parameters, gradients
and optimizer state.

The wrapped module's parameters become one flat vector, padded to a multiple of the world size
and cut into equal shards; each rank keeps its shard as the wrapper's only parameter
(``flat_param_shard``), so an optimizer built on ``fsdp.parameters()`` updates, and keeps state
for, the shard alone. ``forward`` all-gathers the shards into the full vector (an autograd
Function whose backward reduce-scatters the gradient, averaged over the ranks, into the shard's
``.grad``) and points the module's parameter names at views of it. With FULL_SHARD the full
vector is dropped when forward ends: saved-tensor hooks replace every tensor autograd saves that
lives in it by its position, and backward all-gathers the parameters again the first time it
needs one. The whole module is one flat parameter: ``auto_wrap_policy`` does not split it.

Hybrid sharding (HYBRID_SHARD, _HYBRID_SHARD_ZERO2) shards within one group and replicates
across another: a 2-D ``device_mesh`` (replicate, shard), a pair ``(shard group, replicate
group)``, or by default the ranks of each host and the ranks with the same place on every host.
The gradient is averaged within the shard group (reduce-scatter), then across the replicas
(all-reduce).

With ``mixed_precision`` the shard stays in its own dtype (the optimizer's master copy): it is cast
to ``param_dtype`` before the all-gather, so forward and backward compute in that dtype; the
gradient is reduce-scattered in ``reduce_dtype`` and cast back to the shard's dtype for the
optimizer. Buffers are kept in ``buffer_dtype``; state dicts and ``summon_full_params`` give the
full-precision values.
"""
from __future__ import annotations

import contextlib
import math
import socket

from ... import distributed as dist
from ...frontend import dtypes as _dt
from ...frontend.autograd import engine
from ...frontend.autograd.function import Function
from ...frontend.autograd.grad_mode import no_grad
from ...frontend.autograd.saved_hooks import saved_tensors_hooks
from ...frontend.factories import empty, tensor as _tensor
from ...frontend.ops.joining import cat
from ...frontend.tensor import Tensor
from ...frontend.views import as_strided
from ...func._pytree import tree_map
from ...nn.module import Module
from ...nn.parameter import Parameter
from .api import CPUOffload, MixedPrecision, ShardingStrategy

__all__ = ["FullyShardedDataParallel"]


class _GatherShards(Function):
    """shard -> the full flat parameters (every rank's shard, in rank order); backward gives each
    rank its block of the gradient averaged over the ranks (a reduce-scatter)."""

    @staticmethod
    def forward(ctx, shard, owner):
        ctx.owner = owner
        return owner._all_gather(owner._compute_copy(shard))

    @staticmethod
    def backward(ctx, grad_full):
        owner = ctx.owner
        reduce_dtype = owner._reduce_dtype or grad_full.dtype
        grad_shard = empty(owner._shard_numel, dtype=reduce_dtype, device=grad_full.device)
        dist.reduce_scatter_single(grad_shard, grad_full.to(reduce_dtype).contiguous(), op=dist.ReduceOp.AVG,
                                   group=owner.process_group)
        if owner._replicate_group is not None:
            dist.all_reduce(grad_shard, op=dist.ReduceOp.AVG, group=owner._replicate_group)
        return grad_shard.to(owner.flat_param_shard.dtype), None


class _SavedParameterSlice:
    """What FULL_SHARD's pack hook keeps of a saved tensor that lives in the gathered parameters."""

    __slots__ = ("shape", "stride", "offset")

    def __init__(self, t: Tensor):
        self.shape, self.stride, self.offset = tuple(t.shape), t.stride(), t.storage_offset()


class FullyShardedDataParallel(Module):
    """``FullyShardedDataParallel(module)``: the module's parameters sharded over the ranks of
    ``process_group``; gradients are averaged over the ranks, as DistributedDataParallel's."""

    def __init__(self, module: Module, process_group=None, sharding_strategy: ShardingStrategy | None = None,
                 cpu_offload: CPUOffload | None = None, auto_wrap_policy=None, backward_prefetch=None,
                 mixed_precision: MixedPrecision | None = None, ignored_modules=None, param_init_fn=None,
                 device_id=None, sync_module_states: bool = False, forward_prefetch: bool = False,
                 limit_all_gathers: bool = True, use_orig_params: bool = False, ignored_states=None,
                 device_mesh=None):
        super().__init__()
        if not dist.is_initialized():
            raise ValueError("FullyShardedDataParallel: the default process group has not been initialized; call "
                             "tensorplug.distributed.init_process_group() first")
        strategy = ShardingStrategy.FULL_SHARD if sharding_strategy is None else sharding_strategy
        process_group, self._replicate_group = _shard_and_replicate_groups(strategy, process_group, device_mesh)
        self.mixed_precision = mixed_precision
        self._param_dtype, self._reduce_dtype, self._cast_inputs = _precision_plan(mixed_precision)
        if ignored_modules or ignored_states:
            raise NotImplementedError("FullyShardedDataParallel: ignored_modules/ignored_states are not provided")
        self.module = module
        self.process_group = process_group
        self.sharding_strategy = strategy
        self.cpu_offload = cpu_offload
        self._locations = {}  # id(param) -> [(owning module, attribute name)], tied parameters included
        unique, self._names = [], []  # each parameter once, with its first qualified name
        for prefix, owner in module.named_modules(remove_duplicate=False):
            for name, p in list(owner._parameters.items()):
                if p is None:
                    continue
                if id(p) not in self._locations:
                    self._locations[id(p)] = []
                    unique.append(p)
                    self._names.append(f"{prefix}.{name}" if prefix else name)
                if (owner, name) not in self._locations[id(p)]:
                    self._locations[id(p)].append((owner, name))
        if not unique:
            raise ValueError("FullyShardedDataParallel: the module has no parameters to shard")
        kinds = {(p.dtype, p.device) for p in unique}
        if len(kinds) > 1:
            raise ValueError(f"FullyShardedDataParallel: every parameter must have one dtype and device to be flattened "
                             f"together; got {sorted(str(k) for k in kinds)}")
        frozen = [n for n, p in module.named_parameters() if not p.requires_grad]
        if frozen:
            raise ValueError(f"FullyShardedDataParallel: parameters with requires_grad=False ({', '.join(frozen[:5])}) "
                             "cannot share a flat parameter with trained ones here")
        self._shapes = [tuple(p.shape) for p in unique]
        self._numels = [p.numel() for p in unique]
        self._world = dist.get_world_size(process_group)
        self._rank = dist.get_rank(process_group)
        total = sum(self._numels)
        self._shard_numel = max(1, math.ceil(total / self._world))
        self._padded_numel = self._shard_numel * self._world
        with no_grad():
            flat = cat([p.detach().reshape(-1) for p in unique])
            if self._padded_numel > total:
                flat = cat([flat, flat.new_zeros((self._padded_numel - total,))])
            if sync_module_states:
                # Down the replicas first, then along the shard group: every rank ends with the
                # first rank's values.
                replicas = [] if self._replicate_group is None else [self._replicate_group]
                for group in replicas + [process_group]:
                    src = 0 if group is None else group.ranks[0]
                    for t in (flat, *module.buffers()):
                        dist.broadcast(t, src=src, group=group)
            mine = flat[self._rank * self._shard_numel:(self._rank + 1) * self._shard_numel].clone()
        for owner, name in (loc for p in unique for loc in self._locations[id(p)]):
            del owner._parameters[name]  # from now on the name is a view of the gathered parameters
        self._order = [id(p) for p in unique]
        self.flat_param_shard = Parameter(mine)
        self._current_full = None  # the gathered parameters of the forward in progress (FULL_SHARD)
        self._regathered = None  # the parameters gathered again for backward (FULL_SHARD)
        self._point_names_at(None)
        self._full_buffer_dtypes = _cast_buffers(module, mixed_precision)

    # --- gathering ----------------------------------------------------------------------------
    def _all_gather(self, shard: Tensor) -> Tensor:
        full = empty(self._padded_numel, dtype=shard.dtype, device=shard.device)
        dist.all_gather_single(full, shard.detach().contiguous(), group=self.process_group)
        return full

    def _cast_input(self, value):
        """A forward argument in the compute dtype where it is a floating-point tensor."""
        return value.to(self._param_dtype) if isinstance(value, Tensor) and value.is_floating_point() else value

    def _compute_copy(self, shard: Tensor) -> Tensor:
        """The shard in the dtype forward and backward compute in (itself without mixed precision)."""
        return shard if self._param_dtype is None else shard.detach().to(self._param_dtype)

    def _point_names_at(self, full: Tensor | None) -> None:
        """Sets every parameter name of the module to its view of ``full`` (None between passes)."""
        offset = 0
        for key, shape, n in zip(self._order, self._shapes, self._numels):
            view = None if full is None else full[offset:offset + n].view(shape)
            for owner, name in self._locations[key]:
                object.__setattr__(owner, name, view)
            offset += n

    # --- FULL_SHARD's saved-tensor hooks ------------------------------------------------------
    def _pack(self, t: Tensor):
        full = self._current_full
        if full is not None and isinstance(t, Tensor) and t._storage is full._storage:
            return _SavedParameterSlice(t)
        return t

    def _unpack(self, saved):
        if not isinstance(saved, _SavedParameterSlice):
            return saved
        if self._regathered is None:
            # The first parameter backward needs: gather them again, once, for the rest of this pass.
            with no_grad():
                self._regathered = self._all_gather(self._compute_copy(self.flat_param_shard))
            engine.queue_callback(self._drop_regathered)
        return as_strided(self._regathered, saved.shape, saved.stride, saved.offset)

    def _drop_regathered(self) -> None:
        self._regathered = None

    # --- the wrapper -------------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        if self._cast_inputs:
            args, kwargs = tree_map(self._cast_input, (args, kwargs))
        full = _GatherShards.apply(self.flat_param_shard, self)
        self._point_names_at(full)
        if self.sharding_strategy not in (ShardingStrategy.FULL_SHARD, ShardingStrategy.HYBRID_SHARD):
            try:
                return self.module(*args, **kwargs)
            finally:
                self._point_names_at(None)
        self._current_full = full
        try:
            with saved_tensors_hooks(self._pack, self._unpack):
                return self.module(*args, **kwargs)
        finally:
            self._current_full = None
            self._point_names_at(None)

    @contextlib.contextmanager
    def summon_full_params(self, writeback: bool = True):
        """Inside, the module's parameter names hold the full parameters (gathered); changes are
        written back into this rank's shard on exit when ``writeback``."""
        with no_grad():
            full = self._all_gather(self.flat_param_shard)
        self._point_names_at(full)
        try:
            yield self
        finally:
            self._point_names_at(None)
            if writeback:
                with no_grad():
                    start = self._rank * self._shard_numel
                    self.flat_param_shard.copy_(full[start:start + self._shard_numel])

    def clip_grad_norm_(self, max_norm: float, norm_type: float = 2.0) -> Tensor:
        """Scales the shard's gradient so that the whole model's gradient norm is at most
        ``max_norm``; returns that norm (computed over every rank's shard)."""
        grad = self.flat_param_shard.grad
        norm_type = float(norm_type)
        with no_grad():
            local = grad.detach().to(_dt.float64) if grad is not None else self.flat_param_shard.new_zeros((1,)).to(_dt.float64)
            if math.isinf(norm_type):
                part = _tensor([float(local.abs().max()) if local.numel() else 0.0], dtype=_dt.float64)
                dist.all_reduce(part, op=dist.ReduceOp.MAX, group=self.process_group)
                total = float(part.item())
            else:
                part = _tensor([float((local.abs() ** norm_type).sum())], dtype=_dt.float64)
                dist.all_reduce(part, group=self.process_group)
                total = float(part.item()) ** (1.0 / norm_type)
            if grad is not None and total > max_norm:
                grad.mul_(max_norm / (total + 1e-6))
        return _tensor(total, dtype=self.flat_param_shard.dtype)

    def state_dict(self, *args, **kwargs):
        """The full model's state under the wrapped module's own names (every rank gathers it)."""
        with no_grad():
            full = self._all_gather(self.flat_param_shard)
        state, offset = {}, 0
        for name, shape, n in zip(self._names, self._shapes, self._numels):
            state[name] = full[offset:offset + n].view(shape).clone()
            offset += n
        for name, b in self.module.named_buffers():
            state[name] = b.detach().to(self._full_buffer_dtypes.get(name, b.dtype), copy=True)
        return state

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Loads a full state dict (as ``state_dict()`` gives): this rank keeps its shard of it."""
        missing = [n for n in self._names if n not in state_dict]
        if missing:
            raise KeyError(f"FullyShardedDataParallel.load_state_dict: missing parameters {missing[:5]}")
        with no_grad():
            pieces = [state_dict[n].to(self.flat_param_shard.dtype).reshape(-1) for n in self._names]
            flat = cat(pieces)
            start = self._rank * self._shard_numel
            stop = min(start + self._shard_numel, flat.numel())
            self.flat_param_shard.zero_()
            if stop > start:
                self.flat_param_shard[:stop - start].copy_(flat[start:stop])
            for name, b in self.module.named_buffers():
                if name in state_dict:
                    b.copy_(state_dict[name])


def _precision_plan(mixed_precision: MixedPrecision | None):
    """(param_dtype, reduce_dtype, whether forward casts its floating-point inputs) of ``mixed_precision``;
    a reduce_dtype left None follows param_dtype, as in PyTorch."""
    if mixed_precision is None:
        return None, None, False
    if mixed_precision.keep_low_precision_grads:
        raise NotImplementedError("FullyShardedDataParallel: MixedPrecision(keep_low_precision_grads=True) is not "
                                  "provided; gradients are cast to the shard's dtype for the optimizer")
    for field in ("param_dtype", "reduce_dtype", "buffer_dtype"):
        value = getattr(mixed_precision, field)
        if value is not None and not (isinstance(value, _dt.dtype) and value.is_floating_point):
            raise TypeError(f"FullyShardedDataParallel: MixedPrecision.{field} must be a floating-point dtype or None; "
                            f"got {value!r}")
    param_dtype = mixed_precision.param_dtype
    reduce_dtype = mixed_precision.reduce_dtype or param_dtype
    cast_inputs = param_dtype is not None and (mixed_precision.cast_root_forward_inputs
                                               or mixed_precision.cast_forward_inputs)
    return param_dtype, reduce_dtype, cast_inputs


def _cast_buffers(module: Module, mixed_precision: MixedPrecision | None) -> dict:
    """Keeps the module's floating-point buffers in ``buffer_dtype``; returns their former dtypes
    by name (state dicts give the buffers back in them)."""
    if mixed_precision is None or mixed_precision.buffer_dtype is None:
        return {}
    former = {}
    for prefix, owner in module.named_modules():
        for name, b in list(owner._buffers.items()):
            if b is not None and b.is_floating_point():
                former[f"{prefix}.{name}" if prefix else name] = b.dtype
                owner._buffers[name] = b.detach().to(mixed_precision.buffer_dtype)
    return former



def _shard_and_replicate_groups(strategy: ShardingStrategy, process_group, device_mesh):
    """(the group the parameters are sharded over, the group they are replicated over or None)."""
    hybrid = strategy in (ShardingStrategy.HYBRID_SHARD, ShardingStrategy._HYBRID_SHARD_ZERO2)
    if device_mesh is not None:
        if process_group is not None:
            raise ValueError("FullyShardedDataParallel: give either process_group or device_mesh, not both")
        if hybrid:
            if device_mesh.ndim != 2:
                raise ValueError(f"FullyShardedDataParallel: hybrid sharding needs a 2-D device_mesh (replicate, "
                                 f"shard); got {device_mesh.ndim} dimensions")
            return device_mesh.get_group(1), device_mesh.get_group(0)
        if device_mesh.ndim != 1:
            raise ValueError(f"FullyShardedDataParallel: {strategy.name} needs a 1-D device_mesh; got "
                             f"{device_mesh.ndim} dimensions")
        return device_mesh.get_group(), None
    if not hybrid:
        return process_group, None
    if process_group is None:
        return _host_groups()
    if not (isinstance(process_group, tuple) and len(process_group) == 2):
        raise ValueError("FullyShardedDataParallel: hybrid sharding takes process_group=(shard group, replicate group) "
                         f"or a 2-D device_mesh; got {process_group!r}")
    return process_group


def _host_groups():
    """(the ranks of this host, the ranks with this rank's place on every host): hybrid
    sharding's default, sharding within a machine and replicating across machines."""
    hosts = [None] * dist.get_world_size()
    dist.all_gather_object(hosts, socket.gethostname())
    by_host = {}
    for rank, host in enumerate(hosts):
        by_host.setdefault(host, []).append(rank)
    per_host = list(by_host.values())
    if len({len(ranks) for ranks in per_host}) != 1:
        raise ValueError("FullyShardedDataParallel: hybrid sharding's default groups need the same number of ranks on "
                         f"every host; got {[len(r) for r in per_host]}: pass a device_mesh instead")
    shard, _ = dist.new_subgroups_by_enumeration(per_host)
    replicate, _ = dist.new_subgroups_by_enumeration([list(column) for column in zip(*per_host)])
    return shard, replicate
