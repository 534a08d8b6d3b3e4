"""Numba types of the kernel language.

Scalars are Numba's own number types (``types.int32``, ``types.float32``, ``types.boolean``...,
and ``Literal[int](64)`` for constants); everything else is one of the types below. All are
interned by ``key`` like every Numba type, so ``TileType(float32, (64, 64))`` is one object.

=======================  ===============================================================
``TileType``             an immutable tile: dtype + static power-of-two shape (rank 0 = scalar)
``TensorType``           a tensor argument (read-only unless passed as ``tile.atomic(t)``)
``PartitionType``        a partition argument: the tile of an output that this block owns
``TensorPartitionViewType``  ``x.partition(shape)``: a tile view of a tensor or partition
``DTypeType``            the value ``tile.float32`` (the dtype is in the type)
``EnumClassType`` / ``EnumMemberType``  ``tile.PaddingMode`` / ``tile.PaddingMode.ZERO``
``TileFunctionType``     a ``@tile.function`` used as a value (``tile.reduce(t, 0, fn, 0)``)
=======================  ===============================================================
"""
from __future__ import annotations

from typing import Optional, Tuple

from numba.core import types
from numba.core.typing.templates import signature

from .. import dtypes as _dt
from ..dtypes import DType
from ..keys import index_dtype

# --------------------------------------------------------------------------------------------------
# Scalars: dtype <-> Numba number type
_SCALAR_OF_DTYPE = {
    _dt.bool_: types.boolean,
    _dt.int8: types.int8, _dt.int16: types.int16, _dt.int32: types.int32, _dt.int64: types.int64,
    _dt.uint8: types.uint8, _dt.uint16: types.uint16, _dt.uint32: types.uint32,
    _dt.uint64: types.uint64,
    _dt.float16: types.float16, _dt.float32: types.float32, _dt.float64: types.float64,
}
_DTYPE_OF_SCALAR = {v: k for k, v in _SCALAR_OF_DTYPE.items()}


def scalar_type(dtype: DType):
    """The Numba scalar type of ``dtype``, or None (bfloat16, tfloat32 and float8 have none)."""
    return _SCALAR_OF_DTYPE.get(dtype)


def value_type(dtype: DType, shape: Tuple[int, ...] = ()):
    """Type of a value of ``dtype``: a Numba scalar for rank 0 when one exists, else a tile."""
    if not shape:
        st = scalar_type(dtype)
        if st is not None:
            return st
    return TileType(dtype, shape)


def is_scalar(ty) -> bool:
    """A Numba number or boolean (literals included): the weak scalars of the language."""
    return isinstance(types.unliteral(ty), (types.Integer, types.Float, types.Boolean))


def dtype_of(ty) -> Optional[DType]:
    """Element dtype of a tile, scalar, tensor, partition or view type; None otherwise."""
    if isinstance(ty, (TileType, TensorType, PartitionType, TensorPartitionViewType)):
        return ty.dtype
    return _DTYPE_OF_SCALAR.get(types.unliteral(ty))


def is_pow2(n: int) -> bool:
    return isinstance(n, int) and n > 0 and (n & (n - 1)) == 0


def format_shape(shape: Tuple[int, ...]) -> str:
    return "x".join(str(s) for s in shape) if shape else "()"


class WideIntLiteral(types.IntegerLiteral):
    """A Python int constant beyond int64 and uint64 (``2**64``, ``-2**63 - 1``), which Numba
    cannot type. As in NumPy 2, comparisons take it (decided by value: ``int64_tile == 2**64``
    is all False); any other use is an overflow (``promotion.promote_weak``)."""

    def __init__(self, value: int):
        self._literal_init(value)
        self._literal_type_cache = types.uint64 if value > 0 else types.int64
        types.Integer.__init__(self, name=f"Literal[int]({value})", bitwidth=64,
                               signed=value < 0)


# --------------------------------------------------------------------------------------------------
class TileType(types.Type):
    """An immutable tile with a static shape (each extent a power of two) and a dtype."""

    def __init__(self, dtype: DType, shape: Tuple[int, ...]):
        self.dtype = dtype
        self.shape = tuple(int(s) for s in shape)
        super().__init__(name=f"Tile[{dtype.name}, {format_shape(self.shape)}]")

    @property
    def key(self):
        return self.dtype.name, self.shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def unify(self, typingctx, other):
        """A tile and a scalar that meet at a join (``v = t if c else 0.0``, a variable set in
        one branch to a 0-d tile and in another to a number) are one tile: the scalar is weak
        (NumPy's rule) and broadcasts to the tile's shape. (Tiles of different dtypes or shapes
        do not join: that is nearly always a mistake, and the error says where.)"""
        from .promotion import result_dtype
        if is_scalar(other):
            try:
                return TileType(result_dtype((self, other), "a join"), self.shape)
            except Exception:          # no common dtype: Numba reports the join
                return None
        return None

    def copy(self, dtype: Optional[DType] = None, shape=None) -> "TileType":
        return TileType(self.dtype if dtype is None else dtype,
                        self.shape if shape is None else shape)


def _index_type(facts):
    """The Numba index type for ``facts`` (the rule is :func:`tilejit.keys.index_dtype`)."""
    return types.int32 if index_dtype(facts) is _dt.int32 else types.int64


class TensorType(types.Type):
    """A global-memory tensor argument. Read-only unless ``writable`` (``tile.atomic(t)``).

    ``facts`` is the C2 facts tuple; lowering turns it into ``assume`` ops and static strides.
    """

    def __init__(self, dtype: DType, ndim: int, facts=None, writable: bool = False):
        self.dtype = dtype
        self.ndim = int(ndim)
        self.facts = facts
        self.writable = bool(writable)
        extra = ", writable" if writable else ""
        super().__init__(name=f"Tensor[{dtype.name}, {ndim}d{extra}]")

    @property
    def key(self):
        return self.dtype.name, self.ndim, self.facts, self.writable

    @property
    def index_type(self):
        """Type of shapes/strides/indices of this tensor (``int32`` when ``index_bits == 32``)."""
        return _index_type(self.facts)


class PartitionType(types.Type):
    """A partition argument: inside the kernel, the ``tile_shape`` region this block owns."""

    def __init__(self, dtype: DType, ndim: int, tile_shape: Tuple[int, ...], facts=None):
        self.dtype = dtype
        self.ndim = int(ndim)
        self.tile_shape = tuple(int(s) for s in tile_shape)
        self.facts = facts
        super().__init__(name=f"Partition[{dtype.name}, {format_shape(self.tile_shape)}]")

    @property
    def key(self):
        return self.dtype.name, self.ndim, self.tile_shape, self.facts

    @property
    def writable(self) -> bool:
        return True

    @property
    def index_type(self):
        return _index_type(self.facts)


class TensorPartitionViewType(types.Type):
    """``x.partition(shape)``: a view of ``source`` (a tensor or partition type) as a grid of
    tiles of ``tile_shape``; ``padding`` is the PaddingMode member for out-of-bounds elements (or
    None: unspecified)."""

    def __init__(self, source, tile_shape: Tuple[int, ...], padding=None):
        self.source = source
        self.tile_shape = tuple(int(s) for s in tile_shape)
        self.padding = padding
        pad = f", padding={padding.name}" if padding is not None else ""
        super().__init__(name=f"TileView[{source.dtype.name}, {format_shape(self.tile_shape)}"
                              f"{pad}]")

    @property
    def key(self):
        return self.source, self.tile_shape, self.padding

    @property
    def dtype(self) -> DType:
        return self.source.dtype

    @property
    def ndim(self) -> int:
        return self.source.ndim

    @property
    def writable(self) -> bool:
        return self.source.writable


class _CallableValue(types.Callable):
    """A compile-time value that can be called in a kernel (a dtype, an enum class): the call
    is typed by ``_call_type``; nothing of Numba's lowering is involved (tilejit lowers it)."""

    def get_call_type(self, context, args, kws):
        return signature(self._call_type(args, kws), *args)

    def get_call_signatures(self):
        return (), True

    def get_impl_key(self, sig):
        return type(self)

    @property
    def typing_key(self):
        return self.value


class DTypeType(_CallableValue):
    """The type of a dtype value such as ``tile.float16`` or ``x.dtype``; calling it converts
    (``tile.uint32(3)`` is a uint32 scalar, not a weak Python int; ``tile.float32(t)`` is
    ``t.astype(tile.float32)``)."""

    def __init__(self, dtype: DType):
        self.dtype = self.value = dtype
        super().__init__(name=f"DType[{dtype.name}]")

    @property
    def key(self):
        return self.dtype.name

    def _call_type(self, args, kws):
        from .diagnostics import TileTypingError, describe_type
        if kws or len(args) > 1:
            raise TileTypingError(f"{self.dtype.name}(x) takes one value")
        if not args:                    # float32(): that dtype's zero, as float32(0)
            return value_type(self.dtype)
        (x,) = args
        if isinstance(x, TileType):
            return x.copy(dtype=self.dtype)
        if is_scalar(x):
            from .promotion import check_wide_int
            check_wide_int(x, self.dtype, f"{self.dtype.name}(x)")
            # bfloat16, float8...: no Numba scalar, a 0-d tile (as cuTile's strictly typed
            # constants)
            return value_type(self.dtype)
        raise TileTypingError(f"{self.dtype.name}(x) converts a number or a tile, got "
                              f"{describe_type(x)}")


class EnumClassType(_CallableValue):
    """The type of an enum class of the language (``tile.PaddingMode``); calling it with a
    constant (``Color(0)``) gives a member."""

    def __init__(self, enum_cls):
        self.enum_cls = self.value = enum_cls
        super().__init__(name=f"EnumClass[{enum_cls.__name__}]")

    @property
    def key(self):
        return self.enum_cls

    def _call_type(self, args, kws):
        from .templates.misc import enum_call_type
        return enum_call_type(self.enum_cls, args, kws)


class EnumMemberType(types.Type):
    """The type of one enum member (``tile.PaddingMode.ZERO``): the member is in the type, so it
    is a compile-time constant."""

    def __init__(self, member):
        self.member = member
        super().__init__(name=f"{type(member).__name__}.{member.name}")

    @property
    def key(self):
        return self.member

    @property
    def enum_cls(self):
        return type(self.member)


def enum_member_type(member) -> types.Type:
    """The type of an enum member in a kernel: members of int-valued enums (``IntEnum``,
    ``IntFlag``) are the int constant they equal, as in Python (``Color.RED == 1``); other
    members are themselves, compared by identity at compile time."""
    if isinstance(member, int):
        return types.literal(int(member))
    return EnumMemberType(member)


class TileFunctionType(types.Type):
    """A ``@tile.function`` passed as a value (combiner of ``tile.reduce`` / ``tile.scan``)."""

    def __init__(self, tile_function):
        self.function = tile_function
        super().__init__(name=f"TileFunction[{tile_function.name}]")

    @property
    def key(self):
        return self.function


__all__ = [
    "TileType", "TensorType", "PartitionType", "TensorPartitionViewType", "DTypeType",
    "EnumClassType", "EnumMemberType", "enum_member_type", "TileFunctionType", "scalar_type",
    "value_type",
    "is_scalar", "dtype_of", "is_pow2", "format_shape",
]
