"""Fit the polynomial tables of the kernel language's erf, erfc and erfinv (issue 25 item 1).

Tile IR has no error-function ops, so ``tilejit/lowering/mathlib.py`` evaluates piecewise
polynomials whose coefficients this script computes and writes to
``tilejit/lowering/math_tables.py``. Run it from the repository root (about a minute)::

    python tools/fit_math.py

How: reference values come from Python's ``decimal`` module at 60+ digits (erf by its Taylor
series, with enough working precision that 1 - erf keeps its digits), so no library of special
functions is needed. Each table is a near-minimax relative-error fit (Lawson-weighted least
squares in the Chebyshev basis, refined in long double), converted exactly to monomials in the
piece's variable ``u = v * a + b`` (u in [-1, 1]) and rounded to the target precision. Pieces are
found greedily: each is made as wide as the fixed degree allows within the target error. The
script checks every table by evaluating it in the target precision (Horner with fused
multiply-adds, as the kernel does) against the references and prints the errors.
"""
from __future__ import annotations

import sys
from decimal import Decimal as D, localcontext
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

import numpy as np
from numpy.polynomial import chebyshev as C

LD = np.longdouble
OUT = Path(__file__).resolve().parent.parent / "tilejit" / "lowering" / "math_tables.py"


# --------------------------------------------------------------------------------------------
# High-precision references (decimal)
@lru_cache(None)
def _pi(prec: int) -> D:
    """pi to ``prec`` digits (the series of the ``decimal`` module's documentation)."""
    with localcontext() as c:
        c.prec = prec + 5
        lasts, t, s, n, na, d, da = 0, D(3), 3, 1, 0, 0, 24
        while s != lasts:
            lasts = s
            n, na = n + na, na + 8
            d, da = d + da, da + 32
            t = (t * n) / d
            s += t
        return +s


def _prec(x: D) -> int:
    # the Taylor sum reaches exp(x^2) and erfc is exp(-x^2): keep 2 x^2 / ln(10) more digits
    return int(50 + 0.8686 * float(x) ** 2)


def erf_hp(x: D) -> D:
    """erf(x) with about 40 digits relative to both erf and erfc."""
    prec = _prec(x)
    with localcontext() as c:
        c.prec = prec
        x2 = x * x
        term = s = +x
        n = 0
        eps = D(10) ** (-prec + 2)
        while True:
            n += 1
            term = -term * x2 / n
            t = term / (2 * n + 1)
            s += t
            if abs(t) < eps and n > x2:
                break
        return +(2 * s / _pi(prec).sqrt())


def erfc_hp(x: D) -> D:
    with localcontext() as c:
        c.prec = _prec(x)
        return +(1 - erf_hp(x))


def q_hp(x: D) -> D:
    """erfc(x) * exp(x^2); for x >= 20 by its asymptotic series (the smallest term there is
    below 1e-170, so the truncated sum is exact to the digits kept)."""
    if x < 20:
        q = erfc_hp(x)
        with localcontext() as c:
            c.prec = _prec(x)
            return +(q * (x * x).exp())
    with localcontext() as c:
        c.prec = 60
        term, s, n = D(1), D(1), 0
        while True:
            n += 1
            nxt = -term * (2 * n - 1) / (2 * x * x)
            if abs(nxt) >= abs(term) or abs(nxt) < D(10) ** -55:
                break
            term = nxt
            s += term
        return +(s / (x * _pi(60).sqrt()))


def ldv(d: D) -> LD:
    return LD(str(d))


# --------------------------------------------------------------------------------------------
# Fitting
def fit(v, f, deg: int, lo: float, hi: float, iters: int = 25):
    """Near-minimax relative fit of samples ``f`` (long double) at ``v`` (float64) by a
    polynomial of degree ``deg`` in ``u = (v - c) / h``; returns (exact monomial coefficients
    in u, lowest first; c; h)."""
    c, h = (lo + hi) / 2, (hi - lo) / 2
    u = (v - c) / h
    V = C.chebvander(u, deg)
    VL = C.chebvander(u.astype(LD), deg)
    w0 = (1 / np.abs(f)).astype(float)
    lw = np.full(len(f), 1.0 / len(f))
    best = None
    for _ in range(iters):
        W = np.sqrt(lw) * w0
        coef = np.linalg.lstsq(V * W[:, None], f.astype(float) * W, rcond=None)[0].astype(LD)
        for _ in range(3):                      # iterative refinement in long double
            r = (f - VL @ coef).astype(float)
            coef = coef + np.linalg.lstsq(V * W[:, None], r * W, rcond=None)[0]
        err = np.abs((VL @ coef - f) / f).astype(float)
        if best is None or err.max() < best[0]:
            best = (err.max(), coef)
        lw = lw * (err + 1e-300)
        lw /= lw.sum()
        if not np.isfinite(lw).all():
            break
    coef = best[1]
    mono = [Fraction(0)] * (deg + 1)
    prev, cur = [Fraction(1)], [Fraction(0), Fraction(1)]
    for k in range(deg + 1):
        if k == 0:
            tk = [Fraction(1)]
        elif k == 1:
            tk = [Fraction(0), Fraction(1)]
        else:
            tk = [Fraction(0)] * (k + 1)
            for i, a in enumerate(cur):
                tk[i + 1] += 2 * a
            for i, a in enumerate(prev):
                tk[i] -= a
            prev, cur = cur, tk
        ck = Fraction(*coef[k].as_integer_ratio())
        for i, a in enumerate(tk):
            mono[i] += ck * a
    return mono, c, h


def horner(coefs, u, dtype):
    """Evaluate like the kernel: Horner with fused multiply-adds in ``dtype``."""
    wide = np.float64 if dtype == np.float32 else LD
    u = np.asarray(u, dtype)
    r = np.full(u.shape, dtype(coefs[-1]), dtype=dtype)
    for a in reversed(coefs[:-1]):
        r = (r.astype(wide) * u.astype(wide) + wide(dtype(a))).astype(dtype)
    return r


def piece_coefs(mono, c, h, dtype):
    """(a, b, coefficients) of one piece, rounded to ``dtype``: u = v * a + b."""
    a, b = 1 / h, -c / h
    return float(dtype(a)), float(dtype(b)), [float(dtype(float(m))) for m in mono]


def eval_piece(piece, v, dtype):
    a, b, coefs = piece
    wide = np.float64 if dtype == np.float32 else LD
    u = (np.asarray(v, dtype).astype(wide) * wide(dtype(a)) + wide(dtype(b))).astype(dtype)
    return horner(coefs, u, dtype)


def greedy(v, f, lo, hi, deg, target, dtype, min_width):
    """Pieces ``[(start, (a, b, coefs))]`` covering [lo, hi] at degree ``deg``, each as wide as
    the ``target`` relative error (of the exact polynomial) allows."""
    def try_fit(start, end):
        m = (v >= start) & (v <= end)
        mono, c, h = fit(v[m], f[m], deg, start, end)
        u = (v[m].astype(LD) - LD(c)) / LD(h)
        ex = float(np.max(np.abs((horner_exact(mono, u) - f[m]) / f[m])))
        return ex <= target, (mono, c, h)

    pieces = []
    start = lo
    while start < hi:
        ok, res = try_fit(start, hi)
        end = hi
        if not ok:
            good_w, bad_w = 0.0, hi - start
            res = None
            while bad_w - good_w > max(0.01 * bad_w, min_width / 8):
                mid = (good_w + bad_w) / 2
                ok, r = try_fit(start, start + mid)
                if ok:
                    good_w, res = mid, r
                else:
                    bad_w = mid
            if res is None:
                raise RuntimeError(f"degree {deg} cannot reach {target} from {start}")
            end = start + good_w
        mono, c, h = res
        pieces.append((start, piece_coefs(mono, c, h, dtype)))
        start = end
    return pieces


def horner_exact(mono, u):
    r = np.full(u.shape, LD(float(mono[-1])))
    for a in reversed(mono[:-1]):
        r = r * u + LD(float(a))
    return r


def check(name, pieces, v, f, dtype):
    starts = np.array([p[0] for p in pieces])
    idx = np.searchsorted(starts, v, side="right") - 1
    out = np.empty(len(v), dtype=dtype)
    for i, (_, piece) in enumerate(pieces):
        m = idx == i
        out[m] = eval_piece(piece, v[m], dtype)
    err = np.abs((out.astype(LD) - f) / f).astype(float)
    ulp = float(np.finfo(dtype).eps)
    print(f"  {name} {dtype.__name__}: {len(pieces)} piece(s), max relative error "
          f"{err.max():.2e} ({err.max() / ulp:.2f} ulp of 1)", file=sys.stderr)


# --------------------------------------------------------------------------------------------
# The tables
PRECISIONS = {"f32": (np.float32, 7, 4e-9), "f64": (np.float64, 13, 6e-17)}


def table_erf_small(dtype, deg):
    """erf(x) / x as a polynomial of s = x^2 on [0, 1] (|x| <= 1)."""
    s = np.linspace(0.0, 1.0, 700)
    f = []
    for sv in s:
        with localcontext() as c:
            c.prec = 60
            x = D(float(sv)).sqrt()
            f.append(ldv(2 / _pi(60).sqrt()) if x == 0 else ldv(erf_hp(x) / x))
    f = np.array(f)
    mono, c, h = fit(s, f, deg, 0.0, 1.0)
    pieces = [(0.0, piece_coefs(mono, c, h, dtype))]
    check("erf small", pieces, s, f, dtype)
    return pieces


def table_erfc_q(dtype, deg, target):
    """Q(x) = erfc(x) * exp(x^2) as pieces of t = 1/x on [0, 2] (x >= 0.5)."""
    t = np.concatenate([np.linspace(0.0, 0.02, 60)[1:], np.linspace(0.02, 2.0, 1400)])
    f = []
    for tv in t:
        with localcontext() as c:
            c.prec = 60
            x = 1 / D(float(tv))
        f.append(ldv(q_hp(x)))
    # Q ~ t / sqrt(pi) near t = 0: fit Q / t, which is smooth and nonzero there
    g = np.array(f) / t.astype(LD)
    pieces = greedy(t, g, 0.0, 2.0, deg, target, dtype, 0.05)
    check("erfc Q/t", pieces, t, g, dtype)
    return pieces


def table_erfinv(dtype, deg, target, xmax):
    """erfinv(y) / y as pieces of w = -log((1 - y)(1 + y)) on [0, 2.25] and of s = sqrt(w)
    beyond. Samples are made from x = erfinv(y), so no inversion is needed."""
    xs = np.concatenate([np.geomspace(1e-5, 0.5, 200), np.linspace(0.5, xmax, 1600)[1:]])
    w, f = [], []
    for x in xs:
        X = D(float(x))
        e = erfc_hp(X)
        with localcontext() as c:
            c.prec = 80
            y = 1 - e
            w.append(-(e * (2 - e)).ln())
            f.append(ldv(X / y))
    wf = np.array([float(v) for v in w])
    sf = np.array([float(v.sqrt()) for v in w])
    f = np.array(f)
    m = wf <= 2.25
    first = greedy(wf[m], f[m], 0.0, 2.25, deg, target, dtype, 0.2)
    rest = greedy(sf[~m], f[~m], 1.5, float(sf.max()) * 1.0001, deg, target, dtype, 0.1)
    check("erfinv (w)", first, wf[m], f[m], dtype)
    check("erfinv (sqrt w)", rest, sf[~m], f[~m], dtype)
    return first, rest


def main():
    out = ['"""Polynomial tables of erf, erfc and erfinv (generated by tools/fit_math.py; do not',
           'edit). Each table is a list of pieces ``(start, a, b, coefficients)``: on',
           '``v >= start`` (up to the next piece) the function is the polynomial with these',
           'coefficients (lowest degree first) of ``u = v * a + b``. Values are exact in the',
           'precision of the table."""', ""]

    def emit(name, pieces):
        out.append(f"{name} = (")
        for start, (a, b, coefs) in pieces:
            out.append(f"    ({start!r}, {a!r}, {b!r}, (")
            for k in range(0, len(coefs), 3):
                out.append("        " + " ".join(f"{x!r}," for x in coefs[k:k + 3]))
            out.append("    )),")
        out.append(")")

    for key, (dtype, deg, target) in PRECISIONS.items():
        print(f"{key}: degree {deg}, target {target}", file=sys.stderr)
        emit(f"ERF_SMALL_{key.upper()}", table_erf_small(dtype, deg - 1))
        emit(f"ERFC_Q_{key.upper()}", table_erfc_q(dtype, deg, target))
        # the samples of s = sqrt(w) are rounded to float64, which adds ~1e-16 of noise
        first, rest = table_erfinv(dtype, deg, max(target, 1.5e-16),
                                   3.95 if key == "f32" else 5.95)
        emit(f"ERFINV_W_{key.upper()}", first)
        emit(f"ERFINV_S_{key.upper()}", rest)
    OUT.write_text("\n".join(out) + "\n")
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
