// Entry point: wires the output channel, status bar, commands and the server manager.
import * as vscode from "vscode";
import { onApiKeyChange } from "./apiKey";
import { registerCommands } from "./commands";
import { registerDebugger } from "./debugAdapter";
import { CREATE_COMMAND } from "./environment";
import { onInterpreterChange } from "./pythonExtension";
import { ServerManager } from "./server";
import { needsRestart } from "./settings";
import { StatusBar } from "./statusBar";

let servers: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("ptxls");
  const statusBar = new StatusBar();
  servers = new ServerManager(context, output, statusBar);
  context.subscriptions.push(output, statusBar, servers);

  registerCommands(context, servers);
  registerDebugger(context, servers);
  context.subscriptions.push(vscode.commands.registerCommand(CREATE_COMMAND, () => servers?.createEnvironment()));

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (needsRestart(event)) {
        output.appendLine("ptxls.server settings changed; restarting the server.");
        void servers?.restart();
      }
    }),
    // The key is only read at start (it travels in the environment), so a new key needs a new process.
    onApiKeyChange(context, () => {
      output.appendLine("The LLM API key changed; restarting the server.");
      void servers?.restart();
    }),
    // Trust is sent at initialize (initializationOptions.trustedWorkspace): a new decision
    // needs a new server process.
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      output.appendLine("The workspace is now trusted; restarting the server.");
      void servers?.restart();
    }),
  );

  // A newly selected interpreter in the Python extension may be the one with ptxls (or no
  // longer be); the settings, when set, win anyway, so only restart when they are empty.
  context.subscriptions.push(
    await onInterpreterChange(() => {
      const config = vscode.workspace.getConfiguration("ptxls");
      if (!config.get<string>("server.pythonPath") && !config.get<string[]>("server.command", []).length) {
        output.appendLine("The Python extension's interpreter changed; restarting the server.");
        void servers?.restart();
      }
    }),
  );

  await servers.start();
}

export async function deactivate(): Promise<void> {
  await servers?.stop();
}
