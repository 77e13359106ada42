"""The frontend: Tensor, dtypes, devices, factories, views and op definitions."""
