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
import { checkServerCommand } from "./preflight";
import { resolveServerCommand, SECTION } from "./settings";
import type { ServerStatus, StatusBar } from "./statusBar";

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

  constructor(
    private readonly context: vscode.ExtensionContext,
    readonly output: vscode.OutputChannel,
    private readonly statusBar: StatusBar,
  ) {
    this.traceChannel = vscode.window.createOutputChannel("ptxls (trace)");
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
    const server = await resolveServerCommand();
    const env = await this.serverEnvironment();
    this.output.appendLine(`Starting the server: ${[server.command, ...server.args].join(" ")} --stdio (from ${server.origin})`);

    const preflight = await checkServerCommand(server, env);
    if (!preflight.ok) {
      this.output.appendLine(preflight.problem);
      if (preflight.detail.trim()) {
        this.output.appendLine(preflight.detail.trimEnd());
      }
      this.statusBar.failed(preflight.problem);
      void this.offerFix(preflight.problem);
      return;
    }

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
      initializationOptions: { client: { opensCommandResults: true } },
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
      void this.offerFix(problem);
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

  private async offerFix(problem: string): Promise<void> {
    const openSettings = "Set Python interpreter";
    const showOutput = "Show output";
    const choice = await vscode.window.showErrorMessage(`ptxls: ${problem}`, openSettings, showOutput);
    if (choice === openSettings) {
      await vscode.commands.executeCommand("workbench.action.openSettings", "ptxls.server");
    } else if (choice === showOutput) {
      this.output.show(true);
    }
  }
}
