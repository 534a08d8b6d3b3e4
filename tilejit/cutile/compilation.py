"""``ct.compilation``: cuTile Python's kernel signatures over tilejit's specialization keys.

A :class:`KernelSignature` lists one constraint per kernel parameter: what a compiled kernel may
assume about its argument. ``KernelSignature.from_kernel_args(kernel, args, cconv)`` gives the
constraints tilejit specializes on for those arguments (``keys.Facts``: 32- or 64-bit indices, a
16-byte aligned base, extents' power-of-two divisors, strides in multiples of 16 bytes, unit
strides); nothing tilejit does not assume is claimed (no ``shape_constant``: tilejit keeps every
extent a run-time value). ``export_kernel`` compiles a kernel ahead of time for signatures, from
example arguments or from constraints alone (``_keys_from``: the constraint's facts as a key).

tilejit's binary interface is cuTile's for arrays, scalars, tuples and constants (an array is its
base pointer, its extents, then its strides, in its index type; a tuple its items'; constants
take no slot), not for lists (tilejit passes a list as a tuple, each array's slots in turn) nor
for symbol names (``symbol`` is tilejit's kernel name).
"""
from __future__ import annotations

import dataclasses
import enum
import os
import struct
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

from .. import dtypes as D
from .. import keys as _keys


# --- calling conventions ------------------------------------------------------------------------
class CallingConvention:
    """cuTile's calling convention (``cutile_python_v1``/``v2``); tilejit's binary interface is
    the same for both (v2 adds tuple parameters)."""

    _CODES = {"t1": 1, "t2": 2}
    __slots__ = ("version",)

    def __init__(self, version: int):
        if version not in (1, 2):
            raise ValueError(f"Unknown calling convention version {version}")
        self.version = version

    @classmethod
    def cutile_python_v1(cls) -> "CallingConvention":
        return cls(1)

    @classmethod
    def cutile_python_v2(cls) -> "CallingConvention":
        return cls(2)

    @classmethod
    def from_code(cls, code: str) -> "CallingConvention":
        if code not in cls._CODES:
            raise ValueError(f"Unknown calling convention code '{code}'")
        return cls(cls._CODES[code])

    @property
    def name(self) -> str:
        return f"cutile_python_v{self.version}"

    @property
    def code(self) -> str:
        return f"t{self.version}"

    def __eq__(self, other):
        return isinstance(other, CallingConvention) and other.version == self.version

    def __hash__(self):
        return hash(("CallingConvention", self.version))

    def __repr__(self):
        return f"CallingConvention.{self.name}()"


# --- constraints ---------------------------------------------------------------------------------
def _dtype(value, what="dtype") -> D.DType:
    if not isinstance(value, D.DType):
        raise TypeError(f"Expected a DType for the `{what}` parameter, got '{value}'")
    return value


def _per_axis(value, ndim: int, name: str, default, check) -> tuple:
    if value is None:
        return (default,) * ndim
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,) * ndim
    value = tuple(value)
    if len(value) != ndim:
        raise ValueError(f"Length of `{name}` {value} doesn't match ndim={ndim}")
    for i, v in enumerate(value):
        check(i, v, name)
    return value


def _optional_int(i, v, name):
    if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
        raise TypeError(f"Element #{i} of `{name}` must be None or int, got {v}")


def _optional_extent(i, v, name):
    _optional_int(i, v, name)
    if v is not None and v < 0:
        raise ValueError(f"Element #{i} of `{name}` must be non-negative, got {v}")


def _divisor(i, v, name):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"Element #{i} of `{name}` must be int, got {v}")
    if v <= 0:
        raise TypeError(f"Element #{i} of `{name}` must be strictly positive, got {v}")


def _groups(groups) -> tuple:
    if isinstance(groups, str):
        raise TypeError("`alias_groups` cannot be a string")
    groups = tuple(groups)
    for i, g in enumerate(groups):
        if not isinstance(g, str):
            raise TypeError(f"Element #{i} of `alias_groups` has non-string type {type(g)}")
    return groups


def _set(obj, **fields):
    for k, v in fields.items():
        object.__setattr__(obj, k, v)


@dataclass(frozen=True, init=False)
class ScalarConstraint:
    """A run-time scalar parameter of ``dtype``."""
    dtype: D.DType

    def __init__(self, dtype: D.DType):
        _set(self, dtype=_dtype(dtype))


@dataclass(frozen=True, init=False)
class ArrayConstraint:
    """An array parameter and what may be assumed of it: per axis, a constant or a divisor of its
    extent (``shape_constant``/``shape_divisible_by``) and stride (``stride_constant``/
    ``stride_divisible_by``, in elements), a lower bound of its stride; the divisor of its base
    address (bytes); its index type; whether it may alias other parameters or itself."""
    dtype: D.DType
    ndim: int
    index_dtype: D.DType
    stride_lower_bound_incl: tuple
    alias_groups: tuple
    may_alias_internally: bool
    stride_constant: tuple
    shape_constant: tuple
    stride_divisible_by: tuple
    shape_divisible_by: tuple
    base_addr_divisible_by: int

    def __init__(self, dtype: D.DType, ndim: int, *, index_dtype: D.DType,
                 stride_lower_bound_incl, alias_groups: Sequence[str],
                 may_alias_internally: bool, stride_constant=None, shape_constant=None,
                 stride_divisible_by=1, shape_divisible_by=1, base_addr_divisible_by: int = 1):
        _dtype(dtype)
        if isinstance(ndim, bool) or not isinstance(ndim, int):
            raise TypeError(f"Expected an integer for `ndim`, got '{ndim}'")
        if ndim < 0:
            raise ValueError("`ndim` cannot be negative")
        if index_dtype not in (D.int32, D.uint32, D.int64):
            raise ValueError(f"`index_dtype` must be int32 or int64, got {index_dtype}")
        stride_constant = _per_axis(stride_constant, ndim, "stride_constant", None,
                                    _optional_int)
        shape_constant = _per_axis(shape_constant, ndim, "shape_constant", None,
                                   _optional_extent)
        lower = list(_per_axis(stride_lower_bound_incl, ndim, "stride_lower_bound_incl", None,
                               _optional_int))
        for i, c in enumerate(stride_constant):      # a constant makes its bound redundant
            if c is not None and lower[i] is not None:
                if c < lower[i]:
                    raise ValueError(f"stride_constant[{i}] is set to {c}, which is less than "
                                     f"the lower bound {lower[i]}")
                lower[i] = None
        stride_div = self._divisors(stride_divisible_by, stride_constant, ndim, "stride")
        shape_div = self._divisors(shape_divisible_by, shape_constant, ndim, "shape")
        if isinstance(base_addr_divisible_by, bool) or \
                not isinstance(base_addr_divisible_by, int):
            raise TypeError(f"Expected an integer for the `base_addr_divisible_by` parameter, "
                            f"got {base_addr_divisible_by}")
        if base_addr_divisible_by <= 0:
            raise ValueError(f"`base_addr_divisible_by` must be strictly positive, got "
                             f"{base_addr_divisible_by}")
        _set(self, dtype=dtype, ndim=ndim, index_dtype=index_dtype,
             stride_lower_bound_incl=tuple(lower), alias_groups=_groups(alias_groups),
             may_alias_internally=bool(may_alias_internally), stride_constant=stride_constant,
             shape_constant=shape_constant, stride_divisible_by=stride_div,
             shape_divisible_by=shape_div, base_addr_divisible_by=base_addr_divisible_by)

    @staticmethod
    def _divisors(divs, constants, ndim, what) -> tuple:
        out = list(_per_axis(divs, ndim, f"{what}_divisible_by", 1, _divisor))
        for i, c in enumerate(constants):            # a constant makes its divisor redundant
            if c is not None:
                if c % out[i]:
                    raise ValueError(f"{what}_constant[{i}] is set to {c}, which is not "
                                     f"divisible by {out[i]}")
                out[i] = 1
        return tuple(out)


@dataclass(frozen=True, init=False)
class ListConstraint:
    """A list-of-arrays parameter: ``element`` constrains every item."""
    element: ArrayConstraint
    alias_groups: tuple
    elements_may_alias: bool

    def __init__(self, element: ArrayConstraint, *, alias_groups: Sequence[str],
                 elements_may_alias: bool):
        if not isinstance(element, ArrayConstraint):
            raise TypeError(f"ListConstraint only supports an ArrayConstraint as the `element` "
                            f"constraint, got '{element}'")
        _set(self, element=element, alias_groups=_groups(alias_groups),
             elements_may_alias=bool(elements_may_alias))


ConstantValue = Union[bool, int, float]


def _constant_ok(value) -> bool:
    return isinstance(value, (bool, int, float, D.DType, enum.Enum)) or \
        (isinstance(value, tuple) and all(_constant_ok(v) for v in value))


@dataclass(frozen=False, eq=False)
class ConstantConstraint:
    """The value of a ``ct.Constant`` parameter (1, True and 1.0 are three values; floats
    compare by their bits)."""
    value: Any

    def __post_init__(self):
        if not _constant_ok(self.value):
            raise TypeError(f"Unexpected constant value type {type(self.value)}")

    def __eq__(self, other):
        if type(self) is not type(other):
            return NotImplemented
        return _same_constant(self.value, other.value)

    def __hash__(self):
        return hash((type(self.value), repr(self.value)))


def _same_constant(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("=d", a) == struct.pack("=d", b)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same_constant(x, y) for x, y in zip(a, b))
    return a == b


@dataclass(frozen=True, init=False)
class TupleConstraint:
    """A tuple parameter: one constraint per item."""
    items: tuple

    def __init__(self, items):
        _set(self, items=tuple(_to_constraint(x) for x in items))


ParameterConstraint = Union[ScalarConstraint, ArrayConstraint, ListConstraint, TupleConstraint,
                            ConstantConstraint]
_CONSTRAINTS = (ScalarConstraint, ArrayConstraint, ListConstraint, TupleConstraint,
                ConstantConstraint)


def _to_constraint(c):
    if isinstance(c, _CONSTRAINTS):
        return c
    if isinstance(c, (bool, int, float)):
        return ConstantConstraint(c)
    if isinstance(c, tuple):
        return TupleConstraint(c)
    raise TypeError(f"Can't interpret {c!r} as a parameter constraint")


def _alias_groups_of(params):
    for p in params:
        if isinstance(p, (ArrayConstraint, ListConstraint)):
            yield p, p.alias_groups
        if isinstance(p, ListConstraint):
            yield from _alias_groups_of([p.element])
        elif isinstance(p, TupleConstraint):
            yield from _alias_groups_of(p.items)


def _check_alias_groups(params) -> None:
    uses, kinds = {}, {}
    for c, groups in _alias_groups_of(params):
        if len(set(groups)) != len(groups):
            raise ValueError(f"An alias group occurs more than once in the group list "
                             f"{list(groups)}")
        for g in groups:
            uses[g] = uses.get(g, 0) + 1
            if kinds.setdefault(g, type(c)) is not type(c):
                raise ValueError(f"Alias group `{g}` is used in two constraints of different "
                                 f"types {kinds[g].__name__} and {type(c).__name__}")
    for g, n in uses.items():
        if n == 1:
            raise ValueError(f"Alias group `{g}` is mentioned only once, and is therefore "
                             f"redundant. To specify that an array or a list may not alias any "
                             f"other object, use an empty tuple of alias groups.")


def _check_convention(c, cconv: CallingConvention) -> None:
    if isinstance(c, ArrayConstraint) and cconv.version < 2 and \
            any(x is not None for x in c.shape_constant):
        raise ValueError(f"Static array shapes are not supported by calling convention "
                         f"{cconv.name}; version >= 2 is required")
    if isinstance(c, ListConstraint):
        _check_convention(c.element, cconv)
    if isinstance(c, TupleConstraint):
        if cconv.version < 2:
            raise ValueError(f"Tuple parameters are not supported by calling convention "
                             f"{cconv.name}; version >= 2 is required")
        for x in c.items:
            _check_convention(x, cconv)


# --- signatures ---------------------------------------------------------------------------------
@dataclass(frozen=True, init=False)
class KernelSignature:
    """The constraints of a compiled kernel's parameters (one per parameter of its Python
    function), its calling convention and symbol name."""
    parameters: tuple
    calling_convention: CallingConvention
    symbol: Optional[str]

    def __init__(self, parameters, calling_convention: CallingConvention,
                 symbol: Optional[str] = None):
        if symbol is not None and not isinstance(symbol, str):
            raise TypeError(f"`symbol` must be a string, got {type(symbol)}")
        if not isinstance(calling_convention, CallingConvention):
            raise TypeError(f"Unsupported calling convention {calling_convention}")
        parameters = tuple(_to_constraint(c) for c in parameters)
        _check_alias_groups(parameters)
        for c in parameters:
            _check_convention(c, calling_convention)
        _set(self, parameters=parameters, calling_convention=calling_convention, symbol=symbol)

    def with_symbol(self, symbol: Optional[str]) -> "KernelSignature":
        return dataclasses.replace(self, symbol=symbol)

    @staticmethod
    def from_kernel_args(kernel, kernel_args, calling_convention: CallingConvention, *,
                         symbol: Optional[str] = None) -> "KernelSignature":
        """The signature tilejit compiles ``kernel`` with for ``kernel_args`` (as passed to
        ``ct.launch``): the facts it specializes on, as constraints."""
        from ._annotations import check_keys
        args = tuple(kernel_args)
        keys, consts, _ = kernel._keys_for(args)
        check_keys(getattr(kernel, "_array_anns", {}), kernel.runtime_names, keys)
        rt = iter(zip(keys, (a for n, a in zip(kernel.param_names, args)
                             if n not in kernel.constant_names)))
        params = []
        for name, arg in zip(kernel.param_names, args):
            if name in kernel.constant_names:
                params.append(ConstantConstraint(consts[name]))
            else:
                key, value = next(rt)
                params.append(_constraint_of(key, value))
        sig = KernelSignature(params, calling_convention, symbol or kernel.__name__)
        object.__setattr__(sig, "_example_args", args)
        return sig


def _constraint_of(key, value):
    kind = key[0]
    if kind == "scalar":
        return ScalarConstraint(D.from_name(key.dtype))
    if kind == "tuple":
        items = tuple(_constraint_of(k, v) for k, v in zip(key.items, value))
        if isinstance(value, list):
            return ListConstraint(items[0], alias_groups=(), elements_may_alias=False)
        return TupleConstraint(items)
    if kind in ("tensor", "partition"):
        return _array_constraint(key, value)
    raise TypeError(f"no compilation constraint for a {kind} argument")


def _array_constraint(key, value) -> ArrayConstraint:
    f = _keys.Facts(*key.facts)
    strides = tuple(getattr(value, "strides", None) or ())
    itemsize = D.from_name(key.dtype).itemsize
    if hasattr(value, "stride") and callable(value.stride):         # torch: strides in elements
        strides = tuple(value.stride())
    elif strides and hasattr(value, "__array_interface__"):         # NumPy: in bytes
        strides = tuple(s // itemsize for s in strides)
    shape = tuple(getattr(value, "shape", ()))
    overlap = any(s == 0 and n > 1 for s, n in zip(strides, shape)) if strides else True
    return ArrayConstraint(
        D.from_name(key.dtype), key.ndim, index_dtype=f.index_dtype,
        stride_lower_bound_incl=None, alias_groups=(), may_alias_internally=overlap,
        stride_constant=tuple(1 if one else None for one in f.stride_one),
        stride_divisible_by=tuple(1 if one else d for d, one in zip(f.stride_div, f.stride_one)),
        shape_divisible_by=f.shape_div, base_addr_divisible_by=f.base_div)


def _keys_from(kernel, sig: KernelSignature) -> tuple:
    """(runtime keys, constants) of ``kernel`` for a signature built from constraints."""
    written = set(kernel.written_parameters)
    keys, consts = [], {}
    if len(sig.parameters) != len(kernel.param_names):
        raise TypeError(f"the signature has {len(sig.parameters)} parameters, "
                        f"{kernel.__name__} has {len(kernel.param_names)}")
    for name, c in zip(kernel.param_names, sig.parameters):
        if name in kernel.constant_names:
            if not isinstance(c, ConstantConstraint):
                raise TypeError(f"parameter '{name}' is a ct.Constant: its constraint must be a "
                                f"ConstantConstraint (or a plain value), got {c!r}")
            consts[name] = c.value
        else:
            keys.append(_key_of(c, name in written, name))
    return keys, consts


def _key_of(c, writable: bool, name: str):
    if isinstance(c, ScalarConstraint):
        return _keys.ScalarKey("scalar", c.dtype.name, False)
    if isinstance(c, TupleConstraint):
        return _keys.tuple_key([_key_of(x, writable, name) for x in c.items])
    if isinstance(c, ArrayConstraint):
        return _keys.TensorKey("tensor", c.dtype.name, c.ndim, _facts(c), writable)
    raise TypeError(f"tilejit cannot compile parameter '{name}' from a "
                    f"{type(c).__name__} alone: build the signature with "
                    f"KernelSignature.from_kernel_args(kernel, example_args, cconv)")


def _facts(c: ArrayConstraint) -> _keys.Facts:
    """The key facts ``c`` guarantees (only those: an assumption tilejit would otherwise take
    from the launch is left out): ``Facts.of``'s rules applied to the guaranteed divisors (or
    constants), with the index width and unit strides the constraint states."""
    def known(consts, divisors):
        return [k if k is not None else d for k, d in zip(consts, divisors)]
    shape = known(c.shape_constant, c.shape_divisible_by)
    strides = known(c.stride_constant, c.stride_divisible_by)
    f = _keys.Facts.of(c.base_addr_divisible_by, shape, strides, c.dtype.itemsize)
    return f._replace(index_bits=32 if c.index_dtype in (D.int32, D.uint32) else 64,
                      stride_one=tuple(s == 1 for s in c.stride_constant))


def _compile_keys(kernel, keys, consts, output_format, gpu_code) -> bytes:
    """``kernel`` compiled for argument keys (what ``compile``/``inspect_bytecode`` do after
    classifying example arguments)."""
    from .. import compiler
    from ..runtime.argspec import NO_GRID_FACTS
    from ..dispatcher import arch_or_raise
    from ..runtime.device import default_arch
    from ..tileir import LATEST, write_bytecode
    from ..toolchain import tileiras
    if output_format == "cubin":
        arch = arch_or_raise(default_arch() if gpu_code is None else gpu_code)
        return kernel._compile(keys, consts, arch, kernel.options,
                               grid_ones=NO_GRID_FACTS).cubin
    version = tileiras.max_bytecode_version() if tileiras.available() else LATEST
    _, module, _ = compiler.front_end(kernel.py_func, keys, consts, compiler.SIM_TARGET,
                                      kernel.options, name=kernel.__name__, version=version,
                                      grid_ones=NO_GRID_FACTS, for_gpu=True)
    return write_bytecode(module, version)


def export_kernel(kernel, signatures, output_file, gpu_code: Optional[str] = None,
                  output_format: str = "cubin", **options) -> None:
    """Compile ``kernel`` ahead of time for each signature and write the result to
    ``output_file`` (a path or a binary file): ``"cubin"`` (tileiras, for ``gpu_code`` such as
    ``"sm_90"``) or ``"tileir_bytecode"`` (Tile IR bytecode, no toolchain needed)."""
    if output_format not in ("cubin", "tileir_bytecode"):
        raise ValueError(f"output_format must be 'cubin' or 'tileir_bytecode', got "
                         f"{output_format!r}")
    signatures = list(signatures)
    if len(signatures) != 1:
        raise NotImplementedError(f"tilejit exports one kernel per file, got "
                                  f"{len(signatures)} signatures: call export_kernel once per "
                                  f"signature")
    (sig,) = signatures
    example = getattr(sig, "_example_args", None)
    if example is None:
        out = _compile_keys(kernel, *_keys_from(kernel, sig), output_format, gpu_code)
    elif output_format == "cubin":
        out = kernel.compile(*example, arch=gpu_code)
    else:
        out = kernel.inspect_bytecode(*example)
    if isinstance(output_file, (str, os.PathLike)):
        with open(output_file, "wb") as f:
            f.write(out)
    else:
        output_file.write(bytes(out))


__all__ = ["ScalarConstraint", "ArrayConstraint", "ListConstraint", "TupleConstraint",
           "ConstantConstraint", "ParameterConstraint", "ConstantValue", "KernelSignature",
           "CallingConvention", "export_kernel"]
