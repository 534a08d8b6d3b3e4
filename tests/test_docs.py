"""The documentation site: it builds with warnings as errors, and its code samples run.

Code samples in ``docs/**.md`` follow one convention:

* a ```` ```python ```` block runs. The blocks of one page run in order as one script (a page reads
  like a notebook), on the CPU simulator in the CPU suite, so each sample checks its own results;
* a ```` ```{.python .gpu} ```` block needs a GPU: it runs, after the page's other blocks, only in
  the GPU test;
* any other fence (```` ```py ````, ```` ```bash ````, ```` ```text ````) is shown, never run.
"""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.S | re.M)


def code_blocks(markdown: str, gpu: bool = False) -> list:
    """The runnable blocks of a page, in order: ```python ones, plus ```{.python .gpu} if ``gpu``."""
    out = []
    for m in _FENCE.finditer(markdown):
        info = m.group(1).strip()
        if info == "python" or (gpu and info.replace(" ", "") == "{.python.gpu}"):
            out.append(m.group(2))
    return out


def pages_with_code(gpu: bool = False) -> list:
    return sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")
                  if code_blocks(p.read_text(), gpu))


def _run_page(page: str, gpu: bool, tmp_path: Path, **env_overrides):
    source = "\n\n".join(code_blocks((DOCS / page).read_text(), gpu))
    if re.search(r"^\s*import torch", source, re.M) and importlib.util.find_spec("torch") is None:
        pytest.skip(f"{page} needs PyTorch, which is not installed")
    script = tmp_path / (page.replace(os.sep, "_").replace("/", "_")[:-3] + ".py")
    script.write_text(source)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p), **env_overrides)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=300, cwd=tmp_path, env=env)
    assert r.returncode == 0, f"the code of docs/{page} failed:\n{r.stdout}\n{r.stderr}"
    return r


# --- code samples ---------------------------------------------------------------------------------
def test_fence_convention():
    md = ("```python\na = 1\n```\n\n```py\nnot_run()\n```\n\n```{.python .gpu}\nb = 2\n```\n"
          "```bash\nls\n```\n")
    assert code_blocks(md) == ["a = 1\n"]
    assert code_blocks(md, gpu=True) == ["a = 1\n", "b = 2\n"]


def test_every_tutorial_and_guide_has_code_that_runs():
    pages = set(pages_with_code())
    for required in ("getting-started.md", "tutorials/vector-add.md", "tutorials/matmul.md",
                     "tutorials/cuda-graphs.md", "tutorials/pytorch.md", "tutorials/softmax.md",
                     "tutorials/layernorm.md", "tutorials/attention.md", "language/guide.md",
                     "host/tensors.md", "host/deviceops.md", "host/graphs.md", "host/interop.md",
                     "tooling.md"):
        assert required in pages, f"docs/{required} has no ```python block"


@pytest.mark.parametrize("page", pages_with_code())
def test_page_code_runs_on_the_simulator(page, tmp_path):
    _run_page(page, False, tmp_path, TILEJIT_SIMULATE="1", TILEJIT_CACHE_DIR=str(tmp_path / "c"))


def _no_gpu_reason():
    from tilejit.runtime import driver
    if not driver.driver_available():
        return "no CUDA driver"
    if driver.device_count() == 0:
        return "no CUDA device"
    return None


@pytest.mark.gpu
@pytest.mark.parametrize("page", pages_with_code(gpu=True))
def test_page_code_runs_on_the_gpu(page, tmp_path):
    reason = _no_gpu_reason()
    if reason:
        pytest.skip(f"needs an NVIDIA GPU ({reason})")
    _run_page(page, True, tmp_path, TILEJIT_SIMULATE="0")


# --- the site ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built with ``mkdocs build --strict`` (warnings are errors)."""
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None:
        if os.environ.get("CI"):
            pytest.fail("mkdocs and mkdocstrings are part of the `test` extra: "
                        "pip install -e '.[test]'")
        pytest.skip("the docs toolchain is not installed: pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"mkdocs build --strict failed:\n{r.stdout}\n{r.stderr}"
    return out


def _page(site, path: str) -> str:
    p = site / path / "index.html" if not path.endswith(".html") else site / path
    assert p.is_file(), f"{path} was not generated"
    return p.read_text()


def test_site_has_every_page_of_the_nav(site):
    for path in ("index.html", "getting-started", "tutorials/vector-add", "tutorials/matmul",
                 "tutorials/cuda-graphs", "tutorials/pytorch", "tutorials/softmax",
                 "tutorials/layernorm", "tutorials/attention", "language/guide", "typing",
                 "language/reference", "host/tensors", "host/deviceops", "host/graphs",
                 "host/interop", "host/reference", "tooling", "troubleshooting"):
        _page(site, path)


def test_language_reference_is_generated_from_the_docstrings(site):
    from tilejit import language
    html = _page(site, "language/reference")
    for name in language.__all__:
        assert f'id="tilejit.language.{name}"' in html, f"tile.{name} is missing"
    # a docstring's text, and a reST role turned into a link to the object it names
    assert "with ``z``'s tile shape" not in html
    assert "Load the tile of tensor" in html
    assert ":func:" not in html and ":class:" not in html
    # the generated math stubs get their real signature and docstring
    assert "Element-wise e**x" in html and "rounding_mode" in html


def test_host_reference_covers_the_public_names(site):
    import types
    import tilejit
    from tilejit import DType, language
    html = _page(site, "host/reference")
    names = [n for n in dir(tilejit) if not n.startswith("_") and n not in language.__all__
             and not isinstance(getattr(tilejit, n), (types.ModuleType, DType))]
    assert len(names) > 30
    for n in names:
        assert f'id="tilejit.{n}"' in html, f"tile.{n} is missing"
    for n in tilejit.api.__all__:
        assert f'id="tilejit.api.{n}"' in html, f"tile.api.{n} is missing"
    assert "Not yet grouped" not in html


def test_host_reference_leaves_out_tilejits_own_helpers(site):
    html = _page(site, "host/reference")
    for internal in ("Kernel.specialize", "Kernel.executable", "Kernel.check_globals",
                     "KernelLaunch.graph_safe", "Device.internal_stream", "Stream.begin_capture",
                     "Stream.end_capture", "Stream.wait_raw", "CompileOptions.hints",
                     "partition.checked_tile", "partition.HostPartition", "autotune.Tuning"):
        assert f'id="tilejit.{internal}"' not in html, internal
    documented = set(re.findall(r'id="(tilejit\.[\w.]+)"', html))
    assert not [d for d in documented if any(p.startswith("_") for p in d.split("."))]
    assert "tilejit.Kernel.inspect_tileir" in documented and "tilejit.Stream.borrow_raw" in documented


@pytest.mark.parametrize("name, params", [
    ("tilejit.entry", ["occupancy", "num_ctas", "opt_level", "fma", "cache", "max_divisibility"]),
    ("tilejit.Kernel.compile", ["args", "arch", "generics"]),
    ("tilejit.partition", ["array", "tile_shape"]),
    ("tilejit.from_dlpack", ["obj", "stream", "device"]),
    ("tilejit.DeviceOp.sync_on", ["stream"]),
    ("tilejit.DeviceOp.schedule", ["policy"]),
    ("tilejit.autotune.autotune", ["configs", "key", "partition", "grid", "reps", "warmup"]),
    ("tilejit.api.zeros", ["shape", "dtype"]),
    ("tilejit.api.full", ["shape", "value", "dtype"]),
    ("tilejit.api.randn", ["shape", "mean", "std", "dtype", "seed"]),
])
def test_host_reference_documents_parameters(site, name, params):
    html = _page(site, "host/reference")
    start = html.index(f'id="{name}"')
    entry = html[start:html.find('id="tilejit.', start + 5)]
    assert "Parameters:" in entry, name
    for p in params:
        assert re.search(rf"<code>\**{p}</code></b>", entry), (name, p)


def test_code_is_highlighted_when_the_site_is_built_no_cdn(site):
    for page in ("index.html", "getting-started", "tutorials/vector-add", "host/interop"):
        html = _page(site, page)
        assert not re.search(r'<script[^>]+src="https?://', html), page       # nothing remote
        assert '<div class="highlight"><pre>' in html and '<span class="kn">' in html, page
        assert re.search(r'href="(\.\./)*css/pygments\.css"', html), page
    css = (site / "css" / "pygments.css").read_text()
    assert ".highlight .kn" in css


def test_readme_links_the_docs():
    readme = (ROOT / "README.md").read_text()
    assert "## Documentation" in readme and "mkdocs serve" in readme


# --- the build helpers ---------------------------------------------------------------------------------
def _load(name):
    spec = importlib.util.spec_from_file_location(name, DOCS / "_ext" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_hook_lists_names_a_reference_page_forgot():
    hooks = _load("mkdocs_hooks")
    missing = hooks.unlisted("::: tilejit.language.bid\n::: tilejit.language.exp\n",
                             "tilejit.language")
    assert "bid" not in missing and "exp" not in missing and "load_tile_like" in missing
    host = hooks.unlisted("::: tilejit.Tensor\n", "tilejit")
    assert "Tensor" not in host and "Device" in host
    assert "float32" not in host and "load_tile_like" not in host     # own table / own page
    page = "# x\n\n::: tilejit.language.bid\n\n<!-- unlisted-members: tilejit.language -->\n"
    expanded = hooks.on_page_markdown(page, None, None, None)
    assert "## Not yet grouped" in expanded and "::: tilejit.language.num_blocks" in expanded
    assert expanded.count("::: tilejit.language.bid") == 1


def test_docstring_roles_become_optional_links():
    pytest.importorskip("griffe")
    ext = _load("griffe_tilejit")

    class Scope:
        def resolve(self, name):
            if name == "Tensor":
                return "tilejit.runtime.tensor.Tensor"
            raise KeyError(name)

    text = ext._rewrite(Scope(), "See :meth:`Tensor.partition` and :func:`~tilejit.api.zeros`, "
                                 "or :func:`nowhere`. Example::\n\n    x = 1\n")
    assert ('<autoref identifier="tilejit.runtime.tensor.Tensor.partition" optional>'
            '<code>Tensor.partition</code></autoref>') in text
    assert '<autoref identifier="tilejit.api.zeros" optional><code>zeros</code></autoref>' in text
    assert '<autoref identifier="nowhere" optional><code>nowhere</code></autoref>' in text
    assert "Example:\n" in text and "::" not in text
