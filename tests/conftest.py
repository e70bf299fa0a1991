"""Test-suite wiring: tests/ on sys.path for the shared helpers (lsp_helpers.py), and the one
``client`` fixture every end-to-end LSP test uses.

``client`` is a real server process (``python -m ptxls.server serve``) driven by pytest-lsp's
client (see ``lsp_helpers.recording_client``). A module or a test says how its server differs
with the ``lsp`` marker; keywords of the closest marker win, module-level ones fill the rest::

    pytestmark = pytest.mark.lsp(env=ENV, options={"debounceMs": 50})

    @pytest.mark.lsp(initialize=False)      # this test sends initialize itself
    async def test_x(client, tmp_path): ...

Keywords (all optional):

- ``env``: the server's environment (default: this process's);
- ``server_args``: extra arguments after ``serve`` (``["-v"]``: pygls logs every message);
- ``options``: the ``ptxls`` initializationOptions (settings) given to ``init``;
- ``init``: ``init(root, options) -> InitializeParams`` (default ``lsp_helpers.init_params``),
  for a test that needs other client capabilities (applyEdit, workspace folders);
- ``on_start``: ``on_start(client)`` before initialize, to register client-side handlers
  (workspace/applyEdit);
- ``initialize``: ``False`` when the test initializes the session itself.
"""

import contextlib
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Every emulated case of every process the suite starts (CLI, server, GPU-test worker) gets a
# tenth of the emulator's default work budget (gputest/emulated.py: CASE_BUDGET, ~2.5 s a case
# on two cores): a lowering of vec_add.cu ran its 16M-element size twice (kernel and nvcc's
# reference) on the emulator in each of a dozen tests that check something else. The largest
# size still runs, cut to what fits (~1M elements for vec_add), with its note in the report;
# tests of the budget itself pass their own (tests/test_emulator_harness.py).
os.environ.setdefault("PTXLS_EMULATOR_BUDGET", str(250_000_000))

# Older tests import the LSP helpers from conftest; the GPU machine has no pytest-lsp, and there
# the LSP tests are not collected (they import pytest_lsp themselves).
with contextlib.suppress(ImportError):
    import pytest_asyncio

    from lsp_helpers import *  # noqa: F403
    from lsp_helpers import SERVER_COMMAND, init_params, recording_client

    @contextlib.asynccontextmanager
    async def _started_server(how: dict, root: Path):
        lsp = recording_client()
        await lsp.start_io(*SERVER_COMMAND, *how.get("server_args", ()), env=how.get("env"))
        try:
            if "on_start" in how:
                how["on_start"](lsp)
            if how.get("initialize", True):
                init = how.get("init", init_params)
                await lsp.initialize_session(init(root, how.get("options")))
            yield lsp
            # a test may have shut the server down itself, or never initialized it
            with contextlib.suppress(RuntimeError):
                await lsp.shutdown_session()
        finally:
            await lsp.stop()

    @pytest_asyncio.fixture
    async def client(request, tmp_path):
        """A started (and, unless told otherwise, initialized) server with a recording client."""
        async with _started_server(_lsp_marker_kwargs(request), tmp_path) as lsp:
            yield lsp

    @pytest_asyncio.fixture(scope="module", loop_scope="module")
    async def shared_client(request, tmp_path_factory):
        """One server for all the tests of a module that only ask it things: each opens its own
        documents (its own uris), none changes settings, shuts it down or makes it fail. The
        module's ``lsp`` marker configures it; its tests run in the module's event loop
        (``pytestmark = SHARED_SERVER``, from lsp_helpers). The Makefile's ``--dist loadfile``
        keeps a module on one xdist worker, so the module starts one server (xdist's
        ``loadgroup`` would do it per module, but does not group on pytest 9)."""
        root = tmp_path_factory.mktemp("shared-server")
        async with _started_server(_lsp_marker_kwargs(request), root) as lsp:
            yield lsp


def _lsp_marker_kwargs(request) -> dict:
    merged: dict = {}
    for marker in reversed(list(request.node.iter_markers("lsp"))):  # farthest first
        merged.update(marker.kwargs)
    return merged


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "lsp(env, server_args, options, init, on_start, initialize): how the `client` fixture "
        "starts the server (see tests/conftest.py)",
    )
    config.addinivalue_line(
        "markers",
        "process: starts a Python process (the server, the CLI, the GPU worker); given by "
        "tests/conftest.py from what the test uses, left out by `make test-fast`",
    )


# --- the fast loop: `make test-fast` leaves out the tests marked `process` --------------------
# Starting an interpreter that imports ptxls costs ~0.5 s (the server, the CLI, the GPU worker,
# the isolated tool children), nvcc a second or more per compile: together most of `make test`.
# A test is `process` when it, a fixture it uses, or a function, class or constant it reaches
# through its module's globals names one of PROCESS_NAMES (searched in the code objects' names,
# so an attribute `sys.executable` counts as well as a global `SERVER_COMMAND`), or a constant
# argv starts with this Python or a console script. SLOW lists tests that start nothing but
# take seconds in-process. `pytest --report-python-starts` names the tests still starting
# Python without the mark (a new spawning helper: add its name here).
PROCESS_NAMES = frozenset(
    {
        "executable",  # sys.executable in an argv: the CLI, a stand-in script, a worker
        "SERVER_COMMAND",  # lsp_helpers: the server for pytest-lsp
        "start_io",
        "server_config",
        "RawServer",  # raw_lsp: the server for byte-level tests
        "run_fuzz",  # fuzz_lsp: one server per seed
        "Supervisor",  # gputest: the worker process
        "shared_supervisor",
        "run_gpu_test",
        "run_gpu_test_cuda",
        "run_library_kernel",
        "gpu_availability",
        "close_gpu_worker",
        "default_verifier",
        "python_command",  # toolchain: an isolated child interpreter
        "probe_gpu",
        "triton_to_ptx",  # Triton's compiler, in an isolated interpreter
        "lower_with_triton",
        "nvcc_ptx",  # nvcc: a second or more per compile
        "nvccs",
        "find_nvcc",
    }
)
PROCESS_FIXTURES = frozenset({"client", "shared_client"})
SLOW = {
    "tests/test_sass_line_info.py::test_library_modules_still_assemble_and_map_back": "ptxas "
    "and nvdisasm on every library kernel",
    "tests/test_sass.py::test_every_library_kernel_has_mapped_sass": "the same, through SASS",
    "tests/test_eval_suite.py::test_nvccs_ptx_of_every_reference_assembles_and_fits_its_spec": (
        "nvcc on every task's reference"
    ),
    "tests/test_eval_ray.py": "Ray starts its own worker processes",
    "tests/test_cli_grammar.py::test_every_command_on_input_that_runs_the_tools": "nvcc, "
    "ptxas -v, the emulator and the demo, in-process",
}


def _argv_starts_python(value) -> bool:
    if not isinstance(value, list | tuple) or not value or not isinstance(value[0], str):
        return isinstance(value, str) and Path(value).name == "ptxls"
    name = Path(value[0]).name
    return value[0] == sys.executable or name.startswith("python") or name == "ptxls"


def _reaches_process(obj, seen: set) -> bool:
    code = getattr(obj, "__code__", None)
    if code is None or id(code) in seen:
        return False
    seen.add(id(code))
    stack = [code]
    names: set[str] = set()
    while stack:  # the function's own code and every nested function/lambda/comprehension
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if hasattr(k, "co_names"))
    if names & PROCESS_NAMES:
        return True
    glob = getattr(obj, "__globals__", {})
    for name in names:
        target = glob.get(name)
        if _argv_starts_python(target):
            return True
        if isinstance(target, type) and target.__module__ == obj.__module__:
            targets = [m for m in vars(target).values() if hasattr(m, "__code__")]
        else:
            targets = [target]
        for t in targets:
            if getattr(t, "__module__", None) == obj.__module__ and _reaches_process(t, seen):
                return True
    return False


def _starts_process(item) -> bool:
    if PROCESS_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    seen: set = set()
    funcs = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    for defs in info.name2fixturedefs.values() if info else ():
        # this file's fixtures are judged by name (PROCESS_FIXTURES); the watcher below names
        # sys.executable itself
        funcs.extend(d.func for d in defs if d.func.__module__ != __name__)
    return any(f is not None and _reaches_process(f, seen) for f in funcs)


def _is_slow(item) -> bool:
    path, _, rest = item.nodeid.partition("::")
    return path in SLOW or f"{path}::{rest.split('[')[0]}" in SLOW


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _starts_process(item) or _is_slow(item):
            item.add_marker(pytest.mark.process)


def pytest_addoption(parser):
    parser.addoption(
        "--report-python-starts",
        action="store_true",
        help="list the tests that started a Python process without being marked `process`",
    )


_PYTHON_STARTS: dict[str, list[str]] = {}


@pytest.fixture(autouse=True)
def _watch_python_starts(request):
    """With --report-python-starts: note each Python interpreter a test starts (any way:
    subprocess, asyncio, pytest-lsp all end in subprocess.Popen)."""
    if not request.config.getoption("--report-python-starts"):
        yield
        return
    import os
    import subprocess

    started: list[str] = []
    original = subprocess.Popen.__init__

    def watching(self, args, *a, **k):
        argv = [args] if isinstance(args, str | bytes | os.PathLike) else list(args)
        name = os.path.basename(os.fsdecode(argv[0])) if argv else ""
        if name.startswith("python") or name == "ptxls" or os.fsdecode(argv[0]) == sys.executable:
            started.append(" ".join(os.fsdecode(a) for a in argv[:4]))
        original(self, args, *a, **k)

    subprocess.Popen.__init__ = watching
    try:
        yield
    finally:
        subprocess.Popen.__init__ = original
    if started and not request.node.get_closest_marker("process"):
        # user_properties travel with the report, also from an xdist worker to the controller
        request.node.user_properties.append(("python_starts", started))


def pytest_runtest_logreport(report):
    for key, value in report.user_properties:
        if key == "python_starts" and report.when == "teardown":
            _PYTHON_STARTS[report.nodeid] = value


def pytest_terminal_summary(terminalreporter):
    if _PYTHON_STARTS:
        terminalreporter.section("tests that started Python without the `process` mark")
        for nodeid, argvs in sorted(_PYTHON_STARTS.items()):
            terminalreporter.write_line(f"{nodeid}: {argvs[0]} (x{len(argvs)})")
