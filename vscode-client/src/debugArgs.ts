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

// The GPU-test hover's "Debug first wrong element" link (the server adds it for a client that
// says initializationOptions.client.debugLinks; server.ts trusts this one command in hovers).
export const DEBUG_FIRST_WRONG = "ptxls.debugFirstWrong";

// "Debug first wrong element" (a command link in the GPU-test hover): the argument is the
// server's launch configuration; only a `ptxls` launch with a program path is started, with
// only the launch configuration's own fields (nothing else from a hover reaches the debugger).
const LAUNCH_FIELDS = ["program", "kernel", "n", "seed", "block", "thread", "watch", "spec", "stopOnEntry"];

export interface PtxlsLaunch {
  type: "ptxls";
  request: "launch";
  name: string;
  program: string;
  [field: string]: unknown;
}

export function firstWrongLaunch(arg: unknown): PtxlsLaunch | undefined {
  if (typeof arg !== "object" || arg === null) {
    return undefined;
  }
  const given = arg as Record<string, unknown>;
  if (given.type !== "ptxls" || given.request !== "launch" || typeof given.program !== "string" || !given.program) {
    return undefined;
  }
  const config: PtxlsLaunch = {
    type: "ptxls",
    request: "launch",
    name: typeof given.name === "string" ? given.name : "Debug first wrong element",
    program: given.program,
  };
  for (const field of LAUNCH_FIELDS) {
    if (field in given && field !== "program") {
      config[field] = given[field];
    }
  }
  return config;
}
