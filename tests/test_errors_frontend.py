"""Bad kernels: every rejection is a tile.CompileError subclass with file:line, the source line, a
caret, the user's names, the operand types, and a message that names the problem and the fix.

The offending line of each kernel carries the marker comment ``# <-``.
"""
import inspect

import numpy as np
import pytest

import tilejit as tile
from tilejit.lowering import structurize
from tilejit.typing import type_kernel

P1 = ("partition", "float32", 1, None, (64,))
P2 = ("partition", "float32", 2, None, (32, 32))
T1 = ("tensor", "float32", 1, None, False)
T2 = ("tensor", "float32", 2, None, False)
T2H = ("tensor", "float16", 2, None, False)
W1 = ("tensor", "int32", 1, None, True)
I64 = ("scalar", "int64", True)


def marked_line(fn):
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if "# <-" in line:
            return start + i
    raise AssertionError(f"no '# <-' marker in {fn.__name__}")


def check(fn, keys, *fragments, exc=tile.CompileError, constants=None, struct=False):
    with pytest.raises(exc) as info:
        tk = type_kernel(fn, keys, constants)
        if struct:
            structurize(tk)
    err = info.value
    text = str(err)
    for frag in fragments:
        assert frag in text, f"{frag!r} not in:\n{text}"
    assert err.loc is not None, text
    assert err.loc.filename == __file__
    assert err.loc.line == marked_line(fn), text
    assert f"{err.loc.filename}:{err.loc.line}" in text
    assert "^" in text and err.loc.source_line().strip() in text
    # never Numba's internals
    for bad in ("No implementation of function", "$binop", "During: ", "Failed in "):
        assert bad not in text, text
    return err


# --------------------------------------------------------------------------------------------------
def bad_add_shapes(z, x):
    tx = x.load((0, 0), (32, 64))
    ty = x.load((0, 0), (64, 32))
    z.store(tx + ty)    # <-


def test_shape_mismatch_in_add():
    err = check(bad_add_shapes, [P2, T2], "in `tx + ty`", "could not be broadcast",
                "(32, 64)", "(64, 32)", "tx: Tile[float32, 32x64]", "ty: Tile[float32, 64x32]",
                exc=tile.TypingError)
    # column-accurate caret under `tx + ty`
    assert err.loc.col == err.loc.source_line().index("tx + ty")
    assert err.loc.end_col - err.loc.col == len("tx + ty")


def bad_mma(z, a, b):
    ta = a.load((0, 0), (32, 16))
    tb = b.load((0, 0), (32, 32))
    acc = tile.zeros((32, 32), tile.float32)
    acc = tile.mma(ta, tb, acc)    # <-
    z.store(acc)


def test_mma_shape_mismatch():
    check(bad_mma, [P2, T2H, T2H], "tile.mma: shape mismatch", "(32, 16)", "(32, 32)",
          "a=(M, K)", "ta: Tile[float16, 32x16]")


def bad_pow2(z):
    t = tile.zeros((48, 32), tile.float32)    # <-
    z.store(t)


def test_non_power_of_two_tile_shape():
    check(bad_pow2, [P2], "power of two", "48")


def bad_store_shape(z, x):
    t = x.load((0, 0), (16, 32))
    z.store(t)    # <-


def test_store_shape_mismatch():
    check(bad_store_shape, [P2, T2], "store", "(16, 32)", "(32, 32)", "broadcast_to")


def bad_store_dtype(z, x):
    t = x.load((0, 0), (32, 32))
    z.store(t)    # <-


def test_store_dtype_mismatch():
    check(bad_store_dtype, [P2, T2H], "float16", "float32", ".astype(tile.float32)")


def bad_store_readonly(z, x):
    t = tile.load_tile_like(x, z)
    x.store(t)    # <-


def test_store_to_read_only_tensor():
    check(bad_store_readonly, [P1, T1], "read-only", "partition", "z.store(tile)",
          "tile.atomic(")


def bad_store_view_readonly(z, x):
    v = x.partition((64,))
    tile.store(v, (0,), tile.load_tile_like(x, z))    # <-


def test_store_to_view_of_read_only_tensor():
    check(bad_store_view_readonly, [P1, T1], "read-only", "tile.atomic(")


def bad_attribute(z, x):
    t = tile.load_tile_like(x, z)
    z.store(t.shap)    # <-


def test_unknown_attribute():
    check(bad_attribute, [P1, T1], "has no attribute 'shap'", "did you mean 'shape'",
          "t.shap")


def bad_function(z, x):
    t = tile.load_tile_like(x, z)
    z.store(tile.softmax(t))    # <-


def test_unknown_tile_function():
    check(bad_function, [P1, T1], "no kernel function or attribute 'softmax'")


def bad_arg_count(z):
    b = tile.bid()    # <-
    z.store(tile.zeros((64,), tile.float32) + b)


def test_wrong_argument_count():
    check(bad_arg_count, [P1], "tile.bid()", "missing a required argument: 'axis'")


def bad_nonconst_shape(z, n):
    t = tile.zeros((n, 64), tile.float32)    # <-
    z.store(t)


def test_non_constant_shape():
    check(bad_nonconst_shape, [P2, I64], "compile-time constant", "tile.Constant",
          "tile.zeros")


def bad_list(z):
    xs = [1, 2, 3]    # <-  # noqa: F841
    z.store(tile.zeros((64,), tile.float32))


def test_list_rejected():
    check(bad_list, [P1], "lists", exc=tile.UnsupportedError)


def bad_dict(z):
    d = {"a": 1}    # <-  # noqa: F841
    z.store(tile.zeros((64,), tile.float32))


def test_dict_rejected():
    check(bad_dict, [P1], "dicts", exc=tile.UnsupportedError)


def bad_closure(z):
    t = tile.zeros((64,), tile.float32) + tile.bid(0)
    def inner(a):    # <-
        return a + t
    z.store(inner(t))


def test_closure_over_a_runtime_value_rejected():
    check(bad_closure, [P1], "'inner' uses 't', a value computed at run time",
          "pass 't' as an argument", exc=tile.UnsupportedError)


def bad_lambda(z):
    t = tile.zeros((64,), tile.float32) + tile.bid(0)
    f = lambda a: a * t    # <-  # noqa: E731
    z.store(f(t))


def test_lambda_over_a_runtime_value_rejected():
    check(bad_lambda, [P1], "'lambda' uses 't'", exc=tile.UnsupportedError)


def bad_try(z):
    try:    # <-
        z.store(tile.zeros((64,), tile.float32))
    except Exception:
        pass


def test_try_rejected():
    check(bad_try, [P1], "try/except", "tile.assert_", exc=tile.UnsupportedError)


class _Ctx:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


CTX = _Ctx()


def bad_with(z):
    with CTX:    # <-
        z.store(tile.zeros((64,), tile.float32))


def test_with_rejected():
    check(bad_with, [P1], "with statements", exc=tile.UnsupportedError)


def bad_generator(z):
    yield tile.zeros((64,), tile.float32)    # <-


def test_generator_rejected():
    check(bad_generator, [P1], "generators", exc=tile.UnsupportedError)


@tile.function
def _recursive(t, n):
    return _recursive(t, n - 1)    # <-


def bad_recursion(z):
    z.store(_recursive(tile.zeros((64,), tile.float32), 3))


def test_recursion_rejected():
    with pytest.raises(tile.UnsupportedError) as info:
        type_kernel(bad_recursion, [P1])
    err = info.value
    assert "recursion" in str(err) and "_recursive" in str(err)
    assert err.loc.line == marked_line(_recursive.py_func)


def bad_print(z, x):
    print(x)    # <-
    z.store(tile.zeros((64,), tile.float32))


def test_print_of_non_tile():
    check(bad_print, [P1, T1], "print()", "tiles and scalars", "tile.printf")


def bad_merge_if(z, x, n):
    if n > 0:
        t = x.load((0,), (64,))
    else:
        t = x.load((0,), (32,))
    z.store(t)    # <-


def test_merge_of_different_tile_types_in_if():
    err = check(bad_merge_if, [P1, T1, I64], "variable 't'", "Tile[float32, 64]",
                "Tile[float32, 32]", "if/else")
    assert isinstance(err, tile.TypingError)


def bad_merge_loop(z, x, n):
    t = tile.zeros((64,), tile.float32)
    for i in range(n):    # <-
        t = t.astype(tile.float16)
    z.store(t.astype(tile.float32))


def test_merge_of_different_tile_types_across_iterations():
    check(bad_merge_loop, [P1, T1, I64], "variable 't'", "float16", "float32", "loop iteration")


def bad_axis(z, x):
    t = x.load((0, 0), (32, 32))
    z.store(tile.sum(t, axis=2))    # <-


def test_reduce_axis_out_of_range():
    check(bad_axis, [P1, T2], "axis 2 is out of bounds for a tile of rank 2")


def bad_dtypes(z, x, y):
    a = tile.load_tile_like(x, z)
    b = tile.load_tile_like(y, z)
    z.store((a + b).astype(tile.float32))    # <-


def test_mixing_incompatible_dtypes():
    check(bad_dtypes, [P1, ("tensor", "int64", 1, None, False),
                       ("tensor", "uint64", 1, None, False)],
          "incompatible dtypes", "int64", "uint64", ".astype")


def bad_fp8_math(z, x):
    a = tile.load_tile_like(x, z)
    z.store((a * 2.0).astype(tile.float32))    # <-


def test_arithmetic_on_storage_formats():
    check(bad_fp8_math, [P1, ("tensor", "float8_e4m3fn", 1, None, False)], "float8_e4m3fn",
          ".astype(tile.float32)")


def bad_bitwise(z, x):
    t = tile.load_tile_like(x, z)
    z.store(t & t)    # <-


def test_bitwise_on_floats():
    check(bad_bitwise, [P1, T1], "bitwise operator '&'", "floating-point", "(a > 0) & (b > 0)")


def bad_padding(z, x):
    t = x.load((0,), (64,), padding=0)    # <-
    z.store(t)


def test_bad_padding_mode():
    check(bad_padding, [P1, T1], "padding must be one of", "tile.PaddingMode.ZERO")


def bad_padding_enum(z, x):
    t = x.load((0,), (64,), padding=tile.RoundingMode.RN)    # <-
    z.store(t)


def test_padding_of_the_wrong_enum():
    check(bad_padding_enum, [P1, T1], "padding must be one of", "RoundingMode.RN")


def bad_range(z, x):
    t = tile.load_tile_like(x, z)
    for i in range(t.astype(tile.int32)):    # <-
        t = t + 1.0
    z.store(t)


def test_range_with_tile_bound():
    # a 0-d integer tile is a bound like a scalar (tests/test_python_features.py); others not
    check(bad_range, [P1, T1], "range() bounds must be integer scalars", "Tile[int32, 64]")


def bad_setitem(z, x):
    t = tile.load_tile_like(x, z)
    t[0] = 1.0    # <-
    z.store(t)


def test_assign_to_tile_element():
    check(bad_setitem, [P1, T1], "tiles are immutable", "tile.where")


def bad_return(z, x):
    t = tile.load_tile_like(x, z)
    return t    # <-


def test_returning_a_value():
    check(bad_return, [P1, T1], "cannot return values", "z.store", exc=tile.UnsupportedError)


def plain_helper(t):
    return t


def bad_plain_call(z, x):
    z.store(plain_helper(tile.load_tile_like(x, z)))    # <-


def test_calling_a_plain_python_function():
    check(bad_plain_call, [P1, T1], "'plain_helper' is a plain Python function",
          "@tile.function", exc=tile.UnsupportedError)


def bad_numpy(z, x):
    z.store(np.exp(tile.load_tile_like(x, z)))    # <-


def test_calling_numpy():
    check(bad_numpy, [P1, T1], "np.exp", "NumPy function", "tile.exp",
          exc=tile.UnsupportedError)


def bad_undefined(z, x, n):
    for i in range(n):
        t = tile.load_tile_like(x, z)
    z.store(t)    # <-


def test_possibly_undefined_variable():
    check(bad_undefined, [P1, T1, I64], "'t' may be used before it is assigned",
          "loop", exc=tile.TypingError, struct=True)


def bad_endless(z, x):
    t = tile.load_tile_like(x, z)
    while True:    # <-
        t = t + 1.0
    z.store(t)


def test_endless_loop():
    check(bad_endless, [P1, T1], "never exits", exc=tile.UnsupportedError, struct=True)


def bad_for_else(z, n):
    for i in range(n):    # <-
        pass
    else:
        pass
    z.store(tile.zeros((64,), tile.float32))


def test_for_else_rejected():
    check(bad_for_else, [P1, I64], "for ... else", exc=tile.UnsupportedError)


def bad_for_iter(z, x):
    for s in x.shape:    # <-
        pass
    z.store(tile.zeros((64,), tile.float32))


def test_for_over_a_tuple_rejected():
    check(bad_for_iter, [P1, T2], "range(", exc=tile.UnsupportedError)


def bad_static_assert(z, BM: tile.Constant[int]):
    tile.static_assert(BM <= 32, "BM must be at most 32")    # <-
    z.store(tile.zeros((64,), tile.float32))


def test_static_assert_failure():
    check(bad_static_assert, [P1], "static assertion failed: BM must be at most 32",
          constants={"BM": 64})


def bad_inplace(z, x):
    acc = tile.zeros((64,), tile.int32)
    acc += tile.load_tile_like(x, z)    # <-
    z.store(acc.astype(tile.float32))


def test_inplace_widening():
    check(bad_inplace, [P1, T1], "in-place '+='", "int32", "float32")


def bad_literal_range(z, x):
    t = tile.load_tile_like(x, z)
    z.store((t + 300).astype(tile.float32))    # <-


def test_constant_does_not_fit():
    check(bad_literal_range, [P1, ("tensor", "int8", 1, None, False)], "300", "does not fit in int8")


def bad_truth(z, x):
    t = tile.load_tile_like(x, z)
    if t > 0:    # <-
        t = t * 2.0
    z.store(t)


def test_truth_value_of_a_tile():
    check(bad_truth, [P1, T1], "truth value of a tile", "ambiguous", "tile.where")


def bad_atomic(z, x):
    tile.atomic_add(x, tile.arange(64), 1.0)    # <-
    z.store(tile.zeros((64,), tile.float32))


def test_atomic_on_read_only_tensor():
    check(bad_atomic, [P1, T1], "read-only", "tile.atomic(")


def bad_scatter(z, x):
    tile.scatter(x, tile.arange(64), tile.zeros((64,), tile.float32))    # <-
    z.store(tile.zeros((64,), tile.float32))


def test_scatter_and_atomics_need_a_writable_target():
    check(bad_scatter, [P1, T1], "cannot scatter into a read-only", "tile.atomic(")
    check(bad_atomic, [P1, T1], "cannot use atomic_add on a read-only")


def bad_mma_dtype(z, a, b):
    acc = tile.zeros((32, 32), tile.float16)
    acc = tile.mma(a.load((0, 0), (32, 32)), b.load((0, 0), (32, 32)), acc)    # <-
    z.store(acc.astype(tile.float32))


def test_mma_accumulator_dtype():
    check(bad_mma_dtype, [P2, ("tensor", "bfloat16", 2, None, False),
                          ("tensor", "bfloat16", 2, None, False)],
          "bfloat16 inputs need a float32 accumulator")


def bad_tensor_math(z, x):
    z.store(x + 1.0)    # <-


def test_arithmetic_on_a_tensor():
    check(bad_tensor_math, [P1, T1], "load a tile first", "x.load")


def test_missing_constant_value():
    def k(z, BM: tile.Constant[int]):
        z.store(tile.zeros((BM,), tile.float32))
    with pytest.raises(tile.TypingError, match="missing the value of constant parameter 'BM'"):
        type_kernel(k, [P1])


def test_wrong_number_of_keys():
    def k(z, x):
        pass
    with pytest.raises(tile.TypingError, match="2 non-constant parameter"):
        type_kernel(k, [P1])


def test_non_pow2_partition_key():
    def k(z):
        pass
    with pytest.raises(tile.TypingError, match="power of two"):
        type_kernel(k, [("partition", "float32", 1, None, (48,))])


def test_errors_are_short():
    """The condensed message fits in a few lines (no multi-page Numba dumps)."""
    with pytest.raises(tile.CompileError) as info:
        type_kernel(bad_mma, [P2, T2H, T2H])
    assert len(str(info.value).splitlines()) < 12


def test_operator_symbol_spells_operators_as_written():
    import operator
    from tilejit.typing.diagnostics import operator_symbol
    assert operator_symbol(operator.eq) == "=="
    assert operator_symbol(operator.le) == "<="
    assert operator_symbol(operator.ne) == "!="
    assert operator_symbol(operator.iadd) == "+"        # in-place reports as its binary form
    assert operator_symbol(operator.irshift) == ">>"
    assert operator_symbol(operator.imatmul) == "@="


def bad_plain_reducer(z, x):
    z.store(tile.reduce(tile.load_tile_like(x, z), 0, plain_helper, 0.0))    # <-


def test_passing_a_plain_python_function_as_a_combiner():
    err = check(bad_plain_reducer, [P1, T1], "'plain_helper' is a plain Python function",
                "@tile.function", exc=tile.UnsupportedError)
    assert "\x1b[" not in str(err)         # Numba's colour codes never reach the user


SOME_OBJECT = object()


def bad_global_object(z, x):
    z.store(tile.load_tile_like(x, z) + SOME_OBJECT)    # <-


def test_untypable_global_names_the_global_in_plain_text():
    err = check(bad_global_object, [P1, T1], "the global 'SOME_OBJECT'",
                "pass it as an argument or a tile.Constant parameter")
    assert "\x1b[" not in str(err)


def bad_float_string(z):
    z.store(tile.full(z.shape, float("one"), tile.float32))    # <-


def test_float_of_a_string_that_is_not_a_number():
    from tilejit.lowering.lower import lower_kernel
    with pytest.raises(tile.TypingError) as info:
        lower_kernel(structurize(type_kernel(bad_float_string, [P1], None)))
    assert "float('one'): the string is not a number" in str(info.value)
    assert info.value.loc.line == marked_line(bad_float_string)


def test_compile_error_traceback_stops_at_the_users_call(monkeypatch):
    import traceback
    from tilejit import api
    from tilejit.runtime import backend

    @tile.entry
    def bad_add(z, x):
        z.store(tile.load_tile_like(x, z) + "oops")

    def frames(err):
        return [f.filename for f in traceback.extract_tb(err.__traceback__)]

    with backend.force("simulator"):
        x = api.zeros((8,)).sync()
        with pytest.raises(tile.TypingError) as short:
            bad_add(api.zeros((8,)).sync().partition((8,)), x).sync()
        assert not any("typing" in f for f in frames(short.value))
        assert short.value.__cause__ is None and short.value.__suppress_context__
        monkeypatch.setenv("TILEJIT_FULL_TRACEBACK", "1")
        bad_add2 = tile.entry(bad_add.py_func)
        with pytest.raises(tile.TypingError) as full:
            bad_add2(api.zeros((8,)).sync().partition((8,)), x).sync()
        assert any("typing" in f for f in frames(full.value))
