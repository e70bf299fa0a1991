"""The step plan (strategy "plan"): asked of the model before any PTX is written, shown to a
person as a document to edit and accept, and read back from that document for the lowering.
"""

from __future__ import annotations

from pathlib import Path

from . import prompt
from .job import LowerJob, choose_kernel
from .loop_records import Progress
from .protocols import ChatClient
from .settings import LlmSettings
from .source_spec import facts_for_test, source_spec
from .target_isa import choose_target

PLANS_DIR = Path(".ptxls") / "plans"


async def make_plan(
    job: LowerJob,
    settings: LlmSettings,
    *,
    client: ChatClient | None = None,
    progress: Progress | None = None,
) -> tuple[str, str]:
    """Only the step plan (strategy "plan"), for a person to check before any PTX is written.
    Returns (plan, error)."""
    if not settings.ready:
        return "", settings.not_ready_message()
    src = choose_kernel(job)
    if isinstance(src, str):
        return "", src
    arch = job.arch or settings.arch
    choice = await choose_target(arch, ptxas_path=job.ptxas_path)
    if choice.problem:
        return "", choice.problem
    spec, _ = source_spec(src, job)
    examples = prompt.fitting_examples(src, settings.fewshot_count)
    messages = prompt.first_messages(
        src,
        examples,
        prompt.Target(arch, choice.isa),
        file_name="" if job.describe else job.source_path.name,
        plan=True,
        facts=facts_for_test(spec, False),
    )
    from .llm_client import LlmClient, LlmError

    own = None  # the client made here (closed here), when the caller gave none
    if client is None:
        try:
            own = client = LlmClient(settings)
        except LlmError as e:
            return "", str(e)
    try:
        (progress or (lambda _m: None))("asking the model for a step plan")
        reply = await client.chat(messages, seed=settings.seed)
    except LlmError as e:
        return "", str(e)
    finally:
        if own is not None:
            await own.aclose()
    plan = (reply.text or "").strip()
    if not plan:
        return "", "the model sent an empty plan" + (
            " (cut at the token limit: raise ptxls.llm.maxTokens)"
            if reply.finish_reason == "length"
            else ""
        )
    return plan, ""


def plan_document(job: LowerJob, kernel: str, plan: str) -> str:
    """The plan as a document a person edits and accepts."""
    return (
        f"# Plan for lowering {kernel or 'the request'} to PTX\n\n"
        f"Source: {job.source_path.name}\n\n"
        "Edit the steps below if they are wrong and save, then accept them: the code lens "
        '"Lower with this plan" (on this file, or on the kernel in its source), or '
        "`ptxls lower ... --plan THIS_FILE`. No PTX has been written yet.\n\n"
        "<!-- the plan starts below this line -->\n"
        f"{plan.strip()}\n"
    )


def plan_from_document(text: str) -> str:
    marker = "<!-- the plan starts below this line -->"
    return text.split(marker, 1)[1].strip() if marker in text else text.strip()
