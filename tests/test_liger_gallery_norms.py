"""The Liger gallery's norms and softmax (examples/liger: rms_norm, layer_norm, group_norm, dyt,
softmax) on the simulator with CPU tensors: each autograd Function forward and backward against
a torch reference, float32 and bfloat16, rows and columns that are not multiples of the tile,
persistent backward loops of several row tiles, and RMSNorm's in-place gradient."""
import importlib
import os
import sys

import pytest

torch = pytest.importorskip("torch", reason="the Liger gallery is written for PyTorch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

pytestmark = pytest.mark.usefixtures("simulator_backend")

F32, BF16 = torch.float32, torch.bfloat16


def gallery(op: str):
    return importlib.import_module(f"examples.liger.{op}")


# --- rms_norm -------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 8, 64), (3, 5, 41), (600, 32)])
@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("mode,offset", [("llama", 0.0), ("gemma", 1.0), ("none", 0.0)])
def test_rms_norm_matches_huggingface(shape, dtype, mode, offset):
    """(3, 5, 41): 15 rows in a 16-row tile, 41 columns in 64; (600, 32): the persistent
    backward walks several row tiles a block."""
    assert gallery("rms_norm").check(shape, dtype, mode, offset, in_place=False) == []


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("affine", [True, False])
def test_rms_norm_in_place_and_without_weight(dtype, affine):
    assert gallery("rms_norm").check((3, 5, 41), dtype, "llama", 0.0, in_place=True,
                                     affine=affine) == []


def test_rms_norm_in_place_writes_dx_over_dy_and_not_in_place_keeps_dy():
    R = gallery("rms_norm")
    x = torch.randn(7, 33, requires_grad=True)
    w = torch.randn(33, requires_grad=True)
    dy = torch.randn(7, 33)
    g = dy.clone()
    R.LigerRMSNormFunction.apply(x, w, 1e-6, 0.0, "llama", True).backward(g)
    assert x.grad.data_ptr() == g.data_ptr() and torch.equal(x.grad, g)
    x.grad = None
    g = dy.clone()
    R.LigerRMSNormFunction.apply(x, w, 1e-6, 0.0, "llama", False).backward(g)
    assert torch.equal(g, dy) and x.grad.data_ptr() != g.data_ptr()


def test_rms_norm_takes_liger_arguments_and_refuses_a_bad_casting_mode():
    R = gallery("rms_norm")
    x, w = torch.randn(4, 16), torch.randn(16)
    by_name = R.LigerRMSNormFunction.apply(x, w, 1e-6, 1.0, "gemma", True, True)
    assert torch.equal(by_name, R.LigerRMSNormFunction.apply(x, w, 1e-6, 1.0, 1))
    assert torch.equal(by_name, R.rms_norm(x, w, 1e-6, 1.0, "gemma"))
    layer = R.LigerRMSNorm(16, offset=1.0, casting_mode="gemma")
    with torch.no_grad():
        layer.weight.copy_(w)
    assert torch.equal(layer(x), by_name)
    with pytest.raises(ValueError, match="casting_mode must be one of"):
        R.LigerRMSNormFunction.apply(x, w, 1e-6, 0.0, "bf16")
    with pytest.raises(ValueError, match=r"W must have shape \(16,\)"):
        R.LigerRMSNormFunction.apply(x, torch.randn(8), 1e-6)


def test_rms_norm_refuses_rows_past_liger_limit():
    with pytest.raises(RuntimeError, match="longer than the 65536"):
        gallery("rms_norm").LigerRMSNormFunction.apply(torch.randn(1, 65537), None, 1e-6)


# --- layer_norm -----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 8, 64), (3, 7, 100), (1, 1, 300), (600, 32)])
@pytest.mark.parametrize("dtype", [F32, BF16])
def test_layer_norm_matches_torch(shape, dtype):
    assert gallery("layer_norm").check(shape, dtype) == []


def test_layer_norm_module_and_functional_form():
    L = gallery("layer_norm")
    x = torch.randn(3, 5, 24)
    layer = L.LigerLayerNorm(24, eps=1e-5)
    with torch.no_grad():
        layer.weight.normal_()
        layer.bias.normal_()
    want = torch.nn.functional.layer_norm(x, (24,), layer.weight, layer.bias, 1e-5)
    assert torch.allclose(layer(x), want, atol=1e-5, rtol=1e-5)
    assert torch.allclose(L.layer_norm(x, layer.weight, layer.bias, 1e-5), want, atol=1e-5,
                          rtol=1e-5)


def test_layer_norm_of_a_non_contiguous_input():
    L = gallery("layer_norm")
    x = torch.randn(24, 6).t().requires_grad_(True)             # (6, 24), stride (1, 6)
    w, b = torch.randn(24, requires_grad=True), torch.randn(24, requires_grad=True)
    dy = torch.randn(6, 24)
    L.LigerLayerNormFunction.apply(x, w, b, 1e-6).backward(dy)
    xr = x.detach().clone().requires_grad_(True)
    wr, br = (t.detach().clone().requires_grad_(True) for t in (w, b))
    torch.nn.functional.layer_norm(xr, (24,), wr, br, 1e-6).backward(dy)
    for got, want in ((x.grad, xr.grad), (w.grad, wr.grad), (b.grad, br.grad)):
        assert torch.allclose(got, want, atol=1e-5, rtol=1e-5)


# --- group_norm -----------------------------------------------------------------------------------
@pytest.mark.parametrize("case", [
    (1, 1, 1, 3),           # minimal
    (1, 32, 32, 4),         # a group per channel
    (2, 6, 2, 37),          # 3 channels a group (a 4-channel tile), 37 positions in 64: one tile
    (3, 8, 2, 40),          # 4 channels a group, by tile index; 3 samples in a 4-sample block
    (2, 8, 2, 3000),        # walked: 4 channels of 3000 positions, (1, 4096) tiles
    (2, 22, 2, 1500),       # walked: 11 channels in blocks of 2, the last block half outside
])
@pytest.mark.parametrize("dtype", [F32, BF16])
def test_group_norm_matches_torch(case, dtype):
    assert gallery("group_norm").check(*case, dtype) == []


def test_group_norm_takes_more_than_three_dimensions_and_refuses_uneven_groups():
    G = gallery("group_norm")
    x = torch.randn(2, 6, 5, 7)
    w, b = torch.randn(6), torch.randn(6)
    want = torch.nn.functional.group_norm(x, 3, w, b, 1e-6)
    assert torch.allclose(G.LigerGroupNormFunction.apply(x, w, b, 6, 3, 1e-6), want, atol=1e-5,
                          rtol=1e-5)
    assert torch.allclose(G.group_norm(x, 3, w, b), want, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="multiple of num_groups"):
        G.LigerGroupNormFunction.apply(x, w, b, 6, 4, 1e-6)
    with pytest.raises(ValueError, match="num_channels=8"):
        G.LigerGroupNormFunction.apply(x, w, b, 8, 4, 1e-6)


# --- dyt ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 8, 512), (1, 1, 1023), (3, 7, 100), (300, 64)])
@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("with_beta", [True, False])
def test_dyt_matches_torch(shape, dtype, with_beta):
    """(300, 64): 19 row tiles over 8 row groups, several a block."""
    assert gallery("dyt").check(shape, dtype, with_beta) == []


def test_dyt_module_returns_no_beta_gradient_without_beta():
    D = gallery("dyt")
    layer = D.LigerDyT(40, beta=False)
    x = torch.randn(3, 40, requires_grad=True)
    layer(x).sum().backward()
    assert layer.beta is None and layer.alpha.grad.shape == (1,) and x.grad.shape == (3, 40)


# --- softmax --------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 8), (4, 16), (1, 1023), (3, 7, 100), (300, 40)])
@pytest.mark.parametrize("dtype", [F32, BF16])
def test_softmax_matches_torch(shape, dtype):
    assert gallery("softmax").check(shape, dtype) == []


def test_softmax_of_a_broadcast_gradient():
    """``y.sum().backward()`` hands backward a stride-0 gradient."""
    S = gallery("softmax")
    x = torch.randn(5, 30, requires_grad=True)
    S.softmax(x).sum().backward()
    assert torch.allclose(x.grad, torch.zeros(5, 30), atol=1e-6)


# --- the package and the benchmark harness ----------------------------------------------------
def test_the_package_docstring_lists_the_norms_and_does_not_import_them():
    init = open(os.path.join(ROOT, "examples", "liger", "__init__.py")).read()
    for op in ("rms_norm", "layer_norm", "group_norm", "dyt", "softmax"):
        assert f"`{op}.py`" in init
    assert "import" not in init.split('"""')[2]


def test_the_benchmark_runs_the_gallery_through_its_harness_on_the_simulator():
    """benchmarks/liger.py --simulator: the gallery's Functions checked against torch in the
    benchmark's own cases, and --tuned's kernel swap (Liger's column needs a checkout and a
    GPU: a note)."""
    import subprocess
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "liger.py"),
                        "--simulator", "--only", "rms_norm,softmax", "--tuned"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {ln.split("|")[1].strip(): ln for ln in r.stdout.splitlines()
            if ln.startswith("| ") and not ln.startswith("| op ")}
    assert set(rows) == {"rms_norm", "softmax"}, r.stdout
    for row in rows.values():
        cells = [c.strip() for c in row.split("|")]
        assert cells[7] == "yes / -", row
        assert cells[8].endswith(("w/occ1)", "w/occ2)", "w/occ4)")), row        # the best setting
        assert "no Liger-Kernel checkout given" in row
