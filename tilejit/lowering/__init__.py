"""Lowering: typed Numba IR -> region tree (``structurize``) -> Tile IR.

``structurize(typed_kernel) -> StructuredKernel`` (``regions.py`` documents the tree).
"""
from .regions import (Block, Break, Carried, Const, Continue, For, If, Loop, Region, Result,
                      Return, StructuredKernel, Undef, Yield)
from .structurize import structurize

__all__ = ["structurize", "StructuredKernel", "Region", "Block", "If", "For", "Loop", "Carried",
           "Result", "Yield", "Continue", "Break", "Return", "Const", "Undef"]
