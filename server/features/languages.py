"""Which checker a document gets, by language id or, failing that, by file extension."""

from __future__ import annotations

PTX = "ptx"
CUDA = "cuda"
PYTHON = "python"

_BY_LANGUAGE_ID = {"ptx": PTX, "cuda-cpp": CUDA, "cuda": CUDA, "python": PYTHON}
_BY_EXTENSION = {".ptx": PTX, ".cu": CUDA, ".cuh": CUDA, ".py": PYTHON}


def language_of(uri: str, language_id: str | None) -> str | None:
    if language_id and language_id in _BY_LANGUAGE_ID:
        return _BY_LANGUAGE_ID[language_id]
    path = uri.split("?", 1)[0].lower()
    for ext, lang in _BY_EXTENSION.items():
        if path.endswith(ext):
            return lang
    return None
