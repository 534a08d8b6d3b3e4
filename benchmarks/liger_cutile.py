"""Liger-Kernel's cuTile kernels, unchanged, on tilejit.cutile: imports? runs? correct? time.

    python benchmarks/liger_cutile.py PATH_TO_LIGER_CHECKOUT [--quick] [--simulator]
        [--only OP[,OP...]] [--dtype float32|bfloat16] [--reps N] [--no-cutile] [--together]

Liger's ``src/liger_kernel/ops/cutile/ops/*.py`` import ``cuda.tile as ct`` (and
``cuda.tile.tune``); here ``sys.modules`` maps ``cuda``, ``cuda.tile`` and ``cuda.tile.tune`` to
``tilejit.cutile`` (a user's one-line change, done for them), and the op modules are imported one
by one from the checkout (its package ``__init__`` files, which import everything and the Triton
backends, are skipped), so one module that does not import does not hide the others. Of the
checkout only ``src/liger_kernel/{utils.py, ops/utils.py, ops/cutile/}`` are read (a copy of
those three does for a GPU machine; ``ops/utils.py`` imports Triton).

Each op runs forward and backward through its ``torch.autograd.Function`` the way Liger's tests
call it (``test/transformers/test_*.py``) and is checked against a plain torch reference (the
tests' reference formulas) with the tests' tolerances. ``--simulator`` (or a machine without a
GPU): tilejit's CPU simulator, CPU tensors, small sizes, ``torch.cuda``'s stream/device queries
answered for one simulated device (compute capability 9.0, so the SM90-only fused linear cross
entropy runs too); the time column is wall time of one forward+backward, compiles included. On a
GPU: ``--quick`` or full sizes, the time is the median of ``--reps`` forward+backward calls
between CUDA events (inputs made outside the timed region; Liger's host code and the launches'
host time are in it, as a training step sees them); with ``cuda.tile`` importable (and not
``--no-cutile``) the same ops run under real cuTile Python in a subprocess for a second column.

``--together`` runs cuTile Python in the same process (each op module imported once per
implementation, ``cuda.tile`` switched around each call) and interleaves the two timings round by
round, so clocks and allocator state are the same for both: use it for ratios.

Exit status 0 when every op imports, runs and is correct, 1 otherwise.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
import traceback
import types
from typing import Callable, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PKG = "liger_kernel.ops.cutile.ops"


# --------------------------------------------------------------------------------------------------
# cuda.tile -> tilejit.cutile, and Liger's op modules one by one
def install_tilejit_shim() -> None:
    """``import cuda.tile as ct`` (and ``from cuda.tile.tune import ...``) give tilejit.cutile."""
    sys.path.insert(0, ROOT)
    import tilejit.cutile as tct
    try:
        import cuda                  # cuda-python's namespace package, when installed
    except ImportError:
        cuda = types.ModuleType("cuda")
        cuda.__path__ = []
        sys.modules["cuda"] = cuda
    sys.modules["cuda.tile"] = tct
    sys.modules["cuda.tile.tune"] = tct.tune
    cuda.tile = tct


def install_liger_packages(checkout: str) -> str:
    """Empty package modules for ``liger_kernel`` ... ``liger_kernel.ops.cutile.ops`` (their
    ``__init__`` files import every backend): the op modules then import one at a time."""
    src = os.path.join(checkout, "src", "liger_kernel")
    if not os.path.isdir(os.path.join(src, "ops", "cutile", "ops")):
        raise SystemExit(f"{checkout}: no src/liger_kernel/ops/cutile/ops (not a Liger-Kernel "
                         f"checkout with cuTile kernels)")
    parts = [("liger_kernel", src), ("liger_kernel.ops", os.path.join(src, "ops")),
             ("liger_kernel.ops.cutile", os.path.join(src, "ops", "cutile")),
             (PKG, os.path.join(src, "ops", "cutile", "ops"))]
    for name, path in parts:
        m = types.ModuleType(name)
        m.__path__ = [path]
        sys.modules[name] = m
    return parts[-1][1]


def op_modules(ops_dir: str) -> List[str]:
    return sorted(f[:-3] for f in os.listdir(ops_dir)
                  if f.endswith(".py") and f not in ("__init__.py", "utils.py"))


class FakeStream:
    """``torch.cuda.current_stream()`` on the simulator: ``ct.launch`` reads ``cuda_stream``."""
    cuda_stream = 0
    device_index = None

    def __init__(self, *args, **kwargs):
        pass

    def synchronize(self):
        pass

    def wait_stream(self, other):
        pass


def patch_torch_cuda_for_simulator(torch) -> None:
    """The ``torch.cuda`` queries Liger's host code makes, answered for one simulated device
    (tensors are CPU tensors; ``torch.cuda.is_available()`` stays False)."""
    c = torch.cuda
    c.current_stream = lambda device=None: FakeStream()
    c.Stream = FakeStream
    c.current_device = lambda: 0
    c.device = lambda device=None: contextlib.nullcontext()
    c.synchronize = lambda device=None: None
    c.get_device_properties = lambda device=None: types.SimpleNamespace(
        multi_processor_count=4, name="tilejit simulator", total_memory=1 << 34)
    c.get_device_capability = lambda device=None: (9, 0)


@contextlib.contextmanager
def cuda_reported_available(torch, sim: bool):
    """``torch.cuda.is_available()`` True for an op that refuses to run without it (the
    simulator stands for the GPU)."""
    if not sim:
        yield
        return
    old = torch.cuda.is_available
    torch.cuda.is_available = lambda: True
    try:
        yield
    finally:
        torch.cuda.is_available = old


# --------------------------------------------------------------------------------------------------
# The cases
class Env:
    def __init__(self, torch, device: str, dtype, sim: bool, quick: bool):
        self.torch, self.device, self.dtype, self.sim, self.quick = torch, device, dtype, sim, quick
        self.lowp = dtype != torch.float32

    def size(self, sim, quick, full):
        return sim if self.sim else quick if self.quick else full

    def randn(self, *shape, dtype=None, scale=1.0):
        t = self.torch.randn(*shape, dtype=self.torch.float32) * scale
        return t.to(device=self.device, dtype=dtype or self.dtype)

    def randint(self, high, shape):
        return self.torch.randint(0, high, shape, dtype=self.torch.int64).to(self.device)

    def tol(self, fp32, lowp, gpu32=None):
        """The tests' tolerances for float32 and for bf16/fp16; ``gpu32``: float32 at the GPU
        sizes, where a reduction over thousands of rows (or an approximate tanh) drifts past
        the tests' small-size tolerances, cuTile Python's results as much as tilejit's."""
        if self.lowp:
            return lowp
        return gpu32 if gpu32 is not None and not self.sim else fp32


class Case:
    """``setup()`` -> state; ``call(state)`` -> Liger's outputs and gradients (a list of
    tensors); ``ref()`` -> the torch reference's, in the same order; ``names``; ``tol`` (atol,
    rtol) or one per output; ``needs_cuda``: run with torch.cuda reported available."""

    def __init__(self, setup, call, ref, names, tol, needs_cuda=False, note=""):
        self.setup, self.call, self.ref, self.names = setup, call, ref, names
        self.tol, self.needs_cuda, self.note = tol, needs_cuda, note


CASES: Dict[str, Callable] = {}


def case(module: str, label: Optional[str] = None):
    def deco(fn):
        CASES[label or module] = (module, fn)
        return fn
    return deco


def _leaves(*ts):
    return [t.detach().clone().requires_grad_(True) for t in ts]


def _grads(*ts):
    return [t.grad for t in ts]


@case("softmax")
def _softmax(E, M):
    torch = E.torch
    R, C = E.size((4, 200), (1024, 2048), (4096, 8192))
    x0, dy = E.randn(R, C), E.randn(R, C)

    def call(g):
        x, = _leaves(x0)
        y = M.LigerSoftmaxFunction.apply(x)
        y.backward(g)
        return [y, x.grad]

    def ref():
        x, = _leaves(x0)
        y = torch.softmax(x.float(), -1).to(E.dtype)
        y.backward(dy)
        return [y, x.grad]
    return Case(dy.clone, call, ref, ["y", "dx"], E.tol((1e-5, 1e-5), (1e-2, 1e-2)))


@case("cross_entropy")
def _cross_entropy(E, M):
    torch = E.torch
    N, V = E.size((6, 300), (4096, 32000), (8192, 128256))
    x0, t = E.randn(N, V), E.randint(V, (N,))
    t[::3] = -100                              # ignored rows (the kernel's early return)

    def setup():
        return _leaves(x0)

    def call(s):
        x, = s
        # neither z_loss nor token accuracy: one dummy array for both outputs (aliased)
        loss, z, acc, pred = M.LigerCrossEntropyFunction.apply(
            x, t, None, -100, 0.0, 0.1, "mean", None, False, False, False)
        loss.backward()
        return [loss, x.grad]

    def ref():
        x, = _leaves(x0)
        loss = torch.nn.functional.cross_entropy(x.float(), t, ignore_index=-100,
                                                 label_smoothing=0.1, reduction="mean")
        loss.backward()
        return [loss, x.grad]
    return Case(setup, call, ref, ["loss", "dx"], E.tol((1e-6, 1e-5), (5e-2, 5e-2)),
                note="z_loss and token_accuracy share one dummy array")


@case("cross_entropy", "cross_entropy (z_loss, accuracy)")
def _cross_entropy_z(E, M):
    torch = E.torch
    N, V = E.size((5, 130), (4096, 32000), (8192, 128256))
    x0, t = E.randn(N, V), E.randint(V, (N,))
    t[1] = -100

    def setup():
        return _leaves(x0)

    def call(s):
        x, = s
        loss, z, acc, pred = M.LigerCrossEntropyFunction.apply(
            x, t, None, -100, 1e-4, 0.0, "sum", 30.0, True, True, True)
        loss.backward()
        return [loss, z, acc, pred, x.grad]

    def ref():
        x, = _leaves(x0)
        xf = 30.0 * torch.tanh(x.float() / 30.0)
        valid = t != -100
        lse = torch.logsumexp(xf, -1)
        ce = torch.nn.functional.cross_entropy(xf, t, ignore_index=-100, reduction="none")
        z = torch.where(valid, 1e-4 * lse * lse, 0.0)
        loss = (ce + z).sum()
        loss.backward()
        pred = torch.where(valid, xf.argmax(-1), -1)
        acc = ((xf.argmax(-1) == t) & valid).float().sum() / valid.sum()
        return [loss, z.sum(), acc, pred, x.grad]
    return Case(setup, call, ref, ["loss", "z_loss", "accuracy", "predicted", "dx"],
                E.tol((1e-5, 1e-5), (5e-2, 5e-2)))


@case("dyt")
def _dyt(E, M):
    torch = E.torch
    BT, C = E.size((6, 200), (4096, 4096), (8192, 8192))
    x0, a0, g0, b0, dy = E.randn(BT, C), E.randn(1), E.randn(C), E.randn(C), E.randn(BT, C)

    def call(dy_):
        x, a, g, b = _leaves(x0, a0, g0, b0)
        y = M.LigerDyTFunction.apply(x, a, g, b)
        y.backward(dy_)
        return [y] + _grads(x, a, g, b)

    def ref():
        x, a, g, b = _leaves(x0, a0, g0, b0)
        y = g * torch.tanh(x * a) + b
        y.backward(dy)
        return [y] + _grads(x, a, g, b)
    t = E.tol((1e-5, 1e-5), (5e-2, 5e-2), (1e-4, 1e-4))
    return Case(dy.clone, call, ref, ["y", "dx", "dalpha", "dgamma", "dbeta"],
                [t, t, E.tol((1e-5, 1e-3), (5e-1, 5e-2), (1e-3, 1e-3)), E.tol(
                    (1e-5, 1e-5), (5e-2, 5e-2), (2e-3, 2e-3)), t])


def _rms(torch, x, eps):
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)


@case("fused_add_rms_norm")
def _fused_add_rms_norm(E, M):
    torch = E.torch
    BT, H = E.size((5, 96), (4096, 4096), (8192, 8192))
    x0, r0, w0, dy, ds = E.randn(BT, H), E.randn(BT, H), E.randn(H), E.randn(BT, H), \
        E.randn(BT, H)

    def call(g):
        x, r, w = _leaves(x0, r0, w0)
        y, s = M.LigerFusedAddRMSNormFunction.apply(x, r, w, 1e-6, 0.0, "llama", False)
        torch.autograd.backward((y, s), g)
        return [y, s] + _grads(x, r, w)

    def ref():
        x, r, w = _leaves(x0, r0, w0)
        s = x + r
        y = _rms(torch, s, 1e-6).to(E.dtype) * w
        torch.autograd.backward((y, s), (dy, ds))
        return [y, s] + _grads(x, r, w)
    return Case(lambda: (dy.clone(), ds.clone()), call, ref, ["y", "s", "dx", "dr", "dw"],
                E.tol((1e-4, 1e-5), (2e-1, 2e-2)))


@case("fused_linear_cross_entropy")
def _flce(E, M):
    torch = E.torch
    BT, H, V = E.size((16, 64, 256), (4096, 2048, 32000), (8192, 4096, 128256))
    bf = torch.bfloat16
    x0, w0 = E.randn(BT, H, dtype=bf, scale=0.5), E.randn(V, H, dtype=bf, scale=H ** -0.5)
    t = E.randint(V, (BT,))

    def call(_):
        x, w = _leaves(x0, w0)
        loss = M.LigerFusedLinearCrossEntropyFunction.apply(x, w, t)[0]
        loss.backward()
        return [loss] + _grads(x, w)

    def ref():
        x, w = _leaves(x0, w0)
        loss = torch.nn.functional.cross_entropy((x.float() @ w.float().t()), t)
        loss.backward()
        return [loss] + _grads(x, w)
    return Case(lambda: None, call, ref, ["loss", "dx", "dw"], (2e-2, 2e-2), needs_cuda=True,
                note="bf16 only, sm_90 only (Liger's rule)")


def _jsd_ref(torch, log_q, log_p, beta, label=None, ignore_index=-100):
    kl = torch.nn.KLDivLoss(reduction="none", log_target=True)
    if beta == 0.0:
        loss = kl(log_q, log_p).sum(-1)
    elif beta == 1.0:
        loss = kl(log_p, log_q).sum(-1)
    else:
        log_p, log_q = log_p.float(), log_q.float()
        m = torch.lerp(torch.exp(log_q), torch.exp(log_p), beta)
        loss = beta * kl(torch.log(m), log_p).sum(-1) + (1 - beta) * kl(torch.log(m), log_q).sum(-1)
    if label is not None:
        loss = torch.where(label != ignore_index, loss, 0.0)
        return (loss / (label != ignore_index).sum()).sum()
    return (loss / log_q.shape[0]).sum()


@case("fused_linear_jsd")
def _flj(E, M):
    torch = E.torch
    BT, H, V = E.size((8, 64, 200), (2048, 2048, 32000), (8192, 4096, 32000))
    xs0, ws0 = E.randn(BT, H // 2), E.randn(V, H // 2, scale=0.1)
    xt0, wt0 = E.randn(BT, H), E.randn(V, H, scale=0.1)
    labels = E.randint(V, (BT,))
    labels[::4] = -100

    def call(_):
        xs, ws = _leaves(xs0, ws0)
        loss = M.LigerFusedLinearJSDFunction.apply(xs, ws, xt0, wt0, labels, 0.5, -100, 1.0)
        loss.backward()
        return [loss] + _grads(xs, ws)

    def ref():
        xs, ws = _leaves(xs0, ws0)
        s = torch.log_softmax((xs @ ws.t()).float(), -1)
        t = torch.log_softmax((xt0 @ wt0.t()).float(), -1)
        loss = _jsd_ref(torch, s, t, 0.5, labels)
        loss.backward()
        return [loss] + _grads(xs, ws)
    return Case(lambda: None, call, ref, ["loss", "dx_student", "dw_student"],
                E.tol((1e-5, 5e-4), (5e-2, 5e-2)))


@case("fused_linear_scaled_cross_entropy")
def _flsce(E, M):
    torch = E.torch
    N, H, V = E.size((17, 31, 257), (2048, 2048, 32000), (8192, 4096, 32000))
    x0, w0 = E.randn(N, H, scale=0.25), E.randn(V, H, scale=H ** -0.5)
    t = E.randint(V, (N,))
    t[::11] = -100
    gn, ge = E.randn(N, dtype=torch.float32), E.randn(N)

    def call(g):
        x, w = _leaves(x0, w0)
        nll, ent = M.LigerFusedLinearScaledCrossEntropyFunction.apply(x, w, t, 0.8, -100, 3,
                                                                      True)
        torch.autograd.backward((nll, ent), g)
        return [nll, ent] + _grads(x, w)

    def ref():
        x, w = _leaves(x0, w0)
        logp = ((x @ w.t()).float() / 0.8).log_softmax(-1)
        valid = t != -100
        nll = torch.where(valid, -logp.gather(-1, t.clamp(min=0).unsqueeze(-1)).squeeze(-1),
                          0.0)
        ent = torch.where(valid, -(logp.exp() * logp).sum(-1), 0.0)
        torch.autograd.backward((nll, ent), (gn, ge))
        return [nll, ent] + _grads(x, w)
    return Case(lambda: (gn.clone(), ge.clone()), call, ref, ["nll", "entropy", "dx", "dw"],
                E.tol((6e-5, 6e-5), (8e-2, 5e-2)))


def _gated(function: str, activation):
    """A gated MLP activation case (geglu, swiglu): y = activation(a) * b, and its gradients."""
    def build(E, M):
        BT, I = E.size((6, 160), (4096, 4096), (8192, 14336))
        a0, b0, dy = E.randn(BT, I), E.randn(BT, I), E.randn(BT, I)

        def run(fn, g):
            a, b = _leaves(a0, b0)
            y = fn(a, b)
            y.backward(g)
            return [y] + _grads(a, b)
        return Case(dy.clone, lambda g: run(getattr(M, function).apply, g),
                    lambda: run(lambda a, b: activation(E.torch, a) * b, dy),
                    ["y", "da", "db"], E.tol((1e-5, 1e-5), (1e-2, 1e-2)))
    return build


case("geglu")(_gated("LigerGELUMulFunction",
                     lambda torch, a: torch.nn.functional.gelu(a, approximate="tanh")))


@case("group_norm")
def _group_norm(E, M):
    torch = E.torch
    B, C, G, H = E.size((2, 8, 4, 48), (16, 64, 8, 4096), (32, 128, 16, 8192))
    x0, w0, b0, dy = E.randn(B, C, H), E.randn(C), E.randn(C), E.randn(B, C, H)

    def call(g):
        x, w, b = _leaves(x0, w0, b0)
        y = M.LigerGroupNormFunction.apply(x, w, b, C, G, 1e-6)
        y.backward(g)
        return [y] + _grads(x, w, b)

    def ref():
        x, w, b = _leaves(x0, w0, b0)
        y = torch.nn.functional.group_norm(x, G, w, b, 1e-6)
        y.backward(dy)
        return [y] + _grads(x, w, b)
    return Case(dy.clone, call, ref, ["y", "dx", "dw", "db"],
                E.tol((1e-4, 1e-4), (5e-2, 5e-2)))


@case("grpo_loss")
def _grpo(E, M):
    torch = E.torch
    B, T, V = E.size((2, 5, 100), (8, 1024, 32000), (16, 2048, 65536))
    logits0 = E.randn(B, T + 1, V)
    ids = E.randint(V - 1, (B, T))
    mask = torch.ones_like(ids, dtype=torch.int32)
    mask[:, -2:] = 0
    f32 = torch.float32
    ref_logp, old_logp, adv = E.randn(B, T, dtype=f32), E.randn(B, T, dtype=f32), \
        E.randn(B, dtype=f32)
    temp, beta, lo, hi = 0.9, 0.04, 0.2, 0.4
    dy = E.randn(B, T, dtype=f32)

    def setup():
        return _leaves(logits0) + [dy.clone()]

    def call(s):
        lg, g = s
        loss, kl, clipped = M.GrpoLossFunction.apply(lg, old_logp, ref_logp, ids, adv, mask,
                                                     temp, beta, lo, hi, True, "grpo", None,
                                                     False)
        loss.backward(g)
        return [loss, kl, lg.grad]

    def ref():
        lg, = _leaves(logits0)
        logp = (lg[:, :-1].float() / temp).log_softmax(-1).gather(-1, ids.unsqueeze(-1)) \
            .squeeze(-1)
        c1 = torch.exp(logp - old_logp)
        c2 = torch.clamp(c1, 1 - lo, 1 + hi)
        l1, l2 = c1 * adv.unsqueeze(1), c2 * adv.unsqueeze(1)
        loss = -torch.min(l1, l2) * mask
        kl = (torch.exp(ref_logp - logp) - (ref_logp - logp) - 1) * mask
        loss = loss + beta * kl
        loss.backward(dy)
        return [loss, kl, lg.grad]
    return Case(setup, call, ref, ["loss", "kl", "dlogits"], E.tol((1e-5, 1e-5), (5e-2, 5e-1)))


def _scalar_loss(E, x0, liger, reference, names):
    """A loss of one input (jsd, kl_div): the loss and its gradient, from ``liger(x)`` and
    ``reference(x)``."""
    def run(fn):
        x, = _leaves(x0)
        loss = fn(x)
        loss.backward()
        return [loss, x.grad]
    return Case(lambda: None, lambda _: run(liger), lambda: run(reference), names,
                E.tol((1e-6, 1e-5), (1e-2, 5e-2)))


@case("jsd")
def _jsd(E, M):
    torch = E.torch
    BT, V = E.size((6, 200), (4096, 32000), (8192, 128256))
    x0 = E.randn(BT, V, dtype=torch.float32).log_softmax(-1).to(E.dtype)
    t0 = E.randn(BT, V, dtype=torch.float32).log_softmax(-1).to(E.dtype)
    return _scalar_loss(E, x0, lambda x: M.LigerJSDFunction.apply(x, t0, None, 0.5, -100),
                        lambda x: _jsd_ref(torch, x, t0, 0.5), ["loss", "dx"])


@case("kl_div")
def _kl_div(E, M):
    torch = E.torch
    BT, V = E.size((6, 200), (4096, 32000), (8192, 128256))
    p0 = E.randn(BT, V, dtype=torch.float32).log_softmax(-1).to(E.dtype)
    t0 = E.randn(BT, V, dtype=torch.float32).softmax(-1).to(E.dtype)
    return _scalar_loss(
        E, p0, lambda p: M.LigerKLDivLossFunction.apply(p, t0, "batchmean", False, 1e-10),
        lambda p: torch.nn.functional.kl_div(p, t0, reduction="batchmean", log_target=False),
        ["loss", "dy_pred"])


@case("layer_norm")
def _layer_norm(E, M):
    torch = E.torch
    BT, H = E.size((5, 96), (4096, 4096), (8192, 8192))
    x0, w0, b0, dy = E.randn(BT, H), E.randn(H), E.randn(H), E.randn(BT, H)

    def call(g):
        x, w, b = _leaves(x0, w0, b0)
        y = M.LigerLayerNormFunction.apply(x, w, b, 1e-6)
        y.backward(g)
        return [y] + _grads(x, w, b)

    def ref():
        x, w, b = _leaves(x0, w0, b0)
        y = torch.nn.functional.layer_norm(x, (H,), w, b, 1e-6)
        y.backward(dy)
        return [y] + _grads(x, w, b)
    t = E.tol((1e-5, 1e-5), (2e-2, 2e-2))
    tw = E.tol((1e-5, 1e-5), (2e-2, 2e-2), (2e-4, 2e-4))      # dw, db: sums over the rows
    return Case(dy.clone, call, ref, ["y", "dx", "dw", "db"], [t, t, tw, tw])


@case("llama4_rope")
def _llama4_rope(E, M):
    torch = E.torch
    B, S, HQ, HK, D = E.size((1, 4, 2, 1, 32), (2, 2048, 32, 8, 128), (4, 4096, 32, 8, 128))
    q0, k0 = E.randn(B, S, HQ, D), E.randn(B, S, HK, D)
    ang = torch.arange(S, dtype=torch.float32)[:, None] * \
        (10000.0 ** (-torch.arange(0, D, 2, dtype=torch.float32) / D))[None]
    freqs = torch.polar(torch.ones_like(ang), ang).to(E.device)            # (S, D/2)
    dq, dk = E.randn(B, S, HQ, D), E.randn(B, S, HK, D)

    def call(g):
        q, k = _leaves(q0, k0)
        qo, ko = M.LigerLlama4RopeFunction.apply(q, k, freqs)
        torch.autograd.backward((qo, ko), g)
        return [qo, ko] + _grads(q, k)

    def rot(x):
        xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(xc * freqs[None, :, None, :]).flatten(3).to(x.dtype)

    def ref():
        q, k = _leaves(q0, k0)
        qo, ko = rot(q), rot(k)
        torch.autograd.backward((qo, ko), (dq, dk))
        return [qo, ko] + _grads(q, k)
    return Case(lambda: (dq.clone(), dk.clone()), call, ref, ["q", "k", "dq", "dk"],
                E.tol((1e-5, 1e-5), (1e-1, 1e-5)))


def _mta_ref(torch, scores, weight, bias, K, groups, sparse):
    L = scores.shape[-1]
    mask = torch.tril(torch.ones(L, L, dtype=torch.bool, device=scores.device)).view(1, 1, L, L)
    s = scores.masked_fill(~mask, -1e9)
    probs = _sparsemax_ref(torch, s, -1) if sparse else torch.softmax(s, -1)
    out = torch.nn.functional.conv2d(probs, weight, bias, stride=1, padding=K // 2,
                                     groups=groups)
    return out.masked_fill(~mask, 0.0)


def _mta(E, M, sparse):
    torch = E.torch
    B, C, L, K, G = E.size((1, 2, 8, 3, 1), (2, 8, 512, 3, 2), (4, 8, 1024, 3, 2))
    s0, w0, b0 = E.randn(B, C, L, L), E.randn(C, C // G, K, K, scale=0.3), E.randn(C)
    dy = E.randn(B, C, L, L)

    def call(g):
        s, w, b = _leaves(s0, w0, b0)
        y = M.LigerMultiTokenAttentionFunction.apply(s, w, b, 1, K // 2, 1, G, sparse)
        y.backward(g)
        return [y] + _grads(s, w, b)

    def ref():
        s, w, b = _leaves(s0, w0, b0)
        y = _mta_ref(torch, s, w, b, K, G, sparse)
        y.backward(dy)
        return [y] + _grads(s, w, b)
    return Case(dy.clone, call, ref, ["y", "dscores", "dw", "db"],
                E.tol((1e-4, 1e-4), (5e-2, 5e-2)))


@case("multi_token_attention")
def _mta_dense(E, M):
    return _mta(E, M, False)


@case("multi_token_attention", "multi_token_attention (sparse)")
def _mta_sparse(E, M):
    return _mta(E, M, True)


@case("poly_norm")
def _poly_norm(E, M):
    torch = E.torch
    BT, H = E.size((5, 96), (4096, 4096), (8192, 8192))
    x0, w0, b0, dy = E.randn(BT, H), E.randn(3, scale=0.5), E.randn(1), E.randn(BT, H)

    def call(g):
        x, w, b = _leaves(x0, w0, b0)
        y = M.LigerPolyNormFunction.apply(x, w, b, 1e-6, False)
        y.backward(g)
        return [y] + _grads(x, w, b)

    def ref():
        x, w, b = _leaves(x0, w0, b0)

        def norm(u):
            return u * torch.rsqrt(u.pow(2).mean(-1, keepdim=True) + 1e-6)
        y = w[0] * norm(x ** 3) + w[1] * norm(x ** 2) + w[2] * norm(x) + b
        y.backward(dy)
        return [y] + _grads(x, w, b)
    return Case(dy.clone, call, ref, ["y", "dx", "dw", "db"],
                E.tol((3e-4, 1e-4), (5e-2, 5e-2)))


def _rotate_half(torch, x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), -1)


@case("qwen2vl_mrope")
def _mrope(E, M):
    torch = E.torch
    B, S, HQ, HK, D, sec = E.size((1, 4, 2, 1, 32, [4, 6, 6]),
                                  (2, 2048, 28, 4, 128, [16, 24, 24]),
                                  (4, 4096, 28, 4, 128, [16, 24, 24]))
    q0 = E.randn(B, S, HQ, D).transpose(1, 2)
    k0 = E.randn(B, S, HK, D).transpose(1, 2)
    ang = E.randn(3, B, S, D // 2, dtype=torch.float32)
    ang = torch.cat((ang, ang), -1)                  # as a rotary embedding's (halves repeat)
    cos, sin = ang.cos().to(E.dtype), ang.sin().to(E.dtype)
    dq, dk = E.randn(B, HQ, S, D), E.randn(B, HK, S, D)

    def call(g):
        q, k = _leaves(q0, k0)
        qo, ko = M.LigerQwen2VLMRopeFunction.apply(q, k, cos, sin, sec)
        torch.autograd.backward((qo, ko), g)
        return [qo, ko] + _grads(q, k)

    def ref():
        q, k = _leaves(q0, k0)
        parts = sec * 2
        c = torch.cat([m[i % 3] for i, m in enumerate(cos.split(parts, -1))], -1).unsqueeze(1)
        s = torch.cat([m[i % 3] for i, m in enumerate(sin.split(parts, -1))], -1).unsqueeze(1)
        qo = q * c + _rotate_half(torch, q) * s
        ko = k * c + _rotate_half(torch, k) * s
        torch.autograd.backward((qo, ko), (dq, dk))
        return [qo, ko] + _grads(q, k)
    return Case(lambda: (dq.clone(), dk.clone()), call, ref, ["q", "k", "dq", "dk"],
                E.tol((1e-5, 1e-5), (1e-1, 1e-5)))


@case("rms_norm")
def _rms_norm(E, M):
    torch = E.torch
    BT, H = E.size((5, 96), (4096, 4096), (8192, 8192))
    x0, w0, dy = E.randn(BT, H), E.randn(H), E.randn(BT, H)

    def call(g):
        x, w = _leaves(x0, w0)
        y = M.LigerRMSNormFunction.apply(x, w, 1e-6, 0.0, "llama", False)
        y.backward(g)
        return [y] + _grads(x, w)

    def ref():
        x, w = _leaves(x0, w0)
        y = _rms(torch, x, 1e-6).to(E.dtype) * w
        y.backward(dy)
        return [y] + _grads(x, w)
    return Case(dy.clone, call, ref, ["y", "dx", "dw"], E.tol((1e-4, 1e-5), (2e-1, 2e-2)))


@case("rope")
def _rope(E, M):
    torch = E.torch
    B, S, HQ, HK, D = E.size((1, 4, 2, 1, 32), (2, 2048, 32, 8, 128), (4, 4096, 32, 8, 128))
    q0, k0 = E.randn(B, HQ, S, D), E.randn(B, HK, S, D)
    ang = torch.arange(S, dtype=torch.float32)[:, None] * \
        (10000.0 ** (-torch.arange(0, D, 2, dtype=torch.float32) / D))[None]
    ang = torch.cat((ang, ang), -1)[None].to(E.device)                  # (1, S, D)
    cos, sin = ang.cos().to(E.dtype), ang.sin().to(E.dtype)
    dq, dk = E.randn(B, HQ, S, D), E.randn(B, HK, S, D)

    def call(g):
        q, k = _leaves(q0, k0)
        qo, ko = M.LigerRopeFunction.apply(q, k, cos, sin)
        torch.autograd.backward((qo, ko), g)
        return [qo, ko] + _grads(q, k)

    def ref():
        q, k = _leaves(q0, k0)
        c, s = cos.unsqueeze(1), sin.unsqueeze(1)
        qo = q * c + _rotate_half(torch, q) * s
        ko = k * c + _rotate_half(torch, k) * s
        torch.autograd.backward((qo, ko), (dq, dk))
        return [qo, ko] + _grads(q, k)
    return Case(lambda: (dq.clone(), dk.clone()), call, ref, ["q", "k", "dq", "dk"],
                E.tol((1e-5, 1e-5), (1e-1, 1e-5)))


def _sparsemax_ref(torch, z, dim):
    z = z.transpose(dim, -1)
    zs, _ = torch.sort(z, -1, descending=True)
    cum = zs.cumsum(-1)
    k = torch.arange(1, z.shape[-1] + 1, device=z.device, dtype=z.dtype)
    support = 1 + k * zs > cum
    kz = support.sum(-1, keepdim=True).clamp(min=1)
    tau = (cum.gather(-1, kz - 1) - 1) / kz.to(z.dtype)
    return torch.clamp(z - tau, min=0).transpose(dim, -1)


@case("sparsemax")
def _sparsemax(E, M):
    torch = E.torch
    B, T, V = E.size((2, 3, 100), (8, 512, 4096), (16, 1024, 8192))
    x0, dy = E.randn(B, T, V), E.randn(B, T, V)

    def call(g):
        x, = _leaves(x0)
        y = M.LigerSparsemaxFunction.apply(x, -1)
        y.backward(g)
        return [y, x.grad]

    def ref():
        x, = _leaves(x0)
        y = _sparsemax_ref(torch, x, -1)
        y.backward(dy)
        return [y, x.grad]
    return Case(dy.clone, call, ref, ["y", "dx"], E.tol((1e-5, 1e-5), (5e-2, 5e-2)))


case("swiglu")(_gated("LigerSiLUMulFunction", lambda torch, a: torch.nn.functional.silu(a)))


@case("tiled_mlp")
def _tiled_mlp(E, M):
    torch = E.torch
    BT, H, I = E.size((8, 32, 64), (4096, 2048, 8192), (8192, 4096, 14336))
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(H, I), torch.nn.SiLU(),
                              torch.nn.Linear(I, H)).to(E.device, E.dtype)
    x0, dy = E.randn(BT, H), E.randn(BT, H)

    def call(g):
        x, = _leaves(x0)
        mlp.zero_grad()
        y = M.LigerTiledMLPFunction.apply(lambda m, t: m(t), mlp, x, 4)
        y.backward(g)
        return [y, x.grad, mlp[0].weight.grad.clone()]

    def ref():
        x, = _leaves(x0)
        mlp.zero_grad()
        y = mlp(x)
        y.backward(dy)
        return [y, x.grad, mlp[0].weight.grad.clone()]
    return Case(dy.clone, call, ref, ["y", "dx", "dw1"],
                E.tol((1e-5, 1e-5), (5e-2, 5e-2), (1e-3, 1e-3)),
                note="torch only (no kernel)")


# --------------------------------------------------------------------------------------------------
# Running
def _first_line(e: BaseException) -> str:
    s = str(e).strip().splitlines()
    return f"{type(e).__name__}: {s[0] if s else ''}"[:160]


def compare(torch, got, want, names, tol) -> List[str]:
    """Mismatches as text (empty: all close)."""
    bad = []
    if len(got) != len(want):
        return [f"{len(got)} results, the reference has {len(want)}"]
    tols = tol if isinstance(tol, list) else [tol] * len(got)
    for n, g, w, (atol, rtol) in zip(names, got, want, tols):
        if g is None or w is None:
            if (g is None) != (w is None):
                bad.append(f"{n}: {'missing' if g is None else 'unexpected'}")
            continue
        g = torch.as_tensor(g).detach().to("cpu")
        w = torch.as_tensor(w).detach().to("cpu")
        if g.shape != w.shape:
            bad.append(f"{n}: shape {tuple(g.shape)} != {tuple(w.shape)}")
            continue
        gf, wf = g.double(), w.double()
        if not torch.allclose(gf, wf, atol=atol, rtol=rtol, equal_nan=False):
            err = (gf - wf).abs()
            lim = atol + rtol * wf.abs()
            worst = int(torch.argmax(torch.nan_to_num(err - lim, nan=math.inf)))
            bad.append(f"{n}: max |diff| {float(torch.nan_to_num(err, nan=math.inf).max()):.3g}"
                       f" (at {worst}: {float(gf.flatten()[worst]):.6g} vs "
                       f"{float(wf.flatten()[worst]):.6g}; atol {atol:g} rtol {rtol:g})")
    return bad


def time_gpu_ms(torch, c: Case, reps: int) -> float:
    """Median ms of forward+backward between CUDA events (setup outside the timed region)."""
    for _ in range(2):
        c.call(c.setup())
    times = []
    for _ in range(reps):
        s = c.setup()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        c.call(s)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


class ActiveCuTile:
    """Which ``cuda.tile`` the op modules see: the real one or tilejit.cutile. Each op module binds
    ``ct`` when imported, so the modules are imported once per implementation (``import_ops``); the
    switch is also made around each call, for anything cuTile imports lazily."""

    def __init__(self):
        import cuda.tile as real
        import tilejit.cutile as tct
        self.mods = {"cutile": (real, sys.modules.get("cuda.tile.tune")), "tilejit": (tct, tct.tune)}

    @contextlib.contextmanager
    def __call__(self, impl: str):
        tile, tune = self.mods[impl]
        saved = sys.modules.get("cuda.tile"), sys.modules.get("cuda.tile.tune")
        sys.modules["cuda.tile"], sys.modules["cuda.tile.tune"] = tile, tune
        sys.modules["cuda"].tile = tile
        try:
            yield
        finally:
            sys.modules["cuda.tile"], sys.modules["cuda.tile.tune"] = saved
            sys.modules["cuda"].tile = saved[0]


def import_ops(active: ActiveCuTile, impl: str, modules: List[str]) -> Dict[str, object]:
    """A fresh copy of each op module (and of Liger's cuTile ``utils``) bound to ``impl``."""
    for k in [k for k in sys.modules if k.startswith(PKG + ".")]:
        del sys.modules[k]
    out: Dict[str, object] = {}
    with active(impl):
        for m in modules:
            try:
                out[m] = importlib.import_module(f"{PKG}.{m}")
            except Exception as e:  # noqa: BLE001
                out[m] = e
    return out


def run_together(args, names) -> Dict[str, Dict[str, dict]]:
    """Both implementations in one process, their timings interleaved round by round (the same
    GPU clocks, allocator and Liger host code for both): ``{"tilejit": {...}, "cutile": {...}}``."""
    import torch
    import cuda.tile  # noqa: F401  (the real one, before the shim replaces it)
    active = ActiveCuTile()
    install_tilejit_shim()
    E = Env(torch, "cuda", getattr(torch, args.dtype), False, args.quick)
    needed = sorted({CASES[n][0] for n in names})
    mods = {impl: import_ops(active, impl, needed) for impl in ("cutile", "tilejit")}
    results: Dict[str, Dict[str, dict]] = {"cutile": {}, "tilejit": {}}
    for label in names:
        module, build = CASES[label]
        cases = {}
        for impl in ("cutile", "tilejit"):
            r = results[impl][label] = {"module": module, "imports": None, "runs": None,
                                        "correct": None, "time_ms": None, "error": ""}
            M = mods[impl][module]
            r["imports"] = not isinstance(M, Exception)
            if not r["imports"]:
                r["error"] = _first_line(M)
                continue
            torch.manual_seed(1234)
            try:
                with active(impl):
                    c = build(E, M)
                    r["note"] = c.note
                    got = c.call(c.setup())
                    torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                r["runs"], r["error"] = False, _first_line(e)
                continue
            r["runs"] = True
            try:
                bad = compare(torch, got, c.ref(), c.names, c.tol)
            except Exception as e:  # noqa: BLE001
                bad = [f"reference failed: {_first_line(e)}"]
            r["correct"], r["error"] = not bad, "; ".join(bad)
            cases[impl] = c
        times: Dict[str, List[float]] = {impl: [] for impl in cases}
        rounds = 5
        for k in range(rounds):
            order = sorted(cases) if k % 2 else sorted(cases, reverse=True)
            for impl in order:
                with active(impl):
                    times[impl].append(time_gpu_ms(torch, cases[impl],
                                                   max(1, args.reps // rounds)))
        for impl, ts in times.items():
            results[impl][label]["time_ms"] = statistics.median(ts)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
    return results


def run_ops(args, names) -> Dict[str, dict]:
    import torch
    sim = args.simulator
    if sim:
        patch_torch_cuda_for_simulator(torch)
    device = "cpu" if sim else "cuda"
    dtype = getattr(torch, args.dtype)
    E = Env(torch, device, dtype, sim, args.quick)
    results: Dict[str, dict] = {}
    modules: Dict[str, object] = {}
    for label in names:
        if args.json and results:               # what is done so far survives a time limit
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
        module, build = CASES[label]
        r = results[label] = {"module": module, "imports": None, "runs": None, "correct": None,
                              "time_ms": None, "error": ""}
        if module not in modules:
            try:
                modules[module] = importlib.import_module(f"{PKG}.{module}")
            except Exception as e:  # noqa: BLE001
                modules[module] = e
        M = modules[module]
        if isinstance(M, Exception):
            r["imports"], r["error"] = False, _first_line(M)
            continue
        r["imports"] = True
        torch.manual_seed(1234)
        try:
            c = build(E, M)
            r["note"] = c.note
            with cuda_reported_available(torch, sim and c.needs_cuda):
                t0 = time.perf_counter()
                got = c.call(c.setup())
                if not sim:
                    torch.cuda.synchronize()
                wall = time.perf_counter() - t0
        except Exception as e:  # noqa: BLE001
            r["runs"], r["error"] = False, _first_line(e)
            if args.verbose:
                traceback.print_exc()
            continue
        r["runs"] = True
        try:
            want = c.ref()
            bad = compare(torch, got, want, c.names, c.tol)
        except Exception as e:  # noqa: BLE001
            bad = [f"reference failed: {_first_line(e)}"]
        r["correct"] = not bad
        r["error"] = "; ".join(bad)
        if sim:
            r["time_ms"] = wall * 1e3          # one run, first call (compiles included)
        else:
            try:
                r["time_ms"] = time_gpu_ms(torch, c, args.reps)
            except Exception as e:  # noqa: BLE001
                r["error"] += f" timing failed: {_first_line(e)}"
    return results


def cutile_column(args, names) -> Optional[Dict[str, dict]]:
    """The same ops under real cuTile Python, in a subprocess (None without cuda.tile)."""
    probe = subprocess.run([sys.executable, "-c", "import cuda.tile"], capture_output=True)
    if probe.returncode != 0:
        return None
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"liger_cutile_{os.getpid()}.json")
    cmd = [sys.executable, os.path.abspath(__file__), args.checkout, "--impl", "cutile",
           "--json", out, "--only", ",".join(names), "--dtype", args.dtype,
           "--reps", str(args.reps)] + (["--quick"] if args.quick else [])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.cutile_timeout)
    except subprocess.TimeoutExpired:
        print(f"cuTile Python run: over {args.cutile_timeout} s, stopped")
        return None
    if p.returncode not in (0, 1) or not os.path.exists(out):
        print(f"cuTile Python run failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        return None
    with open(out) as f:
        data = json.load(f)
    os.unlink(out)
    return data


def _yes(v) -> str:
    return "-" if v is None else "yes" if v else "NO"


def print_table(results, peer, sim: bool) -> None:
    unit = "wall ms (1 run, sim)" if sim else "tilejit ms"
    head = ["op", "imports", "runs", "correct", unit]
    if peer is not None:
        head += ["cuTile ms", "cuTile correct", "tilejit/cuTile"]
    head.append("notes")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for label, r in results.items():
        t = r["time_ms"]
        row = [label, _yes(r["imports"]), _yes(r["runs"]), _yes(r["correct"]),
               f"{t:.3f}" if t is not None else "-"]
        if peer is not None:
            p = peer.get(label, {})
            pt = p.get("time_ms")
            row += [f"{pt:.3f}" if pt is not None else "-", _yes(p.get("correct")),
                    f"{t / pt:.2f}" if t and pt else "-"]
        note = "; ".join(x for x in (r.get("note", ""), r["error"]) if x)
        row.append(note.replace("|", "/"))
        print("| " + " | ".join(row) + " |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", help="a Liger-Kernel checkout (with src/liger_kernel/ops/cutile)")
    ap.add_argument("--quick", action="store_true", help="smaller GPU sizes")
    ap.add_argument("--simulator", action="store_true",
                    help="tilejit's CPU simulator (CPU tensors, small sizes)")
    ap.add_argument("--only", default="", help="comma-separated op labels (or module names)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    ap.add_argument("--reps", type=int, default=20, help="timed runs per op on a GPU")
    ap.add_argument("--no-cutile", action="store_true", help="no real cuTile Python column")
    ap.add_argument("--together", action="store_true",
                    help="cuTile Python in this process too, timings interleaved round by round")
    ap.add_argument("--cutile-timeout", type=float, default=600.0,
                    help="seconds the cuTile Python subprocess may take")
    ap.add_argument("--impl", default="tilejit", choices=["tilejit", "cutile"],
                    help=argparse.SUPPRESS)
    ap.add_argument("--json", default="", help="also write the results as JSON here")
    ap.add_argument("-v", "--verbose", action="store_true", help="tracebacks of failures")
    args = ap.parse_args(argv)
    args.checkout = os.path.abspath(args.checkout)

    if args.impl == "tilejit":
        sys.path.insert(0, ROOT)
        if args.simulator:
            os.environ["TILEJIT_SIMULATE"] = "1"
        from tilejit.runtime import backend
        if backend.current() != backend.CUDA:
            args.simulator = True
        if not (args.together and not args.simulator):
            install_tilejit_shim()
    ops_dir = install_liger_packages(args.checkout)
    present = set(op_modules(ops_dir))
    wanted = [s.strip() for s in args.only.split(",") if s.strip()]
    names = [n for n, (m, _) in CASES.items()
             if not wanted or n in wanted or m in wanted]
    missing = sorted(present - {m for m, _ in CASES.values()})

    if args.together and not args.simulator:
        both = run_together(args, names)
        results, peer = both["tilejit"], both["cutile"]
        import torch
        print(f"Liger-Kernel cuTile ops, tilejit.cutile and cuTile Python in one process, "
              f"timings interleaved ({torch.cuda.get_device_name()}, {args.dtype}"
              f"{', quick' if args.quick else ''}); checkout {args.checkout}")
        print_table(results, peer, False)
        return 0 if all(r["correct"] for r in results.values()) else 1

    results = run_ops(args, names)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.impl == "cutile":
        return 0 if all(r["correct"] for r in results.values()) else 1

    peer = None if args.simulator or args.no_cutile else cutile_column(args, names)
    import torch
    where = "simulator" if args.simulator else torch.cuda.get_device_name()
    print(f"Liger-Kernel cuTile ops on tilejit.cutile ({where}, {args.dtype}"
          f"{', quick' if args.quick else ''}); checkout {args.checkout}")
    if not args.simulator and peer is None and not args.no_cutile:
        print("(cuda.tile not importable: no cuTile Python column)")
    print_table(results, peer, args.simulator)
    if missing:
        print(f"\nop modules without a case here: {', '.join(missing)}")
    ok = all(r["imports"] and r["runs"] and r["correct"] for r in results.values())
    print(f"\n{sum(1 for r in results.values() if r['correct'])}/{len(results)} correct")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
