"""The Liger gallery (examples/liger, tilejit's own front end) against Liger-Kernel's Triton
kernels: forward + backward of each op, the same arguments through both autograd Functions.

    python benchmarks/liger.py PATH_TO_LIGER_CHECKOUT [--quick] [--only OP[,OP...]]
        [--dtype model|float32|bfloat16|float16] [--reps N] [--json FILE] [--tuned] [-v]

For each of the 12 gallery ops the inputs are built once at Liger's benchmark sizes
(``benchmark/scripts/benchmark_<op>.py`` with its default model, Llama-3-8B: 8192 tokens of hidden
size 4096, intermediate 14336, vocabulary 128256; the losses at 4096 tokens; ``--quick`` a
quarter of the tokens) in the dtype Liger's script uses (``--dtype`` forces one). Both Functions,
``examples/liger/<op>.py``'s ``Liger<Op>Function`` and Liger's ``liger_kernel.ops.<op>``'s, are
first checked against a plain torch reference (float32 formulas, Liger's test tolerances, looser
for gradients summed over thousands of rows), then timed: forward and backward requesting the
same gradients, the median of ``--reps`` CUDA-event timings after warm-up, the two alternating,
the inputs (fresh leaves, a fresh upstream gradient for in-place backwards) made and the L2 cache
flushed outside the timed region. Liger's op modules are imported from the checkout one by one
(its package ``__init__`` files import every backend and Hugging Face), so an op that does not
import is a row saying so; so is a gallery module that is missing or fails.

``--tuned``: each gallery op again with every tilejit kernel of the gallery's modules recompiled
under each of a few ``num_worker_warps`` x ``occupancy`` settings (``tile.entry(...)`` applied
to the existing kernel object, swapped into the module for the run and restored), reported as
the plain kernels' time against the best setting's (issue 47 item 4: within 10%). The
compiles take about 20 s an op on an H200.

Without a GPU (or without torch) it prints ``liger: skipped: <why>`` and exits 0.
Exit status 1 when a gallery op is missing, fails or is wrong.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import time
import traceback
import types
from typing import Callable, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GALLERY = os.path.join(ROOT, "examples", "liger")
sys.path.insert(0, HERE)

from harness import L2_FLUSH_BYTES  # noqa: E402
from liger_cutile import _first_line, compare  # noqa: E402

#: op -> its autograd Function's name (the same in the gallery and in Liger's ops module)
FUNCTIONS = {
    "rms_norm": "LigerRMSNormFunction", "layer_norm": "LigerLayerNormFunction",
    "group_norm": "LigerGroupNormFunction", "dyt": "LigerDyTFunction",
    "softmax": "LigerSoftmaxFunction", "swiglu": "LigerSiLUMulFunction",
    "geglu": "LigerGELUMulFunction", "rope": "LigerRopeFunction",
    "cross_entropy": "LigerCrossEntropyFunction",
    "fused_linear_cross_entropy": "LigerFusedLinearCrossEntropyFunction",
    "kl_div": "LigerKLDivLossFunction", "jsd": "LigerJSDFunction",
}
#: --tuned: (num_worker_warps, occupancy) settings (tileiras 13.4 takes 4 and 8 warps)
TUNED = [(w, o) for w in (4, 8) for o in (1, 2, 4)]


# --------------------------------------------------------------------------------------------------
# The cases: inputs built once, a fresh call state per run, the torch reference
class Env:
    def __init__(self, torch, dtype, quick: bool, sim: bool):
        self.torch, self.forced, self.quick, self.sim = torch, dtype, quick, sim
        self.device = "cpu" if sim else "cuda"

    def tokens(self, full: int, sim: int = 6) -> int:
        """Rows: Liger's size, a quarter of it with --quick, ``sim`` on the simulator."""
        return sim if self.sim else full // 4 if self.quick else full

    def dim(self, full: int, sim: int) -> int:
        """A model dimension: Liger's, or ``sim`` on the simulator."""
        return sim if self.sim else full

    def dtype(self, liger_default):
        return self.forced or liger_default

    def randn(self, *shape, dtype, scale=1.0):
        t = self.torch.randn(*shape, device=self.device, dtype=self.torch.float32) * scale
        return t.to(dtype)


class Case:
    """``make()`` -> per-run state (fresh leaves and upstream gradients); ``call(F, state)`` ->
    the op's outputs and the requested gradients through the autograd Function ``F``;
    ``ref()`` -> the torch reference's, in the same order; ``tol``: (atol, rtol) or one per
    output."""

    def __init__(self, size: str, dtype, make, call, ref, names, tol):
        self.size, self.dtype, self.make, self.call, self.ref = size, dtype, make, call, ref
        self.names, self.tol = names, tol


CASES: Dict[str, Callable] = {}


def case(op: str):
    def deco(fn):
        CASES[op] = fn
        return fn
    return deco


def _leaves(*ts):
    return [t.detach().clone().requires_grad_(True) for t in ts]


def _f32(*ts):
    return [t.detach().float().requires_grad_(True) for t in ts]


def _lowp(torch, dtype) -> bool:
    return dtype != torch.float32


def _tol(torch, dtype, fp32, lowp):
    return lowp if _lowp(torch, dtype) else fp32


def _unary(E, inputs, dy, apply, reference, names, tol, size):
    """A case whose output gets the upstream gradient ``dy`` and whose ``inputs`` all want
    gradients; ``apply(F, *leaves)``, ``reference(*float32 leaves)``."""
    torch = E.torch

    def make():
        return _leaves(*inputs), dy.clone()

    def call(F, state):
        leaves, g = state
        y = apply(F, *leaves)
        y.backward(g)
        return [y] + [t.grad for t in leaves]

    def ref():
        leaves = _f32(*inputs)
        y = reference(*leaves)
        y.backward(dy.float())
        return [y] + [t.grad for t in leaves]
    return Case(size, dy.dtype, make, call, ref, names, tol)


@case("rms_norm")
def _rms_norm(E):
    torch = E.torch
    dt = E.dtype(torch.bfloat16)
    BT, H = E.tokens(8192), E.dim(4096, 100)
    x, w, dy = E.randn(BT, H, dtype=dt), E.randn(H, dtype=dt), E.randn(BT, H, dtype=dt)

    def reference(x, w):            # Llama's: the normalized row in x's dtype times w
        return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)).to(dt).float() * w
    # Liger's LigerRMSNorm defaults: offset 0, "llama" casting, dX written over dY
    return _unary(E, (x, w), dy, lambda F, x, w: F.apply(x, w, 1e-6, 0.0, "llama", True),
                  reference, ["y", "dx", "dw"],
                  _tol(torch, dt, (1e-4, 1e-4), (2e-1, 2e-2)), f"{BT}x{H}")


@case("layer_norm")
def _layer_norm(E):
    torch = E.torch
    dt = E.dtype(torch.bfloat16)
    BT, H = E.tokens(8192), E.dim(4096, 100)
    x, w, b, dy = (E.randn(*s, dtype=dt) for s in ((BT, H), (H,), (H,), (BT, H)))
    t = _tol(torch, dt, (1e-4, 1e-4), (2e-2, 2e-2))
    tw = _tol(torch, dt, (1e-3, 1e-3), (1e-1, 2e-2))      # dw, db: sums over the rows
    return _unary(E, (x, w, b), dy, lambda F, x, w, b: F.apply(x, w, b, 1e-6),
                  lambda x, w, b: torch.nn.functional.layer_norm(x, (H,), w, b, 1e-6),
                  ["y", "dx", "dw", "db"], [t, t, tw, tw], f"{BT}x{H}")


@case("group_norm")
def _group_norm(E):
    torch = E.torch
    dt = E.dtype(torch.bfloat16)
    C, HS = E.dim(4096, 12), E.dim(512, 40)      # channels_per_group 4, H 512 (Liger's script)
    G = C // 4
    B = max(1, E.tokens(8192, 2 * HS) // HS)
    x, w, b, dy = (E.randn(*s, dtype=dt) for s in ((B, C, HS), (C,), (C,), (B, C, HS)))
    t = _tol(torch, dt, (1e-4, 1e-4), (5e-2, 5e-2))
    tw = _tol(torch, dt, (1e-3, 1e-3), (1e-1, 2e-2))
    return _unary(E, (x, w, b), dy, lambda F, x, w, b: F.apply(x, w, b, C, G, 1e-6),
                  lambda x, w, b: torch.nn.functional.group_norm(x, G, w, b, 1e-6),
                  ["y", "dx", "dw", "db"], [t, t, tw, tw], f"{B}x{C}x{HS}, {G} groups")


@case("dyt")
def _dyt(E):
    torch = E.torch
    dt = E.dtype(torch.bfloat16)
    BT, H = E.tokens(8192), E.dim(4096, 100)
    x, dy = E.randn(BT, H, dtype=dt), E.randn(BT, H, dtype=dt)
    a = torch.full((1,), 0.5, device=E.device).to(dt)
    g, b = E.randn(H, dtype=dt), E.randn(H, dtype=dt)
    t = _tol(torch, dt, (1e-4, 1e-4), (5e-2, 5e-2))
    ta = _tol(torch, dt, (1e-2, 1e-3), (5e-1, 5e-2))       # dalpha: a sum over every element
    tw = _tol(torch, dt, (2e-3, 2e-3), (1e-1, 5e-2))
    return _unary(E, (x, a, g, b), dy, lambda F, x, a, g, b: F.apply(x, a, g, b),
                  lambda x, a, g, b: g * torch.tanh(x * a) + b,
                  ["y", "dx", "dalpha", "dgamma", "dbeta"], [t, t, ta, tw, tw], f"{BT}x{H}")


@case("softmax")
def _softmax(E):
    torch = E.torch
    dt = E.dtype(torch.bfloat16)
    BT, H = E.tokens(8192), E.dim(4096, 100)
    x, dy = E.randn(BT, H, dtype=dt), E.randn(BT, H, dtype=dt)
    return _unary(E, (x,), dy, lambda F, x: F.apply(x), lambda x: torch.softmax(x, -1),
                  ["y", "dx"], _tol(torch, dt, (1e-5, 1e-5), (5e-2, 5e-2)), f"{BT}x{H}")


def _gated(function_activation):
    def build(E):
        torch = E.torch
        dt = E.dtype(torch.bfloat16)
        BT, I = E.tokens(8192), E.dim(14336, 100)
        a, b, dy = (E.randn(1, BT, I, dtype=dt) for _ in range(3))
        return _unary(E, (a, b), dy, lambda F, a, b: F.apply(a, b),
                      lambda a, b: function_activation(torch, a) * b, ["y", "da", "db"],
                      _tol(torch, dt, (1e-5, 1e-5), (1e-2, 1e-2)), f"1x{BT}x{I}")
    return build


case("swiglu")(_gated(lambda torch, a: torch.nn.functional.silu(a)))
case("geglu")(_gated(lambda torch, a: torch.nn.functional.gelu(a, approximate="tanh")))


def _rotate_half(torch, x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), -1)


@case("rope")
def _rope(E):
    torch = E.torch
    dt = E.dtype(torch.bfloat16)
    S, HQ, HK, D = E.tokens(8192), E.dim(32, 4), E.dim(8, 2), E.dim(128, 16)
    # Liger's script: (1, seq, heads, head_dim) tensors seen as (1, heads, seq, head_dim)
    q0 = E.randn(1, S, HQ, D, dtype=dt).transpose(1, 2)
    k0 = E.randn(1, S, HK, D, dtype=dt).transpose(1, 2)
    inv = 1.0 / (500000.0 ** (torch.arange(0, D, 2, device=E.device, dtype=torch.float32) / D))
    ang = torch.arange(S, device=E.device, dtype=torch.float32)[:, None] * inv[None]
    ang = torch.cat((ang, ang), -1)[None]                          # (1, S, D)
    cos, sin = ang.cos().to(dt), ang.sin().to(dt)
    dq, dk = E.randn(1, HQ, S, D, dtype=dt), E.randn(1, HK, S, D, dtype=dt)

    def make():
        return _leaves(q0, k0), (dq.clone(), dk.clone())

    def call(F, state):
        (q, k), g = state
        qo, ko = F.apply(q, k, cos, sin)
        torch.autograd.backward((qo, ko), g)
        return [qo, ko, q.grad, k.grad]

    def ref():
        q, k = _f32(q0, k0)
        c, s = cos.float().unsqueeze(1), sin.float().unsqueeze(1)
        qo = q * c + _rotate_half(torch, q) * s
        ko = k * c + _rotate_half(torch, k) * s
        torch.autograd.backward((qo, ko), (dq.float(), dk.float()))
        return [qo, ko, q.grad, k.grad]
    return Case(f"q 1x{HQ}x{S}x{D}, k 1x{HK}x{S}x{D}", dt, make, call, ref,
                ["q", "k", "dq", "dk"], _tol(torch, dt, (1e-5, 1e-5), (1e-1, 1e-5)))


def _scalar_loss(E, size, dtype, leaf, apply, reference, names, tol):
    """A loss of one input that wants its gradient: ``apply(F, x)`` -> the loss."""
    def make():
        return _leaves(leaf)

    def call(F, state):
        x, = state
        loss = apply(F, x)
        loss.backward()
        return [loss, x.grad]

    def ref():
        x, = _f32(leaf)
        loss = reference(x)
        loss.backward()
        return [loss, x.grad]
    return Case(size, dtype, make, call, ref, names, tol)


@case("cross_entropy")
def _cross_entropy(E):
    torch = E.torch
    dt = E.dtype(torch.float32)
    BT, V = E.tokens(4096), E.dim(128256, 300)
    x = E.randn(BT, V, dtype=dt)
    t = torch.randint(V, (BT,), device=E.device)
    return _scalar_loss(
        E, f"{BT}x{V}", dt, x,
        lambda F, x: F.apply(x, t, None, -100, 0.0, 0.0, "mean", None, False, False, False)[0],
        lambda x: torch.nn.functional.cross_entropy(x, t), ["loss", "dx"],
        _tol(torch, dt, (1e-5, 1e-4), (5e-2, 5e-2)))


@case("fused_linear_cross_entropy")
def _flce(E):
    torch = E.torch
    dt = E.dtype(torch.bfloat16)
    BT, H, V = E.tokens(4096), E.dim(4096, 64), E.dim(128256, 300)
    x0, w0 = E.randn(BT, H, dtype=dt), E.randn(V, H, dtype=dt, scale=H ** -0.5)
    t = torch.randint(V, (BT,), device=E.device)

    def make():
        return _leaves(x0, w0)

    def call(F, state):
        x, w = state
        loss = F.apply(x, w, t)[0]
        loss.backward()
        return [loss, x.grad, w.grad]

    def ref():
        x, w = _f32(x0, w0)
        loss = torch.nn.functional.cross_entropy(x @ w.t(), t)
        loss.backward()
        return [loss, x.grad, w.grad]
    return Case(f"{BT}x{H} @ {V}x{H}", dt, make, call, ref, ["loss", "dx", "dw"],
                _tol(torch, dt, (1e-4, 1e-3), (2e-2, 2e-2)))


@case("kl_div")
def _kl_div(E):
    torch = E.torch
    dt = E.dtype(torch.float32)
    BT, V = E.tokens(4096), E.dim(128256, 300)
    p = E.randn(BT, V, dtype=torch.float32).log_softmax(-1).to(dt)
    q = E.randn(BT, V, dtype=torch.float32).softmax(-1).to(dt)
    return _scalar_loss(
        E, f"{BT}x{V}", dt, p, lambda F, p: F.apply(p, q, "batchmean", False, 1e-10),
        lambda p: torch.nn.functional.kl_div(p, q.float(), reduction="batchmean"),
        ["loss", "dy_pred"], _tol(torch, dt, (1e-6, 1e-5), (1e-2, 5e-2)))


@case("jsd")
def _jsd(E):
    torch = E.torch
    dt = E.dtype(torch.float32)
    BT, V = E.tokens(4096), E.dim(128256, 300)
    x = E.randn(BT, V, dtype=torch.float32).log_softmax(-1).to(dt)
    t = E.randn(BT, V, dtype=torch.float32).log_softmax(-1).to(dt)

    def reference(lq):
        lp = t.float()
        m = 0.5 * (lq.exp() + lp.exp())
        kl = torch.nn.KLDivLoss(reduction="none", log_target=True)
        return (0.5 * kl(m.log(), lp).sum(-1) + 0.5 * kl(m.log(), lq).sum(-1)).sum() / BT
    return _scalar_loss(E, f"{BT}x{V}", dt, x, lambda F, x: F.apply(x, t, None, 0.5, -100),
                        reference, ["loss", "dx"], _tol(torch, dt, (1e-6, 1e-5), (1e-2, 5e-2)))


# --------------------------------------------------------------------------------------------------
# The two implementations
def install_liger_packages(checkout: str) -> None:
    """Empty ``liger_kernel`` and ``liger_kernel.ops`` packages over the checkout's folders (their
    ``__init__`` files import every backend and Hugging Face): the op modules import one by
    one."""
    src = os.path.join(checkout, "src", "liger_kernel")
    if not os.path.isfile(os.path.join(src, "ops", "rms_norm.py")):
        raise SystemExit(f"{checkout}: no src/liger_kernel/ops/rms_norm.py (not a Liger-Kernel "
                         f"checkout)")
    for name, path in (("liger_kernel", src), ("liger_kernel.ops", os.path.join(src, "ops"))):
        m = types.ModuleType(name)
        m.__path__ = [path]
        sys.modules[name] = m


def load(kind: str, op: str):
    """The autograd Function of ``op``: ``kind`` "tilejit" (the gallery) or "liger"; an
    exception when it does not import."""
    name = f"examples.liger.{op}" if kind == "tilejit" else f"liger_kernel.ops.{op}"
    if kind == "tilejit" and not os.path.isfile(os.path.join(GALLERY, f"{op}.py")):
        raise FileNotFoundError(f"no examples/liger/{op}.py")
    if kind == "liger" and "liger_kernel.ops" not in sys.modules:
        raise FileNotFoundError("no Liger-Kernel checkout given")
    return getattr(importlib.import_module(name), FUNCTIONS[op])


def gallery_kernels() -> List[tuple]:
    """(module, name, kernel) for every tilejit kernel in the loaded gallery modules (the op
    modules and the helpers they share, however they were imported)."""
    import tilejit as tile
    out = []
    for m in list(sys.modules.values()):
        f = getattr(m, "__file__", None) or ""
        if os.path.dirname(os.path.abspath(f)) == GALLERY:
            out += [(m, k, v) for k, v in vars(m).items() if isinstance(v, tile.Kernel)]
    return out


_TUNED_KERNELS: Dict[tuple, object] = {}


class Compiled:
    """Within the block, every gallery kernel is ``tile.entry(num_worker_warps=w,
    occupancy=o)`` of itself: the same function compiled with those options (made once per
    kernel and setting, so each compiles once). ``Compiled(None)`` changes nothing."""

    def __init__(self, setting: Optional[tuple]):
        self.setting, self.saved = setting, []

    def __enter__(self):
        if self.setting is None:
            return self
        import tilejit as tile
        w, o = self.setting
        for m, name, k in gallery_kernels():
            key = (id(k), self.setting)
            if key not in _TUNED_KERNELS:
                _TUNED_KERNELS[key] = (k, tile.entry(num_worker_warps=w, occupancy=o)(k))
            self.saved.append((m, name, k))
            setattr(m, name, _TUNED_KERNELS[key][1])
        return self

    def __exit__(self, *exc):
        for m, name, k in self.saved:
            setattr(m, name, k)
        self.saved = []


# --------------------------------------------------------------------------------------------------
# Running
class Runner:
    def __init__(self, torch, reps: int, sim: bool):
        self.torch, self.reps, self.sim = torch, reps, sim
        self.scratch = None if sim else torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8,
                                                    device="cuda")

    def sync(self):
        if not self.sim:
            self.torch.cuda.synchronize()

    def check(self, c: Case, F, want) -> List[str]:
        got = c.call(F, c.make())
        self.sync()
        return compare(self.torch, got, want, c.names, c.tol)

    def time(self, c: Case, functions: List, settings: Optional[List] = None) -> List[float]:
        """Median ms of a forward + backward through each Function (with its kernels compiled
        under ``settings[i]``, swapped in outside the timed region), the Functions alternating
        round by round (the GPU's clock drifts as it warms). On the simulator: the wall time of
        one run after one warm-up."""
        torch = self.torch
        settings = settings or [None] * len(functions)
        for F, s in zip(functions, settings):
            with Compiled(s):
                for _ in range(1 if self.sim else 2):
                    c.call(F, c.make())
        times = [[] for _ in functions]
        for _ in range(1 if self.sim else self.reps):
            for i, F in enumerate(functions):
                state = c.make()
                with Compiled(settings[i]):
                    if self.sim:
                        t0 = time.perf_counter()
                        c.call(F, state)
                        times[i].append((time.perf_counter() - t0) * 1e3)
                        continue
                    self.scratch.zero_()
                    torch.cuda.synchronize()
                    a = torch.cuda.Event(enable_timing=True)
                    b = torch.cuda.Event(enable_timing=True)
                    a.record()
                    c.call(F, state)
                    b.record()
                    b.synchronize()
                times[i].append(a.elapsed_time(b))
                del state
        return [statistics.median(t) for t in times]


def run_op(args, R: Runner, E: Env, op: str) -> dict:
    torch = R.torch
    r = {"op": op, "size": "", "dtype": "", "tilejit_ms": None, "liger_ms": None,
         "tilejit_correct": None, "liger_correct": None, "error": "", "tuned": None}
    torch.manual_seed(1234)
    try:
        c = CASES[op](E)
    except Exception as e:  # noqa: BLE001
        r["error"] = f"inputs: {_first_line(e)}"
        return r
    r["size"], r["dtype"] = c.size, str(c.dtype).replace("torch.", "")
    try:
        want = c.ref()
    except Exception as e:  # noqa: BLE001
        r["error"] = f"torch reference: {_first_line(e)}"
        return r
    impls = {}
    for kind in ("tilejit", "liger"):
        try:
            F = load(kind, op)
        except Exception as e:  # noqa: BLE001
            r["error"] += f"{'gallery' if kind == 'tilejit' else 'Liger'} module: " \
                          f"{_first_line(e)}. "
            if args.verbose:
                traceback.print_exc()
            continue
        try:
            bad = R.check(c, F, want)
        except Exception as e:  # noqa: BLE001
            r["error"] += f"{kind} fails: {_first_line(e)}. "
            if args.verbose:
                traceback.print_exc()
            continue
        r[f"{kind}_correct"] = not bad
        if bad:
            r["error"] += f"{kind}: {'; '.join(bad)}. "
        impls[kind] = F
    try:
        kinds = list(impls)
        for kind, ms in zip(kinds, R.time(c, [impls[k] for k in kinds])):
            r[f"{kind}_ms"] = ms
        if args.tuned and "tilejit" in impls:
            r["tuned"] = tune(R, c, impls["tilejit"], want)
    except Exception as e:  # noqa: BLE001
        r["error"] += f"timing failed: {_first_line(e)}. "
        if args.verbose:
            traceback.print_exc()
    return r


def tune(R: Runner, c: Case, F, want) -> dict:
    """The plain kernels' time and each setting's (checked first), timed in alternating
    rounds."""
    variants: Dict[str, object] = {"plain": None}
    for setting in TUNED:
        label = f"{setting[0]}w/occ{setting[1]}"
        with Compiled(setting):
            try:
                bad = R.check(c, F, want)
            except Exception as e:  # noqa: BLE001
                variants[label] = f"fails: {_first_line(e)}"
                continue
        variants[label] = "wrong" if bad else setting
    timed = [k for k, v in variants.items() if not isinstance(v, str)]
    times = R.time(c, [F] * len(timed), [variants[k] for k in timed])
    out = {k: ms for k, ms in zip(timed, times)}
    out.update({k: v for k, v in variants.items() if isinstance(v, str)})
    return out


def _ms(v) -> str:
    return f"{v:.3f}" if isinstance(v, (int, float)) else "-"


def print_table(results: List[dict], tuned: bool) -> None:
    head = ["op", "size", "dtype", "tilejit ms", "Liger Triton ms", "Liger/tilejit", "correct"]
    if tuned:
        head += ["best tuned ms (warps/occupancy)", "plain/tuned"]
    head.append("notes")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in results:
        t, lg = r["tilejit_ms"], r["liger_ms"]
        yes = {True: "yes", False: "NO", None: "-"}
        row = [r["op"], r["size"], r["dtype"], _ms(t), _ms(lg),
               f"{lg / t:.2f}" if t and lg else "-",
               f"{yes[r['tilejit_correct']]} / {yes[r['liger_correct']]}"]
        if tuned:
            tu = r.get("tuned") or {}
            best = min(((v, k) for k, v in tu.items() if k != "plain" and
                        isinstance(v, float)), default=None)
            plain = tu.get("plain")
            row += [f"{best[0]:.3f} ({best[1]})" if best else "-",
                    f"{plain / best[0]:.2f}" if best and plain else "-"]
        row.append(r["error"].strip().replace("|", "/"))
        print("| " + " | ".join(row) + " |")


def skipped(why: str) -> int:
    print(f"liger: skipped: {why}; nothing to measure")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", nargs="?", default="",
                    help="a Liger-Kernel checkout (optional with --simulator)")
    ap.add_argument("--quick", action="store_true", help="a quarter of the tokens")
    ap.add_argument("--only", default="", help="comma-separated ops (default: all 12)")
    ap.add_argument("--dtype", default="model", choices=["model", "float32", "bfloat16",
                                                         "float16"],
                    help="the inputs' dtype ('model': the one Liger's script uses per op)")
    ap.add_argument("--reps", type=int, default=20, help="timed runs of each Function")
    ap.add_argument("--json", default="", help="also write the results as JSON here")
    ap.add_argument("--tuned", action="store_true",
                    help="also time the gallery's kernels under warps x occupancy settings")
    ap.add_argument("--simulator", action="store_true",
                    help="tilejit's CPU simulator, CPU tensors, tiny sizes (checks the harness; "
                         "Liger's Triton kernels need a GPU)")
    ap.add_argument("-v", "--verbose", action="store_true", help="tracebacks of failures")
    args = ap.parse_args(argv)

    sys.path.insert(0, ROOT)
    if args.simulator:
        os.environ["TILEJIT_SIMULATE"] = "1"
    from tilejit.runtime import backend
    if backend.current() != backend.CUDA and not args.simulator:
        return skipped(f"no GPU ({backend.reason()})")
    try:
        import torch
    except ImportError:
        return skipped("PyTorch is not installed")
    if not args.simulator and not torch.cuda.is_available():
        return skipped("torch sees no GPU")
    if args.checkout:
        install_liger_packages(os.path.abspath(args.checkout))
    elif not args.simulator:
        ap.error("the path of a Liger-Kernel checkout is required")
    sys.path.insert(1, GALLERY)         # a gallery module that imports its helpers by name
    wanted = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(wanted) - set(CASES))
    if unknown:
        ap.error(f"unknown op(s) {', '.join(unknown)}; the ops: {', '.join(CASES)}")
    E = Env(torch, None if args.dtype == "model" else getattr(torch, args.dtype), args.quick,
            args.simulator)
    R = Runner(torch, args.reps, args.simulator)
    where = "the simulator (wall ms of one run, tiny sizes)" if args.simulator else \
        torch.cuda.get_device_name()
    print(f"Liger gallery (tilejit) against Liger-Kernel's Triton kernels on {where}, "
          f"torch {torch.__version__}{', quick' if args.quick else ''}; "
          f"checkout {os.path.abspath(args.checkout) if args.checkout else '(none)'}")
    results = []
    t0 = time.perf_counter()
    for op in [o for o in CASES if not wanted or o in wanted]:
        results.append(run_op(args, R, E, op))
        if not args.simulator:
            torch.cuda.empty_cache()
        if args.json:                   # what is done so far survives a time limit
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
        print(f"  {op}: done at {time.perf_counter() - t0:.0f} s", flush=True)
    print_table(results, args.tuned)
    ok = all(r["tilejit_correct"] for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
