"""``tile.api``: tensor constructors and copies; every function returns a lazy DeviceOp."""
from __future__ import annotations

from .runtime.transfer import dup, empty, from_numpy, memcpy, to_host  # noqa: F401
