"""``tp.utils.data``: datasets, samplers and the DataLoader. (Filled by issue 8.)"""
