"""Random numbers in kernels (issue 25 item 1): ``randint4x``/``randint``/``rand``/``randn`` are
Philox-4x32-10, the same stream as ``api.rand``/``api.randn`` for the same seed and offsets, and
enough for Triton's low-memory dropout tutorial (on the simulator)."""
import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.toolchain import tileiras

import random_cases as C

pytestmark = pytest.mark.usefixtures("simulator_backend")


def test_known_answer_of_philox_4x32_10():
    # Random123's known-answer vector for counter 0 and key 0
    assert [int(w[0]) for w in C.philox_ref(0, [0])] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C,
                                                          0x9B00DBD8]
    z = [api.zeros((16,), tile.uint32).sync() for _ in range(4)]
    offs = api.from_numpy(np.zeros(16, np.int32)).sync()
    C.words(*(t.partition((16,)) for t in z), 0, offs).sync()
    assert [int(t.to_numpy()[0]) for t in z[:3]] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C]
    assert int(z[3].to_numpy()[0]) == 0x9B00DBD8 ^ 0x6627E8D5 ^ 0x6627E8D5


@pytest.mark.parametrize("seed", [0, 7, 2 ** 40 + 3, np.uint64(2 ** 64 - 1), np.int64(-5)])
@pytest.mark.parametrize("odt", [np.int32, np.uint64, np.int64])
def test_words_match_a_numpy_philox(seed, odt):
    rng = np.random.default_rng(1)
    offs = rng.integers(0, 2 ** 31 if odt is np.int32 else 2 ** 62, 4096).astype(odt)
    if odt is np.int64:
        offs[:4] = [-1, -2 ** 40, 2 ** 33 + 5, 0]            # 64-bit offsets, two's complement
    z = [api.zeros((4096,), tile.uint32).sync() for _ in range(4)]
    C.words(*(t.partition((1024,)) for t in z), seed, api.from_numpy(offs).sync()).sync()
    ref = C.philox_ref(int(np.uint64(np.int64(seed)) if isinstance(seed, np.int64) else seed),
                       offs)
    for got, want in zip([t.to_numpy() for t in z[:3]], ref[:3]):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(z[3].to_numpy(), ref[3])


@pytest.mark.parametrize("seed", [0, 99, np.uint64(2 ** 63 + 12345), np.uint64(2 ** 64 - 1)])
def test_rand_and_randn_are_the_api_stream(seed):
    u, g = C.draw(seed, 4096)
    np.testing.assert_array_equal(u, api.rand((4096,), seed=int(seed)).sync().to_numpy())
    np.testing.assert_array_equal(g, api.randn((4096,), seed=int(seed)).sync().to_numpy())
    assert 0 <= u.min() and u.max() < 1
    w0 = C.philox_ref(int(seed), np.arange(4096))[0]
    np.testing.assert_array_equal(u, (w0 >> 8).astype(np.float32) * np.float32(2.0 ** -24))


def test_randn_statistics():
    _, g = C.draw(2024, 1 << 16)
    assert abs(g.mean()) < 0.02 and abs(g.std() - 1) < 0.02
    assert np.isfinite(g).all()


def test_scalar_offsets_and_shapes():
    @tile.entry
    def k(z, seed):
        i = tile.bid(0)
        r = tile.rand(seed, i * 32)                     # a scalar offset: a scalar
        grid = tile.arange(4)[:, None] * 8 + tile.arange(8)[None, :] + i * 32
        z.store(tile.where(grid == i * 32, r, tile.rand(seed, grid)))
    z = api.zeros((8, 8)).sync()
    k(z.partition((4, 8)), 5).sync()
    np.testing.assert_array_equal(z.to_numpy().ravel(), api.rand((64,), seed=5).sync().to_numpy())


def test_low_memory_dropout_tutorial():
    C.check_dropout(1 << 14)


@pytest.mark.parametrize("call,match", [
    ("tile.rand(1.5, tile.arange(16))", "seed must be an integer"),
    ("tile.randn(s, tile.arange(16).astype(tile.float32))", "offsets must be an integer"),
    ("tile.randint(s, z)", "offsets must be an integer"),
])
def test_refusals(call, match):
    src = ("import tilejit as tile\n@tile.entry\ndef k(z, s):\n"
           f"    z.store(({call}).astype(tile.float32))\n")
    ns = {}
    exec(compile(src, "<random>", "exec"), ns)
    z = api.zeros((16,)).sync()
    with pytest.raises(tile.TypingError, match=match):
        ns["k"](z.partition((16,)), 3).sync()


@pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")
def test_tileiras_accepts_the_random_functions(monkeypatch):
    monkeypatch.setenv("TILEJIT_CACHE_DIR", "0")
    u, g = api.zeros((1024,)).sync(), api.zeros((1024,)).sync()
    cubin = C.uniform_normal.compile(u.partition((256,)), g.partition((256,)), 3, 256,
                                     arch="sm_90")
    assert cubin[:4] == b"\x7fELF"
    z = [api.zeros((256,), tile.uint32).sync() for _ in range(4)]
    offs = api.zeros((256,), tile.int64).sync()
    assert C.words.compile(*(t.partition((256,)) for t in z), 3, offs, arch="sm_90")[:4] == \
        b"\x7fELF"


@pytest.mark.parametrize("seed", [-1, -(2 ** 63), 2 ** 64])
def test_a_constant_seed_out_of_range_is_a_compile_error(seed):
    """api.rand takes seeds in [0, 2**64); a kernel's constant seed is held to the same."""
    with pytest.raises(ValueError, match=r"seed must be in \[0, 2\*\*64\)"):
        api.rand((16,), seed=seed)
    import linecache
    src = f"@tile.entry\ndef k(u):\n    u.store(tile.rand({seed}, tile.arange(16)))\n"
    fn = f"<seed {seed}>"
    linecache.cache[fn] = (len(src), None, src.splitlines(True), fn)
    g = {"tile": tile}
    exec(compile(src, fn, "exec"), g)
    u = api.zeros((16,)).sync()
    with pytest.raises(tile.TypingError, match=rf"tile.rand: seed {seed} is out of range: seeds "
                                               rf"are ints in \[0, 2\*\*64\), as in api.rand"):
        g["k"](u.partition((16,))).sync()


def test_a_negative_seed_argument_is_refused_at_the_call():
    with pytest.raises(OverflowError, match="Python integer -1 out of bounds for uint64"):
        C.draw(-1, 1024)
    top = 2 ** 64 - 1                # the largest seed: a Python int beyond int64 travels too
    u, _ = C.draw(top, 1024)
    np.testing.assert_array_equal(u, api.rand((1024,), seed=top).sync().to_numpy())
    u, _ = C.draw(5, 1024)
    np.testing.assert_array_equal(u, api.rand((1024,), seed=5).sync().to_numpy())
