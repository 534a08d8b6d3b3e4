"""tilejit on several GPUs with torch.distributed (NCCL): sharded matmuls and a data-parallel step.

    torchrun --nproc_per_node=2 examples/distributed_matmul.py      # one process per GPU
    python examples/distributed_matmul.py                            # spawns one per GPU itself

Each rank runs tilejit kernels on its own GPU, on torch tensors (zero-copy, on torch's current
stream), and the ranks communicate through torch.distributed only:

1. row-sharded ``C = A @ B``: each rank multiplies its rows of A, ``all_gather`` assembles C;
2. K-sharded ``C = A @ B``: each rank multiplies its slice of K, ``all_reduce`` sums the parts;
3. one data-parallel SGD step of a linear model whose forward and backward are tilejit matmuls
   (a ``torch.autograd.Function``), gradients averaged with ``all_reduce``.

Every result is checked against a single-GPU computation. Needs two or more GPUs with NCCL; with
fewer it says so and exits 0.
"""
import os
import sys

try:
    import torch
    import torch.distributed as dist
except ImportError:             # the example test reads "skipped: <why>" as a skip
    print("distributed_matmul: skipped: PyTorch is not installed (pip install torch)")
    sys.exit(0)

import tilejit as tile

TILE = 64


@tile.entry
def matmul(c, a, b, BK: tile.Constant[int]):
    """c = a @ b in tf32 on the tensor cores, float32 accumulation."""
    BM, BN = c.shape
    bm, bn = c.block
    acc = tile.zeros((BM, BN), tile.float32)
    for k in range(tile.cdiv(a.shape[1], BK)):
        ta = a.load((bm, k), (BM, BK)).astype(tile.tfloat32)
        tb = b.load((k, bn), (BK, BN)).astype(tile.tfloat32)
        acc = tile.mma(ta, tb, acc)
    c.store(acc)


def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` with the tilejit kernel on the tensors' GPU (strided views allowed)."""
    c = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=torch.float32)
    stream = tile.Stream.borrow_raw(torch.cuda.current_stream(a.device))
    matmul(tile.from_dlpack(c).partition((TILE, TILE)), a, b, 32).submit_on(stream)
    return c


class TileLinear(torch.autograd.Function):
    """y = x @ w, forward and backward with tilejit."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return mm(x, w)

    @staticmethod
    def backward(ctx, gy):
        x, w = ctx.saved_tensors
        return mm(gy, w.t()), mm(x.t(), gy)


def close(a, b, tol=2e-2) -> bool:
    return float((a - b).norm() / b.norm()) < tol


def run(rank: int, world: int) -> None:
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    g = torch.Generator(device="cpu").manual_seed(0)        # the same inputs on every rank
    M, K, N = 256 * world, 512, 256
    A = torch.randn(M, K, generator=g).to(dev)
    B = torch.randn(K, N, generator=g).to(dev)
    ref = mm(A, B)                                           # single-GPU result, for checking
    torch.testing.assert_close(ref, A @ B, rtol=2e-2, atol=2e-1)

    # 1. rows of A on each rank, all_gather the row blocks of C
    rows = M // world
    part = mm(A[rank * rows:(rank + 1) * rows], B)
    gathered = [torch.empty_like(part) for _ in range(world)]
    dist.all_gather(gathered, part)
    row_sharded = torch.cat(gathered)
    assert close(row_sharded, ref), "row-sharded matmul differs"

    # 2. a slice of K on each rank, all_reduce the partial products
    ks = K // world
    partial = mm(A[:, rank * ks:(rank + 1) * ks], B[rank * ks:(rank + 1) * ks])
    dist.all_reduce(partial)
    assert close(partial, ref), "K-sharded matmul differs"

    # 3. one data-parallel SGD step of y = x @ w on the loss mean((y - t)^2)
    batch = 64 * world
    X = torch.randn(batch, K, generator=g).to(dev)
    T = torch.randn(batch, N, generator=g).to(dev)
    w0 = (torch.randn(K, N, generator=g) * 0.05).to(dev)
    w = w0.clone().requires_grad_(True)
    shard = slice(rank * 64, (rank + 1) * 64)
    loss = ((TileLinear.apply(X[shard], w) - T[shard]) ** 2).mean()
    loss.backward()
    dist.all_reduce(w.grad)
    w.grad /= world
    with torch.no_grad():
        w -= 0.1 * w.grad
    wr = w0.clone().requires_grad_(True)                     # the same step on one GPU, in torch
    ((X @ wr - T) ** 2).mean().backward()
    with torch.no_grad():
        wr -= 0.1 * wr.grad
    assert close(w.detach() - w0, wr.detach() - w0, 5e-2), "data-parallel step differs"
    if rank == 0:
        print(f"distributed_matmul: {world} GPUs ok (row-sharded and K-sharded {M}x{K}x{N} "
              f"matmuls, one data-parallel training step)")


def worker(rank: int, world: int, port: str) -> None:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", port)
    dist.init_process_group("nccl", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    try:
        run(rank, world)
    finally:
        dist.destroy_process_group()


def main() -> int:
    if "RANK" in os.environ:                                 # started by torchrun
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]),
               os.environ.get("MASTER_PORT", "29500"))
        return 0
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if n < 2 or not dist.is_nccl_available():
        print(f"distributed_matmul: skipped: needs two or more GPUs with NCCL (found {n})")
        return 0
    import torch.multiprocessing as mp
    mp.spawn(worker, args=(n, str(29500 + os.getpid() % 1000)), nprocs=n, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
