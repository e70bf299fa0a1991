"""A watcher that ends every process a server started when the server itself is killed.

A tool runs in a session of its own so that a timeout or a cancelled job kills it *and its
children* (``process.py``). When the server is ended normally, ``atexit`` does that; when it is
killed (SIGKILL, an editor that gives up, the OOM killer) nothing in it runs any more, and a
hung nvcc, a ptxas stuck on a version probe or a GPU worker spinning on a kernel would live on.

So the server starts one small helper (``enable()``): a Python process in its own session,
isolated, which reads "+GROUP", "-GROUP", "+pid PID", "-pid PID" lines from a pipe whose
write end only the server holds. When that pipe reaches end of file — the server is gone, however
it went — the helper SIGKILLs every process group and process still registered, and exits
(end of file is the signal, on every Unix: ``PR_SET_PDEATHSIG`` would kill the helper itself
at the server's death, before it could clean up). It ignores SIGINT/SIGHUP/SIGTERM sent to a
terminal's or an editor's process group, so it outlives the server by the moment it needs.
Registration is a write of a few bytes; a process without the helper (the CLI, tests)
registers nothing.

A tool can leave its process group: ``setsid sleep 1000 &`` in a wrapper script starts a new
session that no group kill reaches, and re-parents to init when the tool exits. So every tool
``process.py`` starts carries a mark in its environment, ``PTXLS_OWNED_BY=<owner>.<run>``
(``tool_env``), which its children inherit whatever session they move to. When a tool's run ends,
every process still marked with that run is killed (``kill_marked``, a read of
``/proc/*/environ``: about 1.5 ms for 100 processes); at the server's exit every process marked
with the server's owner id is; and the watcher does the same sweep after the server was killed.
A process that also empties its environment (``env -i``) escapes the mark (see below).

While the server runs it is also a *child subreaper* (``PR_SET_CHILD_SUBREAPER``, Linux): an
orphan of a tool re-parents to the server, not to init, so at exit ``kill_descendants`` ends the
whole tree below the server — marked or not — except the watcher. (An unmarked orphan that ends
on its own while the server runs stays a zombie until the server exits: reaping it would need
``waitpid(-1)``, which would take the exit status of a tool ``subprocess`` is waiting for.)

A *killed* server runs none of that, and a process that left both the group and the mark
(``env -i setsid sleep 1000 &``) is then found only by its place in the process tree — which the
server's death breaks: its children re-parent to init. So while any tool or worker is registered
(or a descendant it noted still lives), the watcher notes the server's descendants every
``SCAN_EVERY_S`` (0.1 s) with their start times, from the kernel's per-thread child lists
(``/proc/PID/task/TID/children``: well under a millisecond; where that file is missing, a walk
of all of ``/proc`` every second, 10-20 ms on a busy machine); idle, it only waits on the pipe.
When the pipe closes it stops (SIGSTOP: a stopped process cannot fork) everything it noted that
still runs with the same start time, everything in a registered group, and everything below
those, looks again until nothing new appears, then SIGKILLs them all
(tests/test_trust_reaper.py: a hung tool's and an exited tool's ``env -i setsid`` child, the
server SIGKILLed). What stays out of reach, and why: a process that both sheds the mark and is
started *and* orphaned within the last 0.1 s before the server dies (started after the last
note, its parent gone before the watcher looks; only a cgroup or a PID namespace would hold it,
and neither is available to an unprivileged editor process everywhere); and a process that
leaves the server's tree *and* clears its environment on a system without ``/proc``.

Not used: making the watcher the subreaper (orphans re-parent only to a subreaper *ancestor*;
the watcher is the server's child, and the editor starts and kills the server itself); and
``PR_SET_PDEATHSIG``, which fires when the *thread* that forked the child ends, not the process
(tools are started from worker threads), and needs ``preexec_fn``, not safe in a threaded
server.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping

from .isolated import private_cwd

OWNER_VAR = "PTXLS_OWNED_BY"

_WATCHER = r"""
import os, select, signal, sys, time
owner = ("\0%s=%s." % (sys.argv[1], sys.argv[2])).encode() if len(sys.argv) > 2 else None
server = int(sys.argv[3]) if len(sys.argv) > 3 else os.getppid()
every = float(sys.argv[4]) if len(sys.argv) > 4 else 0.1
me = os.getpid()
for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
    signal.signal(s, signal.SIG_IGN)

def stat(pid):  # (ppid, pgid, start time) or None
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            rest = f.read().rsplit(b")", 1)[1].split()
        return int(rest[1]), int(rest[2]), int(rest[19])
    except (OSError, IndexError, ValueError):
        return None

def table():  # pid -> (ppid, pgid, start time), every process we can see
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = stat(int(name))
            if st:
                out[int(name)] = st
    return out

def below(procs, roots):  # roots and every process under them, by parent links
    kids = {}
    for pid, (ppid, _, _) in procs.items():
        kids.setdefault(ppid, []).append(pid)
    out, todo = set(), list(roots)
    while todo:
        for k in kids.get(todo.pop(), ()):
            if k not in out and k != me:
                out.add(k)
                todo.append(k)
    return out | {r for r in roots if r in procs and r != me}

def kids(pid):  # from the kernel's per-thread child lists: no walk of all of /proc
    out = []
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/children" % (pid, tid), "rb") as f:
                out += [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            pass
    return out

def under_server():  # pid -> start time of each process below the server now
    if not cheap:
        procs = table()
        return {p: procs[p][2] for p in below(procs, [server])}
    out, todo = {}, [server]
    while todo:
        for k in kids(todo.pop()):
            st = stat(k) if k != me and k not in out else None
            if st:
                out[k] = st[2]
                todo.append(k)
    return out

cheap = os.path.exists("/proc/%d/task/%d/children" % (me, me))
every = every if cheap else max(every, 1.0)  # a walk of all of /proc costs 10-20 ms
groups, pids, seen = set(), set(), {}  # seen: pid -> start time of the server's descendants
fd, buf, last = sys.stdin.fileno(), b"", 0.0
while True:
    busy = groups or pids or seen
    ready, _, _ = select.select([fd], [], [], every if busy else None)
    if ready:
        data = os.read(fd, 65536)
        if not data:
            break
        buf += data
        *lines, buf = buf.split(b"\n")
        for line in lines:
            op, _, arg = line.decode("ascii", "replace").strip().partition(" ")
            try:
                n = int(arg)
            except ValueError:
                continue
            {"+g": groups.add, "-g": groups.discard, "+p": pids.add, "-p": pids.discard}.get(op, id)(n)
    if (groups or pids or seen) and time.monotonic() - last >= every:
        last = time.monotonic()
        alive = {p: t for p, t in seen.items() if (stat(p) or (0, 0, None))[2] == t}
        seen = under_server() | alive

# The server is gone. Its descendants re-parented (to init, or a subreaper above it), but what
# they started still hangs below them: everything under what we saw, under the registered
# groups and pids, is stopped (a stopped process cannot fork), looked for again, then killed.
victims, stopped = set(), set()
for _ in range(20):
    procs = table()
    roots = [p for p, t in seen.items() if p in procs and procs[p][2] == t]
    roots += [p for p, st in procs.items() if st[1] in groups] + [p for p in pids if p in procs]
    new = below(procs, roots) | set(roots)
    new.discard(me)
    victims |= {p for p in new if p in procs}
    fresh = [p for p in victims if p not in stopped]
    if not fresh:
        break
    for p in fresh:
        stopped.add(p)
        try:
            os.kill(p, signal.SIGSTOP)
        except OSError:
            pass
    seen.update({p: procs[p][2] for p in fresh if p in procs})
for g in groups:
    try:
        os.killpg(g, signal.SIGKILL)
    except OSError:
        pass
for p in victims | pids:
    try:
        os.kill(p, signal.SIGKILL)
    except OSError:
        pass
for _ in range(3 if owner else 0):  # the marked processes (a tool's setsid'd children)
    found = 0
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open("/proc/%s/environ" % name, "rb") as f:
                if owner in b"\0" + f.read():
                    os.kill(int(name), signal.SIGKILL)
                    found += 1
        except OSError:
            pass
    if not found:
        break
    time.sleep(0.05)
"""

_lock = threading.Lock()
_proc: subprocess.Popen[bytes] | None = None
_runs = itertools.count(1)
_owner: tuple[int, str] | None = None  # (pid, id): a forked child gets an id of its own

PR_SET_CHILD_SUBREAPER = 36
# While a tool runs, how often the watcher notes the server's descendants (a /proc walk).
SCAN_EVERY_S = 0.1


def owner_id() -> str:
    """This process's mark on the tools it starts: its pid and a random part (pids are reused)."""
    global _owner
    if _owner is None or _owner[0] != os.getpid():
        _owner = (os.getpid(), f"{os.getpid()}-{secrets.token_hex(6)}")
    return _owner[1]


def tool_env(env: Mapping[str, str] | None) -> tuple[dict[str, str], str]:
    """The environment a tool is started with (``env``, or ours) plus its mark; and the mark."""
    mark = f"{owner_id()}.{next(_runs)}"
    out = dict(os.environ if env is None else env)
    out[OWNER_VAR] = mark
    return out, mark


def marked(prefix: str, *, exact: bool) -> list[int]:
    """Pids of the processes whose environment holds ``PTXLS_OWNED_BY=<prefix>`` (the whole value
    when ``exact``, else its start). Linux reads ``/proc``; elsewhere nothing is found."""
    needle = f"\0{OWNER_VAR}={prefix}".encode() + (b"\0" if exact else b"")
    me = os.getpid()
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                data = f.read()
        except OSError:  # gone, or not ours to read
            continue
        if needle in b"\0" + data + b"\0":
            found.append(int(name))
    return found


def kill_marked(prefix: str, *, exact: bool) -> int:
    """SIGKILL every process marked ``prefix`` (a run's mark, or the owner id + '.'), a few rounds
    (one may fork while we look); reap those that re-parented to us. Returns how many."""
    killed = 0
    for _ in range(3):
        pids = marked(prefix, exact=exact)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        _reap(pids)
    return killed


def _reap(pids: list[int], within: float = 0.2) -> None:
    """Collect the exit status of the killed processes that are our children (a subreaper's
    orphans), so that none stays a zombie; the others are their own parents' to reap."""
    deadline = time.monotonic() + within
    waiting = list(pids)
    while waiting and time.monotonic() < deadline:
        for pid in list(waiting):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not our child
                waiting.remove(pid)
                continue
            if done:
                waiting.remove(pid)
        if waiting:
            time.sleep(0.005)


def become_subreaper() -> bool:
    """Ask Linux to re-parent our descendants' orphans to us (``PR_SET_CHILD_SUBREAPER``).
    False elsewhere, or where the call fails."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def descendants(root: int | None = None) -> list[int]:
    """Every process below ``root`` (default: us), from the parent pid in ``/proc/*/stat``;
    children before grandchildren. Empty where there is no ``/proc``."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            ppid = int(stat.rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(0), []):
            if child not in out and child != root:
                out.append(child)
                todo.append(child)
    return out


def kill_descendants() -> int:
    """At the server's exit: SIGKILL every process below it, but the watcher (whose own sweep
    runs when our end of its pipe closes). Returns how many."""
    spare = watcher_pid()
    victims = [p for p in descendants() if p != spare]
    for pid in victims:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return len(victims)


def enable() -> int | None:
    """Start the watcher for this process (idempotent). Returns its pid, None where it could not
    start (the server then works as before, with atexit's cleanup only)."""
    global _proc
    with _lock:
        if _proc is not None and _proc.poll() is None:
            return _proc.pid
        try:
            _proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _WATCHER]
                + [OWNER_VAR, owner_id(), str(os.getpid()), str(SCAN_EVERY_S)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd=private_cwd(),
                start_new_session=True,  # a signal to the server's group does not reach it
                close_fds=True,
            )
        except OSError:
            _proc = None
            return None
        become_subreaper()
        return _proc.pid


def enabled() -> bool:
    return _proc is not None and _proc.poll() is None


def _send(line: str) -> None:
    with _lock:
        proc = _proc
        if proc is None or proc.stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            proc.stdin.write(line.encode("ascii"))
            proc.stdin.flush()


def watch_group(pgid: int) -> None:
    _send(f"+g {pgid}\n")


def forget_group(pgid: int) -> None:
    _send(f"-g {pgid}\n")


def watch_pid(pid: int) -> None:
    _send(f"+p {pid}\n")


def forget_pid(pid: int) -> None:
    _send(f"-p {pid}\n")


def watcher_pid() -> int | None:
    proc = _proc
    return proc.pid if proc is not None and enabled() else None
