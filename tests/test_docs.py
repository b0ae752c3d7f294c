"""The documentation: the site builds with warnings as errors, and every public
function carries a complete numpydoc docstring (its examples run as doctests)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gpukit

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.docs
@pytest.mark.slow
def test_site_builds_without_warnings(tmp_path):
    for module in ("sphinx", "numpydoc", "furo", "myst_parser"):
        pytest.importorskip(module, reason='install the docs tools: pip install -e ".[docs]"')
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
    proc = subprocess.run(
        [*cmd, str(ROOT / "docs"), str(tmp_path / "html")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, f"sphinx-build failed:\n{proc.stdout}\n{proc.stderr}"
    assert (tmp_path / "html" / "api" / "core.html").is_file()


def _public_modules():
    yield gpukit
    yield gpukit.errors
    yield importlib.import_module("gpukit.cli")
    yield importlib.import_module("gpukit.testing")
    for name in sorted(gpukit._LAZY_SUBMODULES):
        yield importlib.import_module(f"gpukit.{name}")


def _public_functions():
    seen = set()
    for module in _public_modules():
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if inspect.isfunction(obj) and id(obj) not in seen:
                seen.add(id(obj))
                yield f"{module.__name__}.{name}", obj


def _body_facts(func) -> tuple[bool, bool]:
    """(returns a value, raises an exception itself), read from the source."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    returns = raises = False
    nodes = list(ast.iter_child_nodes(tree.body[0]))
    while nodes:  # walk the body, not nested functions or classes
        node = nodes.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(node, ast.Return) and node.value is not None:
            if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                returns = True
        if isinstance(node, ast.Raise) and node.exc is not None:
            raises = True
        nodes.extend(ast.iter_child_nodes(node))
    return returns, raises


def _documented_names(section) -> set[str]:
    names = set()
    for param in section:
        names.update(n.strip().lstrip("*") for n in param.name.split(","))
    return names


FUNCTIONS = sorted(_public_functions())


@pytest.mark.parametrize(("qualname", "func"), FUNCTIONS, ids=[q for q, _ in FUNCTIONS])
def test_public_function_has_numpydoc_docstring(qualname, func):
    docscrape = pytest.importorskip(
        "numpydoc.docscrape", reason='install the docs tools: pip install -e ".[docs]"'
    )
    FunctionDoc = docscrape.FunctionDoc

    doc = FunctionDoc(func)
    inner = inspect.unwrap(func)
    problems = []
    if not doc["Summary"]:
        problems.append("no one-line summary")
    params = [
        p.name for p in inspect.signature(func).parameters.values() if not p.name.startswith("_")
    ]
    missing = sorted(set(params) - _documented_names(doc["Parameters"]))
    if missing:
        problems.append(f"Parameters does not document {', '.join(missing)}")
    returns, raises = _body_facts(inner)
    if inspect.isgeneratorfunction(inner):
        if not doc["Yields"]:
            problems.append("no Yields section (it is a generator / context manager)")
    elif returns and not doc["Returns"]:
        problems.append("no Returns section")
    if raises and not doc["Raises"]:
        problems.append("no Raises section (it raises)")
    if not any(line.lstrip().startswith(">>>") for line in doc["Examples"]):
        problems.append("no runnable Examples section")
    unfilled = re.findall(r"^ *(\{\w+\})$", func.__doc__ or "", flags=re.M)
    if unfilled:  # a shared paragraph (gpukit._docstrings) that was never put in
        problems.append(f"placeholders left in the docstring: {', '.join(unfilled)}")
    assert not problems, f"{qualname}: " + "; ".join(problems)


# A page's Python code blocks run in order in one fresh interpreter, as a reader pasting
# them would, on a machine without a GPU. A block that cannot run there says why in an rst
# comment right above it (".. not-run: needs a GPU"), which the site does not show.
_CODE_BLOCK = re.compile(
    r"^(?P<indent> *)(?:\.\. not-run: (?P<reason>.*)\n\n(?P=indent))?"
    r"\.\. code-block:: python\n(?:(?P=indent) +:.*\n)*\n"
    r"(?P<body>(?:(?P=indent) +\S.*\n|[ \t]*\n)+)",
    re.M,
)
# The optional packages a page's blocks import, with the install that brings each.
_EXTRAS = {"dask": "dask", "distributed": "dask", "torch": "oracles", "sklearn": "examples"}


def _code_blocks(page: Path) -> list[tuple[int, str | None, str]]:
    """(first line, the reason it is not run or None, code) of each Python block."""
    text = page.read_text()
    blocks = []
    for match in _CODE_BLOCK.finditer(text):
        first = text.count("\n", 0, match.start("body")) + 1
        reason = match["reason"]
        assert reason is None or reason.strip(), f"{page.name}:{first}: not-run without a reason"
        blocks.append((first, reason, textwrap.dedent(match["body"])))
    return blocks


_PAGES = sorted(p for p in (ROOT / "docs").glob("*.rst") if _code_blocks(p))


@pytest.mark.parametrize("page", _PAGES, ids=[p.name for p in _PAGES])
def test_the_code_blocks_of_each_page_run_as_written(page, tmp_path):
    """A block importing an optional package that is not installed is left out, and the
    test, once the rest has run, is listed as skipped with the install that brings it."""
    lines: list[str] = []
    missing: set[str] = set()
    for first, reason, code in _code_blocks(page):
        if reason is not None:
            continue
        absent = {m for m in _imported_modules(code) & set(_EXTRAS) if not _installed(m)}
        missing |= absent
        if not absent:  # at its own lines: tracebacks cite the page
            lines += [""] * (first - 1 - len(lines)) + code.splitlines()
    if lines:
        script = tmp_path / "run_page.py"
        source, where = "\n".join(lines) + "\n", str(page.relative_to(ROOT))
        # registered as a notebook registers its cells, so inspect (gk.elementwise) reads it
        script.write_text(
            "import linecache\n"
            f"linecache.cache[{where!r}] = (0, None, {source!r}.splitlines(True), {where!r})\n"
            f"exec(compile({source!r}, {where!r}, 'exec'), {{'__name__': '__main__'}})\n"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUKIT_")}
        env["PYTHONPATH"] = str(ROOT)  # this checkout, and no CuPy simulator: a CPU machine
        proc = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
    if missing:
        extras = ",".join(sorted({_EXTRAS[m] for m in missing}))
        pytest.skip(
            f'docs blocks importing {", ".join(sorted(missing))}: pip install -e ".[{extras}]"'
        )
    if not lines:
        pytest.skip("every block of the page says why it is not run")


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _imported_modules(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_setup_commands_agree_across_readme_docs_and_ci():
    """The README holds exactly two set-up commands; Getting started and CI use them verbatim."""
    import re

    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"```bash\n(.*?)\n```", readme, re.S)
    assert commands == [
        'pip install -e ".[examples]" && python examples/showcase.py',
        'pip install -e ".[test]" && python -m pytest',
    ]
    assert len(re.findall(r"pip install", readme)) == 2, "a third set-up command in the README"
    guide = (ROOT / "docs" / "getting_started.rst").read_text()
    for command in commands:
        assert f"   $ {command}\n" in guide, f"docs/getting_started.rst lacks {command!r}"
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert commands[1] in ci, ".ci/run must run the README's test command verbatim"


def test_the_readme_names_every_install_a_skipped_test_asks_for():
    """The README says what its test command skips: every extra a skip reason names."""
    asked = set()
    for path in [ROOT / "conftest.py", *(ROOT / "tests").rglob("*.py")]:
        asked.update(re.findall(r'pip install -e "\.\[(\w+)\]"', path.read_text()))
    setup = (ROOT / "README.md").read_text().split("\n## Set-up\n")[1].split("\n## ")[0]
    assert {"oracles", "docs"} <= asked
    assert not {extra for extra in asked if f".[{extra}]" not in setup}, sorted(asked)


def test_check_covers_the_foundation():
    names = {q for q, _ in FUNCTIONS}
    assert {"gpukit.use_backend", "gpukit.asarray", "gpukit.cli.main"} <= names


def test_getting_started_first_script_prints_what_the_page_shows():
    """The page's first script runs as written and prints the page's output (the
    selection line's reason depends on the machine: only its start is compared)."""
    import re

    from subproc import run_python

    guide = (ROOT / "docs" / "getting_started.rst").read_text()
    section = guide.split("A first script\n")[1]
    script, shown = (
        textwrap.dedent(block)
        for block in re.findall(r"\.\. code-block:: \w+\n\n((?:   .*\n|\n)+)", section)[:2]
    )
    proc = run_python(script, env={"GPUKIT_BACKEND": "numpy"})
    assert proc.returncode == 0, proc.stderr
    got, want = proc.stdout.splitlines(), shown.strip().splitlines()
    assert got[0].startswith("numpy - ") and want[0].startswith("numpy - ")
    assert got[1:] == want[1:]


def test_changelog_keeps_keep_a_changelog_structure():
    """CHANGELOG.md: a section per version (``## [x.y.z] - YYYY-MM-DD`` or ``- Unreleased``,
    or ``## [Unreleased]``), one for the package's version, and inside each only Keep a
    Changelog's subsections, each once and none empty."""
    kinds = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
    heading = re.compile(r"## \[(Unreleased|\d+\.\d+\.\d+)\](?: - (\d{4}-\d{2}-\d{2}|Unreleased))?")
    lines = (ROOT / "CHANGELOG.md").read_text().splitlines()
    assert lines[0] == "# Changelog"
    versions: dict[str, dict[str, int]] = {}
    version = kind = None
    for number, line in enumerate(lines[1:], 2):
        if line.startswith("## "):
            match = heading.fullmatch(line)
            assert match, f"CHANGELOG.md:{number}: not a version heading: {line!r}"
            assert (match[1] == "Unreleased") == (match[2] is None), f"CHANGELOG.md:{number}"
            version, kind = match[1], None
            assert version not in versions, f"CHANGELOG.md:{number}: {version} twice"
            versions[version] = {}
        elif line.startswith("### "):
            kind = line[4:]
            assert version, f"CHANGELOG.md:{number}: {line!r} outside a version section"
            assert kind in kinds, f"CHANGELOG.md:{number}: {kind!r} is not one of {kinds}"
            assert kind not in versions[version], f"CHANGELOG.md:{number}: {kind} twice"
            versions[version][kind] = 0
        elif line.startswith("#"):
            raise AssertionError(f"CHANGELOG.md:{number}: unexpected heading {line!r}")
        elif kind and line.startswith("- "):
            versions[version][kind] += 1
    assert gpukit.__version__ in versions, f"no section for version {gpukit.__version__}"
    for version, sections in versions.items():
        assert version == "Unreleased" or sections, f"version {version} has no entries"
        empty = [kind for kind, entries in sections.items() if not entries]
        assert not empty, f"{version}: empty subsections {empty}"
