"""A JSONL record of one lowering: every request, reply and tool output, in order.

Written under ``<workspace>/.ptxls/transcripts/`` so a result can be audited ("what did the
model see, what did ptxas say in round 3?") and replayed (``replay``: the recorded replies go
through today's extraction and ptxas again, no model needed). Secrets never reach the file:
every string is scrubbed of the API key and of anything that looks like an ``Authorization``
header or a bearer token before it is written, and headers are never recorded at all.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path

TRANSCRIPTS_DIR = Path(".ptxls") / "transcripts"
REDACTED = "[redacted]"
_BEARER = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}")
_AUTH_KEYS = {"authorization", "api_key", "api-key", "apikey", "x-api-key"}


def _scrub(value, secrets: tuple[str, ...]):
    if isinstance(value, str):
        for s in secrets:
            value = value.replace(s, REDACTED)
        return _BEARER.sub(r"\1" + REDACTED, value)
    if isinstance(value, dict):
        return {
            k: (REDACTED if str(k).lower() in _AUTH_KEYS else _scrub(v, secrets))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_scrub(v, secrets) for v in value]
    return value


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:60] or "lowering"


class Transcript:
    """Append-only JSONL. ``path=None`` keeps records in memory only (tests, dry runs)."""

    def __init__(self, path: Path | None, secrets: Iterable[str | None] = ()):
        self.path = path
        # short strings would redact innocent text ("x"); a real key is long
        self._secrets = tuple(s for s in secrets if s and len(s) >= 6)
        self._lock = threading.Lock()
        self.records: list[dict] = []
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)

    @classmethod
    def create(cls, root: Path, label: str, secrets: Iterable[str | None] = ()) -> Transcript:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        folder = Path(root) / TRANSCRIPTS_DIR
        path = folder / f"{stamp}-{_slug(label)}-{os.getpid()}.jsonl"
        n = 1
        while path.exists():
            n += 1
            path = folder / f"{stamp}-{_slug(label)}-{os.getpid()}-{n}.jsonl"
        return cls(path, secrets)

    def record(self, kind: str, **data) -> dict:
        rec = {"t": _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds"), "kind": kind}
        rec.update(_scrub(data, self._secrets))
        with self._lock:
            self.records.append(rec)
            if self.path is not None:
                with self.path.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        return rec


def read(path: Path | str) -> list[dict]:
    """Records of a transcript; a torn last line (a crash mid-write) is skipped, not fatal."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out
