// Every server command ends visibly, however it started: the palette's commands (commands.ts)
// and the code actions and code lenses VS Code runs through the language client (the
// `executeCommand` middleware in server.ts) all come here. While it runs: a notification that
// can be cancelled once it takes over a second (Cancel sends $/cancelRequest; the server stops
// the work). When it ends: the file it produced opens beside the source, and a message says
// what it did, or why it failed with a way on ("Show output"). The server is told
// (initializationOptions.client.opensCommandResults) so it does not also open or say them.
import * as vscode from "vscode";
import { ExecuteCommandRequest, type LanguageClient } from "vscode-languageclient/node";
import { describeCommand, planResult } from "./commandText";

// Work shorter than this shows no notification (the status bar has the server's progress).
const PROGRESS_AFTER_MS = 1000;

export async function runAndPresent(
  client: LanguageClient,
  output: vscode.OutputChannel,
  command: string,
  args: unknown[],
): Promise<unknown> {
  const result = await runServerCommand(client, output, command, args);
  await presentResult(output, command, args, result);
  return result;
}

async function runServerCommand(client: LanguageClient, output: vscode.OutputChannel, command: string, args: unknown[]): Promise<unknown> {
  const what = describeCommand(command, args);
  const cancel = new vscode.CancellationTokenSource();
  const request = client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }, cancel.token);
  let settled = false;
  const finished = request.then(
    () => undefined,
    () => undefined,
  );
  void finished.then(() => (settled = true));
  const timer = setTimeout(() => {
    if (settled) return;
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `ptxls: ${what}…`, cancellable: true },
      async (_progress, token) => {
        token.onCancellationRequested(() => cancel.cancel());
        await finished;
      },
    );
  }, PROGRESS_AFTER_MS);
  try {
    return await request;
  } catch (error) {
    if (cancel.token.isCancellationRequested) {
      void vscode.window.showInformationMessage(`ptxls: ${what}: cancelled.`);
      return undefined;
    }
    const message = error instanceof Error ? error.message : String(error);
    output.appendLine(`${what} failed: ${message}`);
    void offerOutput(output, vscode.window.showErrorMessage(`ptxls: ${what} failed: ${message}`, SHOW_OUTPUT));
    return undefined;
  } finally {
    clearTimeout(timer);
    cancel.dispose();
  }
}

const SHOW_OUTPUT = "Show output";

async function offerOutput(output: vscode.OutputChannel, choice: Thenable<string | undefined>): Promise<void> {
  if ((await choice) === SHOW_OUTPUT) {
    output.show(true);
  }
}

async function presentResult(output: vscode.OutputChannel, command: string, args: unknown[], result: unknown): Promise<void> {
  const plan = planResult(command, args, result);
  // The message first: it says what happened even while the editor opens.
  if (plan.message.kind === "info") {
    void vscode.window.showInformationMessage(plan.message.text);
  } else if (plan.message.kind === "warning") {
    output.appendLine(plan.message.text);
    void offerOutput(output, vscode.window.showWarningMessage(plan.message.text, SHOW_OUTPUT));
  }
  if (plan.open === undefined) {
    return;
  }
  try {
    const document =
      plan.open.kind === "file"
        ? await vscode.workspace.openTextDocument(vscode.Uri.parse(plan.open.uri))
        : await vscode.workspace.openTextDocument({ language: plan.open.language, content: plan.open.content });
    await vscode.window.showTextDocument(document, { preview: false, viewColumn: vscode.ViewColumn.Beside });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    void vscode.window.showWarningMessage(`ptxls: could not open the result: ${message}`);
  }
}
