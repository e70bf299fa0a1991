// Reads the `ptxls.server.*` settings that decide how the server process starts, and lists the
// interpreters to try when they are empty. Everything else in the `ptxls` section is read by the
// server itself through workspace/configuration, so the client does not need to know its shape.
import * as vscode from "vscode";
import type { ManagedEnvironment } from "./environment";
import { selectedInterpreter } from "./pythonExtension";

export const SECTION = "ptxls";

export interface ServerCommand {
  command: string;
  args: string[];
  // Where the command came from, for messages a person can act on.
  origin: "ptxls.server.command" | "ptxls.server.pythonPath" | "Python extension" | "ptxls environment" | "python3 on PATH";
  managed?: ManagedEnvironment;
}

export type ServerChoice =
  // A setting names the server: use it as it is, and say what is wrong with it if it fails.
  | { explicit: ServerCommand }
  // No setting: the first of these whose Python can import ptxls.
  | { candidates: ServerCommand[] };

const SERVE = ["-m", "ptxls.server", "serve"];

// `ptxls.server.command` wins, then `ptxls.server.pythonPath`; otherwise the interpreter selected
// in the Python extension, the environments "Create a ptxls environment" made (workspace, then
// global), and python3. vscode-languageclient appends `--stdio` itself.
export async function resolveServerCommand(managed: ManagedEnvironment[]): Promise<ServerChoice> {
  const config = vscode.workspace.getConfiguration(SECTION);
  const command = config.get<string[]>("server.command", []).filter((s) => s.trim() !== "");
  if (command.length > 0) {
    return { explicit: { command: command[0], args: command.slice(1), origin: "ptxls.server.command" } };
  }
  const pythonPath = config.get<string>("server.pythonPath", "").trim();
  if (pythonPath) {
    return { explicit: { command: expandHome(pythonPath), args: SERVE, origin: "ptxls.server.pythonPath" } };
  }
  const candidates: ServerCommand[] = [];
  const selected = await selectedInterpreter(vscode.workspace.workspaceFolders?.[0]?.uri);
  if (selected) {
    candidates.push({ command: selected.path, args: SERVE, origin: "Python extension" });
  }
  for (const env of managed) {
    candidates.push({ command: env.python, args: SERVE, origin: "ptxls environment", managed: env });
  }
  candidates.push({ command: "python3", args: SERVE, origin: "python3 on PATH" });
  return { candidates };
}

// Settings whose change means the server process must be restarted; the rest
// reach the running server through workspace/didChangeConfiguration.
export function needsRestart(event: vscode.ConfigurationChangeEvent): boolean {
  return event.affectsConfiguration(`${SECTION}.server`);
}

function expandHome(path: string): string {
  const home = process.env.HOME ?? process.env.USERPROFILE;
  return home && path.startsWith("~/") ? home + path.slice(1) : path;
}
