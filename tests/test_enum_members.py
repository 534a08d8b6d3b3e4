"""User enums in kernels (issue 44): members made from constants (``Color(0)``,
``Status("ok")``), ``.name`` and ``.value`` as constants, and clear errors for run-time values and
values that name no member."""
import enum

import pytest

import tilejit as tile
from tilejit import api

pytestmark = pytest.mark.usefixtures("simulator_backend")


class Color(enum.Enum):
    RED = 0
    GREEN = 1


class Status(enum.Enum):
    OK = "ok"
    ERROR = "error"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 5


@tile.entry
def _members(out):
    i = 1
    if Color(i) == Color.GREEN:
        tile.scatter(out, 0, 10)
    if Status("ok") == Status.OK and Status.ERROR.name == "ERROR":
        tile.scatter(out, 1, 20)
    tile.scatter(out, 2, Color.GREEN.value + Level(5))
    if Status.OK.value != "ok":
        tile.scatter(out, 3, 99)


def test_members_from_constants_name_and_value():
    out = api.zeros((4,), tile.int32).sync()
    _members(tile.atomic(out)).grid((1, 1, 1)).sync()
    assert out.to_numpy().tolist() == [10, 20, 6, 0]


@pytest.mark.parametrize("body, match", [
    ("Color(tile.bid(0))", "needs a compile-time constant"),
    ("Color(99)", "99 is not a valid Color"),
])
def test_bad_member_lookups_are_typing_errors(body, match):
    ns = {"tile": tile, "Color": Color}
    exec(compile(f"@tile.entry\ndef k(out):\n    x = {body}\n", "<k>", "exec"), ns)
    out = api.zeros((1,), tile.int32).sync()
    with pytest.raises(tile.TypingError, match=match):
        ns["k"](tile.atomic(out)).grid((1, 1, 1)).sync()
