// The client's own commands. The ones that act on a kernel ask the server for the document's
// kernels (ptxls/kernels), take the one under the cursor and forward to the server's commands
// through workspace/executeCommand:
//   ptxls.runGpuTest (uri, kernel), ptxls.lowerToPtx (uri, kernel, backend[, line[, mode]]),
//   ptxls.showPtx (uri, kernel).
//   ptxls.showSass (uri, kernel), ptxls.runSanitizer (uri, kernel[, tools]).
// They have different ids from the server's own, which vscode-languageclient registers
// under the server's names.
import * as vscode from "vscode";
import { ExecuteCommandRequest } from "vscode-languageclient/node";
import { clearApiKey, promptAndStoreApiKey } from "./apiKey";
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

  register("ptxls.runGpuTestHere", async () => {
    const target = await kernelUnderCursor(servers);
    if (target) {
      const result = await forward(servers, "ptxls.runGpuTest", [target.uri, target.kernel], `Testing ${target.kernel} on the GPU`);
      showSummary(result, `GPU test of ${target.kernel} finished.`, "Hover the kernel's name for the details.");
    }
  });

  // ptxls.runSanitizer (uri, kernel[, tools]): the GPU test under compute-sanitizer (the tools of
  // ptxls.sanitizer.tools); each report becomes a diagnostic on the PTX or .cu line it names.
  register("ptxls.runSanitizerHere", async () => {
    const target = await kernelUnderCursor(servers);
    if (target) {
      const result = await forward(servers, "ptxls.runSanitizer", [target.uri, target.kernel], `compute-sanitizer on ${target.kernel}`);
      showSummary(result, `compute-sanitizer on ${target.kernel} finished.`, "Its reports are in the Problems view.");
    }
  });

  register("ptxls.lowerToPtxHere", async () => {
    const target = await kernelUnderCursor(servers);
    if (!target) {
      return;
    }
    // The code actions' choices for this kind of kernel: nvcc for CUDA, Triton (reference) for
    // an @triton.jit kernel, an LLM optimization for a PTX entry.
    const picked = await vscode.window.showQuickPick(lowerChoices(target.kind), { title: `Lower ${target.kernel} to PTX with…` });
    if (picked) {
      const args = lowerArguments(target.uri, target.kernel, target.line, picked);
      const result = await forward(servers, "ptxls.lowerToPtx", args, `Lowering ${target.kernel} to PTX (${picked.label})`);
      // The server itself warns when lowering fails; say only how a success went.
      if (isRecord(result) && result.ok !== false) {
        showSummary(result, `${target.kernel} lowered to PTX.`);
      }
      await openIfDocument(result);
    }
  });

  register("ptxls.showPtxHere", async () => {
    const target = await kernelUnderCursor(servers);
    if (target) {
      const result = await forward(servers, "ptxls.showPtx", [target.uri, target.kernel], `PTX for ${target.kernel}`);
      if (isRecord(result) && result.ok === false) {
        showSummary(result, `No PTX for ${target.kernel}.`);
      }
      await openIfDocument(result);
    }
  });

  // ptxls.showSass (uri, kernel): the kernel's SASS under the PTX/CUDA lines it came from,
  // written to .ptxls/show/<kernel>.sass.txt (or only returned as text outside the workspace).
  register("ptxls.showSassHere", async () => {
    const target = await kernelUnderCursor(servers);
    if (target) {
      const result = await forward(servers, "ptxls.showSass", [target.uri, target.kernel], `SASS for ${target.kernel}`);
      if (isRecord(result) && result.ok === false) {
        showSummary(result, `No SASS for ${target.kernel}.`);
      } else if (isRecord(result) && typeof result.uri !== "string" && typeof result.sass === "string") {
        const document = await vscode.workspace.openTextDocument({ language: "plaintext", content: result.sass });
        await vscode.window.showTextDocument(document, { preview: false, viewColumn: vscode.ViewColumn.Beside });
        return;
      }
      await openIfDocument(result);
    }
  });
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

async function forward(servers: ServerManager, command: string, args: unknown[], title: string): Promise<unknown> {
  const client = servers.running;
  if (!client) {
    await sayNotRunning(servers);
    return undefined;
  }
  // The server reports its own progress ($/progress) for long commands; this notification
  // only covers the wait for the reply.
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: `ptxls: ${title}…` },
    async () => {
      try {
        return await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        void vscode.window.showErrorMessage(`ptxls: ${title} failed: ${message}`);
        return undefined;
      }
    },
  );
}

// Commands may answer with `{uri}` of a file they wrote (opened as that file: it gets the
// server's diagnostics and nothing asks to save it), `{ptx}` without a uri (also when the file
// could not be written: the PTX is still worth seeing), or plain PTX text; the server may
// equally have opened the result itself (window/showDocument) and return nothing.
async function openIfDocument(result: unknown): Promise<void> {
  if (isRecord(result) && result.ok !== false && typeof result.uri === "string") {
    const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(result.uri));
    await vscode.window.showTextDocument(document, { preview: false, viewColumn: vscode.ViewColumn.Beside });
  } else if (typeof result === "string" && result.trim() !== "") {
    const document = await vscode.workspace.openTextDocument({ language: "ptx", content: result });
    await vscode.window.showTextDocument(document, { preview: false, viewColumn: vscode.ViewColumn.Beside });
  } else if (isRecord(result) && typeof result.ptx === "string") {
    await openIfDocument(result.ptx);
  }
}

// Server commands answer `{ok, summary, ...}`; a failure (no GPU, LLM not configured,
// kernel not found) is a warning that says why, a success a short note.
function showSummary(result: unknown, fallback: string, hint = ""): void {
  if (result === undefined || result === null) {
    return;
  }
  const summary = isRecord(result) && typeof result.summary === "string" && result.summary.trim() ? result.summary.trim() : fallback;
  const text = `ptxls: ${summary}${hint ? ` ${hint}` : ""}`;
  if (isRecord(result) && result.ok === false) {
    void vscode.window.showWarningMessage(text);
  } else {
    void vscode.window.showInformationMessage(text);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}
