"""The chat-completions request over the standard library: the part of the openai SDK the loop
used, without its import.

Why not the SDK: importing ``openai`` builds about 700 pydantic models and its HTTP library
(httpx2, with anyio, h11, h2 …) — 1.5 s on an idle 2-core machine, 3 s on a busy one — before
the first request can leave, longer than everything else ``ptxls lower`` does first.
``LlmClient`` only ever used the SDK's transport (``with_streaming_response``: the raw body,
read by ``llm_client.py`` itself) and its typed errors. This module gives the same with
``asyncio`` streams: ``POST {base_url}/chat/completions`` with ``Authorization: Bearer KEY``
and the JSON body (``extra_body`` merged), HTTP/1.1 with ``Content-Length`` or chunked replies,
TLS with the system's certificates (and certifi's, as httpx), the ``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY`` environment
(a ``CONNECT`` tunnel for https), and for each HTTP error status the exception class of the same
name the SDK raises, with ``status_code``, ``body`` (the error object, or the text) and
``response.headers``. ``bench/lowering_startup.py`` measures the difference.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from urllib.parse import urlsplit

DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_HEADER_BYTES = 64 * 1024


class APIError(Exception):
    def __init__(self, message: str, *, body=None):
        super().__init__(message)
        self.message = message
        self.body = body
        inner = body if isinstance(body, dict) else {}
        self.code = inner.get("code")
        self.param = inner.get("param")
        self.type = inner.get("type")


class APIStatusError(APIError):
    def __init__(self, message: str, *, response, body=None):
        super().__init__(message, body=body)
        self.response = response
        self.status_code = response.status_code


class BadRequestError(APIStatusError): ...


class AuthenticationError(APIStatusError): ...


class PermissionDeniedError(APIStatusError): ...


class NotFoundError(APIStatusError): ...


class ConflictError(APIStatusError): ...


class UnprocessableEntityError(APIStatusError): ...


class RateLimitError(APIStatusError): ...


class InternalServerError(APIStatusError): ...


class APIConnectionError(APIError):
    def __init__(self, message: str = "Connection error."):
        super().__init__(message)


class APITimeoutError(APIConnectionError):
    def __init__(self) -> None:
        super().__init__("Request timed out.")


_BY_STATUS = {400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError,
              404: NotFoundError, 409: ConflictError, 422: UnprocessableEntityError,
              429: RateLimitError}  # fmt: skip


def status_error(response, text: str) -> APIStatusError:
    """The SDK's exception for an error status: the body's ``error`` object (else the parsed
    body, else the text), and "Error code: N - body" as its message."""
    try:
        data = json.loads(text) if text else None
    except json.JSONDecodeError:
        data = None
    body = (
        data.get("error", data) if isinstance(data, dict) else (data if data is not None else text)
    )
    message = f"Error code: {response.status_code}" + (
        f" - {body}" if body not in (None, "") else ""
    )
    cls = _BY_STATUS.get(response.status_code)
    if cls is None:
        cls = InternalServerError if response.status_code >= 500 else APIStatusError
    return cls(message, response=response, body=body)


class Response:
    """Status, headers (names lowercased) and the body's reader of one HTTP/1.1 response."""

    def __init__(self, status: int, headers: dict[str, str], reader, writer):
        self.status_code = status
        self.headers = headers
        self._reader = reader
        self._writer = writer

    async def _chunks(self):
        r = self._reader
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            while True:
                size_line = await r.readline()
                if not size_line:
                    raise ConnectionError("the chunked body ended early")
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    await r.readline()
                    return
                data = await r.readexactly(size)
                await r.readline()
                yield data
        length = self.headers.get("content-length")
        if length is not None and length.isdigit():
            left = int(length)
            while left > 0:
                data = await r.read(min(left, 65536))
                if not data:
                    raise ConnectionError("the body ended before its Content-Length")
                left -= len(data)
                yield data
            return
        while data := await r.read(65536):  # no length: until the server closes
            yield data

    def iter_bytes(self):
        return self._chunks()

    async def read_all(self, limit: int = 1 << 20) -> bytes:
        out = bytearray()
        async for data in self._chunks():
            out += data
            if len(out) > limit:
                break
        return bytes(out)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._writer.close()


def _proxy_for(scheme: str, host: str) -> str | None:
    """The proxy the environment names for this URL (as httpx and the SDK read it), or None."""
    no_proxy = os.environ.get("NO_PROXY") or os.environ.get("no_proxy") or ""
    for entry in (e.strip().lower() for e in no_proxy.split(",") if e.strip()):
        if (
            entry == "*"
            or host.lower() == entry.lstrip(".")
            or host.lower().endswith("." + entry.lstrip("."))
        ):
            return None
    names = ("HTTPS_PROXY", "https_proxy") if scheme == "https" else ("HTTP_PROXY", "http_proxy")
    for name in (*names, "ALL_PROXY", "all_proxy"):
        if os.environ.get(name):
            return os.environ[name]
    return None


async def _read_head(reader) -> tuple[int, dict[str, str]]:
    head = await reader.readuntil(b"\r\n\r\n")
    if len(head) > MAX_HEADER_BYTES:
        raise ConnectionError("response headers too large")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise ConnectionError(f"not an HTTP response: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


class _Endpoint:
    def __init__(self, base_url: str, headers: dict[str, str]):
        u = urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise APIConnectionError(f"Connection error: not an http(s) URL: {base_url!r}")
        self.scheme, self.host = u.scheme, u.hostname
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.prefix = u.path.rstrip("/")
        self.headers = headers

    async def request(self, method: str, path: str, body: bytes | None) -> Response:
        proxy = _proxy_for(self.scheme, self.host)
        target = f"{self.prefix}/{path}"
        try:
            if proxy:
                p = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
                reader, writer = await asyncio.open_connection(p.hostname, p.port or 80)
                if self.scheme == "https":  # a tunnel, then TLS to the endpoint itself
                    hostport = f"{self.host}:{self.port}"
                    writer.write(
                        f"CONNECT {hostport} HTTP/1.1\r\nHost: {hostport}\r\n\r\n".encode()
                    )
                    status, _ = await _read_head(reader)
                    if status != 200:
                        raise ConnectionError(f"the proxy {p.hostname} refused CONNECT ({status})")
                    await writer.start_tls(_tls(), server_hostname=self.host)
                else:
                    target = f"http://{self.host}:{self.port}{target}"
            else:
                ssl = _tls() if self.scheme == "https" else None
                reader, writer = await asyncio.open_connection(self.host, self.port, ssl=ssl)
            host = self.host if self.port in (80, 443) else f"{self.host}:{self.port}"
            lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", "Connection: close",
                     "Accept-Encoding: identity", "User-Agent: ptxls"]  # fmt: skip
            lines += [f"{k}: {v}" for k, v in self.headers.items()]
            if body is not None:
                lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + (body or b""))
            await writer.drain()
            status, headers = await _read_head(reader)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as e:
            raise APIConnectionError(f"Connection error: {type(e).__name__}: {e}") from e
        return Response(status, headers, reader, writer)


_tls_context = None


def _tls():
    global _tls_context
    if _tls_context is None:
        import ssl

        _tls_context = ssl.create_default_context()
        try:  # the bundle httpx and the SDK use, where installed, besides the system's
            import certifi

            _tls_context.load_verify_locations(certifi.where())
        except (ImportError, OSError):
            pass
    return _tls_context


async def _error_for(response: Response) -> APIStatusError:
    try:
        text = (await response.read_all()).decode("utf-8", errors="replace")
    except (OSError, asyncio.IncompleteReadError, ValueError):
        text = ""
    return status_error(response, text)


class _Completions:
    def __init__(self, endpoint: _Endpoint):
        self._endpoint = endpoint

    @property
    def with_streaming_response(self):
        return self

    @contextlib.asynccontextmanager
    async def create(self, *, extra_body: dict | None = None, **fields):
        body = json.dumps({**fields, **(extra_body or {})}).encode("utf-8")
        response = await self._endpoint.request("POST", "chat/completions", body)
        try:
            if response.status_code >= 400:
                raise await _error_for(response)
            yield response
        finally:
            response.close()


class _Page:
    def __init__(self, ids: list[str]):
        self.data = [type("Model", (), {"id": i})() for i in ids]


class _Models:
    def __init__(self, endpoint: _Endpoint):
        self._endpoint = endpoint

    async def list(self) -> _Page:
        response = await self._endpoint.request("GET", "models", None)
        try:
            if response.status_code >= 400:
                raise await _error_for(response)
            data = json.loads((await response.read_all()).decode("utf-8", errors="replace"))
        finally:
            response.close()
        items = data.get("data") if isinstance(data, dict) else None
        return _Page([str(m.get("id")) for m in items or [] if isinstance(m, dict)])


class _Chat:
    def __init__(self, endpoint: _Endpoint):
        self.completions = _Completions(endpoint)


class AsyncChat:
    """``AsyncOpenAI``'s ``chat.completions.with_streaming_response.create``, ``models.list``
    and ``close``, for one endpoint. Timeouts are the caller's (``asyncio.timeout``)."""

    def __init__(self, *, api_key: str, base_url: str | None, timeout: float = 0,
                 default_headers: dict | None = None):  # fmt: skip
        headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json",
                   **(default_headers or {})}  # fmt: skip
        endpoint = _Endpoint((base_url or DEFAULT_BASE_URL).rstrip("/"), headers)
        self.chat = _Chat(endpoint)
        self.models = _Models(endpoint)

    async def close(self) -> None:
        return None  # one connection per request ("Connection: close"): nothing stays open
