"""Region trees: shapes for every control-flow construct (compared as label-free skeletons) and
scoping invariants that lowering relies on (every use sees exactly one visible definition)."""
import numpy as np
import pytest
from numba.core import ir

import tilejit as tile
from tilejit.lowering import (Block, Break, Const, Continue, For, If, Loop, Return, Undef,
                              Yield, structurize)
from tilejit.typing import type_kernel

from corpus import CASES

P1 = ("partition", "float32", 1, None, (64,))
T1 = ("tensor", "float32", 1, None, False)
I64 = ("scalar", "int64", True)

FOR1 = ("for", 1, False, 1, 1, ("block", "continue"))
SHAPES = {
    "if_elif_else": ("block", ("if", 1, ("block", "yield"),
                              ("block", ("if", 1, ("block", "yield"), ("block", "yield")),
                               "yield")), "block", "return"),
    "for_const": ("block", FOR1, "block", "return"),
    "for_runtime_bound": ("block", FOR1, "block", "return"),
    "for_negative_step": ("block", ("for", -1, False, 1, 1, ("block", "continue")), "block",
                          "return"),
    "for_runtime_step": ("block", ("for", None, False, 1, 1, ("block", "continue")), "block",
                         "return"),
    # CPython rotates `while c:` into `if c: loop { body; if c: continue else: break }`
    "while": ("block", ("if", 1, (("loop", 2, 1, ("block", ("if", 0, ("continue",),
                                                                 ("break",)))), "yield"),
                        ("yield",)), "block", "return"),
    # `continue` jumps to the top test: two nested loops and an exit selector
    "while_continue": ("block", ("loop", 2, 1, ("block", (
        "if", 0,
        (("loop", 2, 4, ("block", ("if", 0, ("break",),
                                   ("block", ("if", 0, ("continue",), ("break",)))))),
         "block", ("if", 0, ("continue",), ("break",))),
        ("break",)))), "block", "return"),
    "for_break": ("block", ("for", 1, True, 1, 1, ("block", ("if", 0, ("break",),
                                                             ("block", "continue")))),
                  "block", "return"),
    "for_continue": ("block", ("for", 1, False, 1, 1, ("block", ("if", 0, ("continue",),
                                                                 ("block", "continue")))),
                     "block", "return"),
    "nested_break_continue": ("block", ("for", 1, False, 1, 1, (
        "block", ("for", 1, True, 1, 1, ("block", ("if", 0, ("break",), (
            "block", ("if", 0, ("continue",), ("block", "continue")))))), "continue")),
        "block", "return"),
    # return hoisted: the if yields and the single return ends the kernel
    "early_return": ("block", ("if", 0, ("block", "yield"), ("block", "yield")), "block",
                     "return"),
    # return inside a loop: break with exit selector 2, then dispatch after the loop
    "return_in_loop": ("block", ("for", 1, True, 1, 2, ("block", ("if", 0, ("break",),
                                                                  ("block", "continue")))),
                       "block", ("if", 0, ("block", "yield"), ("block", "yield")), "block",
                       "return"),
    "constexpr_if": ("block", "return"),
    # `a and b` becomes `c = (b if a else False)`, then `if c`
    "short_circuit": ("block", ("if", 1, ("block", "yield"), ("block", "yield")),
                      ("if", 1, ("block", "yield"), ("yield",)), "block",
                      ("if", 1, ("block", "yield"), ("block", "yield")),
                      ("if", 1, ("block", "yield"), ("yield",)), "block", "return"),
    "while_true_break": ("block", ("loop", 2, 1, ("block", ("if", 0, ("break",),
                                                           ("block", "continue")))),
                         "block", "return"),
}


# --------------------------------------------------------------------------------------------------
def check_tree(st):
    """Scoping and terminator invariants of a StructuredKernel."""
    typed = st.typed
    defined = set()

    def define(name):
        assert name not in defined, f"{name} defined twice"
        defined.add(name)

    def use(op, visible):
        if isinstance(op, str):
            assert op in visible, f"{op} used but not visible"
        else:
            assert isinstance(op, (Const, Undef)), op

    def stmt_targets(s):
        return [s.target.name] if isinstance(s, ir.Assign) else []

    def stmt_uses(s):
        if isinstance(s, ir.Assign):
            v = s.value
            if isinstance(v, ir.Var):
                return [v.name]
            if isinstance(v, ir.Expr):
                assert v.op != "phi", "phi left in a block"
                return [x.name for x in v.list_vars()]
            return []
        assert not isinstance(s, (ir.Jump, ir.Branch, ir.Return)), s
        return [x.name for x in s.list_vars()]

    def region(r, visible, loop, top):
        visible = set(visible)
        for node in r.nodes:
            if isinstance(node, Block):
                for s in node.stmts:
                    for n in stmt_uses(s):
                        assert n in visible, f"{n} used in {s} but not visible"
                    for n in stmt_targets(s):
                        define(n)
                        visible.add(n)
            elif isinstance(node, If):
                assert node.cond in visible
                for arm in (node.then, node.orelse):
                    region(arm, visible, loop, False)
                    if isinstance(arm.term, Yield):
                        assert len(arm.term.values) == len(node.results)
                for res in node.results:
                    define(res.name)
                    visible.add(res.name)
                    assert st.typemap[res.name] == res.type
            elif isinstance(node, (For, Loop)):
                inner = set(visible)
                for c in node.carried:
                    use(c.init, visible)
                    define(c.name)
                    inner.add(c.name)
                if isinstance(node, For):
                    for x in (node.start, node.stop, node.step):
                        use(x, visible)
                    define(node.iv)
                    inner.add(node.iv)
                region(node.body, inner, node, False)
                if isinstance(node, For):
                    for v in node.exit_values:
                        use(v, inner)
                    if not node.has_break:
                        assert not _has_break(node.body)
                for res in node.results:
                    define(res.name)
                    visible.add(res.name)
        t = r.term
        if isinstance(t, Return):
            assert top, "return inside a region"
        elif isinstance(t, Continue):
            assert loop is not None and len(t.values) == len(loop.carried)
            for v in t.values:
                use(v, visible)
        elif isinstance(t, Break):
            assert loop is not None and len(t.values) == len(loop.results)
            for v in t.values:
                use(v, visible)
        elif isinstance(t, Yield):
            assert not top
            for v in t.values:
                use(v, visible)
        else:
            assert t is None and r.nodes and isinstance(r.nodes[-1], If) and \
                r.nodes[-1].terminates, "region falls off without a terminator"

    args = {f"arg.{n}" for n in typed.func_ir.arg_names}
    region(st.body, args | set(typed.func_ir.arg_names), None, True)
    assert isinstance(st.body.term, Return)


def _has_break(r):
    if isinstance(r.term, Break):
        return True
    for node in r.nodes:
        if isinstance(node, If) and (_has_break(node.then) or _has_break(node.orelse)):
            return True
    return False


def _struct(fn, keys, constants=None):
    return structurize(type_kernel(fn, keys, constants))


# --------------------------------------------------------------------------------------------------
SHAPED = [c for c in CASES if c.shape]


@pytest.mark.parametrize("case", SHAPED, ids=[c.name for c in SHAPED])
def test_control_flow_shapes(case):
    args = case.make(np.random.default_rng(0))
    st = structurize(type_kernel(case.kernel, case.arg_keys(args), case.constants))
    assert st.skeleton() == SHAPES[case.shape], st.dump()
    check_tree(st)


def test_every_shape_has_a_corpus_kernel():
    assert set(SHAPES) <= {c.shape for c in SHAPED}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_tree_invariants(case):
    args = case.make(np.random.default_rng(0))
    check_tree(structurize(type_kernel(case.kernel, case.arg_keys(args), case.constants)))


def _nodes(r):
    from tilejit.lowering.regions import walk_nodes
    return list(walk_nodes(r))


def test_matmul_tree():
    from corpus import BY_NAME
    case = BY_NAME["matmul_fp16"]
    args = case.make(np.random.default_rng(0))
    st = structurize(type_kernel(case.kernel, case.arg_keys(args), case.constants))
    (loop,) = [n for n in _nodes(st.body) if isinstance(n, For)]
    assert loop.start == Const(0, loop.iv_type) and loop.step == Const(1, loop.iv_type)
    assert isinstance(loop.stop, str) and loop.step_sign == 1 and not loop.has_break
    (acc,) = loop.carried
    assert str(acc.type) == "Tile[float32, 64x64]" and acc.init == "acc"
    assert isinstance(loop.body.term, Continue)
    assert loop.exit_values == [acc.name]
    # the range()/getiter statements belong to the For, not to any block
    for n in _nodes(st.body):
        if isinstance(n, Block):
            for s in n.stmts:
                assert not (isinstance(s, ir.Assign) and isinstance(s.value, ir.Expr) and
                            s.value.op in ("getiter", "iternext"))
    assert "for " in st.dump() and "carried acc" in st.dump()


def test_while_continue_uses_an_exit_selector():
    from corpus import BY_NAME
    case = BY_NAME["cf_while_continue"]
    args = case.make(np.random.default_rng(0))
    st = structurize(type_kernel(case.kernel, case.arg_keys(args)))
    loops = [n for n in _nodes(st.body) if isinstance(n, Loop)]
    inner = loops[1]
    sel = inner.results[0]
    assert sel.name.startswith("$exit_sel") and str(sel.type) == "int32"
    breaks = []

    def collect(r):
        if isinstance(r.term, Break):
            breaks.append(r.term)
        for n in r.nodes:
            if isinstance(n, If):
                collect(n.then)
                collect(n.orelse)
    collect(inner.body)
    assert sorted(b.values[0].value for b in breaks) == [1, 2]
    assert any(isinstance(v, Undef) for b in breaks for v in b.values)


# --------------------------------------------------------------------------------------------------
def k_loop_in_if(z, x, n):
    t = tile.load_tile_like(x, z)
    if n > 2:
        for i in range(n):
            t = t + i
    else:
        t = t * 2.0
    z.store(t)


def k_if_in_loop_merge(z, x, n):
    t = tile.load_tile_like(x, z)
    s = tile.zeros((64,), tile.float32)
    for i in range(n):
        if i % 2 == 0:
            s = s + t
        else:
            s = s - t
    z.store(s)


def k_break_in_nested_if(z, x, n):
    t = tile.load_tile_like(x, z)
    for i in range(n):
        if i > 1:
            if i > 3:
                break
            t = t * 2.0
        t = t + 1.0
    z.store(t)


def k_continue_in_nested_if(z, x, n):
    t = tile.load_tile_like(x, z)
    for i in range(n):
        if i > 1:
            if i % 2 == 0:
                continue
        t = t + 1.0
    z.store(t)


def k_value_defined_in_loop_used_after(z, x, n):
    t = tile.load_tile_like(x, z)
    i = 0
    while True:
        u = t * 2.0
        i += 1
        if i > n:
            break
        t = t + 1.0
    z.store(u)


def k_return_in_nested_loops(z, x, n):
    t = tile.load_tile_like(x, z)
    for i in range(n):
        for j in range(n):
            if i * j > 6:
                z.store(t)
                return
            t = t + 1.0
    z.store(t * 0.0)


def k_while_continue_break(z, x, n):
    t = tile.load_tile_like(x, z)
    i = 0
    while i < n:
        i += 1
        if i == 3:
            continue
        if i == 7:
            break
        t = t + i
    z.store(t)


def k_nested_while(z, x, n):
    t = tile.load_tile_like(x, z)
    i = 0
    while i < n:
        j = 0
        while j < i:
            t = t + 1.0
            j += 1
        i += 1
    z.store(t)


def k_or_condition_in_while(z, x, n, m):
    t = tile.load_tile_like(x, z)
    i = 0
    while i < n or i < m:
        t = t + 1.0
        i += 1
    z.store(t)


def k_ternary(z, x, n):
    t = tile.load_tile_like(x, z)
    s = 2.0 if n > 0 else 3.0
    z.store(t * s)


def k_multiple_returns(z, x, n):
    t = tile.load_tile_like(x, z)
    if n == 0:
        z.store(t)
        return
    if n == 1:
        z.store(t + 1.0)
        return
    z.store(t + 2.0)


@pytest.mark.parametrize("fn,keys", [
    (k_loop_in_if, [P1, T1, I64]),
    (k_if_in_loop_merge, [P1, T1, I64]),
    (k_break_in_nested_if, [P1, T1, I64]),
    (k_continue_in_nested_if, [P1, T1, I64]),
    (k_value_defined_in_loop_used_after, [P1, T1, I64]),
    (k_return_in_nested_loops, [P1, T1, I64]),
    (k_while_continue_break, [P1, T1, I64]),
    (k_nested_while, [P1, T1, I64]),
    (k_or_condition_in_while, [P1, T1, I64, I64]),
    (k_ternary, [P1, T1, I64]),
    (k_multiple_returns, [P1, T1, I64]),
])
def test_more_shapes_keep_the_invariants(fn, keys):
    st = _struct(fn, keys)
    check_tree(st)
    text = st.dump(labels=False)
    assert "block " not in text.replace("block  (", "")


def test_return_hoisted_out_of_ifs():
    st = _struct(k_multiple_returns, [P1, T1, I64])
    returns = [0]

    def count(r, top):
        if isinstance(r.term, Return):
            assert top
            returns[0] += 1
        for n in r.nodes:
            if isinstance(n, If):
                count(n.then, False)
                count(n.orelse, False)
    count(st.body, True)
    assert returns == [1]


def test_no_duplicated_code_for_nested_break():
    st = _struct(k_break_in_nested_if, [P1, T1, I64])
    labels = [n.label for n in _nodes(st.body) if isinstance(n, Block)]
    assert len(labels) == len(set(labels))


def test_loop_value_used_after_loop_is_a_result():
    st = _struct(k_value_defined_in_loop_used_after, [P1, T1, I64])
    (loop,) = [n for n in _nodes(st.body) if isinstance(n, Loop)]
    assert any(r.name.startswith("u") for r in loop.results)


def test_dump_without_labels_is_version_independent():
    from corpus import BY_NAME
    case = BY_NAME["cf_nested_break_continue"]
    args = case.make(np.random.default_rng(0))
    st = structurize(type_kernel(case.kernel, case.arg_keys(args)))
    text = st.dump(labels=False)
    assert "block  (" in text and "has break" in text and "return" in text
    assert st.dump(stmts=True).count("|") > 5


def test_typed_kernel_is_not_modified():
    from corpus import BY_NAME
    case = BY_NAME["cf_while_continue"]
    args = case.make(np.random.default_rng(0))
    tk = type_kernel(case.kernel, case.arg_keys(args))
    before = tk.dump()
    st1 = structurize(tk)
    st2 = structurize(tk)
    assert tk.dump() == before
    assert st1.skeleton() == st2.skeleton()


@tile.function
def _clipped(a, b):
    if a > b:
        return a
    return b


def test_value_returning_function_tree():
    """Combiners of tile.reduce are typed on their own; their returns merge into one."""
    from tilejit.typing import TileType, type_function
    from tilejit import dtypes as dt
    elem = TileType(dt.float32, ())
    st = structurize(type_function(_clipped, (elem, elem)))
    check_tree(st)
    skel = st.skeleton()
    assert skel[-1] == "return" and any(isinstance(x, tuple) and x[0] == "if" and x[1] == 1
                                        for x in skel)
