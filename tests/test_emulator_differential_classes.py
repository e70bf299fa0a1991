"""bench/emulator_differential.py compares the emulator's and the GPU's ``ptxls test`` verdicts
by class (issue 18, item 3): pass; wrong element (the same case and element); memory fault (the
same case); race (both fail the same case: a race's values are undefined by the ISA, so the
GPU's wrong element cannot be required). Each rule is checked with the verdicts of real runs
(the H200's side as bench/results/emulator-differential recorded it) and with the ways it must
still say DIFFERENT."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "emulator-differential"
# the run before the classes: the old emulator failed uninit_read and skips_when_done on their
# read of a poisoned output, which the GPU passes
BEFORE = RESULTS / "h200-2026-12-04-head.json"


@pytest.fixture(scope="module")
def diff():
    spec = importlib.util.spec_from_file_location(
        "emu_diff", ROOT / "bench" / "emulator_differential.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def rows():
    return {r["name"]: r for r in json.loads(BEFORE.read_text())["rows"]}


def _verdict(status="pass", case=None, first=None, summary="", findings=(), warnings=()):
    cases = {0: status == "pass"} if case is None else {0: False}
    return {"status": status, "failing_case": case, "first_wrong": first, "cases": cases,
            "summary": summary, "findings": list(findings), "case_findings": list(findings),
            "warnings": list(warnings)}  # fmt: skip


def _row(e, g):
    detail = (e["status"], e["failing_case"], e["first_wrong"]) == (
        g["status"], g["failing_case"], g["first_wrong"])  # fmt: skip
    return {"emulator": e, "gpu": g, "verdict_agrees": detail, "detail_agrees": detail}


def test_the_racy_swap_agrees_as_a_race_in_its_failing_case(diff, rows):
    r = rows["planted/missing_barrier:swap_warps_no_barrier"]
    assert r["gpu"]["first_wrong"] == "y[0]" and r["emulator"]["findings"] == ["shared-race"]
    agrees, said = diff.compare(r)
    assert agrees and "race: values undefined by the ISA" in said
    assert diff.row_class(r) == "fail, race: values undefined by the ISA (n=256)"


def test_a_race_in_another_case_than_the_gpu_fails_is_different(diff, rows):
    r = copy.deepcopy(rows["planted/missing_barrier:swap_warps_no_barrier"])
    r["gpu"]["failing_case"] = 1024
    assert diff.compare(r) == (False, "**DIFFERENT**")
    r["gpu"].update(status="pass", failing_case=None, first_wrong=None)
    assert diff.compare(r) == (False, "**DIFFERENT**")


def test_a_gpu_fault_and_the_emulators_named_access_are_one_memory_fault(diff, rows):
    for name in ("planted/shared_oob:index_scaled_twice", "planted/shared_oob:stencil_no_halo",
                 "wrong/off_by_one"):  # fmt: skip
        r = rows[name]
        assert (
            diff.verdict_class(r["emulator"])[0]
            == diff.verdict_class(r["gpu"])[0]
            == "memory fault"
        )
        assert diff.compare(r)[0], name
    r = rows["planted/shared_oob:index_scaled_twice"]
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in diff.compare(r)[1]
    # the emulator's wrong element stays in its own column, not in the class
    assert r["emulator"]["first_wrong"] == "y[64]" and diff.row_class(r) == "memory fault (n=256)"


def test_a_fault_in_another_case_or_against_a_wrong_element_is_different(diff):
    fault = _verdict("fail", 256, findings=["out-of-bounds"])
    gpu_fault = _verdict("fail", 1024, summary="case n=1024: CUDA_ERROR_ILLEGAL_ADDRESS (...)")
    assert diff.compare(_row(fault, gpu_fault)) == (False, "**DIFFERENT**")
    wrong = _verdict("fail", 256, first="y[3]", summary="case n=256: y: 1 of 256 wrong")
    assert diff.compare(_row(fault, wrong)) == (False, "**DIFFERENT**")


def test_wrong_elements_must_be_the_same_element(diff, rows):
    r = rows["wrong/block_256_assumed"]
    assert diff.compare(r) == (True, "same")
    r = copy.deepcopy(r)
    r["emulator"]["first_wrong"] = "c[1665]"
    r["verdict_agrees"] = r["detail_agrees"] = False
    assert diff.compare(r) == (False, "**DIFFERENT**")


def test_an_emulator_only_warning_changes_no_class(diff):
    warned = _verdict(warnings=["uninitialized-global"])
    assert diff.verdict_class(warned) == ("pass",)
    assert diff.compare(_row(warned, _verdict())) == (True, "same")


def test_the_run_before_the_warnings_still_shows_its_two_differences(diff, rows):
    """The H200 run at the old policy: rendered again, the two poisoned-output reads are the
    only rows that differ (the emulator failed them; they are warnings now)."""
    different = sorted(n for n, r in rows.items() if not diff.compare(r)[0])
    assert different == ["cheaters/skips_when_done", "planted/uninit_read"]
    meta = json.loads(BEFORE.read_text())["meta"]
    text = diff.markdown(list(rows.values()), meta)
    assert f"Verdicts the same by class: {len(rows) - 2}/{len(rows)}" in text


def test_the_h200_run_by_class_agrees_in_every_row_and_keeps_the_detail(diff):
    """The run after the warnings (bench/results/emulator-differential/h200-2026-12-04-classes):
    every row the same by class, and the two whose detail the ISA leaves open still differ
    in detail."""
    data = json.loads((RESULTS / "h200-2026-12-04-classes.json").read_text())
    assert data["meta"]["device"] == "NVIDIA H200"
    rows = {r["name"]: r for r in data["rows"]}
    assert all(diff.compare(r)[0] for r in rows.values())
    assert sorted(n for n, r in rows.items() if not r["detail_agrees"]) == [
        "planted/missing_barrier:swap_warps_no_barrier",
        "planted/shared_oob:index_scaled_twice",
    ]
    assert rows["planted/uninit_read"]["emulator"]["warnings"] == ["uninitialized-global"]
