"""tilejit.torch on CUDA tensors: zero copies, torch's current stream, torch.compile's default
backend (inductor) with fullgraph=True, and a compiled model with a tilejit LayerNorm checked against
eager torch."""
import pytest

torch = pytest.importorskip("torch")

import tilejit as tile  # noqa: E402
import tilejit.torch as tt  # noqa: E402
from test_torch_ops import silu, scaled  # noqa: E402

pytestmark = pytest.mark.gpu


@tile.entry
def layernorm_fwd(y, x, w, b, eps):
    # one row per block; the (1, width) tile covers the row and padding (zeros) is masked out
    BM, BN = y.shape
    n = x.shape[1]
    t = x.load((y.block[0], 0), (BM, BN), padding=tile.PaddingMode.ZERO).astype(tile.float32)
    mu = tile.sum(t, axis=1, keepdims=True) / n
    d = tile.where(tile.arange(BN)[None, :] < n, t - mu, 0.0)
    rs = tile.rsqrt(tile.sum(d * d, axis=1, keepdims=True) / n + eps)
    wv = w.load((0,), (BN,), padding=tile.PaddingMode.ZERO).astype(tile.float32)[None, :]
    bv = b.load((0,), (BN,), padding=tile.PaddingMode.ZERO).astype(tile.float32)[None, :]
    y.store((d * rs * wv + bv).astype(y.dtype))


def _row(x, *_):
    return (1, 1 << (x.shape[-1] - 1).bit_length())


@tt.kernel_op("tjgpu::layernorm", kernel=layernorm_fwd, tile=_row)
def layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float) -> torch.Tensor:
    return torch.empty_like(x)


def test_cuda_tensors_in_place_on_the_current_stream():
    x = torch.randn(1024, 4096, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y = silu(x)
        z = scaled(y, 3.0)          # ordered after silu by torch's stream, not by a host wait
    s.synchronize()
    assert torch.allclose(z, torch.nn.functional.silu(x) * 3.0, atol=1e-5)


def test_inductor_fullgraph_with_autograd():
    torch._dynamo.reset()
    x = torch.randn(256, 512, device="cuda", requires_grad=True)
    f = torch.compile(lambda a: (silu(a) * a).sum(), fullgraph=True)
    f(x).backward()
    mine = x.grad.clone()
    x.grad = None
    (torch.nn.functional.silu(x) * x).sum().backward()
    assert torch.allclose(mine, x.grad, atol=1e-4)


def test_compiled_layernorm_model_matches_eager():
    torch.manual_seed(0)
    torch._dynamo.reset()
    d = 1000                                         # not a power of two: a padded row tile
    lin = torch.nn.Linear(256, d, device="cuda")
    w = torch.nn.Parameter(torch.rand(d, device="cuda") + 0.5)
    b = torch.nn.Parameter(torch.randn(d, device="cuda"))
    head = torch.nn.Linear(d, 1, device="cuda")
    x = torch.randn(512, 256, device="cuda")

    def loss_fn(norm):
        return head(norm(lin(x))).square().mean()

    def tile_norm(h):
        return layernorm(h, w.detach(), b.detach(), 1e-5)

    def torch_norm(h):
        return torch.nn.functional.layer_norm(h, (d,), w.detach(), b.detach(), 1e-5)

    compiled = torch.compile(lambda: loss_fn(tile_norm), fullgraph=True)
    with torch.no_grad():
        mine, ref = compiled(), loss_fn(torch_norm)
    assert torch.allclose(mine, ref, rtol=1e-4, atol=1e-5)
    with torch.no_grad():
        h = lin(x)
        assert torch.allclose(tile_norm(h), torch_norm(h), atol=1e-4)
