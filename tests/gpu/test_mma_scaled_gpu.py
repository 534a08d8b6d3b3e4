"""Block-scaled matmul on the device (issue 25 item 1). Hopper has no block-scaled tensor cores
and its Tile IR no float4 / e8m0 types, so this runs tilejit's emulation (tf32 products of the
exactly scaled inputs, docs/language/reference.md); on a Blackwell GPU the same tests run
Tile IR's mmaf_scaled."""
import ml_dtypes
import numpy as np
import pytest

import tilejit as tile
from tilejit import api

import mma_scaled_cases as C

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("idt,sdt,block", C.FORMATS, ids=C.IDS)
def test_block_scaled_matmul_on_the_device(idt, sdt, block):
    # 16 x 16 = 256 output tiles, a K loop of 8 steps
    C.check(idt, sdt, block, m=1024, n=1024, k=512, bm=64, bn=64, bk=64, seed=3)


def test_float4_and_e8m0_conversions_on_the_device():
    @tile.entry
    def k(z4, z8, x):
        t = tile.load_tile_like(x, z4)
        z4.store(t.astype(tile.float4_e2m1fn))
        z8.store(t.astype(tile.float8_e8m0fnu, rounding_mode=tile.RoundingMode.RP))
    x = (np.random.default_rng(1).standard_normal(1 << 20) * 4).astype(np.float32)
    x = np.abs(x) + np.float32(1e-3)                     # e8m0 needs positive values
    z4 = api.zeros(x.shape, tile.float4_e2m1fn).sync()
    z8 = api.zeros(x.shape, tile.float8_e8m0fnu).sync()
    k(z4.partition((1024,)), z8.partition((1024,)), api.from_numpy(x).sync()).sync()
    np.testing.assert_array_equal(z4.to_numpy().view(np.uint8),
                                  x.astype(ml_dtypes.float4_e2m1fn).view(np.uint8))
    m, e = np.frexp(x.astype(np.float64))
    np.testing.assert_array_equal(z8.to_numpy().view(np.uint8), e - 1 + (m != 0.5) + 127)
