"""tilejit kernels as PyTorch operators: a row softmax whose forward and backward are tilejit
kernels, registered with `tilejit.torch.kernel_op`, inside a model trained under
`torch.compile(fullgraph=True)` next to the same model using `torch.softmax` in eager mode.

    python examples/torch_interop.py

`kernel_op` makes the kernel a `torch.library` custom operator with a fake implementation (the
output allocation), so `torch.compile` traces through it without a graph break, and pairs the
forward with the backward operator for autograd. On a GPU the kernels read and write the torch
tensors in place on torch's current stream; on the simulator CPU tensors are copied in and out.
Without PyTorch it prints ``torch_interop: skipped: <why>`` and exits 0.
"""
import sys

import tilejit as tile
from tilejit.runtime import current_backend


@tile.entry
def softmax_fwd(y, x):
    # one block per (1, width) tile; past the row's end x reads -inf, so exp() adds 0 to the sum
    t = x.load(y.block, y.shape, padding=tile.PaddingMode.NEG_INF).astype(tile.float32)
    e = tile.exp(t - tile.max(t, axis=1, keepdims=True))
    y.store((e / tile.sum(e, axis=1, keepdims=True)).astype(y.dtype))


@tile.entry
def softmax_bwd(dx, y, dy):
    # dx = y * (dy - sum(y * dy)) per row; padding reads 0 for both, adding nothing to the sum
    s = tile.load_tile_like(y, dx).astype(tile.float32)
    g = tile.load_tile_like(dy, dx).astype(tile.float32)
    dx.store((s * (g - tile.sum(s * g, axis=1, keepdims=True))).astype(dx.dtype))


def row_tile(t, *_):
    """One whole row per block: (1, the row length rounded up to a power of two)."""
    return (1, 1 << (t.shape[-1] - 1).bit_length())


def make_softmax():
    """Register ``tjexample::softmax`` (with its backward) and return the operator."""
    import torch
    import tilejit.torch

    @tilejit.torch.kernel_op("tjexample::softmax_backward", kernel=softmax_bwd, tile=row_tile)
    def softmax_backward(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(y)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        return softmax_backward(y, dy.contiguous())

    @tilejit.torch.kernel_op("tjexample::softmax", kernel=softmax_fwd, tile=row_tile,
                             backward=backward, setup_context=setup_context)
    def softmax(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)

    return softmax


def main() -> int:
    try:
        import torch
    except ImportError:
        print("torch_interop: skipped: PyTorch is not installed (pip install torch)")
        return 0
    cuda = current_backend() == "cuda" and torch.cuda.is_available()
    dev = "cuda" if cuda else "cpu"
    softmax = make_softmax()
    torch.manual_seed(0)
    batch, d_in, hidden, d_out = (512, 256, 1000, 10) if cuda else (32, 16, 100, 10)

    def model(act):
        return torch.nn.Sequential(torch.nn.Linear(d_in, hidden), act,
                                   torch.nn.Linear(hidden, d_out)).to(dev)

    class TileSoftmax(torch.nn.Module):
        def forward(self, x):
            return softmax(x)

    mine, ref = model(TileSoftmax()), model(torch.nn.Softmax(dim=1))
    ref.load_state_dict(mine.state_dict())
    opt = torch.optim.SGD(mine.parameters(), lr=0.5)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.5)
    # the default backend (inductor) on a GPU; on CPU one that needs no C++ compiler
    step_fn = torch.compile(lambda x, t: torch.nn.functional.cross_entropy(mine(x), t),
                            fullgraph=True, backend="inductor" if cuda else "aot_eager")
    x = torch.randn(batch, d_in, device=dev)
    target = torch.randint(0, d_out, (batch,), device=dev)
    for step in range(5):
        opt.zero_grad()
        loss = step_fn(x, target)
        loss.backward()
        opt.step()
        ref_opt.zero_grad()
        ref_loss = torch.nn.functional.cross_entropy(ref(x), target)
        ref_loss.backward()
        ref_opt.step()
        print(f"  step {step}: loss {loss.item():.6f} (eager torch.softmax: {ref_loss.item():.6f})")
    ok = abs(loss.item() - ref_loss.item()) < 1e-4 and all(
        torch.allclose(p, q, atol=1e-4) for p, q in zip(mine.parameters(), ref.parameters()))
    print(f"torch_interop: 5 torch.compile'd training steps on {dev} match eager torch "
          f"{'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
