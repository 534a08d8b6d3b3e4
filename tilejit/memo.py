"""Bounded memos: the launch path's caches, each with a limit.

A :class:`BoundedMemo` is a plain ``dict`` (lookups stay dict lookups, also from the C launcher)
that forgets everything when it is full: launch-path keys repeat in loops, so a cleared memo
refills with what is used now, and nothing grows without bound in a long process.
:data:`MEMOS` lists the module-level ones (``python -m tilejit info`` could show them; the tests
check every one has a limit); per-object caches are listed in NOTES.md.
"""
from __future__ import annotations

from typing import List


class BoundedMemo(dict):
    """A dict of at most ``limit`` entries; :meth:`put` clears it when full."""

    __slots__ = ("name", "limit")

    def __init__(self, name: str, limit: int, register: bool = True):
        super().__init__()
        if limit < 1:
            raise ValueError(f"memo {name!r}: limit must be >= 1, got {limit}")
        self.name = name
        self.limit = limit
        if register:
            MEMOS.append(self)

    def put(self, key, value):
        """Store ``value`` under ``key`` (forgetting everything first when full); return it."""
        if len(self) >= self.limit and key not in self:
            self.clear()
        self[key] = value
        return value

    def __repr__(self) -> str:
        return f"<BoundedMemo {self.name}: {len(self)} of {self.limit}>"


#: every module-level memo, in creation order
MEMOS: List[BoundedMemo] = []

__all__ = ["BoundedMemo", "MEMOS"]
