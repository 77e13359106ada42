"""A short deterministic run of tools/fuzz_native.py: every family, a few seeds each, in worker
subprocesses, so that a crash (a signal), a hang or a wrong value in the native paths fails CI.
The long runs are local (``nice -n 10 python tools/fuzz_native.py --cases 2000``)."""
import importlib.util
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "fuzz_native.py"


def _load_fuzzer():
    spec = importlib.util.spec_from_file_location("fuzz_native", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fuzz():
    return _load_fuzzer()


def test_every_family_runs_clean_on_a_few_seeds(fuzz):
    # Seeds past the local runs' (whose findings have regression tests of their own): 30 per
    # family, about 5 s.
    report = fuzz.run_many(sorted(fuzz.FAMILIES), range(50000, 50030), timeout=120.0, verbose=False)
    assert report["findings"] == []
    assert report["counts"].get("ok", 0) > 20


def test_a_crashing_case_is_reported_with_its_signal(fuzz):
    # The harness's own contract: a worker killed by a signal is a finding, and the next case
    # runs in a fresh worker.
    report = fuzz.run_many([fuzz.SELF_TEST_ABORT, "item"], range(1), timeout=120.0, verbose=False)
    assert [f["family"] for f in report["findings"]] == [fuzz.SELF_TEST_ABORT]
    assert "signal 6" in report["findings"][0]["detail"]
    assert sum(report["counts"].values()) == 2
