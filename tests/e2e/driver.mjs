// What the two code-server drivers share (run.mjs: setup, editor features, lowering;
// debugger.mjs: the debugger): the editor gestures, the steps with their screenshots and
// results, and small waits. Each gesture waits for VS Code to show that it happened.
import { join } from "node:path";
import { createServer } from "node:net";

export async function openFromExplorer(page, name) {
  if (!(await page.locator(".explorer-folders-view").first().isVisible())) {
    await page.keyboard.press("Control+Shift+E"); // another view (Run and Debug) replaced it
    await page.locator(".explorer-folders-view").first().waitFor();
  }
  const exact = new RegExp(`^\\s*${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\s*$`);
  const row = page.locator(".explorer-folders-view .monaco-list-row").filter({ hasText: exact }).first();
  await row.dblclick();
  await page.locator(".tabs-container .tab.active", { hasText: name }).waitFor();
  await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().waitFor();
}

export async function clickEditor(page) {
  await page.locator(".editor-group-container.active .monaco-editor .overflow-guard").first().click({ position: { x: 300, y: 10 } });
}

export async function goToLine(page, line, column) {
  await page.keyboard.press("Control+G");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor();
  await input.fill(`:${line}:${column}`);
  await page.locator(".quick-input-widget", { hasText: `${line}` }).waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".quick-input-widget").waitFor({ state: "hidden" });
  // VS Code's status bar shows the cursor position once it moved.
  await page.locator(".statusbar-item", { hasText: `Ln ${line}, Col ${column}` }).first().waitFor();
}

export async function runCommand(page, label) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor();
  await input.fill(`>${label}`);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: label }).first().waitFor();
  await page.keyboard.press("Enter");
}

export function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
    server.on("error", reject);
  });
}

export async function waitFor(condition, what, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

export class Skip extends Error {}
export function skip(reason) {
  throw new Skip(reason);
}

// The run's record: numbered screenshots in `out` (`onShot(name, file)` sees each), and one
// result per step (passed, skipped by `skip`, failed); a failed step leaves a screenshot of
// `recorder.page` and presses Escape (a dialog it left open must not block the next step).
export function recorder(out, { onShot = () => undefined } = {}) {
  const rec = { results: [], page: null };
  let shots = 0;
  rec.shot = async (page, name) => {
    shots += 1;
    const file = join(out, `${String(shots).padStart(2, "0")}-${name}.png`);
    await page.screenshot({ path: file });
    onShot(name, file);
    return file;
  };
  rec.step = async (name, body) => {
    const started = Date.now();
    try {
      const detail = await body();
      rec.results.push({ step: name, status: "passed", detail, seconds: (Date.now() - started) / 1000 });
      console.log(`PASS  ${name} — ${detail}`);
    } catch (error) {
      const status = error instanceof Skip ? "skipped" : "failed";
      rec.results.push({ step: name, status, detail: error.message, seconds: (Date.now() - started) / 1000 });
      console.log(`${status === "skipped" ? "SKIP" : "FAIL"}  ${name} — ${error.message.trim().replace(/\s*\n\s*/g, " | ").slice(0, 400)}`);
      if (status === "failed") {
        await rec.shot(rec.page, `FAILED-${name.replace(/[^A-Za-z0-9]+/g, "-")}`).catch(() => undefined);
        await rec.page?.keyboard.press("Escape").catch(() => undefined);
      }
    }
  };
  return rec;
}
