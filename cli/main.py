"""The ``ptxls`` command: serve, check, usage, test, lower, bench, sass, doctor, demo.

Every subcommand runs the same engines the language server uses, so what the editor shows and
what the terminal prints agree.
"""

from __future__ import annotations

import sys

# `python -m ptxls.cli.main` put the folder it was started in first on sys.path (see
# server/__main__.py): dropped before any other import, so a repository's argparse.py or
# numpy.py is not imported. The `ptxls` script and `python -m ptxls.cli` never add it.
_started_as_main = __name__ == "__main__" and sys.path and not sys.flags.safe_path
if _started_as_main and sys.path[0] in ("", __import__("os").getcwd()):
    del sys.path[0]

import argparse  # noqa: E402
import importlib  # noqa: E402
import os  # noqa: E402

from .grammar import (  # noqa: E402
    ARCH_HELP,
    EXIT_CANNOT_RUN,
    EXIT_TABLE,
    PtxlsArgumentParser,
    arch_problem,
    say,
)
from .output_format import add_format_argument, chosen_format  # noqa: E402

# Subcommands with a module of their own (command → module, in the order `ptxls --help` lists
# them); each module has add_parser(sub) and run(args). A command imports its own module and no
# other: the GPU-test command's imports load numpy (a tenth of a second before `ptxls check`
# could start, a second before `ptxls lower`'s first request; bench/cli_startup.py,
# bench/lowering_startup.py). Only `ptxls --help`, no command or an unknown one import them all.
_COMMAND_MODULES = {
    "test": "ptxls.cli.gpu_test",
    "lower": "ptxls.cli.lower",
    "replay": "ptxls.cli.replay",
    "bench": "ptxls.cli.bench",
    "sass": "ptxls.cli.sass",
    "eval": "ptxls.cli.eval",
    "debug-adapter": "ptxls.cli.debug_adapter",
}
_BUILT_IN = ("serve", "check", "usage", "doctor", "demo")  # defined below, nothing to import


def _serve(args: argparse.Namespace) -> int:
    from ptxls.server.app import run_server  # pygls is imported only when serving

    return run_server(args.verbose)


def _probe_ptxas_early(explicit: str | None) -> None:
    """Ask ptxas its version and PTX ISA (two child processes, a few tens of ms) in a thread
    while the check's modules import: toolchain/discovery keeps each binary's answers, and the
    check, asking the same binary, takes them (or waits for the probe under way). Not a daemon:
    a hung probe is killed by its own timeout, never left behind at exit."""
    import contextlib
    import threading

    from ptxls.toolchain.discovery import find_ptxas

    def probe() -> None:
        with contextlib.suppress(Exception):  # the check itself says what is wrong with ptxas
            find_ptxas(explicit)

    threading.Thread(target=probe, name="ptxls-ptxas-probe").start()


def _check(args: argparse.Namespace) -> int:
    _probe_ptxas_early(args.ptxas)
    import asyncio

    from .check import run_check

    return asyncio.run(
        run_check(
            args.files,
            arch=args.arch,
            ptxas=args.ptxas,
            nvcc=args.nvcc,
            timeout=args.timeout,
            fix=args.fix,
            fmt=chosen_format(args),
        )
    )


def _usage(args: argparse.Namespace) -> int:
    _probe_ptxas_early(args.ptxas)
    import asyncio

    from .check import run_usage

    return asyncio.run(
        run_usage(
            args.file,
            arch=args.arch,
            ptxas=args.ptxas,
            block=args.block,
            fmt=chosen_format(args),
            timeout=args.timeout,
        )
    )


def _doctor(args: argparse.Namespace) -> int:
    from .doctor import run_doctor

    return run_doctor(ptxas=args.ptxas, fmt=chosen_format(args))


def version() -> str:
    """The installed distribution's version (the wheel's metadata), else the source tree's.

    Read from the first ``ptxls-*.dist-info/METADATA`` on sys.path, the one importlib.metadata
    would find, without importing importlib.metadata (its email and zip readers cost 40 ms, a
    sixth of the start-up goal); importlib.metadata only where that finds nothing (an egg, a
    zip)."""
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in sorted(names):
            if name.startswith("ptxls-") and name.endswith(".dist-info"):
                found = _metadata_version(os.path.join(entry or ".", name, "METADATA"))
                if found:
                    return found
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("ptxls")
    except PackageNotFoundError:
        from ptxls.server.app import SERVER_VERSION

        return SERVER_VERSION


def _metadata_version(path: str) -> str | None:
    """The ``Version:`` header of a METADATA file (the headers end at the first empty line)."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    break
                if line.startswith("Version:"):
                    return line.partition(":")[2].strip() or None
    except OSError:
        pass
    return None


class _VersionAction(argparse.Action):
    """``--version``: the version is looked up only when asked for, not for every command."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, **kw):
        super().__init__(option_strings, dest, nargs=0, default=default, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        parser._print_message(f"ptxls {version()}\n", sys.stdout)
        parser.exit()


def _timeout(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds: {text}")
    return seconds


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(
        args.examples, skip_gpu=args.no_gpu, skip_lowering=args.no_lowering, fmt=chosen_format(args)
    )


def _add_serve(sub, runners: dict) -> None:
    p = sub.add_parser("serve", help="run the language server over stdio (editors start this)")
    p.add_argument(
        "--stdio",
        action="store_true",
        help="accepted for editors that pass it; stdio is the default",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    runners["serve"] = _serve


def _add_check(sub, runners: dict) -> None:
    p = sub.add_parser(
        "check",
        help="ptxas/nvcc diagnostics for .ptx and .cu files, compiler style",
        description="Prints FILE:LINE:COL: severity: message for each problem. Exit status: "
        "0 clean, 1 errors in a file, 2 cannot run (unreadable file, no ptxas, a tool run past "
        "--timeout, an --arch older than the file's .target).",
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--arch", help=ARCH_HELP)
    p.add_argument(
        "--ptxas",
        help="path of the ptxas to use (default: PTXLS_PTXAS, PATH, the nvidia-cuda-nvcc wheel)",
    )
    p.add_argument("--nvcc", help="path of the nvcc to use for .cu files")
    p.add_argument(
        "--timeout",
        type=_timeout,
        default=60.0,
        metavar="SECONDS",
        help="stop a ptxas/nvcc run after this long and exit 2 (default: 60)",
    )
    p.add_argument(
        "--fix",
        action="store_true",
        help="apply the fixes the check prints as 'note: fix:' to the .ptx files, then check "
        "them again (only where the file still says what the check saw)",
    )
    add_format_argument(p, json_alias=False)
    runners["check"] = _check


def _add_usage(sub, runners: dict) -> None:
    p = sub.add_parser(
        "usage",
        help="per-kernel registers, spills, shared memory, occupancy (ptxas -v)",
        description="Exit status: 0, 1 when ptxas finds errors in the file (printed like "
        "ptxls check), 2 cannot run.",
    )
    p.add_argument("file", metavar="FILE.ptx")
    p.add_argument("--arch", help=ARCH_HELP)
    p.add_argument("--ptxas", help="path of the ptxas to use")
    p.add_argument(
        "--block",
        type=int,
        help="threads per block for the occupancy (default: .reqntid/.maxntid, else 256)",
    )
    p.add_argument(
        "--timeout",
        type=_timeout,
        default=60.0,
        metavar="SECONDS",
        help="stop ptxas after this long and exit 2 (default: 60)",
    )
    add_format_argument(p, json_alias=False)
    runners["usage"] = _usage


def _add_doctor(sub, runners: dict) -> None:
    p = sub.add_parser(
        "doctor", help="what ptxls found: ptxas, nvcc/NVRTC, driver, GPU, LLM settings"
    )
    p.add_argument("--ptxas", help="path of the ptxas to report on")
    add_format_argument(p)
    runners["doctor"] = _doctor


def _add_demo(sub, runners: dict) -> None:
    p = sub.add_parser("demo", help="the main job on the shipped examples/")
    p.add_argument(
        "--examples", help="folder of examples (default: ./examples or the repository's)"
    )
    p.add_argument("--no-gpu", action="store_true", help="skip the GPU test step")
    p.add_argument("--no-lowering", action="store_true", help="skip the lowering step")
    add_format_argument(p, json_alias=False)
    runners["demo"] = _demo


def _first_command(argv: list[str] | None) -> str | None:
    return next(
        (a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")), None
    )


def _modules_for(command: str | None, words: list[str]) -> list[str]:
    """The command modules to import for this command line: its own module, none for a
    built-in command or a bare ``--version``, all of them otherwise (help, unknown commands:
    the list of commands and the closest one need every name)."""
    before = words[: words.index(command)] if command in words else words
    if {"-h", "--help"} & set(before):  # `ptxls -h check`: the main help, every command
        return list(_COMMAND_MODULES.values())
    if command in _COMMAND_MODULES:
        return [_COMMAND_MODULES[command]]
    if command in _BUILT_IN:
        return []
    if command is None and "--version" in words:
        return []
    return list(_COMMAND_MODULES.values())


def build_parser(
    command: str | None = None, words: list[str] | None = None
) -> tuple[argparse.ArgumentParser, dict]:
    """The parser and each command's runner. With the command line's ``words``, only what that
    line needs (``_modules_for``); without, every command (the grammar tests, ``--help``)."""
    parser = PtxlsArgumentParser(
        prog="ptxls",
        description="PTX language server and toolbox: check, test, lower, bench.",
        epilog=EXIT_TABLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")  # PtxlsArgumentParser too
    runners: dict = {}
    _add_serve(sub, runners)
    _add_check(sub, runners)
    _add_usage(sub, runners)
    _add_doctor(sub, runners)
    _add_demo(sub, runners)
    modules = list(_COMMAND_MODULES.values()) if words is None else _modules_for(command, words)
    for name in modules:
        module = importlib.import_module(name)
        before = set(sub.choices)
        module.add_parser(sub)
        for added in set(sub.choices) - before:
            runners[added] = module.run
    return parser, runners


# Commands whose FILE arguments are paths to read: a missing one is said before anything runs.
_READS_FILES = ("check", "usage", "test", "lower", "sass")


def _parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """The arguments, checked the same way for every command: an unknown option is the
    subcommand's mistake (its usage, the closest option), an --arch must be one ptxas
    accepts. Exits 2 (argparse's SystemExit) when they are wrong."""
    args, extras = parser.parse_known_args(argv)
    command = getattr(args, "command", None)
    here = _subparser(parser, command) or parser
    if extras:
        here.error(f"unrecognized arguments: {' '.join(extras)}")
    arch = getattr(args, "arch", None)
    if command and arch is not None:
        problem = arch_problem(arch, getattr(args, "ptxas", None))
        if problem:
            here.error(problem)
    return args


def _subparser(parser: argparse.ArgumentParser, command: str | None):
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        choices = getattr(action, "choices", None)  # a subparsers action's: name → parser
        if isinstance(choices, dict) and command in choices:
            return choices[command]
    return None


def _missing_file(args: argparse.Namespace) -> str | None:
    if args.command not in _READS_FILES:
        return None
    files = getattr(args, "files", None) or [getattr(args, "file", None)]
    return next((f for f in files if f and not os.path.exists(f)), None)


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    parser, runners = build_parser(_first_command(words), words)
    args = _parse(parser, argv)
    if not args.command:
        parser.print_help()
        return EXIT_CANNOT_RUN
    missing = _missing_file(args)
    if missing:
        say(args.command, f"no such file: {missing}")
        return EXIT_CANNOT_RUN
    if args.command == "serve":
        # stdout carries the protocol; features/key_scrub.py scrubs every message and the log
        return runners[args.command](args)
    from ptxls.toolchain.secrets import ScrubbingStream, install_log_scrubber

    # an endpoint may echo the API key in an error body: nothing printed may carry it
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = ScrubbingStream(out), ScrubbingStream(err)
    install_log_scrubber()
    try:
        return runners[args.command](args)
    except KeyboardInterrupt:
        say(args.command, "interrupted")
        return 130
    except BrokenPipeError:
        # The reader went away (`ptxls doctor | head`): stop quietly, as Unix tools do; the
        # redirect keeps the interpreter's final flush from raising again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    finally:
        sys.stdout, sys.stderr = out, err


if __name__ == "__main__":
    sys.exit(main())
