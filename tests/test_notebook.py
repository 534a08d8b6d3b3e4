"""A real notebook, executed by a Jupyter kernel (nbclient + ipykernel) on the simulator: a kernel
defined in a cell, its result and reprs, and a typing error that names the cell and line."""
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
    for i in range(8):
        assert not any(o.output_type == "error" for o in c[i].outputs), (i, c[i].outputs)
    assert _text(c[2]).startswith("tile.Tensor(shape=(8,), dtype=float32, device=sim:0, [0, 2,")
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
    assert "pipeline.py" not in "\n".join(err.traceback)      # tilejit's frames are trimmed
