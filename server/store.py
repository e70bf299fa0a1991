"""Diagnostics keyed by (uri, producer), merged into one publish per document.

Producers ("ptx-check", "cuda-check", "gpu-test") each own their slice; publishing a document
sends every slice together with the version the slices were computed for.
"""

from __future__ import annotations

from lsprotocol import types


class DiagnosticStore:
    def __init__(self) -> None:
        self._slices: dict[str, dict[str, list[types.Diagnostic]]] = {}

    def set(self, uri: str, producer: str, diagnostics: list[types.Diagnostic]) -> None:
        self._slices.setdefault(uri, {})[producer] = list(diagnostics)

    def all(self, uri: str) -> list[types.Diagnostic]:
        return [d for slice_ in self._slices.get(uri, {}).values() for d in slice_]

    def clear(self, uri: str) -> None:
        self._slices.pop(uri, None)
