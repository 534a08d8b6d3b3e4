"""tools/tileir_diff.py: the op counts that differ between two front ends' Tile IR."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import tileir_diff  # noqa: E402

TJ = """entry @k(%arg0: tile<ptr<f32>>) {
  %0 = make_token : token
  %c = constant <i32: 1> : tile<i32>
  %m = cmpi less_than %c, %c, unsigned : tile<i32> -> tile<i1>
  %r, %t = load_ptr_tko weak %p, %m, %z : tile<4xptr<f32>>, tile<4xi1>, tile<4xf32> -> tile<4xf32>, token
  return
}"""
CT_FAR = """entry @k(%arg0: tile<ptr<f32>>) optimization_hints=<default = {occupancy = 2}> {
  %r, %t = load_ptr_tko weak %p : tile<4xptr<f32>> -> tile<4xf32>, token
  %q, %u = load_ptr_tko weak %p : tile<4xptr<f32>> -> tile<4xf32>, token
  return
}"""
CT_NEAR = """entry @k(%arg0: tile<ptr<f32>>) optimization_hints=<default = {}> {
  %0 = make_token : token
  %r, %t = load_ptr_tko weak %p : tile<4xptr<f32>> -> tile<4xf32>, token
  return
}"""


def test_counts_leave_out_constants_and_name_the_differences():
    counts = tileir_diff.op_counts(TJ)
    assert counts["cmpi"] == 1 and counts["load_ptr_tko"] == 1 and counts["return"] == 1
    line = tileir_diff.compare(TJ, [CT_FAR, CT_NEAR])          # the nearer one is chosen
    assert line == "cmpi 1/0"                                   # empty hints are no hints
    assert "hints" in tileir_diff.compare(TJ, [CT_FAR])


def test_the_command_pairs_kernels_by_name(tmp_path, capsys):
    tj, ct = tmp_path / "tj", tmp_path / "ct"
    tj.mkdir()
    ct.mkdir()
    (tj / "k.mlir").write_text(TJ)
    (ct / "k.mod.ln3.abc.mlir").write_text(CT_NEAR)
    (ct / "other.mod.ln9.x.mlir").write_text(CT_NEAR)
    assert tileir_diff.main([str(tj), str(ct)]) == 0
    out = capsys.readouterr().out
    assert "k [1 cuTile specializations]: cmpi 1/0" in out
    assert "other: only in cuTile's folder" in out
