"""A chat reply read from its bytes: a whole JSON completion or a server-sent event stream.

Read the way real endpoints send it: within the size cap, with the silence timeout on a
stream, a stream that finished without ``[DONE]`` accepted after a short grace, keep-alive
comments not counted as progress, errors inside a 200 or inside the stream raised as ``Broken``
(retried like a 5xx), and the answer taken from content, tool-call arguments or a refusal, the
reasoning kept apart.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .llm_errors import Broken, LlmError, TooLong, short

if TYPE_CHECKING:
    from .settings import LlmSettings

# a stream that sent finish_reason but neither [DONE] nor a close: how long to wait for them
FINISHED_STREAM_GRACE_S = 2.0


@dataclass
class Reading:
    """A reply being assembled from a plain JSON body or from SSE chunks."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    chars: int = 0
    finish: str | None = None
    model: str | None = None
    usage: dict | None = None
    tool_call: bool = False  # the text came from tool-call arguments
    unterminated: bool = False  # a stream that finished without [DONE] or a close


def content_text(value) -> str:
    """A message's content: a string, or a list of parts (``{"type": "text", "text": …}``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(
            p.get("text", "") if isinstance(p, dict) and isinstance(p.get("text"), str) else ""
            for p in value
        )
    return ""


def tool_arguments(calls, streamed: bool = False) -> str:
    """The arguments of a message's tool calls (OpenAI's ``tool_calls[].function.arguments``),
    joined: a model that answers through a tool puts its PTX there, often as a JSON string."""
    if not isinstance(calls, list):
        return ""
    parts = []
    for call in calls[:16]:
        fn = call.get("function") if isinstance(call, dict) else None
        args = fn.get("arguments") if isinstance(fn, dict) else None
        if isinstance(args, str):
            parts.append(args)
        elif isinstance(args, dict):
            parts.append(json.dumps(args))
    return "".join(parts) if streamed else "\n".join(parts)


def reasoning_text(message: dict) -> str:
    for key in ("reasoning_content", "reasoning", "thinking"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


async def read_body(
    raw, ctype: str, reading: Reading, on_text, deadline, *, endpoint: str, settings: LlmSettings
) -> bytes | None:
    """Read the body within the limits. Returns the bytes of a plain JSON body, or None
    when it was an SSE stream (then ``reading`` holds the reply)."""
    s = settings
    cap_chars = s.max_reply_chars
    # a JSON body escapes characters (\\uXXXX: 6 bytes) and wraps them in an envelope
    cap_bytes = cap_chars * 6 + 65536
    declared = raw.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > cap_bytes:
        raise TooLong(LlmError(
            "too_long",
            f"{endpoint} sent a reply of {int(declared)} bytes, over the limit of "
            f"{cap_chars} characters (ptxls.llm.maxReplyChars); not read",
        ))  # fmt: skip
    chunks: list[bytes] = []
    size = 0
    sse: SseReader | None = None
    iterator = raw.iter_bytes().__aiter__()
    heard = 0  # data lines so far: keep-alive comments (": PROCESSING") are not progress
    while True:
        if sse is not None and sse.data_lines > heard:
            # a stream: the timeout is on silence, not on the whole reply
            heard = sse.data_lines
            deadline.reschedule(asyncio.get_running_loop().time() + s.timeout_s)
        try:
            if sse is not None and reading.finish:
                # finished (finish_reason sent): [DONE] or the close should follow at once;
                # a server that sends neither has still sent the whole reply
                chunk = await asyncio.wait_for(iterator.__anext__(), FINISHED_STREAM_GRACE_S)
            else:
                chunk = await iterator.__anext__()
        except StopAsyncIteration:
            break
        except TimeoutError:
            if sse is not None and reading.finish:
                reading.unterminated = True
                break
            raise
        except asyncio.CancelledError:
            raise
        except Exception as e:  # the HTTP library's read errors, after the SDK let go
            if "timeout" in type(e).__name__.lower():
                raise TimeoutError from e
            raise Broken(f"the reply broke off ({type(e).__name__}: {short(e)})") from e
        size += len(chunk)
        if size > cap_bytes:
            raise TooLong(too_long_error(endpoint, size, cap_chars))
        if sse is None and not chunks:
            head = chunk.lstrip()[:5]
            if "text/event-stream" in ctype or head.startswith((b"data:", b"event", b":")):
                sse = SseReader(endpoint)
        if sse is None:
            chunks.append(chunk)
            continue
        for event in sse.feed(chunk):
            take_chunk(event, reading)
            if reading.chars > cap_chars:
                raise TooLong(too_long_error(endpoint, reading.chars, cap_chars, chars=True))
            if on_text and reading.text:
                on_text(reading.chars)
        if sse.done:
            break
    if sse is not None:
        for event in sse.feed(b"\n\n"):
            take_chunk(event, reading)
        if not sse.events and not sse.done:
            raise bad_reply(endpoint, "a stream with no data events", sse.first_line)
        return None
    return b"".join(chunks)


def too_long_error(endpoint: str, n: int, max_chars: int, chars: bool = False) -> LlmError:
    unit = "characters" if chars else "bytes"
    return LlmError(
        "too_long",
        f"{endpoint} sent more than {n} {unit}, over the limit of "
        f"{max_chars} characters per reply (ptxls.llm.maxReplyChars); "
        "stopped reading",
    )


def bad_reply(endpoint: str, what: str, sample: str, hint: str = "") -> LlmError:
    sample = sample.strip().replace("\n", " ")[:200]
    hint = hint or "is the base URL an OpenAI-compatible /v1 endpoint?"
    return LlmError("bad_reply", f"{endpoint} sent {what} (starts: {sample!r}); {hint}")


def parse_plain(body: bytes, reading: Reading, *, endpoint: str, max_chars: int) -> None:
    """A whole (not streamed) JSON body into ``reading``; LlmError / Broken / TooLong."""
    try:
        data = json.loads(body.decode("utf-8", errors="replace"))
    except json.JSONDecodeError as e:
        raise bad_reply(
            endpoint,
            f"a reply that is not valid JSON ({e.msg} at byte {e.pos})",
            body[:200].decode("utf-8", errors="replace"),
        ) from None
    if not isinstance(data, dict):
        raise bad_reply(endpoint, "JSON that is not a chat completion", json.dumps(data)[:200])
    if data.get("error") not in (None, "", {}):
        # OpenRouter documents this for failures after generation started: retried
        from .endpoint_errors import error_fields

        raise Broken(f"HTTP 200 with an error: {error_fields(data).message[:300]}")
    choices = data.get("choices")
    if not isinstance(choices, list):
        raise bad_reply(endpoint, "JSON without 'choices'", json.dumps(data)[:200])
    reading.model = data.get("model") if isinstance(data.get("model"), str) else None
    reading.usage = data.get("usage") if isinstance(data.get("usage"), dict) else None
    if not choices:
        # not an empty answer: the server produced no completion at all (a filtered
        # prompt, an overloaded proxy); saying "empty reply" would blame the model
        raise bad_reply(
            endpoint,
            "a completion with no choices",
            json.dumps(data)[:200],
            "the server produced no answer at all (a filtered prompt or an overloaded "
            "server); try again or another model",
        )
    choice: dict = choices[0] if isinstance(choices[0], dict) else {}
    found = choice.get("message")
    message: dict = found if isinstance(found, dict) else {}
    text = content_text(message.get("content"))
    if not text:  # a tool call: its arguments are read like content
        text = tool_arguments(message.get("tool_calls"))
        if text:
            reading.tool_call = True
    if not text and isinstance(message.get("refusal"), str):
        # OpenAI's structured refusal: content null, the model's words in "refusal"
        text = message["refusal"]
    if not text and isinstance(choice.get("text"), str):  # completions-style servers
        text = choice["text"]
    reasoning = reasoning_text(message)
    reading.text, reading.reasoning = [text], [reasoning]
    reading.chars = len(text) + len(reasoning)
    reading.finish = choice.get("finish_reason")
    if reading.finish == "error":
        raise Broken("the endpoint ended the reply with finish_reason 'error'")
    if reading.chars > max_chars:
        raise TooLong(too_long_error(endpoint, reading.chars, max_chars, chars=True))


def take_chunk(data, reading: Reading) -> None:
    """One streamed chunk (already parsed JSON) into ``reading``."""
    if not isinstance(data, dict):
        return
    if data.get("error") not in (None, "", {}):
        from .endpoint_errors import error_fields

        raise Broken(f"an error in the stream: {error_fields(data).message[:300]}")
    if isinstance(data.get("model"), str) and data["model"]:
        reading.model = data["model"]
    if isinstance(data.get("usage"), dict):
        reading.usage = data["usage"]
    for choice in data.get("choices") or []:
        if not isinstance(choice, dict):
            continue
        found = choice.get("delta")
        if not isinstance(found, dict):
            found = choice.get("message")
        delta: dict = found if isinstance(found, dict) else {}
        piece = content_text(delta.get("content")) or (
            delta["refusal"] if isinstance(delta.get("refusal"), str) else ""
        )
        if not piece and delta.get("tool_calls"):  # streamed tool-call arguments
            piece = tool_arguments(delta["tool_calls"], streamed=True)
            reading.tool_call = reading.tool_call or bool(piece)
        thought = reasoning_text(delta)
        if piece:
            reading.text.append(piece)
        if thought:
            reading.reasoning.append(thought)
        reading.chars += len(piece) + len(thought)
        if choice.get("finish_reason"):
            reading.finish = choice["finish_reason"]
            if reading.finish == "error":
                raise Broken("the stream ended with finish_reason 'error'")


class SseReader:
    """Server-sent events from byte chunks: yields each ``data:`` payload parsed as JSON.
    Lines are split as they arrive (bytes kept only up to the last newline), so reading is
    linear in the stream's size."""

    def __init__(self, endpoint: str):
        self.endpoint = endpoint
        self.done = False
        self._pending = b""
        self._data: list[bytes] = []
        self.events = 0
        self.data_lines = 0  # "data:" lines seen: what counts as the stream making progress
        self.first_line = ""  # for the message when nothing in the stream is an event

    def feed(self, chunk: bytes):
        buf = self._pending + chunk
        lines = buf.split(b"\n")
        self._pending = lines.pop()
        for line in lines:
            line = line.rstrip(b"\r")
            if not self.first_line and line.strip():
                self.first_line = line[:200].decode("utf-8", errors="replace")
            if not line:
                if self._data:
                    payload, self._data = b"\n".join(self._data), []
                    event = self._event(payload)
                    if event is not None:
                        yield event
                continue
            if line.startswith(b"data:"):
                self.data_lines += 1
                value = line[5:]
                if value.startswith(b" "):
                    value = value[1:]
                self._data.append(value)
            # "event:", "id:", "retry:" and ":" comments carry nothing we use

    def _event(self, payload: bytes):
        if payload.strip() == b"[DONE]":
            self.done = True
            return None
        self.events += 1
        try:
            return json.loads(payload.decode("utf-8", errors="replace"))
        except json.JSONDecodeError as e:
            raise LlmError(
                "bad_reply",
                f"{self.endpoint} sent a stream chunk that is not valid JSON ({e.msg}; starts: "
                f"{payload[:120].decode('utf-8', errors='replace')!r})",
            ) from None
