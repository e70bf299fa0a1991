// The debugger in a real VS Code: code-server in headless Chromium, driven by Playwright, with
// the packaged ptxls extension and the project's Python as the server's (no environment setup:
// tests/e2e/run.mjs covers that). Three scenarios, each with screenshots:
//
// 1. a breakpoint set with F9 on examples/vec_add.ptx's store, F5 with a launch.json following
//    block 1 thread 7: the editor stops on that line, and the Variables view shows the
//    thread's registers — %r5 (blockIdx.x * blockDim.x + threadIdx.x) must read 263;
// 2. "Debug first wrong element": the GPU test (on the CPU emulator) of a planted wrong
//    vec_add fails, the kernel's hover offers the link, one click starts the debugger, which
//    stops after the store of the first wrong element (c[600]) in the thread that wrote it;
// 3. a Triton kernel's .py (examples/vec_add_triton.py): F9 on its tl.store line, a launch of
//    the .py; the debugger stops on that Python line (Triton's PTX, its .loc line info).
//
// Started by .ci/vscode-e2e.sh after run.mjs (same variables), or alone:
//   CODE_SERVER=… PTXLS_VSIX=vscode-client/ptxls.vsix node tests/e2e/debugger.mjs
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { clickEditor, goToLine, openFromExplorer, recorder, runCommand, startCodeServer as startVsCode, waitFor } from "./driver.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, "../..");
const env = (name, fallback) => process.env[name] || fallback;
const PYTHON = env("PTXLS_PYTHON", join(REPO, ".venv/bin/python"));
const VSIX = env("PTXLS_VSIX", join(REPO, "vscode-client/ptxls.vsix"));
const CODE_SERVER = env("CODE_SERVER", "");
const CHROMIUM = env("CHROMIUM", "/usr/bin/chromium");
const OUT = resolve(env("PTXLS_E2E_DEBUG_OUT", join(REPO, ".e2e/vscode-debugger")));
const SLOW = 120_000;

const VEC_ADD = readFileSync(join(REPO, "examples/vec_add.ptx"), "utf8");
const STORE_LINE = VEC_ADD.split("\n").findIndex((l) => l.includes("st.global.f32")) + 1;
const [BLOCK, THREAD, N] = [1, 7, 4096];
const INDEX = BLOCK * 256 + THREAD; // the kernel's i for that thread (256 threads a block)
const PLANTED_FROM = 600; // the planted kernel's elements from here on get a - b
const TRITON = readFileSync(join(REPO, "examples/vec_add_triton.py"), "utf8");
const TRITON_STORE = TRITON.split("\n").findIndex((l) => l.includes("tl.store(")) + 1;
const TRITON_LAUNCH = "Triton add_kernel, block 2 thread 5";

const record = recorder(OUT);
const { results, shot, step } = record;

async function main() {
  for (const [what, path] of [["PTXLS_PYTHON", PYTHON], ["PTXLS_VSIX", VSIX], ["CODE_SERVER", CODE_SERVER], ["CHROMIUM", CHROMIUM]]) {
    if (!path || !existsSync(path)) throw new Error(`${what}=${path || "(unset)"} does not exist; run .ci/vscode-e2e.sh`);
  }
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  const tmp = mkdtempSync(join(tmpdir(), "ptxls-vscode-debug-"));
  const workspace = makeWorkspace(join(tmp, "workspace"));
  const codeServer = await startCodeServer(tmp, workspace);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    page.setDefaultTimeout(30_000);
    record.page = page;
    await page.goto(`${codeServer.url}/?folder=${encodeURIComponent(workspace)}`, { timeout: SLOW });
    await page.locator(".monaco-workbench").waitFor({ timeout: SLOW });
    await page.locator(".explorer-folders-view .monaco-list-row").first().waitFor({ timeout: SLOW });

    await step("breakpoint, F5, the Variables view shows the registers", async () => {
      await openFromExplorer(page, "vec_add.ptx");
      await page.locator(".statusbar-item", { hasText: /ptxls/ }).first().waitFor({ timeout: SLOW });
      await clickEditor(page);
      await goToLine(page, STORE_LINE, 5);
      await page.keyboard.press("F9");
      await page.locator(".codicon-debug-breakpoint").first().waitFor();
      await page.keyboard.press("F5");
      await waitForStop(page, /Paused on breakpoint/i);
      const variables = page.locator(".debug-variables");
      await variables.waitFor();
      // Registers is the first scope: VS Code expands it.
      const r5 = variables.locator(".monaco-list-row", { hasText: "%r5" }).first();
      await r5.waitFor({ timeout: SLOW });
      const text = (await r5.innerText()).replace(/\s+/g, " ");
      const want = `0x${INDEX.toString(16).padStart(8, "0")} (${INDEX})`;
      if (!text.includes(want)) throw new Error(`%r5 reads "${text}", not ${want}`);
      const line = await currentLine(page);
      if (line !== STORE_LINE) throw new Error(`stopped on line ${line}, not ${STORE_LINE}`);
      await shot(page, "debug-breakpoint-registers");
      await stopDebugging(page);
      return `stopped on vec_add.ptx:${STORE_LINE} in block ${BLOCK} thread ${THREAD}; Variables: "${text.trim()}"`;
    });

    await step("failed test → hover → Debug first wrong element", async () => {
      await openFromExplorer(page, "wrong_add.ptx");
      await clickEditor(page);
      await page.keyboard.press("Control+Shift+F9"); // Remove All Breakpoints (the first step's)
      const lines = readFileSync(join(workspace, "wrong_add.ptx"), "utf8").split("\n");
      const entry = lines.findIndex((l) => l.includes(".entry vec_add"));
      await goToLine(page, entry + 1, lines[entry].indexOf("vec_add") + 2);
      await runCommand(page, "ptxls: Run GPU test for this kernel");
      await waitFor(() => existsSync(join(workspace, ".ptxls/debug/last-failed.json")), "the failed test's record", SLOW);
      await clickEditor(page);
      await goToLine(page, entry + 1, lines[entry].indexOf("vec_add") + 2);
      await hoverAtCursor(page);
      const link = page.locator(".monaco-hover:visible a", { hasText: "Debug first wrong element" }).first();
      await link.waitFor({ timeout: SLOW });
      await link.scrollIntoViewIfNeeded();
      await link.hover(); // the pointer on the link keeps the hover open
      await shot(page, "debug-first-wrong-hover");
      await link.click();
      await waitForStop(page, new RegExp(`c\\[${PLANTED_FROM}\\] written`, "i")); // the stop's description
      const r5 = page.locator(".debug-variables .monaco-list-row", { hasText: "%r5" }).first();
      await r5.waitFor({ timeout: SLOW });
      const value = (await r5.innerText()).replace(/\s+/g, " ");
      if (!value.includes(`(${PLANTED_FROM})`)) throw new Error(`%r5 of the writer reads "${value}", not ${PLANTED_FROM}`);
      const frame = await page.locator(".debug-call-stack .monaco-list-row.selected, .debug-call-stack .monaco-list-row.focused").first().innerText();
      const writer = `block (${Math.floor(PLANTED_FROM / 256)},0,0) thread (${PLANTED_FROM % 256},0,0)`;
      const stack = (await page.locator(".debug-call-stack").innerText()).replace(/\s+/g, " ");
      if (!stack.includes(writer)) throw new Error(`the call stack does not show ${writer}: "${stack.slice(0, 300)}"`);
      await shot(page, "debug-first-wrong-stop");
      await stopDebugging(page);
      return `one click from the hover: stopped where ${writer} wrote c[${PLANTED_FROM}] (${frame.replace(/\s+/g, " ").slice(0, 80)})`;
    });

    await step("a Triton .py: breakpoint on a Python line through .loc", async () => {
      await openFromExplorer(page, "vec_add_triton.py");
      await clickEditor(page);
      await goToLine(page, TRITON_STORE, 5);
      await page.keyboard.press("F9");
      await page.locator(".codicon-debug-breakpoint").first().waitFor();
      await runCommand(page, "Debug: Select and Start Debugging");
      await page.locator(".quick-input-list .monaco-list-row", { hasText: TRITON_LAUNCH }).first().click();
      await waitForStop(page, /Paused on breakpoint/i);
      await page.locator(".tabs-container .tab.active", { hasText: "vec_add_triton.py" }).waitFor();
      const line = await currentLine(page);
      if (line !== TRITON_STORE) throw new Error(`stopped on line ${line}, not ${TRITON_STORE}`);
      const stack = (await page.locator(".debug-call-stack").innerText()).replace(/\s+/g, " ");
      if (!stack.includes("block (2,0,0) thread (5,0,0)")) throw new Error(`the call stack: "${stack.slice(0, 300)}"`);
      await page.locator(".debug-variables .monaco-list-row", { hasText: "%r" }).first().waitFor({ timeout: SLOW });
      await shot(page, "debug-triton-python-line");
      await stopDebugging(page);
      return `stopped on vec_add_triton.py:${TRITON_STORE} (tl.store) in block 2 thread 5, through Triton's PTX`;
    });
  } finally {
    await codeServer.stop();
    await browser.close().catch(() => undefined);
    writeFileSync(join(OUT, "results.json"), JSON.stringify({ results }, null, 2) + "\n");
    rmSync(tmp, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------- the workspace

function makeWorkspace(dir) {
  mkdirSync(join(dir, ".vscode"), { recursive: true });
  writeFileSync(join(dir, "vec_add.ptx"), VEC_ADD);
  // its test spec (and the debugger's inputs) come from the paired CUDA source's signature
  writeFileSync(join(dir, "vec_add.cu"), readFileSync(join(REPO, "examples/vec_add.cu"), "utf8"));
  const annotated = "// @gputest a: in f32[n]; b: in f32[n]; c: out f32[n]; n: size; ref: c = a + b\n// @gputest sizes: 1000 3007\n";
  const wrong = VEC_ADD.replace(".reg .pred  %p<2>;", ".reg .pred  %p<3>;")
    .replace("    add.f32         %f3, %f1, %f2;\n", `    setp.ge.s32     %p2, %r5, ${PLANTED_FROM};\n    add.f32         %f3, %f1, %f2;\n    @%p2 sub.f32    %f3, %f1, %f2;\n`)
    .replace(".visible .entry vec_add(", `${annotated}.visible .entry vec_add(`);
  if (wrong === VEC_ADD) throw new Error("examples/vec_add.ptx changed: the planted bug no longer applies");
  writeFileSync(join(dir, "wrong_add.ptx"), wrong);
  writeFileSync(join(dir, "vec_add_triton.py"), TRITON);
  writeFileSync(join(dir, ".vscode/settings.json"), JSON.stringify({ "ptxls.server.pythonPath": PYTHON, "ptxls.test.device": "cpu" }, null, 2));
  writeFileSync(
    join(dir, ".vscode/launch.json"),
    JSON.stringify({ version: "0.2.0", configurations: [
      { type: "ptxls", request: "launch", name: "vec_add, block 1 thread 7", program: "${workspaceFolder}/vec_add.ptx", n: N, block: BLOCK, thread: THREAD },
      { type: "ptxls", request: "launch", name: TRITON_LAUNCH, program: "${workspaceFolder}/vec_add_triton.py", n: 3000, block: 2, thread: 5 },
    ] }, null, 2),
  );
  return dir;
}

// ---------------------------------------------------------------------------- the UI

async function waitForStop(page, reason) {
  // The call stack says why it paused ("Paused on breakpoint", "Paused on data breakpoint").
  await page.locator(".debug-toolbar").first().waitFor({ timeout: SLOW });
  if (!(await page.locator(".debug-call-stack").first().isVisible())) {
    await page.keyboard.press("Control+Shift+D"); // Run and Debug (a start from a link keeps the explorer)
  }
  await page.locator(".debug-call-stack", { hasText: reason }).first().waitFor({ timeout: SLOW });
}

async function stopDebugging(page) {
  await page.keyboard.press("Shift+F5");
  await page.locator(".debug-toolbar").first().waitFor({ state: "hidden", timeout: SLOW });
}

async function currentLine(page) {
  // The editor's status bar "Ln N, Col M" follows the debugger's current line.
  const item = await page.locator(".statusbar-item", { hasText: /Ln \d+, Col \d+/ }).first().innerText();
  return Number(/Ln (\d+)/.exec(item)[1]);
}

async function hoverAtCursor(page) {
  const cursor = page.locator(".editor-group-container.active .monaco-editor .cursors-layer .cursor").first();
  const box = await cursor.boundingBox();
  if (box) {
    await page.mouse.move(box.x + 6, box.y + box.height / 2);
    try {
      await page.locator(".monaco-hover:visible").first().waitFor({ timeout: 10_000 });
      return;
    } catch {
      // the keyboard below
    }
  }
  await runCommand(page, "Show or Focus Hover");
  await page.locator(".monaco-hover:visible").first().waitFor();
}

// ---------------------------------------------------------------------------- plumbing

function startCodeServer(tmp, workspace) {
  return startVsCode({ codeServer: CODE_SERVER, vsix: VSIX, tmp, workspace, log: join(OUT, "code-server.log"), settings: { "debug.toolBarLocation": "floating" } });
}

main()
  .then(() => {
    const failed = results.filter((r) => r.status === "failed");
    console.log(`\n${results.length - failed.length} passed, ${failed.length} failed; screenshots in ${OUT}`);
    process.exit(failed.length ? 1 : 0);
  })
  .catch((error) => {
    console.error(`vscode debugger e2e: ${error.stack ?? error}`);
    process.exit(1);
  });
