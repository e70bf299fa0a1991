// Plain Node, no `vscode`: asks a Python interpreter what it is, and turns pip's output into
// progress a person can follow and failures they can act on. Unit-tested in test/setup.test.ts.
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import * as os from "node:os";

export const MIN_PYTHON: [number, number] = [3, 11];

export interface PythonProbe {
  command: string;
  // Why this interpreter was tried ("Python extension", "python3 on PATH", ...).
  origin: string;
  ok: boolean;
  version?: [number, number];
  executable?: string;
  // `python -m venv` needs the venv module and ensurepip (Debian splits them into python3-venv).
  canMakeVenv?: boolean;
  error?: string;
}

// Printed by the interpreter itself: its version, its real path, whether venv + ensurepip import.
const PROBE_SCRIPT = [
  "import sys",
  "try:\n import venv, ensurepip\n ok = 1\nexcept ImportError:\n ok = 0",
  "print(sys.version_info[0], sys.version_info[1], ok)",
  "print(sys.executable)",
].join("\n");

export function parseProbeOutput(stdout: string): Pick<PythonProbe, "version" | "canMakeVenv" | "executable"> | undefined {
  const [first, executable] = stdout.trim().split(/\r?\n/);
  const m = /^(\d+) (\d+) ([01])$/.exec(first?.trim() ?? "");
  if (!m) {
    return undefined;
  }
  return { version: [Number(m[1]), Number(m[2])], canMakeVenv: m[3] === "1", executable: executable?.trim() };
}

/** A working directory for every Python the extension starts: `storageDir` (the extension's
 * global storage, made 0700 if missing), else the home folder; never the workspace. `python -c`
 * and `python -m` put their working directory first on sys.path, and VS Code's own working
 * directory may be the folder it was opened on (`code .` in a cloned repository): that
 * folder's `ptxls/`, `venv.py` or `pip/` would be imported in place of the real ones. */
export function privateWorkingDirectory(storageDir: string): string {
  try {
    mkdirSync(storageDir, { recursive: true, mode: 0o700 });
    return storageDir;
  } catch {
    return os.homedir();
  }
}

// `cwd`: privateWorkingDirectory(...) (the probe imports venv and ensurepip).
export function probePython(command: string, origin: string, cwd: string, timeoutMs = 20_000): Promise<PythonProbe> {
  return new Promise((resolve) => {
    let stdout = "";
    let stderr = "";
    let done = false;
    const finish = (probe: PythonProbe) => {
      if (!done) {
        done = true;
        clearTimeout(timer);
        resolve(probe);
      }
    };
    const child = spawn(command, ["-c", PROBE_SCRIPT], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    const timer = setTimeout(() => {
      child.kill();
      finish({ command, origin, ok: false, error: `did not answer within ${timeoutMs / 1000} s` });
    }, timeoutMs);
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", (error: NodeJS.ErrnoException) =>
      finish({ command, origin, ok: false, error: error.code === "ENOENT" ? "not found" : error.message }),
    );
    child.on("exit", (code) => {
      const parsed = code === 0 ? parseProbeOutput(stdout) : undefined;
      if (!parsed) {
        const why = stderr.trim().split(/\r?\n/).pop() || `exit code ${code}`;
        finish({ command, origin, ok: false, error: why });
      } else {
        finish({ command, origin, ok: true, ...parsed });
      }
    });
  });
}

export function versionText(probe: PythonProbe): string {
  return probe.version ? `${probe.version[0]}.${probe.version[1]}` : "?";
}

export function isRecentEnough(version: [number, number] | undefined): boolean {
  return !!version && (version[0] > MIN_PYTHON[0] || (version[0] === MIN_PYTHON[0] && version[1] >= MIN_PYTHON[1]));
}

export type BaseChoice = { ok: true; probe: PythonProbe } | { ok: false; problem: string };

// The first interpreter that is recent enough and can make a venv; otherwise what to do.
export function chooseBaseInterpreter(probes: PythonProbe[]): BaseChoice {
  const usable = probes.find((p) => p.ok && isRecentEnough(p.version) && p.canMakeVenv);
  if (usable) {
    return { ok: true, probe: usable };
  }
  const min = `${MIN_PYTHON[0]}.${MIN_PYTHON[1]}`;
  const seen = probes.map((p) =>
    p.ok ? `${p.command} is Python ${versionText(p)}${p.canMakeVenv ? "" : " without venv/ensurepip"}` : `${p.command}: ${p.error}`,
  );
  const recentWithoutVenv = probes.find((p) => p.ok && isRecentEnough(p.version) && !p.canMakeVenv);
  if (recentWithoutVenv) {
    const v = versionText(recentWithoutVenv);
    return {
      ok: false,
      problem:
        `${recentWithoutVenv.command} (Python ${v}) cannot create virtual environments: its venv/ensurepip module is missing. ` +
        `On Debian or Ubuntu install it with "sudo apt install python${v}-venv", then run "ptxls: Create a ptxls environment" again.`,
    };
  }
  return {
    ok: false,
    problem:
      `ptxls needs Python ${min} or newer, and none was found (${seen.join("; ") || "nothing to try"}). ` +
      `Install Python ${min}+ (python.org/downloads, or your system's package manager), select it in the Python extension ` +
      `or set ptxls.server.pythonPath to it, then run "ptxls: Create a ptxls environment" again.`,
  };
}

// One line of `pip install` output → a short progress message, or undefined to keep the last.
export function progressFromPipLine(line: string): string | undefined {
  const text = line.trim();
  let m = /^Collecting (\S+)/.exec(text);
  if (m) return `looking up ${m[1]}`;
  m = /^Downloading (\S+?)(?:-\d[^ ]*)?(?:\.whl|\.tar\.gz)? \(([^)]+)\)/.exec(text);
  if (m) return `downloading ${basename(m[1])} (${m[2]})`;
  if (/^Installing collected packages/.test(text)) return "installing the downloaded packages";
  if (/^WARNING: Retrying/.test(text)) return "the package index does not answer; pip is retrying";
  return undefined;
}

function basename(urlOrName: string): string {
  return urlOrName.split("/").pop() ?? urlOrName;
}

const NETWORK_SIGNS = [
  "NewConnectionError",
  "Failed to establish a new connection",
  "NameResolutionError",
  "Temporary failure in name resolution",
  "ConnectTimeoutError",
  "ReadTimeoutError",
  "ProxyError",
  "Network is unreachable",
];

// What went wrong in a failed `pip install`, said so that a person knows what to do next.
export function explainPipFailure(output: string, exitCode: number | null): string {
  const again = 'then run "ptxls: Create a ptxls environment" again';
  if (NETWORK_SIGNS.some((sign) => output.includes(sign))) {
    return (
      "pip could not reach the Python package index, which ptxls needs once to download its dependencies " +
      "(pygls, numpy, cuda-python and NVIDIA's CUDA compiler wheels, about 600 MB). Check the internet connection " +
      `or proxy (pip honours HTTPS_PROXY, and PIP_INDEX_URL for a mirror), ${again}.`
    );
  }
  // Without retries pip prints no connection error, only that a dependency has no versions at
  // all; ptxls's dependencies are on PyPI, so the index it asked is unreachable or not PyPI.
  const none = /Could not find a version that satisfies the requirement (\S+).*\(from versions: none\)/.exec(output);
  if (none) {
    const index = /Looking in indexes: (\S+)/.exec(output)?.[1] ?? "the package index";
    return (
      `pip found no version at all of ${none[1]} (a ptxls dependency on PyPI) at ${index}: that index could not be reached, ` +
      "or it is a mirror without ptxls's dependencies. Check the internet connection or proxy (pip honours HTTPS_PROXY, " +
      `and PIP_INDEX_URL for a mirror), ${again}.`
    );
  }
  if (/No space left on device/.test(output)) {
    return `The disk is full: the environment needs about 1.5 GB. Free some space, ${again}.`;
  }
  const lastError = output
    .split(/\r?\n/)
    .filter((l) => l.startsWith("ERROR:"))
    .pop();
  return `pip could not install ptxls (exit code ${exitCode})${lastError ? `: ${lastError.replace(/^ERROR:\s*/, "")}` : ""}. pip's whole output is in the ptxls output; fix what it says, ${again}.`;
}
