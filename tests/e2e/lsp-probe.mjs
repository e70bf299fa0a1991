// A minimal LSP client over stdio, used as the e2e test's oracle: it asks the real server
// directly what VS Code should end up showing (the diagnostics for a file, whether it offers
// a hover at a position, which code actions it has), so the UI checks compare the screen
// with the server's own answer instead of with hard-coded text.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

export class LspProbe {
  constructor(command, args, { cwd, settings = {}, env = process.env } = {}) {
    this.child = spawn(command, args, { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
    this.settings = settings;
    this.nextId = 1;
    this.pending = new Map();
    this.notifications = [];
    this.waiters = [];
    this.stderr = "";
    this.exited = new Promise((resolve) => this.child.on("exit", (code) => resolve(code)));
    this.child.stderr.on("data", (d) => (this.stderr += d.toString()));
    let buffer = Buffer.alloc(0);
    this.child.stdout.on("data", (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const headerEnd = buffer.indexOf("\r\n\r\n");
        if (headerEnd < 0) break;
        const length = Number(/Content-Length: (\d+)/i.exec(buffer.subarray(0, headerEnd).toString())?.[1]);
        if (buffer.length < headerEnd + 4 + length) break;
        const body = buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString();
        buffer = buffer.subarray(headerEnd + 4 + length);
        this.onMessage(JSON.parse(body));
      }
    });
  }

  send(message) {
    const body = JSON.stringify({ jsonrpc: "2.0", ...message });
    this.child.stdin.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  }

  request(method, params, timeoutMs = 60_000) {
    const id = this.nextId++;
    this.send({ id, method, params });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${method}: no answer in ${timeoutMs} ms`)), timeoutMs);
      this.pending.set(id, (message) => {
        clearTimeout(timer);
        message.error ? reject(new Error(`${method}: ${message.error.message}`)) : resolve(message.result);
      });
    });
  }

  notify(method, params) {
    this.send({ method, params });
  }

  onMessage(message) {
    if (message.id !== undefined && message.method === undefined) {
      this.pending.get(message.id)?.(message);
      this.pending.delete(message.id);
    } else if (message.id !== undefined) {
      // Requests from the server: answer like a plain editor would.
      let result = null;
      if (message.method === "workspace/configuration") {
        result = message.params.items.map((item) => (item.section === "ptxls" ? this.settings : null));
      } else if (message.method === "workspace/applyEdit") {
        result = { applied: false, failureReason: "the probe applies no edits" };
      }
      this.send({ id: message.id, result });
    } else {
      this.notifications.push(message);
      this.waiters = this.waiters.filter((w) => !w(message));
    }
  }

  // Resolves with the first notification (past or future) that satisfies `predicate`.
  waitForNotification(predicate, timeoutMs = 60_000) {
    const seen = this.notifications.find(predicate);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching notification in ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push((message) => {
        if (!predicate(message)) return false;
        clearTimeout(timer);
        resolve(message);
        return true;
      });
    });
  }

  async initialize(rootPath) {
    const result = await this.request("initialize", {
      processId: process.pid,
      rootUri: pathToFileURL(rootPath).href,
      workspaceFolders: [{ uri: pathToFileURL(rootPath).href, name: "e2e" }],
      capabilities: {
        workspace: { configuration: true, applyEdit: true, workspaceEdit: { documentChanges: true, resourceOperations: ["create"] } },
        textDocument: {
          hover: { contentFormat: ["markdown", "plaintext"] },
          codeAction: { codeActionLiteralSupport: { codeActionKind: { valueSet: ["", "quickfix", "refactor", "source"] } } },
          publishDiagnostics: {},
        },
        window: { workDoneProgress: true },
      },
    });
    this.notify("initialized", {});
    return result;
  }

  open(path, languageId) {
    const uri = pathToFileURL(path).href;
    this.notify("textDocument/didOpen", { textDocument: { uri, languageId, version: 1, text: readFileSync(path, "utf8") } });
    return uri;
  }

  diagnostics(uri, timeoutMs) {
    return this.waitForNotification(
      (m) => m.method === "textDocument/publishDiagnostics" && m.params.uri === uri && m.params.diagnostics.length > 0,
      timeoutMs,
    ).then((m) => m.params.diagnostics);
  }

  async close() {
    try {
      await this.request("shutdown", null, 5000);
      this.notify("exit", null);
    } catch {
      // fall through to kill
    }
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 5000);
    await this.exited;
    clearTimeout(timer);
  }
}

// Plain text of a Hover's contents (MarkupContent, MarkedString or an array of them).
export function hoverText(hover) {
  const parts = Array.isArray(hover.contents) ? hover.contents : [hover.contents];
  return parts.map((p) => (typeof p === "string" ? p : p.value)).join("\n");
}
