"""The Liger gallery's norms and softmax (examples/liger) on CUDA tensors at Liger's test shapes
and at moderate sizes: forward and backward against torch, float32 and bfloat16, in place and
not, and each module's own script at its GPU sizes."""
import importlib
import sys

import pytest

torch = pytest.importorskip("torch", reason="the Liger gallery is written for PyTorch")

from test_examples import ROOT, _run, example_outcome  # noqa: E402

if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

pytestmark = pytest.mark.gpu

F32, BF16 = torch.float32, torch.bfloat16
OPS = ["rms_norm", "layer_norm", "group_norm", "dyt", "softmax"]


@pytest.fixture(autouse=True)
def _torch_sees_the_gpu():
    if not torch.cuda.is_available():
        pytest.skip("torch sees no GPU (a CPU build of PyTorch)")


def gallery(op: str):
    return importlib.import_module(f"examples.liger.{op}")


@pytest.mark.parametrize("shape", [(2, 128, 512), (5, 123, 123)])
@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("mode,offset", [("llama", 0.0), ("gemma", 1.0), ("none", 0.0)])
@pytest.mark.parametrize("in_place", [True, False])
def test_rms_norm_at_liger_test_shapes(shape, dtype, mode, offset, in_place):
    assert gallery("rms_norm").check(shape, dtype, mode, offset, in_place, device="cuda") == []


@pytest.mark.parametrize("shape", [(4096, 4096), (1000, 5000)])
@pytest.mark.parametrize("mode,offset", [("llama", 0.0), ("gemma", 1.0)])
def test_rms_norm_at_moderate_sizes(shape, mode, offset):
    assert gallery("rms_norm").check(shape, BF16, mode, offset, device="cuda",
                                     float32_reference=True) == []


@pytest.mark.parametrize("shape", [(2, 8, 64), (1, 1, 1023), (3, 7, 256), (1, 1, 1500)])
@pytest.mark.parametrize("dtype", [F32, BF16])
def test_layer_norm_at_liger_test_shapes(shape, dtype):
    assert gallery("layer_norm").check(shape, dtype, "cuda") == []


def test_layer_norm_at_a_moderate_size():
    assert gallery("layer_norm").check((8, 512, 4096), BF16, "cuda") == []


@pytest.mark.parametrize("case", [(1, 1, 1, 3), (1, 32, 32, 4), (16, 32, 1, 4096),
                                  (2, 63, 21, 2163), (16, 48, 12, 8192)])
@pytest.mark.parametrize("dtype", [F32, BF16])
def test_group_norm_at_liger_test_shapes(case, dtype):
    assert gallery("group_norm").check(*case, dtype, "cuda") == []


def test_group_norm_at_liger_benchmark_shape():
    """Liger's benchmark: 4 channels of 512 positions a group, 4 samples a block."""
    assert gallery("group_norm").check(16, 4096, 1024, 512, BF16, "cuda") == []


@pytest.mark.parametrize("shape", [(2, 8, 4096), (4, 16, 2048), (1, 1, 1023), (3, 7, 256)])
@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("with_beta", [True, False])
def test_dyt_at_liger_test_shapes(shape, dtype, with_beta):
    assert gallery("dyt").check(shape, dtype, with_beta, "cuda") == []


def test_dyt_at_a_moderate_size():
    assert gallery("dyt").check((2048, 4096), BF16, True, "cuda") == []


@pytest.mark.parametrize("shape", [(2, 8), (1, 1023), (3, 7, 256), (1, 2, 4096), (2048, 4096),
                                   (64, 32768)])
@pytest.mark.parametrize("dtype", [F32, BF16])
def test_softmax(shape, dtype):
    """Liger's test shapes, and moderate ones (softmax sums no rows: float32 holds at these)."""
    assert gallery("softmax").check(shape, dtype, "cuda") == []


@pytest.mark.parametrize("op", OPS)
def test_the_script_checks_itself_on_the_gpu(op):
    r = _run(f"examples/liger/{op}.py")
    outcome, why = example_outcome(op, r.returncode, r.stdout)
    assert outcome == "ok", f"{why}\n{r.stdout}{r.stderr}"
    assert "on cuda" in r.stdout
