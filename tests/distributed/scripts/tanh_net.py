"""The NumPy float64 reference the DDP and FSDP scripts share: the gradients of a two-layer tanh
network under mean squared error, by hand. (The scripts run from this folder, which is then on
sys.path, so they import it by name.)"""
import numpy as np


def numpy_gradients(w1, b1, w2, b2, x, t):
    """The batch's gradients of mean((tanh(x w1' + b1) w2' + b2 - t)^2) for w1, b1, w2, b2."""
    h = np.tanh(x @ w1.T + b1)
    y = h @ w2.T + b2
    dy = 2 * (y - t) / y.size
    dz = (dy @ w2) * (1 - h ** 2)
    return [dz.T @ x, dz.sum(0), dy.T @ h, dy.sum(0)]
