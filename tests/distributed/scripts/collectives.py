"""Run under mpiexec -n 2: every collective on every device present, several dtypes and shapes
(empty, 0-d, non-contiguous), against NumPy references of what each rank contributed."""
import importlib.util
import sys

import numpy as np

import tensorplug as tp
import tensorplug.distributed as dist
from tensorplug.backends.opencl import OpenCLBackend

DEVICES = ["cpu"] + (["opencl"] if OpenCLBackend().is_available()[0] else []) + (
    ["npdev"] if importlib.util.find_spec("tensorplug_npdev") else [])
DTYPES = {"float32": 1e-6, "float64": 1e-12, "int64": 0, "int32": 0, "uint8": 0, "float16": 1e-3, "bfloat16": 1e-2,
          "bool": 0}
SHAPES = [(3, 4), (0,), (), (4, 3, 2)]


def contribution(rank, shape, dtype):
    """What rank ``rank`` contributes: small values exact in every dtype."""
    values = (np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) % 5) + rank + 1
    return (values % 2 == 0) if dtype == "bool" else values


def make(values, dtype, device, layout):
    t = tp.tensor(np.asarray(values, dtype=np.float64), device=device).to(getattr(tp, dtype))
    if layout == "transposed" and t.dim() >= 2:
        t = t.transpose(0, -1).contiguous().transpose(0, -1)  # same values, non-contiguous strides
        assert not t.is_contiguous()
    return t


def close(t, expected, tol, what):
    got = t.float().cpu().numpy().astype(np.float64) if t.dtype is tp.bfloat16 else t.cpu().numpy().astype(np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if got.shape != expected.shape or not np.allclose(got, expected, rtol=tol, atol=tol):
        raise AssertionError(f"{what}: got {got.tolist()}, expected {expected.tolist()}")


def declared(device, dtype):
    return dtype in tp.backends.backend_for(device).dtypes


def main():
    dist.init_process_group("mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    assert size == 2, size
    checked = 0
    for device in DEVICES:
        for dtype, tol in DTYPES.items():
            if not declared(device, dtype):
                continue
            for shape in SHAPES:
                for layout in ("contiguous", "transposed"):
                    if layout == "transposed" and len(shape) < 2:
                        continue
                    what = f"{device} {dtype} {shape} {layout}"
                    parts = [contribution(r, shape, dtype) for r in range(size)]
                    ops = {dist.ReduceOp.SUM: lambda a, b: a + b, dist.ReduceOp.MAX: np.maximum,
                           dist.ReduceOp.MIN: np.minimum, dist.ReduceOp.PRODUCT: lambda a, b: a * b}
                    if dtype.startswith("float"):
                        ops[dist.ReduceOp.AVG] = lambda a, b: (a + b) / 2
                    for op, combine in ops.items():
                        t = make(parts[rank], dtype, device, layout)
                        dist.all_reduce(t, op=op)
                        expected = combine(parts[0], parts[1])
                        close(t, expected.astype(bool) if dtype == "bool" else expected, tol, f"all_reduce {op} {what}")
                    t = make(parts[rank], dtype, device, layout)
                    dist.broadcast(t, src=1)
                    close(t, parts[1], 0, f"broadcast {what}")
                    t = make(parts[rank], dtype, device, layout)
                    dist.reduce(t, dst=0)
                    total = parts[0] + parts[1]
                    if dtype == "bool":
                        total = total.astype(bool)
                    close(t, total if rank == 0 else parts[rank], tol, f"reduce {what}")
                    outs = [tp.zeros(shape, dtype=getattr(tp, dtype), device=device) for _ in range(size)]
                    dist.all_gather(outs, make(parts[rank], dtype, device, layout))
                    for r in range(size):
                        close(outs[r], parts[r], 0, f"all_gather {what}")
                    flat = tp.zeros((size,) + shape, dtype=getattr(tp, dtype), device=device)
                    work = dist.all_gather_into_tensor(flat, make(parts[rank], dtype, device, layout), async_op=True)
                    work.wait()
                    close(flat, np.stack(parts), 0, f"all_gather_into_tensor {what}")
                    if dtype != "bool":
                        out = tp.zeros(shape, dtype=getattr(tp, dtype), device=device)
                        both = [np.stack([contribution(r + k, shape, dtype) for k in range(size)]) for r in range(size)]
                        dist.reduce_scatter_tensor(out, make(both[rank], dtype, device, "contiguous"))
                        close(out, both[0][rank] + both[1][rank], tol, f"reduce_scatter_tensor {what}")
                    checked += 1
    # point to point, tags, any source
    if rank == 0:
        dist.send(tp.arange(5, dtype=tp.float32), dst=1, tag=3)
        got = tp.zeros(2, dtype=tp.int64)
        assert dist.recv(got) == 1 and got.tolist() == [7, 8]
    else:
        got = tp.zeros(5)
        assert dist.recv(got, src=0, tag=3) == 0 and got.tolist() == [0, 1, 2, 3, 4]
        dist.isend(tp.tensor([7, 8]), dst=0).wait()
    # sub-groups: every rank calls new_group; members reduce among themselves
    solo = dist.new_group([1])
    t = tp.ones(2) * (rank + 1)
    dist.all_reduce(t, group=solo)
    assert t.tolist() == [rank + 1.0] * 2  # a group of one: the rank's own values
    assert dist.get_rank(solo) == (0 if rank == 1 else -1)
    objects = [None, None]
    dist.all_gather_object(objects, {"rank": rank})
    assert objects == [{"rank": 0}, {"rank": 1}]
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank}: {checked} cases OK")
    sys.stdout.flush()


main()
