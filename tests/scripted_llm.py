"""A scripted OpenAI-compatible server on loopback, for tests and benchmarks.

Real HTTP (``http.server`` in a thread): ``POST /v1/chat/completions`` (JSON, or SSE when the
request asks ``"stream": true``) and ``GET /v1/models``. Each request takes the next ``Step`` of
the script (or asks a responder function), so a test states exactly what the "model" says, which
status codes and delays happen, and then inspects what the client sent (``requests``). The code
under test talks to it through the real openai SDK and cannot tell it from a real endpoint.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Step:
    content: str = ""  # the assistant's reply
    status: int = 200
    delay: float = 0.0  # seconds before answering (a timeout test sets more than the client waits)
    headers: dict[str, str] = field(default_factory=dict)  # e.g. {"Retry-After": "0"}
    error: str = ""  # message of an error body (status != 200)
    chunk_size: int = 40  # characters per SSE chunk when streaming
    finish_reason: str = "stop"
    # what real endpoints also do
    reasoning: str = ""  # sent as reasoning_content (whole message, or deltas before the text)
    reasoning_field: str = "reasoning_content"  # OpenRouter/Ollama say "reasoning"
    raw_body: bytes | None = None  # sent as-is (status, content_type) instead of a completion
    content_type: str = "application/json"
    error_body: dict | None = None  # the whole JSON error body (status != 200)
    echo_key: bool = False  # put the request's bearer token into the error message, as some do
    stall: float = 0.0  # streaming: stop sending for this long after the first chunk
    chunk_delay: float = 0.0  # streaming: pause between chunks (a slow but steady model)
    # what providers and proxies also do (issue 20)
    error_json: object = None  # any JSON as the error body: a list (Gemini), a string …
    keepalive: float = 0.0  # during a stall, an SSE comment ": OPENROUTER PROCESSING" this often
    stream_error: dict | None = None  # streaming: this error chunk after half the text, then close
    no_done: float = 0.0  # streaming: after finish_reason, neither [DONE] nor close for this long
    tool_call: bool = False  # the content is sent as tool_calls[0].function.arguments
    usage: dict | None = None  # the usage object (default: completion tokens = chars / 4)


def reply(content: str, **kw) -> Step:
    return Step(content=content, **kw)


def fenced(ptx: str, prose: str = "Launch with block 256, grid ceil(n/256).") -> str:
    return f"{prose}\n\n```ptx\n{ptx.strip()}\n```\n"


Responder = Callable[[dict, int], Step]

# OpenAI's own 400 bodies for a reasoning model (o1/o3/o4-mini/gpt-5), verbatim
OPENAI_MAX_TOKENS_REFUSAL = {
    "error": {
        "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead.",
        "type": "invalid_request_error",
        "param": "max_tokens",
        "code": "unsupported_parameter",
    }
}


def openai_temperature_refusal(value) -> dict:
    return {
        "error": {
            "message": f"Unsupported value: 'temperature' does not support {value} with this "
            "model. Only the default (1) value is supported.",
            "type": "invalid_request_error",
            "param": "temperature",
            "code": "unsupported_value",
        }
    }


def reasoning_model_gate(body: dict) -> tuple[int, dict] | None:
    """What OpenAI's reasoning models refuse: max_tokens, and any temperature but 1."""
    if "max_tokens" in body:
        return 400, OPENAI_MAX_TOKENS_REFUSAL
    if "temperature" in body and body["temperature"] != 1:
        return 400, openai_temperature_refusal(body["temperature"])
    return None


# A gate sees each chat request before the script does and may answer it (status, JSON body);
# the request does not consume a step then.
Gate = Callable[[dict], "tuple[int, dict] | None"]


@dataclass
class Seen:
    path: str
    body: dict
    headers: dict[str, str]  # names lowercased
    at: float


class ScriptedLLM:
    def __init__(
        self,
        script: list[Step] | Responder | None = None,
        models: tuple[str, ...] = ("scripted-model",),
        gate: Gate | None = None,
    ):
        self._script = script if script is not None else []
        self.gate = gate
        self.models = models
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self._index = 0
        self._closing = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle
    def start(self) -> ScriptedLLM:
        handler = _make_handler(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        # serve_forever checks for shutdown() every poll_interval: its default (0.5 s) was half a
        # second added to every test that starts an endpoint (about 150 of them)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
            name="scripted-llm", daemon=True,
        )  # fmt: skip
        self._thread.start()
        return self

    def stop(self) -> None:
        self._closing.set()
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    # ---- script
    def set_script(self, script: list[Step] | Responder) -> None:
        with self._lock:
            self._script, self._index = script, 0

    def next_step(self, body: dict) -> Step:
        with self._lock:
            i = self._index
            self._index += 1
            script = self._script
        if callable(script):
            return script(body, i)
        if i < len(script):
            return script[i]
        return Step(
            status=500, error=f"scripted server: script exhausted after {len(script)} steps"
        )

    @property
    def chat_requests(self) -> list[Seen]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def wait_closing(self, seconds: float) -> bool:
        return self._closing.wait(seconds)


def _make_handler(owner: ScriptedLLM):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # keep test output clean
            pass

        def _json(self, status: int, payload, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # http.server's naming
            owner.requests.append(
                Seen(self.path, {}, {k.lower(): v for k, v in self.headers.items()}, time.time())
            )
            if self.path.rstrip("/").endswith("/models"):
                self._json(
                    200,
                    {
                        "object": "list",
                        "data": [
                            {"id": m, "object": "model", "owned_by": "scripted"}
                            for m in owner.models
                        ],
                    },
                )
            else:
                self._json(
                    404, {"error": {"message": f"no route {self.path}", "type": "not_found"}}
                )

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._json(
                    400, {"error": {"message": "invalid JSON", "type": "invalid_request_error"}}
                )
                return
            owner.requests.append(
                Seen(self.path, body, {k.lower(): v for k, v in self.headers.items()}, time.time())
            )
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(
                    404, {"error": {"message": f"no route {self.path}", "type": "not_found"}}
                )
                return
            if body.get("model") not in owner.models:
                self._json(
                    404,
                    {
                        "error": {
                            "message": f"The model '{body.get('model')}' does not exist",
                            "type": "invalid_request_error",
                            "code": "model_not_found",
                        }
                    },
                )
                return
            if owner.gate is not None:
                refusal = owner.gate(body)
                if refusal is not None:
                    self._json(refusal[0], refusal[1])
                    return
            step = owner.next_step(body)
            if step.delay and owner.wait_closing(step.delay):
                return
            if step.raw_body is not None:
                self.send_response(step.status)
                self.send_header("Content-Type", step.content_type)
                self.send_header("Content-Length", str(len(step.raw_body)))
                self.end_headers()
                self.wfile.write(step.raw_body)
                return
            if step.status != 200:
                message = step.error or f"scripted status {step.status}"
                if step.echo_key:
                    auth = self.headers.get("Authorization") or ""
                    token = auth.split(" ", 1)[-1]
                    message = message.replace("{key}", token)
                    if "{key}" not in (step.error or ""):
                        message += f" (key: {token}; header: Authorization: {auth})"
                payload = step.error_body or {"error": {"message": message, "type": "scripted"}}
                if step.error_json is not None:
                    payload = step.error_json
                self._json(step.status, payload, step.headers)
                return
            model = body.get("model")
            created = int(time.time())
            if body.get("stream"):
                usage = (body.get("stream_options") or {}).get("include_usage")
                self._stream(step, model, created, bool(usage))
                return
            self._json(
                200,
                {
                    "id": "chatcmpl-scripted",
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {
                                "role": "assistant",
                                **_content(step),
                                **(
                                    {step.reasoning_field: step.reasoning} if step.reasoning else {}
                                ),
                            },
                            "finish_reason": step.finish_reason,
                        }
                    ],
                    "usage": _usage(step),
                },
                step.headers,
            )

        def _stream(self, step: Step, model: str, created: int, usage: bool = False) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            for k, v in step.headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.close_connection = True

            def event(delta: dict, finish: str | None) -> None:
                chunk = {
                    "id": "chatcmpl-scripted",
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()

            try:
                event({"role": "assistant", "content": ""}, None)
                thought = step.reasoning
                for i in range(0, len(thought), max(step.chunk_size, 1)):
                    event({step.reasoning_field: thought[i : i + step.chunk_size]}, None)
                if step.stall and self._stall(step):
                    return
                text = step.content
                for i in range(0, len(text), max(step.chunk_size, 1)):
                    if step.chunk_delay and i and owner.wait_closing(step.chunk_delay):
                        return
                    if step.stream_error is not None and i >= len(text) // 2:
                        self.wfile.write(
                            b"data: " + json.dumps(step.stream_error).encode() + b"\n\n"
                        )
                        self.wfile.flush()
                        return
                    piece = text[i : i + step.chunk_size]
                    if step.tool_call:
                        call = {"index": 0, "function": {"arguments": piece}}
                        if i == 0:
                            call |= {"id": "call_1", "type": "function"}
                            call["function"]["name"] = "emit_ptx"
                        event({"tool_calls": [call]}, None)
                    else:
                        event({"content": piece}, None)
                event({}, step.finish_reason)
                if usage:  # OpenAI's last chunk with stream_options.include_usage: no choices
                    last = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
                            "created": created, "model": model, "choices": [],
                            "usage": _usage(step)}  # fmt: skip
                    self.wfile.write(b"data: " + json.dumps(last).encode() + b"\n\n")
                    self.wfile.flush()
                if step.no_done:
                    owner.wait_closing(step.no_done)  # the whole reply sent; nothing more
                    return
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _stall(self, step: Step) -> bool:
            """Stop sending for step.stall seconds (keep-alive comments meanwhile, if asked);
            True when the server is closing."""
            if not step.keepalive:
                return owner.wait_closing(step.stall)
            waited = 0.0
            while waited < step.stall:
                if owner.wait_closing(step.keepalive):
                    return True
                waited += step.keepalive
                self.wfile.write(b": OPENROUTER PROCESSING\n\n")
                self.wfile.flush()
            return False

    return Handler


def _content(step: Step) -> dict:
    """The message's content, or a tool call carrying it as arguments."""
    if not step.tool_call:
        return {"content": step.content}
    call = {"id": "call_1", "type": "function",
            "function": {"name": "emit_ptx", "arguments": step.content}}  # fmt: skip
    return {"content": None, "tool_calls": [call]}


def _usage(step: Step) -> dict:
    if step.usage is not None:
        return step.usage
    return {
        "prompt_tokens": 0,
        "completion_tokens": len(step.content) // 4,
        "total_tokens": len(step.content) // 4,
    }


# ---- shared material for the lowering tests and benchmarks

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent
GOOD_VEC_ADD = (ROOT / "fewshot" / "kernels" / "vec_add" / "kernel.ptx").read_text()
# one operand of the wrong type: ptxas says "Arguments mismatch for instruction 'add'"
BROKEN_LINE = "add.f32             %f3, %f1, %rd2;"
BROKEN_VEC_ADD = GOOD_VEC_ADD.replace("add.f32             %f3, %f1, %f2;", BROKEN_LINE)
assert BROKEN_VEC_ADD != GOOD_VEC_ADD
