"""Branches the specialization decides (argument dtype / ndim, a partition's tile shape) are
removed before typing, so each path may give variables its own tile types."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api

pytestmark = pytest.mark.usefixtures("simulator_backend")


def ones_and_zeros():
    """The tests' input (eight float32 ones) and output (eight zeros), on the device."""
    return api.from_numpy(np.ones(8, np.float32)).sync(), api.zeros((8,)).sync()


@tile.entry
def mm(c, a, b, BK: tile.Constant[int]):
    BM, BN = c.shape
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        ta = a.load((c.block[0], k), (BM, BK))
        tb = b.load((k, c.block[1]), (BK, BN))
        if a.dtype == tile.float32:
            ta, tb = ta.astype(tile.tfloat32), tb.astype(tile.tfloat32)
        acc = tile.mma(ta, tb, acc)
    c.store(acc.astype(c.dtype))


@pytest.mark.parametrize("dt", [tile.float16, tile.bfloat16, tile.float32])
def test_dtype_branch_gives_each_path_its_own_types(dt):
    rng = np.random.default_rng(0)
    an = rng.standard_normal((32, 48)).astype(np.float32)
    bn = rng.standard_normal((48, 32)).astype(np.float32)
    a = api.from_numpy(an.astype(dt.np_dtype)).sync()
    b = api.from_numpy(bn.astype(dt.np_dtype)).sync()
    c = api.zeros((32, 32), dt).sync()
    mm(c.partition((16, 16)), a, b, 16).sync()
    ref = an.astype(dt.np_dtype).astype(np.float32) @ bn.astype(dt.np_dtype).astype(np.float32)
    np.testing.assert_allclose(c.to_numpy().astype(np.float32), ref, rtol=2e-2, atol=5e-2)
    tir = mm.inspect_tileir(c.partition((16, 16)), a, b, 16)
    assert ("tf32" in tir) == (dt is tile.float32)


@tile.entry
def pick(z, x):
    t = tile.load_tile_like(x, z)
    if x.ndim == 2 and z.shape[0] >= 8:                 # `and`: two folded branches
        r = t * 2                                       # float tile
    elif x.dtype in (tile.int32, tile.int64):
        r = (t + 1).astype(tile.float32)
    else:
        r = (t > 0)                                     # a bool tile: another type entirely
    z.store(r.astype(z.dtype))


def test_ndim_tile_shape_membership_and_elif():
    x = api.from_numpy(np.arange(-8, 8, dtype=np.float32).reshape(2, 8)).sync()
    z = api.zeros((2, 8)).sync()
    pick(z.partition((8, 8)), x).sync()
    assert z.to_numpy().tolist() == (2 * x.to_numpy()).tolist()
    z2 = api.zeros((2, 8)).sync()
    pick(z2.partition((2, 8)), x).sync()                # tile of 2 rows: the else branch
    assert z2.to_numpy().tolist() == (x.to_numpy() > 0).astype(np.float32).tolist()
    xi = api.from_numpy(np.arange(16, dtype=np.int32)).sync()
    z3 = api.zeros((16,)).sync()
    pick(z3.partition((16,)), xi).sync()                # 1-D int: the elif branch
    assert z3.to_numpy().tolist() == list(range(1, 17))


def test_untaken_branch_is_not_typed_but_a_taken_one_is():
    @tile.entry
    def only_for_floats(z, x):
        t = tile.load_tile_like(x, z)
        if x.dtype == tile.int32:
            t = t + "not a number"                      # would not type
        z.store(t)

    x, z = ones_and_zeros()
    only_for_floats(z.partition((8,)), x).sync()
    assert z.to_numpy().tolist() == [1.0] * 8
    xi = api.from_numpy(np.ones(8, np.int32)).sync()
    zi = api.zeros((8,), tile.int32).sync()
    with pytest.raises(tile.TypingError, match="not a number"):
        only_for_floats(zi.partition((8,)), xi).sync()


def test_runtime_conditions_still_branch_at_run_time():
    @tile.entry
    def by_value(z, x, n):
        t = tile.load_tile_like(x, z)
        if n > 3:                                       # a runtime scalar: a real branch
            t = t * 10.0
        z.store(t)

    x, z = ones_and_zeros()
    by_value(z.partition((8,)), x, 5).sync()
    assert z.to_numpy().tolist() == [10.0] * 8
    by_value(z.partition((8,)), x, 1).sync()
    assert z.to_numpy().tolist() == [1.0] * 8
    assert "if " in by_value.inspect_tileir(z.partition((8,)), x, 1)


def test_unpacked_tile_shapes_or_and_and_conditional_values_fold():
    """``BM, BN = z.shape`` then a branch on BN folds (the gallery LayerNorm picks its statistics
    form this way), through ``or``/``and`` in the condition and through a conditional
    expression kept in a variable (its untaken side no longer counts): the untaken side of
    each branch would not type."""
    @tile.entry
    def by_width(z, x, MODE: tile.Constant[int] = -1):
        BM, BN = z.shape
        t = tile.load_tile_like(x, z)
        if MODE == 1 or (MODE == -1 and BN > 8):
            t = t * 2.0
        else:
            t = t + "not a number"                      # would not type
        wide = (BN > 8) if MODE == -1 else (MODE == 1)
        if wide:
            t = t + 1.0
        else:
            t = t + "not a number either"
        z.store(t)

    x = api.from_numpy(np.ones((2, 16), np.float32)).sync()
    z = api.zeros((2, 16)).sync()
    by_width(z.partition((2, 16)), x).sync()            # BN 16 > 8: wide
    assert z.to_numpy().tolist() == [[3.0] * 16] * 2
    by_width(z.partition((2, 8)), x, 1).sync()          # forced wide
    assert z.to_numpy().tolist() == [[3.0] * 16] * 2
    with pytest.raises(tile.TypingError, match="not a number"):
        by_width(z.partition((2, 8)), x).sync()         # BN 8: the narrow side, typed
    assert "if " not in by_width.inspect_tileir(z.partition((2, 16)), x)


@pytest.mark.parametrize("fast,width,doubled", [(False, 8, False), (True, 8, True),
                                                (False, 16, True), (True, 16, True)])
def test_or_and_and_kept_in_a_variable_fold(fast, width, doubled):
    """``use = BN > 8 or FAST`` kept in a variable: Python leaves the value in a phi assigned in
    two blocks, and the definition that reaches the ``if`` decides it (the untaken side of each
    branch would not type). ``and`` likewise."""
    @tile.entry
    def by_flags(z, x, FAST: tile.Constant[bool]):
        BM, BN = z.shape
        t = tile.load_tile_like(x, z)
        use = BN > 8 or FAST
        if use:
            t = t * 2.0
        else:
            t = t + "not a number"
        both = BN > 8 and FAST
        if both:
            t = t + 1.0
        else:
            t = t - 0.0
        z.store(t)

    x = api.from_numpy(np.ones((2, 16), np.float32)).sync()
    z = api.zeros((2, 16)).sync()
    if not doubled:
        with pytest.raises(tile.TypingError, match="not a number"):
            by_flags(z.partition((2, width)), x, FAST=fast).sync()
        return
    by_flags(z.partition((2, width)), x, FAST=fast).sync()
    assert z.to_numpy().tolist() == [[2.0 + (width > 8 and fast)] * 16] * 2
    assert "if " not in by_flags.inspect_tileir(z.partition((2, width)), x, FAST=fast)


def test_a_variable_reassigned_under_a_static_branch_folds():
    """``mode = 0; if FAST: mode = 1`` then ``if mode == 1``: the definition that reaches the
    second branch is known once the first has folded."""
    @tile.entry
    def by_mode(z, x, FAST: tile.Constant[bool]):
        t = tile.load_tile_like(x, z)
        mode = 0
        if FAST:
            mode = 1
        if mode == 1:
            t = (t * 2.0).astype(tile.float16)          # each side its own tile type
        z.store(t.astype(z.dtype))

    x, z = ones_and_zeros()
    by_mode(z.partition((8,)), x, FAST=True).sync()
    assert z.to_numpy().tolist() == [2.0] * 8
    by_mode(z.partition((8,)), x, FAST=False).sync()
    assert z.to_numpy().tolist() == [1.0] * 8


def test_definitions_that_a_runtime_branch_chooses_between_do_not_fold():
    """``w = 1; if n > 3: w = 2`` with ``n`` a runtime scalar: both definitions reach the use and
    disagree, so ``if w == 2`` stays a branch (its sides are both typed), and one reassigned in
    a loop stays unknown too; where the definitions agree the branch folds."""
    @tile.entry
    def chosen(z, x, n):
        t = tile.load_tile_like(x, z)
        w = 1
        if n > 3:
            w = 2
        if w == 2:
            t = t * 10.0
        k = 0
        for _ in range(n):
            k = 1
        if k == 1:
            t = t + 1.0
        same = 5
        if n > 3:
            same = 5
        if same == 5:
            t = t + 100.0
        else:
            t = t + "not a number"                      # folded away: never typed
        z.store(t)

    x, z = ones_and_zeros()
    chosen(z.partition((8,)), x, 5).sync()
    assert z.to_numpy().tolist() == [111.0] * 8
    chosen(z.partition((8,)), x, 0).sync()
    assert z.to_numpy().tolist() == [101.0] * 8
    # the runtime choices stay real branches: n > 3 twice, w == 2 and k == 1
    assert chosen.inspect_tileir(z.partition((8,)), x, 5).count(" if ") == 4


@pytest.mark.parametrize("rows,mode,reload", [(1, -1, False), (4, -1, True), (4, 0, False),
                                              (1, 1, True)])
def test_integer_arithmetic_on_constants_folds(rows, mode, reload):
    """``ROWS * BN >= 32`` (layernorm_fwd_persistent's RELOAD_WB=AUTO) is decided before typing:
    the untaken side is never typed."""
    @tile.entry
    def by_size(z, x, ROWS: tile.Constant[int], MODE: tile.Constant[int]):
        (BN,) = z.shape
        t = tile.load_tile_like(x, z)
        big = MODE == 1 or (MODE == -1 and ROWS * BN >= 32 and (ROWS * BN) // 4 % 8 == 0)
        if big:
            t = t * 2.0
        else:
            t = t + "not a number"
        z.store(t)

    x, z = ones_and_zeros()
    if not reload:
        with pytest.raises(tile.TypingError, match="not a number"):
            by_size(z.partition((8,)), x, ROWS=rows, MODE=mode).sync()
        return
    by_size(z.partition((8,)), x, ROWS=rows, MODE=mode).sync()
    assert z.to_numpy().tolist() == [2.0] * 8
    assert " if " not in by_size.inspect_tileir(z.partition((8,)), x, ROWS=rows, MODE=mode)


def test_integer_arithmetic_that_int64_or_floor_rules_could_change_does_not_fold():
    """Python's unbounded ints and its floor division of negatives are not the kernel's: such
    results leave the branch alone (both sides typed)."""
    from tilejit.typing.static_branches import _UNKNOWN, _int_op
    import operator
    assert _int_op(operator.mul, 1 << 62, 4) is _UNKNOWN
    assert _int_op(operator.floordiv, -7, 2) is _UNKNOWN
    assert _int_op(operator.mod, 7, 0) is _UNKNOWN
    assert _int_op(operator.lshift, 1, 64) is _UNKNOWN
    assert _int_op(operator.add, 1.5, 2) is _UNKNOWN
    assert _int_op(operator.mul, 4, 8192) == 32768 and _int_op(operator.floordiv, 7, 2) == 3

    @tile.entry
    def huge(z, x, K: tile.Constant[int]):
        t = tile.load_tile_like(x, z)
        if K * K > 0:
            t = t * 2.0
        else:
            t = t + "not a number"
        z.store(t)

    x, z = ones_and_zeros()
    huge(z.partition((8,)), x, K=3).sync()
    assert z.to_numpy().tolist() == [2.0] * 8
    with pytest.raises(tile.TypingError, match="not a number"):
        huge(z.partition((8,)), x, K=1 << 40).sync()        # K * K overflows int64
