"""Griffe extension used by mkdocs.yml to render tilejit's docstrings in the API reference.

tilejit's docstrings are written for ``help()`` and plain-text readers (reST-flavoured), and a
few kernel-language stubs are made by factories at import time. This extension adapts both for
the site without touching the source:

* the stubs that static analysis sees only as ``exp = _unary_math(...)`` are replaced by their
  inspected functions, so they get their real signature and docstring;
* reST roles (``:func:`cdiv```) become optional cross-references: a link when the target is
  rendered somewhere on the site, plain code otherwise (never a strict-mode warning);
* a paragraph ending in ``::`` (a reST literal block) ends in ``:`` instead;
* a module-level alias such as ``to_numpy = to_host`` gets the docstring "Another name for
  ``to_host``", so it is listed instead of hidden for having no docstring;
* ``tile.partition`` documents the function: static analysis resolves the re-export ``from
  .partition import partition`` in ``tilejit.runtime`` to the submodule of that name.
"""
from __future__ import annotations

import re

import griffe

_ROLE = re.compile(r":(?:func|class|meth|attr|mod|exc|data|obj):`(~?)([A-Za-z_][\w.]*)(\(\))?`")


def _resolve(obj, target: str) -> str:
    """The full path of ``target`` as seen from ``obj``'s scope (``target`` itself if unknown)."""
    if target.startswith("tilejit."):
        return target
    head, _, rest = target.partition(".")
    try:
        base = obj.resolve(head)
    except Exception:           # not in scope: leave it to autorefs, which may still know it
        return target
    return f"{base}.{rest}" if rest else base


def _rewrite(obj, text: str) -> str:
    def role(m):
        short, target, call = m.group(1), m.group(2), m.group(3) or ""
        shown = target.rsplit(".", 1)[-1] if short else target
        return (f'<autoref identifier="{_resolve(obj, target)}" optional>'
                f"<code>{shown}{call}</code></autoref>")

    text = _ROLE.sub(role, text)
    lines = [ln for ln in text.splitlines() if ln.strip() != "::"]
    return "\n".join(ln[:-1] if ln.endswith("::") else ln for ln in lines)


def _walk(obj):
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


class TilejitDocstrings(griffe.Extension):
    """See the module docstring."""

    def on_package(self, *, pkg, **kwargs) -> None:
        if pkg.name != "tilejit":
            return
        # the element-wise stubs live in language_math and are re-exported by language
        for module in ("language", "language_math"):
            self._inspect_generated_stubs(pkg[module], f"tilejit.{module}")
        _unshadow(pkg)
        for obj in _walk(pkg):
            if obj.docstring is not None:
                obj.docstring.value = _rewrite(obj, obj.docstring.value)
            elif obj.is_attribute and obj.parent is not None and obj.parent.is_module:
                target = obj.parent.members.get(str(obj.value))
                if target is not None and not target.is_alias and target.is_function:
                    obj.docstring = griffe.Docstring(f"Another name for `{target.name}`.",
                                                     parent=obj)

    @staticmethod
    def _inspect_generated_stubs(static, module: str) -> None:
        # mkdocs_hooks.on_config put this checkout first on sys.path, so this is its tilejit
        from tilejit import language
        inspected = griffe.inspect(module, docstring_parser=static.docstring.parser)
        for name in language.__all__:
            member = static.members.get(name)
            if member is not None and member.is_attribute and name in inspected.members:
                static.set_member(name, inspected[name])


def _unshadow(pkg) -> None:
    """Re-exported functions that static analysis took for the submodule of the same name
    (``tile.partition``): the function."""
    for name, member in list(pkg.members.items()):
        if not member.is_alias or name.startswith("_"):
            continue
        try:
            target = member.final_target
        except Exception:       # an alias griffe cannot resolve: not ours to fix
            continue
        inner = target.members.get(name) if target.is_module else None
        if inner is not None and not inner.is_module:
            pkg.set_member(name, griffe.Alias(name, f"{target.path}.{name}", parent=pkg))
