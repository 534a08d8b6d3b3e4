"""Find and run NVIDIA's ``tileiras`` (Tile IR bytecode -> cubin) and ``tileirdisasm``.

Search order: ``$TILEJIT_TILEIRAS``, the ``nvidia-cuda-tileiras`` wheel, ``PATH``, ``$CUDA_HOME/bin``.
tileiras prefers ``$CUDA_HOME/nvvm/lib64/libnvvm.so`` over its own libnvvm, and a stale CUDA_HOME
makes it fail with only "failed to compile Tile IR program"; so it always runs with CUDA_HOME set
to its own installation root.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

from .. import envvars
from ..errors import SourceLocation, ToolchainError

INSTALL_HINT = ("Install it with `pip install 'tilejit[tileiras]'` (or `pip install "
                "'nvidia-cuda-tileiras==13.4.*' 'nvidia-cuda-nvcc==13.4.*' 'nvidia-nvvm==13.4.*'`), "
                "or point TILEJIT_TILEIRAS at a tileiras binary.")


def time_limit() -> float:
    """Seconds a tileiras run may take (``TILEJIT_TILEIRAS_TIMEOUT``, default 300)."""
    return envvars.get("TILEJIT_TILEIRAS_TIMEOUT")


@dataclass(frozen=True)
class Toolchain:
    tileiras: str
    root: str                      # CUDA_HOME to run it with (its installation root)

    @property
    def tileirdisasm(self) -> Optional[str]:
        p = Path(self.tileiras).with_name("tileirdisasm")
        return str(p) if p.exists() else shutil.which("tileirdisasm")

    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH")}
        env["CUDA_HOME"] = self.root
        lib = os.path.join(self.root, "lib")
        if os.path.isdir(lib):
            env["LD_LIBRARY_PATH"] = lib + os.pathsep + env.get("LD_LIBRARY_PATH", "")
        return env


def _wheel_tileiras() -> Optional[str]:
    """tileiras from the nvidia-cuda-tileiras wheel (nvidia/cu13/bin/tileiras), if installed."""
    try:
        import nvidia  # namespace package from the NVIDIA wheels
    except ImportError:
        return None
    for base in getattr(nvidia, "__path__", []):
        for sub in ("cu13", "cu14", "cuda_tileiras"):
            p = os.path.join(base, sub, "bin", "tileiras")
            if os.path.isfile(p) and os.access(p, os.X_OK):
                return p
    return None


def _candidates() -> List[Tuple[str, str]]:
    out = []
    env = envvars.get("TILEJIT_TILEIRAS")
    if env:
        out.append((env, "TILEJIT_TILEIRAS"))
    w = _wheel_tileiras()
    if w:
        out.append((w, "the nvidia-cuda-tileiras package"))
    p = shutil.which("tileiras")
    if p:
        out.append((p, "PATH"))
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        out.append((os.path.join(home, "bin", "tileiras"), "CUDA_HOME"))
    return out


@functools.lru_cache(maxsize=None)
def find_toolchain() -> Toolchain:
    """The tileiras to use; raises ToolchainError saying how to install it when there is none."""
    env = envvars.get("TILEJIT_TILEIRAS")
    if env and not (os.path.isfile(env) and os.access(env, os.X_OK)):
        raise ToolchainError(f"TILEJIT_TILEIRAS={env!r} is not an executable file. " + INSTALL_HINT)
    for path, _ in _candidates():
        if os.path.isfile(path) and os.access(path, os.X_OK):
            path = os.path.realpath(path)
            root = os.path.dirname(os.path.dirname(path))
            return Toolchain(path, root)
    raise ToolchainError("tileiras (NVIDIA's Tile IR compiler) was not found. " + INSTALL_HINT)


def available() -> bool:
    try:
        find_toolchain()
        return True
    except ToolchainError:
        return False


@functools.lru_cache(maxsize=None)
def version_text() -> str:
    """The full ``tileiras --version`` output (part of every cache key)."""
    r = probe(["--version"])
    if r.returncode != 0 or not r.stdout.strip():
        raise _probe_failed(r, "did not print its version")
    return r.stdout.strip()


def probe(args) -> subprocess.CompletedProcess:
    """``tileiras *args`` under the same time limit as a compile (ToolchainError on timeout)."""
    tc = find_toolchain()
    cmd = [tc.tileiras, *args]
    limit = time_limit()
    try:
        return run_tool(cmd, tc.env(), limit)
    except subprocess.TimeoutExpired:
        raise ToolchainError(_hung(cmd, limit), command=cmd) from None
    except OSError as e:
        raise ToolchainError(f"could not run {' '.join(cmd)}: {e}. " + INSTALL_HINT,
                             command=cmd) from None


def _hung(cmd, limit: float) -> str:
    return (f"`{' '.join(cmd)}` did not finish within {limit:g} s; it was stopped, with every "
            f"process it started. Raise TILEJIT_TILEIRAS_TIMEOUT (seconds) if it needs longer")


def _probe_failed(r: subprocess.CompletedProcess, what: str) -> ToolchainError:
    cmd = list(r.args)
    out = (r.stderr or r.stdout or "").strip() or "(no output)"
    return ToolchainError(f"`{' '.join(cmd)}` {what} (exit code {r.returncode}):\n{out}\n"
                          + INSTALL_HINT, command=cmd, stderr=r.stderr)


def version() -> Optional[Tuple[int, int, int]]:
    """``(13, 4, 92)`` from ``tileiras --version`` (None if it cannot be parsed)."""
    m = re.search(r"V(\d+)\.(\d+)\.(\d+)", version_text())
    return tuple(int(x) for x in m.groups()) if m else None


_PINNED: Optional[Tuple[int, int]] = None


@functools.lru_cache(maxsize=None)
def _probe_versions() -> Tuple[Tuple[int, int], ...]:
    r = probe(["--list-versions"])
    found = []
    if r.returncode == 0:
        for line in r.stdout.split():
            m = re.fullmatch(r"(\d+)\.(\d+)", line.strip())
            if m:
                found.append((int(m.group(1)), int(m.group(2))))
    if not found:           # older tileiras: compile an empty module per version
        from ..tileir.bytecode import write_bytecode
        from ..tileir.ir import Module
        from ..tileir.version import SUPPORTED
        errors = []
        for v in reversed(SUPPORTED):
            try:
                compile_bytecode(write_bytecode(Module("probe"), v), "sm_90", keep_failed=False)
                found.append(tuple(v[:2]))
                break
            except ToolchainError as e:
                if "did not finish within" in str(e):
                    raise
                errors.append(e)
        if not found:       # tileiras fails on everything: show why, not an empty version list
            raise ToolchainError(
                f"the installed tileiras ({find_toolchain().tileiras}) compiles nothing: it "
                f"failed on an empty module of every bytecode version tilejit writes. Its last "
                f"error:\n{errors[-1]}", command=errors[-1].command,
                stderr=errors[-1].stderr) from None
    return tuple(sorted(found))


def max_bytecode_version():
    """The newest bytecode version both tilejit and the installed tileiras support."""
    from ..tileir.version import SUPPORTED, BytecodeVersion
    env = envvars.get("TILEJIT_BYTECODE_VERSION")
    if _PINNED is not None:
        return BytecodeVersion(*_PINNED)
    if env:
        from ..tileir.version import as_version
        return as_version(env)
    accepted = set(_probe_versions())
    ours = [v for v in SUPPORTED if tuple(v[:2]) in accepted]
    if not ours:
        raise ToolchainError(f"the installed tileiras ({find_toolchain().tileiras}) accepts bytecode "
                             f"{sorted(accepted)}, none of which tilejit writes "
                             f"({', '.join(map(str, SUPPORTED))}). " + INSTALL_HINT)
    return ours[-1]


# ------------------------------------------------------------------------------------------------
_LOC = re.compile(r'loc\("(?P<file>[^"]+)":(?P<line>\d+):(?P<col>\d+)\)')


def parse_diagnostics(stderr: str) -> Optional[SourceLocation]:
    """The first Python source location mentioned in tileiras' diagnostics, if any."""
    for m in _LOC.finditer(stderr):
        f = m.group("file")
        if f.endswith(".py"):
            return SourceLocation(f, int(m.group("line")), max(0, int(m.group("col")) - 1))
    return None


def failed_dir() -> str:
    d = os.path.join(tempfile.gettempdir(), "tilejit-failed")
    os.makedirs(d, exist_ok=True)
    return d


def tileiras_flags(opt_level: int, lineinfo: bool) -> List[str]:
    """The code-generation flags passed to tileiras; ``" ".join`` of them is part of the cache key."""
    return [f"-O{opt_level}"] + (["--lineinfo"] if lineinfo else [])


def compile_bytecode(bytecode: bytes, arch: str, *, opt_level: int = 3, lineinfo: bool = True,
                     timeout: Optional[float] = None, name: str = "kernel",
                     keep_failed: bool = True, remarks_to: Optional[str] = None) -> bytes:
    """Run tileiras on ``bytecode`` for ``arch`` (``"sm_90"``) and return the cubin bytes.
    ``remarks_to``: a path where tileiras writes every optimization remark, as YAML."""
    tc = find_toolchain()
    if not re.fullmatch(r"sm_\d+[a-z]?", arch):
        raise ToolchainError(f"bad target architecture {arch!r}; expected e.g. 'sm_90'")
    limit = time_limit() if timeout is None else timeout
    with _sigterm_unwinds(), tempfile.TemporaryDirectory(prefix="tilejit-") as tmp:
        src = os.path.join(tmp, f"{name}.tileirbc")
        out = os.path.join(tmp, f"{name}.cubin")
        with open(src, "wb") as f:
            f.write(bytecode)
        cmd = [tc.tileiras, src, "-o", out, f"--gpu-name={arch}"] + tileiras_flags(opt_level, lineinfo)
        if remarks_to is not None:
            cmd += ["--remarks=all", "--remark-format=yaml", f"--remarks-output-file={remarks_to}"]
        try:
            r = run_tool(cmd, tc.env(), limit)
        except subprocess.TimeoutExpired:
            raise _failed(f"tileiras did not finish within {limit:g} s", None, cmd, src,
                          bytecode, name, arch, keep_failed,
                          "It was stopped, with every process it started. Smaller tiles usually "
                          "compile faster; raise TILEJIT_TILEIRAS_TIMEOUT (seconds) if it needs "
                          "longer.") from None
        except OSError as e:
            raise ToolchainError(f"could not run {tc.tileiras}: {e}. " + INSTALL_HINT,
                                 command=cmd) from None
        if r.returncode != 0:
            raise _failed(f"tileiras failed (exit code {r.returncode})", r, cmd, src, bytecode,
                          name, arch, keep_failed)
        cubin = b""
        if os.path.exists(out):
            with open(out, "rb") as f:
                cubin = f.read()
        if not cubin:
            raise _failed(f"tileiras exited successfully but wrote no cubin (expected {out})", r,
                          cmd, src, bytecode, name, arch, keep_failed)
        if cubin[:4] != b"\x7fELF":       # never cache or load what is not a cubin
            raise _failed(f"tileiras exited successfully but its output is not a cubin (an ELF "
                          f"file; it starts with {cubin[:8]!r})", r, cmd, src, bytecode, name,
                          arch, keep_failed)
        return cubin


def _failed(what: str, r: Optional[subprocess.CompletedProcess], cmd, src: str, bytecode: bytes,
            name: str, arch: str, keep_failed: bool, advice: str = "") -> ToolchainError:
    """The error for a failed compile: what happened, the command (with the kept bytecode's
    path), tileiras' own output, and where the bytecode was kept."""
    kept = _keep(bytecode, name) if keep_failed else src
    cmd_shown = [kept if c == src else c for c in cmd]
    output = (r.stderr or r.stdout).strip() if r is not None else ""
    msg = (f"{what} compiling '{name}' for {arch}.\ncommand: {' '.join(cmd_shown)}\n"
           f"(run with CUDA_HOME={find_toolchain().root})\n"
           + (f"{output}\n" if output else "") + (f"{advice}\n" if advice else "")
           + f"bytecode kept at {kept}")
    stderr = r.stderr if r is not None else ""
    return ToolchainError(msg, parse_diagnostics(stderr), command=cmd_shown, bytecode_path=kept,
                          stderr=stderr)


def run_tool(cmd, env, timeout) -> subprocess.CompletedProcess:
    """Run ``cmd`` in a session of its own (so a terminal's Ctrl-C reaches only Python); on
    timeout, or when the wait is interrupted (``KeyboardInterrupt``, SIGTERM through
    :func:`_sigterm_unwinds`), kill the whole process group (tileiras starts ptxas and friends,
    which must not outlive it) and re-raise."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                          start_new_session=True) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(p)
            try:        # a process that left the group may still hold the pipes: do not wait on it
                p.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
            raise
        except BaseException:
            _kill_group(p)
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
            raise
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def _kill_group(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass


class _Terminated(BaseException):
    """SIGTERM arrived while a tool ran (raised by :func:`_sigterm_unwinds`' handler)."""


@contextlib.contextmanager
def _sigterm_unwinds():
    """While the block runs a tool, SIGTERM unwinds it like Ctrl-C (the tool's process group is
    killed, its temporary folder removed) and then ends the process as SIGTERM would have. Only
    in the main thread (the only one Python delivers signals to), and only over the default
    handler: a handler of the program's own is left alone."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def unwind(signum, frame):
        raise _Terminated()

    signal.signal(signal.SIGTERM, unwind)
    try:
        yield
    except _Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        raise
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _keep(bytecode: bytes, name: str) -> str:
    h = hashlib.sha256(bytecode).hexdigest()[:16]
    path = os.path.join(failed_dir(), f"{name}-{h}.tileirbc")
    with open(path, "wb") as f:
        f.write(bytecode)
    return path


def disassembler_available() -> bool:
    try:
        return find_toolchain().tileirdisasm is not None
    except ToolchainError:
        return False


def disassemble(bytecode: bytes) -> str:
    """``tileirdisasm`` text of ``bytecode`` (raises ToolchainError if it cannot be read)."""
    tc = find_toolchain()
    dis = tc.tileirdisasm
    if dis is None:
        raise ToolchainError("tileirdisasm was not found next to tileiras. " + INSTALL_HINT)
    with _sigterm_unwinds():
        with tempfile.NamedTemporaryFile(suffix=".tileirbc", delete=False) as f:
            f.write(bytecode)
            path = f.name
        try:
            r = run_tool([dis, path], tc.env(), time_limit())
        except subprocess.TimeoutExpired:
            raise ToolchainError(_hung([dis, path], time_limit()), command=[dis, path]) from None
        finally:
            os.unlink(path)
    if r.returncode != 0:
        raise ToolchainError(f"tileirdisasm rejected the bytecode:\n{r.stderr.strip()}",
                             stderr=r.stderr)
    return r.stdout


if __name__ == "__main__":  # pragma: no cover
    print(find_toolchain(), version_text(), max_bytecode_version(), file=sys.stderr)
