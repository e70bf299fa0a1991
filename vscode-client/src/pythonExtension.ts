// The interpreter selected in Microsoft's Python extension, through its published API
// (@vscode/python-extension, as Microsoft's Python tools extension template does), and a way
// to hear when the person selects another. The Python extension is optional: without it
// both simply report nothing.
import { PythonExtension } from "@vscode/python-extension";
import * as vscode from "vscode";

const PYTHON_EXTENSION_ID = "ms-python.python";

async function api(): Promise<PythonExtension | undefined> {
  if (!vscode.extensions.getExtension(PYTHON_EXTENSION_ID)) {
    return undefined;
  }
  try {
    return await PythonExtension.api();
  } catch {
    return undefined;
  }
}

export interface SelectedInterpreter {
  path: string;
  version?: [number, number];
}

export async function selectedInterpreter(resource?: vscode.Uri): Promise<SelectedInterpreter | undefined> {
  const python = await api();
  if (!python) {
    return undefined;
  }
  try {
    const active = python.environments.getActiveEnvironmentPath(resource);
    const env = await python.environments.resolveEnvironment(active);
    const path = env?.executable.uri?.fsPath;
    if (!path) {
      return undefined;
    }
    const v = env.version;
    return { path, version: v && v.major !== undefined && v.minor !== undefined ? [v.major, v.minor] : undefined };
  } catch {
    return undefined;
  }
}

// Calls `listener` when the selected interpreter changes (the server may have to move).
export async function onInterpreterChange(listener: () => void): Promise<vscode.Disposable> {
  const python = await api();
  if (!python) {
    return new vscode.Disposable(() => undefined);
  }
  return python.environments.onDidChangeActiveEnvironmentPath(() => listener());
}
