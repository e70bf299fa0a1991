"""What the lowering loop needs of its two pluggable parts, as types mypy checks.

- ``ChatClient``: anything with ``LlmClient.chat``'s signature (``llm_client.LlmClient``, the
  evaluation's rate-limited and replaying clients, a test's double). The loop passes every
  keyword; a client that has no use for one (``deadline``) still takes it.
- ``Verifier``: the step after ptxas, ``(ptx, kernel, candidate=...) -> VerifyResult``
  (``verify.gpu_verifier``, ``verify.compile_only_verifier``, a test's double). ``candidate`` is
  what the loop's one ptxas run made of the PTX (the parse, the cubin); a verifier that has no
  use for it ignores it. One that loads the loop's cubin instead of assembling again says so
  with ``wants_cubin = True`` (``CubinVerifier``), and the loop keeps the cubin for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .llm_client import ChatReply
    from .verify import Candidate, VerifyResult


class ChatClient(Protocol):
    async def chat(
        self,
        messages: list[dict[str, str]],
        *,
        seed: int | None = None,
        temperature: float | None = None,
        on_text: Callable[[int], None] | None = None,
        on_retry: Callable[[str, float], None] | None = None,
        deadline: float | None = None,
    ) -> ChatReply: ...


class Verifier(Protocol):
    async def __call__(
        self, ptx: str, kernel: str, *, candidate: Candidate | None = None
    ) -> VerifyResult: ...


@runtime_checkable
class CubinVerifier(Protocol):
    """A verifier that runs the cubin of the loop's ptxas run (``Candidate.cubin``)."""

    wants_cubin: Literal[True]


def wants_cubin(verifier: object) -> bool:
    return isinstance(verifier, CubinVerifier) and verifier.wants_cubin
