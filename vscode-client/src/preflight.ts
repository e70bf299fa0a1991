// Before handing the command to vscode-languageclient, check that the interpreter
// exists and can import ptxls. The language client's own failure for these cases is
// "Server process exited with code 1" five times in a row, which tells a person
// nothing about what to fix.
import { spawn } from "node:child_process";
import type { ServerCommand } from "./settings";

// kind: "missing" (no such interpreter), "no-ptxls" (it runs but cannot import ptxls),
// "broken" (importing ptxls fails some other way).
export type Preflight = { ok: true } | { ok: false; kind: "missing" | "no-ptxls" | "broken"; problem: string; detail: string };

const TIMEOUT_MS = 20_000;

// `cwd`: the server's own working directory (never the workspace: `-c` imports from it).
export function checkServerCommand(server: ServerCommand, env: NodeJS.ProcessEnv, cwd: string): Promise<Preflight> {
  // Only the `<python> -m ptxls serve` form can be checked without starting the server.
  const isPythonModule = server.args[0] === "-m" && server.args[1] === "ptxls.server";
  const args = isPythonModule ? ["-c", "import ptxls.server.app"] : null;
  if (args === null) {
    return Promise.resolve({ ok: true });
  }
  return new Promise((resolve) => {
    let stderr = "";
    let settled = false;
    const finish = (result: Preflight) => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        resolve(result);
      }
    };
    const child = spawn(server.command, args, { env, cwd, stdio: ["ignore", "ignore", "pipe"] });
    const timer = setTimeout(() => {
      child.kill();
      // A slow import is not a broken install: let the real start decide.
      finish({ ok: true });
    }, TIMEOUT_MS);
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("error", (error: NodeJS.ErrnoException) => {
      const problem =
        error.code === "ENOENT"
          ? `The Python interpreter "${server.command}" (from ${server.origin}) was not found.`
          : `The Python interpreter "${server.command}" (from ${server.origin}) could not be run: ${error.message}`;
      finish({ ok: false, kind: "missing", problem, detail: String(error) });
    });
    child.on("exit", (code) => {
      if (code === 0) {
        finish({ ok: true });
      } else if (/ModuleNotFoundError|No module named/.test(stderr)) {
        finish({
          ok: false,
          kind: "no-ptxls",
          problem: `ptxls is not installed for "${server.command}" (from ${server.origin}).`,
          detail: stderr,
        });
      } else {
        finish({
          ok: false,
          kind: "broken",
          problem: `"${server.command} -c 'import ptxls.server.app'" failed with exit code ${code}; see the ptxls output for the traceback.`,
          detail: stderr,
        });
      }
    });
  });
}
