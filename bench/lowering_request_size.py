"""Request size and the loop's own cost per round, across 5 rounds of a model that never gets it
right (CPU; the "model" is the scripted server on loopback answering instantly).

    .venv/bin/python bench/lowering_request_size.py

Two models:
- "stuck": the same broken PTX every round. The loop changes tack after the second identical
  failure (a fresh conversation) and stops after the third, naming why.
- "wandering": a different mistake each round, so all 5 rounds run as repairs.

For each round: the characters sent (all messages of the request), the transcript bytes that
round added, and the loop's own time (everything but the model). The requests must stay flat:
each one is the task + the latest attempt + its feedback. For comparison, "whole_history_chars"
is what the same round would have sent had every earlier attempt and feedback been kept (the
loop before issue 8). Exits 1 when a repair request is more than 10 % larger than the first.
Writes bench/results/lowering-request-size/<machine>-<date>.json.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from lowering_common import ROOT, machine, run
from machine import result_path


async def one(model: str) -> dict:
    from ptxls.fewshot.retrieve import pick_examples
    from ptxls.lowering.llm_client import LlmClient
    from ptxls.lowering.loop import LoopOptions, run_loop
    from ptxls.lowering.settings import LlmSettings
    from ptxls.lowering.sources import cuda_kernels
    from ptxls.lowering.transcript import Transcript

    from scripted_llm import BROKEN_LINE, BROKEN_VEC_ADD, ScriptedLLM, Step, fenced

    src = cuda_kernels((ROOT / "examples" / "vec_add.cu").read_text())[0]
    if model == "stuck":
        script = [Step(fenced(BROKEN_VEC_ADD))] * 5
    else:
        ops = ["add", "sub", "mul", "min", "max"]
        script = [
            Step(fenced(BROKEN_VEC_ADD.replace(BROKEN_LINE, BROKEN_LINE.replace("add", op))))
            for op in ops
        ]
    with ScriptedLLM(script) as server, tempfile.TemporaryDirectory() as tmp:
        s = LlmSettings(base_url=server.base_url, api_key="sk-bench-000000", model="scripted-model")
        client = LlmClient(s)
        transcript = Transcript.create(Path(tmp), f"bench-{model}", [s.api_key])
        marks: list[int] = []  # transcript size when each request is recorded
        orig_record = transcript.record

        def record(kind, **data):
            if kind == "request":
                marks.append(transcript.bytes_written)
            return orig_record(kind, **data)

        transcript.record = record
        t0 = time.monotonic()
        result = await run_loop(
            src,
            client=client,
            examples=pick_examples(src.text, 2),
            opts=LoopOptions(candidates=1, rounds=5),
            transcript=transcript,
        )
        wall = time.monotonic() - t0
        await client.aclose()
        total_bytes = transcript.bytes_written
    seen = server.chat_requests
    chars = [sum(len(m["content"]) for m in r.body["messages"]) for r in seen]
    # what the same rounds would have sent with the whole history kept (approximate: each
    # round's attempt + feedback appended to the first request)
    tails = [sum(len(m["content"]) for m in r.body["messages"][2:]) for r in seen]
    grown = [chars[0] + sum(tails[1 : i + 1]) for i in range(len(seen))]
    rounds = result.candidates[0].rounds
    ends = marks[1:] + [total_bytes]
    per_round_bytes = [b - a for a, b in zip(marks, ends, strict=True)]
    return {
        "model": model,
        "requests": len(seen),
        "stop": result.candidates[0].error,
        "rounds": [
            {
                "round": r.round,
                "fresh_start": r.fresh_start,
                "request_chars": chars[i],
                "whole_history_chars": grown[i],
                "transcript_bytes_added": per_round_bytes[i] if i < len(per_round_bytes) else None,
                "loop_own_ms": round(max(r.total_s - r.llm_s, 0.0) * 1000, 2),
                "model_ms": round(r.llm_s * 1000, 2),
                "summary": r.summary,
            }
            for i, r in enumerate(rounds)
        ],
        "transcript_bytes": total_bytes,
        "wall_s": round(wall, 3),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(result_path("lowering-request-size", "json")))
    args = ap.parse_args()
    results = [run(one("stuck")), run(one("wandering"))]
    out = {"machine": machine(), "runs": results}
    ok = True
    for res in results:
        print(f"\n{res['model']}: {res['requests']} requests; stop: {res['stop']}")
        print("  round  fresh  request chars  whole-history chars  transcript +bytes  loop ms")
        first_repair = None
        for r in res["rounds"]:
            print(
                f"  {r['round']:>5}  {'yes' if r['fresh_start'] else '   ':>5}  "
                f"{r['request_chars']:>13}  {r['whole_history_chars']:>19}  "
                f"{r['transcript_bytes_added'] or 0:>17}  {r['loop_own_ms']:>7}"
            )
            if r["round"] > 1 and not r["fresh_start"]:
                first_repair = first_repair or r["request_chars"]
                if r["request_chars"] > first_repair * 1.10:
                    ok = False
    text = json.dumps(out, indent=2)
    Path(args.out).write_text(text + "\n")
    print(f"\nwrote {args.out}; flat: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
