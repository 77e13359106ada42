"""``python -m tensorplug.distributed.run -n 2 train.py [args]``: starts a script on N ranks.

A convenience for users who know torchrun: it runs MPI's own launcher (``mpiexec``, from the
mpich wheel that ``pip install tensorplug[distributed]`` installs) with this Python. On a
cluster, ``--hostfile`` names the machines (one host name per line, optionally ``host:slots``).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys


def find_mpiexec() -> str | None:
    """The mpiexec beside this Python (a virtual environment's), else the first on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return beside if os.path.exists(beside) else shutil.which("mpiexec")


def command(args: argparse.Namespace, launcher: str) -> list[str]:
    cmd = [launcher, "-n", str(args.nproc)]
    if args.hostfile:
        cmd += ["-f", args.hostfile]
    target = ["-m", args.script] if args.module else [args.script]
    return cmd + [sys.executable, *target, *args.script_args]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensorplug.distributed.run", description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--nproc", "--nproc-per-node", "--nproc_per_node", type=int, default=1,
                        help="number of ranks (processes)")
    parser.add_argument("--hostfile", help="MPI host file for several machines")
    parser.add_argument("-m", "--module", action="store_true", help="run the script argument as a module (python -m)")
    parser.add_argument("script")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.nproc < 1:
        parser.error("-n must be at least 1")
    launcher = find_mpiexec()
    if launcher is None:
        print("tensorplug.distributed.run: no mpiexec found; pip install tensorplug[distributed] installs MPICH's",
              file=sys.stderr)
        return 2
    cmd = command(args, launcher)
    os.execv(launcher, cmd)  # replaces this process: signals and the exit status are mpiexec's
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
