"""F.dropout2d on 2-D and 3-D inputs follows PyTorch 2.13 (issue 13): warnings, and the mask's
shape (elementwise for 2-D, one mask per (N, C) row for 3-D)."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F


def test_three_d_input_masks_each_row():
    with pytest.warns(UserWarning, match="interpreted as shape \\(N, C, L\\)"):
        out = F.dropout2d(tp.ones(4, 50, 7), 0.5).numpy()
    rows = out.reshape(4 * 50, 7)
    assert all(len(set(row)) == 1 for row in rows)  # whole rows kept (2.0) or dropped (0.0)
    assert set(np.unique(rows)) == {0.0, 2.0}


def test_two_d_input_drops_elementwise():
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        out = F.dropout2d(tp.ones(40, 50), 0.5).numpy()
    assert set(np.unique(out)) == {0.0, 2.0}
    assert any(len(set(row)) == 2 for row in out)  # masks vary inside a row
    with pytest.warns(UserWarning):
        np.testing.assert_array_equal(F.dropout2d(tp.ones(3, 4), 0.5, training=False).numpy(), np.ones((3, 4)))
