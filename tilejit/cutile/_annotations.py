"""cuTile Python's parameter annotations: ``ct.Array``, ``ct.ArrayAnnotation``,
``ct.ListAnnotation``, ``ct.IndexedWithInt64``.

They are ``typing.Annotated`` metadata::

    def k(x: Annotated[ct.Array, ct.ArrayAnnotation(static_shape_dims=(0,))], out): ...

tilejit accepts and checks them (bad fields at construction, axes beyond the array's rank when
a kernel is compiled for it), and what they promise holds without them: tilejit picks 64-bit
indices itself for any array whose extents, strides or span need them (``IndexedWithInt64``
changes nothing). ``static_shape_dims``/``static_stride_dims`` (extents and strides as
compile-time constants) are not supported: a kernel annotated with them is refused when it is
compiled (``check_keys``), with that reason.
"""
from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Annotated, Any

from ..dtypes import int32, int64
from ..errors import UnsupportedError


class Array:
    """cuTile's class of global arrays, for annotations (``x: ct.Array``); tilejit's arrays are
    ``tile.Tensor`` values inside a kernel."""


def _check_dims(field: str, dims) -> None:
    if not isinstance(dims, tuple):
        raise TypeError(f"`{field}` must be a tuple of integers")
    for i, d in enumerate(dims):
        if isinstance(d, bool) or not isinstance(d, int):
            raise TypeError(f"Element #{i} of `{field}` must be int, got {d}")


@dataclass(frozen=True, kw_only=True)
class ArrayAnnotation:
    """``typing.Annotated`` metadata of an array parameter: ``index_dtype`` (int32 or int64),
    ``static_shape_dims`` and ``static_stride_dims`` (axes, negative counting from the end)."""
    index_dtype: Any = int32
    static_shape_dims: tuple = ()
    static_stride_dims: tuple = ()

    def __post_init__(self):
        if self.index_dtype not in (int32, int64):
            raise ValueError(f"`index_dtype` must be int32 or int64, got {self.index_dtype}")
        _check_dims("static_shape_dims", self.static_shape_dims)
        _check_dims("static_stride_dims", self.static_stride_dims)

    def check_rank(self, ndim: int) -> None:
        """Each listed axis exists in an array of ``ndim`` dimensions, once (cuTile's
        ValueErrors)."""
        for field in ("static_shape_dims", "static_stride_dims"):
            seen = set()
            for d in getattr(self, field):
                axis = d + ndim if d < 0 else d
                if not 0 <= axis < ndim:
                    raise ValueError(f"{field} contains axis {d} but array rank is {ndim}")
                if axis in seen:
                    raise ValueError(f"{field} contains duplicate axis {d}")
                seen.add(axis)


@dataclass(frozen=True, kw_only=True)
class ListAnnotation:
    """``typing.Annotated`` metadata of a list parameter: ``element`` is the items'
    :class:`ArrayAnnotation` (or an ``Annotated`` type holding exactly one)."""
    element: Any

    def __post_init__(self):
        element = self.element
        if typing.get_origin(element) is Annotated:
            found = [m for m in element.__metadata__ if isinstance(m, ArrayAnnotation)]
            if len(found) != 1:
                what = "no ArrayAnnotation found" if not found else "found several"
                raise TypeError(f"`element` must contain exactly one ArrayAnnotation, but "
                                f"{what} in {element!r}")
            element = found[0]
            object.__setattr__(self, "element", element)
        if not isinstance(element, ArrayAnnotation):
            raise TypeError(f"`element` must be an ArrayAnnotation, got "
                            f"{type(element).__name__}")


#: an array parameter indexed with int64 (tilejit chooses 64-bit indices by itself wherever an
#: array needs them, so this only documents the intent)
IndexedWithInt64 = Annotated[Array, ArrayAnnotation(index_dtype=int64)]


def array_annotations(pyfunc) -> dict:
    """``{parameter name: ArrayAnnotation}`` of ``pyfunc``'s annotated array and list
    parameters (a list's is its element's)."""
    try:
        hints = typing.get_type_hints(pyfunc, include_extras=True)
    except Exception:       # unresolvable string annotations: nothing to check
        return {}
    out = {}
    for name, ann in hints.items():
        for m in getattr(ann, "__metadata__", ()):
            if isinstance(m, ListAnnotation):
                m = m.element
            if isinstance(m, ArrayAnnotation):
                out[name] = m
    return out


def check_keys(annotations: dict, names, keys) -> None:
    """Check each annotated parameter's axes against the rank of the array (or of a tuple's
    arrays) it gets in a specialization (``keys`` in ``names`` order); then refuse static
    extents and strides, which tilejit does not make compile-time constants (ignoring them
    would break a kernel's ``ct.static_assert``/``ct.static_eval`` on them, and a signature
    would not say what its annotation asked for)."""
    for name, key in zip(names, keys):
        ann = annotations.get(name)
        if ann is None:
            continue
        for k in (key.items if getattr(key, "kind", None) == "tuple" else (key,)):
            if getattr(k, "ndim", None) is not None:
                ann.check_rank(k.ndim)
    static = [n for n, a in annotations.items() if a.static_shape_dims or a.static_stride_dims]
    if static:
        raise UnsupportedError(
            f"ct.ArrayAnnotation(static_shape_dims=..., static_stride_dims=...) on parameter(s) "
            f"{', '.join(static)}: tilejit does not make extents or strides compile-time "
            f"constants (they are run-time values of every array). Drop those fields (the "
            f"kernel computes the same values) or pass the extent/stride as a ct.Constant "
            f"parameter where it must be known at compile time")
