"""The instant checks (lints and ISA availability) on a corpus of annotated PTX files.

Each file under tests/data/ptx_cases/ is the input and carries its expectations in comments, so a
new case is a new file. ``check(input, expect)`` runs the engine's instant checks
(``diagnostics.engine.instant_check``: lints + availability) and requires exactly the annotated
problems, no more, no fewer. A file without annotations must get no problem at all.

Annotations (PTX comments, so ptxas and the lints ignore them):

    @%p1 redux.sync.add.u32 %r1, %r2, 0xffffffff;
//       ^^^^^^^^^^^^^^^^^^ error needs-newer-target "sm_75"

    a problem on the nearest line above that is not an annotation, covering exactly the caret
    columns, with that severity and code; each quoted text must appear in its message.

{
// expect: error braces "never closed"

    the same, at any column of the line above (for a token at column 0 or 1, where carets
    cannot reach, and for problems of the whole module).

File directives:

// ptxas: rejects                        real ptxas must refuse the file, with an error on
                                         every annotated line (the lint never says more than
                                         ptxas would)
// clean with: .version 8.8 .target sm_90a
                                         the same file under this header gets no problem
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from ptxls.diagnostics import isa
from ptxls.diagnostics.engine import instant_check
from ptxls.diagnostics.model import Problem
from ptxls.toolchain.discovery import all_tools

CASES = Path(__file__).parent / "data" / "ptx_cases"
# The hand-written example every newcomer opens: no annotation, so no problem.
FILES = [*sorted(CASES.glob("lints/*.ptx")), *sorted(CASES.glob("isa/*.ptx"))]
FILES.append(Path(__file__).parent.parent / "examples" / "vec_add.ptx")
# (navigation/ holds the editor-navigation corpus: test_lsp_navigation.py)

CARET = re.compile(r"^//( *)(\^+) (\w+) ([\w-]+)((?: \"[^\"]*\")*)$")
EXPECT = re.compile(r"^// expect: (\w+) ([\w-]+)((?: \"[^\"]*\")*)$")
CLEAN_WITH = re.compile(r"^// clean with: (\.version \S+) (\.target \S+)$", re.M)


@dataclass(frozen=True)
class Expect:
    line: int  # 0-based, of the line the annotation points at
    severity: str
    code: str
    texts: tuple[str, ...]  # each must appear in the message
    cols: tuple[int, int] | None  # [start, end) from the carets; None: any column

    def matches(self, p: Problem) -> bool:
        return (
            (p.line, p.severity.value, p.code) == (self.line, self.severity, self.code)
            and (self.cols is None or (p.col, p.end_col) == self.cols)
            and all(t in p.message for t in self.texts)
        )


def read_expectations(text: str) -> list[Expect]:
    """The annotations of a case file, each pointing at its line."""
    out: list[Expect] = []
    target = 0
    for number, line in enumerate(text.split("\n")):
        caret, expect = CARET.match(line), EXPECT.match(line)
        if caret:
            start = 2 + len(caret.group(1))
            cols = (start, start + len(caret.group(2)))
            sev, code, texts = caret.group(3), caret.group(4), caret.group(5)
        elif expect:
            cols, (sev, code, texts) = None, expect.groups()
        else:
            target = number
            continue
        out.append(Expect(target, sev, code, tuple(re.findall(r"\"([^\"]*)\"", texts)), cols))
    return out


def _render(p: Problem) -> str:
    return f"line {p.line} cols {p.col}-{p.end_col}: {p.severity.value} {p.code} {p.message!r}"


# The dataflow warnings (frontend/ptx_dataflow.py) have their cases in lints/; an isa/ case is
# one instruction in a stub kernel, incomplete on purpose.
DATAFLOW_CODES = ("read-before-write", "stores-through-no-pointer", "stores-nothing",
                  "param-never-loaded")  # fmt: skip


def check(text: str, expect: list[Expect], ignore: tuple[str, ...] = ()) -> None:
    """The instant checks find exactly ``expect`` in ``text`` (codes in ``ignore`` aside)."""
    _, problems = instant_check(text)
    problems = [p for p in problems if p.code not in ignore]
    unmatched = list(problems)
    missing = []
    for e in expect:
        found = next((p for p in unmatched if e.matches(p)), None)
        if found is None:
            missing.append(e)
        else:
            unmatched.remove(found)
    assert missing == [] and unmatched == [], (
        "expected but not found:\n  "
        + "\n  ".join(map(str, missing))
        + "\nfound but not expected:\n  "
        + "\n  ".join(map(_render, unmatched))
    )


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_case(path):
    text = path.read_text(encoding="utf-8")
    check(text, read_expectations(text), _ignored(path))


def _ignored(path: Path) -> tuple[str, ...]:
    return DATAFLOW_CODES if path.parent.name == "isa" else ()


CLEAN_VARIANTS = [p for p in FILES if CLEAN_WITH.search(p.read_text(encoding="utf-8"))]


@pytest.mark.parametrize("path", CLEAN_VARIANTS, ids=_id)
def test_case_is_clean_when_the_header_allows_it(path):
    text = path.read_text(encoding="utf-8")
    version, target = CLEAN_WITH.search(text).groups()
    text = re.sub(r"^\.version \S+$", version, text, count=1, flags=re.M)
    text = re.sub(r"^\.target \S+$", target, text, count=1, flags=re.M)
    check(text, [], _ignored(path))


# ---- ptxas agrees: every line a rejecting case annotates is an error for real ptxas

REJECTED = [p for p in FILES if "\n// ptxas: rejects\n" in p.read_text(encoding="utf-8")]


def _ptxases():
    tools = [t for t in all_tools("ptxas") if t.max_ptx_isa]
    return tools or [pytest.param(None, marks=pytest.mark.skip(reason="no ptxas found"))]


@pytest.mark.parametrize("ptxas", _ptxases(), ids=lambda t: f"ptxas-{t.version}" if t else "none")
@pytest.mark.parametrize("path", REJECTED, ids=_id)
def test_ptxas_rejects_what_the_case_annotates(ptxas, path, tmp_path):
    text = path.read_text(encoding="utf-8")
    version = re.search(r"^\.version (\S+)$", text, re.M).group(1)
    target = re.search(r"^\.target (\S+)$", text, re.M).group(1)
    if isa.parse_version(version) > ptxas.max_ptx_isa:
        pytest.skip(f"{ptxas.describe()} predates .version {version}")
    src = tmp_path / path.name
    src.write_text(text)
    # ptxas 13 assembles for sm_75 and later; the .target check does not depend on -arch.
    arch = target if isa.sm_number(target) >= 75 else "sm_75"
    proc = subprocess.run(
        [ptxas.path, f"-arch={arch}", str(src), "-o", "/dev/null"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    for e in read_expectations(text):
        assert f"line {e.line + 1};" in proc.stderr, proc.stderr


# ---- the reader of the annotations: a wrong expectation is caught, not ignored


def test_check_fails_on_a_missing_a_wrong_and_an_extra_problem():
    text = (CASES / "lints" / "branch_to_unknown_label.ptx").read_text(encoding="utf-8")
    (right,) = read_expectations(text)
    assert right.cols is not None and right.texts == ("DONEE",)
    wrong_cols = Expect(right.line, "error", "unknown-label", (), (right.cols[0] + 1, 99))
    for expect in ([], [wrong_cols], [right, right]):
        with pytest.raises(AssertionError):
            check(text, expect)
    check(text, [right])


def test_every_case_file_says_what_it_is():
    for path in FILES[:-1]:
        assert path.read_text(encoding="utf-8").startswith("// case: "), path
