"""MkDocs hooks (mkdocs.yml ``hooks:``): build the site from this checkout's tilejit.

* ``on_config`` puts the checkout first on ``sys.path``: mkdocstrings imports tilejit to inspect
  the kernel-language stubs, and an installed tilejit elsewhere must not be documented instead.
* A line ``<!-- unlisted-members: MODULE -->`` in a page becomes a section "Not yet grouped" with
  one ``::: MODULE.name`` directive per public name of MODULE that the page does not already
  document, so a name added to the package shows up in the reference before anyone files it
  under a heading (none left: the line disappears).
* ``on_post_build`` writes ``css/pygments.css``, the colours of the code blocks that Pygments
  highlighted while building (``pymdownx.highlight``): no highlighting script, no CDN.
"""
from __future__ import annotations

import importlib
import os
import re
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_PLACEHOLDER = re.compile(r"^<!-- unlisted-members: ([\w.]+) -->[ \t]*$", re.M)


def on_config(config, **kwargs):
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    import tilejit
    where = os.path.dirname(os.path.dirname(os.path.abspath(tilejit.__file__)))
    if os.path.normcase(where) != os.path.normcase(ROOT):
        raise RuntimeError(f"the docs must document the tilejit in {ROOT}, but tilejit was "
                           f"already imported from {where}; build with `mkdocs build` from the "
                           f"checkout (PYTHONPATH unset or pointing at it)")
    return config


def public_names(module_name: str) -> list:
    """The names a reference page for ``module_name`` should cover, in definition order."""
    mod = importlib.import_module(module_name)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in vars(mod) if not n.startswith("_")]
    out = []
    for n in names:
        obj = getattr(mod, n)
        if isinstance(obj, types.ModuleType):
            continue
        if module_name == "tilejit":
            # the kernel language and the dtypes have their own pages / table
            from tilejit import DType, language
            if n in language.__all__ or isinstance(obj, DType):
                continue
        out.append(n)
    return out


def unlisted(markdown: str, module_name: str) -> list:
    documented = set(re.findall(rf"^::: {re.escape(module_name)}\.(\w+)\s*$", markdown, re.M))
    return [n for n in public_names(module_name) if n not in documented]


def on_page_markdown(markdown, page, config, files, **kwargs):
    def expand(m):
        names = unlisted(markdown, m.group(1))
        if not names:
            return ""
        return "## Not yet grouped\n\n" + "\n\n".join(f"::: {m.group(1)}.{n}" for n in names)
    return _PLACEHOLDER.sub(expand, markdown)


def pygments_css() -> str:
    """The stylesheet of Pygments' default style for ``.highlight`` blocks."""
    from pygments.formatters import HtmlFormatter
    return HtmlFormatter(style="default").get_style_defs(".highlight")


def on_post_build(config, **kwargs):
    path = os.path.join(config["site_dir"], "css", "pygments.css")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(pygments_css() + "\n")

