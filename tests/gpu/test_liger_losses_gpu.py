"""The Liger-Kernel gallery's activations, RoPE and losses (examples/liger) on CUDA tensors at
moderate sizes: forward and backward against plain torch with Liger's tolerances, the in-place
gradients, and each script at its GPU sizes."""
import importlib
import os
import sys

import pytest

torch = pytest.importorskip("torch", reason="the Liger gallery wraps its kernels in torch "
                                            "autograd Functions")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from test_examples import _run, example_outcome  # noqa: E402

pytestmark = pytest.mark.gpu

OPS = ("swiglu", "geglu", "rope", "cross_entropy", "fused_linear_cross_entropy", "kl_div", "jsd")
F32, BF16 = torch.float32, torch.bfloat16


def gallery(name):
    return importlib.import_module(f"examples.liger.{name}")


@pytest.fixture(autouse=True)
def _cuda_torch():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA build of PyTorch")


@pytest.mark.parametrize("name", OPS)
def test_script_on_the_gpu(name):
    r = _run(f"examples/liger/{name}.py")
    outcome, why = example_outcome(name, r.returncode, r.stdout)
    assert outcome == "ok" and "cuda" in r.stdout, f"{why}\n{r.stdout}{r.stderr}"


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("shape", [(4, 128, 4096), (3, 41, 4231)])
def test_swiglu_and_geglu(dtype, shape):
    assert gallery("swiglu").check(shape, dtype, 0.7, 1.3, device="cuda")
    assert gallery("geglu").check(shape, dtype, device="cuda")


@pytest.mark.parametrize("dtype", [F32, BF16, torch.float16])
@pytest.mark.parametrize("shape, per_batch, hf_layout", [
    ((2, 128, 32, 8, 64), False, True), ((3, 423, 73, 213, 92), True, True),
    ((1, 1024, 32, 8, 128), False, False)])
def test_rope(dtype, shape, per_batch, hf_layout):
    assert gallery("rope").check(*shape, dtype, "cuda", per_batch=per_batch, hf_layout=hf_layout)


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("opts", [
    dict(reduction="mean"), dict(reduction="none", n_ignored=100),
    dict(reduction="sum", n_ignored=50, ignore_index=7, label_smoothing=0.1, weighted=True,
         softcap=30.0, lse_square_scale=1e-4, grad_scale=2.0)], ids=["mean", "none", "all"])
def test_cross_entropy(dtype, opts):
    assert gallery("cross_entropy").check(1269, 32000, dtype, "cuda", **opts)


def test_cross_entropy_gradient_in_the_logits_on_the_gpu():
    ce = gallery("cross_entropy")
    x = torch.randn(512, 32000, device="cuda", requires_grad=True)
    ref = x.detach().clone().requires_grad_()
    t = torch.randint(0, 32000, (512,), device="cuda")
    ce.LigerCrossEntropyFunction.apply(x, t, None)[0].backward()
    torch.nn.functional.cross_entropy(ref, t).backward()
    assert torch.equal(x.grad, x.detach()) and torch.allclose(x.grad, ref.grad, atol=1e-8,
                                                              rtol=1e-6)


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("reduction, bias, options", [("mean", True, False), ("sum", False, True),
                                                      ("none", True, True)])
def test_fused_linear_cross_entropy(dtype, reduction, bias, options):
    assert gallery("fused_linear_cross_entropy").check(1024, 1024, 4096, dtype, "cuda", reduction,
                                                       bias, options)


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("reduction", ["batchmean", "sum", "mean", "none"])
def test_kl_div(dtype, reduction):
    kl = gallery("kl_div")
    assert kl.check(1024, 32000, dtype, reduction, False, "cuda")
    assert kl.check(41 * 11, 1271, dtype, reduction, True, "cuda", last_layer=False)


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0])
def test_jsd(dtype, beta):
    j = gallery("jsd")
    assert j.check(2048, 3200, dtype, beta, False, "cuda")
    assert j.check(41 * 11, 1271, dtype, beta, True, "cuda", grad=2.0, ignore_index=42)
