"""Writes tests/MAP.md: for each module of the package, the test files that exercise it.

    python tools/tests_map.py            # rewrite tests/MAP.md
    python tools/tests_map.py --check    # exit 1 if a module is missing from it

A test file counts for a module when it imports the module by name, or its name contains the
module's; modules reached only through kernels (an op family's typing, lowering and simulator
semantics) take the family's tests from FAMILIES. tests/test_architecture.py runs --check.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# modules reached through kernels or the public API: the tests that exercise them
FAMILIES = {
    "atomics": ["test_memory_ordering.py", "test_simulator_schedule.py", "test_memory_views.py"],
    "creation": ["test_typing_ops.py", "test_api.py"],
    "dtype": ["test_simulator_convert.py", "test_numpy_rules.py", "test_language_numerics.py"],
    "elementwise": ["test_math_functions.py", "test_language_numerics.py", "test_typing_ops.py"],
    "grid": ["test_codegen.py", "test_typing_ops.py"],
    "misc": ["test_simulator_debug.py", "test_typing_ops.py"],
    "reduction": ["test_typing_ops.py", "test_python_features.py", "test_simulator_acceptance.py"],
    "operators": ["test_weak_scalars.py", "test_numpy_rules.py", "test_float_divmod.py"],
    "sem_control": ["test_simulator_control.py"], "sem_convert": ["test_simulator_convert.py"],
    "sem_debug": ["test_simulator_debug.py"], "sem_float": ["test_simulator_float.py"],
    "sem_int": ["test_simulator_int.py"], "sem_mma": ["test_simulator_matmul.py"],
    "sem_misc": ["test_simulator_acceptance.py"], "sem_reduce": ["test_simulator_acceptance.py"],
    "sem_shape": ["test_simulator_shape.py"], "sem_views": ["test_memory_views.py"],
    "elements": ["test_simulator_memory.py"], "interp": ["test_simulator_acceptance.py"],
    "printf": ["test_simulator_debug.py"],
    "abi": ["test_tuple_arguments.py", "test_weak_scalars.py"], "cfg": ["test_structurize.py"],
    "loop_split": ["test_codegen.py"], "math_tables": ["test_math_functions.py"],
    "narrow": ["test_mma_scaled.py"], "builder": ["test_tileir_golden.py"],
    "printer": ["test_tileir_golden.py"], "types": ["test_tileir_verify.py", "test_typing.py"],
    "version": ["test_tileir_bytecode.py"], "closures": ["test_python_features.py"],
    "op_table": ["test_op_registry.py", "test_tileir_bytecode.py"],
    "inline": ["test_plain_helpers.py", "test_wrong_values.py"],
    "assembly": ["test_astile_insert_pack.py"],
    "tuning_config": ["test_autotune.py", "test_user_errors.py"],
    "keys": ["test_runtime_argspec.py", "test_dispatcher.py"],
    "arg_types": ["test_runtime_argspec.py", "test_dispatcher.py"],
    "passes": ["test_cutile.py", "test_typing.py"], "pipeline": ["test_typing.py"],
    "promotion": ["test_numpy_rules.py", "test_weak_scalars.py"], "reject": ["test_user_errors.py"],
    "unroll": ["test_python_features.py"], "language_math": ["test_math_functions.py"],
    "stubs": ["test_op_registry.py"], "_writes": ["test_cutile.py"],
    "combinators": ["test_deviceop.py"], "custom": ["test_deviceop.py"],
    "describe": ["test_reprs.py"], "execution": ["test_deviceop.py"],
    "copy": ["test_simulated_devices.py", "test_multidevice_simulator.py"],
    "hostarrays": ["test_host_outputs.py"], "module": ["test_runtime_launch.py"],
    "submission": ["test_native_launch.py"],
    "stream_transfers": ["test_api.py", "test_host_outputs.py"],
    "_kernels": ["test_api.py", "test_random.py"],
    # the C launcher: driven through the stub driver (tools/native_coverage.sh measures it)
    "__main__": ["test_cli.py"], "__init__": ["test_api.py"],
    "csrc": ["test_native_stub.py", "test_native_launch.py"],
}


def modules():
    out = []
    for root, dirs, files in os.walk(os.path.join(ROOT, "tilejit")):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith((".py", ".c")):
                out.append(os.path.relpath(os.path.join(root, f), ROOT))
    return out


def tests_of(path, texts):
    dotted = path.rsplit(".", 1)[0].replace(os.sep, ".")
    if dotted.endswith(".__init__"):
        dotted = dotted[:-9]
    parent, _, base = dotted.rpartition(".")
    pats = [re.escape(dotted) + r"\b"]
    if parent:
        pats.append(r"from\s+" + re.escape(parent) + r"\s+import\s+[^\n]*\b" + re.escape(base)
                    + r"\b")
    rx = re.compile("|".join(pats))
    name = base.strip("_")
    hits = [t for t, s in texts.items() if rx.search(s) or
            (len(name) > 3 and re.search(r"^test_\w*" + re.escape(name), t))]
    fam = list(FAMILIES.get(base) or FAMILIES.get(path.split(os.sep)[1]) or [])
    named = [t for t in hits if name in os.path.basename(t)]
    rest = sorted(set(hits) - set(named) - set(fam), key=lambda t: (t.startswith("gpu"), t))
    return fam + sorted(named) + rest


def build() -> str:
    tdir = os.path.join(ROOT, "tests")
    texts = {}
    for root, _, files in os.walk(tdir):
        for f in files:
            if f.startswith("test_") and f.endswith(".py"):
                with open(os.path.join(root, f)) as fh:
                    texts[os.path.relpath(os.path.join(root, f), tdir)] = fh.read()
    lines = ["# Where each module is tested", "",
             "Written by `python tools/tests_map.py`; `tests/test_architecture.py` checks that "
             "every module is listed.", "",
             "| Module | Tests (under `tests/`) |", "|---|---|"]
    for m in modules():
        ts = tests_of(m, texts)
        lines.append(f"| `{m}` | {', '.join(ts[:6]) + (' ...' if len(ts) > 6 else '') or '-'} |")
    return "\n".join(lines) + "\n"


def missing(text: str) -> list:
    return [m for m in modules() if f"| `{m}` |" not in text or f"| `{m}` | - |" in text]


if __name__ == "__main__":
    path = os.path.join(ROOT, "tests", "MAP.md")
    if "--check" in sys.argv:
        with open(path) as f:
            gone = missing(f.read())
        print("\n".join(gone) or "tests/MAP.md lists every module")
        sys.exit(1 if gone else 0)
    with open(path, "w") as f:
        f.write(build())
