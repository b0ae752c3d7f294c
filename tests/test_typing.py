"""gpukit's annotations as a user's type checker reads them: mypy and pyright over tests/typing.

``tests/typing/pass/*.py`` state what a checker infers (``assert_type``) and must check
clean; in ``tests/typing/fail/*.py`` every line marked ``# E: <code>`` must be an error to
both checkers (to mypy with that error code) and no other line may be. Both run as a user's
would, against the installed gpukit (its ``py.typed``). The checkers come with the
``typing`` extra; without one, its test skips and says so.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # two checkers, cold caches: about half a minute

HERE = Path(__file__).parent / "typing"
PASS = sorted(str(p) for p in (HERE / "pass").glob("*.py"))
FAIL = sorted(str(p) for p in (HERE / "fail").glob("*.py"))
MARKER = re.compile(r"#\s*E:\s*([a-z-]+)\s*$")

# Errors by (file, line): mypy's error codes, or pyright's rules
Found = dict[tuple[str, int], set[str]]


def _checker(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f'{module} is not installed: pip install -e ".[typing]"')


@pytest.fixture(scope="module")
def mypy_found(tmp_path_factory: pytest.TempPathFactory) -> Found:
    """mypy's errors over pass/ and fail/ (one run: the standard library's stubs are
    analysed once)."""
    _checker("mypy")
    cache = tmp_path_factory.mktemp("mypy")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--output=json", "--no-error-summary",
         "--cache-dir", str(cache), *PASS, *FAIL],
        capture_output=True, text=True, cwd=HERE, timeout=600,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr or proc.stdout  # 2: mypy itself failed
    found: Found = defaultdict(set)
    for line in proc.stdout.splitlines():
        error = json.loads(line)
        if error["severity"] == "error":
            found[str(Path(HERE, error["file"]).resolve()), error["line"]].add(error["code"])
    return found


@pytest.fixture(scope="module")
def pyright_found() -> Found:
    """pyright's errors over pass/ and fail/."""
    _checker("pyright")
    proc = subprocess.run(
        [sys.executable, "-m", "pyright", "--outputjson", *PASS, *FAIL],
        capture_output=True, text=True, cwd=HERE, timeout=600,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr or proc.stdout  # > 1: pyright failed
    found: Found = defaultdict(set)
    for error in json.loads(proc.stdout)["generalDiagnostics"]:
        if error["severity"] == "error":
            line = error["range"]["start"]["line"] + 1
            found[str(Path(error["file"]).resolve()), line].add(error.get("rule", "?"))
    return found


def _in(found: Found, files: list[str]) -> Found:
    paths = {str(Path(f).resolve()) for f in files}
    return {k: v for k, v in found.items() if k[0] in paths}


def _expected() -> dict[tuple[str, int], str]:
    expected = {}
    for file in FAIL:
        for number, text in enumerate(Path(file).read_text().splitlines(), 1):
            if match := MARKER.search(text):
                expected[str(Path(file).resolve()), number] = match.group(1)
    return expected


def _explain(found: Found) -> str:
    return "\n".join(f"{Path(f).name}:{n}: {sorted(c)}" for (f, n), c in sorted(found.items()))


def test_typing_files_exist():
    assert PASS and FAIL and len(_expected()) >= 10


def test_mypy_passes(mypy_found):
    found = _in(mypy_found, PASS)
    assert not found, f"mypy errors in tests/typing/pass:\n{_explain(found)}"


def test_pyright_passes(pyright_found):
    found = _in(pyright_found, PASS)
    assert not found, f"pyright errors in tests/typing/pass:\n{_explain(found)}"


def test_mypy_refuses(mypy_found):
    found, expected = _in(mypy_found, FAIL), _expected()
    missed = {k: code for k, code in expected.items() if code not in found.get(k, set())}
    extra = {k: codes for k, codes in found.items() if k not in expected}
    assert not missed, f"mypy did not report (file, line): expected code: {missed}"
    assert not extra, f"mypy errors on unmarked lines:\n{_explain(extra)}"


def test_pyright_refuses(pyright_found):
    found, expected = _in(pyright_found, FAIL), _expected()
    missed = sorted(k for k in expected if k not in found)
    extra = {k: rules for k, rules in found.items() if k not in expected}
    assert not missed, f"pyright did not report an error at (file, line): {missed}"
    assert not extra, f"pyright errors on unmarked lines:\n{_explain(extra)}"
