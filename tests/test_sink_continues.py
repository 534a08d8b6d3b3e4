"""A loop body that ends in an ``if`` continues once, after the ``if`` (which yields the new
carried values), not from inside each arm: the form tileiras gets from cuTile."""
import numpy as np
import pytest

import tilejit as tile

pytestmark = pytest.mark.usefixtures("simulator_backend")


@tile.entry
def guarded_rows(out, x, n_rows, R: tile.Constant[int], N: tile.Constant[int]):
    acc = tile.zeros((N,), tile.float32)
    for r in range(R):
        row = tile.bid(0) * R + r
        if row < n_rows:
            acc += x.load((row, 0), (1, N)).reshape((N,))
    tile.store(out, (tile.bid(0), 0), acc.reshape((1, N)))


@tile.entry
def nested_guards(out, x, n_rows, R: tile.Constant[int], N: tile.Constant[int]):
    acc = tile.zeros((N,), tile.float32)
    count = 0
    for r in range(R):
        row = tile.bid(0) * R + r
        if row < n_rows:
            t = x.load((row, 0), (1, N)).reshape((N,))
            if row % 2 == 0:
                acc += t
            else:
                acc -= t
                count += 1
    tile.store(out, (tile.bid(0), 0), (acc + count).reshape((1, N)))


def _arms_continue(ir: str) -> bool:
    """Whether a ``continue`` sits inside an ``if`` of the Tile IR text (by indentation)."""
    depth_if = []
    for line in ir.splitlines():
        ind = len(line) - len(line.lstrip())
        while depth_if and ind <= depth_if[-1] and not line.lstrip().startswith("} else"):
            depth_if.pop()
        s = line.strip()
        if " = if " in s or s.startswith("if "):
            depth_if.append(ind)
        elif s.startswith("continue") and depth_if:
            return True
    return False


def _reference(x, n_rows, R, signed):
    out = np.zeros((-(-n_rows // R), x.shape[1]), np.float32)
    for b in range(out.shape[0]):
        count = 0
        for r in range(R):
            row = b * R + r
            if row < n_rows:
                if not signed or row % 2 == 0:
                    out[b] += x[row]
                else:
                    out[b] -= x[row]
                    count += 1
        out[b] += count if signed else 0
    return out


@pytest.mark.parametrize("kernel,signed", [(guarded_rows, False), (nested_guards, True)])
def test_a_trailing_if_continues_once_and_computes_the_same(kernel, signed):
    x = np.random.default_rng(0).random((10, 8), dtype=np.float32)
    out = np.zeros((3, 8), np.float32)
    kernel(tile.atomic(out), x, 10, 4, 8).grid(3).sync()
    np.testing.assert_allclose(out, _reference(x, 10, 4, signed), rtol=1e-6)
    ir = kernel.inspect_tileir(tile.atomic(out), x, 10, 4, 8)
    assert not _arms_continue(ir), ir
    assert "yield" in ir


def test_the_checker_sees_a_continue_inside_an_if():
    ir = ("%for = for %i in (%a to %b, step %c) {\n  %7 = if %6 -> (token) {\n"
          "    continue %9 : token\n  } else {\n    continue %8 : token\n  }\n}")
    assert _arms_continue(ir)
