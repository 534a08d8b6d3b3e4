"""The summary of a run: totals, failures by bucket, top messages, per-file counts."""
import collections
import json
import os

from .classify import BUCKETS, classify

LISTED_IN_FULL = ("wrong value", "internal error")


def totals(cases) -> dict:
    """Counts of a run; ``concerning`` leaves out the cases failing on cuTile internals."""
    buckets = collections.Counter(b for b, _ in filter(None, map(classify, cases)))
    outcomes = collections.Counter(c.outcome for c in cases)
    return {"collected": len(cases), "concerning": len(cases) - buckets["cuTile internals"],
            "passed": outcomes["passed"], "skipped": outcomes["skipped"],
            "failed": outcomes["failed"] + outcomes["error"],
            "buckets": {b: buckets[b] for b in BUCKETS}}


def rates(t: dict) -> str:
    """The pass rate of the tests concerning tilejit, and (both figures, the first the honest
    one) without the undefined-behaviour tests tilejit refuses on purpose."""
    ub = t["buckets"]["undefined behaviour refused"]
    first = f"{t['passed']} of {t['concerning']} concerning tilejit pass " \
            f"({100 * t['passed'] / max(1, t['concerning']):.1f}%)"
    if not ub:
        return first
    rest = t["concerning"] - ub
    return (f"{first}; {t['passed']} of {rest} ({100 * t['passed'] / max(1, rest):.1f}%) "
            f"leaving out the {ub} undefined-behaviour tests tilejit refuses")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(cases, header: str = "", top: int = 8) -> str:
    t = totals(cases)
    failed = [(c, *classify(c)) for c in cases if classify(c)]
    out = [f"# cuTile Python's test suite on tilejit\n\n{header}\n",
           "| collected | concerning tilejit | passed | skipped | failed |",
           "|---|---|---|---|---|",
           f"| {t['collected']} | {t['concerning']} | {t['passed']} | {t['skipped']} | "
           f"{t['failed']} |\n", rates(t) + "\n", "| bucket | failures |", "|---|---|"]
    out += [f"| {b} | {n} |" for b, n in t["buckets"].items()]
    for bucket in BUCKETS:
        rows = [(c, key) for c, b, key in failed if b == bucket]
        if not rows:
            continue
        keys = collections.Counter(key for _, key in rows)
        out += [f"\n## {bucket} ({len(rows)})\n", "| count | cause | example |", "|---|---|---|"]
        for key, n in keys.most_common(None if bucket == "missing API" else top):
            example = next(c for c, k in rows if k == key)
            out.append(f"| {n} | {_cell(key)} | {example.file}::{_cell(example.name)} |")
        if bucket in LISTED_IN_FULL:
            out += ["\nEvery one:\n"] + [f"* `{c.file}::{c.name}`: {_cell(key)}" for c, key in rows]
    per_file = collections.defaultdict(collections.Counter)
    for c in cases:
        per_file[c.file][c.outcome] += 1
        if classify(c) and classify(c)[0] == "cuTile internals":
            per_file[c.file]["internals"] += 1
    out += ["\n## Per file\n", "| file | tests | passed | skipped | failed | of which cuTile "
            "internals |", "|---|---|---|---|---|---|"]
    for f, n in sorted(per_file.items()):
        out.append(f"| {f} | {sum(n[o] for o in ('passed', 'skipped', 'failed', 'error'))} | "
                   f"{n['passed']} | {n['skipped']} | {n['failed'] + n['error']} | "
                   f"{n['internals']} |")
    return "\n".join(out) + "\n"


def write(cases, out_dir: str, header: str = "") -> str:
    """Write ``report.md`` and ``failures.json`` (every failure with its bucket) to ``out_dir``;
    returns the report's path."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "report.md")
    with open(path, "w") as f:
        f.write(markdown(cases, header))
    rows = [{"file": c.file, "test": c.name, "bucket": b, "cause": key,
             "text": c.text[-3000:]} for c in cases for b, key in [classify(c) or (None, None)]
            if b]
    with open(os.path.join(out_dir, "failures.json"), "w") as f:
        json.dump(rows, f, indent=1)
    return path
