"""tile.autotune(heuristics={...}): constants computed from the config and the arguments at every
call (Triton's @triton.heuristics), with configs= and with the default space (simulator)."""
import os
import sys

import numpy as np
import pytest

import tilejit as tile
from tilejit import api

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import layernorm as LN  # noqa: E402

pytestmark = pytest.mark.usefixtures("simulator_backend")


def _layernorm_args(m, n):
    rng = np.random.default_rng(n)
    xn = (rng.standard_normal((m, n)) + 3.0).astype(np.float32)
    wn, bn = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    y = api.full((m, n), np.nan, tile.float32).sync()
    mean, rstd = api.zeros((m,)).sync(), api.zeros((m,)).sync()
    args = (y, api.from_numpy(xn).sync(), api.from_numpy(wn).sync(), api.from_numpy(bn).sync(),
            tile.atomic(mean), tile.atomic(rstd), 1e-5)
    mu, sd = xn.mean(1, keepdims=True), np.sqrt(xn.var(1, keepdims=True) + 1e-5)
    return args, y, (xn - mu) / sd * wn + bn


def test_a_heuristic_sets_a_constant_from_the_arguments_at_every_call():
    """LayerNorm's EXACT from the rows' width: True for rows of exactly the tile's width, False
    for ragged rows, each call deciding for its own arguments (a wrong True would give NaN)."""
    seen = []

    def exact(config, args):
        seen.append(LN.exact_rows(config, args))
        return seen[-1]

    # one key for both widths (eps only): the heuristic still runs for each call's arguments
    tuned = tile.autotune(configs=[tile.Config(tile=(4, 256))], key=["eps"],
                          heuristics={"EXACT": exact})(LN.layernorm_fwd)
    for n in (256, 200):
        args, y, ref = _layernorm_args(9, n)
        tuned(*args).sync()
        np.testing.assert_allclose(y.to_numpy(), ref, rtol=1e-4, atol=1e-4)
        assert seen[-1] is (n == 256)
    assert len(tuned._tuned) == 1
    assert "EXACT" not in tuned.best_config(*args).constants


def test_the_default_space_leaves_heuristic_constants_to_the_heuristics():
    tuned = tile.autotune(key=["x"], heuristics={"EXACT": LN.exact_rows})(LN.layernorm_fwd)
    args, y, ref = _layernorm_args(9, 256)
    space = tuned.configs_for(*args)
    assert space and all("EXACT" not in c.constants for c in space)
    tuned(*args).sync()
    np.testing.assert_allclose(y.to_numpy(), ref, rtol=1e-4, atol=1e-4)
    plain = tile.autotune(key=["x"])(LN.layernorm_fwd)
    assert plain._cache_file() != tuned._cache_file()      # winners kept apart on disk


def test_a_heuristic_on_a_persistent_kernel_reads_the_configs_constants():
    import softmax as SM
    tuned = tile.autotune(configs=[tile.Config(ROWS=2, WIDTH=256, LATENCY=2)], key=["x"],
                          grid=SM.rows_grid, heuristics={"EXACT": LN.exact_rows})(
        LN.layernorm_fwd_persistent)
    args, y, ref = _layernorm_args(9, 256)
    tuned(tile.atomic(args[0]), *args[1:]).sync()
    np.testing.assert_allclose(y.to_numpy(), ref, rtol=1e-4, atol=1e-4)


def test_heuristics_that_conflict_or_name_no_constant_are_refused():
    k = LN.layernorm_fwd
    with pytest.raises(TypeError, match="'WIDE' is not a tile.Constant parameter"):
        tile.autotune(heuristics={"WIDE": LN.exact_rows})(k)
    with pytest.raises(TypeError, match=r"heuristics\['EXACT'\] must be a callable"):
        tile.autotune(heuristics={"EXACT": True})(k)
    with pytest.raises(TypeError, match="'EXACT' is set by heuristics; no config may set it"):
        tile.autotune(configs=[tile.Config(tile=(4, 256), EXACT=True)],
                      heuristics={"EXACT": LN.exact_rows})(k)
    with pytest.raises(TypeError, match="cannot be searched by space= too"):
        tile.autotune(space={"EXACT": (True,)}, heuristics={"EXACT": LN.exact_rows})(k)
    tuned = tile.autotune(configs=[tile.Config(tile=(4, 256))],
                          heuristics={"EXACT": LN.exact_rows})(k)
    args, _, _ = _layernorm_args(4, 256)
    with pytest.raises(TypeError, match="'EXACT' is set by the heuristics at every call"):
        tuned(*args, EXACT=True)
