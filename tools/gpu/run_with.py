"""Run a script with lowering switches set, for A/B runs: MemoryTokens class attributes by
name, module attributes by dotted path:

    python3 tools/gpu/run_with.py parallel_stores=False benchmarks/cutile_samples.py --reps 11
    python3 tools/gpu/run_with.py some.module.SWITCH=False benchmarks/...
    python3 tools/gpu/run_with.py tilejit.keys.SHAPE_DIV_CAP=16 benchmarks/...   (an int)
"""
import importlib
import os
import runpy
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tilejit.lowering.tokens import MemoryTokens  # noqa: E402

args = sys.argv[1:]
while args and "=" in args[0] and not args[0].endswith(".py"):
    name, value = args.pop(0).split("=", 1)
    value = {"True": True, "False": False}[value] if value in ("True", "False") else int(value)
    if "." in name:
        mod, attr = name.rsplit(".", 1)
        m = importlib.import_module(mod)
        assert hasattr(m, attr), name
        setattr(m, attr, value)
    else:
        assert hasattr(MemoryTokens, name), name
        setattr(MemoryTokens, name, value)
sys.argv = args
runpy.run_path(args[0], run_name="__main__")
