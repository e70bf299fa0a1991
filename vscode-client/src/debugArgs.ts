// How the debug adapter is started from the language server's command line (no vscode import:
// unit-tested in test/debugArgs.test.ts).

// The server's command line with its last words changed from serving LSP to serving DAP:
// `python -m ptxls.server serve` → `python -m ptxls.cli debug-adapter`, `ptxls serve` →
// `ptxls debug-adapter`.
export function adapterArguments(args: readonly string[]): string[] {
  const out = [...args];
  const module = out.indexOf("ptxls.server");
  if (module > 0 && out[module - 1] === "-m") {
    out[module] = "ptxls.cli";
  }
  const serve = out.lastIndexOf("serve");
  if (serve >= 0) {
    out.splice(serve, out.length - serve, "debug-adapter");
  } else {
    out.push("debug-adapter");
  }
  return out;
}
