#!/usr/bin/env bash
# The CUDA backend's check on a lent GPU machine (docs/cuda.md, "Verified where"), in one run of
# about 4 minutes (the time limits add up to 6.8): install, versions, the GPU tests, the
# conformance suite, train_digits on cuda against cpu, and the benchmark beside PyTorch CUDA.
# Every step has its own time limit and its own log, and a failing step never stops the next one;
# the summary is printed last.
#
# Run from the repository root. Expects (see docs/cuda.md):
#   .whl/*.whl       wheels the machine lacks (scipy-openblas32 for the build; ml_dtypes, tqdm)
#   .whl/digits.npz  scikit-learn's digits data (images, target), used only where scikit-learn
#                    is not installed
# Logs go to $OUT (default ./cuda-check-logs), at most 8 files. SKIP_INSTALL=1 skips the install.
set -u
OUT="${OUT:-$PWD/cuda-check-logs}"
mkdir -p "$OUT"
ROOT="$PWD"
export OUT ROOT
declare -a SUMMARY=()

step() {  # step NAME SECONDS LOGFILE COMMAND...: run with a time limit, log, record the status
    local name="$1" limit="$2" log="$3"
    shift 3
    local started=$SECONDS
    echo "=== $name (limit ${limit}s)" >>"$OUT/$log"
    if declare -F "$1" >/dev/null; then  # a function of this script: timeout needs a process
        timeout --kill-after=10 "$limit" bash -c "$(declare -f "$1"); $*" >>"$OUT/$log" 2>&1
    else
        timeout --kill-after=10 "$limit" "$@" >>"$OUT/$log" 2>&1
    fi
    local rc=$?
    tail -n 25 "$OUT/$log"
    local verdict="ok"
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then verdict="TIMEOUT"; elif [ $rc -ne 0 ]; then verdict="FAILED (rc $rc)"; fi
    SUMMARY+=("$(printf '%-34s %-16s %4ss' "$name" "$verdict" $((SECONDS - started)))")
}

# --- install --------------------------------------------------------------------------------------
install() {
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$ROOT"/.whl/*.whl || return 1
    # An editable install builds the C++ kernels in place; where site-packages is read-only the
    # same build goes to a throwaway prefix (the steps import from the source tree either way).
    python3 -m pip install -q --no-build-isolation --no-deps --no-index -e "$ROOT" ||
        python3 -m pip install -q --no-build-isolation --no-deps --no-index --prefix /tmp/prefix -e "$ROOT" ||
        return 1
    python3 -c "import tensorplug as tp; print('tensorplug', tp.__file__); print('cuda available:', tp.cuda.is_available(), tp.cuda.unavailable_reason())"
}
# The source tree first: examples/ and benchmarks/ scripts import tensorplug from it too.
export PYTHONPATH="/tmp/site:$ROOT"
export CMAKE_BUILD_PARALLEL_LEVEL=16
# SKIP_INSTALL=1: a rerun on a machine where the first run installed everything.
if [ "${SKIP_INSTALL:-0}" = "1" ]; then echo "install skipped (SKIP_INSTALL=1)"; else step "install" 100 install.log install; fi

# --- versions -------------------------------------------------------------------------------------
versions() {
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
    python3 - <<'EOF'
import sys, numpy, cupy
from cupy.cuda import runtime
print("python", sys.version.split()[0], "numpy", numpy.__version__, "cupy", cupy.__version__)
print("CUDA runtime", runtime.runtimeGetVersion(), "driver", runtime.driverGetVersion())
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.version.cuda)
except ImportError:
    print("torch not installed")
import tensorplug as tp
print("tensorplug cuda:", tp.cuda.get_device_name(), tp.cuda.get_device_capability(), "mem", tp.cuda.mem_get_info())
EOF
}
step "versions" 15 install.log versions

# --- compile every kernel once, in parallel, into the on-disk cache the later steps read --------------
precompile() {
    # A module entry, not a script on stdin: nothing in it depends on the caller's __main__.
    python3 -m tensorplug.backends.cuda.kernels --workers 16
}
step "precompile kernels (NVRTC)" 45 install.log precompile

# --- GPU tests and the kernels' nvcc check ----------------------------------------------------------
step "pytest tests/cuda" 60 pytest.log env TENSORPLUG_TEST_TIMEOUT=30 python3 -m pytest -q -rfE --tb=short -p no:cacheprovider tests/cuda -o faulthandler_timeout=60 \
    -k "not compiles_with_nvcc and not compiles_with_nvrtc"  # the precompile step did that on this GPU

# --- conformance -------------------------------------------------------------------------------------
step "conformance --device cuda" 100 conformance.log \
    python3 -m tensorplug.conformance --device cuda --quick --report-dir "$OUT/conformance" --no-progress

# --- train_digits: cuda against cpu -------------------------------------------------------------------
# Shims only for what the machine lacks: scikit-learn's digits from .whl/digits.npz; matplotlib's
# plot as a no-op (the example saves a PNG; the check needs the losses).
shims() {
    local dir="/tmp/cuda-check-shims"
    mkdir -p "$dir"
    if ! python3 -c "import sklearn.datasets" 2>/dev/null; then
        mkdir -p "$dir/sklearn"
        : >"$dir/sklearn/__init__.py"
        cat >"$dir/sklearn/datasets.py" <<EOF
import numpy as np
from types import SimpleNamespace
def load_digits():
    data = np.load("$ROOT/.whl/digits.npz")
    return SimpleNamespace(images=data["images"], target=data["target"])
EOF
    fi
    if ! python3 -c "import matplotlib.pyplot" 2>/dev/null; then
        mkdir -p "$dir/matplotlib"
        echo "def use(name): pass" >"$dir/matplotlib/__init__.py"
        cat >"$dir/matplotlib/pyplot.py" <<'EOF'
class _Nothing:
    def __getattr__(self, name):
        return lambda *a, **k: _Nothing()
    def __iter__(self):
        return iter((_Nothing(), _Nothing()))
def subplots(*a, **k):
    return _Nothing(), (_Nothing(), _Nothing())
def __getattr__(name):
    return lambda *a, **k: _Nothing()
EOF
    fi
}
shims
export PYTHONPATH="/tmp/site:$ROOT:/tmp/cuda-check-shims"
digits() {
    for dev in cpu cuda; do
        python3 examples/train_digits.py --device "$dev" --epochs 3 --seed 0 --min-accuracy 0 \
            --out-dir "/tmp/digits-$dev" >"/tmp/digits-$dev.txt" 2>&1
        echo "--- $dev (rc $?)"
        cat "/tmp/digits-$dev.txt"
    done
    python3 - <<'EOF'
import re
losses = {}
for dev in ("cpu", "cuda"):
    text = open(f"/tmp/digits-{dev}.txt").read()
    losses[dev] = [float(v) for v in re.findall(r"loss ([0-9.]+)", text)]
print("per-epoch loss cpu ", losses["cpu"])
print("per-epoch loss cuda", losses["cuda"])
if losses["cpu"] and len(losses["cpu"]) == len(losses["cuda"]):
    diff = max(abs(a - b) for a, b in zip(losses["cpu"], losses["cuda"]))
    print(f"final loss cpu {losses['cpu'][-1]:.4f} cuda {losses['cuda'][-1]:.4f}; largest difference {diff:.2e}")
    raise SystemExit(0 if diff < 1e-2 else 1)
raise SystemExit(1)
EOF
}
step "train_digits cuda vs cpu" 40 digits.log digits

# --- benchmark beside PyTorch ----------------------------------------------------------------------------
step "bench_cuda (vs torch)" 50 bench.log python3 benchmarks/bench_cuda.py --budget 35

echo
echo "=== summary (logs in $OUT)"
for line in "${SUMMARY[@]}"; do echo "$line"; done
grep -E "^(summary|case|add|matmul|tiny|MLP|CNN)" "$OUT/bench.log" | tail -n 8
grep -E "CONFORMANT|NOT CONFORMANT|passed" "$OUT/conformance.log" | tail -n 3
grep -E "final loss" "$OUT/digits.log"
grep -E "passed|failed" "$OUT/pytest.log" | tail -n 1
