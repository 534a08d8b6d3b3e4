"""Write the repro's Tile IR bytecode with tilejit (run from the repository root):

    python tools/tileiras_repros/loop_carried_tile/make_bytecode.py

kernel.tileirbc: each block loops over row blocks of a float16 matrix with the grid's stride,
loading the next row block one iteration ahead (the tile is an iteration value of the `for`),
and stores each row's float32 sum. Three controls differ in one thing each:
kernel_no_tma.tileirbc loads with `allow_tma=False` (into registers), kernel_not_carried.tileirbc
loads each row block in the iteration that uses it, kernel_f32_input.tileirbc sums a float32
matrix (no conversion). Where tilejit finds tileirdisasm (next to tileiras) the text forms are
written too."""
import os
import sys

import tilejit as tile
import tilejit.tileir.tileiras_workarounds as workarounds
from tilejit import api
from tilejit.toolchain import tileiras

# the program as written: tilejit itself takes a carried tile's loads off the TMA unit
# (tileir/tileiras_workarounds.py), which is what this repro shows is needed
workarounds.carried_loads_off_tma = lambda module, make_hints: None

HERE = os.path.dirname(os.path.abspath(__file__))


@tile.entry
def carried_row_sums(out, x, ROWS: tile.Constant[int], WIDTH: tile.Constant[int],
                     TMA: tile.Constant[bool], CARRY: tile.Constant[bool]):
    """out[i] = the sum of row i of x, in float32."""
    step = tile.num_blocks(0)
    last = tile.cdiv(x.shape[0], ROWS) - 1
    t = x.load((tile.bid(0), 0), (ROWS, WIDTH), allow_tma=TMA)
    for r in range(tile.bid(0), last + 1, step):
        nxt = x.load((min(r + step, last), 0), (ROWS, WIDTH), allow_tma=TMA)
        if not CARRY:
            t = x.load((r, 0), (ROWS, WIDTH), allow_tma=TMA)
        tile.store(out.partition((ROWS,)), (r,), tile.sum(t.astype(tile.float32), axis=1))
        t = nxt


# name: (TMA, CARRY, x's dtype)
VARIANTS = {"kernel": (True, True, tile.float16), "kernel_no_tma": (False, True, tile.float16),
            "kernel_not_carried": (True, False, tile.float16),
            "kernel_f32_input": (True, True, tile.float32)}
M, N, ROWS = 8192, 1024, 4


def main() -> int:
    out = api.zeros((M,), tile.float32).sync()
    for name, (tma, carry, dtype) in VARIANTS.items():
        x = api.zeros((M, N), dtype).sync()
        bc = carried_row_sums.inspect_bytecode(tile.atomic(out), x, ROWS=ROWS, WIDTH=N, TMA=tma,
                                               CARRY=carry)
        path = os.path.join(HERE, name + ".tileirbc")
        with open(path, "wb") as f:
            f.write(bc)
        if tileiras.disassembler_available():
            text = tileiras.disassemble(bc)
            with open(os.path.join(HERE, name + ".mlir"), "w") as f:
                f.write(text.rstrip() + "\n")
        print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
