"""scikit-learn estimators with array API dispatch on tensorplug tensors, against NumPy input.

scikit-learn needs ``array-api-compat`` for dispatch, and SciPy's array API mode, which must be
switched on (``SCIPY_ARRAY_API=1``) before SciPy is first imported: the check runs in a fresh
interpreter so that other tests' imports do not matter.
"""
import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("sklearn") is None,
                       reason="scikit-learn is not installed: pip install '.[examples]'"),
    pytest.mark.skipif(importlib.util.find_spec("array_api_compat") is None,
                       reason="scikit-learn's array API dispatch needs array-api-compat: pip install array-api-compat"),
]

SCRIPT = textwrap.dedent("""
    import numpy as np
    import sklearn
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.preprocessing import StandardScaler

    import tensorplug as tp

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 5))
    y = rng.integers(0, 3, size=80)
    X[y == 1] += 1.5
    X[y == 2, :2] -= 2.0
    for make in (LinearDiscriminantAnalysis, lambda: PCA(n_components=3, svd_solver="full"), StandardScaler):
        expected_estimator = make().fit(X, y)
        expected = expected_estimator.transform(X)
        with sklearn.config_context(array_api_dispatch=True):
            estimator = make().fit(tp.from_numpy(X.copy()), tp.from_numpy(y.copy()))
            got = estimator.transform(tp.from_numpy(X.copy()))
            assert isinstance(got, tp.Tensor), type(got)
            np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-10)
            if hasattr(estimator, "predict"):
                predicted = estimator.predict(tp.from_numpy(X.copy()))
                np.testing.assert_array_equal(np.asarray(predicted.numpy() if isinstance(predicted, tp.Tensor)
                                                         else predicted), expected_estimator.predict(X))
        print(type(expected_estimator).__name__, "ok")
""")


def test_estimators_match_numpy_input():
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["LinearDiscriminantAnalysis", "ok", "PCA", "ok", "StandardScaler", "ok"]
