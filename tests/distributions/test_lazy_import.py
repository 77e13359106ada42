"""tp.distributions loads on first use (tensorplug.__getattr__), not with ``import tensorplug``; each
way of reaching it works in a fresh process, and gives one module object."""
import subprocess
import sys

import pytest

CASES = {
    "import tensorplug leaves it unloaded, attribute access loads it": (
        "import sys, tensorplug as tp; print('tensorplug.distributions' in sys.modules); d = tp.distributions; "
        "print(d is sys.modules['tensorplug.distributions'])", "False True"),
    "import tensorplug.distributions": (
        "import tensorplug.distributions as d; print(d.Normal.__name__, d.constraints.positive)",
        "Normal GreaterThan(lower_bound=0.0)"),
    "from tensorplug.distributions import Normal": (
        "from tensorplug.distributions import Normal; print(Normal(0.0, 2.0).scale.item())", "2.0"),
    "submodules by PyTorch's names": (
        "from tensorplug.distributions.studentT import StudentT; from tensorplug.distributions.transforms "
        "import ExpTransform; print(StudentT.__name__, ExpTransform.__name__)", "StudentT ExpTransform"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_reached_in_a_fresh_process(case):
    """Each import form, run in its own interpreter so that no earlier import hides a failure."""
    code, expected = CASES[case]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == expected.split()
