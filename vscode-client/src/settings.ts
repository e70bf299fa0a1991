// Reads the `ptxls.server.*` settings that decide how the server process starts.
// Everything else in the `ptxls` section is read by the server itself through
// workspace/configuration, so the client does not need to know its shape.
import * as vscode from "vscode";

export const SECTION = "ptxls";

export interface ServerCommand {
  command: string;
  args: string[];
  // Where the command came from, for messages a person can act on.
  origin: "ptxls.server.command" | "ptxls.server.pythonPath" | "Python extension" | "default";
}

// `ptxls.server.command` wins; otherwise `<python> -m ptxls.server serve`.
// vscode-languageclient appends `--stdio` itself.
export async function resolveServerCommand(): Promise<ServerCommand> {
  const config = vscode.workspace.getConfiguration(SECTION);
  const command = config.get<string[]>("server.command", []).filter((s) => s.trim() !== "");
  if (command.length > 0) {
    return { command: command[0], args: command.slice(1), origin: "ptxls.server.command" };
  }
  const pythonPath = config.get<string>("server.pythonPath", "").trim();
  if (pythonPath) {
    return { command: expandHome(pythonPath), args: ["-m", "ptxls.server", "serve"], origin: "ptxls.server.pythonPath" };
  }
  const fromPythonExtension = await pythonFromPythonExtension();
  if (fromPythonExtension) {
    return { command: fromPythonExtension, args: ["-m", "ptxls.server", "serve"], origin: "Python extension" };
  }
  return { command: "python3", args: ["-m", "ptxls.server", "serve"], origin: "default" };
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

// The interpreter selected in Microsoft's Python extension, when it is installed.
// Its API is optional: any failure just means "not known".
async function pythonFromPythonExtension(): Promise<string | undefined> {
  const extension = vscode.extensions.getExtension("ms-python.python");
  if (!extension) {
    return undefined;
  }
  try {
    const api = extension.isActive ? extension.exports : await extension.activate();
    const details = api?.settings?.getExecutionDetails?.(vscode.workspace.workspaceFolders?.[0]?.uri);
    const execCommand: unknown = details?.execCommand;
    if (Array.isArray(execCommand) && execCommand.length === 1 && typeof execCommand[0] === "string") {
      return execCommand[0];
    }
  } catch {
    // fall through to the default
  }
  return undefined;
}
