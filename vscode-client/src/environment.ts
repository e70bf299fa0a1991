// "Create a ptxls environment": for people who have no Python environment with ptxls and
// should not need to know how to make one. A venv is created (in VS Code's storage for this
// extension, or in the workspace's .ptxls/venv if the person chooses) with an interpreter
// from the Python extension or python3 on PATH; the ptxls wheel that ships inside the .vsix
// (bundled/) is installed into it with its dependencies from the package index.
//
// The venv remembers which bundled wheel it got (ptxls-bundled-wheel.txt: name and sha256), so
// an updated extension updates its environment before starting the server.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as vscode from "vscode";
import { selectedInterpreter } from "./pythonExtension";
import { chooseBaseInterpreter, explainPipFailure, privateWorkingDirectory, type PythonProbe, probePython, progressFromPipLine, versionText } from "./pythonProbe";

export const CREATE_COMMAND = "ptxls.createEnvironment";
// The button's label (short: a notification cuts long ones); the command is "Create a ptxls environment".
export const CREATE_LABEL = "Create environment";
const MARKER = "ptxls-bundled-wheel.txt";

export type Place = "global" | "workspace";

export interface ManagedEnvironment {
  place: Place;
  dir: string;
  python: string;
}

function pythonIn(dir: string): string {
  return process.platform === "win32" ? join(dir, "Scripts", "python.exe") : join(dir, "bin", "python");
}

export function managedEnvironments(context: vscode.ExtensionContext): ManagedEnvironment[] {
  const places: ManagedEnvironment[] = [];
  const folder = vscode.workspace.workspaceFolders?.[0];
  // Only in a trusted workspace: a cloned repository could ship its own .ptxls/venv/bin/python,
  // and starting it would run that repository's code.
  if (folder?.uri.scheme === "file" && vscode.workspace.isTrusted) {
    const dir = join(folder.uri.fsPath, ".ptxls", "venv");
    places.push({ place: "workspace", dir, python: pythonIn(dir) });
  }
  const dir = join(context.globalStorageUri.fsPath, "venv");
  places.push({ place: "global", dir, python: pythonIn(dir) });
  return places;
}

// The ptxls wheel inside the .vsix (built by `npm run package`); undefined in a dev build.
export function bundledWheel(context: vscode.ExtensionContext): string | undefined {
  const folder = join(context.extensionPath, "bundled");
  if (!existsSync(folder)) {
    return undefined;
  }
  const wheels = readdirSync(folder).filter((f) => /^ptxls-.*\.whl$/.test(f));
  return wheels.length ? join(folder, wheels.sort().pop() as string) : undefined;
}

// Name and content hash: a rebuilt wheel with the same version still counts as new.
function wheelIdentity(wheel: string): string {
  const sha = createHash("sha256").update(readFileSync(wheel)).digest("hex");
  return `${wheel.split(/[\\/]/).pop()} sha256:${sha}`;
}

// True when the environment was made from another bundled wheel than the one shipped now.
export function isStale(env: ManagedEnvironment, wheel: string | undefined): boolean {
  if (!wheel) {
    return false;
  }
  try {
    return readFileSync(join(env.dir, MARKER), "utf8").trim() !== wheelIdentity(wheel);
  } catch {
    return true;
  }
}

export type SetupResult = { ok: true; env: ManagedEnvironment } | { ok: false; problem: string; cancelled?: boolean };

export class EnvironmentMaker {
  private running: Promise<SetupResult> | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly output: vscode.OutputChannel,
  ) {}

  // Asks where (when there is a workspace), then creates. One at a time.
  async createInteractively(): Promise<SetupResult> {
    if (this.running) {
      return this.running;
    }
    const places = managedEnvironments(this.context);
    let env = places.find((p) => p.place === "global") as ManagedEnvironment;
    const workspace = places.find((p) => p.place === "workspace");
    if (workspace) {
      const picked = await vscode.window.showQuickPick(
        [
          { label: "For all my workspaces", description: "in VS Code's storage for ptxls", env },
          { label: "For this workspace only", description: workspace.dir, env: workspace },
        ],
        { title: "ptxls: where should the Python environment for ptxls go?", ignoreFocusOut: true },
      );
      if (!picked) {
        return { ok: false, problem: "cancelled", cancelled: true };
      }
      env = picked.env;
    }
    return this.make(env, false);
  }

  // Installs the bundled wheel again into an environment made by an older extension.
  update(env: ManagedEnvironment): Promise<SetupResult> {
    return this.make(env, true);
  }

  private make(env: ManagedEnvironment, update: boolean): Promise<SetupResult> {
    if (!this.running) {
      this.running = this.makeWithProgress(env, update).finally(() => {
        this.running = undefined;
      });
    }
    return this.running;
  }

  private makeWithProgress(env: ManagedEnvironment, update: boolean): Promise<SetupResult> {
    const title = update ? "ptxls: updating the ptxls environment" : "ptxls: creating a Python environment for ptxls";
    return Promise.resolve(
      vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, (progress, token) =>
        this.steps(env, update, (message) => progress.report({ message }), token),
      ),
    );
  }

  private async steps(env: ManagedEnvironment, update: boolean, report: (m: string) => void, token: vscode.CancellationToken): Promise<SetupResult> {
    const wheel = bundledWheel(this.context);
    if (!wheel) {
      return { ok: false, problem: "this build of the extension carries no ptxls wheel (bundled/ptxls-*.whl); build it with `npm run package`." };
    }
    this.output.appendLine(`\n${update ? "Updating" : "Creating"} the ptxls environment ${env.dir} from ${wheel}`);
    if (!update || !existsSync(env.python)) {
      report("finding Python 3.11 or newer…");
      const base = await this.findBaseInterpreter();
      if (!base.ok) {
        this.output.appendLine(base.problem);
        return base;
      }
      const python = base.probe.executable ?? base.probe.command;
      report(`creating the environment with Python ${versionText(base.probe)} (${python})…`);
      const venv = await this.run(python, ["-m", "venv", "--clear", env.dir], token);
      if (venv.cancelled) return { ok: false, problem: "cancelled", cancelled: true };
      if (venv.code !== 0) {
        const problem = `"${python} -m venv ${env.dir}" failed (exit code ${venv.code}); its output is in the ptxls output.`;
        return { ok: false, problem };
      }
    }
    const pipInstall = ["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--progress-bar", "off"];
    if (update) {
      // Same version number, new build: pip would call it satisfied and keep the old files.
      report("replacing ptxls with the extension's new build…");
      const replaced = await this.run(env.python, [...pipInstall, "--force-reinstall", "--no-deps", wheel], token);
      if (replaced.cancelled) return { ok: false, problem: "cancelled", cancelled: true };
      if (replaced.code !== 0) return { ok: false, problem: explainPipFailure(replaced.output, replaced.code) };
    }
    report("installing ptxls and its dependencies from the package index (about 600 MB the first time)…");
    const pip = await this.run(
      env.python,
      [...pipInstall, wheel],
      token,
      (line) => {
        const message = progressFromPipLine(line);
        if (message) report(`${message}…`);
      },
    );
    if (pip.cancelled) return { ok: false, problem: "cancelled", cancelled: true };
    if (pip.code !== 0) {
      return { ok: false, problem: explainPipFailure(pip.output, pip.code) };
    }
    writeFileSync(join(env.dir, MARKER), `${wheelIdentity(wheel)}\n`);
    this.output.appendLine(`The ptxls environment is ready: ${env.python}`);
    return { ok: true, env };
  }

  // The Python extension's interpreter first (the person chose it), then python3 / python on PATH.
  private async findBaseInterpreter() {
    const candidates: [string, string][] = [];
    const selected = await selectedInterpreter(vscode.workspace.workspaceFolders?.[0]?.uri);
    if (selected) candidates.push([selected.path, "selected in the Python extension"]);
    const names = process.platform === "win32" ? ["py", "python"] : ["python3", "python3.13", "python3.12", "python3.11", "python"];
    for (const name of names) candidates.push([name, "on PATH"]);
    const probes: PythonProbe[] = [];
    for (const [command, origin] of candidates) {
      const probe = await probePython(command, origin, privateWorkingDirectory(this.context.globalStorageUri.fsPath));
      this.output.appendLine(`  ${command} (${origin}): ${probe.ok ? `Python ${versionText(probe)}${probe.canMakeVenv ? "" : ", no venv/ensurepip"}` : probe.error}`);
      probes.push(probe);
      const choice = chooseBaseInterpreter([probe]);
      if (choice.ok) return choice;
    }
    // The message names what exists, and python3 even when it does not.
    return chooseBaseInterpreter(probes.filter((p) => p.ok || p.origin !== "on PATH" || p.command === "python3"));
  }

  // Runs a command, echoing its output to the ptxls output channel line by line.
  private run(command: string, args: string[], token: vscode.CancellationToken, onLine?: (line: string) => void) {
    return new Promise<{ code: number | null; output: string; cancelled: boolean }>((resolve) => {
      this.output.appendLine(`$ ${command} ${args.join(" ")}`);
      let output = "";
      let partial = "";
      let cancelled = false;
      // never the workspace: `python -m venv` / `-m pip` import from their working directory
      const cwd = privateWorkingDirectory(this.context.globalStorageUri.fsPath);
      const child = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, PYTHONUNBUFFERED: "1" } });
      const cancel = token.onCancellationRequested(() => {
        cancelled = true;
        child.kill();
      });
      const take = (chunk: Buffer) => {
        const text = chunk.toString();
        output += text;
        const lines = (partial + text).split(/\r?\n/);
        partial = lines.pop() ?? "";
        for (const line of lines) {
          this.output.appendLine(`  ${line}`);
          onLine?.(line);
        }
      };
      child.stdout.on("data", take);
      child.stderr.on("data", take);
      child.on("error", (error) => {
        output += String(error);
        this.output.appendLine(`  ${error.message}`);
      });
      child.on("close", (code) => {
        cancel.dispose();
        if (partial) this.output.appendLine(`  ${partial}`);
        resolve({ code, output, cancelled });
      });
    });
  }
}
