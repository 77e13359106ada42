"""PowerSGD (Vogels, Karimireddy and Jaggi, 2019): DDP's gradients all-reduced as low-rank
factors, with PyTorch's names (``PowerSGDState``, ``powerSGD_hook``, ``batched_powerSGD_hook``).

Each gradient of two or more dims is read as a matrix M (n rows, the rest as columns). One power
iteration gives a rank-r approximation from two small all-reduces instead of one of M's size:
P = M Q (summed over the ranks), P orthonormalized, Q = M^T P (summed), and M ~ P Q^T / world.
Q is kept from one step to the next (``warm_start``), so the approximation improves over steps,
and what the approximation missed is added to the next step's gradient (``use_error_feedback``),
so nothing is lost in the long run. Vectors, and matrices too small to gain (``min_compression_rate``),
are all-reduced whole, together. Until ``start_powerSGD_iter`` the hook is a plain all-reduce.
"""
from __future__ import annotations

import math

from .... import distributed as dist
from ....frontend.autograd.grad_mode import no_grad
from ....frontend.factories import randn, zeros
from ....frontend.ops.joining import cat
from ....frontend.random import Generator
from ....futures import Future
from ...grad_bucket import GradBucket
from .default_hooks import allreduce_hook

__all__ = ["PowerSGDState", "powerSGD_hook", "batched_powerSGD_hook"]


class PowerSGDState:
    """What PowerSGD keeps between steps: per bucket, the error feedback and the Q factors."""

    def __init__(self, process_group, matrix_approximation_rank: int = 1, start_powerSGD_iter: int = 1_000,
                 min_compression_rate: float = 2, use_error_feedback: bool = True, warm_start: bool = True,
                 orthogonalization_epsilon: float = 0, random_seed: int = 0,
                 compression_stats_logging_frequency: int = 10_000, batch_tensors_with_same_shape: bool = False):
        if (use_error_feedback or warm_start) and start_powerSGD_iter <= 1:
            raise ValueError("Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or `warm_start` is enabled, "
                             "because PowerSGD can only be applied after the first two iterations in DDP.")
        if matrix_approximation_rank < 1:
            raise ValueError(f"PowerSGDState: matrix_approximation_rank must be at least 1, got {matrix_approximation_rank}")
        self.process_group = process_group
        self.matrix_approximation_rank = int(matrix_approximation_rank)
        self.start_powerSGD_iter = int(start_powerSGD_iter)
        self.min_compression_rate = min_compression_rate
        self.use_error_feedback = use_error_feedback
        self.warm_start = warm_start
        self.orthogonalization_epsilon = orthogonalization_epsilon
        self.rng = Generator().manual_seed(random_seed)  # the same first Q on every rank
        self.compression_stats_logging_frequency = compression_stats_logging_frequency
        self.batch_tensors_with_same_shape = batch_tensors_with_same_shape
        self.error_dict: dict = {}
        self.p_memory_dict: dict = {}
        self.q_memory_dict: dict = {}
        self.iter = 0
        self.total_numel_before_compression = 0
        self.total_numel_after_compression = 0

    def maybe_increase_iter(self, bucket: GradBucket) -> None:
        """A step ends with its last bucket."""
        if bucket.is_last():
            self.iter += 1

    def compression_stats(self) -> tuple:
        """(compression rate, elements before, elements after) so far."""
        after = self.total_numel_after_compression
        rate = self.total_numel_before_compression / after if after else 0
        return rate, self.total_numel_before_compression, after

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("process_group")  # a communicator cannot be pickled; the loader's default group stands in
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.process_group = None


def _worth_compressing(rows: int, cols: int, state: PowerSGDState) -> bool:
    rank = min(rows, cols, state.matrix_approximation_rank)
    return rows * cols > (rows + cols) * rank * state.min_compression_rate


def _orthonormalize(P, epsilon: float) -> None:
    """Gram-Schmidt on P's columns, in place."""
    for i in range(P.shape[1]):
        column = P[:, i:i + 1]
        norm = column.norm()
        column.div_(norm + epsilon if epsilon else norm)
        if i + 1 < P.shape[1]:
            rest = P[:, i + 1:]
            rest.sub_(column @ (column.t() @ rest))


def _sum_in_place(group, tensors: list) -> None:
    """All-reduces (SUM) the tensors as one flat message."""
    if not tensors:
        return
    flat = cat([t.reshape(-1) for t in tensors])
    dist.all_reduce(flat, group=group)
    offset = 0
    for t in tensors:
        t.copy_(flat[offset:offset + t.numel()].view(t.shape))
        offset += t.numel()


def _apply_error_feedback(state: PowerSGDState, key, flat) -> object:
    """Adds what the last approximation of this bucket missed; returns the corrected gradients'
    copy (the next error is measured against it)."""
    if not state.use_error_feedback:
        return None
    error = state.error_dict.get(key)
    if error is None or error.shape != flat.shape:
        state.error_dict[key] = zeros(flat.shape, dtype=flat.dtype, device=flat.device)
    else:
        flat.add_(error)
    return flat.clone()


def _low_rank_average(state: PowerSGDState, key, matrices: list, world: int) -> None:
    """Replaces each matrix (in place) by the rank-r average over the ranks (one power iteration)."""
    group = state.process_group
    shapes = [(m.shape[0], m.shape[1], min(m.shape[0], m.shape[1], state.matrix_approximation_rank)) for m in matrices]
    qs = state.q_memory_dict.get(key) if state.warm_start else None
    if qs is None or [tuple(q.shape) for q in qs] != [(c, r) for _, c, r in shapes]:
        qs = [randn(c, r, generator=state.rng, dtype=matrices[0].dtype).to(matrices[0].device) for _, c, r in shapes]
        for q in qs:
            _orthonormalize(q, state.orthogonalization_epsilon)
        if state.warm_start:
            state.q_memory_dict[key] = qs
    ps = [m @ q for m, q in zip(matrices, qs)]
    _sum_in_place(group, ps)
    for p in ps:
        _orthonormalize(p, state.orthogonalization_epsilon)
    for m, p, q in zip(matrices, ps, qs):
        q.copy_(m.t() @ p)
    _sum_in_place(group, qs)
    for m, p, q in zip(matrices, ps, qs):
        m.copy_((p @ q.t()).div_(world))
    state.total_numel_before_compression += sum(r * c for r, c, _ in shapes)
    state.total_numel_after_compression += sum((r + c) * k for r, c, k in shapes)


def _done(value) -> Future:
    future = Future()
    future.set_result(value)
    return future


def powerSGD_hook(state: PowerSGDState, bucket: GradBucket) -> Future:
    """The bucket's gradients averaged over the ranks, each matrix through its rank-r factors."""
    if state.iter < state.start_powerSGD_iter:
        state.maybe_increase_iter(bucket)
        return allreduce_hook(state.process_group, bucket)
    world = dist.get_world_size(state.process_group)
    flat = bucket.buffer()
    with no_grad():
        corrected = _apply_error_feedback(state, bucket.index(), flat)
        whole, matrices = [], []
        for g in bucket.gradients():
            rows = g.shape[0] if g.ndim >= 2 else 1
            cols = g.numel() // rows if rows else 0
            if g.ndim >= 2 and _worth_compressing(rows, cols, state):
                matrices.append(g.view(rows, cols))
            else:
                whole.append(g)
                state.total_numel_before_compression += g.numel()
                state.total_numel_after_compression += g.numel()
        _sum_in_place(state.process_group, whole)
        for g in whole:
            g.div_(world)
        if matrices:
            _low_rank_average(state, bucket.index(), matrices, world)
        if corrected is not None:
            state.error_dict[bucket.index()] = corrected - flat
    state.maybe_increase_iter(bucket)
    return _done(flat)


def batched_powerSGD_hook(state: PowerSGDState, bucket: GradBucket) -> Future:
    """PowerSGD on the whole bucket at once, read as one square matrix (zero-padded): fewer,
    larger factors; coarser than :func:`powerSGD_hook`, which takes each gradient's own shape."""
    if state.iter < state.start_powerSGD_iter:
        state.maybe_increase_iter(bucket)
        return allreduce_hook(state.process_group, bucket)
    world = dist.get_world_size(state.process_group)
    flat = bucket.buffer()
    side = math.ceil(math.sqrt(flat.numel()))
    with no_grad():
        corrected = _apply_error_feedback(state, bucket.index(), flat)
        square = zeros(side * side, dtype=flat.dtype, device=flat.device)
        square[:flat.numel()].copy_(flat)
        matrix = square.view(side, side)
        _low_rank_average(state, ("batched", bucket.index()), [matrix], world)
        flat.copy_(square[:flat.numel()])
        if corrected is not None:
            state.error_dict[bucket.index()] = corrected - flat
    state.maybe_increase_iter(bucket)
    return _done(flat)
