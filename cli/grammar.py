"""One grammar for every ``ptxls`` subcommand: how it names itself, what a typo gets, which
``--arch`` values it takes, and the exit codes.

- Every message starts ``ptxls <command>: `` (``say``), errors and notes alike.
- A mistake in the arguments prints the subcommand's own usage, then what is wrong, with the
  closest option, command or value when there is one ("did you mean --kernel?"), and exits 2.
- ``--arch`` takes the ``sm_XX[a|f]`` names the configured ptxas accepts (its own ``--help``);
  anything else is exit 2 with that list, never a silent fall back to the file's ``.target``.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys

# The one table of exit codes (README "Exit codes"; `ptxls --help` prints it).
EXIT_OK = 0  # it did what was asked: clean, passed, written
EXIT_PROBLEMS = 1  # the user's code is wrong: ptxas/nvcc errors, a test that failed
EXIT_CANNOT_RUN = 2  # bad arguments, a missing file or tool, an endpoint error
EXIT_NO_GPU = 3  # a GPU was needed (asked for) and there is none
EXIT_NOT_TESTED = 4  # compile-only: ptxas-clean, but no test ran
EXIT_EMULATED = 5  # passed its tests on the CPU emulator, not on a GPU

EXIT_TABLE = """exit status (every command):
  0  ok: clean, passed, written
  1  the code is wrong: ptxas/nvcc errors, a failed test
  2  cannot run: bad arguments, a missing file or tool, an endpoint error
  3  no GPU, and a GPU was needed
  4  compile-only: ptxas-clean but not tested
  5  passed on the CPU emulator only, not on a GPU"""

ARCH_HELP = (
    "sm_XX[a|f] to assemble for, one ptxas accepts (default: the file's .target, else the "
    "local GPU's, else sm_90)"
)


def say(command: str, message: str) -> None:
    """A message about the run, on stderr, named the way every command names itself."""
    print(f"ptxls {command}: {message}" if command else f"ptxls: {message}", file=sys.stderr)


class PtxlsArgumentParser(argparse.ArgumentParser):
    """argparse, with the subcommand's usage on a mistake and the closest spelling offered.
    Subparsers are made of the same class (argparse passes its own type down)."""

    def error(self, message: str):  # argparse's signature; never returns
        self.print_usage(sys.stderr)
        self.exit(EXIT_CANNOT_RUN, f"{self.prog}: {message}{self._closest(message)}\n")

    def _closest(self, message: str) -> str:
        """' (did you mean …?)' for an unknown option or an invalid choice, else ''."""
        unknown = re.match(r"unrecognized arguments: (.*)", message)
        if unknown:
            options = list(self._option_string_actions)
            for word in unknown.group(1).split():
                if word.startswith("-"):
                    near = difflib.get_close_matches(word.split("=")[0], options, n=1)
                    if near:
                        return f" (did you mean {near[0]}?)"
            return ""
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            offered = re.findall(r"'([^']*)'", choice.group(2))
            near = difflib.get_close_matches(choice.group(1), offered, n=1)
            return f" (did you mean '{near[0]}'?)" if near else ""
        return ""


def arch_problem(arch: str, ptxas: str | None = None) -> str:
    """Why ``--arch arch`` cannot be used ("" when it can): not an sm_XX[a|f] name, or one the
    configured ptxas does not accept; the message lists what it accepts."""
    from ptxls.toolchain.arch import is_valid_arch

    accepted = _accepted_arches(ptxas)
    if is_valid_arch(arch) and (not accepted or arch in accepted):
        return ""
    listed = ", ".join(accepted) if accepted else "sm_XX, sm_XXa or sm_XXf (e.g. sm_90)"
    guess = f"sm_{arch}" if arch.isdigit() else None
    if guess is None and accepted:
        near = difflib.get_close_matches(arch, accepted, n=1)
        guess = near[0] if near else None
    hint = f" (did you mean {guess}?)" if guess and (not accepted or guess in accepted) else ""
    why = "is not an architecture" if not is_valid_arch(arch) else "is not one ptxas accepts"
    return f"argument --arch: '{arch}' {why}{hint}; it accepts: {listed}"


def _accepted_arches(ptxas: str | None) -> list[str]:
    """The -arch values of the configured ptxas (its --help; cached), [] without a ptxas."""
    from ptxls.lowering.ptx_check import accepted_targets

    return accepted_targets(ptxas)
