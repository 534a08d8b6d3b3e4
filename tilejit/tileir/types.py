"""Tile IR types.

Types are immutable and hashable; ``str(t)`` is the spelling NVIDIA's ``tileirdisasm`` prints
(``tile<4x8xf32>``, ``tensor_view<?x32xf16, strides=[?,1]>``, ``partition_view<tile=(4x8), ...>``).

Element types are plain strings (``"f32"``, ``"i1"``, ``"bf16"``, ``"f8E4M3FN"`` ...); a tile of
pointers has a :class:`PointerType` element. Dynamic extents of tensor views are ``None``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple, Union

# name -> (bytecode tag, bit width, kind) ; kind: 'i' integer (signless), 'f' float
ELEMENT_TYPES = {
    "i1": (0, 1, "i"), "i8": (1, 8, "i"), "i16": (2, 16, "i"), "i32": (3, 32, "i"),
    "i64": (4, 64, "i"), "f16": (5, 16, "f"), "bf16": (6, 16, "f"), "f32": (7, 32, "f"),
    "tf32": (8, 32, "f"), "f64": (9, 64, "f"), "f8E4M3FN": (10, 8, "f"), "f8E5M2": (11, 8, "f"),
    "f8E8M0FNU": (18, 8, "f"), "f4E2M1FN": (19, 4, "f"),
}
INT_TYPES = ("i1", "i8", "i16", "i32", "i64")
FLOAT_TYPES = ("f16", "bf16", "f32", "tf32", "f64", "f8E4M3FN", "f8E5M2", "f8E8M0FNU", "f4E2M1FN")


class Type:
    """Base class of all Tile IR types."""

    __slots__ = ()


def _check_elem(e: str) -> None:
    if e not in ELEMENT_TYPES:
        raise ValueError(f"unknown Tile IR element type {e!r}")


@dataclass(frozen=True)
class PointerType(Type):
    pointee: str

    def __post_init__(self):
        _check_elem(self.pointee)

    def __str__(self) -> str:
        return f"ptr<{self.pointee}>"


Element = Union[str, PointerType]


def _dims(shape) -> str:
    return "".join(f"{'?' if d is None else d}x" for d in shape)


@dataclass(frozen=True)
class TileType(Type):
    """``tile<shape x element>``; rank 0 is a scalar."""

    element: Element
    shape: Tuple[int, ...] = ()

    def __post_init__(self):
        if isinstance(self.element, str):
            _check_elem(self.element)
        elif not isinstance(self.element, PointerType):
            raise TypeError(f"bad tile element {self.element!r}")
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        for d in self.shape:
            if d <= 0:
                raise ValueError(f"tile dimensions must be positive, got {self.shape}")

    def __str__(self) -> str:
        return f"tile<{_dims(self.shape)}{self.element}>"

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def is_ptr(self) -> bool:
        return isinstance(self.element, PointerType)

    @property
    def is_float(self) -> bool:
        return isinstance(self.element, str) and ELEMENT_TYPES[self.element][2] == "f"

    @property
    def is_int(self) -> bool:
        return isinstance(self.element, str) and ELEMENT_TYPES[self.element][2] == "i"

    @property
    def bits(self) -> int:
        return 64 if self.is_ptr else ELEMENT_TYPES[self.element][1]

    def with_shape(self, shape) -> "TileType":
        return TileType(self.element, tuple(shape))

    def with_element(self, element) -> "TileType":
        return TileType(element, self.shape)


@dataclass(frozen=True)
class TensorViewType(Type):
    """A view of global memory with (static or dynamic) shape and strides in elements."""

    element: str
    shape: Tuple[Optional[int], ...]
    strides: Tuple[Optional[int], ...]

    def __post_init__(self):
        _check_elem(self.element)
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "strides", tuple(self.strides))
        if len(self.shape) != len(self.strides):
            raise ValueError("tensor_view shape and strides must have the same rank")
        for d in self.shape + self.strides:
            if d is not None and d <= 0:
                raise ValueError("static tensor_view extents and strides must be positive")

    @property
    def rank(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        s = f"tensor_view<{_dims(self.shape)}{self.element}"
        if self.shape:
            s += ", strides=[" + ",".join("?" if x is None else str(x) for x in self.strides) + "]"
        return s + ">"


# keywords of the PaddingValue enum, indexed by their bytecode value (also attrs.ENUMS)
PADDING_VALUES = ("zero", "neg_zero", "nan", "pos_inf", "neg_inf")


@dataclass(frozen=True)
class PartitionViewType(Type):
    """A tensor view split into tiles of ``tile_shape``; indices are in units of tiles."""

    tile_shape: Tuple[int, ...]
    tensor_view: TensorViewType
    dim_map: Optional[Tuple[int, ...]] = None
    padding: Optional[str] = None

    def __post_init__(self):
        object.__setattr__(self, "tile_shape", tuple(int(d) for d in self.tile_shape))
        if self.dim_map is None:
            object.__setattr__(self, "dim_map", tuple(range(len(self.tile_shape))))
        else:
            object.__setattr__(self, "dim_map", tuple(int(d) for d in self.dim_map))
        if self.padding is not None and self.padding not in PADDING_VALUES:
            raise ValueError(f"bad padding value {self.padding!r}; one of {PADDING_VALUES}")
        if len(self.tile_shape) != self.tensor_view.rank:
            raise ValueError("partition_view tile rank must equal the tensor_view rank")

    @property
    def rank(self) -> int:
        return len(self.tile_shape)

    @property
    def tile_type(self) -> TileType:
        """The type of one loaded tile (tile dims are given in tensor order after dim_map)."""
        return TileType(self.tensor_view.element, self.tile_shape)

    def __str__(self) -> str:
        s = "partition_view<tile=(" + "x".join(str(d) for d in self.tile_shape) + "), "
        if self.padding is not None:
            s += f"padding_value = {self.padding}, "
        s += str(self.tensor_view)
        if self.dim_map != tuple(range(len(self.dim_map))):
            s += ", dim_map=[" + ", ".join(str(d) for d in self.dim_map) + "]"
        return s + ">"


@dataclass(frozen=True)
class TokenType(Type):
    def __str__(self) -> str:
        return "token"


@dataclass(frozen=True)
class FunctionType(Type):
    inputs: Tuple[Type, ...]
    results: Tuple[Type, ...] = ()

    def __str__(self) -> str:
        return "(" + ", ".join(map(str, self.inputs)) + ") -> (" + ", ".join(map(str, self.results)) + ")"


TOKEN = TokenType()


def tile(element: Element, shape=()) -> TileType:
    return TileType(element, tuple(shape))


def scalar(element: Element) -> TileType:
    return TileType(element, ())


def ptr(pointee: str) -> TileType:
    """The scalar pointer tile ``tile<ptr<pointee>>`` used for kernel array parameters."""
    return TileType(PointerType(pointee), ())


I1, I8, I16, I32, I64 = (scalar(t) for t in INT_TYPES)
F16, BF16, F32, F64 = scalar("f16"), scalar("bf16"), scalar("f32"), scalar("f64")
