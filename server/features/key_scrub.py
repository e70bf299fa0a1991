"""The API key never leaves the server in a message: every outgoing LSP message is scrubbed.

An endpoint may echo the key in an error body, and that text can travel in a showMessage, a
logMessage, a command's result, a progress report or a hover. Rather than trusting each of
those call sites, the protocol's one sending function is wrapped: every string in every
message goes through ``ptxls.toolchain.secrets.scrub`` (the configured key, and anything shaped
like a bearer token, an ``sk-…`` key, an ``Authorization:`` value, ``api_key=`` in a URL or
``user:password@`` in a URL). The server's stderr log gets the same through a logging filter
(pygls logs every message it sends at INFO, so a verbose log would otherwise show the key).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from ptxls.toolchain.secrets import install_log_scrubber, scrub

log = logging.getLogger("ptxls")


def _plain(value: Any, serialize) -> Any:
    """JSON-shaped copy of an outgoing message with every string scrubbed."""
    if isinstance(value, str):
        return scrub(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, dict):
        return {k: _plain(v, serialize) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, serialize) for v in value]
    return _plain(serialize(value), serialize)


def register(server) -> None:
    install_log_scrubber()
    protocol = server.protocol
    send = protocol._send_data  # pygls 2.x: every response, notification and request

    def send_scrubbed(data: Any) -> None:
        try:
            data = _plain(data, protocol._serialize_message)
        except Exception:  # an odd object: scrub its JSON text instead
            data = json.loads(scrub(json.dumps(data, default=protocol._serialize_message)))
        send(data)

    protocol._send_data = send_scrubbed
