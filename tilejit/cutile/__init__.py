"""cuTile Python's syntax on tilejit: ``import tilejit.cutile as ct``.

Kernels written for cuTile Python (``import cuda.tile as ct``) run with only the import changed,
on a GPU or on tilejit's CPU simulator::

    import tilejit.cutile as ct

    @ct.kernel
    def vec_add(a, b, c, TILE: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(c, index=(i,), tile=ct.load(a, index=(i,), shape=(TILE,)) +
                 ct.load(b, index=(i,), shape=(TILE,)))

    ct.launch(stream, (ct.cdiv(n, 1024),), vec_add, (a, b, c, 1024))

Every ``ct.*`` function of the kernel language is tilejit's own op or a thin adapter over it
(``_language.py``); the launch side is ``_kernel.py``. Where cuTile's semantics differ from
tilejit's defaults (NaN in ``max``/``min``; run-time Python scalars are strong int32 / float32 /
bool values, not NumPy's weak scalars; ``a and b`` is a bool), this module keeps cuTile's.
``docs/language/porting.md`` lists the equivalents and the differences.
"""
from ..dtypes import (DType, bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                      float16, bfloat16, float32, float64, tfloat32, float8_e4m3fn, float8_e5m2,
                      float8_e8m0fnu, float4_e2m1fn)
# cuTile's exception names. A bad value or a failed static assertion is a TypingError in
# tilejit (the program is refused while it is typed), so those two names are TypingError.
from ..errors import (CompileError as TileError, TypingError as TileTypeError,
                      TypingError as TileValueError, TypingError as TileStaticAssertionError,
                      UnsupportedError as TileSyntaxError,
                      UnsupportedError as TileUnsupportedFeatureError,
                      ToolchainError as TileCompilerExecutionError,
                      StaticEvalError as TileStaticEvalError)
from ..language import Constant, MemoryOrder, MemoryScope, PaddingMode, RoundingMode
from . import _language
from ._language import *  # noqa: F401,F403  (the kernel language: load, store, mma, ...)
from ._kernel import ByTarget, Kernel, function, kernel, launch
from ._annotations import Array, ArrayAnnotation, IndexedWithInt64, ListAnnotation
from . import compilation, tune

#: ``x: ct.ScalarInt64`` annotates an int64 scalar parameter (Python ints are int32 otherwise;
#: one beyond int32 raises OverflowError)
ScalarInt64 = int64

__all__ = (["tune", "compilation", "launch", "kernel", "function", "Kernel", "ByTarget",
            "Array", "ArrayAnnotation", "ListAnnotation", "IndexedWithInt64", "Constant",
            "ScalarInt64", "MemoryOrder", "MemoryScope", "PaddingMode", "RoundingMode", "DType",
            "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float16", "bfloat16", "float32", "float64", "tfloat32", "float8_e4m3fn",
            "float8_e5m2", "float8_e8m0fnu", "float4_e2m1fn", "TileError", "TileTypeError",
            "TileValueError", "TileStaticAssertionError", "TileSyntaxError",
            "TileUnsupportedFeatureError", "TileCompilerExecutionError", "TileStaticEvalError"]
           + list(_language.__all__))
