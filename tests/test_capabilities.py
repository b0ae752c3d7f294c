"""``gk.capabilities()`` is the code's: every cell is called and must do what it says.

For each declared operation, backend and array kind, the operation runs once per dtype
on tiny inputs (tests/capability_cases.py): a cell that "runs" must run and give its
result dtype (on the host where its note says so), a "refused" one must raise exactly
its exception type. CuPy cells run on the simulator (``--cupy=sim``, marked ``gpu``);
sharded cells on two devices (virtual CPU devices on numpy, the simulator's two GPUs on
cupy); Dask cells when Dask is installed. Then the table renderings, the query's filters
and the completeness of the matrix (every public function is in it or listed below with
the reason it is not).
"""

from __future__ import annotations

import importlib
import inspect
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from capability_cases import CASES, Inputs

import gpukit as gk
from gpukit import _capabilities
from gpukit._dispatch.capabilities import BACKENDS, DTYPES, KINDS, declarations, kinds_of
from gpukit._dispatch.dtypes import NUMERIC_CHARS
from gpukit._select import registry as _registry

OPERATIONS = list(declarations())

# Public callables that are not in the matrix, and why (each entry is checked to exist).
NOT_IN_MATRIX = {
    # no array argument: selection, registry, devices, memory, transfers, settings
    **dict.fromkeys(
        [
            "gk.available_backends",
            "gk.device",
            "gk.device_count",
            "gk.devices",
            "gk.empty_cache",
            "gk.empty_pinned",
            "gk.get_backend",
            "gk.memory_stats",
            "gk.register_backend",
            "gk.reset_transfer_stats",
            "gk.selection_reason",
            "gk.set_backend",
            "gk.set_memory_limit",
            "gk.synchronize",
            "gk.transfer_guard",
            "gk.transfer_stats",
            "gk.unregister_backend",
            "gk.use_backend",
            "gk.capabilities",
            "gk.fft.engine",
            "gk.fft.fftfreq",
            "gk.fft.rfftfreq",
            "gk.sparse.issparse",
            "gk.sparse.poisson2d",
            "gk.nn.manual_seed",
            "gk.nn.save",
            "gk.nn.load",
            "gk.distributed.client",
            "gk.distributed.close",
        ],
        "takes no array",
    ),
    "gk.namespace": "answers a question about an array, computes nothing",
    "gk.map_shards": "runs the caller's function on each shard: its dtypes are the function's",
    "gk.reshard": "moves a sharded array's data, any dtype",
    "gk.distributed.to_dask": "converts a sharded array, any dtype",
    "gk.distributed.from_dask": "converts a Dask array, any dtype",
    "gk.nn.fit": "trains with a model, a loss and an optimizer, each in the matrix",
    "gk.nn.GraphedStep": "one training step of a model, a loss and an optimizer, each in "
    "the matrix, captured as a CUDA graph where it can be",
    **dict.fromkeys(
        [
            "gk.Backend",
            "gk.Device",
            "gk.BackendStatus",
            "gk.Capability",
            "gk.MemoryStats",
            "gk.ShardedArray",
            "gk.linalg.IterativeInfo",
        ],
        "a type: the plug-in contract, a status or a result",
    ),
    # classes whose array-taking methods are the matrix's gk.nn.* and gk.optim.* entries
    **dict.fromkeys(
        [
            "gk.nn.Module",
            "gk.nn.Sequential",
            "gk.nn.Parameter",
            "gk.nn.Activation",
            "gk.nn.DataParallel",
            "gk.optim.Optimizer",
            "gk.optim.LRScheduler",
            "gk.optim.StepLR",
            "gk.optim.CosineAnnealingLR",
        ],
        "a container or schedule: the layers, losses and optimizers it holds are in the matrix",
    ),
}
# gk.sharding.*: the sharded implementations behind gk.* (their "sharded" column), and
# reductions of sharded arrays (docs/multi_device.rst)
NOT_IN_MATRIX_MODULES = {"gk.sharding"}


# -- every cell ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_cpu_devices():
    """A numpy backend with two virtual devices, for the numpy backend's sharded cells."""
    return type(_registry.load("numpy"))(2)


def _dask_chunks(x):
    """The first axis in two chunks, the others whole (transformed axes must be)."""
    return (max(1, (x.shape[0] + 1) // 2), *(-1 for _ in x.shape[1:]))


def _placements(backend: str, kind: str, request: pytest.FixtureRequest):
    """(backend to activate, main placement, other placement) of one cell's kind."""
    identity = lambda a: a  # noqa: E731
    if backend == "cupy":
        status = gk.available_backends()["cupy"]
        if not status.available:
            pytest.skip(f"backend 'cupy' unavailable: {status.reason}")
    active = request.getfixturevalue("two_cpu_devices") if kind == "sharded" else backend
    on_backend = identity if backend == "numpy" else gk.asarray
    if kind == "array":
        return active, on_backend, on_backend
    if kind == "host":
        return active, identity, identity
    if kind == "sharded":
        return active, gk.shard, identity
    da = pytest.importorskip("dask.array", reason='pip install -e ".[dask]"')
    return (
        active,
        lambda a: da.from_array(on_backend(a), chunks=_dask_chunks(a), asarray=False),
        on_backend,
    )


def _outcome(out, note: str) -> str:
    """A cell's outcome: runs, and the dtype of the result (of its first array when it
    returns several); and where the result is when the note says it is on the host."""
    first = out[0] if isinstance(out, tuple) else out
    if hasattr(first, "compute"):  # a Dask result: the cell runs when it computes
        first = first.compute(scheduler="synchronous")
    where = ""
    if "on the host" in note and not isinstance(first, np.ndarray | np.generic):
        where = f" on {type(first).__module__}, not the host"
    return f"runs, {np.dtype(first.dtype)}{where}"


CELLS = [
    pytest.param(op, backend, kind, id=f"{op}-{backend}-{kind}", marks=marks)
    for op in OPERATIONS
    for backend, marks in (("numpy", ()), ("cupy", pytest.mark.gpu))
    for kind in kinds_of(backend)
]


@pytest.mark.parametrize("operation, backend, kind", CELLS)
def test_every_cell_does_what_the_matrix_says(operation, backend, kind, request):
    active, main, other = _placements(backend, kind, request)
    wrong = []
    with gk.use_backend(active):
        for cell in gk.capabilities(operation, backend=backend, kind=kind):
            x = Inputs(np.dtype(cell.dtype), np.random.default_rng(0), main, other)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
                    got = _outcome(CASES[operation](x), cell.note)
            except Exception as exc:
                got = f"refused: {type(exc).__name__} ({exc})"
            want = f"runs, {cell.result}" if cell.runs else f"refused: {cell.error.__name__}"
            if not (got == want if cell.runs else got.startswith(want + " (")):
                wrong.append(f"{cell.dtype}: declared {want!r}, got {got!r}")
    assert not wrong, f"{operation} on {backend} {kind}:\n" + "\n".join(wrong)


def test_every_declared_operation_has_a_case_and_every_case_a_declaration():
    assert set(CASES) == set(OPERATIONS)


# -- completeness ------------------------------------------------------------------------------


def _public_callables():
    for module in ("gpukit", *(f"gpukit.{m}" for m in sorted(gk._LAZY_SUBMODULES))):
        mod = importlib.import_module(module)
        public = "gk" + module[len("gpukit") :]
        for name in mod.__all__:
            obj = getattr(mod, name)
            if callable(obj) and not (inspect.isclass(obj) and issubclass(obj, BaseException)):
                yield public, f"{public}.{name}"


def test_every_public_function_is_in_the_matrix_or_says_why_not():
    """A new public function shows up here until it is declared (beside its definition,
    with a case in tests/capability_cases.py) or listed in NOT_IN_MATRIX with its reason."""
    missing = []
    for module, name in _public_callables():
        if name not in OPERATIONS and name not in NOT_IN_MATRIX:
            if module not in NOT_IN_MATRIX_MODULES:
                missing.append(name)
    assert not missing, f"public functions neither declared nor in NOT_IN_MATRIX: {missing}"


def test_exemptions_name_public_functions():
    names = {name for _, name in _public_callables()}
    stale = sorted(set(NOT_IN_MATRIX) - names)
    assert not stale, f"NOT_IN_MATRIX names what is not public (any more): {stale}"
    assert not set(NOT_IN_MATRIX) & set(OPERATIONS), "both declared and exempted"


def test_the_matrix_does_not_depend_on_what_the_caller_imported():
    """``gk.capabilities()`` in a fresh interpreter, before anything else is imported,
    has every operation this process declares (its module imports every area)."""
    from subproc import run_python

    proc = run_python(
        "import gpukit as gk; print(sorted({c.operation for c in gk.capabilities()}))"
    )
    assert proc.stdout.strip() == str(sorted(OPERATIONS))


# -- the query ---------------------------------------------------------------------------------


def test_the_dtype_axis_is_every_numeric_dtype():
    assert {np.dtype(c).name for c in NUMERIC_CHARS} == set(DTYPES)


def test_every_operation_has_every_cell_once():
    cells = gk.capabilities()
    keys = {(c.operation, c.backend, c.kind, c.dtype) for c in cells}
    per_op = len(DTYPES) * sum(len(kinds_of(b)) for b in BACKENDS)
    assert len(keys) == len(cells) == per_op * len(OPERATIONS)


def test_a_cell_runs_with_a_result_or_is_refused_with_an_exception():
    for c in gk.capabilities():
        if c.runs:
            assert c.result in DTYPES and c.error is None
            assert c.status == (f"runs: {c.note}" if c.note else "runs")
        else:
            assert c.result is None and issubclass(c.error, Exception) and not c.note
            assert c.status == f"refused: {c.error.__name__}"


def test_filters_select_their_cells():
    cells = gk.capabilities("gpukit.linalg", backend="cupy", dtype=np.float16, kind="dask")
    assert {c.operation for c in cells} == {op for op in OPERATIONS if op.startswith("gk.linalg.")}
    assert {(c.backend, c.dtype, c.kind) for c in cells} == {("cupy", "float16", "dask")}
    top = {c.operation for c in gk.capabilities("gk")}
    assert "gk.matmul" in top and not any(op.startswith("gk.fft.") for op in top)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"operation": "gk.linalg.slove"}, "did you mean 'gk.linalg.solve'"),
        ({"backend": "tpu"}, "unknown backend 'tpu'"),
        ({"dtype": "float128"}, "unknown dtype"),
        ({"dtype": "not a dtype"}, "unknown dtype 'not a dtype'"),
        ({"kind": "xarray"}, "unknown kind 'xarray'"),
    ],
)
def test_unknown_filters_say_what_exists(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gk.capabilities(**kwargs)


def test_examples_of_the_issue():
    """The three questions of the issue, answered."""
    (cell,) = gk.capabilities("gk.linalg.solve", backend="cupy", dtype="float16", kind="array")
    assert cell.status == "runs: computed in float32" and cell.result == "float32"
    (cell,) = gk.capabilities("gk.fft.fft", backend="cupy", dtype="float32", kind="sharded")
    assert cell.runs and cell.result == "complex64"
    (cell,) = gk.capabilities("gk.linalg.inv", backend="numpy", dtype="float64", kind="dask")
    assert cell.status == "refused: TypeError"


# -- the tables --------------------------------------------------------------------------------


def _parse_summary(text: str) -> dict[str, list[str]]:
    """The rows of a text table (columns are two or more spaces apart)."""
    rows = [re.split(r"\s{2,}", line) for line in text.splitlines()[2:]]
    return {row[0]: row for row in rows if row[0].startswith("gk.")}


@pytest.mark.parametrize("module", _capabilities.modules())
def test_module_tables_show_the_numpy_cells_and_where_else_it_runs(module):
    """Each dtype column of a module's table is the numpy backend's cells; each place in
    "runs on" has a cell that runs, and each place it does not list runs nothing or
    refuses with TypeError only."""
    header, rows, _ = _capabilities.summary(module)
    groups = dict(_capabilities._GROUPS)
    for row in rows:
        op = row[0]
        cells = {(c.backend, c.kind, c.dtype): c for c in gk.capabilities(op)}
        for column, text in zip(header[1:-1], row[1:-1], strict=True):
            wanted = set()
            for dtype in groups[column]:
                c = cells["numpy", "array", dtype]
                short = _capabilities._SHORT[c.result] if c.runs else "-"
                wanted.add(short)
            assert {t.split(" [")[0] for t in text.split("/")} == wanted, (op, column)
        places = row[-1]
        for kind in KINDS:
            label = "cupy" if kind == "array" else kind
            listed = any(p.split(" ")[0] == label for p in places.split(", ") if p)
            runs = any(c.runs for (b, k, _), c in cells.items() if k == kind and b != "numpy")
            runs |= kind != "array" and any(
                c.runs for (b, k, _), c in cells.items() if k == kind and b == "numpy"
            )
            refused_otherwise = any(
                not c.runs and c.error is not TypeError
                for (_, k, _), c in cells.items()
                if k == kind
            )
            assert listed == (runs or refused_otherwise), (op, kind, places)


def test_text_and_rst_render_the_same_table():
    header, rows, notes = _capabilities.summary("gk.linalg")
    text = _capabilities.render_text(header, rows, notes)
    assert list(_parse_summary(text).values()) == rows
    rst = _capabilities.render_rst(header, rows, notes)
    assert rst.startswith(".. list-table::") and "``gk.linalg.solve``" in rst
    assert all(f"| {n}" in rst for n in notes)


def test_grid_has_every_cell_of_one_operation():
    header, rows, notes = _capabilities.grid("gk.kernels.sgd_update")
    assert header[1:] == [_capabilities._SHORT[d] for d in DTYPES]
    by_place = {r[0]: r[1:] for r in rows}
    assert by_place["numpy array"][DTYPES.index("float32")] == "f32"
    assert by_place["cupy host"][DTYPES.index("float32")] == "ValueError"
    assert by_place["cupy host"][DTYPES.index("int8")] == "-"
    assert set(by_place["numpy sharded"]) == {"-"}
    assert len(rows) == sum(len(kinds_of(b)) for b in BACKENDS) and not notes


# -- the docs page ---------------------------------------------------------------------------


def test_the_docs_page_has_one_generated_table_per_module():
    page = (Path(__file__).resolve().parent.parent / "docs" / "capabilities.rst").read_text()
    found = re.findall(r"^\.\. gpukit-capabilities:: (\S+)$", page, re.M)
    assert sorted(found) == sorted(_capabilities.modules())


@pytest.mark.parametrize("module", _capabilities.modules())
def test_the_generated_tables_are_valid_rst_with_every_cell_of_the_summary(module):
    core = pytest.importorskip("docutils.core", reason='pip install -e ".[docs]"')
    header, rows, notes = _capabilities.summary(module)
    rst = _capabilities.render_rst(header, rows, notes)
    tree = core.publish_doctree(rst, settings_overrides={"report_level": 2, "halt_level": 2})
    entries = [e.astext() for e in tree.findall(lambda n: n.tagname == "entry")]
    assert entries == [t or "" for r in (header, *rows) for t in r]
    assert all(n in tree.astext() for n in notes)
