"""The reference gradient of the complex tests: central differences of a NumPy loss."""
import numpy as np


def numeric_gradient(loss, z: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """dL/dRe + i dL/dIm of NumPy function ``loss`` at ``z`` by central differences (PyTorch's
    convention for the gradient of a real loss of a complex tensor; only dL/dx for real ``z``)."""
    grad = np.zeros_like(z)
    units = (1.0, 1j) if np.iscomplexobj(z) else (1.0,)
    for index in np.ndindex(z.shape):
        for unit in units:
            step = np.zeros_like(z)
            step[index] = eps * unit
            grad[index] += (loss(z + step) - loss(z - step)) / (2 * eps) * unit
    return grad
