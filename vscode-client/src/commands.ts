// The client's own commands. The ones that act on a kernel ask the server for the document's
// kernels (ptxls/kernels), take the one under the cursor and forward to the server's commands
// through workspace/executeCommand:
//   ptxls.runGpuTest (uri, kernel), ptxls.lowerToPtx (uri, kernel, backend[, line[, mode]]),
//   ptxls.showPtx (uri, kernel).
//   ptxls.showSass (uri, kernel), ptxls.runSanitizer (uri, kernel[, tools]).
// They have different ids from the server's own, which vscode-languageclient registers
// under the server's names.
import * as vscode from "vscode";
import { clearApiKey, promptAndStoreApiKey } from "./apiKey";
import { runAndPresent } from "./commandResults";
import { type KernelKind, kernelAt, requestKernels } from "./kernels";
import { lowerArguments, lowerChoices } from "./lowerChoices";
import type { ServerManager } from "./server";

export function registerCommands(context: vscode.ExtensionContext, servers: ServerManager): void {
  const register = (id: string, run: () => Promise<unknown>) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, run));

  register("ptxls.restartServer", () => servers.restart());
  register("ptxls.showOutput", async () => servers.output.show(true));
  register("ptxls.setApiKey", async () => {
    // Storing the key fires the secret-change listener, which restarts the server.
    if (await promptAndStoreApiKey(context)) {
      void vscode.window.showInformationMessage("ptxls: API key stored; the server restarts to pick it up.");
    }
  });
  register("ptxls.clearApiKey", async () => {
    await clearApiKey(context);
    void vscode.window.showInformationMessage("ptxls: API key removed.");
  });

  // The palette's kernel commands: the kernel under the cursor, then the server's command,
  // run and shown like a code action's or a lens's (commandResults.ts).
  const onKernel = (id: string, command: string, extra: (t: KernelTarget) => Promise<unknown[] | undefined> = async () => []) =>
    register(id, async () => {
      const target = await kernelUnderCursor(servers);
      const client = servers.running;
      const more = target ? await extra(target) : undefined;
      if (!target || !more) {
        return;
      }
      if (!client) {
        await sayNotRunning(servers);
        return;
      }
      await runAndPresent(client, servers.output, command, [target.uri, target.kernel, ...more]);
    });

  onKernel("ptxls.runGpuTestHere", "ptxls.runGpuTest");
  // ptxls.runSanitizer (uri, kernel[, tools]): the GPU test under compute-sanitizer (the tools of
  // ptxls.sanitizer.tools); each report becomes a diagnostic on the PTX or .cu line it names.
  onKernel("ptxls.runSanitizerHere", "ptxls.runSanitizer");
  // The code actions' choices for this kind of kernel: nvcc for CUDA, Triton (reference) for
  // an @triton.jit kernel, an LLM optimization for a PTX entry.
  onKernel("ptxls.lowerToPtxHere", "ptxls.lowerToPtx", async (target) => {
    const picked = await vscode.window.showQuickPick(lowerChoices(target.kind), { title: `Lower ${target.kernel} to PTX with…` });
    return picked ? lowerArguments(target.uri, target.kernel, target.line, picked).slice(2) : undefined;
  });
  onKernel("ptxls.showPtxHere", "ptxls.showPtx");
  // ptxls.showSass (uri, kernel): the kernel's SASS under the PTX/CUDA lines it came from,
  // written to .ptxls/show/<kernel>.sass.txt (or only returned as text outside the workspace).
  onKernel("ptxls.showSassHere", "ptxls.showSass");
}

interface KernelTarget {
  uri: string;
  kernel: string;
  // what the server read it as, and the 0-based line of its name
  kind?: KernelKind;
  line: number;
}

// The kernel under the cursor, as the server reads the document (request ptxls/kernels).
async function kernelUnderCursor(servers: ServerManager): Promise<KernelTarget | undefined> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    void vscode.window.showWarningMessage("ptxls: open a .ptx, .cu or Triton file and put the cursor in a kernel.");
    return undefined;
  }
  const client = servers.running;
  if (!client) {
    await sayNotRunning(servers);
    return undefined;
  }
  const document = editor.document;
  let kernels;
  try {
    kernels = await requestKernels(client, document.uri.toString());
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    void vscode.window.showErrorMessage(`ptxls: could not list the kernels of ${vscode.workspace.asRelativePath(document.uri)}: ${message}`);
    return undefined;
  }
  if (kernels.length === 0) {
    void vscode.window.showWarningMessage(`ptxls: no kernel (.entry, __global__ or @triton.jit) found in ${vscode.workspace.asRelativePath(document.uri)}.`);
    return undefined;
  }
  let site = kernelAt(kernels, editor.selection.active.line);
  if (site === undefined) {
    const name = await vscode.window.showQuickPick(
      kernels.map((k) => k.name),
      { title: "ptxls: which kernel?" },
    );
    site = kernels.find((k) => k.name === name);
  }
  return site === undefined ? undefined : { uri: document.uri.toString(), kernel: site.name, kind: site.kind, line: site.line };
}

async function sayNotRunning(servers: ServerManager): Promise<void> {
  const showOutput = "Show output";
  const choice = await vscode.window.showErrorMessage("ptxls: the language server is not running.", showOutput);
  if (choice === showOutput) {
    servers.output.show(true);
  }
}
