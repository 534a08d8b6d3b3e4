"""Liger-Kernel's GroupNorm in tilejit: each group of ``C / G`` channels of each sample normalized
by its own mean and variance, then scaled and shifted per channel; forward and backward, as a
``torch.autograd.Function`` with the arguments of Liger's ``LigerGroupNormFunction``.

    python examples/liger/group_norm.py

A group's channels are a (CB, CH) tile of (channels, positions), CB and CH powers of two. A
group that fits one tile is read once and normalized in registers, RB samples of one group a
block (forward: the mean, then the variance of the centred values; backward: dx from the group's
two sums, and each channel's dw and db summed over the block's samples); a larger group is
walked in tiles twice, as Liger does: the sums first (shifted by the group's first element, so
the variance does not cancel), then the output. A group of a power-of-two number of channels is
read by tile index, any other through a slice of the channel axis. dw and db are added into
float32 buffers with atomics, one add per channel and block (Liger adds in w's dtype).
"""
import sys

try:
    import torch
except ImportError:                 # a script run says so; importing the module needs torch
    if __name__ == "__main__":
        print("group_norm: skipped: PyTorch is not installed (pip install torch)")
        sys.exit(0)
    raise

import tilejit as tile

try:
    from . import _common as C
except ImportError:                 # run as a script: its folder is sys.path[0]
    import _common as C

ZERO = tile.PaddingMode.ZERO
F32 = tile.float32

#: a group of at most this many (padded) elements is held in one tile
ONE_TILE = 8192
#: the tile a larger group is walked in
CHUNK_TILE = 4096


@tile.function
def channel_rows(w, c0, first, CB, CPG):
    """``w[c0 + first + i]`` for the CB channels of a channel block, as a float32 (CB, 1)
    column (0 past the group)."""
    ch = first + tile.arange(CB)
    return tile.gather(w, c0 + ch, mask=ch < CPG, other=0).astype(F32)[:, None]


@tile.function
def inside(first_ch, first_pos, CB, CH, CPG, hs):
    """The (CB, CH) mask of a tile's elements that are in the group."""
    return ((first_ch + tile.arange(CB))[:, None] < CPG) & \
        ((first_pos + tile.arange(CH))[None, :] < hs)


@tile.function
def load_groups(x, s, g, RB, CB, CH, CPG):
    """Samples ``s*RB ...`` of group ``g`` as a float32 (RB, CB * CH) tile, each row a sample's
    (CB, CH) channels by positions, zero outside: read by tile index when a group is exactly CB
    channels, else through a slice of the channel axis. (Two-dimensional from here: tileiras
    makes reductions over two axes of a 3-d tile into code 5x as large and slow to compile.)"""
    if CB == CPG:
        t = x.load((s, g, 0), (RB, CB, CH), padding=ZERO)
    else:
        t = x.slice(1, g * CPG, g * CPG + CPG).load((s, 0, 0), (RB, CB, CH), padding=ZERO)
    return t.astype(F32).reshape((RB, CB * CH))


@tile.function
def store_groups(y, s, g, t, CB, CH, CPG):
    """Store an (RB, CB * CH) tile where :func:`load_groups` read it."""
    t3 = t.reshape((t.shape[0], CB, CH)).astype(y.dtype)
    if CB == CPG:
        tile.store(y, (s, g, 0), t3)
    else:
        tile.store(y.slice(1, g * CPG, g * CPG + CPG), (s, 0, 0), t3)


@tile.function
def in_group(CB, CH, CPG, hs):
    """The (1, CB * CH) mask of a group row's elements that are data (channel < CPG,
    position < hs)."""
    col = tile.arange(CB * CH)[None, :]
    return (col // CH < CPG) & (col % CH < hs)


@tile.function
def channel_weights(w, g, CB, CH, CPG):
    """``w`` of group ``g``'s channels, each repeated over its CH positions, as a float32
    (1, CB * CH) row (0 past the group)."""
    ch = tile.arange(CB)
    wv = tile.gather(w, g * CPG + ch, mask=ch < CPG, other=0).astype(F32)
    return tile.broadcast_to(wv[:, None], (CB, CH)).reshape((1, CB * CH))


@tile.entry
def group_norm_fwd_tile(y, x, w, b, mean, rstd, eps, RB: tile.Constant[int],
                        CPG: tile.Constant[int], CB: tile.Constant[int],
                        CH: tile.Constant[int]):
    """Grid (sample blocks, groups, 1): RB samples of one group a block, each group one (CB, CH)
    tile held in registers. ``y`` writable like ``x`` (samples, channels, positions); ``mean``,
    ``rstd`` writable float32 (samples, groups)."""
    s = tile.bid(0)
    g = tile.bid(1)
    hs = x.shape[2]
    inv_n = 1.0 / (CPG * hs)
    t = load_groups(x, s, g, RB, CB, CH, CPG)
    mu = tile.sum(t, axis=1, keepdims=True) * inv_n
    d = tile.where(in_group(CB, CH, CPG, hs), t - mu, 0.0)
    rs = tile.rsqrt(tile.sum(d * d, axis=1, keepdims=True) * inv_n + eps)
    store_groups(y, s, g, d * rs * channel_weights(w, g, CB, CH, CPG) +
                 channel_weights(b, g, CB, CH, CPG), CB, CH, CPG)
    tile.store(mean.partition((RB, 1)), (s, g), mu)
    tile.store(rstd.partition((RB, 1)), (s, g), rs)


@tile.entry
def group_norm_bwd_tile(dx, dy, x, w, mean, rstd, dw, db, RB: tile.Constant[int],
                        CPG: tile.Constant[int], CB: tile.Constant[int],
                        CH: tile.Constant[int]):
    """Grid (sample blocks, groups, 1), as group_norm_fwd_tile. ``dw``, ``db`` writable float32
    (channels,), zero before the launch: each block adds its channels' sums."""
    s = tile.bid(0)
    g = tile.bid(1)
    hs = x.shape[2]
    inv_n = 1.0 / (CPG * hs)
    mu = mean.load((s, g), (RB, 1), padding=ZERO)
    rs = rstd.load((s, g), (RB, 1), padding=ZERO)          # 0 past the last sample
    t = load_groups(x, s, g, RB, CB, CH, CPG)
    gr = load_groups(dy, s, g, RB, CB, CH, CPG)
    xhat = tile.where(in_group(CB, CH, CPG, hs), (t - mu) * rs, 0.0)
    wdy = channel_weights(w, g, CB, CH, CPG) * gr
    c1 = tile.sum(xhat * wdy, axis=1, keepdims=True) * inv_n
    c2 = tile.sum(wdy, axis=1, keepdims=True) * inv_n
    store_groups(dx, s, g, (wdy - (xhat * c1 + c2)) * rs, CB, CH, CPG)
    ch = tile.arange(CB)
    per_channel = tile.sum(tile.sum(gr * xhat, axis=0).reshape((CB, CH)), axis=1)
    tile.atomic_add(dw, g * CPG + ch, per_channel, mask=ch < CPG)
    per_channel = tile.sum(tile.sum(gr, axis=0).reshape((CB, CH)), axis=1)
    tile.atomic_add(db, g * CPG + ch, per_channel, mask=ch < CPG)


@tile.entry
def group_norm_fwd_walk(y, x, w, b, mean, rstd, eps, CPG: tile.Constant[int],
                        CB: tile.Constant[int], CH: tile.Constant[int]):
    """A group too large for one tile, walked in (CB, CH) tiles twice. Grid (samples, groups,
    1); arguments as group_norm_fwd_tile's."""
    s = tile.bid(0)
    g = tile.bid(1)
    c0 = g * CPG
    hs = x.shape[2]
    inv_n = 1.0 / (CPG * hs)
    xs = x.slice(1, c0, c0 + CPG)
    ys = y.slice(1, c0, c0 + CPG)
    pivot = xs.load((s, 0, 0), ()).astype(F32)
    s1 = tile.zeros((CB, CH), F32)
    s2 = tile.zeros((CB, CH), F32)
    for cb in range(tile.cdiv(CPG, CB)):
        for k in range(tile.cdiv(hs, CH)):
            t = xs.load((s, cb, k), (1, CB, CH), padding=ZERO).reshape((CB, CH)).astype(F32)
            d = tile.where(inside(cb * CB, k * CH, CB, CH, CPG, hs), t - pivot, 0.0)
            s1 += d
            s2 += d * d
    m1 = tile.sum(s1) * inv_n
    mu = pivot + m1
    rs = tile.rsqrt(tile.maximum(tile.sum(s2) * inv_n - m1 * m1, 0.0) + eps)
    for cb in range(tile.cdiv(CPG, CB)):
        wv = channel_rows(w, c0, cb * CB, CB, CPG) * rs
        bv = channel_rows(b, c0, cb * CB, CB, CPG)
        for k in range(tile.cdiv(hs, CH)):
            t = xs.load((s, cb, k), (1, CB, CH), padding=ZERO).reshape((CB, CH)).astype(F32)
            tile.store(ys, (s, cb, k), ((t - mu) * wv + bv).astype(y.dtype).reshape(
                (1, CB, CH)))
    tile.store(mean.partition((1, 1)), (s, g), mu.reshape((1, 1)))
    tile.store(rstd.partition((1, 1)), (s, g), rs.reshape((1, 1)))


@tile.entry
def group_norm_bwd_walk(dx, dy, x, w, mean, rstd, dw, db, CPG: tile.Constant[int],
                        CB: tile.Constant[int], CH: tile.Constant[int]):
    """A group too large for one tile, walked in (CB, CH) tiles twice. Grid (samples, groups,
    1); arguments as group_norm_bwd_tile's."""
    s = tile.bid(0)
    g = tile.bid(1)
    c0 = g * CPG
    hs = x.shape[2]
    inv_n = 1.0 / (CPG * hs)
    mu = mean.load((s, g), ())
    rs = rstd.load((s, g), ())
    xs = x.slice(1, c0, c0 + CPG)
    gs = dy.slice(1, c0, c0 + CPG)
    dxs = dx.slice(1, c0, c0 + CPG)
    chans = tile.arange(CB)
    a1 = tile.zeros((CB, CH), F32)
    a2 = tile.zeros((CB, CH), F32)
    for cb in range(tile.cdiv(CPG, CB)):
        wv = channel_rows(w, c0, cb * CB, CB, CPG)
        pw = tile.zeros((CB, CH), F32)
        pb = tile.zeros((CB, CH), F32)
        for k in range(tile.cdiv(hs, CH)):
            t = xs.load((s, cb, k), (1, CB, CH), padding=ZERO).reshape((CB, CH)).astype(F32)
            gr = gs.load((s, cb, k), (1, CB, CH), padding=ZERO).reshape((CB, CH)).astype(F32)
            xhat = tile.where(inside(cb * CB, k * CH, CB, CH, CPG, hs), (t - mu) * rs, 0.0)
            pw += gr * xhat
            pb += gr
            a1 += xhat * wv * gr
            a2 += wv * gr
        ch = cb * CB + chans
        tile.atomic_add(dw, c0 + ch, tile.sum(pw, axis=1), mask=ch < CPG)
        tile.atomic_add(db, c0 + ch, tile.sum(pb, axis=1), mask=ch < CPG)
    c1 = tile.sum(a1) * inv_n
    c2 = tile.sum(a2) * inv_n
    for cb in range(tile.cdiv(CPG, CB)):
        wv = channel_rows(w, c0, cb * CB, CB, CPG)
        for k in range(tile.cdiv(hs, CH)):
            t = xs.load((s, cb, k), (1, CB, CH), padding=ZERO).reshape((CB, CH)).astype(F32)
            gr = gs.load((s, cb, k), (1, CB, CH), padding=ZERO).reshape((CB, CH)).astype(F32)
            xhat = (t - mu) * rs
            tile.store(dxs, (s, cb, k), ((wv * gr - (xhat * c1 + c2)) * rs).astype(
                dx.dtype).reshape((1, CB, CH)))


def _tiles(samples: int, cpg: int, hs: int):
    """(RB, CB, CH) for a group of ``cpg`` channels of ``hs`` positions: RB samples of a
    (CB, CH) group a block when a group fits one tile, else RB = 0 and the (CB, CH) tile the
    group is walked in."""
    cb, ch = C.width(cpg), C.width(hs)
    if cb * ch <= ONE_TILE:
        rb = 1 << ((ONE_TILE // (cb * ch)).bit_length() - 1)     # a power of two
        return min(rb, C.width(samples)), cb, ch
    ch = min(ch, CHUNK_TILE)
    return 0, max(1, min(cb, CHUNK_TILE // ch)), ch


def _grouped(X, num_channels, num_groups):
    """X as (samples, channels, positions) and the channels per group, checked."""
    if X.dim() < 2 or X.shape[1] != num_channels:
        raise ValueError(f"X must be (batch, num_channels={num_channels}, ...), got "
                         f"{tuple(X.shape)}")
    if num_groups < 1 or num_channels % num_groups:
        raise ValueError(f"num_channels ({num_channels}) must be a multiple of num_groups "
                         f"({num_groups})")
    return X.contiguous().view(X.shape[0], num_channels, -1), num_channels // num_groups


def group_norm_forward(X, num_channels, num_groups, W, B, eps):
    """(Y in X's shape, X as (samples, channels, positions), Mean, RSTD), the statistics
    float32 (samples, groups)."""
    x3, cpg = _grouped(X, num_channels, num_groups)
    n = x3.shape[0]
    Y = torch.empty_like(x3)
    Mean = torch.empty((n, num_groups), dtype=torch.float32, device=X.device)
    RSTD = torch.empty_like(Mean)
    rb, cb, ch = _tiles(n, cpg, x3.shape[2])
    args = (tile.atomic(Y), x3, W, B, tile.atomic(Mean), tile.atomic(RSTD), float(eps))
    if rb:
        op = group_norm_fwd_tile(*args, rb, cpg, cb, ch).grid((tile.cdiv(n, rb), num_groups, 1))
    else:
        op = group_norm_fwd_walk(*args, cpg, cb, ch).grid((n, num_groups, 1))
    C.run(op, x3)
    return Y.view(X.shape), x3, Mean, RSTD


def group_norm_backward(dY, X, W, B, Mean, RSTD, num_channels, num_groups):
    dy3, cpg = _grouped(dY, num_channels, num_groups)
    n = X.shape[0]
    DX = torch.empty_like(X)
    sums = torch.zeros((2, num_channels), dtype=torch.float32, device=X.device)
    rb, cb, ch = _tiles(n, cpg, X.shape[2])
    args = (tile.atomic(DX), dy3, X, W, Mean, RSTD, tile.atomic(sums[0]), tile.atomic(sums[1]))
    if rb:
        op = group_norm_bwd_tile(*args, rb, cpg, cb, ch).grid((tile.cdiv(n, rb), num_groups, 1))
    else:
        op = group_norm_bwd_walk(*args, cpg, cb, ch).grid((n, num_groups, 1))
    C.run(op, X)
    return DX.view(dY.shape), sums[0].to(W.dtype), sums[1].to(B.dtype)


class LigerGroupNormFunction(torch.autograd.Function):
    """GroupNorm with Liger's arguments: ``apply(X, affine_scaling_weight,
    affine_shifting_bias, num_channels, num_groups, eps)``; X is (batch, channels, ...)."""

    @staticmethod
    def forward(ctx, X, affine_scaling_weight, affine_shifting_bias, num_channels, num_groups,
                eps):
        Y, x3, Mean, RSTD = group_norm_forward(X, num_channels, num_groups,
                                               affine_scaling_weight, affine_shifting_bias, eps)
        ctx.num_channels, ctx.num_groups = num_channels, num_groups
        ctx.save_for_backward(x3, affine_scaling_weight, affine_shifting_bias, Mean, RSTD)
        return Y

    @staticmethod
    def backward(ctx, dY):
        X, W, B, Mean, RSTD = ctx.saved_tensors
        DX, DW, DB = group_norm_backward(dY, X, W, B, Mean, RSTD, ctx.num_channels,
                                         ctx.num_groups)
        return DX, DW, DB, None, None, None


def group_norm(X, num_groups, W, B, eps=1e-6):
    """Functional form (torch.nn.functional.group_norm's order of arguments)."""
    return LigerGroupNormFunction.apply(X, W, B, X.shape[1], num_groups, eps)


class LigerGroupNorm(torch.nn.Module):
    """A drop-in GroupNorm layer (Liger's ``LigerGroupNorm`` arguments)."""

    def __init__(self, num_channels, num_groups, eps=1e-6, bias=False, init_fn="ones"):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"num_channels ({num_channels}) must be a multiple of num_groups "
                             f"({num_groups})")
        if init_fn not in ("ones", "zeros"):
            raise ValueError(f"init_fn must be 'ones' or 'zeros', got {init_fn!r}")
        self.num_channels, self.num_groups, self.variance_epsilon = num_channels, num_groups, eps
        self.weight = torch.nn.Parameter((torch.ones if init_fn == "ones" else torch.zeros)(
            num_channels))
        self.bias = torch.nn.Parameter(torch.randn(num_channels) if bias else
                                       torch.zeros(num_channels))

    def forward(self, hidden_states):
        return LigerGroupNormFunction.apply(hidden_states, self.weight, self.bias,
                                            self.num_channels, self.num_groups,
                                            self.variance_epsilon)


# --- the self-check -------------------------------------------------------------------------------
#: Liger's test tolerances (test/transformers/test_group_norm.py, float32 only; bfloat16 as
#: its layer_norm test): (atol, rtol)
TOLERANCE = {torch.float32: (1e-4, 1e-4), torch.bfloat16: (2e-2, 2e-2)}


def check(batch, channels, groups, hidden, dtype, device="cpu", eps=1e-6):
    """Forward and backward against ``torch.nn.functional.group_norm`` (in float32, rounded to
    ``dtype``): what differs (empty: ok)."""
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(batch, channels, hidden, generator=g).to(device, dtype)
    w0, b0 = (torch.randn(channels, generator=g).to(device, dtype) for _ in range(2))
    dy = torch.randn(batch, channels, hidden, generator=g).to(device, dtype)
    x, w, b = (t.clone().requires_grad_(True) for t in (x0, w0, b0))
    y = LigerGroupNormFunction.apply(x, w, b, channels, groups, eps)
    y.backward(dy)
    xr, wr, br = (t.float().requires_grad_(True) for t in (x0, w0, b0))
    yr = torch.nn.functional.group_norm(xr, groups, wr, br, eps)
    yr.backward(dy.float())
    atol, rtol = TOLERANCE[dtype]
    tag = f"({batch}, {channels}, {hidden}) / {groups} groups {str(dtype)[6:]}"
    out = [C.check_close(f"{tag} {name}", got, want.to(dtype), atol, rtol)
           for name, got, want in (("y", y, yr), ("dx", x.grad, xr.grad), ("dw", w.grad, wr.grad),
                                   ("db", b.grad, br.grad))]
    return [p for p in out if p]


def main() -> int:
    dev = C.device_for_check()
    cases = [(1, 1, 1, 3), (1, 32, 32, 4), (16, 32, 1, 4096), (2, 63, 21, 2163),
             (16, 48, 12, 8192)] if dev == "cuda" else \
        [(1, 1, 1, 3), (1, 32, 32, 4), (2, 6, 2, 37), (2, 8, 2, 3000)]
    problems = []
    for case in cases:
        for dtype in (torch.float32, torch.bfloat16):
            problems += check(*case, dtype, dev)
    return C.report("group_norm", f"{len(cases)} shapes (one-tile and walked groups) x "
                    f"float32/bfloat16 on {dev}, forward and backward", problems)


if __name__ == "__main__":
    sys.exit(main())
