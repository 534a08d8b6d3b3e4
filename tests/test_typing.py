"""The front end: corpus typing, isolation from Numba's CPU target, keys, constants, helpers,
the TypedKernel API, host behaviour of the language stubs, front-end time."""
import time

import numpy as np
import pytest
from numba.core import ir, types

import tilejit as tile
from tilejit import dtypes as dt
from tilejit.lowering import structurize
from tilejit.typing import (PartitionType, TensorType, TileType, arg_type, type_kernel)

from corpus import BY_NAME, CASES, Out

P1 = ("partition", "float32", 1, None, (64,))
T1 = ("tensor", "float32", 1, None, False)


def _typed(case):
    args = case.make(np.random.default_rng(0))
    return args, type_kernel(case.kernel, case.arg_keys(args), case.constants)


# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_kernel_types(case):
    args, tk = _typed(case)
    assert tk.return_type == types.none
    # every variable has a precise type
    for name, ty in tk.typemap.items():
        assert ty.is_precise(), (name, ty)
    # stores into partitions receive exactly the partition's tile type
    for block in tk.func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and \
                    stmt.value.op == "call":
                info = tk.call_info(stmt.value)
                if info.op == "Partition.store":
                    part = tk.type_of(info.receiver)
                    val = tk.type_of(info.args["t"])
                    assert val == TileType(part.dtype, part.tile_shape)
    # the NumPy reference runs and produces arrays of the output dtype
    expected = case.expected(args)
    for name, value in expected.items():
        a = args[name]
        init = a.initial if isinstance(a, Out) else a.value
        assert value.shape == init.shape and value.dtype == init.dtype, name
    assert len(CASES) >= 30


def test_corpus_sizes_are_not_multiples_of_tiles():
    ragged = 0
    for case in CASES:
        args = case.make(np.random.default_rng(1))
        for a in args.values():
            if isinstance(a, Out) and any(s % t for s, t in zip(a.initial.shape, a.tile)):
                ragged += 1
                break
    assert ragged >= 25


# --------------------------------------------------------------------------------------------------
def test_numba_njit_still_works_and_registries_are_isolated():
    import operator

    import numba
    from numba.core.registry import cpu_target
    from numba.core.typing.templates import builtin_registry

    from tilejit.typing.context import TILE_METADATA, get_context, registry

    type_kernel(BY_NAME["vector_add"].kernel, BY_NAME["vector_add"].arg_keys(
        BY_NAME["vector_add"].make(np.random.default_rng(0))))

    @numba.njit
    def add(a, b):
        return a + b
    assert add(2, 3) == 5
    assert add(np.ones(3), np.ones(3)).sum() == 6

    # none of our templates leaked into Numba's global registry or the CPU context
    ours = {t for t in registry.functions} | {g for g, _ in registry.globals}
    assert not any(t in builtin_registry.functions for t in registry.functions)
    cpu_add = cpu_target.typing_context._lookup_global(operator.add)
    assert all(getattr(t, "metadata", {}) != TILE_METADATA for t in cpu_add.templates)
    # our operator.add is ours alone (Numba's number templates are filtered out)
    tile_add = get_context()._lookup_global(operator.add)
    assert [getattr(t, "metadata", None) for t in tile_add.templates] == [TILE_METADATA]
    # a CPU compile after tile typing and a tile compile after it both work
    type_kernel(BY_NAME["saxpy"].kernel, BY_NAME["saxpy"].arg_keys(
        BY_NAME["saxpy"].make(np.random.default_rng(0))))
    assert add(1.5, 2.0) == 3.5
    assert ours


def test_context_has_no_overload_templates():
    from tilejit.typing.context import get_context
    ctx = get_context()
    for fn in list(ctx._globals.values()):
        for t in getattr(fn, "templates", ()):
            assert "Overload" not in type(t).__name__ and "Intrinsic" not in t.__name__


# --------------------------------------------------------------------------------------------------
def test_arg_keys():
    facts = (32, 16, (16, 16), (16, 1), (False, True))
    t = arg_type(("tensor", "float16", 2, facts, False))
    assert isinstance(t, TensorType) and t.dtype is dt.float16 and t.ndim == 2
    assert t.index_type == types.int32 and not t.writable
    assert arg_type(("tensor", "float16", 2, facts, True)).writable
    p = arg_type(("partition", "bfloat16", 2, None, (64, 32)))
    assert isinstance(p, PartitionType) and p.tile_shape == (64, 32) and p.index_type == types.int64
    assert arg_type(("scalar", "int64", True)) == types.int64
    assert arg_type(("scalar", "float32", True)) == types.float32
    assert arg_type(("scalar", "bool_", True)) == types.boolean
    assert arg_type(("scalar", "float16", True)) == types.float16
    assert arg_type(("scalar", "bfloat16", True)) == TileType(dt.bfloat16, ())
    # lists in keys (e.g. from JSON) are accepted
    assert arg_type(["partition", "float32", 1, None, [64]]) == arg_type(P1)
    with pytest.raises(tile.TypingError, match="rank 1 to 3"):
        arg_type(("partition", "float32", 4, None, (2, 2, 2, 2)))


# --------------------------------------------------------------------------------------------------
def k_constexpr(z, x, SCALE: tile.Constant[float], USE: tile.Constant[bool],
                SHAPE: tile.Constant[tuple], DT: tile.Constant[tile.DType]):
    t = x.load((tile.bid(0),), SHAPE)
    if USE:
        t = t * SCALE
    else:
        t = t.does_not_exist
    z.store(t.astype(DT))


def test_constants_fold_before_typing():
    tk = type_kernel(k_constexpr, [P1, T1], {"SCALE": 2.0, "USE": True, "SHAPE": (64,),
                                            "DT": tile.float32})
    assert [p.kind for p in tk.params] == ["partition", "tensor"] + ["constant"] * 4
    assert [p.abi_index for p in tk.params[:2]] == [0, 1]
    assert tk.constants["SHAPE"] == (64,)
    # the dead branch was removed before typing
    assert "does_not_exist" not in tk.dump()
    with pytest.raises(tile.TypingError, match="does_not_exist"):
        type_kernel(k_constexpr, [P1, T1], {"SCALE": 2.0, "USE": False, "SHAPE": (64,),
                                            "DT": tile.float32})


def test_constant_parameters_detected():
    assert tile.constant_parameters(k_constexpr) == ("SCALE", "USE", "SHAPE", "DT")

    def plain(z, x, n):
        pass
    assert tile.constant_parameters(plain) == ()


def test_constant_values_are_checked():
    with pytest.raises(tile.TypingError, match="constant parameter 'SHAPE'"):
        type_kernel(k_constexpr, [P1, T1], {"SCALE": 2.0, "USE": True, "SHAPE": [64],
                                            "DT": tile.float32})


def test_derived_constants_fold_in_typing():
    def k(z, BM: tile.Constant[int]):
        half = BM // 2
        t = tile.zeros((half * 2,), tile.float32)
        if BM > 32:
            t = t + 1.0
        z.store(t)
    tk = type_kernel(k, [P1], {"BM": 64})
    st = structurize(tk)
    # `if BM > 32` is a compile-time bool: the structurizer keeps only the taken arm
    assert st.skeleton() == ("block", "return")


# --------------------------------------------------------------------------------------------------
@tile.function
def _scale(t, factor=2.0):
    return t * factor


@tile.function
def _scale_twice(t, factor):
    return _scale(_scale(t, factor), factor=factor)


@tile.function
def _split(t):
    if tile.bid(0) == 0:
        return t, t + 1.0
    return t * 2.0, t


def k_helpers(z, x):
    t = tile.load_tile_like(x, z)
    a, b = _split(_scale_twice(t, 3.0))
    z.store(a + b + _scale(t))


def test_helpers_are_inlined():
    tk = type_kernel(k_helpers, [P1, T1])
    text = tk.dump()
    assert "_scale" not in "".join(
        str(s.value.func) for b in tk.func_ir.blocks.values() for s in b.body
        if isinstance(s, ir.Assign) and isinstance(s.value, ir.Expr) and s.value.op == "call")
    assert "Tile[float32, 64]" in text
    st = structurize(tk)
    assert st.skeleton()[-1] == "return"


def test_helper_errors_point_into_the_helper():
    @tile.function
    def bad(t):
        return t.nope

    def k(z, x):
        z.store(bad(tile.load_tile_like(x, z)))
    with pytest.raises(tile.TypingError) as info:
        type_kernel(k, [P1, T1])
    err = info.value
    assert err.loc.function == "bad" and "return t.nope" in err.loc.source_line()
    assert "has no attribute 'nope'" in str(err)
    assert "in @tile.function 'bad', inlined into 'k'" in str(err)


def test_helper_wrong_arguments():
    def k(z, x):
        z.store(_scale(tile.load_tile_like(x, z), 1.0, 2.0))
    with pytest.raises(tile.TypingError, match="_scale"):
        type_kernel(k, [P1, T1])


# --------------------------------------------------------------------------------------------------
def test_typed_kernel_api():
    case = BY_NAME["matmul_fp16"]
    args, tk = _typed(case)
    assert tk.name == "matmul"
    assert tk.arg_types == (PartitionType(dt.float16, 2, (64, 64)), TensorType(dt.float16, 2),
                            TensorType(dt.float16, 2))
    calls = [tk.call_info(s.value) for b in tk.func_ir.blocks.values() for s in b.body
             if isinstance(s, ir.Assign) and isinstance(s.value, ir.Expr) and
             s.value.op == "call"]
    mma = next(c for c in calls if c.op == "tile.mma")
    assert mma.stub is tile.mma and set(mma.args) == {"a", "b", "acc", "input_precision", "fast_acc"}
    assert mma.args["input_precision"] is None       # default: float32 stays float32
    assert mma.signature.return_type == TileType(dt.float32, (64, 64))
    load = next(c for c in calls if c.op == "Tensor.load")
    assert load.stub is tile.load and load.receiver is not None
    assert load.args["padding"] is None              # default: see load.signature
    assert load.signature.args[2] == __import__("tilejit.typing", fromlist=["x"]).EnumMemberType(
        tile.PaddingMode.ZERO)
    binops = [tk.call_info(s.value) for b in tk.func_ir.blocks.values() for s in b.body
              if isinstance(s, ir.Assign) and isinstance(s.value, ir.Expr) and
              s.value.op in ("binop", "inplace_binop")]
    assert all(b.op.startswith("operator.") for b in binops)
    text = tk.dump()
    assert "tile kernel matmul(c: Partition[float16, 64x64]" in text and "BK=32" in text
    assert "[tile.mma]" in text and "phi(" in text
    assert set(tk.timings) >= {"untyped", "ssa", "typing", "total"}


def test_host_behaviour_of_the_language():
    assert tile.cdiv(100, 32) == 4 and tile.cdiv(0, 8) == 0
    tile.static_assert(True)
    with pytest.raises(AssertionError, match="nope"):
        tile.static_assert(False, "nope")
    with pytest.raises(tile.TileJitError, match="inside a @tile.entry kernel"):
        tile.zeros((4,), tile.float32)
    with pytest.raises(tile.TileJitError, match="can only be called from a kernel"):
        _scale(1.0)
    assert _scale.py_func(3.0) == 6.0
    with pytest.raises(TypeError):
        tile.Constant()
    assert tile.PaddingMode.ZERO is not tile.PaddingMode.NAN


def test_frontend_time_per_specialization():
    """Front end (typing + structurize) for a new matmul specialization, warm: < 50 ms."""
    case = BY_NAME["matmul_fp16"]
    args = case.make(np.random.default_rng(0))
    keys = case.arg_keys(args)
    type_kernel(case.kernel, keys, {"BK": 32})         # warm up
    best = float("inf")
    for bk in (16, 32, 64, 128, 256):
        t0 = time.perf_counter()
        structurize(type_kernel(case.kernel, keys, {"BK": bk}))
        best = min(best, time.perf_counter() - t0)
    assert best < 0.05, best
