"""tilejit with torch.distributed: sharded matmuls and a data-parallel step, on GPUs or CPUs.

    torchrun --nproc_per_node=2 examples/distributed_matmul.py   # one process per GPU (NCCL)
    python examples/distributed_matmul.py                         # spawns one per GPU itself
    torchrun --nproc_per_node=2 examples/distributed_matmul.py --cpu    # CPU tensors (gloo)

Each rank runs tilejit kernels on torch tensors and the ranks communicate through
torch.distributed only:

1. row-sharded ``C = A @ B``: each rank multiplies its rows of A, ``all_gather`` assembles C;
2. K-sharded ``C = A @ B``: each rank multiplies its slice of K, ``all_reduce`` sums the parts;
3. one data-parallel SGD step of a linear model whose forward and backward are tilejit matmuls
   (a ``torch.autograd.Function``), gradients averaged with ``all_reduce``.

On GPUs (one per rank, NCCL) the kernels write torch's tensors in place on torch's current
stream. Without enough GPUs for the ranks, or with ``--cpu``, the ranks use CPU tensors and gloo
(CI runs it so): a kernel cannot write host memory in place, so each matmul writes a tilejit tensor
and the result is copied out; without a GPU the kernels run on tilejit's simulator. Every result
is checked against a single-device computation.
"""
import os
import socket
import sys

try:
    import torch
    import torch.distributed as dist
except ImportError:             # the example test reads "skipped: <why>" as a skip
    print("distributed_matmul: skipped: PyTorch is not installed (pip install torch)")
    sys.exit(0)

import tilejit as tile
from tilejit import api

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


def mm(a, b):
    """``a @ b`` with the tilejit kernel, on the tensors' device (strided views allowed)."""
    a, b = a.detach(), b.detach()     # CPU tensors that require grad refuse DLPack's export
    if a.is_cuda:
        # in place, on torch's current stream: ordered with torch's own work, no waiting
        c = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=torch.float32)
        stream = tile.Stream.borrow_raw(torch.cuda.current_stream(a.device))
        matmul(tile.partition(c, (TILE, TILE)), a, b, 32).submit_on(stream)
        return c
    # CPU tensors (copied in): the kernel writes a tilejit tensor, copied out when it is done
    c = api.empty((a.shape[0], b.shape[1]), tile.float32).sync()
    matmul(c.partition((TILE, TILE)), a, b, 32).sync()
    return torch.from_numpy(c.to_numpy())


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


def run(rank: int, world: int, dev) -> str:
    g = torch.Generator(device="cpu").manual_seed(0)        # the same inputs on every rank
    M, K, N = 256 * world, 512, 256
    A = torch.randn(M, K, generator=g).to(dev)
    B = torch.randn(K, N, generator=g).to(dev)
    ref = mm(A, B)                                           # single-device result, for checking
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
    wr = w0.clone().requires_grad_(True)                     # the same step on one device, in torch
    ((X @ wr - T) ** 2).mean().backward()
    with torch.no_grad():
        wr -= 0.1 * wr.grad
    assert close(w.detach() - w0, wr.detach() - w0, 5e-2), "data-parallel step differs"
    return f"row-sharded and K-sharded {M}x{K}x{N} matmuls, one data-parallel step"


def use_gpus(world: int, cpu: bool) -> bool:
    """One GPU per rank with NCCL when there are enough (and --cpu is not given)."""
    return (not cpu and torch.cuda.is_available() and torch.cuda.device_count() >= world
            and dist.is_nccl_available())


def worker(rank: int, world: int, cpu: bool) -> None:
    gpus = use_gpus(world, cpu)
    if gpus:
        torch.cuda.set_device(rank)
        dev = torch.device("cuda", rank)
        dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    else:
        dev = torch.device("cpu")
        dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        what = run(rank, world, dev)
        dist.barrier()                    # every rank checked its results
    finally:
        dist.destroy_process_group()
    if rank == 0:
        where = f"{world} GPUs (nccl)" if gpus else f"{world} CPU processes (gloo)"
        print(f"distributed_matmul: {what} on {where} ok")


def _spawned(rank: int, world: int, cpu: bool, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    worker(rank, world, cpu)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv) -> int:
    if not dist.is_available():
        print("distributed_matmul: skipped: this PyTorch has no torch.distributed")
        return 0
    cpu = "--cpu" in argv
    if "RANK" in os.environ:                                 # started by torchrun
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), cpu)
        return 0
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    gpus = n >= 2 and use_gpus(n, cpu)
    world = n if gpus else 2                                 # else two CPU processes
    import torch.multiprocessing as mp
    mp.spawn(_spawned, args=(world, not gpus, _free_port()), nprocs=world, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
