"""Fuzz, CI size: randomly damaged PTX buffers (didChange) and malformed LSP messages (framing and
params) against ONE real server process, which must stay up, answer a hover after every batch,
and answer every request that carried a usable id. bench/fuzz_server.py runs the full counts
(≥ 10,000 buffers, ≥ 1,000 messages) and writes bench/results/fuzz-server/."""

from __future__ import annotations

import pytest
from fuzz_lsp import run_fuzz


@pytest.mark.parametrize("seed", [11, 12])
def test_one_server_survives_damaged_buffers_and_malformed_messages(seed, tmp_path):
    result = run_fuzz(buffers=800, messages=300, seed=seed, batch=100, cwd=str(tmp_path))
    summary = result.summary()
    assert not result.failures, summary
    assert result.alive, summary
    assert result.buffers == 800 and result.messages == 300
    assert result.requests_sent > 50 and result.requests_answered == result.requests_sent, summary
    assert result.batches >= 11
