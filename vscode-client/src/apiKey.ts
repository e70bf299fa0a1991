// The LLM API key lives in VS Code's SecretStorage (the OS keychain where there is one),
// never in settings.json. The server gets it only through its environment at start,
// so every change restarts the server.
import * as vscode from "vscode";

const SECRET_NAME = "ptxls.llm.apiKey";

export function readApiKey(context: vscode.ExtensionContext): Thenable<string | undefined> {
  return context.secrets.get(SECRET_NAME);
}

export async function promptAndStoreApiKey(context: vscode.ExtensionContext): Promise<boolean> {
  const key = await vscode.window.showInputBox({
    title: "ptxls: LLM API key",
    prompt: "API key for the OpenAI-compatible endpoint in ptxls.llm.baseUrl. Stored in VS Code's secret storage.",
    password: true,
    ignoreFocusOut: true,
    validateInput: (value) => (value.trim() === "" ? "The key is empty." : undefined),
  });
  if (key === undefined) {
    return false;
  }
  await context.secrets.store(SECRET_NAME, key.trim());
  return true;
}

export async function clearApiKey(context: vscode.ExtensionContext): Promise<void> {
  await context.secrets.delete(SECRET_NAME);
}

export function onApiKeyChange(context: vscode.ExtensionContext, listener: () => void): vscode.Disposable {
  return context.secrets.onDidChange((event) => {
    if (event.key === SECRET_NAME) {
      listener();
    }
  });
}
