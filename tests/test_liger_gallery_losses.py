"""The Liger-Kernel gallery's activations, RoPE and losses (examples/liger: swiglu, geglu, rope,
cross_entropy, fused_linear_cross_entropy, kl_div, jsd) on the simulator: each
``torch.autograd.Function`` forward and backward against plain torch with Liger's tolerances,
float32 and bfloat16, shapes that do not fill their tiles, the gradients Liger writes in place,
and each script's own check (the gallery protocol)."""
import importlib
import inspect
import os
import sys

import pytest

torch = pytest.importorskip("torch", reason="the Liger gallery wraps its kernels in torch "
                                            "autograd Functions")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from test_examples import _run, example_outcome  # noqa: E402

OPS = ("swiglu", "geglu", "rope", "cross_entropy", "fused_linear_cross_entropy", "kl_div", "jsd")
FUNCTIONS = {"swiglu": "LigerSiLUMulFunction", "geglu": "LigerGELUMulFunction",
             "rope": "LigerRopeFunction", "cross_entropy": "LigerCrossEntropyFunction",
             "fused_linear_cross_entropy": "LigerFusedLinearCrossEntropyFunction",
             "kl_div": "LigerKLDivLossFunction", "jsd": "LigerJSDFunction"}
#: Liger's Triton Functions' forward parameters and defaults (ead96b6, annotations left out),
#: which a benchmark calls ours with
SIGNATURES = {
    "swiglu": "(ctx, a, b, gate_multiplier=1.0, down_multiplier=1.0)",
    "geglu": "(ctx, a, b)",
    "rope": "(ctx, q, k, cos, sin, position_ids=None, unsqueeze_dim=1)",
    "cross_entropy": "(ctx, _input, target, weight, ignore_index=-100, lse_square_scale=0.0, "
                     "label_smoothing=0.0, reduction='mean', softcap=None, return_z_loss=False, "
                     "return_token_accuracy=False, return_predicted_tokens=False)",
    "fused_linear_cross_entropy": "(ctx, _input, weight, target, bias=None, ce_weight=None, "
                                  "ignore_index=-100, lse_square_scale=0.0, label_smoothing=0.0, "
                                  "reduction='mean', softcap=None, return_z_loss=False, "
                                  "accum_dtype=None, use_token_scaling=False, "
                                  "return_token_accuracy=False, return_predicted_tokens=False)",
    "kl_div": "(ctx, y_pred, y_true, reduction='batchmean', log_target=False, eps=1e-10)",
    "jsd": "(ctx, _input, target, shift_labels=None, beta=0.5, ignore_index=-100)",
}


def gallery(name):
    return importlib.import_module(f"examples.liger.{name}")


swiglu, geglu, rope, ce, flce, kl_div, jsd = (gallery(n) for n in OPS)
F32, BF16 = torch.float32, torch.bfloat16


def _plain(sig):
    """A signature's parameters and defaults, without annotations."""
    return [(p.name, p.default) for p in sig.parameters.values()]


@pytest.mark.parametrize("name", OPS)
def test_functions_take_liger_arguments(name):
    fn = getattr(gallery(name), FUNCTIONS[name])
    assert issubclass(fn, torch.autograd.Function)
    want = inspect.signature(eval(f"lambda {SIGNATURES[name][1:-1]}: 0"))
    assert _plain(inspect.signature(fn.forward)) == _plain(want)


@pytest.mark.parametrize("name", OPS)
def test_script_checks_itself(name):
    r = _run(f"examples/liger/{name}.py", TILEJIT_SIMULATE="1")
    outcome, why = example_outcome(name, r.returncode, r.stdout)
    if outcome == "skipped":
        pytest.skip(f"examples/liger/{name}.py: {why}")
    assert outcome == "ok", f"{why}\n{r.stdout}{r.stderr}"


# --- swiglu, geglu -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("shape, gate, down", [((9, 7, 41), 1.0, 1.0), ((3, 2, 4100), 0.7, 1.3)])
def test_swiglu(dtype, shape, gate, down, monkeypatch):
    monkeypatch.setattr(swiglu.common, "FLAT_TILE", 512)      # several tiles, the last ragged
    assert swiglu.check(shape, dtype, gate, down)


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("shape", [(9, 7, 41), (2, 3, 1500)])
def test_geglu(dtype, shape, monkeypatch):
    monkeypatch.setattr(geglu.common, "FLAT_TILE", 512)
    assert geglu.check(shape, dtype)


@pytest.mark.parametrize("mod", [swiglu, geglu], ids=["swiglu", "geglu"])
def test_gated_backward_overwrites_the_saved_inputs(mod):
    """Liger's backward writes da into a and db into b (the activations are spent)."""
    a, b = torch.randn(5, 33), torch.randn(5, 33)
    a_leaf, b_leaf = a.clone().requires_grad_(), b.clone().requires_grad_()
    ref_a, ref_b = a.clone().requires_grad_(), b.clone().requires_grad_()
    fn = mod.LigerSiLUMulFunction if mod is swiglu else mod.LigerGELUMulFunction
    dc = torch.randn(5, 33)
    fn.apply(a_leaf, b_leaf).backward(dc)
    mod.reference(ref_a, ref_b).backward(dc)
    assert torch.allclose(a_leaf.grad, ref_a.grad, atol=1e-5)
    assert torch.equal(a_leaf.detach(), a_leaf.grad) and torch.equal(b_leaf.detach(), b_leaf.grad)


def test_swiglu_refuses_mismatched_inputs():
    with pytest.raises(ValueError, match="one shape"):
        swiglu.swiglu(torch.randn(2, 3), torch.randn(2, 4))


# --- rope ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [F32, BF16, torch.float16])
@pytest.mark.parametrize("bsz, seq, nq, nk, hd, per_batch, hf_layout", [
    (2, 8, 4, 2, 16, False, True),          # powers of two, T > 1 tokens a block
    (2, 7, 5, 3, 12, True, True),           # ragged heads, a half (6) that is no power of two
    (1, 6, 3, 6, 8, False, False),          # contiguous (batch, heads, seq, dim): copied first
])
def test_rope(dtype, bsz, seq, nq, nk, hd, per_batch, hf_layout):
    assert rope.check(bsz, seq, nq, nk, hd, dtype, per_batch=per_batch, hf_layout=hf_layout)


def test_rope_rotates_hf_layout_in_place_and_copies_otherwise():
    cos, sin = rope.tables(1, 4, 8, F32, "cpu")
    base = torch.randn(1, 4, 2, 8)                       # (batch, seq, heads, dim) storage
    q, k = base.transpose(1, 2), base.clone().transpose(1, 2)
    want_q, _ = rope.reference(q.clone(), k.clone(), cos, sin)
    got_q, _ = rope.LigerRopeFunction.apply(q, k, cos, sin)
    assert got_q.data_ptr() == base.data_ptr() and torch.allclose(base.transpose(1, 2), want_q)
    q2 = torch.randn(1, 2, 4, 8)                         # its transpose is not contiguous
    keep = q2.clone()
    got2, _ = rope.LigerRopeFunction.apply(q2, q2.clone(), cos, sin)
    assert torch.equal(q2, keep) and torch.allclose(got2, rope.reference(keep, keep, cos, sin)[0])


def test_rope_odd_head_dim_keeps_its_last_element():
    """Liger's kernel rotates the first 2 * (head_dim // 2) elements and leaves the last."""
    hd = 9
    cos, sin = rope.tables(1, 3, 8, F32, "cpu")
    cos9 = torch.cat([cos, torch.ones(1, 3, 1)], -1)
    sin9 = torch.cat([sin, torch.zeros(1, 3, 1)], -1)
    q = torch.randn(1, 3, 2, hd).transpose(1, 2)
    k = torch.randn(1, 3, 1, hd).transpose(1, 2)
    want_q, want_k = rope.reference(q[..., :8].clone(), k[..., :8].clone(), cos, sin)
    last_q, last_k = q[..., 8].clone(), k[..., 8].clone()
    got_q, got_k = rope.LigerRopeFunction.apply(q, k, cos9, sin9)
    assert torch.allclose(got_q[..., :8], want_q, atol=1e-6)
    assert torch.allclose(got_k[..., :8], want_k, atol=1e-6)
    assert torch.equal(got_q[..., 8], last_q) and torch.equal(got_k[..., 8], last_k)


def test_rope_odd_head_dim_out_of_place_keeps_its_last_element():
    """A contiguous (batch, heads, seq, dim) q is rotated into a new tensor, which must carry the
    last element of an odd head over as Liger's copy does."""
    cos, sin = rope.tables(1, 3, 4, F32, "cpu")
    cos5 = torch.cat([cos, torch.ones(1, 3, 1)], -1)
    sin5 = torch.cat([sin, torch.zeros(1, 3, 1)], -1)
    q = torch.randn(1, 2, 3, 5)
    keep = q.clone()
    got_q, _ = rope.LigerRopeFunction.apply(q, q.clone(), cos5, sin5)
    want_q, _ = rope.reference(keep[..., :4], keep[..., :4], cos, sin)
    assert torch.equal(q, keep) and torch.equal(got_q[..., 4], keep[..., 4])
    assert torch.allclose(got_q[..., :4], want_q, atol=1e-6)


def test_rope_refuses_mismatched_tables():
    q = torch.randn(1, 2, 4, 8)
    with pytest.raises(ValueError, match="cos and sin must be"):
        rope.rope(q, q.clone(), *rope.tables(1, 5, 8, F32, "cpu"))


# --- cross entropy -------------------------------------------------------------------------------
CE_OPTIONS = [
    dict(reduction="mean"),
    dict(reduction="sum", grad_scale=2.0),
    dict(reduction="none", n_ignored=3),
    dict(reduction="mean", n_ignored=3, ignore_index=2, label_smoothing=0.1),
    dict(reduction="sum", weighted=True, n_ignored=2),
    dict(reduction="mean", softcap=3.0, lse_square_scale=1e-2, grad_scale=0.5),
    dict(reduction="none", n_ignored=2, ignore_index=1, label_smoothing=0.2, weighted=True,
         softcap=5.0, lse_square_scale=1e-3),
]


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("opts", CE_OPTIONS, ids=lambda o: "-".join(f"{k}={v}" for k, v in
                                                                  o.items()))
def test_cross_entropy(dtype, opts, monkeypatch):
    monkeypatch.setattr(ce, "CHUNK", 64)                 # 150 columns: three chunks, one ragged
    assert ce.check(12, 150, dtype, **opts)


def test_cross_entropy_writes_the_gradient_into_the_logits():
    x = torch.randn(6, 50, requires_grad=True)
    before = x.detach().clone()
    t = torch.randint(0, 50, (6,))
    loss = ce.LigerCrossEntropyFunction.apply(x, t, None)[0]
    assert not torch.equal(x.detach(), before)           # written during forward, as Liger does
    ref = before.clone().requires_grad_()
    torch.nn.functional.cross_entropy(ref, t).backward()
    assert torch.allclose(x.detach(), ref.grad, atol=1e-7, rtol=1e-6)
    loss.backward()
    assert torch.equal(x.grad, x.detach())              # backward hands the stored gradient on


def test_cross_entropy_forward_only_leaves_the_logits():
    x = torch.randn(6, 50)
    keep = x.clone()
    t = torch.randint(0, 50, (6,))
    loss = ce.LigerCrossEntropyFunction.apply(x, t, None)[0]
    assert torch.equal(x, keep)
    assert torch.allclose(loss, torch.nn.functional.cross_entropy(keep, t), rtol=1e-6)


def test_cross_entropy_accuracy_and_predicted_tokens(monkeypatch):
    monkeypatch.setattr(ce, "CHUNK", 16)
    x = torch.randn(10, 40)
    x[3, 5] = x[3, 33] = 100.0                          # a tie: the first column wins
    t = torch.randint(0, 40, (10,))
    t[0] = -100
    t[1] = int(x[1].argmax())
    _, _, acc, pred = ce.LigerCrossEntropyFunction.apply(x.clone(), t, None, -100, 0.0, 0.0,
                                                         "mean", None, False, True, True)
    argmax = x.argmax(dim=-1)
    assert torch.equal(pred[1:], argmax[1:]) and pred[0] == -1 and pred[3] == 5
    assert torch.allclose(acc, ((argmax == t)[1:]).float().mean())


def test_cross_entropy_refuses_targets_out_of_bounds():
    with pytest.raises(ValueError, match="out of bounds"):
        ce.LigerCrossEntropyFunction.apply(torch.randn(4, 10), torch.tensor([0, 3, 10, -100]),
                                           None)


def test_cross_entropy_refuses_unknown_reduction():
    with pytest.raises(ValueError, match="reduction"):
        ce.LigerCrossEntropyFunction.apply(torch.randn(4, 10), torch.zeros(4, dtype=torch.long),
                                           None, -100, 0.0, 0.0, "batchmean")


# --- fused linear cross entropy ------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("reduction, bias, options", [
    ("mean", True, False), ("sum", False, True), ("none", True, False), ("none", False, True),
])
def test_fused_linear_cross_entropy(dtype, reduction, bias, options):
    # (28, 31, 123): Liger's random shape, chunks of 8 rows (the last one short)
    assert flce.check(28, 31, 123, dtype, reduction=reduction, with_bias=bias, options=options)


def test_fused_linear_cross_entropy_token_scaling_and_accuracy():
    gen = torch.Generator().manual_seed(1)
    x, w = torch.randn(10, 8, generator=gen), torch.randn(20, 8, generator=gen)
    t = torch.randint(0, 20, (10,), generator=gen)
    t[2] = -100
    x1, w1 = x.clone().requires_grad_(), w.clone().requires_grad_()
    x2, w2 = x.clone().requires_grad_(), w.clone().requires_grad_()
    loss, _, acc, pred = flce.LigerFusedLinearCrossEntropyFunction.apply(
        x1, w1, t, None, None, -100, 0.0, 0.0, "mean", None, False, None, True, True, True)
    logits = x2 @ w2.t()
    per_row = torch.nn.functional.cross_entropy(logits, t, reduction="none")
    p_y = torch.softmax(logits.detach(), -1).gather(1, t.clamp(min=0)[:, None])[:, 0]
    want = (per_row * p_y).sum() / (t != -100).sum()
    loss.backward()
    want.backward()
    assert torch.allclose(loss, want, rtol=1e-5)
    assert torch.allclose(x1.grad, x2.grad, atol=1e-6) and torch.allclose(w1.grad, w2.grad,
                                                                           atol=1e-6)
    argmax = logits.argmax(-1)
    assert pred[2] == -1 and torch.equal(pred[t != -100], argmax[t != -100])
    assert torch.allclose(acc, (argmax == t).float().sum() / 9)


def test_fused_linear_cross_entropy_weight_gradient_without_input_gradient():
    x, w = torch.randn(6, 4), torch.randn(9, 4, requires_grad=True)
    t = torch.randint(0, 9, (6,))
    flce.fused_linear_cross_entropy(x, w, t).backward()
    w_ref = w.detach().clone().requires_grad_()
    torch.nn.functional.cross_entropy(x @ w_ref.t(), t).backward()
    assert torch.allclose(w.grad, w_ref.grad, atol=1e-6)


# --- kl_div --------------------------------------------------------------------------------------
#: (ROW_CHUNK, what a block gets of 13 rows of 150 columns)
ROW_SPLITS = [(64, "one row, in 3 chunks (the last ragged)"),
              (4096, "16 rows of 256 columns (13 rows: ragged rows and columns)")]


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("reduction", kl_div.REDUCTIONS)
@pytest.mark.parametrize("log_target", [False, True])
@pytest.mark.parametrize("row_chunk", [r for r, _ in ROW_SPLITS])
def test_kl_div(dtype, reduction, log_target, row_chunk, monkeypatch):
    monkeypatch.setattr(kl_div.common, "ROW_CHUNK", row_chunk)
    assert kl_div.check(13, 150, dtype, reduction, log_target, last_layer=log_target)


# --- jsd -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0, 0.1])
@pytest.mark.parametrize("labels", [False, True])
@pytest.mark.parametrize("row_chunk", [r for r, _ in ROW_SPLITS])
def test_jsd(dtype, beta, labels, row_chunk, monkeypatch):
    monkeypatch.setattr(jsd.common, "ROW_CHUNK", row_chunk)
    assert jsd.check(13, 150, dtype, beta, labels, grad=1.0 if labels else 3.0, ignore_index=2)


@pytest.mark.parametrize("name", ["kl_div", "jsd"])
def test_float16(name):
    """float16, which Liger's tests of these two losses include."""
    if name == "kl_div":
        assert kl_div.check(9, 300, torch.float16, "batchmean", False)
    else:
        assert jsd.check(9, 300, torch.float16, 0.5, True)


def test_jsd_all_rows_ignored_gives_zero():
    x = torch.randn(4, 30).log_softmax(-1).requires_grad_()
    t = torch.randn(4, 30).log_softmax(-1)
    loss = jsd.jsd(x, t, torch.full((4,), -100), 0.5, -100)
    loss.backward()
    assert loss.item() == 0.0 and torch.count_nonzero(x.grad) == 0


def test_jsd_refuses_labels_of_the_wrong_shape():
    x = torch.randn(4, 30).log_softmax(-1)
    with pytest.raises(ValueError, match="shift_labels"):
        jsd.jsd(x, x, torch.zeros(3, dtype=torch.long))
