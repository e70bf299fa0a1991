"""What the emulator checks on every access, and the findings it writes.

Findings are kept one per (kind, line, buffer): the first thread is named, ``count`` says how
many threads (or bytes) hit the same problem there — the same grouping a person wants from
compute-sanitizer's per-thread lines.

Shared-memory races are found per byte between barriers: each byte keeps its last writer
(thread), its last readers (warp, or "several warps"), and the block's barrier epoch at the time;
an access that meets a write — or, for a write, a read — of the same epoch by another warp is a
race. Accesses by lanes of one warp are not compared (warp-synchronous code orders them with
``bar.warp.sync``/``shfl.sync``, which this model does not track), as compute-sanitizer's racecheck
also reports hazards between warps only."""

from __future__ import annotations

import numpy as np

from . import errors as E

MAX_FINDINGS = 200


class Checks:
    def __init__(self, function: str = "") -> None:
        self.function = function
        self.findings: list[E.Finding] = []
        self._by_key: dict[tuple, E.Finding] = {}
        self.instr_text: dict[int, tuple[int, str]] = {}  # pc -> (line, text)

    def add(
        self,
        kind: str,
        pc: int,
        message: str,
        wave=None,
        thread: int | None = None,
        count: int = 1,
        key_extra: str = "",
        **fields,
    ) -> E.Finding | None:
        line, text = self.instr_text.get(pc, (None, ""))
        key = (kind, line, key_extra or fields.get("buffer", ""))
        f = self._by_key.get(key)
        if f is not None:
            f.count += count
            return f
        if len(self.findings) >= MAX_FINDINGS:
            return None
        f = E.Finding(kind, line, message, self.function, text, count=count, **fields)
        if wave is not None and thread is not None:
            f.block = wave.block_of(thread)
            f.thread = wave.tid_of(thread)
        self._by_key[key] = f
        self.findings.append(f)
        return f

    # ---- registers

    def uninit_register(self, wave, reg: str, pc: int, threads: np.ndarray, origin=None) -> None:
        if origin is not None:  # the value came from memory nobody wrote
            load_pc, where = origin
            line, _ = self.instr_text.get(pc, (None, ""))
            is_global = where.startswith("global ")
            what = where.removeprefix("global ")
            self.add(
                E.UNINIT_GLOBAL if is_global else E.UNINIT_SHARED, load_pc,
                f"{'global' if is_global else 'shared'} memory read before anything wrote it "
                f"({what}); the value is used at line {line}",
                wave, int(threads[0]), count=int(threads.size),
                space="global" if is_global else "shared", access="read",
                buffer=what.split("[")[0] if is_global else what.split("+")[0].split(" ")[0],
                element=int(what.split("[")[1].rstrip("]")) if is_global and "[" in what else None,
            )  # fmt: skip
            return
        self.add(
            E.UNINIT_REGISTER, pc,
            f"register {reg} is read before any instruction wrote it (on this thread's path)",
            wave, int(threads[0]), count=int(threads.size), key_extra=reg, space="register",
            access="read",
        )  # fmt: skip


# a word of per-byte flags with every byte set (True is 1), by access size
FLAG_WORD = {2: np.uint16, 4: np.uint32, 8: np.uint64}
ALL_SET: dict[int, int] = {2: 0x0101, 4: 0x01010101, 8: 0x0101010101010101,
                           16: 0x0101010101010101}  # fmt: skip


class SharedTracker:
    """Bookkeeping of one wave's shared memory: which bytes were ever written (initcheck, per
    byte), and per 4-byte word the last writer and readers since the block's last barrier
    (racecheck). Races are looked for on word-aligned accesses of whole words (every f32/u32/
    vector access); 1- and 2-byte accesses are checked for initialisation only, so two threads
    writing different bytes of one word are never called a race."""

    def __init__(self, nbytes: int, nblocks: int, block_bytes: int) -> None:
        self.block_bytes = max(block_bytes, 1)
        nwords = (nbytes + 3) // 4
        self.written = np.zeros((nbytes + 15) // 16 * 16, dtype=bool)  # padded: word views
        self.w_thread = np.full(nwords, -1, dtype=np.int32)
        self.w_epoch = np.full(nwords, -1, dtype=np.int32)
        self.w_line = np.zeros(nwords, dtype=np.int32)
        self.r_warp = np.full(nwords, -1, dtype=np.int32)  # -2: readers in several warps
        self.r_epoch = np.full(nwords, -1, dtype=np.int32)
        self.epoch = np.zeros(nblocks, dtype=np.int32)

    def barrier(self, slots: np.ndarray) -> None:
        self.epoch[slots] += 1

    def _words(self, flat: np.ndarray, total: int, threads: np.ndarray):
        """(word indices, thread per word) of whole-word accesses, or None for sub-word ones."""
        if total % 4 or flat.size == 0 or np.bitwise_or.reduce(flat) & 3:
            return None
        k = total // 4
        if k == 1:
            return flat >> 2, threads
        # repeat + tile: numpy broadcasts [n, 1] + [k] with a k-long inner loop, several times slower
        return np.repeat(flat >> 2, k) + np.tile(np.arange(k), flat.size), np.repeat(threads, k)

    def _flag_words(self, flat: np.ndarray, total: int):
        """(the byte flags viewed as total-byte words, word index per access) when every access
        is aligned to its size (2, 4, 8 or 16 bytes): one gather or scatter, not total."""
        if total not in ALL_SET or flat.size == 0 or self.written.size % 16:
            return None
        if np.bitwise_or.reduce(flat) & (total - 1):
            return None
        if total == 16:  # two 8-byte flag words per access, index and index + 1 (1-D: a row
            return self.written.view(np.uint64), flat >> 3  # gather of [n, 2] is far slower)
        return self.written.view(FLAG_WORD[total]), flat >> (total.bit_length() - 1)

    def _unwritten(self, flat: np.ndarray, total: int) -> np.ndarray:
        words = self._flag_words(flat, total)
        if words is not None:
            view, index = words
            got = view[index]
            differ: np.ndarray = got != got.dtype.type(ALL_SET[total])
            if total == 16:
                differ |= view[index + 1] != got.dtype.type(ALL_SET[total])
            return np.asarray(differ)
        if total == 1:
            return np.asarray(~self.written[flat])
        return np.asarray(~self.written[(flat[:, None] + np.arange(total))].all(axis=1))

    def read(self, wave, flat: np.ndarray, total: int, threads: np.ndarray, pc: int,
             describe) -> np.ndarray | None:  # fmt: skip
        """Checks a read for races; returns per lane whether it read a never-written byte
        (None if none did). Such a read is reported where its value is used (see
        Wave.mark_undefined): loading a whole tile and storing only its valid part is no bug."""
        unwritten = self._unwritten(flat, total)
        ww = self._words(flat, total, threads)
        if ww is not None:
            word, wthreads = ww
            # take: numpy's fancy indexing costs more for the same gather
            ep = self.epoch.take((word << 2) // self.block_bytes)
            warp = wave.gwarp.take(wthreads)
            wt = self.w_thread.take(word)
            raw = (self.w_epoch.take(word) == ep) & (wt >= 0)
            if raw.any():
                raw &= wave.gwarp[np.maximum(wt, 0)] != warp
                if raw.any():
                    i = int(np.argmax(raw))
                    self._race(wave, "read-after-write", int(word[i]) * 4, wthreads[i], int(wt[i]),
                               pc, int(self.w_line[word[i]]), int(raw.sum()), describe)  # fmt: skip
            same = self.r_epoch.take(word) == ep
            prev = self.r_warp.take(word)
            many = same & (prev != -1) & (prev != warp)  # prev == -2 is in it (warp >= 0)
            self.r_warp[word] = np.where(many, -2, warp)
            self.r_epoch[word] = ep
        return unwritten if unwritten.any() else None

    def write(self, wave, flat: np.ndarray, total: int, threads: np.ndarray, pc: int, line: int,
              describe) -> None:  # fmt: skip
        words = self._flag_words(flat, total)
        if words is not None:  # aligned: one word of flags per access
            view, index = words
            view[index] = ALL_SET[total]
            if total == 16:
                view[index + 1] = ALL_SET[total]
        elif total == 1:
            self.written[flat] = True
        else:
            self.written[(flat[:, None] + np.arange(total)).reshape(-1)] = True
        ww = self._words(flat, total, threads)
        if ww is None:
            return
        word, wthreads = ww
        ep = self.epoch.take((word << 2) // self.block_bytes)
        warp = wave.gwarp.take(wthreads)
        wt = self.w_thread.take(word)
        waw = (self.w_epoch.take(word) == ep) & (wt >= 0)
        if waw.any():
            waw &= wave.gwarp[np.maximum(wt, 0)] != warp
            if waw.any():
                i = int(np.argmax(waw))
                self._race(wave, "write-after-write", int(word[i]) * 4, wthreads[i], int(wt[i]), pc,
                           int(self.w_line[word[i]]), int(waw.sum()), describe)  # fmt: skip
        rw = self.r_warp.take(word)
        war = (self.r_epoch.take(word) == ep) & ((rw == -2) | ((rw >= 0) & (rw != warp)))
        if war.any():
            i = int(np.argmax(war))
            self._race(wave, "write-after-read", int(word[i]) * 4, wthreads[i], None, pc, None,
                       int(war.sum()), describe)  # fmt: skip
        # two warps writing the same word in this one instruction (none when the words rise)
        if word.size > 1 and not (word[1:] > word[:-1]).all():
            order = np.argsort(word, kind="stable")
            b, w = word[order], warp[order]
            dup = (b[1:] == b[:-1]) & (w[1:] != w[:-1])
            if dup.any():
                i = int(np.argmax(dup))
                self._race(wave, "write-after-write", int(b[i]) * 4, wthreads[order[i + 1]],
                           int(wthreads[order[i]]), pc, line, int(dup.sum()), describe)  # fmt: skip
        self.w_thread[word] = wthreads
        self.w_epoch[word] = ep
        self.w_line[word] = line
        self.r_epoch[word] = -1
        self.r_warp[word] = -1

    def _race(self, wave, what, byte, thread, other, pc, other_line, count, describe) -> None:
        f = wave.checks.add(
            E.SHARED_RACE, pc,
            f"shared-memory race ({what}) on {describe(int(byte))}: no barrier between the two "
            "accesses of different warps",
            wave, int(thread), count=count, space="shared",
            access="read" if what.startswith("read") else "write",
            address=int(byte) % self.block_bytes, buffer=describe(int(byte), name_only=True),
        )  # fmt: skip
        if f is not None and f.other_thread is None and other is not None and other >= 0:
            f.other_thread = wave.tid_of(other)
            f.other_line = other_line
