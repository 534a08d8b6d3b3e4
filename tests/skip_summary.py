"""The short summary's skipped tests, one line per reason (tests/conftest.py installs these
hooks): ``pytest -ra`` (the default, pyproject's addopts) gave ~250 ``SKIPPED [n] file:line:``
lines, most of them "needs an NVIDIA GPU" from one file each. Grouped, a reason reads once with
how many tests and files it covers; ``-rs`` asked for on its own keeps pytest's lines, one per
place, to find where a skip comes from."""
import os

import pytest

_PREFIX = "Skipped: "


def grouping(config) -> bool:
    """Whether this run groups skips: ``-r`` holds ``a``/``A`` (all) rather than ``s`` itself."""
    chars = config.option.reportchars or ""
    return "s" not in chars and ("a" in chars or "A" in chars)


def by_reason(reports, root: str) -> list:
    """``[(count, reason, files)]`` of skipped ``reports``, the most common reason first."""
    groups = {}
    for rep in reports:
        longrepr = rep.longrepr
        if not (isinstance(longrepr, tuple) and len(longrepr) == 3):
            continue
        path, _, reason = longrepr
        reason = str(reason)
        if reason.startswith(_PREFIX):
            reason = reason[len(_PREFIX):]
        count, files = groups.setdefault(reason, [0, set()])
        groups[reason][0] = count + 1
        files.add(os.path.relpath(str(path), root))
    return sorted(((n, r, sorted(f)) for r, (n, f) in groups.items()),
                  key=lambda g: (-g[0], g[1]))


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, config):
    """Runs before the reporter's own short summary (which prints after this hook), so the
    skipped lines it would print are replaced by one per reason."""
    tr = terminalreporter
    if not grouping(config) or "s" not in tr.reportchars:
        return
    tr.reportchars = tr.reportchars.replace("s", "")
    groups = by_reason(tr.stats.get("skipped", []), str(config.rootpath))
    if not groups:
        return
    tr.write_sep("=", "skipped tests by reason (-rs lists each place)", yellow=True)
    for n, reason, files in groups:
        where = files[0] if len(files) == 1 else f"{len(files)} files"
        tr.write_line(f"SKIPPED [{n}] {reason} ({where})")
