"""The op registry is complete (issue 22 item 6): every kernel-language stub has a typing rule,
every typing rule a lowering (a handler, or the walker itself for operators, ``range`` and
indexing), and every Tile IR op the lowering can emit a simulator implementation. A stub that is
typed but not lowered fails here instead of at a user's compile."""
import pytest

import tilejit as tile
from tilejit import language
from tilejit.lowering import lower
from tilejit.lowering.handlers import handler_of
from tilejit.simulator import compile_function  # noqa: F401  (registers the implementations)
from tilejit.simulator.registry import IMPLS
from tilejit.tileir import OPS, Block, Builder
from tilejit.typing.context import registry
from tilejit.typing.templates import _base

pytestmark = pytest.mark.usefixtures("simulator_backend")

#: typing rules that only ever refuse (tiles are immutable): nothing to lower
REFUSED_BY_TYPING = {"t[...] = v"}


def typing_templates():
    """``(key, template)`` of every typing rule: functions, internal keys, methods."""
    for value, fnty in registry.globals:
        for t in getattr(fnty, "templates", ()):
            yield value, t
    for t in registry.functions:
        yield t.key, t
    for methods in _base._METHODS.values():
        for t in methods.values():
            yield t.op, t


def unlowered(templates):
    """The op names of typing rules with no lowering."""
    return sorted({t.op for key, t in templates
                   if handler_of(getattr(t, "stub", None), t.op) is None
                   and key not in lower.WALKER_CALLS and t.op not in REFUSED_BY_TYPING})


def test_every_stub_has_a_typing_rule():
    typed = {getattr(t, "stub", None) for _, t in typing_templates()}
    stubs = [n for n in language.__all__ if language.is_stub(getattr(language, n))]
    assert len(stubs) > 60
    assert [n for n in stubs if getattr(language, n) not in typed] == []


def test_every_typing_rule_has_a_lowering():
    assert unlowered(list(typing_templates())) == []


def test_a_typed_stub_without_a_lowering_is_caught():
    @language._stub
    def frobnicate(x):
        """A stub someone typed and forgot to lower."""

    class Template:
        stub, op = frobnicate, "tile.frobnicate"
    assert unlowered([(frobnicate, Template)]) == ["tile.frobnicate"]


def test_method_spellings_share_the_stubs_handler():
    # t.reshape(...) and tile.reshape(t, ...) are one op: keyed by the stub, one handler
    methods = _base._METHODS[tile.typing.TileType]
    assert methods["reshape"].stub is language.reshape
    assert handler_of(language.reshape, "Tile.reshape") is handler_of(language.reshape,
                                                                       "tile.reshape")


def test_refused_rules_do_refuse():
    @tile.entry
    def k(z, x):
        t = tile.load_tile_like(x, z)
        t[0] = 1.0
        z.store(t)
    z, x = tile.api.zeros((4,)).sync(), tile.api.zeros((4,)).sync()
    with pytest.raises(tile.TypingError, match="immutable"):
        k(z.partition((4,)), x).sync()


def test_every_op_the_lowering_can_emit_has_a_simulator_implementation():
    # the builder creates ops only from the op table
    with pytest.raises(KeyError):
        Builder(Block()).create("not_an_op")
    assert sorted(set(OPS) - set(IMPLS)) == [], "ops without a simulator implementation"
    assert not set(IMPLS) - set(OPS), "implementations of ops the table does not know"


def test_one_list_of_unary_math_functions():
    assert set(language.UNARY_MATH) <= set(language.__all__)
    for name in language.UNARY_MATH:
        stub = getattr(language, name)
        assert any(getattr(t, "stub", None) is stub for _, t in typing_templates()), name
        assert handler_of(stub, f"tile.{name}") is not None, name
