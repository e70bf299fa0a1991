"""The run directory: one JSON record per sample, written atomically, so a run that is stopped
(Ctrl+C, a lost machine) resumes where it stopped and a finished one can be scored again.

    RUN/run.json                      what was asked: tasks, samples, settings (no API key)
    RUN/samples/<task>/<row>-<i>.json one sample's verdict (row: llm, nvcc or triton)
    RUN/sources/<task>/<file>         the source the model was given (a copy)
    RUN/baselines/<task>.<row>.ptx    the compilers' PTX that was tested
    RUN/.ptxls/transcripts/*.jsonl    every request, reply and tool output of each sample
    RUN/results.json                  the scores (rewritten at the end of every run)
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROWS = ("llm", "nvcc", "triton")
CATEGORIES = (
    "ptxas-error",
    "interface",
    "wrong-result",
    "race-or-oob",
    "timeout",
    "refusal",
    "truncation",
    "endpoint-error",
    "not-run",
)


@dataclass
class SampleRecord:
    task: str
    row: str  # "llm" (the model through the loop) or a compiler baseline: "nvcc", "triton"
    sample: int
    family: str = ""
    passed: bool = False
    verified: str = "none"  # "gpu", "emulator", "compile-only" (ptxas and interface only), "none"
    category: str = ""  # why it failed (CATEGORIES); "" when it passed
    message: str = ""
    rounds: int = 0  # rounds of the candidate that passed (llm rows)
    kernel_ms: float | None = None  # the candidate at the spec's largest size, GPU only
    reference_ms: float | None = None  # nvcc -O3 of reference.cu (Triton: the Triton kernel)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    requests: int = 0
    retries: int = 0  # requests retried (429, dropped streams, 5xx)
    usage_missing: int = 0  # replies that reported no token usage (streamed, without usage)
    wall_s: float = 0.0
    transcript: str = ""  # relative to the run directory
    ptx: str = ""  # relative path of the PTX that was tested (baselines)
    device: str = ""  # the GPU's name, or "CPU emulator"
    extra: dict = field(default_factory=dict)

    @property
    def speedup(self) -> float | None:
        """nvcc's (or Triton's) time over the candidate's, on the same GPU in the same test."""
        if self.passed and self.verified == "gpu" and self.kernel_ms and self.reference_ms:
            return self.reference_ms / self.kernel_ms
        return None

    def to_json(self) -> dict:
        return asdict(self) | {"speedup": self.speedup}

    @classmethod
    def from_json(cls, d: dict) -> SampleRecord:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})


def write_json_atomic(path: Path, data) -> None:
    """Write to a temporary file beside ``path`` and rename it over: a reader (or a resumed run)
    sees the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, ensure_ascii=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with _suppress():
            os.unlink(tmp)
        raise


class _suppress:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return exc[0] is not None and issubclass(exc[0], OSError)


class RunDir:
    def __init__(self, path: Path):
        self.path = Path(path)

    def record_path(self, task: str, row: str, sample: int) -> Path:
        return self.path / "samples" / task / f"{row}-{sample}.json"

    def has(self, task: str, row: str, sample: int) -> bool:
        return self.record_path(task, row, sample).is_file()

    def write(self, rec: SampleRecord) -> None:
        write_json_atomic(self.record_path(rec.task, rec.row, rec.sample), rec.to_json())

    def records(self) -> list[SampleRecord]:
        out = []
        for p in sorted((self.path / "samples").glob("*/*.json")):
            try:
                out.append(SampleRecord.from_json(json.loads(p.read_text(encoding="utf-8"))))
            except (OSError, ValueError, TypeError):
                continue  # a record from another version, or a torn copy: re-run it
        return out

    def read_config(self) -> dict | None:
        try:
            return json.loads((self.path / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def write_config(self, config: dict) -> None:
        write_json_atomic(self.path / "run.json", config)

    def relative(self, p: Path | str | None) -> str:
        if not p:
            return ""
        try:
            return str(Path(p).resolve().relative_to(self.path.resolve()))
        except ValueError:
            return str(p)
