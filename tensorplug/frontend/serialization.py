"""``tp.save`` / ``tp.load`` in the safetensors format. (Filled by issue 8.)"""
from __future__ import annotations

__all__: list = []
