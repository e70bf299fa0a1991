"""Feature registration: each module has ``register(server)``; optional ones may be absent."""

from __future__ import annotations

import importlib
import logging

log = logging.getLogger("ptxls")

# Order matters only for hover/code-lens providers: earlier ones answer first.
_REQUIRED = [
    "key_scrub",
    "core",
    "ptx_diagnostics",
    "cuda_diagnostics",
    "status",
    "ptx_navigation",
    "show_ptx",
]
_OPTIONAL = ["gputest_feature", "lowering_feature", "library_feature"]


def register_all(server) -> None:  # noqa: ANN001
    for name in _REQUIRED:
        importlib.import_module(f"{__name__}.{name}").register(server)
    for name in _OPTIONAL:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name and e.name.endswith(name):
                continue  # that feature is not part of this build
            raise
        module.register(server)
