"""The scripted OpenAI-compatible endpoint (tests/scripted_llm.py) as a process for the VS Code
end-to-end test: every chat request is answered with the library's verified vec_add PTX, so
"Lower to PTX with LLM" runs the real loop (extract, ptxas, test) against a real HTTP server.
Prints the base URL on its first line, then serves until stdin closes."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripted_llm import GOOD_VEC_ADD, ScriptedLLM, Step, fenced


def main() -> None:
    model = sys.argv[1] if len(sys.argv) > 1 else "e2e-model"
    llm = ScriptedLLM(lambda body, i: Step(fenced(GOOD_VEC_ADD)), models=(model,)).start()
    print(llm.base_url, flush=True)
    try:
        sys.stdin.read()  # the test closes our stdin (or dies) when it is done
    finally:
        llm.stop()


if __name__ == "__main__":
    main()
