"""``DistributedDataParallel``: one model replica per process, gradients averaged over ranks.

At construction every parameter and buffer is broadcast from rank 0, after the ranks have
checked that their models have the same parameters. Parameters are grouped into buckets of about
``bucket_cap_mb`` (PyTorch's default 25 MB), last-registered first, since backward produces the
last layers' gradients first. A hook on each parameter's gradient accumulation marks it ready; a
bucket whose parameters are all ready is flattened into one tensor and its all-reduce (AVG) is
started at once, without waiting, while backward goes on with the earlier layers. Buckets start
in index order on every rank, so the ranks' collectives always match. When backward ends, every
bucket's all-reduce is waited for and the averaged gradients are written back into ``.grad``.

``register_comm_hook(state, hook)`` replaces the all-reduce of each bucket by
``hook(state, GradBucket)``, which returns a future of the bucket's averaged flat gradients
(``tp.distributed.algorithms.ddp_comm_hooks.default_hooks`` has PyTorch's built-in ones).

Uneven inputs: ``with model.join():`` (a ``Join`` context). A rank that runs out of batches
shadows, once per iteration the others still train, their buffer broadcast and every bucket's
all-reduce with zeros, so nobody hangs; gradients are divided by the initial world size (PyTorch's
default) or, with ``divide_by_initial_world_size=False``, by the number of ranks still training.
When all have joined, the model of the highest-ranked last joiner is broadcast to everyone.
"""
from __future__ import annotations

import contextlib
import inspect
import warnings

from ... import distributed as dist
from ...distributed import collectives
from ...distributed.algorithms.join import Join, JoinHook, Joinable
from ...distributed.grad_bucket import GradBucket
from ...frontend.tensor import Tensor
from ...frontend.autograd import engine
from ...frontend.autograd.grad_mode import no_grad
from ...frontend import dtypes as _dt
from ...frontend.factories import tensor as _tensor
from ...frontend.ops.joining import cat
from ..module import Module

__all__ = ["DistributedDataParallel"]

_MB = 1 << 20


class _Bucket:
    """Parameters whose gradients travel in one all-reduce."""

    __slots__ = ("index", "params", "offsets", "numel", "ready", "flat", "work", "future", "used")

    def __init__(self, index: int, params: list):
        self.index = index
        self.params = params
        self.offsets = []
        total = 0
        for p in params:
            self.offsets.append(total)
            total += p.numel()
        self.numel = total
        self.reset()

    def reset(self) -> None:
        self.ready = set()  # ids of the parameters whose gradient is in
        self.flat = None
        self.work = None  # the all-reduce in flight, without a comm hook
        self.future = None  # what the comm hook returned, with one
        self.used = set()


def _buckets(params: list, cap_bytes: int) -> list[_Bucket]:
    """Consecutive runs of same-device, same-dtype parameters, each up to ``cap_bytes``."""
    groups, current, size, key = [], [], 0, None
    for p in params:
        p_key = (p.device, p.dtype)
        nbytes = p.numel() * p.element_size()
        if current and (p_key != key or size + nbytes > cap_bytes):
            groups.append(current)
            current, size = [], 0
        current.append(p)
        size += nbytes
        key = p_key
    if current:
        groups.append(current)
    return [_Bucket(i, g) for i, g in enumerate(groups)]


class _UnevenInputsHook(JoinHook):
    """What a rank that ran out of inputs does while the others train: the collectives of one
    forward and backward with zero gradients; at the end, everyone takes the final model of the
    last rank to join."""

    def __init__(self, ddp: "DistributedDataParallel", divide_by_initial_world_size: bool):
        self.ddp = ddp
        self.divide_by_initial_world_size = divide_by_initial_world_size

    def main_hook(self) -> None:
        ddp = self.ddp
        if ddp.broadcast_buffers:
            buffers = list(ddp.module.buffers())
            if buffers:
                ddp._broadcast_coalesced(buffers)
        if not ddp.require_backward_grad_sync:
            return
        with no_grad():
            for bucket in ddp._buckets:
                first = bucket.params[0]
                bucket.flat = first.detach().new_zeros((bucket.numel,))
                ddp._launch(bucket, training_ranks=None if self.divide_by_initial_world_size else 0)
                ddp._reduced(bucket)
                bucket.reset()

    def post_hook(self, is_last_joiner: bool) -> None:
        ddp = self.ddp
        me = dist.get_rank()  # a global rank: broadcast's src
        authority = _tensor([me if is_last_joiner else -1], dtype=_dt.int64)
        dist.all_reduce(authority, op=dist.ReduceOp.MAX, group=ddp.process_group)
        ddp._broadcast_coalesced(list(ddp.module.parameters()) + list(ddp.module.buffers()), src=int(authority.item()))


class DistributedDataParallel(Module, Joinable):
    """``tp.nn.parallel.DistributedDataParallel(module)``: wraps a module so that ``backward``
    averages its gradients over every rank of ``process_group`` (the world by default)."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0, broadcast_buffers=None,
                 init_sync: bool = True, process_group=None, bucket_cap_mb=None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 *, forward_sync_buffers: bool | None = None):
        super().__init__()
        if broadcast_buffers is not None:
            warnings.warn("`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead. IMPORTANT: unlike "
                          "`broadcast_buffers=False`, `forward_sync_buffers=False` still syncs buffers at init. If you "
                          "rely on buffers NOT being synced at init (e.g. rank-local buffers), keep using "
                          "`broadcast_buffers=False` until `init_sync_buffers` is available.", FutureWarning, stacklevel=2)
        else:
            # PyTorch 2.13's newer switch: buffers follow rank 0's before each forward unless it is False.
            broadcast_buffers = True if forward_sync_buffers is None else bool(forward_sync_buffers)
        if not dist.is_initialized():
            raise ValueError("DistributedDataParallel: the default process group has not been initialized; call "
                             "tensorplug.distributed.init_process_group() first")
        self.module = module
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.process_group = process_group
        self.bucket_cap_mb = 25 if bucket_cap_mb is None else bucket_cap_mb
        self.require_backward_grad_sync = True
        self._engine_group = dist._group.resolve_group(process_group, "DistributedDataParallel")
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        self._param_names = {id(p): n for n, p in named}
        self._check_same_model(named)
        self._broadcast_state()
        self._buckets = _buckets([p for _, p in reversed(named)], int(self.bucket_cap_mb * _MB))
        self._where = {}  # id(param) -> (bucket, position)
        for bucket in self._buckets:
            for i, p in enumerate(bucket.params):
                self._where[id(p)] = (bucket, i)
        self._next_launch = 0
        self._pass_started = False
        self._comm_hook = None
        self._comm_hook_state = None
        self._join_context = None  # set by a Join context (see algorithms/join.py)
        self._divide_by_initial_world_size = True
        self._training_ranks = None  # ranks still training this iteration, when gradients divide by it
        self._handles = [p.register_post_accumulate_grad_hook(self._on_grad_ready) for _, p in named]

    # --- construction ----------------------------------------------------------------------
    def _check_same_model(self, named) -> None:
        mine = [(n, tuple(p.shape), str(p.dtype)) for n, p in named]
        everyone = [None] * dist.get_world_size(self.process_group)
        dist.all_gather_object(everyone, mine, group=self.process_group)
        for rank, theirs in enumerate(everyone):
            if theirs != mine:
                differ = next((f"{a} != {b}" for a, b in zip(mine, theirs) if a != b),
                              f"{len(mine)} parameters here, {len(theirs)} on rank {rank}")
                raise RuntimeError(f"DistributedDataParallel: the model differs between ranks (this rank and rank "
                                   f"{rank}: {differ}); every rank must build the same model")

    def _broadcast_state(self) -> None:
        """Rank 0's parameters and buffers, everywhere (one broadcast per device and dtype)."""
        tensors = [p for p in self.module.parameters()] + [b for b in self.module.buffers()]
        self._broadcast_coalesced(tensors)

    def _broadcast_coalesced(self, tensors, src: int | None = None) -> None:
        groups: dict = {}
        for t in tensors:
            groups.setdefault((t.device, t.dtype), []).append(t)
        src = self._global_rank_zero() if src is None else src
        with no_grad():
            for group in groups.values():
                flat = cat([t.detach().reshape(-1) for t in group])
                dist.broadcast(flat, src=src, group=self.process_group)
                offset = 0
                for t in group:
                    n = t.numel()
                    t.copy_(flat[offset:offset + n].reshape(t.shape))
                    offset += n

    def _global_rank_zero(self) -> int:
        group = self.process_group
        return 0 if group is None else group.ranks[0]

    # --- forward ---------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        # Inside model.join(): count this rank as training this iteration (matched by the joined
        # ranks' count in Join.__exit__) before this iteration's collectives.
        training = Join.notify_join_context(self)
        self._training_ranks = None if training is None or self._divide_by_initial_world_size else training
        if self.broadcast_buffers:
            buffers = list(self.module.buffers())
            if buffers:
                self._broadcast_coalesced(buffers)
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside only accumulate local gradients; the first one after it
        all-reduces the accumulated sum."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def register_comm_hook(self, state: object, hook) -> None:
        """Runs ``hook(state, bucket)`` instead of the all-reduce of each gradient bucket; it
        returns a future (``tp.futures.Future``) of the bucket's averaged flat gradients."""
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        if not callable(hook):
            raise TypeError(f"register_comm_hook: hook must be callable, got {type(hook).__name__}")
        try:
            inspect.signature(hook).bind(state, None)
        except TypeError:
            raise ValueError(f"register_comm_hook: hook {getattr(hook, '__name__', hook)!r} must take two arguments "
                             "(state, bucket)") from None
        except ValueError:  # builtins without a signature: trust them
            pass
        self._comm_hook, self._comm_hook_state = hook, state

    # --- uneven inputs --------------------------------------------------------------------------
    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False) -> Join:
        """A context manager for ranks with different numbers of batches (see the module docstring)."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs) -> JoinHook:
        """The hook a Join context runs on this rank once it has run out of inputs."""
        self._divide_by_initial_world_size = bool(kwargs.get("divide_by_initial_world_size", True))
        return _UnevenInputsHook(self, self._divide_by_initial_world_size)

    @property
    def join_device(self):
        """The device of the model's first parameter (where the join's counting runs)."""
        return next(iter(self.module.parameters())).device

    @property
    def join_process_group(self):
        """The process group gradients are averaged over."""
        return self.process_group

    # --- the reducer ---------------------------------------------------------------------------
    def _on_grad_ready(self, param) -> None:
        if not self.require_backward_grad_sync:
            return
        if not self._pass_started:
            self._pass_started = True
            engine.queue_callback(self._finish_pass)
        bucket, _ = self._where[id(param)]
        bucket.ready.add(id(param))
        bucket.used.add(id(param))
        self._launch_ready_buckets(final=False)
        for b in self._buckets[:self._next_launch]:  # let MPI progress the ones in flight
            if b.work is not None:
                b.work.is_completed()
            elif b.future is not None:
                b.future.done()

    def _launch_ready_buckets(self, final: bool) -> None:
        # Strictly in index order, so every rank starts the same collectives in the same order.
        while self._next_launch < len(self._buckets):
            bucket = self._buckets[self._next_launch]
            if not final and len(bucket.ready) < len(bucket.params):
                return
            self._launch(bucket, self._training_ranks)
            self._next_launch += 1

    def _launch(self, bucket: _Bucket, training_ranks: int | None = None) -> None:
        """Starts the bucket's reduction. ``training_ranks``: divide by that many ranks (a joined
        rank passes 0: it sends zeros) instead of averaging over the world."""
        if bucket.flat is not None:  # a joined rank's zeros
            self._start_reduction(bucket, training_ranks)
            return
        with no_grad():
            pieces = []
            for p in bucket.params:
                grad = p.grad if p.grad is not None else p.detach().new_zeros(p.shape)
                pieces.append(grad.detach().reshape(-1))
            bucket.flat = cat(pieces) if len(pieces) > 1 else pieces[0].clone()
        self._start_reduction(bucket, training_ranks)

    def _start_reduction(self, bucket: _Bucket, training_ranks: int | None) -> None:
        if self._comm_hook is not None:
            is_last = bucket.index == len(self._buckets) - 1
            grad_bucket = GradBucket(bucket.index, bucket.flat, bucket.params, bucket.offsets, is_last)
            with no_grad():
                bucket.future = self._comm_hook(self._comm_hook_state, grad_bucket)
            if not hasattr(bucket.future, "wait"):
                raise TypeError(f"DistributedDataParallel: the comm hook {self._hook_name()} returned "
                                f"{type(bucket.future).__name__}, not a future (tp.futures.Future) of the bucket's tensor")
            return
        op = collectives.ReduceOp.AVG
        if training_ranks is not None:
            op = collectives.ReduceOp.SUM
            if training_ranks > 0:
                with no_grad():
                    bucket.flat.div_(training_ranks)
        # The ranks agreed on the model at construction; buckets need no per-call check.
        bucket.work = collectives.start_all_reduce(self._engine_group, bucket.flat, op, "all_reduce", check=False)

    def _hook_name(self) -> str:
        return repr(getattr(self._comm_hook, "__name__", self._comm_hook))

    def _reduced(self, bucket: _Bucket):
        """The bucket's averaged flat gradients, once its all-reduce or comm hook is done."""
        if bucket.future is None:
            bucket.work.wait()
            return bucket.flat
        result = bucket.future.wait()
        if isinstance(result, (list, tuple)) and len(result) == 1:
            result = result[0]
        if not isinstance(result, Tensor) or result.numel() != bucket.numel:
            got = f"shape {list(result.shape)}" if isinstance(result, Tensor) else type(result).__name__
            raise RuntimeError(f"DistributedDataParallel: the comm hook {self._hook_name()}'s future gave {got}; it must "
                               f"give the bucket's flat gradients ({bucket.numel} elements)")
        return result.reshape(-1)

    def _finish_pass(self) -> None:
        self._pass_started = False
        try:
            missing = [self._param_names[id(p)] for b in self._buckets for p in b.params if id(p) not in b.used]
            if missing and not self.find_unused_parameters:
                raise RuntimeError(
                    "DistributedDataParallel: these parameters received no gradient in this backward pass: "
                    f"{', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}. Pass "
                    "find_unused_parameters=True if the model does not use every parameter in every forward.")
            self._launch_ready_buckets(final=True)
            with no_grad():
                for bucket in self._buckets:
                    flat = self._reduced(bucket)
                    for p, offset in zip(bucket.params, bucket.offsets):
                        averaged = flat[offset:offset + p.numel()].reshape(p.shape)
                        if p.grad is None:
                            p.grad = averaged.clone()
                        else:
                            p.grad.copy_(averaged)
        finally:
            self._next_launch = 0
            for bucket in self._buckets:
                bucket.reset()
