"""The debug adapter: DAP requests → a debugging Session on the emulator, DAP events back.

Requests are read on the main thread; running the kernel (continue, steps) happens on a worker
thread so ``pause``, ``threads`` and ``disconnect`` are answered while it runs. State requests
(stackTrace, scopes, variables, evaluate) are answered while stopped; the variable references
they hand out are valid until the next resume, as the protocol allows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ptxls.emulator.errors import WARNING_KINDS
from ptxls.gputest.debug_launch import last_failed_test

from . import views as V
from .case import CaseError, build_case
from .expressions import ExpressionError
from .first_wrong import writer_of
from .protocol import Channel
from .session import Session, Stop

CAPABILITIES = {
    "supportsConfigurationDoneRequest": True,
    "supportsConditionalBreakpoints": True,
    "supportsEvaluateForHovers": True,
    "supportsDataBreakpoints": True,
    "supportsRestartRequest": True,
    "supportsTerminateRequest": True,
    "supportsSteppingGranularity": True,
    "supportsSingleThreadExecutionRequests": False,
    "exceptionBreakpointFilters": [
        {"filter": "findings", "label": "Emulator findings (out of bounds, race, barrier)",
         "default": True},
    ],
}  # fmt: skip


class Adapter:
    def __init__(self, channel: Channel) -> None:
        self.ch = channel
        self.session: Session | None = None
        self.launch_args: dict = {}
        self.line_bps: list[tuple[int, str]] = []
        self.data_ids: list[str] = []  # the editor's data breakpoints (setDataBreakpoints)
        self.launch_watch: str | None = None  # the launch configuration's ``watch``
        self.runner: threading.Thread | None = None
        self.refs: dict[int, Callable[..., list[dict]]] = {}
        self.stop_on_entry = False
        self.done = False
        self.halting = False
        self.stop_on_findings = True

    @property
    def live(self) -> Session:
        """The launched session (a request that needs one before launch is answered with
        this error)."""
        if self.session is None:
            raise ValueError("not launched")
        return self.session

    # ---- main loop

    def serve(self) -> int:
        while not self.done:
            msg = self.ch.read()
            if msg is None:
                break
            if msg.get("type") != "request":
                continue
            handler = getattr(self, "on_" + str(msg.get("command", "")), None)
            if handler is None:
                self.ch.respond(msg, error=f"unsupported request '{msg.get('command')}'")
                continue
            try:
                handler(msg, msg.get("arguments") or {})
            except (CaseError, ExpressionError, ValueError, KeyError) as e:
                self.ch.respond(msg, error=str(e))
            except Exception as e:
                self.ch.respond(msg, error=f"internal error in {msg.get('command')}: {e!r}")
        if self.session is not None:
            self.session.pause_requested.set()
        return 0

    # ---- lifecycle

    def on_initialize(self, req, args) -> None:
        self.ch.respond(req, CAPABILITIES)

    def on_launch(self, req, args) -> None:
        self.launch_args = dict(args)
        self._start()
        self.ch.respond(req)
        self.ch.event("initialized")

    def _start(self) -> None:
        a = self.launch_args
        program = a.get("program")
        if not program:
            raise CaseError("the launch configuration needs 'program' (a .ptx file)")
        program = str(program)
        kernel, spec = a.get("kernel") or None, a.get("spec") or None
        n, seed = _opt_int(a.get("n")), _opt_int(a.get("seed"))
        chosen = a.get("block") not in (None, "") or a.get("thread") not in (None, "")
        watch = a.get("watch") or None
        record = None
        if not chosen and not watch:  # the default thread: the last failed test's writer
            record = self._last_failed(program, kernel, n, seed)
            if record is not None:
                kernel, n, seed = record["kernel"], record["n"], record["seed"]
        case = build_case(program, kernel, n, seed, spec)
        kernel, n, seed = a.get("kernel") or kernel, case.n, case.seed
        block, thread = _dim(a.get("block")), _dim(a.get("thread"))
        writer = None
        if watch == "first-wrong":
            watch, writer = self._first_wrong(program, kernel, n, seed, spec)
        elif not chosen and (watch or (record and record.get("watch"))):
            element = str(watch or (record or {}).get("watch"))
            writer = writer_of(program, kernel, n, seed, spec, element)
            if writer is None:
                self._output(f"ptxls: nobody writes {element} in this case\n")
        why = "(given)" if chosen else "(block 0 thread 0: no failed element to start from)"
        if writer is not None and not chosen:
            block, thread = writer
            what = watch or (record or {}).get("watch")
            why = f"(the thread that writes {what}{' in the last failed test' if record else ''})"
        self.session = session = Session(case, block, thread)
        self.stop_on_entry = bool(a.get("stopOnEntry"))
        session.stop_on_findings = self.stop_on_findings
        if self.line_bps and session.case.source_map:
            self._set_source_breakpoints(self.line_bps)
        elif self.line_bps:
            session.set_breakpoints(self.line_bps)
        # "c[4097]": stop where that element is written (one click from a failed case)
        self.launch_watch = str(watch) if watch else None
        if self._all_data_ids():
            for bp in session.set_data_breakpoints(self._all_data_ids()):
                if not bp["verified"]:
                    self._output(f"ptxls: data breakpoint not set: {bp['message']}\n", "stderr")
        self._output(
            f"ptxls: {case.kernel} n={case.n} seed={case.seed} grid={case.grid} "
            f"block={case.block} on the CPU emulator; following block {_c(session.block)} "
            f"thread {_c(session.thread)} {why}\n"
        )

    def _last_failed(self, program: str, kernel, n, seed) -> dict | None:
        """The project's last failed test of this file (gputest/debug_launch.py), when the
        launch does not ask for another kernel, size or seed."""
        record, why = last_failed_test(program)
        if why:
            self._output(f"ptxls: not starting from the last failed test: {why}\n")
        if record is None:
            return None
        for key, given in (("kernel", kernel), ("n", n), ("seed", seed)):
            if given is not None and given != record[key]:
                return None
        self._output(
            f"ptxls: the last failed test of this file: {record['kernel']} n={record['n']} "
            f"seed {record['seed']}" + (f", first wrong {record['watch']}" if record["watch"]
                                        else "") + "\n"
        )  # fmt: skip
        return record

    def _first_wrong(self, program: str, kernel, n, seed, spec):
        """Run the case to the end, compare with its reference: the first wrong element to
        watch and the thread that wrote it (or None, None when every element matches)."""
        from .first_wrong import first_wrong

        found = first_wrong(program, kernel, n, seed, spec)
        if found is None:
            self._output("ptxls: every output element matches the reference in this case\n")
            return None, None
        self._output(f"ptxls: {found.text}\nptxls: watching {found.buffer}[{found.element}]\n")
        at = (found.block, found.thread) if found.block and found.thread else None
        return f"{found.buffer}[{found.element}]", at

    def on_configurationDone(self, req, args) -> None:
        self.ch.respond(req)
        if self.stop_on_entry:
            self._stopped(Stop("entry"))
        else:
            self._resume("continue")

    def on_restart(self, req, args) -> None:
        self._halt()
        if isinstance(args.get("arguments"), dict):
            self.launch_args = dict(args["arguments"])
        self._start()
        self.ch.respond(req)
        self._resume("continue")

    def on_terminate(self, req, args) -> None:
        self._halt()
        self.ch.respond(req)
        self.ch.event("terminated")

    def on_disconnect(self, req, args) -> None:
        self._halt()
        self.ch.respond(req)
        self.done = True

    def _halt(self) -> None:
        """Stop a running kernel without a stopped event (restart, terminate, disconnect)."""
        self.halting = True
        if self.session is not None:
            self.session.pause_requested.set()
        self._wait_runner()
        self.halting = False

    # ---- breakpoints

    def on_setBreakpoints(self, req, args) -> None:
        specs = [(int(b["line"]), b.get("condition") or "") for b in args.get("breakpoints", [])]
        if not args.get("breakpoints") and args.get("lines"):
            specs = [(int(x), "") for x in args["lines"]]
        path = (args.get("source") or {}).get("path")
        if self.session is not None and path and not _same_file(path, self.session.case.program):
            out = [{"verified": False, "line": ln,
                    "message": "breakpoints go in the launched program (its .ptx, or the .cu "
                    "or .py whose lines .loc maps); other files are not supported yet"}
                   for ln, _ in specs]  # fmt: skip
            self.ch.respond(req, {"breakpoints": out})
            return
        self.line_bps = specs
        if self.session is None:
            out = [
                {"verified": False, "line": ln, "message": "not launched yet"} for ln, _ in specs
            ]
        elif self.session.case.source_map:
            out = self._set_source_breakpoints(specs)
        else:
            out = self.session.set_breakpoints(specs)
        self.ch.respond(req, {"breakpoints": out})

    def _set_source_breakpoints(self, specs: list[tuple[int, str]]) -> list[dict]:
        """CUDA lines → the first PTX line nvcc marked with each (or with the next line that
        has code); the answer names the CUDA line the breakpoint landed on."""
        smap = self.live.case.source_map
        placed = []
        for line, cond in specs:
            target = min((c for c in smap.values() if c >= line), default=None)
            ptx_line = min((p for p, c in smap.items() if c == target), default=10**9)
            placed.append((ptx_line, cond, target))
        out = self.live.set_breakpoints([(p, c) for p, c, _ in placed])
        for bp, (_, _, target) in zip(out, placed, strict=True):
            if bp.get("verified"):
                bp["line"] = smap.get(bp["line"], target)
        return out

    def on_setExceptionBreakpoints(self, req, args) -> None:
        """The one filter, "findings": off, the run goes on past the emulator's findings (the
        exit code still says there were failing ones). On, it stops on warnings too."""
        filters = list(args.get("filters") or [])
        filters += [o.get("filterId") for o in args.get("filterOptions") or []]
        self.stop_on_findings = "findings" in filters
        if self.session is not None:
            self.session.stop_on_findings = self.stop_on_findings
        self.ch.respond(req, {"breakpoints": [{"verified": True} for _ in filters]})

    def on_dataBreakpointInfo(self, req, args) -> None:
        name = str(args.get("name", ""))
        if self.session is None:
            self.ch.respond(req, {"dataId": None, "description": "not launched yet"})
            return
        self.ch.respond(req, self.session.data_breakpoint_info(name))

    def on_setDataBreakpoints(self, req, args) -> None:
        self.data_ids = [str(b["dataId"]) for b in args.get("breakpoints", [])]
        # the launch's watch stays: VS Code sends its own (often none) after every launch
        out = self.session.set_data_breakpoints(self._all_data_ids()) if self.session else []
        out = out[: len(self.data_ids)]  # answer for the editor's own, in their order
        self.ch.respond(req, {"breakpoints": out})

    def _all_data_ids(self) -> list[str]:
        watch = [self.launch_watch] if self.launch_watch else []
        return self.data_ids + [w for w in watch if w not in self.data_ids]

    # ---- running

    def on_continue(self, req, args) -> None:
        self._select(args)
        self.ch.respond(req, {"allThreadsContinued": True})
        self._resume("continue")

    def on_next(self, req, args) -> None:
        self._select(args)
        self.ch.respond(req)
        self._resume("next", args.get("granularity") == "instruction")

    def on_stepIn(self, req, args) -> None:
        self._select(args)
        self.ch.respond(req)
        self._resume("step", args.get("granularity") == "instruction")

    def on_stepOut(self, req, args) -> None:
        self._select(args)
        self.ch.respond(req)
        self._resume("out")

    def on_pause(self, req, args) -> None:
        self.ch.respond(req)
        if self.session is not None:
            self.session.pause_requested.set()

    def _select(self, args) -> None:
        """Stepping another thread of the threads view makes it the followed thread."""
        tid = args.get("threadId")
        s = self.session
        if s is not None and tid and tid != s.thread_id(s.block, s.thread):
            s.follow(*s.coords(int(tid)))

    def _resume(self, mode: str, by_instruction: bool = False) -> None:
        self._wait_runner()
        self.refs = {}
        self.runner = threading.Thread(target=self._run, args=(mode, by_instruction),
                                       daemon=True)  # fmt: skip
        self.runner.start()

    def _wait_runner(self) -> None:
        if self.runner is not None and self.runner is not threading.current_thread():
            self.runner.join()
        self.runner = None

    def _run(self, mode: str, by_instruction: bool = False) -> None:
        s = self.live
        try:
            smap = None if by_instruction else s.case.source_map
            start = smap.get(s.current_line() or 0) if smap else None
            stop = s.run(mode)
            while (  # a CUDA program: a step goes on to another CUDA line
                smap
                and mode in ("step", "next")
                and stop is not None
                and stop.reason == "step"
                and not self.halting
                and smap.get(s.current_line() or 0) == start
            ):
                stop = s.run(mode)
        except Exception as e:  # a Refused instruction at run time, bad operands
            self._output(f"ptxls: the emulator stopped: {e}\n", "stderr")
            stop = None
        if self.halting:
            return
        if stop is None:
            res = s.ex.result
            # a warning (emulator/errors.WARNING_KINDS: a read of a poisoned output, a register
            # never written) is shown, as ptxls test shows it, but fails nothing: exit code 0
            errors = [f for f in res.findings if f.severity != "warning"]
            warned = len(res.findings) - len(errors)
            said = f"{len(errors)} findings" + (
                f", {warned} emulator-only warnings, not failures" if warned else ""
            )
            self._output(
                f"ptxls: {s.case.kernel} finished ({res.thread_instructions:,} thread-"
                f"instructions, {said})\n"
            )
            self.ch.event("exited", {"exitCode": 1 if errors else 0})
            self.ch.event("terminated")
            return
        self._stopped(stop)

    def _stopped(self, stop: Stop) -> None:
        s = self.live
        body = {"reason": stop.reason, "threadId": s.thread_id(s.block, s.thread),
                "allThreadsStopped": True, "preserveFocusHint": False}  # fmt: skip
        if stop.description:
            body["description"] = stop.description
        text = stop.text
        if text and stop.reason == "exception" and stop.description in WARNING_KINDS:
            text = f"warning (emulator-only, not a failure): {text}"
        if text:
            body["text"] = text
            self._output(text + "\n", "stderr" if stop.reason == "exception" else "console")
        if stop.hit_ids:
            body["hitBreakpointIds"] = list(stop.hit_ids)
        if stop.reason == "step" and s.last_skipped:
            body["description"] = "stepped over an instruction predicated off for this thread"
            self._output("ptxls: that instruction was skipped for this thread (its guard "
                         "predicate was false)\n")  # fmt: skip
        self.ch.event("stopped", body)

    def _output(self, text: str, category: str = "console") -> None:
        self.ch.event("output", {"category": category, "output": text})

    # ---- state

    def on_threads(self, req, args) -> None:
        s = self.session
        if s is None:
            self.ch.respond(req, {"threads": []})
            return
        gx, gy, gz = s.case.grid
        bx, by, bz = s.case.block
        lin = s.thread[0] + bx * (s.thread[1] + by * s.thread[2])
        warp0 = lin - lin % 32
        seen, threads = set(), []

        def add(block, thread, label):
            tid = s.thread_id(block, thread)
            if tid not in seen:
                seen.add(tid)
                threads.append({"id": tid, "name": label})

        add(s.block, s.thread, f"block {_c(s.block)} thread {_c(s.thread)} (followed)")
        for t in range(warp0, min(warp0 + 32, s.block_threads)):
            th = (t % bx, (t // bx) % by, t // (bx * by))
            add(s.block, th, f"block {_c(s.block)} thread {_c(th)} lane {t % 32}")
        nb = gx * gy * gz
        for b in sorted({0, 1, nb // 2, nb - 1} - {nb}):
            if 0 <= b < nb:
                blk = (b % gx, (b // gx) % gy, b // (gx * gy))
                add(blk, s.thread, f"block {_c(blk)} thread {_c(s.thread)}")
        self.ch.respond(req, {"threads": threads})

    def on_stackTrace(self, req, args) -> None:
        s = self.live
        tid = int(args.get("threadId", 0))
        block, thread = s.coords(tid) if tid else (s.block, s.thread)
        w = s.wave_index(block, thread)
        followed = (block, thread) == (s.block, s.thread)
        line = s.current_line() if followed else None
        if line is None and w is not None:
            pc = s.pc_of(w)
            line = s.instrs[pc].line if pc is not None and pc < len(s.instrs) else None
        if line is None:
            self.ch.respond(req, {"stackFrames": [], "totalFrames": 0})
            return
        src = {"name": Path(s.case.program).name, "path": str(Path(s.case.program).resolve())}
        name = f"{s.case.kernel} block {_c(block)} thread {_c(thread)}"
        if s.case.source_map:  # a CUDA program: its line; the PTX line in the frame's name
            ptx_text = s.case.ptx.splitlines()[line - 1].strip() if line else ""
            name += f" — PTX line {line}: {ptx_text}"
            line = s.case.source_map.get(line, line)
        frame = {"id": tid or s.thread_id(block, thread), "line": line, "column": 1,
                 "name": name, "source": src}  # fmt: skip
        self.ch.respond(req, {"stackFrames": [frame], "totalFrames": 1})

    def on_scopes(self, req, args) -> None:
        s = self.live
        fid = int(args["frameId"])
        w = s.wave_index(*s.coords(fid))
        if w is None:
            self.ch.respond(req, {"scopes": []})
            return
        scopes = []
        for name, fn, hint in (
            ("Registers", lambda: V.registers(s, w), "registers"),
            ("Special registers", lambda: V.specials(s, w), None),
            ("Params", lambda: V.params(s), "arguments"),
            ("Shared", lambda: self._shared(w), None),
            ("Globals", self._globals, None),
            ("Warp", lambda: self._warp(w), None),
        ):
            scope = {"name": name, "variablesReference": self._ref(fn), "expensive": False}
            if hint:
                scope["presentationHint"] = hint
            scopes.append(scope)
        self.ch.respond(req, {"scopes": scopes})

    def _ref(self, fn) -> int:
        ref = len(self.refs) + 1
        self.refs[ref] = fn
        return ref

    def _array(self, name: str, type_: str, values_fn) -> dict:
        values = values_fn()
        ref = self._ref(
            lambda start=0, count=None: V.array_children(
                values_fn(), start, count if count is not None else min(values_fn().size, 100)
            )
        )
        return {"name": name, "value": f"{type_}[{values.size}]", "type": type_,
                "variablesReference": ref, "indexedVariables": int(values.size)}  # fmt: skip

    def _shared(self, w: int) -> list[dict]:
        s = self.live
        return [self._array(name, et, lambda name=name: next(
            v for n, _, v in V.shared_arrays(s, w) if n == name))
            for name, et, _ in V.shared_arrays(s, w)]  # fmt: skip

    def _globals(self) -> list[dict]:
        s = self.live
        return [self._array(b.name, b.dtype, lambda b=b: V.buffer_view(s, b))
                for b in s.case.buffers]  # fmt: skip

    def _warp(self, w: int) -> list[dict]:
        s = self.live
        lanes, active, exited = V.warp_lanes(s, w)
        out = [V._var("active mask", f"0x{active:08x}", "b32"),
               V._var("exited mask", f"0x{exited:08x}", "b32")]  # fmt: skip
        for r in s.func.regs:

            def lane_values(r=r, start=0, count=None):
                bits, written = V.reg_bits(s, r.name, lanes)
                return [V._var(f"lane {k}", "(not written)" if bits is None or not written[k]
                               else V.show(bits[k], r.type), r.type.lstrip("."))
                        for k in range(len(lanes))]  # fmt: skip

            out.append(
                {
                    "name": r.name,
                    "value": f"{len(lanes)} lanes",
                    "type": r.type.lstrip("."),
                    "variablesReference": self._ref(lane_values),
                }
            )
        return out

    def on_variables(self, req, args) -> None:
        fn = self.refs.get(int(args["variablesReference"]))
        if fn is None:
            self.ch.respond(req, {"variables": []})
            return
        if "start" in args or "count" in args:
            try:
                out = fn(start=int(args.get("start", 0)), count=int(args.get("count", 100)))
            except TypeError:
                out = fn()
        else:
            out = fn()
        self.ch.respond(req, {"variables": out})

    def on_evaluate(self, req, args) -> None:
        s = self.session
        expr = str(args.get("expression", "")).strip()
        if s is None:
            raise ValueError("not launched")
        v = s.evaluate(expr)
        if isinstance(v, np.floating):
            text = V._g(v, wide=v.dtype == np.float64)
        elif isinstance(v, np.bool_ | bool):
            text = "true" if v else "false"
        else:
            text = str(v.item() if hasattr(v, "item") else v)
        self.ch.respond(req, {"result": text, "variablesReference": 0})


def _same_file(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return a == b


def _opt_int(v):
    return None if v is None or v == "" else int(v)


def _dim(v) -> tuple[int, int, int]:
    if v is None or v == "":
        return (0, 0, 0)
    if isinstance(v, int):
        return (v, 0, 0)
    if isinstance(v, str):
        v = [int(x) for x in v.replace("(", "").replace(")", "").split(",") if x.strip()]
    t = [int(x) for x in v] + [0, 0, 0]
    return (t[0], t[1], t[2])


def _c(t) -> str:
    return f"({t[0]},{t[1]},{t[2]})"
