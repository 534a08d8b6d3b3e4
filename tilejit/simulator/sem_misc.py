"""Grid queries and tokens.

Tokens order memory ops on the GPU; the simulator executes ops in program order, which satisfies
every token constraint, so tokens are placeholders (``None``).
"""
from __future__ import annotations

from .registry import BLOCK_ID, GRID, impl


@impl("get_tile_block_id")
def _block_id(op, c):
    x, y, z = (c.slot(r) for r in op.results)

    def run(env):
        env[x], env[y], env[z] = env[BLOCK_ID]
    return run


@impl("get_num_tile_blocks")
def _num_blocks(op, c):
    x, y, z = (c.slot(r) for r in op.results)

    def run(env):
        env[x], env[y], env[z] = env[GRID]
    return run


@impl("make_token", "join_tokens")
def _token(op, c):
    c.fold(op.result, None)
    return None
