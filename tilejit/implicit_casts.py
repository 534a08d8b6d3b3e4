"""cuTile's implicit conversion as a kernel-language stub, for ``tilejit.cutile``'s adapters
(``ct.atomic_*`` convert their operands as cuTile does). A module of its own so that the cutile
front end, typing (``typing/templates/tiled_view.py``) and lowering
(``lowering/handlers/raw_memory.py``) all reach the one stub without importing each other."""
from .stubs import _stub


@_stub
def implicit_cast(x, dtype, what, exact=False, atomic=None):
    """``x`` converted to ``dtype`` by cuTile's implicit conversion rule (a compile error where
    cuTile refuses it, naming ``what``); ``exact``: ``x``'s dtype must be ``dtype`` (bitwise
    atomics); ``atomic``: the atomic (``"atomic_add"``) whose dtypes ``dtype`` must be among,
    checked first as cuTile does."""
