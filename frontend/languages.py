"""The one table of which languages ptxls reads, by editor language id or file extension:
the server's checkers and the CLI's commands choose by it (a README.md is none of them)."""

from __future__ import annotations

PTX = "ptx"
CUDA = "cuda"
PYTHON = "python"

BY_LANGUAGE_ID = {"ptx": PTX, "cuda-cpp": CUDA, "cuda": CUDA, "python": PYTHON}
BY_EXTENSION = {".ptx": PTX, ".cu": CUDA, ".cuh": CUDA, ".py": PYTHON}


def language_of(path_or_uri: str, language_id: str | None = None) -> str | None:
    """PTX, CUDA, PYTHON, or None for a file ptxls does not read."""
    if language_id and language_id in BY_LANGUAGE_ID:
        return BY_LANGUAGE_ID[language_id]
    path = path_or_uri.split("?", 1)[0].lower()
    for ext, lang in BY_EXTENSION.items():
        if path.endswith(ext):
            return lang
    return None


def extensions(*languages: str) -> str:
    """'.ptx, .cu, .cuh' for the given languages, for messages."""
    return ", ".join(ext for ext, lang in BY_EXTENSION.items() if lang in languages)
