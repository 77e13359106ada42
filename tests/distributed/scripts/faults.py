"""Run under mpiexec -n 2 with an argument naming the fault. Each rank prints what it saw; the
test reads those lines."""
import sys

import tensorplug as tp
import tensorplug.distributed as dist

fault = sys.argv[1]
if fault == "before-init":
    try:
        dist.all_reduce(tp.ones(2))
    except ValueError as exc:  # as PyTorch's
        print("error:", exc)
    sys.exit(0)

dist.init_process_group("mpi", timeout=3 if fault == "skipped" else None)
rank = dist.get_rank()
if fault == "shape":
    try:
        dist.all_reduce(tp.ones(3 + rank))
    except RuntimeError as exc:
        print(f"rank {rank} error:", " ".join(str(exc).split()))
    dist.all_reduce(tp.ones(2))  # the group still works after the clear error
    print(f"rank {rank} recovered")
elif fault == "dtype":
    try:
        dist.broadcast(tp.ones(2, dtype=tp.float32 if rank == 0 else tp.int64), src=0)
    except RuntimeError as exc:
        print(f"rank {rank} error:", " ".join(str(exc).split()))
elif fault == "skipped":
    if rank == 0:
        try:
            dist.all_reduce(tp.ones(2))
        except RuntimeError as exc:
            print(f"rank {rank} error:", " ".join(str(exc).split()), flush=True)
            raise  # the uncaught error takes the job down
    else:
        import time

        time.sleep(30)  # never joins the collective
elif fault == "dies":
    if rank == 1:
        import os

        os._exit(3)
    dist.all_reduce(tp.ones(2))
    print("rank 0 finished a collective with a dead rank")
elif fault == "raises":
    if rank == 1:
        raise ValueError("a bug in rank 1's training code")
    dist.all_reduce(tp.ones(2))
    print("rank 0 finished a collective with a dead rank")
dist.destroy_process_group()
