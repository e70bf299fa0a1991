"""The results document of a run (``results.json``, ``--out``): what was asked, how the tests
ran, the scores, and every sample's record — enough for ``--compare`` and the HTML report to
work from the file alone."""

from __future__ import annotations

import dataclasses
import platform
from pathlib import Path

from .metrics import DEFAULT_K, Pricing, summarize
from .records import RunDir, SampleRecord, write_json_atomic


def results_document(run: RunDir, records: list[SampleRecord], info, *,
                     ks: tuple[int, ...] = DEFAULT_K, pricing: Pricing | None = None,
                     fast_margin: float = 0.02) -> dict:  # fmt: skip
    pricing = pricing or Pricing()
    return {
        "format": "ptxls-eval/1",
        "run_dir": str(run.path),
        "config": run.read_config() or {},
        "info": dataclasses.asdict(info)
        if dataclasses.is_dataclass(info) and not isinstance(info, type)
        else dict(info or {}),
        "machine": {
            "host": platform.node(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },  # fmt: skip
        "pricing": dataclasses.asdict(pricing),
        "fast_margin": fast_margin,
        "summary": summarize(records, ks=ks, pricing=pricing, fast_margin=fast_margin),
        "records": [r.to_json() for r in records],
    }


def write_results(path: Path, doc: dict) -> None:
    write_json_atomic(Path(path), doc)
