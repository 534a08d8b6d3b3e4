"""tilejit.torch: kernels registered as torch.library operators, with autograd, traced by
torch.compile without graph breaks (CPU tensors, run on the simulator)."""
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import tilejit as tile  # noqa: E402
import tilejit.torch as tt  # noqa: E402

pytestmark = pytest.mark.usefixtures("simulator_backend")

TILE = (16, 64)


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


@tile.entry
def scale(y, x, a):
    y.store(tile.load_tile_like(x, y) * a)


@tt.kernel_op("tjtest::silu_backward", kernel=silu_bwd, tile=TILE)
def silu_backward(x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def _setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _backward(ctx, dy):
    (x,) = ctx.saved_tensors
    return silu_backward(x, dy)


@tt.kernel_op("tjtest::silu", kernel=silu_fwd, tile=TILE, backward=_backward,
              setup_context=_setup)
def silu(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


@tt.kernel_op("tjtest::scale", kernel=scale, tile=lambda x, a: (1, x.shape[-1]))
def scaled(x: torch.Tensor, a: float) -> torch.Tensor:
    return torch.empty_like(x)


def test_forward_matches_torch_and_is_a_registered_operator():
    x = torch.randn(40, 100)
    assert torch.allclose(silu(x), torch.nn.functional.silu(x), atol=1e-6)
    assert torch.allclose(torch.ops.tjtest.silu(x), torch.nn.functional.silu(x), atol=1e-6)


def test_scalar_arguments_and_a_callable_tile():
    x = torch.randn(8, 32)
    assert torch.allclose(scaled(x, 2.5), x * 2.5)


def test_backward_kernel_gives_torch_gradients():
    x = torch.randn(40, 100, requires_grad=True)
    silu(x).pow(2).sum().backward()
    mine = x.grad.clone()
    x.grad = None
    torch.nn.functional.silu(x).pow(2).sum().backward()
    assert torch.allclose(mine, x.grad, atol=1e-5)


def test_torch_compile_fullgraph_traces_the_operator():
    seen = []

    def backend(gm, example_inputs):
        seen.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return gm.forward

    torch._dynamo.reset()
    f = torch.compile(lambda a: silu(a) * 2 + 1, fullgraph=True, backend=backend)
    x = torch.randn(32, 64)
    assert torch.allclose(f(x), torch.nn.functional.silu(x) * 2 + 1, atol=1e-6)
    assert any("tjtest.silu" in s for s in seen), seen      # one graph, our op inside it


def test_opcheck_passes():
    # schema, fake (meta) implementation, autograd registration and dispatch all agree
    torch.library.opcheck(silu, (torch.randn(16, 64),))
    torch.library.opcheck(silu, (torch.randn(16, 64, requires_grad=True),))


def test_fake_tensor_mode_allocates_without_running():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        y = silu(torch.empty(1000, 1000, dtype=torch.float16))
    assert y.shape == (1000, 1000) and y.dtype == torch.float16


def test_bad_operator_name_is_refused():
    with pytest.raises(ValueError, match="namespace::name"):
        tt.kernel_op("silu", kernel=silu_fwd, tile=TILE)


def test_import_tilejit_does_not_import_torch():
    code = "import sys, tilejit; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_allocating_function_must_return_one_tensor():
    @tt.kernel_op("tjtest::two_outputs", kernel=scale, tile=(1, 32))
    def two(x: torch.Tensor, a: float) -> torch.Tensor:
        return (torch.empty_like(x), torch.empty_like(x))

    with pytest.raises(TypeError, match="one torch.Tensor"):
        two(torch.ones(4, 32), 2.0)
