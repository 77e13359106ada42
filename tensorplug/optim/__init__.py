"""``tp.optim``: optimizers and learning-rate schedulers. (Filled by issue 8.)"""
