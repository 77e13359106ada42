"""``tp.optim``: optimizers and learning-rate schedulers, with PyTorch's names, defaults and updates.

>>> import tensorplug as tp
>>> w = tp.zeros(3, requires_grad=True)
>>> opt = tp.optim.SGD([w], lr=0.1, momentum=0.9)
>>> (w - 1).square().sum().backward()
>>> opt.step(); opt.zero_grad()
"""
from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
