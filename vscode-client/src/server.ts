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
import { runAndPresent } from "./commandResults";
import { DEBUG_FIRST_WRONG } from "./debugArgs";
import { checkServerCommand } from "./preflight";
import { privateWorkingDirectory } from "./pythonProbe";
import { resolveServerCommand, SECTION, type ServerCommand } from "./settings";
import type { FileStatus, ServerStatus, StatusBar } from "./statusBar";

// Short enough that a notification's button shows it whole.
const SELECT_LABEL = "Select interpreter";

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

  // The command the running server was started with: the debug adapter runs through the same
  // Python (debugAdapter.ts).
  startedWith: ServerCommand | undefined;

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
    this.startedWith = server;
    this.output.appendLine(`Starting the server: ${[server.command, ...server.args].join(" ")} --stdio (from ${server.origin})`);

    const serverOptions: ServerOptions = {
      command: server.command,
      args: server.args,
      transport: TransportKind.stdio,
      // Never the workspace folder: `python -m` puts its working directory first on sys.path, so
      // a cloned repository's ptxls/ or numpy.py would be imported (SECURITY.md). The extension's
      // own storage folder is private to this user (os.tmpdir() is shared).
      options: { env, cwd: serverWorkingDirectory(this.context) },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: DOCUMENT_SELECTOR,
      // The server pulls the `ptxls` section with workspace/configuration and is told
      // about changes with workspace/didChangeConfiguration.
      synchronize: { configurationSection: SECTION },
      // This extension presents what every server command returns (opens its file beside the
      // source, says its summary; commandResults.ts), so the server need not also ask for them
      // with window/showDocument and window/showMessage.
      // trustedWorkspace: VS Code's workspace trust, so the server runs a GPU test's numpy
      // reference outside its restricted language only in a trusted workspace.
      // appliesWorkspaceTrust: VS Code itself drops a workspace's values of the settings in
      // capabilities.untrustedWorkspaces.restrictedConfigurations (package.json) while the
      // workspace is untrusted; the server need not filter them again.
      // debugLinks: the GPU-test hover may hold a "Debug first wrong element" command link;
      // hovers are trusted for that one command only (debugAdapter.ts).
      markdown: { isTrusted: { enabledCommands: [DEBUG_FIRST_WRONG] } },
      initializationOptions: {
        client: { opensCommandResults: true, appliesWorkspaceTrust: true, debugLinks: true },
        trustedWorkspace: vscode.workspace.isTrusted,
      },
      outputChannel: this.output,
      traceOutputChannel: this.traceChannel,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      middleware: {
        // The light bulb's code actions and the code lenses run the server's commands through
        // VS Code's command registry; they end like the palette's (progress, file, message).
        executeCommand: (command, args) => runAndPresent(client, this.output, command, args),
      },
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
      const preflight = await checkServerCommand(choice.explicit, env, serverWorkingDirectory(this.context));
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
      const preflight = await checkServerCommand(candidate, env, serverWorkingDirectory(this.context));
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
    // The expected first-run state, not an error: said calmly, the details in the log.
    this.output.appendLine(`No Python environment with ptxls yet (tried: ${tried.join("; ") || "nothing"}).`);
    const problem =
      `no ptxls environment yet. "${CREATE_LABEL}" makes one (Python 3.11+, the internet once), ` +
      `or select an interpreter that has ptxls.`;
    this.statusBar.needsSetup(problem);
    void this.offerFix(problem, true, true);
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

  // `expected`: the first-run state (no environment yet) is information, a broken one an error.
  private async offerFix(problem: string, canCreate: boolean, expected = false): Promise<void> {
    const select = SELECT_LABEL;
    const showOutput = "Show output";
    const buttons = canCreate ? [CREATE_LABEL, select, showOutput] : [select, showOutput];
    const say = expected ? vscode.window.showInformationMessage : vscode.window.showErrorMessage;
    const choice = await say(`ptxls: ${problem}`, ...buttons);
    if (choice === CREATE_LABEL) {
      await this.createEnvironment();
    } else if (choice === select) {
      await this.selectInterpreter();
    } else if (choice === showOutput) {
      this.output.show(true);
    }
  }

  // The Python extension's interpreter picker when it is installed (its choice restarts the
  // server: extension.ts); else a file picker whose choice becomes ptxls.server.pythonPath.
  private async selectInterpreter(): Promise<void> {
    if ((await vscode.commands.getCommands(true)).includes("python.setInterpreter")) {
      await vscode.commands.executeCommand("python.setInterpreter");
      return;
    }
    const picked = await vscode.window.showOpenDialog({
      title: "ptxls: a Python interpreter with ptxls installed",
      openLabel: "Use this interpreter",
      canSelectMany: false,
    });
    if (picked?.[0]) {
      await vscode.workspace.getConfiguration(SECTION).update("server.pythonPath", picked[0].fsPath, vscode.ConfigurationTarget.Global);
    }
  }
}

/** The server's working directory: the extension's global storage folder (made if missing),
 * else the home folder; never a workspace folder. */
export function serverWorkingDirectory(context: vscode.ExtensionContext): string {
  return privateWorkingDirectory(context.globalStorageUri.fsPath);
}
