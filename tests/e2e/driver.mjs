// What the two code-server drivers share (run.mjs: setup, editor features, lowering;
// debugger.mjs: the debugger): code-server started and stopped, the editor gestures, the steps with their screenshots and
// results, and small waits. Each gesture waits for VS Code to show that it happened.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

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

// What every run's VS Code user settings say: no welcome, tips, trust prompt, telemetry, update
// or recommendation, and hovers quick enough for a test.
const SETTINGS = {
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.welcomePage.walkthroughs.openOnInstall": false,
  "security.workspace.trust.enabled": false,
  "telemetry.telemetryLevel": "off",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "extensions.ignoreRecommendations": true,
  "update.mode": "none",
  "editor.hover.delay": 300,
  "chat.commandCenter.enabled": false,
  "workbench.secondarySideBar.defaultVisibility": "hidden",
};

// code-server on a free loopback port with the .vsix installed, its user data and XDG folders
// under `tmp`, `workspace` open. `env(xdg)` makes the children's environment from the XDG
// variables; `checkEnv(env)` may refuse it; `settings` are added to SETTINGS. Its own process
// group (detached = setsid): a file-watcher child outlives the main pid, so `stop()` kills the
// whole group, after writing code-server's output to `log`.
export async function startCodeServer({ codeServer, vsix, tmp, workspace, log, installLog = null, settings = {}, env = (xdg) => ({ ...process.env, ...xdg }), checkEnv = () => undefined }) {
  const port = await freePort();
  const dirs = Object.fromEntries(["user-data", "extensions", "xdg-data", "xdg-config", "xdg-cache"].map((d) => [d, join(tmp, d)]));
  Object.values(dirs).forEach((d) => mkdirSync(d, { recursive: true }));
  mkdirSync(join(dirs["user-data"], "User"), { recursive: true });
  writeFileSync(join(dirs["user-data"], "User/settings.json"), JSON.stringify({ ...SETTINGS, ...settings }, null, 2));
  const config = join(tmp, "code-server.yaml");
  writeFileSync(config, "auth: none\ncert: false\n");
  const childEnv = env({ XDG_DATA_HOME: dirs["xdg-data"], XDG_CONFIG_HOME: dirs["xdg-config"], XDG_CACHE_HOME: dirs["xdg-cache"] });
  checkEnv(childEnv);
  const install = spawnSync(process.execPath, [codeServer, "--install-extension", vsix, "--extensions-dir", dirs.extensions, "--user-data-dir", dirs["user-data"]], { env: childEnv, encoding: "utf8" });
  if (installLog) writeFileSync(installLog, `${install.stdout}\n${install.stderr}`);
  if (install.status !== 0) throw new Error(`code-server --install-extension failed:\n${install.stdout}\n${install.stderr}`);
  const child = spawn(
    process.execPath,
    [codeServer, "--config", config, "--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust",
      "--user-data-dir", dirs["user-data"], "--extensions-dir", dirs.extensions, workspace],
    { env: childEnv, detached: true, stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`code-server exited (${child.exitCode}):\n${output}`);
    return fetch(`${url}/healthz`).then((r) => r.ok, () => false);
  }, "code-server to answer /healthz", 60_000);
  return {
    url,
    async stop() {
      writeFileSync(log, output);
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        return;
      }
      const deadline = Date.now() + 5000;
      while (Date.now() < deadline) {
        try {
          process.kill(-child.pid, 0);
        } catch {
          return;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    },
  };
}
