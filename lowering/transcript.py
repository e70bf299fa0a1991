"""A JSONL record of one lowering: every request, reply and tool output, in order.

Written under ``<workspace>/.ptxls/transcripts/`` so a result can be audited ("what did the
model see, what did ptxas say in round 3?") and replayed (``replay``: the recorded replies go
through today's extraction and ptxas again, no model needed).

Sized linearly: the long, fixed part of a conversation (system rules, examples, the task) is
recorded once per conversation (kind ``prompt``); each ``request`` record then carries only what
changed since (the latest attempt and its feedback), each ``reply`` its text once.

Secrets never reach the file: every string goes through ``toolchain.secrets.scrub`` (the API key,
anything shaped like a key or bearer token), header-like keys are redacted, and headers are never
recorded at all. The file is created with no-follow semantics inside its root (``safe_write``).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path

from ptxls.toolchain.secrets import REDACTED, scrub

from . import safe_write

TRANSCRIPTS_DIR = Path(".ptxls") / "transcripts"
_AUTH_KEYS = {"authorization", "api_key", "api-key", "apikey", "x-api-key"}


def _scrub(value, secrets: tuple[str, ...]):
    if isinstance(value, str):
        for s in secrets:
            value = value.replace(s, REDACTED)
        return scrub(value)
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
        self.bytes_written = 0
        self.write_error = ""  # set once when the file could not be written (the loop goes on)
        if path is not None and not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()

    @classmethod
    def create(cls, root: Path, label: str, secrets: Iterable[str | None] = ()) -> Transcript:
        """A new transcript file under ``root/.ptxls/transcripts``, created without following
        links and refused outside ``root`` (then the records stay in memory, and say why)."""
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        folder = Path(root) / TRANSCRIPTS_DIR
        for n in range(1, 1000):
            suffix = "" if n == 1 else f"-{n}"
            path = folder / f"{stamp}-{_slug(label)}-{os.getpid()}{suffix}.jsonl"
            try:
                created = safe_write.create_new(path, root=root)
            except FileExistsError:
                continue
            except (safe_write.UnsafeWrite, OSError) as e:
                t = cls(None, secrets)
                t.write_error = f"transcript not written: {e}"
                return t
            t = cls(None, secrets)
            t.path = created
            return t
        t = cls(None, secrets)
        t.write_error = f"transcript not written: no free name in {folder}"
        return t

    def record(self, kind: str, **data) -> dict:
        rec = {"t": _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds"), "kind": kind}
        rec.update(_scrub(data, self._secrets))
        with self._lock:
            self.records.append(rec)
            if self.path is not None and not self.write_error:
                line = json.dumps(rec, ensure_ascii=False) + "\n"
                try:
                    safe_write.append_text(self.path, line)
                    self.bytes_written += len(line.encode("utf-8"))
                except (safe_write.UnsafeWrite, OSError) as e:
                    self.write_error = f"transcript {self.path} no longer written: {e}"
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
