"""The lowered Tile IR of a kernel for given launch arguments (the front end, no tileiras): shared
by tests that look at the IR tilejit generates. No tests here."""
from tilejit import compiler


def lowered_function(kernel, *args, version=None):
    """The Tile IR function ``kernel`` lowers to for ``args`` (what inspect_tileir prints);
    ``version``: the bytecode version to lower for (default: the target's)."""
    keys, consts, ones = kernel._keys_for(args, {})
    _, module, _ = compiler.front_end(kernel.py_func, keys, consts, compiler.SIM_TARGET,
                                      kernel.options, name=kernel.__name__, version=version,
                                      grid_ones=ones)
    return module.functions[0]
