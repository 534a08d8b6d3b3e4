"""The rows of ``vendor.py``: for each group its cases (``cases``), the tilejit candidates of a
case, the vendor call and the check. Every case runs through ``Env`` (vendor.py), so the same code
runs on a GPU and, at tiny sizes, on the simulator (``--rehearse``)."""
from __future__ import annotations

import math
import os
import statistics
import sys
import time

import tilejit as tile
from tilejit.autotune import compile_launch

from harness import rel_err

import attention_backward as AB
import attention_decode as AD
import flash_attention as FA
import fp8_matmul as F8
import layernorm as LN
import matmul as MM
import matmul_splitk as SK
import matmul_streamk as SKM
import rmsnorm as RN
import softmax as SM


# --------------------------------------------------------------------------------------------------
# cases: (label, parameters) per group, in priority order (the budget cuts the tail)
def cases(group: str, quick: bool, rehearse: bool) -> list:
    def pick(full, q):
        return q if quick else full
    if group in ("matmul",):
        sizes = (64,) if rehearse else pick((4096, 8192), (4096,))
        return [(f"matmul {d} {m}^3", dict(dtype=d, m=m)) for d in pick(("float16", "bfloat16"),
                                                                         ("float16",))
                for m in sizes]
    if group == "skinny":
        ms = (16,) if rehearse else pick((16, 64, 256), (16,))
        nk = 128 if rehearse else 8192
        return [(f"matmul {d} M={m} N=K={nk}", dict(dtype=d, m=m, nk=nk))
                for d in pick(("float16", "bfloat16"), ("float16",)) for m in ms]
    if group == "fp8":
        sizes = (64,) if rehearse else pick((4096, 8192), (4096,))
        # the float32-promoted sum (both sides' default) and the tensor cores' fast sum
        return [(f"fp8 e4m3 {m}^3 -> bf16{' fast accumulation' if fast else ''}",
                 dict(m=m, fast=fast)) for m in sizes for fast in (False, True)]
    if group in ("softmax", "layer_norm", "rms_norm"):
        total = 4096 if rehearse else 1 << 26
        if rehearse:
            combos = [("float16", 96), ("bfloat16", 300)]
        else:
            combos = pick([("float16", 4096), ("float16", 1024), ("float16", 16384),
                           ("float16", 32768), ("bfloat16", 4096), ("bfloat16", 32768)],
                          [("float16", 4096)])
        return [(f"{group} {d} {total // n}x{n}", dict(dtype=d, m=total // n, n=n))
                for d, n in combos]
    if group == "attention":
        if rehearse:
            combos = [("float16", 32, 64), ("bfloat16", 32, 64)]
        else:
            combos = pick([("float16", 128, 4096), ("float16", 64, 4096),
                           ("float16", 128, 1024), ("float16", 128, 16384),
                           ("float16", 64, 1024), ("float16", 64, 16384),
                           ("bfloat16", 128, 4096), ("bfloat16", 64, 4096)],
                          [("float16", 128, 4096)])
        return [(f"attention fwd {d} D{dh} S{s}{' causal' if c else ''}",
                 dict(dtype=d, d=dh, s=s, causal=c)) for d, dh, s in combos for c in (False, True)]
    if group == "attention_bwd":
        combos = [("float16", 128, 4096), ("bfloat16", 128, 4096), ("float16", 64, 4096),
                  ("float16", 128, 16384)]
        if rehearse:
            combos = [("float16", 32, 64)]
        elif quick:
            combos = combos[:1]
        return [(f"attention bwd {d} D{dh} S{s}{' causal' if c else ''}",
                 dict(dtype=d, d=dh, s=s, causal=c)) for d, dh, s in combos for c in (False, True)]
    if group == "gqa":
        shape = "32/8 heads D32 S64" if rehearse else "32/8 heads D128 S4096"
        return [(f"attention fwd GQA {shape} {d}{' causal' if c else ''}",
                 dict(dtype=d, causal=c)) for d in pick(("float16", "bfloat16"), ("float16",))
                for c in (False, True)]
    if group == "decode":
        lens = (300,) if rehearse else pick((16384, 4096, 65536), (16384,))
        heads = "8/2 heads D32" if rehearse else "B8 32/8 heads D128"
        return [(f"decode {d} {heads} KV {s}", dict(dtype=d, s=s))
                for d in pick(("float16", "bfloat16"), ("float16",)) for s in lens]
    raise KeyError(group)


#: what each group was expected to show before any GPU run of these variants (tilejit/vendor,
#: and of the copy roofline for the norms): printed under each table, to compare
PREDICTED = {
    "matmul": "0.95-1.05x both ways, side by side (2026-11-27 H200 runs: 0.90-1.06x, moving "
              "between runs)",
    "attention": "1.4-1.6x SDPA's flash backend, causal and not (2026-11-27 H200)",
    "softmax": "H200 (2026-11-28): 0.90-0.92 of the copy roofline for 1K-16K rows, 32K 0.85, "
               "1.6-3x torch; H100: 0.90-0.96",
    "layer_norm": "H200 (2026-11-28): 1K 0.84, 4K 0.88-0.90, 16K 0.85, 32K 0.82-0.83 of the "
                  "roofline, 1.5-2x torch; H100: 0.91-0.95",
    "rms_norm": "H200 (2026-11-28): 0.90-0.92 for 1K-16K rows (1.20-1.24x torch), 32K 0.86 "
                "persistent; H100: 0.94-0.95",
    "skinny": "0.97-1.1x; the latency-hinted kernel 1-3% over the tiled one at M=256",
    "fp8": "promoted in the kernel 1.0-1.1x, fast sum 0.97-1.1x (2026-11-27 H200 runs)",
    "attention_bwd": "1.0-1.2x SDPA flash backward; D64 with 128x128 tiles or occupancy 2 above 1.0x",
    "gqa": "as the MHA forward, 0.85-0.95x (more where SDPA leaves its flash backend)",
    "decode": "0.99-1.02x SDPA (2026-11-27 H200: 0.99-1.07x; stores off the TMA unit changed "
              "nothing)",
}


def plan(group: str, quick: bool) -> list:
    return [label for label, _ in cases(group, quick, False)]


# --------------------------------------------------------------------------------------------------
# candidates and measuring
class Variant:
    """One tilejit candidate for a case: prepared launches run in order on each call."""

    def __init__(self, name: str, launches: list, config: str, tune_s=None):
        self.name, self.launches, self.config, self.tune_s = name, launches, config, tune_s

    def __call__(self):
        for p in self.launches:
            p.launch()

    def close(self):
        for p in self.launches:
            p.close()
        self.launches = []


def tuned(env, name: str, tuner, *args, **kwargs):
    """A factory of the prepared best config of an autotuned kernel; the first call of a key
    tunes (its time, compiles included unless precompiled, is the variant's ``tune_s``)."""
    def make() -> Variant:
        t0 = time.perf_counter()
        op = tuner(*args, **kwargs)
        tune_s = time.perf_counter() - t0
        cfg = tuner.best_config(*args, **kwargs)
        if os.environ.get("VENDOR_TUNING"):          # every config's time, to stderr
            print(tuner.tuning_report(), file=sys.stderr)
        return Variant(name, [env.prepare(op)], f"{name} {_short(cfg)}", tune_s)
    return make


def _short(cfg) -> str:
    return repr(cfg).replace("Config(", "").rstrip(")")


def composite(env, name: str, label: str, build):
    """A factory of a Variant of the launches ``build()`` gives."""
    return lambda: Variant(name, [env.prepare(op) for op in build()], f"{name} {label}")


def fastest(env, name: str, candidates: list, check, reset=lambda: None):
    """(ms, factory) of the fastest of composite candidates ``[(label, build)]`` (``build()``
    gives the lazy launches), each checked first; a candidate that fails to compile is skipped,
    one that computes a wrong result fails the row. Only one candidate is prepared at a time
    (they may partition the same output)."""
    best = None
    for label, build in candidates:
        make = composite(env, name, label, build)
        try:
            v = make()
        except tile.TileJitError as e:
            print(f"    {name} {label}: skipped ({str(e).splitlines()[0]})")
            continue
        try:
            reset()
            v()
            env.sync()
            check(f"{name} {label}")
            ms = env.ms(v)
        finally:
            v.close()
        if best is None or ms < best[0]:
            best = (ms, make)
    if best is None:
        raise RuntimeError(f"{name}: no candidate compiles")
    return best


def precompile_ops(env, builds: list) -> int:
    """Compile the launches of composite candidates side by side (``build()`` per candidate)."""
    def job(build):
        return lambda: [compile_launch(op) for op in build()]
    return env.precompile([job(b) for b in builds])


def checker(env, got, ref, tol):
    def check(what):
        err = rel_err(env.read(got), ref.float())
        if not err <= tol:
            raise AssertionError(f"{what}: relative error {err:.3g} exceeds {tol:g}")
    return check


def measure(env, group, row, unit, amount, factories, vendor_fn, vendor_name, check, reset,
            both_methods=False, extra=None):
    """Check and time every variant (``factories`` make them, one prepared at a time: they
    may partition the same output), time the vendor, record the best against it (both timing
    methods if asked). ``amount`` is the work in the unit's numerator (TFLOP or GB)."""
    timed = []
    for make in factories:
        v = make()
        try:
            reset()
            v()
            env.sync()
            check(f"{row} {v.name}")
            timed.append((env.ms(v), make, v.name, v.config, v.tune_s))
        finally:
            v.close()
    _, make, _, config, _ = min(timed, key=lambda t: t[0])
    vendor = vendor_fn if _vendor_runs(env, vendor_fn) else None
    best = make()
    try:
        ms, vendor_ms = side_by_side(env, env.ms, best, vendor)
        if both_methods:
            loop, vloop = side_by_side(env, env.loop_ms, best, vendor)
    finally:
        best.close()
    rate = lambda t: amount / t * 1e3 if t else None  # noqa: E731
    columns = {name: rate(t) for t, _, name, _, _ in timed}
    extra = dict(extra or {})
    # other vendor calls shown beside the one the ratio is taken against: name -> callable
    columns.update({name: rate(_vendor_ms(env, fn)) for name, fn in
                    extra.pop("other_vendors", {}).items()})
    tune = {name: round(ts, 2) for _, _, name, _, ts in timed if ts is not None}
    env.record(group, row + (" [flush]" if both_methods else ""), unit, rate(ms),
               rate(vendor_ms), vendor_name, config, columns=columns, tune_s=tune,
               ms=ms, vendor_ms=vendor_ms, **extra)
    if both_methods:
        env.record(group, row + " [loop]", unit, rate(loop), rate(vloop), vendor_name,
                   config, ms=loop, vendor_ms=vloop)


#: rounds of side_by_side: the best variant and the vendor timed in turn
SIDE_ROUNDS = 4


def side_by_side(env, timing, ours, vendor):
    """(ms, vendor ms): ``timing`` (``env.ms`` or ``env.loop_ms``) of our best variant and of
    the vendor call in SIDE_ROUNDS rounds, each side first in every other round, the median of
    each side's rounds: the GPU's clocks drift as it warms, and timing one side after the other
    gave either side the cooler GPU (the same 8192^3 matmul row moved from 0.90x to 1.06x
    between runs on an H200)."""
    ours_ms, vendor_ms = [], []
    for r in range(SIDE_ROUNDS if env.gpu else 1):
        pair = [(ours, ours_ms), (vendor, vendor_ms)]
        for fn, out in (pair if r % 2 == 0 else pair[::-1]):
            if fn is not None:
                out.append(timing(fn))
    return (statistics.median(ours_ms),
            statistics.median(vendor_ms) if vendor_ms else None)


def _vendor_runs(env, fn) -> bool:
    """Whether vendor call ``fn`` runs here (one call; a failure is printed, not raised)."""
    if fn is None:
        return False
    try:
        fn()
        env.sync()
        return True
    except Exception as e:  # noqa: BLE001  (a vendor call the platform lacks: no column)
        print(f"    vendor call failed: {type(e).__name__}: {str(e).splitlines()[0]}")
        return False


def _vendor_ms(env, fn):
    return env.ms(fn) if _vendor_runs(env, fn) else None


def _dt(env, name):
    return getattr(env.torch, name)


def _nan_fill(env, t):
    return lambda: (t.fill_(float("nan")) if env.gpu else None)


# --------------------------------------------------------------------------------------------------
# matmul
def group_matmul(env):
    sched = MM.scheduled()
    # the same kernel on the autotuner's default space (no configs=): what it finds by itself,
    # tuned cold on its row's first call (tune_s)
    default = tile.autotune(key=["a", "b"], grid=MM.scheduled_grid)(MM.matmul_scheduled)
    rows = []
    for label, p in cases("matmul", env.quick, env.rehearse):
        dt, m = _dt(env, p["dtype"]), p["m"]
        a, b = env.randn(m, m, dtype=dt), env.randn(m, m, dtype=dt)
        rows.append((label, a, b, env.empty((m, m), dt)))
    streamk = {label: _streamk_candidates(env, env.tj(a), env.tj(b), c)
               for label, a, b, c in rows}
    if env.gpu:                          # the scheduled configs side by side; the default space
        jobs = []                        # tunes on its first call (the cold time per key)
        for _, a, b, c in rows:
            jobs += sched.precompile(tile.atomic(c), a, b, pool=env.pool)
        env.precompile(jobs)
        precompile_ops(env, [build for cands in streamk.values() for _, build in cands])
    for label, a, b, c in rows:
        env.run_row("matmul", label,
                    lambda: _matmul_row(env, label, a, b, c, sched, default, streamk[label]))


def _streamk_candidates(env, a, b, c):
    """matmul_streamk on one block per SM: the scheduled kernel's best tiles (2026-11-27 H200;
    256x128 left out: tileiras spills its accumulator there), one or two waves of tiles shared
    by K iterations."""
    blocks = 4 if env.rehearse else env.torch.cuda.get_device_properties(0).multi_processor_count
    tiles = [(32, 32, 32)] if env.rehearse else [(128, 256, 32), (128, 256, 64)]
    out = []
    for bm, bn, bk in tiles:
        ws = env.empty((2 * blocks * bm, bn), env.torch.float32)
        arrived = env.tj(env.torch.zeros((2 * blocks,), dtype=env.torch.int32,
                                         device=env.device))
        opts = tile.CompileOptions(occupancy=1, num_worker_warps=None if env.rehearse else 8)
        for waves in (1, 2):
            def build(ws=ws, arrived=arrived, bm=bm, bn=bn, bk=bk, waves=waves, opts=opts):
                return [SKM.streamk(c, a, b, ws, arrived, bm, bn, bk, group=8, sk_waves=waves,
                                    blocks=blocks).compile_options(opts)]
            out.append((f"BM={bm} BN={bn} BK={bk} SK_WAVES={waves} "
                        f"num_worker_warps={opts.num_worker_warps}", build))
    return out


def _matmul_row(env, label, a, b, c, sched, default, streamk):
    ref = a.float() @ b.float()
    ta, tb = env.tj(a), env.tj(b)
    check, reset = checker(env, c, ref, 1e-2), _nan_fill(env, c)
    variants = [tuned(env, "tiled", MM.matmul, c, ta, tb),
                tuned(env, "scheduled", sched, tile.atomic(c), ta, tb),
                tuned(env, "default space", default, tile.atomic(c), ta, tb),
                fastest(env, "stream-K", streamk, check, reset)[1]]
    cv = env.torch.empty_like(ref, dtype=a.dtype)
    m, k = a.shape
    measure(env, "matmul", label, "TFLOP/s", 2 * m * k * b.shape[1] / 1e12, variants,
            lambda: env.torch.matmul(a, b, out=cv), "cuBLAS", check, reset, both_methods=True)


def group_skinny(env):
    rows = []
    for label, p in cases("skinny", env.quick, env.rehearse):
        dt, m, nk = _dt(env, p["dtype"]), p["m"], p["nk"]
        a, b = env.randn(m, nk, dtype=dt), env.randn(nk, nk, dtype=dt)
        c = env.empty((m, nk), dt)
        rows.append((label, a, b, c, _splitk_candidates(env, env.tj(a), env.tj(b), c)))
    if env.gpu:
        env.precompile([f for _, a, b, c, _ in rows for tuner in (MM.matmul, MM.hinted)
                        for f in tuner.precompile(c, a, b, pool=env.pool)])
        precompile_ops(env, [build for *_, cands in rows for _, build in cands])
    for label, a, b, c, cands in rows:
        env.run_row("skinny", label, lambda: _skinny_row(env, label, a, b, c, cands))


def _splitk_candidates(env, a, b, c):
    """Two launches (partial products, then their sum) and one (the last block of a tile sums:
    ``matmul_splitk_fused``), over splits, tile width and occupancy."""
    m, n = c.shape
    bm = min(m, 64)
    out = []
    for splits in ((2, 4) if env.rehearse else (2, 4, 8)):
        ws = env.empty((splits, m, n), env.torch.float32)
        arrived = env.torch.zeros((-(-m // bm) * -(-n // 64),), dtype=env.torch.int32,
                                  device=env.device)      # a counter per tile, BN 64 or more
        for bn in (64, 128):
            def build(ws=ws, bn=bn):
                return [SK.matmul_partial(tile.partition(ws, (1, bm, bn)), a, b, 128),
                        SK.sum_partials(tile.partition(c, (bm, 128)), ws)]
            out.append((f"splits={splits} tile=({bm}, {bn}) BK=128", build))
            for occ in (1, 2):
                def fused(ws=ws, bn=bn, occ=occ, arrived=arrived):
                    return [SK.splitk_fused(c, a, b, ws, arrived, (bm, bn), 128)
                            .compile_options(tile.CompileOptions(occupancy=occ))]
                out.append((f"one launch splits={splits} tile=({bm}, {bn}) BK=128 "
                            f"occupancy={occ}", fused))
    return out


def _skinny_row(env, label, a, b, c, cands):
    ref = a.float() @ b.float()
    check = checker(env, c, ref, 1e-2)
    reset = _nan_fill(env, c)
    variants = [tuned(env, "tiled", MM.matmul, c, env.tj(a), env.tj(b)),
                tuned(env, "hinted", MM.hinted, c, env.tj(a), env.tj(b)),
                fastest(env, "split-K", cands, check, reset)[1]]
    cv = env.torch.empty_like(ref, dtype=a.dtype)
    m, k = a.shape
    measure(env, "skinny", label, "TFLOP/s", 2 * m * k * b.shape[1] / 1e12, variants,
            lambda: env.torch.matmul(a, b, out=cv), "cuBLAS", check, reset, both_methods=True)


def group_fp8(env):
    torch = env.torch
    for label, p in cases("fp8", env.quick, env.rehearse):
        env.run_row("fp8", label, lambda p=p, label=label: _fp8_row(env, label, p["m"],
                                                                     p["fast"], torch))


def _fp8_row(env, label, m, fast, torch):
    f8 = torch.float8_e4m3fn
    a8 = env.randn(m, m, dtype=torch.float32).clamp(-8, 8).to(f8)
    bt8 = env.randn(m, m, dtype=torch.float32).clamp(-8, 8).to(f8)
    b8 = bt8.t()                                          # column-major, as _scaled_mm wants
    sa = torch.full((1,), 0.5, device=env.device)
    sb = torch.full((1,), 4.0, device=env.device)
    ref = (a8.float() @ b8.float()) * 2.0
    c = env.empty((m, m), torch.bfloat16)
    tb = env.tj(bt8).permute(1, 0) if env.rehearse else b8
    sched = F8.scheduled(fast)
    if env.gpu:
        env.precompile(F8.tuned.precompile(c, a8, b8, sa, sb, FAST_ACC=fast, pool=env.pool) +
                       sched.precompile(tile.atomic(c), a8, b8, sa, sb, FAST_ACC=fast,
                                        pool=env.pool))
    scales = (env.tj(sa), env.tj(sb))
    variants = [tuned(env, "fp8_matmul", F8.tuned, c, env.tj(a8), tb, *scales, FAST_ACC=fast),
                tuned(env, "scheduled", sched, tile.atomic(c), env.tj(a8), tb, *scales,
                      FAST_ACC=fast)]

    def vendor():
        return torch._scaled_mm(a8, b8, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                use_fast_accum=fast)
    measure(env, "fp8", label, "TFLOP/s", 2 * m ** 3 / 1e12, variants, vendor,
            "torch._scaled_mm", checker(env, c, ref, 1e-2), _nan_fill(env, c),
            both_methods=True)


# --------------------------------------------------------------------------------------------------
# row reductions
def few_warps(env) -> bool:
    """Whether the norms' search also tries one and two compute warps a block (tileiras 13.5 and
    newer; not in a rehearsal on the simulator, which has no warps)."""
    if env.rehearse:
        return False
    from tilejit.toolchain import tileiras
    return tileiras.available() and (tileiras.version() or (0, 0))[:2] >= (13, 5)


def _exact(group, cfgs, exact):
    """LayerNorm's configs with EXACT=True where the rows are exactly the tile's width (no mask
    in the statistics: 1-3% faster, 2026-11-27 H200)."""
    if group != "layer_norm" or not exact:
        return cfgs
    out = []
    for c in cfgs:
        d = c.as_dict()
        d["constants"] = {**d.get("constants", {}), "EXACT": True}
        out.append(tile.Config.from_dict(d))
    return out


def _norm_tuners(env, group, n):
    """name -> (autotuned kernel, whether its output is passed as tile.atomic)."""
    width = 1 << (n - 1).bit_length()
    rows_k = {"softmax": SM.softmax, "layer_norm": LN.layernorm_fwd,
              "rms_norm": RN.rmsnorm.kernel}[group]
    pers_k = {"softmax": SM.softmax_persistent, "layer_norm": LN.layernorm_fwd_persistent,
              "rms_norm": RN.rmsnorm_persistent}[group]
    chunk_k = {"softmax": SM.softmax_chunked, "layer_norm": LN.layernorm_fwd_chunked,
               "rms_norm": RN.rmsnorm_chunked}[group]
    out_name = "z" if group == "softmax" else "y"
    small = env.rehearse
    out = {}
    # whole rows per block up to 32K elements a tile (2026-11-27 H200: a 1x32768 fp16 softmax
    # row per block at occupancy 2 is 1.25x the chunked form; 16 rows of 1K at occupancy 4,
    # 1.17x 8 rows)
    # two compute warp groups (num_worker_warps=8) from 4K elements a tile: fewer elements a
    # thread in each reduction (2026-11-27 H200: +2-3% on 4K rows)
    # one or two compute warps a block for short rows: each row's reduction stays in a warp,
    # with no block barrier (tileiras 13.5 honours these counts, 13.4 does not): (rows, warps)
    few = [(r, nw) for nw in (1, 2) for r in (1, 2, 4) if r * width <= 1024 * nw] \
        if few_warps(env) else []
    if width <= 32768:
        # occupancy 5 for tiles of up to 8K elements, 3 above: between the powers of two is
        # often best (2026-11-28 H200: LayerNorm 8 x 1024 0.873 -> 0.887 of the roofline at 5,
        # softmax 1 x 16384 0.856 -> 0.902 at 3, and 2K-4K rows up to 40% slower at 5)
        cfgs = [tile.Config(tile=(bm, width), occupancy=occ, num_worker_warps=nw)
                for bm in (1, 2, 4, 8, 16, 32) if bm * width <= 32768
                for occ in ((1, 2, 4, 5) if bm * width <= 8192 else (1, 2, 3, 4))
                for nw in ((None, 8) if bm * width >= 4096 else (None,))]
        # (2026-11-27 H200, 1K rows: occupancy 8 and 16 were 1.3-1.5x slower than 4)
        cfgs += [tile.Config(tile=(bm, width), occupancy=occ, num_worker_warps=nw)
                 for bm, nw in few for occ in (2, 4)]
        if group == "layer_norm" and width <= 2048:
            # the statistics form the kernel's default (ONE_REDUCTION=AUTO: mean then variance
            # up to 1K elements, the pair above) does not take, for several short rows a block
            # (2026-11-28 H200, default-space tiles: 1K 3515 against 2749 GB/s, 2K 3589 against
            # 3683)
            other = width <= 1024            # the pair where AUTO takes mean then variance
            cfgs += [tile.Config(tile=(bm, width), occupancy=occ, ONE_REDUCTION=other)
                     for bm in (4, 8, 16) for occ in (2, 4)]
            cfgs += [tile.Config(tile=(bm, width), occupancy=occ, num_worker_warps=nw,
                                 ONE_REDUCTION=other)
                     for bm, nw in few for occ in (2, 4)]
        out["rows"] = (tile.autotune(configs=_exact(group, cfgs, width == n), key=["x"],
                                     partition=out_name)(rows_k), False)
    if width <= 16384:
        cfgs = [tile.Config(ROWS=r, WIDTH=width, LATENCY=4, occupancy=occ) for r in (1, 2, 4)
                if r * width <= 16384 for occ in (2, 4)]
        cfgs += [tile.Config(ROWS=r, WIDTH=width, LATENCY=4, occupancy=occ,
                             num_worker_warps=nw)
                 for r, nw in few if r <= 2 for occ in (4, 16)]
        # (latency hints 8 and 10 at occupancy 1 deepen tileiras's pipeline of 8K-16K rows, two
        # to four stages in the SASS, and never won: 2026-11-28 H200, 16K rows, softmax 0.112 ms
        # against 0.076 at LATENCY 4 and occupancy 2, RMSNorm 0.073 against 0.072)
    elif width == 32768:
        # one 32K-element row an iteration (one block a SM: the row and, for RMSNorm, w take
        # 64 KB of shared memory each for fp16; tileiras keeps one stage of the row with any
        # latency hint, 2026-11-28 SASS)
        cfgs = [tile.Config(ROWS=1, WIDTH=width, LATENCY=2, occupancy=occ, num_worker_warps=nw)
                for occ in (1, 2) for nw in (None, 8)]
    else:
        cfgs = []
    if group == "layer_norm" and width >= 8192:
        # w and b read from L2 in every iteration: held across the loop they spilled the row
        # (2026-11-27 H200: the persistent LayerNorm at 1432-1518 GB/s for 16K-32K rows)
        cfgs += [tile.Config(ROWS=1, WIDTH=width, LATENCY=lat, occupancy=occ,
                             num_worker_warps=nw, RELOAD_WB=True)
                 for lat in (2, 4) for occ in (1, 2) for nw in (None, 8)]
    if cfgs:
        out["persistent"] = (tile.autotune(configs=_exact(group, cfgs, width == n), key=["x"],
                                           grid=SM.rows_grid)(pers_k), True)
    if width >= 8192 or small:
        # (2026-11-27 H200, 16K and 32K rows: 4 rows a block, occupancy 1, 1K chunks and latency
        # hints on the chunk loads never won)
        chunks = (64,) if small else (2048, 4096, 8192)
        cfgs = [tile.Config(ROWS=r, CHUNK=ch, occupancy=occ) for r in (1, 2) for ch in chunks
                for occ in (2, 4)]
        out["chunked"] = (tile.autotune(configs=cfgs, key=["x"], grid=SM.rows_grid)(chunk_k),
                          True)
    return out


def group_norm(env, group):
    torch = env.torch
    F = torch.nn.functional
    rows = []
    for label, p in cases(group, env.quick, env.rehearse):
        dt, m, n = _dt(env, p["dtype"]), p["m"], p["n"]
        x = env.randn(m, n, dtype=dt)
        w, b = env.randn(n, dtype=dt), env.randn(n, dtype=dt)
        y = env.empty((m, n), dt)
        stats = (env.empty((m,), torch.float32), env.empty((m,), torch.float32))
        tj = (env.tj(x), env.tj(w), env.tj(b))
        rows.append((label, x, w, b, y, stats, tj, _norm_tuners(env, group, n)))

    def args(tj, y, stats, atomic):
        x, w, b = tj
        out = tile.atomic(y) if atomic else y
        if group == "softmax":
            return (out, x)
        if group == "layer_norm":
            return (out, x, w, b, tile.atomic(stats[0]), tile.atomic(stats[1]), 1e-5)
        return (out, x, w, 1e-6)
    if env.gpu:
        env.precompile([f for *_, y, stats, tj, tuners in rows
                        for tuner, atomic in tuners.values()
                        for f in tuner.precompile(*args(tj, y, stats, atomic), pool=env.pool)])
    for label, x, w, b, y, stats, tj, tuners in rows:
        n = x.shape[1]
        if group == "softmax":
            ref = torch.softmax(x.float(), dim=1)
            vendor = lambda x=x: torch.softmax(x, dim=1)  # noqa: E731
        elif group == "layer_norm":
            ref = F.layer_norm(x.float(), (n,), w.float(), b.float(), 1e-5)
            vendor = lambda x=x, w=w, b=b, n=n: F.layer_norm(x, (n,), w, b, 1e-5)  # noqa: E731
        else:
            ref = F.rms_norm(x.float(), (n,), w.float(), 1e-6)
            vendor = lambda x=x, w=w, n=n: F.rms_norm(x, (n,), w, 1e-6)  # noqa: E731

        def row(label=label, x=x, y=y, stats=stats, tj=tj, tuners=tuners, ref=ref, vendor=vendor):
            variants = [tuned(env, name, tuner, *args(tj, y, stats, atomic))
                        for name, (tuner, atomic) in tuners.items()]
            gb = 2 * x.numel() * x.element_size() / 1e9
            measure(env, group, label, "GB/s", gb, variants, vendor, "torch",
                    checker(env, y, ref, 2e-2), _nan_fill(env, y),
                    extra=dict(roofline_gbs=env.roofline))
            r = env.results[-1]
            r["columns"]["of roofline"] = (r["tilejit"] or 0) / env.roofline
            r["columns"]["vendor of roofline"] = (r["vendor"] or 0) / env.roofline
        env.run_row(group, label, row)


# --------------------------------------------------------------------------------------------------
# attention
def _attention_configs(d, rehearse):
    if rehearse:
        return [tile.Config(tile=(32, 1, d), BN=16)], [tile.Config(tile=(64, 1, d), BN=16)]
    one = [tile.Config(tile=(128, 1, d), BN=64, occupancy=2),
           tile.Config(tile=(128, 1, d), BN=128, occupancy=1 if d == 128 else 2),
           tile.Config(tile=(64, 1, d), BN=64, occupancy=2),
           tile.Config(tile=(128, 1, d), BN=64, occupancy=1),
           # two compute warp groups (FlashAttention-3 runs two consumer warp groups)
           tile.Config(tile=(128, 1, d), BN=128, occupancy=1, num_worker_warps=8),
           tile.Config(tile=(128, 1, d), BN=64, occupancy=1, num_worker_warps=8)]
    two = [tile.Config(tile=(128, 1, d), BN=64, occupancy=1),
           tile.Config(tile=(128, 1, d), BN=64, occupancy=1, num_worker_warps=8)]
    if d <= 64:
        two.append(tile.Config(tile=(256, 1, d), BN=64, occupancy=1))
    return one, two


def _sdpa(env, q, k, v, causal, gqa=False):
    """SDPA on its flash backend (the memory-efficient one, then any, where flash refuses)."""
    torch = env.torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    F = torch.nn.functional
    kw = dict(is_causal=causal, enable_gqa=True) if gqa else dict(is_causal=causal)
    for backends, name in (([SDPBackend.FLASH_ATTENTION], "SDPA flash"),
                           ([SDPBackend.EFFICIENT_ATTENTION], "SDPA efficient"),
                           (None, "SDPA")):
        def call(backends=backends):
            if backends is None:
                return F.scaled_dot_product_attention(q, k, v, **kw)
            with sdpa_kernel(backends):
                return F.scaled_dot_product_attention(q, k, v, **kw)
        try:
            out = call()
            return call, name, out
        except RuntimeError:
            continue
    raise RuntimeError("no SDPA backend accepts these inputs")


def _other_sdpa(env, q, k, v, causal):
    """SDPA's cuDNN backend and its default choice, shown beside the flash backend (the target's
    peer): the cuDNN kernels are faster on Hopper. Only those that accept the inputs."""
    torch = env.torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    F = torch.nn.functional
    out = {}
    cudnn = getattr(SDPBackend, "CUDNN_ATTENTION", None)
    for name, backends in (("SDPA cuDNN", [cudnn] if cudnn is not None else None),
                           ("SDPA default", [])):
        if backends is None:
            continue

        def call(backends=backends):
            if not backends:
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            with sdpa_kernel(backends):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        try:
            call()
        except RuntimeError:
            continue
        out[name] = call
    return out


def _fastest_sdpa(env, q, k, v, causal):
    """``(call, name, reference, others)``: the fastest SDPA backend on these inputs (flash,
    cuDNN or SDPA's own choice; cuDNN on an H200) is the row's vendor, the rest are shown beside
    it: the ratio is taken against the best PyTorch offers, not one backend of it."""
    call, name, ref = _sdpa(env, q, k, v, causal)
    cands = {name: call, **_other_sdpa(env, q, k, v, causal)}
    if env.gpu and len(cands) > 1:
        times = {n: _vendor_ms(env, fn) for n, fn in cands.items()}
        best = min((t, n) for n, t in times.items() if t is not None)[1]
        call, name = cands.pop(best), best
    else:
        cands.pop(name)
    return call, name, ref, cands


def group_attention(env, group="attention"):
    torch = env.torch
    heads = 2 if env.rehearse else 32
    tokens = 128 if env.rehearse else 16384
    rows = []
    for label, p in cases(group, env.quick, env.rehearse):
        dt, d, s, causal = _dt(env, p["dtype"]), p["d"], p["s"], p["causal"]
        bsz = max(1, tokens // s)
        q, k, v = (env.randn(bsz, heads, s, d, dtype=dt) for _ in range(3))
        o = env.empty((bsz * heads, s, d), dt)
        one, two = _attention_configs(d, env.rehearse)
        tuners = {"1 query tile": tile.autotune(configs=one, key=["q", "k"], partition="o")(
            FA.attention),
            "2 query tiles": tile.autotune(configs=two, key=["q", "k"], partition="o")(
            FA.attention_2q)}
        q3, k3, v3 = (env.tj(t.reshape(bsz * heads, s, d)) for t in (q, k, v))
        rows.append((label, q, k, v, o, (q3, k3, v3), causal, tuners))
    if env.gpu:
        env.precompile([f for *_, o, qkv, causal, tuners in rows for t in tuners.values()
                        for f in t.precompile(o.permute(1, 0, 2), *qkv, CAUSAL=causal,
                                              pool=env.pool)])
    for label, q, k, v, o, qkv, causal, tuners in rows:
        def row(label=label, q=q, k=k, v=v, o=o, qkv=qkv, causal=causal, tuners=tuners):
            call, name, ref, others = _fastest_sdpa(env, q, k, v, causal)
            bsz, h, s, d = q.shape
            variants = [tuned(env, n, t, o.permute(1, 0, 2), *qkv, CAUSAL=causal)
                        for n, t in tuners.items()]
            flops = 4 * bsz * h * s * s * d / (2 if causal else 1)
            measure(env, group, label, "TFLOP/s", flops / 1e12, variants, call, name,
                    checker(env, o, ref.reshape(o.shape), 2e-2), _nan_fill(env, o),
                    extra=dict(other_vendors=others))
        env.run_row(group, label, row)


def group_gqa(env):
    torch = env.torch
    rows = []
    b, hq, hkv, s, d = (1, 8, 2, 64, 32) if env.rehearse else (4, 32, 8, 4096, 128)
    for label, p in cases("gqa", env.quick, env.rehearse):
        dt, causal = _dt(env, p["dtype"]), p["causal"]
        q = env.randn(b, hq, s, d, dtype=dt)
        k, v = (env.randn(b, hkv, s, d, dtype=dt) for _ in range(2))
        o = env.empty((b * hq, s, d), dt)
        one, _ = _attention_configs(d, env.rehearse)
        tuner = tile.autotune(configs=one, key=["q", "k"], partition="o")(FA.attention)
        qkv = (env.tj(q.reshape(b * hq, s, d)), env.tj(k.reshape(b * hkv, s, d)),
               env.tj(v.reshape(b * hkv, s, d)))
        rows.append((label, q, k, v, o, qkv, causal, tuner))
    if env.gpu:
        env.precompile([f for *_, o, qkv, causal, t in rows
                        for f in t.precompile(o.permute(1, 0, 2), *qkv, CAUSAL=causal,
                                              pool=env.pool)])
    for label, q, k, v, o, qkv, causal, tuner in rows:
        def row(label=label, q=q, k=k, v=v, o=o, qkv=qkv, causal=causal, tuner=tuner):
            call, name, ref = _sdpa(env, q, k, v, causal, gqa=True)
            flops = 4 * b * hq * s * s * d / (2 if causal else 1)
            measure(env, "gqa", label, "TFLOP/s", flops / 1e12,
                    [tuned(env, "attention", tuner, o.permute(1, 0, 2), *qkv, CAUSAL=causal)],
                    call, name, checker(env, o, ref.reshape(o.shape), 2e-2), _nan_fill(env, o))
        env.run_row("gqa", label, row)


def group_decode(env):
    torch = env.torch
    b, hq, hkv, d = (2, 8, 2, 32) if env.rehearse else (8, 32, 8, 128)
    g = hq // hkv
    rows = []
    for label, p in cases("decode", env.quick, env.rehearse):
        dt, s = _dt(env, p["dtype"]), p["s"]
        q = env.randn(b, hq, 1, d, dtype=dt)
        k, v = (env.randn(b, hkv, s, d, dtype=dt) for _ in range(2))
        out = env.empty((b * hkv, g, d), dt)
        q3 = env.tj(q.reshape(b * hkv, g, d))
        k3, v3 = (env.tj(t.reshape(b * hkv, s, d)) for t in (k, v))
        cands = []
        for splits in ((2, 4) if env.rehearse else (4, 8, 16, 32)):
            ws = AD.workspaces(b * hkv, g, d, splits) if env.rehearse else \
                (env.empty((splits, b * hkv * AD.group_rows(g), d), torch.float32),
                 env.empty((splits, b * hkv * AD.group_rows(g)), torch.float32),
                 torch.zeros((b * hkv,), dtype=torch.int32, device="cuda"))
            # occupancy 2: a second block per SM keeps loads in flight while one block does
            # its (16-row, latency-bound) softmax update
            for bn, occ in (((32, 1), (32, 2)) if env.rehearse else
                            ((64, 1), (128, 1), (64, 2), (128, 2))):
                opts = tile.CompileOptions(occupancy=occ)
                for fused in (True, False):
                    def build(ws=ws, bn=bn, opts=opts, fused=fused, splits=splits, out=out,
                              q3=q3, k3=k3, v3=v3):
                        gp = AD.group_rows(g)
                        if fused:            # one launch: the last block of a group merges
                            return [AD.decode_fused(
                                tile.atomic(out), *(tile.atomic(w) for w in ws), q3, k3, v3,
                                gp, d, bn).grid((splits, b * hkv, 1)).compile_options(opts)]
                        part = AD.decode_partial(tile.partition(ws[0], (1, gp, d)),
                                                 tile.atomic(ws[1]), q3, k3, v3, bn)
                        return [part.compile_options(opts),
                                AD.decode_combine(tile.partition(out, (1, gp, d)), *ws[:2])]
                    cands.append((f"{'fused' if fused else 'two launches'} splits={splits} "
                                  f"BN={bn} occupancy={occ}", build))
        rows.append((label, q, k, v, out, cands))
    if env.gpu:
        precompile_ops(env, [build for *_, cands in rows for _, build in cands])
    for label, q, k, v, out, cands in rows:
        def row(label=label, q=q, k=k, v=v, out=out, cands=cands):
            call, name, ref = _sdpa(env, q, k, v, False, gqa=True)
            check = checker(env, out, ref.reshape(out.shape), 2e-2)
            reset = _nan_fill(env, out)
            _, best = fastest(env, "split-KV", cands, check, reset)
            gb = 2 * k.numel() * k.element_size() / 1e9
            measure(env, "decode", label, "GB/s", gb, [best], call, name, check, reset)
        env.run_row("decode", label, row)


# --------------------------------------------------------------------------------------------------
# attention backward
def group_attention_bwd(env):
    torch = env.torch
    heads = 2 if env.rehearse else 32
    tokens = 128 if env.rehearse else 16384
    for label, p in cases("attention_bwd", env.quick, env.rehearse):
        def row(label=label, p=p):
            dt, d, s, causal = _dt(env, p["dtype"]), p["d"], p["s"], p["causal"]
            bsz = max(1, tokens // s)
            _attention_bwd_row(env, label, torch, dt, bsz, heads, s, d, causal)
        env.run_row("attention_bwd", label, row)


def _attention_bwd_row(env, label, torch, dt, bsz, heads, s, d, causal):
    q, k, v, do = (env.randn(bsz, heads, s, d, dtype=dt) for _ in range(4))
    qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
    call, name, out = _sdpa(env, qg, kg, vg, causal)
    grads = torch.autograd.grad(out, (qg, kg, vg), do, retain_graph=True)
    bh = bsz * heads
    tq, tk, tv, tdo = (env.tj(t.reshape(bh, s, d)) for t in (q, k, v, do))
    o = env.empty((bh, s, d), dt)
    lse, delta = env.empty((bh, s), torch.float32), env.empty((bh, s), torch.float32)
    small = env.rehearse
    fwd_tiles = (32, 16) if small else (128, 64)
    fwd = env.prepare(AB.forward(o, lse, tq, tk, tv, *fwd_tiles, causal))
    fwd.launch()
    env.sync()
    fwd.close()
    checker(env, o, out.detach().reshape(bh, s, d), 2e-2)(f"{label} forward")
    dq, dk, dv = (env.empty((bh, s, d), dt) for _ in range(3))
    ref = [g_.reshape(bh, s, d) for g_ in grads]
    tol = 3e-2 if dt == torch.bfloat16 else 2e-2

    def heads_view(t, rows):                 # the (S, B * H, D) view the kernels partition
        return t.permute(1, 0, 2)

    delta_build = lambda: [AB.attention_bwd_delta(tile.partition(delta, (1, 64)), o, tdo, d)]  # noqa: E731
    # D 64 leaves registers for 128x128 tiles and a second block per SM
    occs = (None,) if small or d > 64 else (None, 2)
    # two compute warp groups (num_worker_warps=8) share the dK/dV accumulators
    warps = (None,) if small else (None, 8)
    opts = lambda occ, w: tile.CompileOptions(occupancy=occ, num_worker_warps=w)  # noqa: E731

    def note(occ, w):
        return f"{f' occupancy {occ}' if occ else ''}{f' warps {w}' if w else ''}"
    dkdv = [(f"dkdv tile ({kn}, {km}){note(occ, w)}",
             lambda kn=kn, km=km, occ=occ, w=w: [AB.attention_bwd_dkdv(
                 tile.partition(heads_view(dk, kn), (kn, 1, d)),
                 tile.partition(heads_view(dv, kn), (kn, 1, d)),
                 tq, tk, tv, tdo, lse, delta, km, causal).compile_options(opts(occ, w))])
            for kn, km in (((16, 32),) if small else
                           ((64, 64), (128, 64), (64, 128)) + (((128, 128),) if d <= 64 else ()))
            for occ in occs for w in warps]
    dqs = [(f"dq tile ({bm}, {bn}){note(occ, w)}",
            lambda bm=bm, bn=bn, occ=occ, w=w: [AB.attention_bwd_dq(
                tile.partition(heads_view(dq, bm), (bm, 1, d)), tq, tk, tv, tdo, lse, delta, bn,
                causal).compile_options(opts(occ, w))])
           for bm, bn in (((32, 16),) if small else ((128, 64), (64, 64), (128, 128)))
           for occ in occs for w in warps]
    if env.gpu:
        precompile_ops(env, [delta_build] + [b_ for _, b_ in dkdv + dqs])
    ms_delta, mk_delta = fastest(env, "delta", [("(1, 64)", delta_build)], lambda what: None)
    ms_kv, mk_kv = fastest(env, "dkdv", dkdv,
                           lambda what: [checker(env, t, r, tol)(what) for t, r in
                                         ((dk, ref[1]), (dv, ref[2]))])
    ms_q, mk_q = fastest(env, "dq", dqs, checker(env, dq, ref[0], tol))
    parts = [mk() for mk in (mk_delta, mk_kv, mk_q)]
    whole = Variant("backward", [p_ for v_ in parts for p_ in v_.launches],
                    f"{parts[1].config}; {parts[2].config}")
    flops = 2.5 * 4 * bsz * heads * s * s * d / (2 if causal else 1)
    ms = env.ms(whole)

    def vendor():
        return torch.autograd.grad(out, (qg, kg, vg), do, retain_graph=True)
    vendor_ms = _vendor_ms(env, vendor)
    rate = lambda t: flops / t / 1e9 if t else None  # noqa: E731
    env.record("attention_bwd", label, "TFLOP/s", rate(ms), rate(vendor_ms), name + " backward",
               whole.config, ms=ms, vendor_ms=vendor_ms,
               columns={"delta ms": ms_delta, "dkdv ms": ms_kv, "dq ms": ms_q})
    whole.close()


GROUP_FUNCS = {
    "matmul": group_matmul, "skinny": group_skinny, "fp8": group_fp8,
    "softmax": lambda env: group_norm(env, "softmax"),
    "layer_norm": lambda env: group_norm(env, "layer_norm"),
    "rms_norm": lambda env: group_norm(env, "rms_norm"),
    "attention": group_attention, "attention_bwd": group_attention_bwd, "gqa": group_gqa,
    "decode": group_decode,
}
