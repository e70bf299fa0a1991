"""The lowering loop's racecheck on the H200, through the real CLI and a scripted endpoint:

    python3 bench/race_check_loop.py

``ptxls lower swap_lanes.cu`` (tests/data/sanitizer/swap_lanes.cu: neighbouring lanes of a warp
swap values through shared memory) against the scripted OpenAI-compatible server: round 1
answers the PTX without its barrier (the warp runs converged, so the numbers pass), round 2 the
PTX with it. Checks: round 1 is failed by racecheck
(not by the GPU test), the second request carries the race (both PTX lines with their text and
the shared address), round 2 passes with "racecheck: no race", exit 0. Without a GPU it says
so and checks that the race check was skipped with its reason (exit 2).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from scripted_llm import ScriptedLLM, Step, fenced  # noqa: E402

DATA = ROOT / "tests" / "data" / "sanitizer"


def kernels() -> tuple[str, str]:
    """The racy and the fixed PTX as entry 'swap_lanes': the planted swap_warps kernels with the
    partner lane tid ^ 1 (same warp) instead of tid ^ 32 (another warp, where the race shows in
    the numbers on the H200 and the GPU test would catch it before racecheck)."""
    text = (DATA / "planted" / "missing_barrier.ptx").read_text()
    header = text[: text.index("// @gputest")]
    racy_start = text.index(".visible .entry swap_warps_no_barrier(")
    fixed_start = text.index("// @gputest", racy_start)
    racy = text[racy_start:fixed_start].replace("swap_warps_no_barrier", "swap_lanes")
    fixed = text[text.index(".visible .entry swap_warps(") :].replace("swap_warps", "swap_lanes")
    head = "\n".join(ln for ln in header.splitlines() if not ln.startswith("//"))
    lanes = [k.replace("%r2, 32;", "%r2, 1;") for k in (racy, fixed)]
    assert all("%r2, 1;" in k for k in lanes)
    return f"{head}\n{lanes[0]}", f"{head}\n{lanes[1]}"


def main() -> int:
    racy, fixed = kernels()
    work = Path(tempfile.mkdtemp(prefix="ptxls-race-loop-"))
    (work / "swap_lanes.cu").write_text((DATA / "swap_lanes.cu").read_text())
    with ScriptedLLM([Step(fenced(racy)), Step(fenced(fixed))]) as llm:
        env = dict(os.environ, OPENAI_BASE_URL=llm.base_url, PTXLS_MODEL="scripted-model",
                   PTXLS_LLM_RETRY_BACKOFF="0.01")  # fmt: skip
        env.pop("OPENAI_API_KEY", None)
        p = subprocess.run(
            [sys.executable, "-m", "ptxls.cli.main", "lower", "swap_lanes.cu", "--candidates",
             "1", "--rounds", "2"],
            capture_output=True, text=True, env=env, cwd=work, timeout=300,
        )  # fmt: skip
        requests = list(llm.requests)
    print(p.stdout[-3000:])
    print(p.stderr[-2000:])
    transcript = next((work / ".ptxls" / "transcripts").glob("*.jsonl"), None)
    records = [json.loads(x) for x in transcript.read_text().splitlines()] if transcript else []
    race_records = [
        r for r in records if r.get("kind") == "racecheck" or r.get("type") == "racecheck"
    ]
    print("racecheck records:", json.dumps(race_records, indent=1)[:3000])
    chats = [r for r in requests if r.path.endswith("/chat/completions")]
    second = json.dumps(chats[1].body) if len(chats) > 1 else ""
    feedback = re.findall(r"compute-sanitizer racecheck[^\"]*", second)
    print("the second request's race feedback:\n", (feedback[0] if feedback else "(none)")
          .replace("\\n", "\n")[:2000])  # fmt: skip
    checks = {
        "round 1 failed by racecheck": any(r.get("ok") is False for r in race_records),
        "the repair request names two PTX lines and the shared address": bool(feedback)
        and "st.shared.f32" in second
        and "ld.shared.f32" in second
        and "__shared__ 0x" in second,
        "round 2 passes with no race (exit 0)": p.returncode == 0
        and any(r.get("ok") and r.get("ran") for r in race_records),
    }
    no_gpu = "not GPU-tested" in p.stdout + p.stderr and not any(r.get("ran") for r in race_records)
    if no_gpu:
        skipped = any("racecheck skipped" in json.dumps(r) for r in records)
        print(f"no GPU: racecheck skipped with its reason: {skipped}")
        return 2 if skipped else 1
    for name, ok in checks.items():
        print(f"[{'PASS' if ok else 'FAIL'}] {name}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
