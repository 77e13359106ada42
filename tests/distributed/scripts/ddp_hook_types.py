"""Run under mpiexec -n 2: register_ddp_comm_hook with each DDPCommHookType. Each rank trains on
its share of a batch; NumPy float64 gives the whole batch's gradients (what every averaging hook
must leave: exactly, or within 16-bit rounding for the compressing ones) and each share's (what
NOOP leaves). The PowerSGD types must install PowerSGD at their rank, starting at iteration 1000,
so their first steps are plain exact averages."""

import numpy as np

import tensorplug.distributed as dist
from tensorplug.distributed.algorithms.ddp_comm_hooks import DDPCommHookType, register_ddp_comm_hook, powerSGD_hook
from tensorplug.nn.parallel import DistributedDataParallel as DDP

from ddp_hooks import setup, step  # this folder is on sys.path when a script runs

EXACT = dict(rtol=1e-12, atol=1e-14)
SIXTEEN_BITS = dict(rtol=1e-2, atol=1e-3)


def gradients_with(hook_type, rank, size):
    model, contributions, x, t, expected = setup(rank, size, 5)
    ddp = DDP(model)
    register_ddp_comm_hook(hook_type, ddp)
    got = [step(ddp, x, t) for _ in range(2)][-1]  # gradients accumulate: the second step holds two
    own = [g * size for g in contributions[rank]]
    return ddp, got, [2 * g for g in expected], [2 * g for g in own]


def check(got, want, tolerance, what):
    for g, w in zip(got, want):
        assert np.allclose(g, w, **tolerance), (what, g, w)


def main():
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()

    for hook_type in (DDPCommHookType.ALLREDUCE, DDPCommHookType.FP16_COMPRESS, DDPCommHookType.BF16_COMPRESS):
        _, got, expected, _ = gradients_with(hook_type, rank, size)
        check(got, expected, EXACT if hook_type is DDPCommHookType.ALLREDUCE else SIXTEEN_BITS, hook_type)

    power_types = {DDPCommHookType.POWER_SGD: (powerSGD_hook.powerSGD_hook, 1),
                   DDPCommHookType.POWER_SGD_RANK2: (powerSGD_hook.powerSGD_hook, 2),
                   DDPCommHookType.BATCHED_POWER_SGD: (powerSGD_hook.batched_powerSGD_hook, 1),
                   DDPCommHookType.BATCHED_POWER_SGD_RANK2: (powerSGD_hook.batched_powerSGD_hook, 2)}
    for hook_type, (hook, matrix_rank) in power_types.items():
        ddp, got, expected, _ = gradients_with(hook_type, rank, size)
        check(got, expected, EXACT, hook_type)
        state = ddp._comm_hook_state
        assert ddp._comm_hook is hook and isinstance(state, powerSGD_hook.PowerSGDState), (hook_type, ddp._comm_hook)
        assert (state.matrix_approximation_rank, state.start_powerSGD_iter, state.process_group) == (matrix_rank, 1000,
                                                                                                   None)
        assert state.iter == 2, state.iter

    _, got, _, own = gradients_with(DDPCommHookType.NOOP, rank, size)
    check(got, own, EXACT, "NOOP keeps each rank's own gradients")

    model = setup(rank, size, 5)[0]
    for hook_type in (DDPCommHookType.QUANTIZE_PER_TENSOR, DDPCommHookType.QUANTIZE_PER_CHANNEL):
        try:
            register_ddp_comm_hook(hook_type, DDP(model))
            raise AssertionError(f"{hook_type} must be refused")
        except NotImplementedError as exc:
            assert hook_type.name in str(exc), exc
    try:
        register_ddp_comm_hook("ALLREDUCE", DDP(model))
        raise AssertionError("a string must be refused")
    except TypeError as exc:
        assert "DDPCommHookType" in str(exc), exc

    dist.destroy_process_group()
    print(f"rank {rank}: DDP hook types OK", flush=True)


if __name__ == "__main__":
    main()
