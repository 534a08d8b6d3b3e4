"""Random control flow with its Python meaning (shared by the control-flow fuzz tests).

``make_case(rng)`` draws a kernel body over int scalars: nested ``if``/``elif``/``else`` whose
conditions mix ``and``, ``or``, ``not``, comparisons, the truth of ints and the constants
``True``/``False``; ``for`` over ``range`` and ``while`` loops (``while True:`` too) with
``break`` and ``continue`` under constant and run-time ``if``s; early ``return``. The same body
is a plain Python function (``case.reference``), so the expected value of every block is what
Python computes. Each block writes its result at ``out[bid]``; ``p0..p2`` are run-time int
parameters. Loops are bounded (a counter stepped before any ``break``/``continue``).
"""
import textwrap
from dataclasses import dataclass

VARS = ("acc", "a", "c")
PARAMS = ("p0", "p1", "p2")
CMP = ("<", "<=", ">", ">=", "==", "!=")


@dataclass
class Case:
    body: str           # the shared body, 4-space indented, ``EMIT(x)`` where a result leaves
    source: str         # the kernel's source
    params: tuple       # run-time values of p0, p1, p2

    def kernel(self):
        ns = {}
        exec(compile(self.source, "<control-flow fuzz kernel>", "exec"), ns)
        return ns["cf_fuzz"]

    def reference(self, bid: int) -> int:
        src = "def cf_ref(b, p0, p1, p2):\n" + self.body.replace("EMIT(", "return (")
        ns = {}
        exec(compile(src, "<control-flow fuzz reference>", "exec"), ns)
        return ns["cf_ref"](bid, *self.params)


class _Gen:
    def __init__(self, rng):
        self.rng = rng
        self.loop_vars = []     # names of the loop counters in scope, innermost last
        self.n_loops = 0

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def chance(self, p):
        return self.rng.random() < p

    def operand(self):
        pool = list(VARS) + list(PARAMS) + ["b"] + self.loop_vars
        return self.pick(pool)

    def leaf(self):
        r = self.rng.random()
        if r < 0.08:
            return self.pick(("True", "False"))
        if r < 0.25:
            return self.pick(PARAMS + ("b",))          # the truth of an int
        rhs = str(int(self.rng.integers(-3, 6))) if self.chance(0.6) else self.operand()
        return f"{self.operand()} {self.pick(CMP)} {rhs}"

    def cond(self, depth=0):
        r = self.rng.random()
        if depth >= 3 or r < 0.35:
            return self.leaf()
        if r < 0.45:
            return f"not ({self.cond(depth + 1)})"
        op = self.pick(("and", "or"))
        lhs, rhs = self.cond(depth + 1), self.cond(depth + 1)
        # parenthesize only sometimes: Python's precedence (and before or) is part of the test
        if self.chance(0.5):
            return f"({lhs}) {op} ({rhs})"
        return f"{lhs} {op} {rhs}"

    def assign(self):
        v = self.pick(VARS)
        r = self.rng.random()
        if r < 0.3:
            return [f"{v} += {int(self.rng.integers(1, 5))}"]
        if r < 0.5:
            return [f"{v} = {int(self.rng.integers(-4, 10))}"]
        if r < 0.8:
            return [f"{v} = {self.operand()} + {self.operand()}"]
        return [f"{v} = {self.operand()} - {int(self.rng.integers(0, 4))}"]

    def block(self, depth, in_loop, n=None):
        n = n if n is not None else int(self.rng.integers(1, 4))
        out = []
        for _ in range(n):
            out += self.statement(depth, in_loop)
        return out

    def jump(self, in_loop):
        """``break``, ``continue`` or ``return``, as the place allows."""
        kinds = ["return"] + (["break", "continue"] if in_loop else [])
        k = self.pick(kinds)
        if k == "return":
            return [f"EMIT({self.pick(VARS)} + 100)"]
        return [k]

    def statement(self, depth, in_loop):
        r = self.rng.random()
        if depth >= 3 or r < 0.35:
            return self.assign()
        if r < 0.6:
            return self.if_stmt(depth, in_loop)
        if r < 0.72 and (in_loop or self.chance(0.3)):
            # an early exit, bare or under an `if True:` (folded: the cuTile suite's case)
            j = self.jump(in_loop)
            if self.chance(0.5):
                return ["if True:"] + _indent(self.assign() + j)
            return ["if " + self.cond() + ":"] + _indent(self.assign() + j)
        if self.n_loops >= 3:
            return self.assign()
        return self.loop(depth)

    def if_stmt(self, depth, in_loop):
        lines = [f"if {self.cond()}:"] + _indent(self.block(depth + 1, in_loop))
        for _ in range(int(self.rng.integers(0, 2))):
            lines += [f"elif {self.cond()}:"] + _indent(self.block(depth + 1, in_loop))
        if self.chance(0.6):
            lines += ["else:"] + _indent(self.block(depth + 1, in_loop))
        if self.chance(0.15):     # `if False:` arms never run and must not change anything
            lines += ["if False:"] + _indent(self.assign() + self.jump(in_loop))
        return lines

    def loop(self, depth):
        self.n_loops += 1
        k = f"k{self.n_loops}"
        bound = self.pick(("3", "4", "p2 % 4", "b % 3 + 1"))
        r = self.rng.random()
        if r < 0.4:
            head = [f"for {k} in range({bound}):"]
            step = []
            self.loop_vars.append(k)
        elif r < 0.7:
            head = [f"{k} = 0", f"while {k} < {bound}:"]
            step = [f"{k} += 1"]
        else:
            head = [f"{k} = 0", "while True:"]
            step = [f"if {k} >= {bound}:", "    break", f"{k} += 1"]
        body = step + self.block(depth + 1, True)
        if self.chance(0.5):        # the cuTile suite's shape: both arms end early
            body += [f"if {self.cond()}:"] + _indent(self.assign() + self.jump(True)) + \
                    ["else:"] + _indent(self.assign() + self.jump(True))
        if head[0].startswith("for"):
            self.loop_vars.pop()
        return head[:-1] + [head[-1]] + _indent(body)


def _indent(lines):
    return ["    " + ln for ln in lines]


def make_case(rng) -> Case:
    g = _Gen(rng)
    lines = ["acc = 0", "a = b + 1", "c = p0 - b"] + g.block(0, False, n=int(rng.integers(2, 5)))
    lines.append("EMIT(acc * 7 + a * 3 + c)")
    body = textwrap.indent("\n".join(lines), "    ") + "\n"
    kernel_body = body.replace("EMIT(", "return _emit(out, b, ")
    # a kernel returns nothing: `_emit` scatters the value and the `return` leaves
    kernel_body = "\n".join(
        ln.replace("return _emit(out, b, ", "tile.scatter(out, b, ").rstrip()
        + (("\n" + " " * (len(ln) - len(ln.lstrip())) + "return") if "_emit(" in ln else "")
        for ln in kernel_body.splitlines()) + "\n"
    source = ("import tilejit as tile\n\n"
              "@tile.entry\n"
              "def cf_fuzz(out, p0: int, p1: int, p2: int):\n"
              "    b = tile.bid(0)\n" + kernel_body)
    params = tuple(int(rng.integers(-2, 6)) for _ in PARAMS)
    return Case(body, source, params)


def run(case: Case, blocks: int):
    """``out`` as the kernel leaves it on the active backend, one int64 per block."""
    import numpy as np
    import tilejit as tile
    from tilejit import api
    out = api.zeros((blocks,), tile.int64).sync()
    case.kernel()(tile.atomic(out), *case.params).grid((blocks, 1, 1)).sync()
    return np.asarray(out.to_numpy())


def expected(case: Case, blocks: int):
    import numpy as np
    return np.array([case.reference(i) for i in range(blocks)], dtype=np.int64)
