"""Calling a dtype converts (issue 44, cuTile's ``ct.float32(x)``): a constant becomes a value of
that dtype as a C cast makes it (``uint32(-1)`` wraps, ``bool_(5)`` is True), not a weak Python
number, so ``~tile.uint32(3)`` is computed in uint32; a run-time scalar or a tile is cast."""
import numpy as np
import pytest

import tilejit as tile
import tilejit.cutile as ct
from tilejit import api

pytestmark = pytest.mark.usefixtures("simulator_backend")


@ct.kernel
def _conversions(x, f: float):
    ct.scatter(x, 0, ct.int64(~ct.uint32(3)))
    ct.scatter(x, 1, ct.int64(-ct.uint32(3)))
    ct.scatter(x, 2, ct.int64(ct.bool_(5)))
    ct.scatter(x, 3, ct.int64(ct.bool_(-3)))
    ct.scatter(x, 4, ct.int64(ct.float32(2.75) * 2))
    ct.scatter(x, 5, ct.int64(ct.sum(ct.int32(ct.full((4,), 1.5, dtype=ct.float32)))))
    ct.scatter(x, 6, ct.int64(ct.int8(f)))


def test_dtype_calls():
    x = api.zeros((7,), tile.int64).sync()
    ct.launch(tile.Device(0).new_stream(), (1,), _conversions, (tile.atomic(x), -7.9))
    assert x.to_numpy().tolist() == [0xfffffffc, 0xfffffffd, 1, 1, 5, 4, -7]


@tile.entry
def _entry(z, x):
    z.store(tile.float16(x.load((0,), (8,))) * tile.float16(0.5))


def test_tile_conversion_in_the_tilejit_front_end():
    x = np.arange(8, dtype=np.float32)
    z = api.zeros((8,), tile.float16).sync()
    _entry(z.partition((8,)), x).sync()
    assert np.array_equal(z.to_numpy(), (x * 0.5).astype(np.float16))


# --- divmod and Tile.item (cuTile's spellings, both front ends) -----------------------------------
@ct.kernel
def _divmod(x, a: int, b: int):
    q, r = divmod(a, b)
    ct.scatter(x, 0, q)
    ct.scatter(x, 1, r)
    q2, r2 = ct.divmod(ct.arange(4, dtype=ct.int32) - 2, 3)
    ct.store(x, index=(1,), tile=q2 * 10 + r2)
    ct.scatter(x, 2, ct.full((1, 1), 9, dtype=ct.int32).item())


def test_divmod_and_item():
    x = api.zeros((8,), tile.int32).sync()
    ct.launch(tile.Device(0).new_stream(), (1,), _divmod, (tile.atomic(x), -7, 2))
    want = [*divmod(-7, 2), 9, 0] + [q * 10 + r for q, r in (divmod(i - 2, 3) for i in range(4))]
    assert x.to_numpy().tolist() == want


def test_item_of_a_tile_of_several_elements_is_refused():
    @tile.entry
    def k(z):
        tile.scatter(z, 0, tile.zeros((4,), tile.float32).item())

    z = api.zeros((1,), tile.float32).sync()
    with pytest.raises(tile.TypingError, match=r"item\(\): Cannot reshape \(4,\) to \(\)"):
        k(tile.atomic(z)).grid((1, 1, 1)).sync()


@ct.kernel
def _narrow_constants(x):
    ct.scatter(x, 0, ct.float16(0.2))
    ct.scatter(x, 1, ct.float64(ct.float8_e8m0fnu(0.2)))     # rounds to the power of two 0.25
    ct.scatter(x, 2, ct.float64(ct.bfloat16(0.2)))
    ct.scatter(x, 3, ct.float64(ct.float8_e4m3fn(0.2)))


def test_constants_of_dtypes_without_a_scalar_type_are_zero_d_tiles():
    """cuTile's ``test_strictly_typed_float_constant_rounding``: bfloat16 and float8 calls on a
    constant were internal errors (no Numba scalar for those dtypes)."""
    import ml_dtypes
    x = np.zeros(4, np.float64)
    ct.launch(tile.Device(0).new_stream(), (1,), _narrow_constants, (tile.atomic(x),))
    tile.Device(0).synchronize()
    assert x.tolist() == [float(np.float16(0.2)), 0.25, float(ml_dtypes.bfloat16(0.2)),
                          float(ml_dtypes.float8_e4m3fn(0.2))]


def test_a_negative_e8m0_constant_is_refused():
    @ct.kernel
    def k():
        ct.float8_e8m0fnu(-0.2)

    with pytest.raises(ct.TileValueError, match="Negative values cannot be represented"):
        ct.launch(tile.Device(0).new_stream(), (1,), k, ())


# --- a dtype called with no value is its zero (cuTile's test_full value calls) --------------------
@tile.entry
def _zeros_entry(f, i, b):
    tile.store(f, (0,), tile.full((4,), np.float16(), np.float16) + tile.float16(tile.float32()))
    ones = tile.int32(tile.int64(~tile.uint32()))          # 0xffffffff, computed in uint32
    tile.store(i, (0,), tile.full((4,), np.int32(), np.int32) + ones)
    tile.store(b, (0,), tile.full((4,), np.bool_(), np.bool_) | tile.full((4,), tile.bool_(),
                                                                           tile.bool_))


@ct.kernel
def _zeros_ct(f, h, i, b):
    ct.store(f, index=(0,), tile=ct.full((4,), np.float32(), np.float32))
    ct.store(h, index=(0,), tile=ct.full((4,), ct.bfloat16(), ct.bfloat16).astype(ct.float32))
    ct.store(i, index=(0,), tile=ct.full((4,), np.int8(), np.int8) + ct.int8())
    ct.store(b, index=(0,), tile=ct.full((4,), ct.bool_(), ct.bool_))


def test_a_dtype_called_with_no_value_is_its_zero():
    """``np.float16()`` is NumPy's zero of that type and ``ct.float32()`` cuTile's: typed as the
    call of 0 (``~tile.uint32()`` is computed in uint32)."""
    f, i, b = np.ones(4, np.float16), np.ones(4, np.int32), np.ones(4, np.bool_)
    _zeros_entry(tile.atomic(f), tile.atomic(i), tile.atomic(b)).grid((1, 1, 1)).sync()
    assert f.tolist() == [0.0] * 4 and i.tolist() == [-1] * 4 and b.tolist() == [False] * 4
    f, h = np.ones(4, np.float32), np.ones(4, np.float32)
    i8, b = np.ones(4, np.int8), np.ones(4, np.bool_)
    ct.launch(tile.Device(0).new_stream(), (1,), _zeros_ct,
              (tile.atomic(f), tile.atomic(h), tile.atomic(i8), tile.atomic(b)))
    tile.Device(0).synchronize()
    assert f.tolist() == h.tolist() == [0.0] * 4
    assert i8.tolist() == [0] * 4 and b.tolist() == [False] * 4


# --- ct.full converts a float into an integer dtype (cuTile's test_scalar_mod) -------------------
@ct.kernel
def _full_of_floats(z, f: float, F: ct.Constant[float]):
    ct.store(z, index=(0,), tile=ct.full((2,), f, dtype=z.dtype))
    ct.store(z, index=(1,), tile=ct.full((2,), F, dtype=z.dtype))


def test_cutile_full_converts_a_float_into_an_integer_dtype():
    """cuTile's full casts a run-time float (astype) and converts a constant as ``int()`` does;
    tilejit's own ``tile.full`` asks for the conversion."""
    z = np.zeros(4, np.int32)
    ct.launch(tile.Device(0).new_stream(), (1,), _full_of_floats,
              (tile.atomic(z), -7.9, 2.0 ** 33 + 5.5))
    tile.Device(0).synchronize()
    assert z.tolist() == [-7, -7, 5, 5]

    @tile.entry
    def k(z, f: float):
        tile.store(z, (0,), tile.full((2,), f, tile.int32))

    with pytest.raises(tile.TypingError, match=r"does not convert implicitly to int32"):
        k(tile.atomic(z), 1.5).grid((1, 1, 1)).sync()
