"""Run a script with MemoryTokens class attributes set, for A/B runs of lowering choices:

    python3 tools/gpu/run_with.py read_only_token=False benchmarks/cutile_samples.py --reps 11
"""
import os
import runpy
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tilejit.lowering.tokens import MemoryTokens  # noqa: E402

args = sys.argv[1:]
while args and "=" in args[0] and not args[0].endswith(".py"):
    name, value = args.pop(0).split("=", 1)
    assert hasattr(MemoryTokens, name), name
    setattr(MemoryTokens, name, {"True": True, "False": False}[value])
sys.argv = args
runpy.run_path(args[0], run_name="__main__")
