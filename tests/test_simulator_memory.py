"""Simulator: tensor/partition views (padding, masking, dim_map), pointer gathers/scatters,
atomics with duplicate addresses, and memory faults."""
import ml_dtypes
import numpy as np
import pytest

from tilejit.simulator import SimulatorError, SimulatorMemoryError
from tilejit.tileir import I32, I64, Module, ptr, tile
from simulator_helpers import NP, UNSIGNED, fn, random_tile, run, xchg_order_module


def copy_kernel(elem, tile_shape, rank, dim_map=None, padding=None, index_elem="i32"):
    """dst[tile] = src[tile] + 0 for every tile; shape and strides are runtime values."""
    it = {"i32": I32, "i64": I64}[index_elem]
    f, b = fn("copy", [ptr(elem)] + [it] * (2 * rank) + [ptr(elem)] + [it] * (2 * rank))
    src, dst = f.args[0], f.args[1 + 2 * rank]

    def view(p, dims):
        tv = b.make_tensor_view(p, dims[:rank], dims[rank:])
        return b.make_partition_view(tv, tile_shape, dim_map=dim_map, padding=padding)
    vs = view(src, f.args[1:1 + 2 * rank])
    vd = view(dst, f.args[2 + 2 * rank:])
    bid = list(b.get_tile_block_id())[:rank]
    ids = [b.exti(i, "i64", True) if index_elem == "i64" else i for i in bid]
    t, tok = b.load_view_tko(vs, ids)
    b.store_view_tko(t, vd, ids, token=tok)
    b.return_()
    return Module("copy", [f])


def _grid(shape, tile_shape, dim_map):
    dm = dim_map or tuple(range(len(shape)))
    g = [-(-shape[d] // t) for t, d in zip(tile_shape, dm)]
    return tuple(g) + (1,) * (3 - len(g))


@pytest.mark.parametrize("elem,padding", [
    (e, p) for e in ("f32", "f16", "bf16", "f64", "i8", "i16", "i64", "i1", "f8E4M3FN")
    for p in (None, "zero", "nan", "neg_inf") if e[0] == "f" or p in (None, "zero")])
def test_partial_tiles_pad_loads_and_mask_stores(dev, elem, padding):
    shape, ts = (37, 53), (16, 32)
    x = random_tile(elem, shape, 1)
    store = np.uint8 if elem == "i1" else NP[elem]
    src = dev.put(x.astype(store))
    sentinel = np.full((48, 64), 7, store)
    dst = dev.put(sentinel)                       # a larger buffer: the view is its top-left part
    run(copy_kernel(elem, ts, 2, padding=padding), _grid(shape, ts, None),
        [src, *shape, shape[1], 1, dst, *shape, 64, 1])
    got = dev.get(dst, (48, 64), store)
    np.testing.assert_array_equal(got[:37, :53], x.astype(store))
    assert (got[37:, :] == 7).all() and (got[:, 53:] == 7).all()   # masked stores


@pytest.mark.parametrize("padding,value", [(None, 0.0), ("zero", 0.0), ("neg_zero", -0.0),
                                           ("nan", np.nan), ("pos_inf", np.inf),
                                           ("neg_inf", -np.inf)])
def test_padding_values(dev, padding, value):
    n, t = 5, 8
    f, b = fn("pad", [ptr("f32"), I32, ptr("f32")])
    tv = b.make_tensor_view(f.args[0], [f.args[1]], [1])
    x, _ = b.load_view_tko(b.make_partition_view(tv, (t,), padding=padding), [b.constant(0, I32)])
    dv = b.make_partition_view(b.make_tensor_view(f.args[2], [t], [1]), (t,))
    b.store_view_tko(x, dv, [b.constant(0, I32)])
    b.return_()
    data = random_tile("f32", n, 2)
    out = dev.empty((t,), np.float32)
    run(Module("pad", [f]), (1, 1, 1), [dev.put(data), n, out])
    got = dev.get(out, (t,), np.float32)
    np.testing.assert_array_equal(got[:n], data)
    np.testing.assert_array_equal(got[n:], np.full(t - n, value, np.float32))
    assert (np.signbit(got[n:]) == np.signbit(np.float32(value))).all()


def test_dim_map_transposes_tiles(dev):
    # tile dim 0 walks tensor dim 1: loading tile (i, j) == default load (j, i) permuted
    shape = (24, 40)
    x = random_tile("f32", shape, 3)
    f, b = fn("t", [ptr("f32"), ptr("f32")])
    bx, by, _ = b.get_tile_block_id()
    sv = b.make_partition_view(b.make_tensor_view(f.args[0], list(shape), [shape[1], 1]), (16, 8),
                               dim_map=(1, 0), padding="zero")
    dv = b.make_partition_view(b.make_tensor_view(f.args[1], [shape[1], shape[0]],
                                                  [shape[0], 1]), (16, 8))
    t, _ = b.load_view_tko(sv, [bx, by])
    b.store_view_tko(t, dv, [bx, by])
    b.return_()
    out = dev.put(np.zeros((40, 24), np.float32))
    run(Module("t", [f]), (3, 3, 1), [dev.put(x), out])
    np.testing.assert_array_equal(dev.get(out, (40, 24), np.float32), x.T)


def test_index_space_shape_and_3d_strided_views(dev):
    shape, ts = (5, 9, 12), (2, 4, 8)
    big = random_tile("i32", (6, 10, 30), 4)          # the view takes every other column
    src = dev.put(big)
    dst = dev.put(np.zeros(shape, np.int32))
    run(copy_kernel("i32", ts, 3, index_elem="i64"), _grid(shape, ts, None),
        [src, *shape, 300, 30, 2, dst, *shape, 108, 12, 1])
    np.testing.assert_array_equal(dev.get(dst, shape, np.int32), big[:5, :9, :24:2])

    f, b = fn("q", [ptr("i32"), ptr("f32"), I32, I32])
    tv = b.make_tensor_view(f.args[1], [f.args[2], f.args[3]], [f.args[3], 1])
    pv = b.make_partition_view(tv, (16, 4), dim_map=(1, 0))
    dims = list(b.get_tensor_shape(tv, "i64")) + list(b.get_index_space_shape(pv))
    vals = [b.reshape(b.exti(d, "i64", True) if d.type.element == "i32" else d, (1,)) for d in dims]
    cat = b.cat(b.cat(vals[0], vals[1], 0), b.cat(vals[2], vals[3], 0), 0)
    out = b.trunci(cat, "i32")
    base = b.broadcast(b.reshape(f.args[0], (1,)), (4,))
    b.store_ptr_tko(b.offset(base, b.iota(tile("i32", (4,)))), out)
    b.return_()
    o = dev.empty((4,), np.int32)
    run(Module("q", [f]), (1, 1, 1), [o, dev.put(np.zeros(1, np.float32)), 100, 37])
    np.testing.assert_array_equal(dev.get(o, (4,), np.int32), [100, 37, 3, 25])


def _gather_scatter_module(n_tile):
    """out[idx[i]] = src[idx[i]] * 2 where mask (idx < n); masked lanes load the padding."""
    f, b = fn("gs", [ptr("f32"), ptr("i32"), ptr("f32"), I32])
    src, idxp, dst, n = f.args
    bx = b.get_tile_block_id()[0]
    lane = b.binary("addi", b.iota(tile("i32", (n_tile,))),
                    b.broadcast(b.reshape(b.binary("muli", bx, b.constant(n_tile, I32)), (1,)),
                                (n_tile,)))
    nb = b.broadcast(b.reshape(n, (1,)), (n_tile,))
    in_range = b.cmpi("less_than", lane, nb, "signed")
    ip = b.offset(b.broadcast(b.reshape(idxp, (1,)), (n_tile,)), lane)
    idx, _ = b.load_ptr_tko(ip, mask=in_range, padding=b.constant(-1, tile("i32", (n_tile,))))
    ok = b.binary("andi", in_range, b.cmpi("greater_than_or_equal", idx,
                                           b.constant(0, tile("i32", (n_tile,))), "signed"))
    sp = b.offset(b.broadcast(b.reshape(src, (1,)), (n_tile,)), idx)
    v, _ = b.load_ptr_tko(sp, mask=ok, padding=b.constant(-5.0, tile("f32", (n_tile,))))
    dp = b.offset(b.broadcast(b.reshape(dst, (1,)), (n_tile,)), idx)
    b.store_ptr_tko(dp, b.mulf(v, v), mask=ok)
    b.return_()
    return Module("gs", [f])


def test_gather_scatter_with_masks(dev):
    n = 100
    src = random_tile("f32", 64, 5)
    idx = np.random.default_rng(6).integers(-3, 64, n).astype(np.int32)   # negatives: masked
    out = dev.put(np.full(64, 9.0, np.float32))
    run(_gather_scatter_module(32), (4, 1, 1), [dev.put(src), dev.put(idx), out, n])
    want = np.full(64, 9.0, np.float32)
    for i in idx:
        if i >= 0:
            want[i] = src[i] * src[i]
    np.testing.assert_array_equal(dev.get(out, (64,), np.float32), want)


def _atomic_module(elem, n, mode=None, cas=False, masked=False):
    f, b = fn("at", [ptr(elem), ptr("i32"), ptr(elem), ptr(elem), ptr(elem)])
    base, idxp, argp, oldp, cmpp = f.args
    lanes = b.iota(tile("i32", (n,)))
    bcast = lambda p: b.broadcast(b.reshape(p, (1,)), (n,))  # noqa: E731
    idx, _ = b.load_ptr_tko(b.offset(bcast(idxp), lanes))
    arg, _ = b.load_ptr_tko(b.offset(bcast(argp), lanes))
    ptrs = b.offset(bcast(base), idx)
    mask = (b.cmpi("not_equal", b.binary("andi", lanes, b.constant(3, tile("i32", (n,)))),
                   b.constant(3, tile("i32", (n,))), "signed") if masked else None)
    if cas:
        cmp, _ = b.load_ptr_tko(b.offset(bcast(cmpp), lanes))
        old, _ = b.atomic_cas_tko(ptrs, cmp, arg, mask=mask)
    else:
        old, _ = b.atomic_rmw_tko(ptrs, mode, arg, mask=mask)
    b.store_ptr_tko(b.offset(bcast(oldp), lanes), old)
    b.return_()
    return Module("at", [f])


def _sequential_rmw(mode, mem, idx, args, mask, dt):
    mem = mem.copy()
    old = np.zeros(len(idx), dt)
    u = UNSIGNED.get({np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}.get(np.dtype(dt), ""))
    for lane, (i, a) in enumerate(zip(idx, args)):
        if not mask[lane]:
            continue
        cur = mem[i]
        old[lane] = cur
        with np.errstate(all="ignore"):
            new = {"add": lambda: cur + a, "addf": lambda: cur + a, "max": lambda: max(cur, a),
                   "min": lambda: min(cur, a), "and": lambda: cur & a, "or": lambda: cur | a,
                   "xor": lambda: cur ^ a, "xchg": lambda: a,
                   "umax": lambda: np.array(max(cur.view(u), a.view(u))).view(dt),
                   "umin": lambda: np.array(min(cur.view(u), a.view(u))).view(dt)}[mode]()
        mem[i] = new
    return mem, old


@pytest.mark.parametrize("elem,mode", [("i32", m) for m in ("add", "max", "min", "umax", "umin",
                                                            "and", "or", "xor", "xchg")] +
                         [("i64", "add"), ("i64", "umax"), ("f32", "addf"), ("f64", "addf"),
                          ("f32", "xchg"), ("f16", "addf")])
@pytest.mark.parametrize("masked", [False, True])
def test_atomic_rmw_with_duplicate_addresses(dev, elem, mode, masked):
    n, m = 64, 6
    dt = NP[elem]
    r = np.random.default_rng(8)
    idx = r.integers(0, m, n).astype(np.int32)            # many duplicates
    if elem[0] == "f":
        args = r.integers(-8, 8, n).astype(dt)            # exactly summable: order-independent
        mem0 = r.integers(-8, 8, m).astype(dt)
    else:
        args, mem0 = random_tile(elem, n, 9), random_tile(elem, m, 10)
    mask = (np.arange(n) & 3) != 3 if masked else np.ones(n, bool)
    base, oldp = dev.put(mem0), dev.empty((n,), dt)
    run(_atomic_module(elem, n, mode, masked=masked), (1, 1, 1),
        [base, dev.put(idx), dev.put(args), oldp, dev.put(args)])
    want_mem, want_old = _sequential_rmw(mode, mem0, idx, args, mask, dt)
    np.testing.assert_array_equal(dev.get(base, (m,), dt), want_mem)
    np.testing.assert_array_equal(dev.get(oldp, (n,), dt)[mask], want_old[mask])


@pytest.mark.parametrize("elem", ["i32", "i64", "f32"])
def test_atomic_cas_with_duplicates(dev, elem):
    n = 32
    dt = NP[elem]
    idx = (np.arange(n) % 4).astype(np.int32)
    cmp = np.array([k // 4 for k in range(n)], dt)      # lane k expects the k//4-th update
    val = cmp + dt(1)
    mem0 = np.zeros(4, dt)
    base, oldp = dev.put(mem0), dev.empty((n,), dt)
    run(_atomic_module(elem, n, cas=True, masked=True), (1, 1, 1),
        [base, dev.put(idx), dev.put(val), oldp, dev.put(cmp)])
    # a chain of successful CASes per address, except masked lanes (k % 4 == 3: address 3)
    np.testing.assert_array_equal(dev.get(base, (4,), dt), np.array([8, 8, 8, 0], dt))
    old = dev.get(oldp, (n,), dt)
    np.testing.assert_array_equal(old[idx != 3], cmp[idx != 3])
    np.testing.assert_array_equal(old[idx == 3], cmp[idx == 3])   # masked lanes return cmp


def test_atomics_apply_in_block_order(dev):
    # every block does xchg on one counter; the old values reveal the block order (x fastest)
    cnt, out = dev.put(np.array([-1], np.int32)), dev.empty((24,), np.int32)
    run(xchg_order_module(), (2, 3, 4), [cnt, out])
    np.testing.assert_array_equal(dev.get(out, (24,), np.int32), np.arange(-1, 23))


def test_out_of_bounds_pointer_names_address_and_op(dev):
    f, b = fn("oob", [ptr("f32"), I32])
    p = b.offset(f.args[0], f.args[1])
    v, _ = b.load_ptr_tko(p)
    b.store_ptr_tko(f.args[0], v)
    b.return_()
    buf = dev.put(np.zeros(4, np.float32))
    with pytest.raises(SimulatorMemoryError) as ei:
        run(Module("oob", [f]), (1, 1, 1), [buf, 10])
    msg = str(ei.value)
    assert f"0x{buf + 40:x}" in msg and "load_ptr_tko" in msg and "(0, 0, 0)" in msg
    with pytest.raises(SimulatorMemoryError, match="null pointer"):
        run(Module("oob", [f]), (1, 1, 1), [0, 0])


def test_tile_index_outside_index_space_is_reported(dev):
    f, b = fn("bad", [ptr("f32"), I32])
    pv = b.make_partition_view(b.make_tensor_view(f.args[0], [8], [1]), (4,))
    b.load_view_tko(pv, [f.args[1]])
    b.return_()
    with pytest.raises(SimulatorError, match=r"tile index \(2,\) is out of bounds: the array of "
                                              r"shape \(8,\) has \(2,\) tiles of shape \(4,\)"):
        run(Module("bad", [f]), (1, 1, 1), [dev.put(np.zeros(8, np.float32)), 2])


def test_bool_tensors_are_bytes(dev):
    x = np.array([0, 3, 1, 0, 255, 0, 0, 1], np.uint8)   # any nonzero byte reads as true
    f, b = fn("bools", [ptr("i1"), ptr("i1")])
    pv = lambda p: b.make_partition_view(b.make_tensor_view(p, [8], [1]), (8,))  # noqa: E731
    t, _ = b.load_view_tko(pv(f.args[0]), [b.constant(0, I32)])
    b.store_view_tko(b.binary("xori", t, b.constant(True, tile("i1", (8,)))), pv(f.args[1]),
                     [b.constant(0, I32)])
    b.return_()
    out = dev.empty((8,), np.uint8)
    run(Module("bools", [f]), (1, 1, 1), [dev.put(x), out])
    np.testing.assert_array_equal(dev.get(out, (8,), np.uint8), (x == 0).astype(np.uint8))


def test_bf16_load_store_roundtrip(dev):
    x = random_tile("bf16", (33,), 11)
    got = dev.put(np.zeros(33, ml_dtypes.bfloat16))
    run(copy_kernel("bf16", (16,), 1), (3, 1, 1), [dev.put(x), 33, 1, got, 33, 1])
    np.testing.assert_array_equal(dev.get(got, (33,), ml_dtypes.bfloat16), x)
