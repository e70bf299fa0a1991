// Starts, stops and restarts the ptxls language server.
//
// The LLM API key reaches the server in exactly one way: the child process's
// OPENAI_API_KEY environment variable, set here at start. It is never put into
// settings, initializationOptions or any LSP message (a verbose trace would log it),
// and never written to the output channel.
import * as vscode from "vscode";
import {
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  type ServerOptions,
  State,
  TransportKind,
} from "vscode-languageclient/node";
import { readApiKey } from "./apiKey";
import { existsSync } from "node:fs";
import { bundledWheel, CREATE_LABEL, EnvironmentMaker, isStale, managedEnvironments } from "./environment";
import { checkServerCommand } from "./preflight";
import { resolveServerCommand, SECTION, type ServerCommand } from "./settings";
import type { FileStatus, ServerStatus, StatusBar } from "./statusBar";

const DOCUMENT_SELECTOR = [
  { scheme: "file", language: "ptx" },
  { scheme: "untitled", language: "ptx" },
  { scheme: "file", language: "cuda-cpp" },
  { scheme: "untitled", language: "cuda-cpp" },
  // Triton kernels live in Python files.
  { scheme: "file", language: "python" },
  { scheme: "untitled", language: "python" },
];

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  // Serialises start/stop/restart so that two quick restarts cannot race.
  private queue: Promise<void> = Promise.resolve();
  private readonly traceChannel: vscode.OutputChannel;
  private readonly maker: EnvironmentMaker;

  constructor(
    private readonly context: vscode.ExtensionContext,
    readonly output: vscode.OutputChannel,
    private readonly statusBar: StatusBar,
  ) {
    this.traceChannel = vscode.window.createOutputChannel("ptxls (trace)");
    this.maker = new EnvironmentMaker(context, output);
  }

  get running(): LanguageClient | undefined {
    return this.client?.state === State.Running ? this.client : undefined;
  }

  start(): Promise<void> {
    return this.enqueue(() => this.doStart());
  }

  restart(): Promise<void> {
    return this.enqueue(async () => {
      await this.doStop();
      await this.doStart();
    });
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.doStop());
  }

  dispose(): void {
    void this.stop();
    this.traceChannel.dispose();
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(step, step);
    return this.queue;
  }

  private async doStart(): Promise<void> {
    this.statusBar.starting();
    const env = await this.serverEnvironment();
    const server = await this.chooseServer(env);
    if (!server) {
      return;
    }
    this.output.appendLine(`Starting the server: ${[server.command, ...server.args].join(" ")} --stdio (from ${server.origin})`);

    const serverOptions: ServerOptions = {
      command: server.command,
      args: server.args,
      transport: TransportKind.stdio,
      options: { env },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: DOCUMENT_SELECTOR,
      // The server pulls the `ptxls` section with workspace/configuration and is told
      // about changes with workspace/didChangeConfiguration.
      synchronize: { configurationSection: SECTION },
      // This extension opens the files commands return (ptxls.showPtx, lowering), so the
      // server need not also ask for them with window/showDocument.
      // trustedWorkspace: VS Code's workspace trust, so the server runs a GPU test's numpy
      // reference outside its restricted language only in a trusted workspace.
      // appliesWorkspaceTrust: VS Code itself drops a workspace's values of the settings in
      // capabilities.untrustedWorkspaces.restrictedConfigurations (package.json) while the
      // workspace is untrusted; the server need not filter them again.
      initializationOptions: {
        client: { opensCommandResults: true, appliesWorkspaceTrust: true },
        trustedWorkspace: vscode.workspace.isTrusted,
      },
      outputChannel: this.output,
      traceOutputChannel: this.traceChannel,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
    };
    const client = new LanguageClient("ptxls", "ptxls", serverOptions, clientOptions);
    // The server's status can arrive before start() resolves; never overwrite it with the
    // plainer "running".
    let hasStatus = false;
    client.onNotification("ptxls/status", (status: ServerStatus) => {
      hasStatus = true;
      this.statusBar.update(status);
    });
    client.onNotification("ptxls/fileStatus", (file: FileStatus) => this.statusBar.updateFile(file));
    client.onDidChangeState((event) => {
      if (this.client !== client) {
        return;
      }
      if (event.newState === State.Stopped) {
        hasStatus = false;
        this.statusBar.stopped();
      } else if (event.newState === State.Running && !hasStatus) {
        // Also after vscode-languageclient restarted a crashed server by itself.
        this.statusBar.running();
      }
    });
    this.client = client;
    try {
      await client.start();
      if (!hasStatus) {
        this.statusBar.running();
      }
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const problem = `The server command "${server.command}" (from ${server.origin}) failed to start: ${message}`;
      this.output.appendLine(problem);
      this.statusBar.failed(problem);
      void this.offerFix(problem, false);
    }
  }

  // The command to start, or undefined after telling the person what is wrong and offering a fix.
  private async chooseServer(env: NodeJS.ProcessEnv): Promise<ServerCommand | undefined> {
    const choice = await resolveServerCommand(managedEnvironments(this.context));
    if ("explicit" in choice) {
      const preflight = await checkServerCommand(choice.explicit, env);
      if (preflight.ok) {
        return choice.explicit;
      }
      this.output.appendLine(preflight.problem);
      if (preflight.detail.trim()) {
        this.output.appendLine(preflight.detail.trimEnd());
      }
      this.statusBar.failed(preflight.problem);
      void this.offerFix(preflight.problem, preflight.kind !== "broken");
      return undefined;
    }
    const tried: string[] = [];
    for (const candidate of choice.candidates) {
      if (candidate.managed && !existsSync(candidate.managed.python)) {
        continue;
      }
      const preflight = await checkServerCommand(candidate, env);
      if (preflight.ok) {
        if (candidate.managed && isStale(candidate.managed, bundledWheel(this.context))) {
          this.statusBar.settingUp();
          const updated = await this.maker.update(candidate.managed);
          if (!updated.ok) {
            this.output.appendLine(`Updating ${candidate.managed.dir} failed: ${updated.problem}; starting the server it has.`);
          }
        }
        return candidate;
      }
      tried.push(preflight.kind === "no-ptxls" ? `${candidate.command} (${candidate.origin}) has no ptxls` : preflight.problem);
      this.output.appendLine(preflight.problem);
    }
    const problem =
      `no Python environment with ptxls was found (${tried.join("; ")}). ` +
      `"${CREATE_LABEL}" makes one for you (it needs Python 3.11+ and, once, the internet).`;
    this.output.appendLine(problem);
    this.statusBar.failed(problem);
    void this.offerFix(problem, true);
    return undefined;
  }

  // "Create a ptxls environment" (the button or the command): make it, then start the server.
  async createEnvironment(): Promise<void> {
    this.statusBar.settingUp();
    const result = await this.maker.createInteractively();
    if (result.ok) {
      const pythonPath = vscode.workspace.getConfiguration(SECTION).get<string>("server.pythonPath", "").trim();
      const command = vscode.workspace.getConfiguration(SECTION).get<string[]>("server.command", []);
      if (pythonPath || command.length) {
        void this.offerToClearServerSettings(result.env.python);
      }
      await this.restart();
      return;
    }
    if (result.cancelled) {
      this.output.appendLine("Creating the ptxls environment was cancelled.");
      await this.restart();
      return;
    }
    this.output.appendLine(result.problem);
    this.statusBar.failed(result.problem);
    const again = "Try again";
    const showOutput = "Show output";
    const choice = await vscode.window.showErrorMessage(`ptxls: ${result.problem}`, again, showOutput);
    if (choice === again) {
      await this.createEnvironment();
    } else if (choice === showOutput) {
      this.output.show(true);
    }
  }

  private async offerToClearServerSettings(python: string): Promise<void> {
    const clear = "Clear the setting";
    const choice = await vscode.window.showInformationMessage(
      `ptxls: the environment is ready (${python}), but ptxls.server.pythonPath / ptxls.server.command still choose the server. Clear them to use the new environment?`,
      clear,
    );
    if (choice !== clear) {
      return;
    }
    const config = vscode.workspace.getConfiguration(SECTION);
    for (const key of ["server.pythonPath", "server.command"]) {
      const where = config.inspect(key);
      if (where?.workspaceFolderValue !== undefined) await config.update(key, undefined, vscode.ConfigurationTarget.WorkspaceFolder);
      if (where?.workspaceValue !== undefined) await config.update(key, undefined, vscode.ConfigurationTarget.Workspace);
      if (where?.globalValue !== undefined) await config.update(key, undefined, vscode.ConfigurationTarget.Global);
    }
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(3000);
      } catch (error) {
        // A server that already died cannot be stopped; that is fine.
        this.output.appendLine(`Stopping the server: ${error instanceof Error ? error.message : String(error)}`);
      }
      await client.dispose().catch(() => undefined);
    }
    this.statusBar.stopped();
  }

  private async serverEnvironment(): Promise<NodeJS.ProcessEnv> {
    const env: NodeJS.ProcessEnv = { ...process.env };
    const key = await readApiKey(this.context);
    if (key) {
      env.OPENAI_API_KEY = key;
    }
    return env;
  }

  private async offerFix(problem: string, canCreate: boolean): Promise<void> {
    const openSettings = "Set Python interpreter";
    const showOutput = "Show output";
    const buttons = canCreate ? [CREATE_LABEL, openSettings, showOutput] : [openSettings, showOutput];
    const choice = await vscode.window.showErrorMessage(`ptxls: ${problem}`, ...buttons);
    if (choice === CREATE_LABEL) {
      await this.createEnvironment();
    } else if (choice === openSettings) {
      await vscode.commands.executeCommand("workbench.action.openSettings", "ptxls.server");
    } else if (choice === showOutput) {
      this.output.show(true);
    }
  }
}
