// The pure parts of "Create a ptxls environment": which Python to build the venv with, what
// pip's output means. Real interpreters and a real pip transcript, no doubles.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { chooseBaseInterpreter, explainPipFailure, isRecentEnough, parseProbeOutput, type PythonProbe, probePython, progressFromPipLine } from "../src/pythonProbe";

const DATA = join(__dirname, "..", "test", "data");

test("probing the real python3 gives its version and path", async () => {
  const expected = execFileSync("python3", ["-c", "import sys; print(sys.version_info[0], sys.version_info[1])"], { encoding: "utf8" }).trim();
  const probe = await probePython("python3", "on PATH", tmpdir());
  assert.equal(probe.ok, true, probe.error);
  assert.equal(probe.version?.join(" "), expected);
  assert.ok(probe.executable && probe.executable.length > 0);
});

test("a missing interpreter is 'not found', not a crash", async () => {
  const probe = await probePython("/nonexistent/python3", "setting", tmpdir());
  assert.deepEqual([probe.ok, probe.error], [false, "not found"]);
});

test("probe output: version, venv support, executable", () => {
  assert.deepEqual(parseProbeOutput("3 12 1\n/usr/bin/python3.12\n"), { version: [3, 12], canMakeVenv: true, executable: "/usr/bin/python3.12" });
  assert.deepEqual(parseProbeOutput("3 11 0\n/usr/bin/python3\n")?.canMakeVenv, false);
  assert.equal(parseProbeOutput("Python 3.12"), undefined);
});

test("Python 3.11 is the oldest accepted", () => {
  assert.equal(isRecentEnough([3, 10]), false);
  assert.equal(isRecentEnough([3, 11]), true);
  assert.equal(isRecentEnough([4, 0]), true);
  assert.equal(isRecentEnough(undefined), false);
});

const probe = (command: string, version: [number, number] | undefined, canMakeVenv = true): PythonProbe =>
  version ? { command, origin: "on PATH", ok: true, version, canMakeVenv } : { command, origin: "on PATH", ok: false, error: "not found" };

test("the first recent interpreter that can make a venv is chosen", () => {
  const choice = chooseBaseInterpreter([probe("python3", [3, 9]), probe("python3.12", [3, 12], false), probe("python3.11", [3, 11])]);
  assert.equal(choice.ok && choice.probe.command, "python3.11");
});

test("too old: the message names what was found and what to install", () => {
  const choice = chooseBaseInterpreter([probe("python3", [3, 9]), probe("python3.13", undefined)]);
  assert.equal(choice.ok, false);
  if (!choice.ok) {
    assert.match(choice.problem, /needs Python 3\.11 or newer/);
    assert.match(choice.problem, /python3 is Python 3\.9/);
    assert.match(choice.problem, /Create a ptxls environment/);
  }
});

test("recent but without venv: the Debian package to install", () => {
  const choice = chooseBaseInterpreter([probe("python3", [3, 11], false)]);
  assert.equal(!choice.ok && /sudo apt install python3\.11-venv/.test(choice.problem), true);
});

test("pip without the network (a real pip transcript): say the index is unreachable and what to do", () => {
  const output = readFileSync(join(DATA, "pip-no-network.txt"), "utf8");
  const message = explainPipFailure(output, 1);
  assert.match(message, /could not reach the Python package index/);
  assert.match(message, /PIP_INDEX_URL/);
  // The retry line in the same transcript becomes progress, not silence.
  const retry = output.split("\n").find((l) => l.startsWith("WARNING: Retrying")) as string;
  assert.match(progressFromPipLine(retry) ?? "", /does not answer/);
});

test("pip without the network and without retries (a real transcript): no connection error, still said plainly", () => {
  const output = readFileSync(join(DATA, "pip-no-network-no-retries.txt"), "utf8");
  assert.doesNotMatch(output, /NewConnectionError/);
  const message = explainPipFailure(output, 1);
  assert.match(message, /found no version at all of pygls<3,>=2\.1 .* at http:\/\/127\.0\.0\.1:9\/simple: that index could not be reached/);
  assert.match(message, /PIP_INDEX_URL/);
});

test("other pip failures quote pip's last error", () => {
  const message = explainPipFailure("Processing x.whl\nERROR: ptxls requires a different Python: 3.10.0 not in '>=3.11'\n", 1);
  assert.match(message, /exit code 1\): ptxls requires a different Python/);
});

test("pip progress lines become short messages", () => {
  assert.equal(progressFromPipLine("Collecting pygls<3,>=2.1 (from ptxls==0.1.0)"), "looking up pygls<3,>=2.1");
  assert.equal(progressFromPipLine("  Downloading nvidia_cuda_nvcc-13.0.88-py3-none-manylinux_2_27_x86_64.whl (40.2 MB)"), "downloading nvidia_cuda_nvcc (40.2 MB)");
  assert.equal(progressFromPipLine("Installing collected packages: numpy, pygls"), "installing the downloaded packages");
  assert.equal(progressFromPipLine("  Using cached numpy-2.1.0.whl"), undefined);
});
