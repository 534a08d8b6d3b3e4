"""A real notebook, executed by a Jupyter kernel (nbclient + ipykernel) on the simulator: a kernel
defined in a cell, its result and reprs (NumPy-like values, what an op is and whether it ran), and
a typing error that names the cell and line, with a traceback that stops at the user's call."""
import re

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

CELLS = [
    "import numpy as np\nimport tilejit as tile\nfrom tilejit import api",
    # 1: a kernel defined in a cell
    "@tile.entry\ndef add(z, x, y):\n    z.store(tile.load_tile_like(x, z) + tile.load_tile_like(y, z))",
    # 2: run it; the cell's value is the output tensor
    "x = api.from_numpy(np.arange(8, dtype=np.float32)).sync()\nz = api.zeros((8,)).sync()\n"
    "add(z.partition((4,)), x, x).sync()\nz",
    "print(z.to_numpy().tolist())",
    "add",
    # 5: a lazy op is shown, not run
    "z2 = api.zeros((8,)).sync()\nadd(z2.partition((4,)), x, x)",
    "print(float(z2.to_numpy().sum()))",
    # 7: a typing error on the definition's line 4, raised at the call in the next cell
    "@tile.entry\ndef bad(z, x):\n    t = tile.load_tile_like(x, z)\n    z.store(t + 'oops')",
    "z3 = api.zeros((8,)).sync()\nbad(z3.partition((4,)), x).sync()",
    # 9: api ops and launches show what they are, and whether they ran
    "z4 = api.zeros((8,)).sync()\nop = add(z4.partition((4,)), x, x)\nop.sync()\nprint(repr(op))\napi.zeros((3,))",
    # 10: a big tensor shows its edges, as NumPy does
    "api.from_numpy(np.arange(5000, dtype=np.float32)).sync()",
]


def _text(cell, kind="text/plain"):
    """The cell's displayed value (``kind``) and what it printed to stdout."""
    return "".join(o.get("data", {}).get(kind, "") +
                   (o.text if o.output_type == "stream" and o.name == "stdout" else "")
                   for o in cell.outputs)


@pytest.mark.timeout(300)
def test_notebook_kernel_reprs_and_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEJIT_SIMULATE", "1")
    monkeypatch.setenv("TILEJIT_CACHE_DIR", str(tmp_path / "cache"))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nbclient.NotebookClient(nb, timeout=240, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    c = nb.cells
    for i in (*range(8), 9, 10):
        assert not any(o.output_type == "error" for o in c[i].outputs), (i, c[i].outputs)
    assert _text(c[2]) == ("tile.Tensor(shape=(8,), dtype=float32, device=sim:0, "
                           "[ 0.,  2.,  4.,  6.,  8., 10., 12., 14.])")
    html = _text(c[2], "text/html")
    assert "<b>tile.Tensor</b>" in html and "owned" in html and "14." in html
    assert _text(c[3]).strip() == str([2.0 * i for i in range(8)])
    assert _text(c[4]).startswith("<tile.entry add(z, x, y): 1 compiled specialization, 1 launch")
    assert "partition float32 1-d tile (4,)" in _text(c[4], "text/html")
    lazy = _text(c[5])
    assert lazy.startswith("<KernelLaunch: launch add(z=partition of (8,) float32 by (4,)")
    assert "lazy" in lazy
    assert _text(c[6]).strip() == "0.0"                  # showing the op did not run it
    (err,) = [o for o in c[8].outputs if o.output_type == "error"]
    assert err.ename == "TypingError"
    where = f"Cell In[{c[7].execution_count}], line 4"
    assert err.evalue.startswith(f"{where}: in `t + 'oops'`"), err.evalue
    assert "z.store(t + 'oops')" in err.evalue
    shown = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(err.traceback))     # without colours
    assert "bad(z3.partition((4,)), x).sync()" in shown         # the user's call, then the error
    assert "tilejit" not in shown.replace("tilejit.errors.TypingError", ""), shown
    assert len(shown.splitlines()) < 20, shown
    ran = _text(c[9])
    assert "<KernelLaunch: launch add(" in ran and ran.splitlines()[0].endswith("(ran)>")
    assert ran.splitlines()[-1].startswith("<api.zeros: a new tensor (3,) float32 of zeros (lazy")
    assert "<b>api.zeros</b>" in _text(c[9], "text/html")
    big = _text(c[10])
    assert "[0.000e+00, 1.000e+00, 2.000e+00, ..., 4.997e+03, 4.998e+03, 4.999e+03]" in big
    assert "4.997e+03 4.998e+03 4.999e+03]" in _text(c[10], "text/html")
