"""tilejit kernels inside a PyTorch training step: a SiLU whose forward and backward are tilejit
kernels, in a `torch.autograd.Function`, trained next to the same model using torch's SiLU.

    python examples/torch_interop.py

On a GPU the kernels read and write the torch tensors in place (zero-copy: inputs are passed
as they are, outputs through `tile.partition(out, tile)`), on torch's current stream. On the
simulator, CPU tensors are copied in and the result handed back with `torch.from_dlpack`.
Skips (exit 0) when PyTorch is not installed.
"""
import sys

import tilejit as tile
from tilejit import api
from tilejit.runtime import current_backend

TILE = (32, 128)


@tile.entry
def silu_fwd(y, x):
    t = tile.load_tile_like(x, y).astype(tile.float32)
    y.store((t / (1.0 + tile.exp(-t))).astype(y.dtype))


@tile.entry
def silu_bwd(dx, x, dy):
    t = tile.load_tile_like(x, dx).astype(tile.float32)
    g = tile.load_tile_like(dy, dx).astype(tile.float32)
    s = 1.0 / (1.0 + tile.exp(-t))
    dx.store((g * s * (1.0 + t * (1.0 - s))).astype(dx.dtype))


def run(torch, kernel, like, *inputs):
    """``kernel(out, *inputs)`` with a new output shaped like ``like``, as a torch tensor."""
    inputs = [t.detach().contiguous() for t in inputs]
    if like.is_cuda:                                     # zero-copy both ways
        out = torch.empty_like(like)
        kernel(tile.partition(out, TILE), *inputs).sync()
        return out
    out = api.empty(tuple(like.shape)).sync()            # the simulator's memory
    kernel(out.partition(TILE), *[tile.from_dlpack(t) for t in inputs]).sync()
    return torch.from_dlpack(out).clone()


def make_silu(torch):
    class TileSiLU(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return run(torch, silu_fwd, x, x)

        @staticmethod
        def backward(ctx, dy):
            (x,) = ctx.saved_tensors
            return run(torch, silu_bwd, x, x, dy)

    return TileSiLU.apply


def main() -> int:
    try:
        import torch
    except ImportError:
        print("torch_interop: PyTorch is not installed; skipped")
        return 0
    dev = "cuda" if current_backend() == "cuda" and torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    silu = make_silu(torch)
    batch, d_in, hidden, d_out = (1024, 512, 1024, 10) if dev == "cuda" else (64, 32, 128, 10)
    layers = [torch.nn.Linear(d_in, hidden), torch.nn.Linear(hidden, d_out)]
    ref_layers = [torch.nn.Linear(d_in, hidden), torch.nn.Linear(hidden, d_out)]
    for a, b in zip(layers, ref_layers):
        b.load_state_dict(a.state_dict())
    params = [p for l in layers for p in l.parameters()]
    ref_params = [p for l in ref_layers for p in l.parameters()]
    for p in params + ref_params:
        p.data = p.data.to(dev)
    opt = torch.optim.SGD(params, lr=0.1)
    ref_opt = torch.optim.SGD(ref_params, lr=0.1)
    x = torch.randn(batch, d_in, device=dev)
    target = torch.randint(0, d_out, (batch,), device=dev)
    for step in range(5):
        for lay, act, o in ((layers, silu, opt), (ref_layers, torch.nn.functional.silu, ref_opt)):
            o.zero_grad()
            loss = torch.nn.functional.cross_entropy(lay[1](act(lay[0](x))), target)
            loss.backward()
            o.step()
            if lay is layers:
                mine = loss.item()
            else:
                theirs = loss.item()
        print(f"  step {step}: loss {mine:.5f} (torch's SiLU: {theirs:.5f})")
    ok = abs(mine - theirs) < 1e-3 and all(torch.allclose(p, q, atol=1e-4)
                                           for p, q in zip(params, ref_params))
    print(f"torch_interop: 5 training steps on {dev} match torch {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
