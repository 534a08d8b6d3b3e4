"""Tuples of arrays as one kernel argument (issue 25 item 1) on the simulator: indexed by a
constant, walked with ``static_iter``, indexed at run time (read and written), mixed with
scalars and NumPy arrays; the key, the aliasing check and the refusals; prepared launches of
tuples (issue 25: t08's grouped GEMM)."""
import gc
import weakref

import numpy as np
import pytest

import tilejit as tile
from tilejit import api
from tilejit.keys import TupleKey
from tilejit.runtime import argspec
from tilejit.toolchain import tileiras

import tuple_arg_cases as C

pytestmark = pytest.mark.usefixtures("simulator_backend")
ARRS = [np.full((8, 16), i + 1, np.float32) for i in range(3)]


@tile.entry
def sums(z, xs, n):
    acc = tile.zeros((8, 16), tile.float32)
    for x in tile.static_iter(xs):
        acc = acc + x.load((0, 0), (8, 16))
    acc = acc + xs[1].load((0, 0), (8, 16)) * 10
    for i in range(n):
        acc = acc + xs[i].load((0, 0), (8, 16)) * 100
    z.store(acc)


@pytest.mark.parametrize("form", ["tensors", "numpy"])
def test_constant_static_iter_and_runtime_indices(form):
    xs = tuple(api.from_numpy(a).sync() for a in ARRS) if form == "tensors" else tuple(ARRS)
    z = api.zeros((8, 16)).sync()
    for n, extra in ((3, 600), (2, 300), (0, 0)):
        sums(z.partition((8, 16)), xs, n).sync()
        np.testing.assert_array_equal(z.to_numpy(), np.full((8, 16), 6 + 20 + extra))


def test_tuples_of_scalars_and_mixed_tuples():
    @tile.entry
    def k(z, p, i):
        x, w, scale = p                      # a tensor, a 0-d scale, a number
        z.store(x.load((0, 0), (8, 16)) * scale + (1.0, 2.0, 3.0)[1] + (10, 20, 30)[i] * 0)
    z = api.zeros((8, 16)).sync()
    k(z.partition((8, 16)), (ARRS[2], ARRS[0], 0.5), 1).sync()
    np.testing.assert_array_equal(z.to_numpy(), np.full((8, 16), 3.5))

    @tile.entry
    def pick(z, vals, i):
        z.store(tile.full((4,), vals[i], tile.float32))
    z = api.zeros((4,)).sync()
    pick(z.partition((4,)), (1.5, 2.5, 4.5), 2).sync()
    np.testing.assert_array_equal(z.to_numpy(), [4.5] * 4)


def test_grouped_gemm_writes_through_a_runtime_index():
    got, want = C.run_grouped_gemm([40, 64, 17, 96])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-2, atol=1e-2)


def test_all_gather_matmul_over_shards_of_different_sizes():
    got, want = C.run_all_gather_matmul([64, 32, 96])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_the_key_merges_facts_and_the_signature_shows_the_tuple():
    xs = (api.from_numpy(ARRS[0]).sync(), api.from_numpy(np.ones((9, 16), np.float32)).sync())
    z = api.zeros((8, 16)).sync()
    sums(z.partition((8, 16)), xs, 1).sync()
    keys, _, _ = sums._keys_for((z.partition((8, 16)), xs, 1))
    tk = keys[1]
    assert isinstance(tk, TupleKey) and len(tk.items) == 2
    assert tk.items[0].facts == tk.items[1].facts          # merged: one type for xs[i]
    assert tk.items[0].facts.shape_div[0] == 1             # 9 rows: nothing divides
    item = tk.items[0].describe()                          # with its (merged) facts
    assert item.startswith("tensor float32 2-d")
    assert tk.describe() == f"tuple ({item}, {item})"


def test_an_output_aliasing_a_tuple_element_is_refused():
    t = api.from_numpy(np.zeros((8, 16), np.float32)).sync()
    with pytest.raises(tile.TensorError, match=r"xs\[1\]"):
        sums(t.partition((8, 16)), (api.from_numpy(ARRS[0]).sync(), t), 1).sync()


def test_refusals():
    z = api.zeros((8, 16)).sync()
    other = api.zeros((8, 16)).sync()
    with pytest.raises(TypeError, match="pass partitions"):
        sums(z.partition((8, 16)), (other.partition((8, 16)),), 1).sync()

    @tile.entry
    def mixed(z, xs, i):
        z.store(xs[i].load((0, 0), (8, 16)))
    with pytest.raises(tile.TypingError, match="constant"):
        mixed(z.partition((8, 16)), (ARRS[0], ARRS[0].astype(np.float16)), 0).sync()


def test_a_prepared_grouped_gemm_is_reusable_and_matches_the_unprepared_launch():
    p, got, want, unprepared = C.run_t08_prepared([64, 32, 96])
    for (g1, g2), (w1, w2), u in zip(got, want, unprepared):
        np.testing.assert_allclose(g1, w1, rtol=1e-2, atol=2e-2)
        np.testing.assert_allclose(g2, w2, rtol=1e-2, atol=2e-2)   # the rewritten inputs
        np.testing.assert_array_equal(g2, u)
    with pytest.raises(tile.LaunchError, match="closed"):
        p.launch()


def test_a_prepared_tuple_launch_packs_its_elements_once_and_close_lets_them_go():
    xs = tuple(api.from_numpy(a).sync() for a in ARRS)
    z = api.zeros((8, 16)).sync()
    refs = [weakref.ref(x) for x in xs]
    p = sums(z.partition((8, 16)), xs, 2).prepare()
    assert p.infos[1].key == argspec.classify(xs).key
    flat = sum(((x.device_pointer,) + x.shape + x.strides for x in xs), ())
    assert p.params[-len(flat) - 1:-1] == flat and p.params[-1] == 2
    assert all(any(st is x.storage for st in p._storages) for x in xs)
    for _ in range(2):
        p.launch()
    p.stream.synchronize()
    np.testing.assert_array_equal(z.to_numpy(), np.full((8, 16), 6 + 20 + 300))
    del xs
    gc.collect()
    assert all(r() is not None for r in refs)           # the prepared launch holds them
    p.close()
    gc.collect()
    assert all(r() is None for r in refs)               # released by close()
    z.partition((8, 16)).unpartition()                  # and the partition's lease


def test_prepare_names_the_argument_copied_per_launch():
    T = C.t08()
    As = tuple(api.from_numpy(np.ones((32, 32), np.float16)).sync() for _ in range(2))
    Cs = tuple(tile.atomic(api.zeros((32, 32), tile.float16).sync()) for _ in range(2))
    host = np.ones((32, 32), np.float16)
    with pytest.raises(tile.LaunchError, match=r"element 1 of the tuple `Bs` is a NumPy array, "
                       r"copied per launch.*api.from_numpy\(array\).sync\(\) once"):
        T.grouped_gemm(As, (As[0], host), Cs, 32, 32, 32).grid((3, 1, 1)).prepare()
    with pytest.raises(tile.LaunchError, match=r"element 0 of the tuple `Cs` is tile.atomic of a "
                       r"NumPy array.*pass tile.atomic\(t\).*\.to_numpy\(\)"):
        T.grouped_gemm(As, As, (tile.atomic(host.copy()), Cs[1]), 32, 32, 32) \
            .grid((3, 1, 1)).prepare()
    z = api.zeros((8, 16)).sync()
    with pytest.raises(tile.LaunchError, match=r"argument `xs` is a DeviceOp"):
        sums(z.partition((8, 16)), api.zeros((8, 16)), 1).prepare()
    z.partition((8, 16)).unpartition()                  # the refusals took no lease


@pytest.mark.skipif(not tileiras.available(), reason="tileiras is not installed")
def test_tileiras_accepts_tuple_arguments(monkeypatch):
    monkeypatch.setenv("TILEJIT_CACHE_DIR", "0")
    xs = tuple(api.from_numpy(a).sync() for a in ARRS)
    z = api.zeros((8, 16)).sync()
    assert sums.compile(z.partition((8, 16)), xs, 3, arch="sm_90")[:4] == b"\x7fELF"
    As = tuple(api.zeros((64, 64), tile.float16).sync() for _ in range(2))
    Cs = tuple(tile.atomic(api.zeros((64, 64)).sync()) for _ in range(2))
    d = api.zeros((4,), tile.int32).sync()
    assert C.grouped_gemm.compile(d.partition((1,)), As, As, Cs, api.zeros((3,), tile.int32)
                                  .sync(), 32, 32, 32, arch="sm_90")[:4] == b"\x7fELF"
