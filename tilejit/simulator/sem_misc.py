"""Grid queries and tokens.

Tokens order memory ops on the GPU; the serial and shuffle schedules execute each block's ops in
program order, which satisfies every token constraint, so tokens are placeholders (``None``).
The interleave schedule replaces these builders with real tokens (:mod:`.weak_memory`).
"""
from __future__ import annotations

from .registry import BLOCK_ID, GRID, impl


def _grid_query(slot):
    """Builder of an op whose three results are the (x, y, z) triple in frame slot ``slot``."""
    def build(op, c):
        x, y, z = (c.slot(r) for r in op.results)

        def run(env):
            env[x], env[y], env[z] = env[slot]
        return run
    return build


impl("get_tile_block_id")(_grid_query(BLOCK_ID))
impl("get_num_tile_blocks")(_grid_query(GRID))


@impl("make_token", "join_tokens")
def _token(op, c):
    c.fold(op.result, None)
    return None
