"""Typing templates of the kernel language, one module per op family.

Importing this package registers every template in ``tilejit.typing.context.registry``.

==============  ===================================================================
``operators``   Python operators and builtins (abs, min, max, bool, int, len, range, print)
``grid``        bid, num_blocks, cdiv
``memory``      tensor/partition/view attributes, load_tile_like, load, store, gather, scatter
``atomics``     atomic_add/max/min/xchg/cas
``creation``    zeros, ones, full, arange
``elementwise`` where, minimum, maximum, exp ... fma
``reduction``   sum ... argmin, reduce, cumsum, cumprod, scan
``matmul``      mma, matmul, ``@``
``shape``       reshape ... extract, tile attributes, indexing
``dtype``       astype, bitcast, dtype values
``misc``        printf, assert_, assume_divisible_by, static_assert, enum members
``random``      randint4x, randint, rand, randn
``tiled_view``  ``x.tiled_view(...)`` (cuTile's TiledView): load, store, num_tiles, atomics
``assembly``    astile, insert, pack_to_bytes, unpack_from_bytes
``raw_memory``  ``x.get_raw_memory()`` (cuTile's RawArrayMemory): loads, stores, atomics
==============  ===================================================================
"""
from . import (operators, grid, memory, atomics, creation, elementwise, reduction,  # noqa: F401
               matmul, shape, dtype, misc, random, tiled_view, assembly, raw_memory)
