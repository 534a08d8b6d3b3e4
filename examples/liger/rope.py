"""Rotary position embedding, Liger-Kernel's ``LigerRopeFunction``, in tilejit.

    python examples/liger/rope.py

HuggingFace Llama's rotation (``apply_rotary_pos_emb``): with x = [x1, x2] the two halves of a
head, y = [x1 cos - x2 sin, x2 cos + x1 sin], cos and sin the first half of the (batch or 1,
seq, head_dim) tables. The backward is the rotation by -sin. As in Liger's kernel:

* q and k are rotated in place in their physical (batch, seq, heads, head_dim) storage when they
  are HF's transposes of such tensors, and so are the gradients dq and dk when they come in that
  layout. Otherwise Liger copies the tensor into that layout with ``.contiguous()`` and rotates
  the copy; here the kernel reads the tensor where it is, through its strides, and writes the
  rotation into a new tensor of that layout: one pass instead of two;
* one kernel does q and k: each block rotates every head of T tokens of one sequence (T a power
  of two dividing the sequence, so the block's cos/sin rows are consecutive), reading and writing
  each element once, in float32.

The kernel views each head as (2, head_dim // 2), so the two halves are two tiles; an odd
head_dim leaves its last element as it is, as Liger's kernel does.
"""
import sys

try:
    import torch
except ImportError as e:            # the gallery protocol: a script without torch skips
    if __name__ == "__main__":
        print(f"rope: skipped: PyTorch is not installed ({e})")
        sys.exit(0)
    raise

import tilejit as tile

try:
    from . import _losses_common as common
except ImportError:                 # run as a script, or examples/liger on sys.path
    import _losses_common as common

F32 = tile.float32
#: elements of q and k a block rotates at most (its token count T is chosen from it)
BLOCK_ELEMENTS = 8192


@tile.function
def _rotate(dst, src, bi, r, c, s, T, NH, HALF):
    """Rotate tile (bi, r) of ``src`` (batch, seq, heads, 2, half) by (c, s) into ``dst``."""
    x1 = src.load((bi, r, 0, 0, 0), (1, T, NH, 1, HALF)).astype(F32)
    x2 = src.load((bi, r, 0, 1, 0), (1, T, NH, 1, HALF)).astype(F32)
    tile.store(dst, (bi, r, 0, 0, 0), (x1 * c - x2 * s).astype(dst.dtype))
    tile.store(dst, (bi, r, 0, 1, 0), (x2 * c + x1 * s).astype(dst.dtype))


@tile.entry
def rope_kernel(qd, qs, kd, ks, cos, sin, cos_batch_tiles, T: tile.Constant[int],
                NQ: tile.Constant[int], NK: tile.Constant[int], HALF: tile.Constant[int],
                BACKWARD: tile.Constant[bool], Q_IN_PLACE: tile.Constant[bool],
                K_IN_PLACE: tile.Constant[bool]):
    """Block (r, bi): tokens r*T ... of sequence bi. ``qd``/``kd``: writable (batch, seq, heads, 2,
    half) views written with the rotation of ``qs``/``ks`` (or of themselves, IN_PLACE: the
    source parameter is then unused); ``cos``, ``sin``: (rows, head_dim), row tile
    ``r + bi * cos_batch_tiles`` (0: one table for the batch)."""
    r = tile.bid(0)
    bi = tile.bid(1)
    ct = r + bi * cos_batch_tiles
    c = cos.load((ct, 0), (T, HALF)).astype(F32)[None, :, None, None, :]
    s = sin.load((ct, 0), (T, HALF)).astype(F32)[None, :, None, None, :]
    if BACKWARD:
        s = -s
    if Q_IN_PLACE:
        _rotate(qd, qd, bi, r, c, s, T, NQ, HALF)
    else:
        _rotate(qd, qs, bi, r, c, s, T, NQ, HALF)
    if K_IN_PLACE:
        _rotate(kd, kd, bi, r, c, s, T, NK, HALF)
    else:
        _rotate(kd, ks, bi, r, c, s, T, NK, HALF)


def _halves(x):
    """The (batch, seq, heads, 2, dim // 2) view of ``x`` (batch, heads, seq, dim), any strides."""
    b, h, s, d = x.shape
    sb, sh, ss, sd = x.stride()
    return torch.as_strided(x, (b, s, h, 2, d // 2), (sb, ss, sh, (d // 2) * sd, sd),
                            x.storage_offset())


def _target(x):
    """(where the rotation of ``x`` goes, as a (batch, heads, seq, dim) view; in place?):
    ``x``'s own storage when it is a contiguous (batch, seq, heads, dim) tensor seen through a
    transpose, as Liger rotates it; else a new tensor of that layout (where Liger copies x into
    one and rotates the copy, here the rotation reads x where it is)."""
    if x.transpose(1, 2).is_contiguous():
        return x, True
    out = torch.empty((x.shape[0], x.shape[2], x.shape[1], x.shape[3]), dtype=x.dtype,
                      device=x.device).transpose(1, 2)
    if x.shape[3] % 2:              # Liger keeps an odd head_dim's last element
        out[..., -1] = x[..., -1]
    return out, False


def _tables(cos, sin):
    """cos and sin as contiguous (batch or 1, seq, head_dim)."""
    if cos.shape != sin.shape:
        raise ValueError(f"rope: cos and sin must have one shape, got {tuple(cos.shape)} and "
                         f"{tuple(sin.shape)}")
    if cos.dim() == 2:
        cos, sin = cos[None], sin[None]
    elif cos.dim() == 4 and cos.shape[1] == 1:      # already unsqueezed for the heads
        cos, sin = cos[:, 0], sin[:, 0]
    if cos.dim() != 3:
        raise ValueError(f"rope: cos and sin must be (seq, head_dim), (1 or batch, seq, head_dim) "
                         f"or (1 or batch, 1, seq, head_dim), got {tuple(cos.shape)}")
    return cos.contiguous(), sin.contiguous()


def rope_rotate(q, k, cos, sin, backward=False):
    """q (batch, q_heads, seq, head_dim) and k (batch, kv_heads, seq, head_dim) rotated: in place
    where their storage is (batch, seq, heads, head_dim), else into new tensors of that layout."""
    bsz, nq, seq, hd = q.shape
    nk = k.shape[1]
    if k.dim() != 4 or k.shape[0] != bsz or k.shape[2] != seq or k.shape[3] != hd:
        raise ValueError(f"rope: q is (batch, heads, seq, head_dim) = {tuple(q.shape)} but k is "
                         f"{tuple(k.shape)}")
    if cos.shape[0] not in (1, bsz) or cos.shape[1] != seq or cos.shape[2] != hd:
        raise ValueError(f"rope: cos and sin must be (1 or {bsz}, {seq}, {hd}) for q and k of "
                         f"batch {bsz}, sequence {seq}, head_dim {hd}; got {tuple(cos.shape)}")
    q, k = q.detach(), k.detach()
    qo, q_in = _target(q)
    ko, k_in = _target(k)
    half = hd // 2
    if bsz * seq == 0 or half == 0:
        return qo, ko
    HALF, NQ, NK = common.pow2(half), common.pow2(nq), common.pow2(nk)
    T = 1
    while seq % (2 * T) == 0 and 2 * T * (NQ + NK) * 2 * HALF <= BLOCK_ELEMENTS:
        T *= 2
    cos2, sin2 = cos.view(-1, hd), sin.view(-1, hd)
    qs, ks = _halves(q), _halves(k)
    op = rope_kernel(tile.atomic(_halves(qo)), cos2 if q_in else qs,
                     tile.atomic(_halves(ko)), cos2 if k_in else ks, cos2, sin2,
                     seq // T if cos.shape[0] > 1 else 0, T, NQ, NK, HALF, backward, q_in, k_in)
    common.launch(op.grid((seq // T, bsz, 1)), cos2)
    return qo, ko


class LigerRopeFunction(torch.autograd.Function):
    """RoPE on q (batch, q_heads, seq, head_dim) and k (batch, kv_heads, seq, head_dim) with cos and
    sin (1 or batch, seq, head_dim); ``position_ids`` and ``unsqueeze_dim`` are accepted and
    unused, as in Liger."""

    @staticmethod
    def forward(ctx, q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
        cos, sin = _tables(cos.detach(), sin.detach())
        q, k = rope_rotate(q, k, cos, sin)
        ctx.save_for_backward(cos, sin)
        return q, k

    @staticmethod
    def backward(ctx, dq, dk):
        cos, sin = ctx.saved_tensors
        dq, dk = rope_rotate(dq, dk, cos, sin, backward=True)
        return dq, dk, None, None, None, None


def rope(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
    """(q, k) rotated (autograd: LigerRopeFunction)."""
    return LigerRopeFunction.apply(q, k, cos, sin, position_ids, unsqueeze_dim)


def reference(q, k, cos, sin):
    """HF's ``apply_rotary_pos_emb`` in plain torch (cos, sin (1 or batch, seq, head_dim))."""
    def rotate_half(x):
        h = x.shape[-1] // 2
        return torch.cat((-x[..., h:], x[..., :h]), dim=-1)
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * c + rotate_half(q) * s, k * c + rotate_half(k) * s


def tables(bsz, seq, hd, dtype, device, per_batch=False, base=10000.0):
    """Llama's cos and sin for positions 0..seq-1 (the batch's copies when ``per_batch``)."""
    inv = 1.0 / base ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)
    ang = torch.arange(seq, dtype=torch.float32)[:, None] * inv[None, :]
    emb = torch.cat((ang, ang), dim=-1)[None]
    if per_batch:
        emb = emb.expand(bsz, -1, -1)
    return emb.cos().to(device, dtype), emb.sin().to(device, dtype)


#: Liger's test_rope.py tolerances (atol, rtol)
TOLERANCES = {"float32": (1e-5, 1e-5), "bfloat16": (1e-1, 1e-5), "float16": (1e-2, 1e-5)}


def check(bsz, seq, nq, nk, hd, dtype, device="cpu", per_batch=False, hf_layout=True,
          seed=0) -> bool:
    """Forward and backward against :func:`reference` with Liger's tolerances; ``hf_layout``: q
    and k as transposes of (batch, seq, heads, head_dim) tensors (rotated in place), else
    contiguous (batch, heads, seq, head_dim) ones (copied first)."""
    atol, rtol = TOLERANCES[str(dtype).split(".")[-1]]
    gen = torch.Generator().manual_seed(seed)
    if hf_layout:
        q0 = torch.randn(bsz, seq, nq, hd, generator=gen).transpose(1, 2)
        k0 = torch.randn(bsz, seq, nk, hd, generator=gen).transpose(1, 2)
    else:
        q0 = torch.randn(bsz, nq, seq, hd, generator=gen)
        k0 = torch.randn(bsz, nk, seq, hd, generator=gen)
    q0, k0 = q0.to(device, dtype), k0.to(device, dtype)
    cos, sin = tables(bsz, seq, hd, dtype, device, per_batch)
    dq = torch.randn(q0.shape, generator=gen).to(device, dtype)
    dk = torch.randn(k0.shape, generator=gen).to(device, dtype)
    q1, k1 = q0.clone().requires_grad_(), k0.clone().requires_grad_()
    q2, k2 = q0.clone().requires_grad_(), k0.clone().requires_grad_()
    want_q, want_k = reference(q1, k1, cos, sin)
    got_q, got_k = rope(q2, k2, cos, sin)
    gq1, gk1 = torch.autograd.grad((want_q, want_k), (q1, k1), (dq, dk))
    gq2, gk2 = torch.autograd.grad((got_q, got_k), (q2, k2), (dq.clone(), dk.clone()))
    return all([common.close(got_q, want_q, atol, rtol),
                common.close(got_k, want_k, atol, rtol),
                common.close(gq2, gq1, atol, rtol),
                common.close(gk2, gk1, atol, rtol)])


def main() -> int:
    gpu = torch.cuda.is_available() and not tile.Device(0).is_simulated
    device = "cuda" if gpu else "cpu"
    # (batch, seq, q heads, kv heads, head_dim), cos per batch, q and k as HF's transposes:
    # Liger's test shapes, the weird ones included
    cases = [((1, 2, 2, 2, 8), False, True), ((2, 7, 5, 3, 12), True, False)]
    if gpu:
        cases += [((2, 128, 32, 8, 64), True, True), ((3, 423, 73, 213, 92), False, True),
                  ((1, 8192, 32, 8, 128), False, True)]
    ok = True
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        for shape, per_batch, hf_layout in cases:
            good = check(*shape, dtype, device, per_batch=per_batch, hf_layout=hf_layout)
            if not good:
                print(f"  {dtype} {shape}: MISMATCH")
            ok &= good
    return common.report("rope", f"forward and backward, {len(cases)} shapes, float32, bfloat16 "
                         f"and float16, {device}", ok)


if __name__ == "__main__":
    sys.exit(main())
