"""Control flow against Python's own result: generated kernels (tests/control_flow_fuzz.py) mixing
``and``/``or``/``not`` in conditions with ``break``/``continue``/``return`` under constant and
run-time ``if``s, in ``for`` and ``while`` loops, run on the simulator (every case), compiled by
tileiras (a sample) and, marked gpu, run on the GPU. Seeded; a failure prints the kernel. The
cases that first showed the bugs are spelled out below as well."""
import numpy as np
from numba.core import ir
import pytest

import tilejit as tile
import tilejit.cutile as ct
from tilejit import api

import control_flow_fuzz as F

CPU_CASES = 300
COMPILE_CASES = 8
GPU_CASES = 60
BLOCKS = 6


def _check(case, got, want):
    assert np.array_equal(got, want), (
        f"kernel result {got.tolist()} != Python's {want.tolist()} for p = {case.params}:\n"
        f"{case.source}")


@pytest.mark.parametrize("seed", range(CPU_CASES))
def test_generated_control_flow_on_the_simulator(seed, simulator_backend):
    case = F.make_case(np.random.default_rng(seed))
    _check(case, F.run(case, BLOCKS), F.expected(case, BLOCKS))


@pytest.mark.parametrize("seed", range(COMPILE_CASES))
def test_generated_control_flow_compiles_with_tileiras(seed):
    from tilejit.toolchain import tileiras
    try:
        tileiras.find_toolchain()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"tileiras is not installed ({e})")
    case = F.make_case(np.random.default_rng(seed))
    out = api.zeros((BLOCKS,), tile.int64).sync()
    cubin = case.kernel().compile(tile.atomic(out), *case.params, arch="sm_90")
    assert len(cubin) > 0


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(GPU_CASES))
def test_generated_control_flow_on_the_gpu(seed):
    from tilejit.runtime import backend
    if backend.current() != backend.CUDA:
        pytest.skip("needs an NVIDIA GPU")
    case = F.make_case(np.random.default_rng(10_000 + seed))
    _check(case, F.run(case, BLOCKS), F.expected(case, BLOCKS))


# --- the shapes that were wrong or refused, spelled out -------------------------------------------
def _results(kernel, *params, blocks=2):
    out = api.zeros((blocks,), tile.int64).sync()
    kernel(tile.atomic(out), *params).grid((blocks, 1, 1)).sync()
    return out.to_numpy().tolist()


@tile.entry
def _both_arms_leave_in_while_true(out):
    i = 0
    a = 10
    b = tile.bid(0)
    while True:
        if b == i:
            a += 3
            if True:
                break
            a = 30
        else:
            a = 20
            i += 1
            if True:
                continue
            a = 40
    tile.scatter(out, b, a)


def test_assignment_before_continue_reaches_the_next_iteration(simulator_backend):
    # Numba renamed `a` in the `break` arm for the rest of the bytecode: the `else` arm's
    # `a = 20` was lost ([13, 13])
    assert _results(_both_arms_leave_in_while_true) == [13, 23]


def test_numba_front_end_keeps_loop_carried_names():
    from tilejit.typing.pipeline import _translate

    def f(b):
        i = 0
        a = 10
        while True:
            if b == i:
                a += 3
                break
            else:
                a = 20
                i += 1
                continue
        return a
    func_ir = _translate(f)
    stored = {s.target.name for blk in func_ir.blocks.values() for s in blk.body
              if isinstance(s, ir.Assign) and s.target.name.split(".")[0] == "a"}
    assert stored == {"a"}, stored      # no `a.1` that the next iteration would not read


@ct.kernel
def _cutile_constfold_loop(x):
    i = 0
    a = 10
    while True:
        if ct.bid(0) == i:
            a += 3
            if True:
                break
            a = 30
        else:
            a = 20
            i += 1
            if True:
                continue
            a = 40
    ct.scatter(x, ct.bid(0), a)


def test_cutile_early_terminators_in_loop(simulator_backend):
    x = api.zeros((2,), tile.int32).sync()
    ct.launch(tile.Device(0).new_stream(), (2,), _cutile_constfold_loop, (tile.atomic(x),))
    assert x.to_numpy().tolist() == [13, 23]


@tile.function
def _conditions(c0, c1, c2, base):
    v = 0
    if c0 or c1 or c2:
        v += 1
    else:
        v -= 1
    if c0 and c1 and c2:
        v += 10
    if c0 or c1 and c2 and base > 50:
        v += 100
    if c0 and (c1 or c2) or base > 50:
        v += 1000
    cond = (c0 or c1) and c2
    if cond:
        v += 10000
    if not (c0 or c1) and not c2 or base < 0:
        v += 100000
    return v


@tile.entry
def _mixed_conditions(out, c0: int, c1: int, c2: int, base: int):
    tile.scatter(out, tile.bid(0), _conditions(c0, c1, c2, base))


@pytest.mark.parametrize("c0", [1, 0])
@pytest.mark.parametrize("c1", [5, 0])
@pytest.mark.parametrize("c2", [-5, 0])
@pytest.mark.parametrize("base", [100, 0, -1])
def test_or_of_and_chains(c0, c1, c2, base, simulator_backend):
    # `if c0 or c1 and c2 and base > 50:` was an internal error (unstructured control flow)
    want = _conditions.py_func(c0, c1, c2, base)
    assert _results(_mixed_conditions, c0, c1, c2, base, blocks=1) == [want]


@tile.entry
def _for_that_always_leaves(out, n: int):
    b = tile.bid(0)
    acc = 1
    for k in range(n):
        acc += 5
        if b > 0:
            tile.scatter(out, b, acc + k)
            return
        else:
            break
    tile.scatter(out, b, acc)


def test_for_whose_body_always_leaves(simulator_backend):
    # no back edge: the loop's iternext was left as plain code ('getiter' unsupported)
    assert _results(_for_that_always_leaves, 3) == [6, 6]
    assert _results(_for_that_always_leaves, 0) == [1, 1]


@tile.entry
def _inner_if_shares_the_join(out, p: int):
    b = tile.bid(0)
    acc = 0
    for k in range(4):
        if k < p:
            if b > 0:
                acc += 10
            else:
                break
        else:
            continue
        acc += 1
    tile.scatter(out, b, acc)


def test_inner_if_whose_join_is_the_outer_ones(simulator_backend):
    assert _results(_inner_if_shares_the_join, 2) == [0, 22]
