"""tools/probes/run_probes.py, the probe-batch runner (issue 13): its comparison of results and
its switching of a probe's own ``import torch.X`` lines to tensorplug, without PyTorch."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "probes"))

import run_probes  # noqa: E402


def test_results_compare_within_tolerance_and_name_the_first_difference():
    tensor = {"tensor": [2], "dtype": "float32", "values": [1.0, 2.0]}
    assert run_probes._same(tensor, dict(tensor, values=[1.0, 2.0 + 1e-7]), 1e-4, 1e-5) is None
    assert "shape/dtype" in run_probes._same(dict(tensor, dtype="float64"), tensor, 1e-4, 1e-5)
    assert run_probes._same(dict(tensor, values=[1.0, 3.0]), tensor, 1e-4, 1e-5).startswith("[1]")
    assert run_probes._same([1, "a"], [1, "b"], 1e-4, 1e-5) == "[1] 'a' vs torch 'b'"
    assert "keys" in run_probes._same({"a": 1}, {"b": 1}, 1e-4, 1e-5)


def test_a_probes_torch_imports_give_tensorplug_modules():
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.join(ROOT, "tools", "probes")!r})
        import run_probes
        import tensorplug
        sys.meta_path.insert(0, run_probes._TorchImportsTensorplug())
        from torch.nn import functional
        from torch.utils.data.distributed import DistributedSampler
        import torch.distributed as dist
        assert functional is tensorplug.nn.functional and dist is tensorplug.distributed
        assert DistributedSampler is tensorplug.utils.data.distributed.DistributedSampler
        assert tensorplug.utils.data.distributed.__spec__.name == "tensorplug.utils.data.distributed"
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-W", "error", "-c", script], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
