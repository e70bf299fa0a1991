// The VS Code end-to-end test: code-server (real VS Code) in headless Chromium, driven by
// Playwright, with the packaged ptxls extension talking to the project's own Python server.
// It checks what a person would see, waiting on the screen (selectors), never on fixed sleeps:
//   0. from an empty machine state (no ptxls setting, python3 without ptxls, no Python
//      extension), opening broken.ptx brings the notification "no Python environment with
//      ptxls"; its button "Create a ptxls environment" makes a venv in VS Code's storage, installs
//      the wheel the .vsix carries with its dependencies from the package index, and starts the server;
//   1. broken.ptx gets a squiggle and the Problems panel shows the server's message naming the symbol;
//   2. the quick fix on the squiggle (Ctrl+.: "Declare %r<7> …") clears both;
//   3. the status bar shows the server's ptxas/arch/GPU/LLM summary;
//   4. a hover the server offers shows up in the editor; "Run GPU test for this kernel" runs
//      and its result shows as a hover on the kernel;
//   5. in vec_add.cu the light bulb's "Lower to PTX with nvcc (reference)" creates vec_add.ptx,
//      opens it beside the source and says so in a notification (every action ends visibly:
//      endsVisibly), as do the Triton reference lowering, the LLM lowering against a scripted
//      endpoint (with a cancellable progress notification while it runs), Show PTX and Show
//      SASS; a screenshot follows each action.
//   6. Triton: with the `triton` extra added to the created environment, "Show PTX for this
//      kernel" on vec_add_triton.py opens Triton's PTX with the Python lines interleaved;
//   7. compute-sanitizer: "Run with sanitizer" sits beside "Run GPU test" on a PTX .entry, and
//      where it cannot run (no compute-sanitizer or no GPU) clicking it says "compute-sanitizer
//      cannot run here" and why.
// An LSP probe (lsp-probe.mjs) asks the same server what it offers; steps 4-5 are required when
// it offers them and reported as skipped, with the reason, when it does not.
// Screenshots, logs and results.json go to $PTXLS_E2E_OUT. Run through .ci/vscode-e2e.sh.
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { clickEditor, goToLine, openFromExplorer, recorder, runCommand, skip, startCodeServer as startVsCode, waitFor } from "./driver.mjs";
import { hoverText, LspProbe } from "./lsp-probe.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, "../..");
const env = (name, fallback) => process.env[name] || fallback;
const PYTHON = env("PTXLS_PYTHON", join(REPO, ".venv/bin/python"));
const VSIX = env("PTXLS_VSIX", join(REPO, "vscode-client/ptxls.vsix"));
const CODE_SERVER = env("CODE_SERVER", "");
const CHROMIUM = env("CHROMIUM", "/usr/bin/chromium");
const EXAMPLES = env("PTXLS_E2E_EXAMPLES", join(REPO, "examples"));
const OUT = resolve(env("PTXLS_E2E_OUT", join(REPO, ".e2e/vscode")));
// Generous: the first ptxas run and the nvcc lowering are slow on a cold 2-core machine.
const SLOW = 90_000;
// Creating the environment downloads ~600 MB of wheels when pip's cache is cold.
const SETUP = 900_000;
const ACTION_TITLE = "Lower to PTX with nvcc (reference)";

// The steps' results and screenshots; record.page is the page a failed step's screenshot shows.
const record = recorder(OUT, { onShot: (name, file) => README_SHOTS[name] && readmeShots.push([file, README_SHOTS[name]]) });
const { results, shot, step } = record;
// The run's temporary root (code-server's user data, the workspace), searched for leaked keys.
let tmpRoot = null;

async function main() {
  for (const [what, path] of [["PTXLS_PYTHON", PYTHON], ["PTXLS_VSIX", VSIX], ["CODE_SERVER", CODE_SERVER], ["CHROMIUM", CHROMIUM]]) {
    if (!path || !existsSync(path)) throw new Error(`${what}=${path || "(unset)"} does not exist; run .ci/vscode-e2e.sh`);
  }
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  const tmp = mkdtempSync(join(tmpdir(), "ptxls-vscode-e2e-"));
  tmpRoot = tmp;
  const workspace = makeWorkspace(join(tmp, "workspace"));

  // What the server itself says, before any UI is involved.
  const oracle = await askServer(workspace);

  let codeServer = await startCodeServer(tmp, workspace);
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
    await runScenario(page, workspace, oracle);
    await page.close();
    await codeServer.stop();
    codeServer = null;
    await runOfflineScenario(browser, tmp);
  } finally {
    await codeServer?.stop();
    await browser.close().catch(() => undefined);
    writeFileSync(join(OUT, "results.json"), JSON.stringify({ results }, null, 2) + "\n");
    copyLogs(tmp);
    rmSync(tmp, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------- the scenario

async function runScenario(page, workspace, oracle) {
  const broken = join(workspace, "broken.ptx");
  const symbol = oracle.symbol;
  // Where "Create a ptxls environment" puts the venv when "For all my workspaces" is chosen.
  const managedPython = join(tmpRoot, "user-data/User/globalStorage/ptxls.ptxls/venv/bin/python");
  let serverPython = PYTHON;

  await step("empty state: opening a PTX file offers \"Create a ptxls environment\"", async () => {
    await openFromExplorer(page, "broken.ptx");
    const toast = page.locator(".notifications-toasts .notification-toast.notification-fade-in-done", { hasText: "no ptxls environment yet" }).first();
    await toast.waitFor({ timeout: SLOW });
    const text = (await toast.innerText()).replace(/\s+/g, " ").trim();
    // The expected first-run state is information, not an error, and its buttons show whole.
    if (await toast.locator(".codicon-error").count()) throw new Error(`the first-run notification is an error: "${text}"`);
    for (const label of ["Create environment", "Select interpreter"]) {
      const button = toast.getByRole("button", { name: label, exact: true });
      if (!(await button.count())) throw new Error(`no "${label}" button: "${text}"`);
      if (await button.first().evaluate((b) => b.scrollWidth > b.clientWidth)) throw new Error(`the "${label}" button is cut`);
    }
    await shot(page, "setup-notification");
    return `notification (information): "${text}"`;
  });

  await step("\"Create a ptxls environment\" shows its progress and ends with a working server", async () => {
    const started = Date.now();
    await page.locator(".notifications-toasts .notification-toast", { hasText: "no ptxls environment yet" }).first()
      .getByRole("button", { name: "Create environment" }).click();
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "For all my workspaces" }).first().click();
    const progress = page.locator(".notifications-toasts .notification-toast", { hasText: "creating a Python environment for ptxls" }).first();
    await progress.waitFor({ timeout: SLOW });
    // A moment where pip is fetching or installing, as a person would watch it.
    await progress.getByText(/looking up|downloading|installing the downloaded/).first().waitFor({ timeout: SETUP }).catch(() => undefined);
    await shot(page, "setup-progress");
    await page.locator(".statusbar-item", { hasText: "ptxas" }).first().waitFor({ timeout: SETUP });
    if (!existsSync(managedPython)) throw new Error(`the server runs, but ${managedPython} does not exist`);
    const imported = spawnSync(managedPython, ["-c", "import ptxls.cli.main, pygls, numpy"], { encoding: "utf8" });
    if (imported.status !== 0) throw new Error(`${managedPython} cannot import ptxls: ${imported.stderr}`);
    serverPython = managedPython;
    await page.locator(".monaco-editor .squiggly-error").first().waitFor({ timeout: SLOW });
    await shot(page, "setup-done");
    return `venv ${managedPython} made and filled in ${((Date.now() - started) / 1000).toFixed(0)} s; the status bar shows the server's ptxas`;
  });

  await step("squiggle on the mistake in broken.ptx", async () => {
    await openFromExplorer(page, "broken.ptx");
    await page.locator(".monaco-editor .squiggly-error").first().waitFor({ timeout: SLOW });
    await shot(page, "squiggle");
    return `ptxas says: ${oracle.messages.join(" | ")}`;
  });

  await step(`Problems panel names ${symbol}`, async () => {
    await showProblems(page);
    const panel = page.locator(".markers-panel");
    // The server's own message for the mistake, as the panel shows it.
    const message = oracle.messages.find((m) => m.includes(symbol));
    await panel.getByText(message, { exact: false }).first().waitFor({ timeout: SLOW });
    await shot(page, "problems");
    return `panel shows "${message}"`;
  });

  await step("the quick fix on the squiggle (Ctrl+.) declares the register and clears the problem", async () => {
    const fix = oracle.fix;
    const quick = oracle.quickFix;
    if (!quick) throw new Error(`the server offers no quick fix on ${oracle.symbol} (offers: ${oracle.quickFixOffers.join("; ") || "none"})`);
    await clickEditor(page);
    await goToLine(page, quick.line + 1, quick.column + 2);
    await page.keyboard.press("Control+.");
    const entry = page.locator(".action-widget .monaco-list-row", { hasText: quick.title }).first();
    await entry.waitFor({ timeout: SLOW });
    await shot(page, "quick-fix-menu");
    const focused = page.locator(".action-widget .monaco-list-row.focused", { hasText: quick.title });
    for (let i = 0; i < 20 && (await focused.count()) === 0; i++) await page.keyboard.press("ArrowDown");
    await focused.waitFor({ timeout: 5000 });
    await page.keyboard.press("Enter");
    await page.locator(".monaco-editor .squiggly-error").first().waitFor({ state: "detached", timeout: SLOW });
    await page.locator(".markers-panel").getByText("No problems have been detected", { exact: false }).waitFor({ timeout: SLOW });
    await shot(page, "fixed");
    // Saved too, so the file on disk is the fixed one for whatever comes next.
    await page.keyboard.press("Control+S");
    await waitFor(() => readFileSync(broken, "utf8").includes(fix.expectInFile), "the fix saved to disk");
    return `"${quick.title}" applied: the file now declares ${fix.expectInFile} on line ${fix.line + 1}`;
  });

  await step("status bar shows ptxas, arch, GPU and LLM", async () => {
    if (!oracle.status) return skip("the server sent no ptxls/status notification");
    const item = page.locator(".statusbar-item", { hasText: "ptxas" }).first();
    await item.waitFor({ timeout: SLOW });
    const text = (await item.innerText()).trim();
    const expected = [oracle.status.arch, oracle.status.gpu ?? "no GPU", oracle.status.llmModel ?? "no LLM"].filter(Boolean);
    for (const part of expected) {
      if (!text.includes(part)) throw new Error(`status bar "${text}" lacks "${part}" (server status ${JSON.stringify(oracle.status)})`);
    }
    return `status bar: "${text}"`;
  });

  await step(`the status bar follows the active file: ${SM80_FILE} (.target sm_80) shows sm_80 and its ptxas`, async () => {
    if (!oracle.sm80Status) return skip("the server sent no ptxls/fileStatus for a PTX file");
    const { arch, ptxas } = oracle.sm80Status;
    if (arch !== "sm_80") throw new Error(`the server's fileStatus for ${SM80_FILE} says ${arch}, not sm_80`);
    await openFromExplorer(page, SM80_FILE);
    const version = ptxas.replace(/ \(.*\)$/, "");
    const item = page.locator(".statusbar-item", { hasText: `ptxas ${version}` }).filter({ hasText: "sm_80" }).first();
    await item.waitFor({ timeout: SLOW });
    const text = (await item.innerText()).trim();
    await item.hover();
    await page.locator(".monaco-hover:visible", { hasText: "from the file's .target" }).first().waitFor({ timeout: 10_000 });
    await shot(page, "status-bar");
    // Back on broken.ptx (.target sm_90) the item says sm_90 again.
    await page.mouse.move(10, 10);
    await openFromExplorer(page, "broken.ptx");
    await page.locator(".statusbar-item", { hasText: "ptxas" }).filter({ hasText: "sm_90" }).first().waitFor({ timeout: SLOW });
    return `on ${SM80_FILE}: "${text}" (tooltip: from the file's .target); back on broken.ptx: sm_90`;
  });

  await step("\"ptxls: Show output\" shows the server's log", async () => {
    await runCommand(page, "ptxls: Show output");
    const panel = page.locator(".part.panel");
    await panel.locator(".view-lines", { hasText: "ptxls" }).first().waitFor();
    await shot(page, "output");
    // The log scrolls; filter it for the start line, as a person looking for it would.
    const filter = panel.locator('input[placeholder^="Filter"]').first();
    await filter.fill("Starting the server");
    await panel.locator(".view-lines", { hasText: `Starting the server: ${serverPython} -m ptxls.server serve --stdio` }).first().waitFor();
    await filter.fill("");
    await showProblems(page);
    return "the ptxls output channel shows the start command and the server's log";
  });

  await step("hover in PTX shows what the server offers", async () => {
    if (!oracle.hover) return skip(`the server answers no hover at any probed position (${oracle.hoverProbes.join(", ")})`);
    const { file, line, column, text } = oracle.hover;
    return await showHover(page, file, line, column, text, "hover");
  });

  await step("\"ptxls: Run GPU test for this kernel\" runs, and its result shows as a hover", async () => {
    if (!oracle.gpuHover) return skip(`no hover on the kernel after ptxls.runGpuTest (${oracle.gpuTestSummary ?? "the command gave no answer"})`);
    const { file, line, column, text, summary } = oracle.gpuHover;
    await openFromExplorer(page, file);
    await clickEditor(page);
    await goToLine(page, line + 1, column + 1);
    // The extension's own command, which finds the kernel under the cursor.
    await runCommand(page, "ptxls: Run GPU test for this kernel");
    const note = page.locator(".notifications-toasts .notification-toast", { hasText: `ptxls: ${firstWords(summary)}` }).first();
    await note.waitFor({ timeout: SLOW });
    await shot(page, "gpu-test-ran");
    await page.keyboard.press("Escape");
    await runCommand(page, "Notifications: Clear All Notifications");
    return `notification "${firstWords(summary)}…"; ${await showHover(page, file, line, column, text, "gpu-hover")}`;
  });

  await step("\"ptxls: Show PTX for this kernel\" opens the kernel's PTX", async () => {
    if (!oracle.showPtx?.ok) return skip(`the server does not answer ptxls.showPtx (${oracle.showPtx?.error ?? "not asked"})`);
    const kernel = kernelNamePositions(readFileSync(join(workspace, "vec_add.cu"), "utf8"))[0];
    await openFromExplorer(page, "vec_add.cu");
    await clickEditor(page);
    await goToLine(page, kernel.line + 1, kernel.column + 1);
    const tabsBefore = await page.locator(".tabs-container .tab").count();
    await runCommand(page, "ptxls: Show PTX for this kernel");
    // A new editor with PTX in it (the server's answer, or a file it wrote and returned).
    await waitFor(async () => (await page.locator(".tabs-container .tab").count()) > tabsBefore, "a new editor tab", SLOW);
    await page.locator(".editor-group-container .monaco-editor .view-lines", { hasText: ".entry" }).first().waitFor({ timeout: SLOW });
    // and says what it showed
    await page.locator(".notifications-toasts .notification-toast", { hasText: /ptxls: / }).first().waitFor({ timeout: SLOW });
    await shot(page, "show-ptx");
    await runCommand(page, "Notifications: Clear All Notifications");
    // The view may open beside the source (a second editor group); leave one group, as a
    // person would before going on, so later steps find a single vec_add.cu tab.
    await runCommand(page, "View: Close All Editor Groups");
    return "an editor with the PTX of vec_add opened";
  });

  await step("\"ptxls: Show SASS for this kernel\" opens the kernel's SASS, and a PTX line's hover lists the SASS it became", async () => {
    if (!oracle.showSass?.ok) return skip(`the server does not answer ptxls.showSass (${oracle.showSass?.error ?? oracle.showSass?.result?.summary ?? "not asked"})`);
    if (!oracle.sassHover) throw new Error(`ptxls.showSass answered, but no instruction line of ${SM80_FILE} has a SASS hover`);
    const { file, line, column, text } = oracle.sassHover;
    await openFromExplorer(page, file);
    await clickEditor(page);
    await goToLine(page, line + 1, column + 1);
    const tabsBefore = await page.locator(".tabs-container .tab").count();
    await runCommand(page, "ptxls: Show SASS for this kernel");
    await waitFor(async () => (await page.locator(".tabs-container .tab").count()) > tabsBefore, "a new editor tab", SLOW);
    await page.locator(".editor-group-container .monaco-editor .view-lines", { hasText: "SASS of" }).first().waitFor({ timeout: SLOW });
    // and says what it showed: the kernel's registers and instruction count
    await page.locator(".notifications-toasts .notification-toast", { hasText: /ptxls: .*registers/ }).first().waitFor({ timeout: SLOW });
    await shot(page, "show-sass");
    await runCommand(page, "Notifications: Clear All Notifications");
    // Close only the view's group (it is the active one): the PTX stays open in its own, since
    // closing it would drop the server's SASS of it. Then hover one of its lines.
    await runCommand(page, "View: Close Editor Group");
    const hover = await showHover(page, file, line, column, text, "sass-hover");
    await runCommand(page, "View: Close All Editor Groups");
    return `an editor with the SASS of ${oracle.showSass.kernel}; ${hover}`;
  });

  await step(`Triton: "ptxls: Show PTX for this kernel" on the @triton.jit kernel of ${TRITON_FILE} opens Triton's PTX with the Python lines interleaved`, async () => {
    // Triton is the `triton` extra, not a dependency, so the environment "Create a ptxls
    // environment" made lacks it. A person adds it the way the README says, and so does the test:
    // `pip install 'ptxls[triton]'` into that same environment, from the wheel this .vsix
    // carries (the extra resolved against the very ptxls the server runs, triton from the index).
    // No server restart: Triton compiles in a child process of the server's interpreter.
    if (serverPython !== managedPython) throw new Error(`the server does not run from the created environment (${serverPython}), so there is nothing to add the extra to`);
    const wheel = bundledWheel(join(tmpRoot, "extensions"));
    const started = Date.now();
    const pip = await runProcess(serverPython, ["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--progress-bar", "off", `${wheel}[triton]`], testEnv({ PIP_CACHE_DIR: pipCacheDir() }), SETUP);
    writeFileSync(join(OUT, "pip-install-triton-extra.log"), pip.output);
    if (pip.code !== 0) throw new Error(`pip install '${wheel}[triton]' exited ${pip.code}: ${pip.output.slice(-1500)}`);
    const installed = spawnSync(serverPython, ["-c", "import triton; print(triton.__version__)"], { encoding: "utf8" });
    if (installed.status !== 0) throw new Error(`triton does not import in ${serverPython} after the install: ${installed.stderr}`);
    const extraSeconds = ((Date.now() - started) / 1000).toFixed(0);

    const source = readFileSync(join(workspace, TRITON_FILE), "utf8");
    const kernel = tritonKernelPositions(source)[0];
    if (!kernel) throw new Error(`${TRITON_FILE} has no @triton.jit function`);
    await openFromExplorer(page, TRITON_FILE);
    await clickEditor(page);
    await goToLine(page, kernel.line + 1, kernel.column + 1);
    const tabsBefore = await page.locator(".tabs-container .tab").count();
    await runCommand(page, "ptxls: Show PTX for this kernel");
    await waitFor(async () => (await page.locator(".tabs-container .tab").count()) > tabsBefore, "a new editor tab", SLOW);
    const viewName = `${kernel.kernel}.show.ptx`;
    await page.locator(".tabs-container .tab.active", { hasText: viewName }).first().waitFor({ timeout: SLOW });
    // The view on disk says which line carries the interleaved `x = tl.load(` and its number;
    // the number must point at that very line of the Python source.
    const view = join(workspace, ".ptxls/show", viewName);
    const lines = readFileSync(view, "utf8").split("\n");
    const at = lines.findIndex((l) => new RegExp(`// ${TRITON_FILE.replace(".", "\\.")}:\\d+: x = tl\\.load\\(`).test(l));
    if (at < 0) throw new Error(`no "// ${TRITON_FILE}:N: x = tl.load(" line in ${view}; it begins:\n${lines.slice(0, 12).join("\n")}`);
    const shown = lines[at].trim();
    const sourceLine = Number(/:(\d+):/.exec(shown)[1]);
    if (!source.split("\n")[sourceLine - 1]?.includes("x = tl.load(")) throw new Error(`"${shown}" names line ${sourceLine}, which is "${source.split("\n")[sourceLine - 1]}"`);
    // (Triton's masked loads are predicated inline asm: `@%p1 ld.global.b32 { %r1 }, [ %rd1 + 0 ];`)
    if (!lines.slice(at + 1, at + 30).some((l) => /^\s*(@!?%\w+\s+)?ld\.global/.test(l))) throw new Error(`no ld.global within 30 lines after "${shown}"`);
    // And the editor shows it: scrolled to that line, as a person reading the view would.
    // For the screenshot, the side bar and the panel make room, so the whole comment line and
    // the loads under it show; both come back before the next step.
    await withWideEditor(page, async () => {
      await goToLine(page, at + 1, 1);
      await page.locator(".editor-group-container.active .monaco-editor .view-line", { hasText: shown }).first().waitFor({ timeout: SLOW });
      await shot(page, "triton-show-ptx");
    });
    await runCommand(page, "View: Close All Editor Groups");
    return `ptxls[triton] added to the created environment in ${extraSeconds} s (triton ${installed.stdout.trim()}); ${viewName} opened, line ${at + 1}: "${shown}"`;
  });

  await step(`compute-sanitizer: "Run with sanitizer" sits beside "Run GPU test" on the .entry of ${SM80_FILE}; here it says it cannot run`, async () => {
    await runCommand(page, "Notifications: Clear All Notifications");
    await openFromExplorer(page, SM80_FILE);
    // The editor remembers where the SASS step left the cursor (further down); the .entry and
    // its lenses are near the top.
    await clickEditor(page);
    await goToLine(page, 1, 1);
    const editor = page.locator(".editor-group-container.active .monaco-editor");
    const lens = editor.locator(".codelens-decoration", { hasText: "Run with sanitizer" }).first();
    await lens.waitFor({ timeout: SLOW });
    const lensText = (await lens.innerText()).replace(/\s+/g, " ").trim();
    if (!lensText.includes("Run GPU test")) throw new Error(`the lens line with "Run with sanitizer" has no "Run GPU test": "${lensText}"`);
    // A code lens is drawn above the line it belongs to: the .entry line comes right below it.
    const entryLine = editor.locator(".view-line", { hasText: ".entry" }).first();
    const [lensBox, entryBox] = [await lens.boundingBox(), await entryLine.boundingBox()];
    if (!lensBox || !entryBox || entryBox.y < lensBox.y || entryBox.y - lensBox.y > 3 * entryBox.height) {
      throw new Error(`the lens is not just above the .entry line (lens ${JSON.stringify(lensBox)}, .entry line ${JSON.stringify(entryBox)})`);
    }
    await lens.locator("a", { hasText: "Run with sanitizer" }).first().click();
    // The created environment has no compute-sanitizer (the `sanitizer` extra) and this machine
    // no GPU: the server says it cannot run and why, once, and the lens records the outcome.
    const toast = page.locator(".notifications-toasts .notification-toast.notification-fade-in-done", { hasText: /ptxls: .*(compute-sanitizer|CUDA device|GPU)/ }).first();
    await toast.waitFor({ timeout: SLOW });
    const message = (await toast.innerText()).replace(/\s+/g, " ").trim();
    const after = editor.locator(".codelens-decoration", { hasText: /Run with sanitizer \(last: (no GPU|no compute-sanitizer)\)/ }).first();
    await after.waitFor({ timeout: SLOW });
    const afterText = (await after.innerText()).replace(/\s+/g, " ").trim();
    await shot(page, "sanitizer-lens");
    await runCommand(page, "Notifications: Clear All Notifications");
    await runCommand(page, "View: Close All Editor Groups");
    return `lenses before: "${lensText}"; after the click: "${afterText}"; notification: "${message}"`;
  });

  await step(`code action "${ACTION_TITLE}" creates vec_add.ptx`, async () => {
    if (!oracle.action) return skip(`the server offers no "${ACTION_TITLE}" code action in vec_add.cu (offers: ${oracle.actionTitles.join("; ") || "none"})`);
    const created = join(workspace, "vec_add.ptx");
    await page.keyboard.press("Escape");
    await openFromExplorer(page, "vec_add.cu");
    await clickEditor(page);
    await goToLine(page, oracle.action.line + 1, oracle.action.column + 1);
    await openCodeActionMenu(page, oracle.action.kind);
    const entry = page.locator(".action-widget .monaco-list-row", { hasText: ACTION_TITLE }).first();
    await entry.waitFor();
    await shot(page, "code-action-menu");
    // Arrow down to the entry and press Enter, as a keyboard user would.
    const focused = page.locator(".action-widget .monaco-list-row.focused", { hasText: ACTION_TITLE });
    for (let i = 0; i < 20 && (await focused.count()) === 0; i++) await page.keyboard.press("ArrowDown");
    await focused.waitFor({ timeout: 5000 });
    await page.keyboard.press("Enter");
    // It ends visibly, as the palette's command does: the file opens beside the source, and a
    // notification says what was written.
    const said = await endsVisibly(page, { toast: /ptxls: .*vec_add\.ptx/, tab: "vec_add.ptx", content: "Generated by ptxls lower" });
    await waitFor(() => existsSync(created) && /\.entry\s+\S*vec_add/.test(readFileSync(created, "utf8")), "vec_add.ptx with a vec_add .entry on disk", SLOW);
    await shot(page, "lowered");
    await runCommand(page, "Notifications: Clear All Notifications");
    await runCommand(page, "View: Close All Editor Groups");
    return `vec_add.ptx created (${statSync(created).size} bytes), opened beside vec_add.cu; ${said}`;
  });

  await step("the lowered vec_add.ptx passes ptxls check (no red file)", async () => {
    const created = join(workspace, "vec_add.ptx");
    if (!existsSync(created)) return skip("vec_add.ptx was not created");
    // The same engine the editor uses, from the command line: a clean exit means the file
    // the code action wrote shows no problems in the editor either.
    const check = spawnSync(PYTHON, ["-m", "ptxls.cli", "check", created], { cwd: workspace, env: testEnv(), encoding: "utf8" });
    if (check.status !== 0) throw new Error(`ptxls check exited ${check.status}:\n${check.stdout}${check.stderr}`);
    return "ptxls check: clean";
  });

  await step("\"ptxls: Lower this kernel to PTX…\" with nvcc reports the file it wrote", async () => {
    if (!oracle.action) return skip("the server offers no nvcc lowering");
    const kernel = kernelNamePositions(readFileSync(join(workspace, "vec_add.cu"), "utf8"))[0];
    await runCommand(page, "Notifications: Clear All Notifications");
    await openFromExplorer(page, "vec_add.cu");
    await clickEditor(page);
    await goToLine(page, kernel.line + 1, kernel.column + 1);
    await runCommand(page, "ptxls: Lower this kernel to PTX");
    // The extension asks which backend.
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "nvcc" }).first().waitFor();
    await page.locator(".quick-input-widget input").fill("nvcc");
    await page.keyboard.press("Enter");
    const note = page.locator(".notifications-toasts .notification-toast", { hasText: "vec_add.ptx" }).first();
    await note.waitFor({ timeout: SLOW });
    const text = (await note.innerText()).replace(/\s+/g, " ").trim();
    await shot(page, "lower-command");
    await runCommand(page, "Notifications: Clear All Notifications");
    return `notification: "${text}"`;
  });

  await step(`Triton: the light bulb's "Lower to PTX with Triton (reference)" on ${TRITON_FILE} opens its PTX beside and says so`, async () => {
    const kernel = tritonKernelPositions(readFileSync(join(workspace, TRITON_FILE), "utf8"))[0];
    await runCommand(page, "Notifications: Clear All Notifications");
    await openFromExplorer(page, TRITON_FILE);
    await clickEditor(page);
    await goToLine(page, kernel.line + 1, kernel.column + 1);
    const title = `Lower to PTX with Triton (reference) (${kernel.kernel})`;
    await pickCodeAction(page, title, "refactor.rewrite", "triton-code-action-menu");
    const said = await endsVisibly(page, { toast: new RegExp(`ptxls: .*${kernel.kernel}.*\\.ptx`), tab: kernel.kernel, content: "Generated by ptxls lower" });
    await shot(page, "triton-lowered");
    await runCommand(page, "Notifications: Clear All Notifications");
    await runCommand(page, "View: Close All Editor Groups");
    return `"${title}": ${said}`;
  });

  await step("the API key from \"ptxls: Set LLM API key\" reaches the server, and no log", async () => {
    if (!oracle.status) return skip("the server sends no ptxls/status, so the key's arrival is not visible");
    const item = page.locator(".statusbar-item", { hasText: "ptxas" }).first();
    if (!(await item.innerText()).includes("no LLM")) throw new Error(`before the key: expected "no LLM" in "${await item.innerText()}"`);
    await page.keyboard.press("Escape");
    await runCommand(page, "ptxls: Set LLM API key");
    const input = page.locator(".quick-input-widget input[type=password]");
    await input.waitFor();
    await input.fill(API_KEY);
    await page.keyboard.press("Enter");
    // The extension restarts the server with OPENAI_API_KEY in its environment; only then
    // does the server report the model.
    await page.locator(".statusbar-item", { hasText: LLM_MODEL }).first().waitFor({ timeout: SLOW });
    await shot(page, "api-key-set");
    const leaks = filesContaining([join(tmpRoot, "user-data"), workspace, OUT], API_KEY);
    if (leaks.length) throw new Error(`the API key appears in ${leaks.join(", ")}`);
    return `status bar shows "${LLM_MODEL}" after the key was set; the key is in no log, setting or workspace file`;
  });

  await step("the light bulb's \"Lower to PTX with LLM\" against a scripted endpoint opens the verified PTX beside and says so", async () => {
    // The scripted OpenAI-compatible server (tests/scripted_llm.py) answers with the library's
    // vec_add; the real loop extracts it, runs ptxas and tests it (on the GPU, or on the CPU
    // emulator without one) before writing it.
    const llm = await startScriptedLlm();
    try {
      writeWorkspaceSettings(workspace, undefined, { "ptxls.llm.baseUrl": llm.url });
      await runCommand(page, "Notifications: Clear All Notifications");
      const kernel = kernelNamePositions(readFileSync(join(workspace, "vec_add.cu"), "utf8"))[0];
      await openFromExplorer(page, "vec_add.cu");
      await clickEditor(page);
      await goToLine(page, kernel.line + 1, kernel.column + 1);
      const title = `Lower to PTX with LLM (${kernel.kernel})`;
      await pickCodeAction(page, title, "refactor.rewrite", "llm-code-action-menu");
      // While it runs (over a second): a notification with the work and a Cancel button.
      const running = page.locator(".notifications-toasts .notification-toast", { hasText: "lowering vec_add to PTX (LLM)" }).first();
      await running.waitFor({ timeout: SLOW });
      const cancellable = (await running.getByRole("button", { name: "Cancel" }).count()) > 0;
      await shot(page, "llm-lowering-progress");
      const said = await endsVisibly(page, { toast: /ptxls: .*vec_add.*\.ptx/, tab: "vec_add", content: "Generated by ptxls lower" });
      await shot(page, "llm-lowered");
      await runCommand(page, "Notifications: Clear All Notifications");
      await runCommand(page, "View: Close All Editor Groups");
      if (!cancellable) throw new Error("the running lowering's notification has no Cancel button");
      return `"${title}" with ${llm.url}: progress with Cancel; ${said}`;
    } finally {
      llm.stop();
      writeWorkspaceSettings(workspace, undefined);
    }
  });

  await step("an environment made from another build of the extension is updated before the server starts", async () => {
    const marker = join(dirname(dirname(managedPython)), "ptxls-bundled-wheel.txt");
    if (!existsSync(marker)) return skip(`no ${marker}: the environment was not made by this run`);
    // As if an older .vsix had made it: its wheel's identity differs from the bundled one.
    writeFileSync(marker, "ptxls-0.0.0-py3-none-any.whl sha256:older\n");
    await runCommand(page, "Notifications: Clear All Notifications");
    await runCommand(page, "ptxls: Restart server");
    const progress = page.locator(".notifications-toasts .notification-toast", { hasText: "updating the ptxls environment" }).first();
    await progress.waitFor({ timeout: SLOW });
    await page.locator(".statusbar-item", { hasText: "ptxas" }).first().waitFor({ timeout: SETUP });
    const now = readFileSync(marker, "utf8");
    if (!/^ptxls-.*\.whl sha256:[0-9a-f]{64}$/m.test(now)) throw new Error(`the marker was not rewritten: "${now.trim()}"`);
    return `progress "updating the ptxls environment" shown; the environment now records ${now.trim().slice(0, 40)}…; server back`;
  });

  await step("a wrong interpreter gets a notification saying how to fix it", async () => {
    await runCommand(page, "Notifications: Clear All Notifications");
    writeWorkspaceSettings(workspace, "/nonexistent/bin/python3");
    // fade-in-done: the toast has finished sliding in, so the screenshot shows it whole.
    const toast = page.locator(".notifications-toasts .notification-toast.notification-fade-in-done", { hasText: "/nonexistent/bin/python3" }).first();
    await toast.waitFor({ timeout: SLOW });
    const text = (await toast.innerText()).replace(/\s+/g, " ").trim();
    if (!/not found/.test(text) || !/Select interpreter/.test(text)) throw new Error(`unexpected notification: "${text}"`);
    await shot(page, "wrong-interpreter");
    let withoutPtxls = "";
    // The commoner mistake: a real Python without ptxls installed.
    if (SYSTEM_PYTHON && spawnSync(SYSTEM_PYTHON, ["-c", "import ptxls.cli.main"]).status !== 0) {
      await runCommand(page, "Notifications: Clear All Notifications");
      writeWorkspaceSettings(workspace, SYSTEM_PYTHON);
      const notInstalled = page.locator(".notifications-toasts .notification-toast.notification-fade-in-done", { hasText: "is not installed" }).first();
      await notInstalled.waitFor({ timeout: SLOW });
      withoutPtxls = (await notInstalled.innerText()).replace(/\s+/g, " ").trim();
      if (!withoutPtxls.includes("Create environment")) throw new Error(`unexpected notification: "${withoutPtxls}"`);
      await shot(page, "ptxls-not-installed");
    }
    // Setting removed again: the server comes back by itself, from the environment made above.
    writeWorkspaceSettings(workspace, undefined);
    await page.locator(".statusbar-item", { hasText: "ptxas" }).first().waitFor({ timeout: SLOW });
    return `notification: "${text}"${withoutPtxls ? `; for ${SYSTEM_PYTHON}: "${withoutPtxls}"` : ""}; server back after the setting was restored`;
  });
}

// A second, fresh machine state whose pip cannot reach any package index: "Create a ptxls
// environment" must fail with a message that says what to do, not a stack of pip output.
async function runOfflineScenario(browser, tmp) {
  const root = join(tmp, "offline");
  const workspace = join(root, "workspace");
  mkdirSync(workspace, { recursive: true });
  cpSync(join(EXAMPLES, "broken.ptx"), join(workspace, "broken.ptx"));
  // Nothing listens on port 9; no config file, find-links, cache or retries can stand in for it.
  const offline = { PIP_INDEX_URL: "http://127.0.0.1:9/simple", PIP_EXTRA_INDEX_URL: "", PIP_FIND_LINKS: "", PIP_CONFIG_FILE: "/dev/null", PIP_NO_CACHE_DIR: "1", PIP_RETRIES: "0", PIP_DEFAULT_TIMEOUT: "5" };
  const codeServer = await startCodeServer(root, workspace, offline);
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  page.setDefaultTimeout(30_000);
  record.page = page;
  try {
    await page.goto(`${codeServer.url}/?folder=${encodeURIComponent(workspace)}`, { timeout: SLOW });
    await page.locator(".explorer-folders-view .monaco-list-row").first().waitFor({ timeout: SLOW });
    await step("no network: \"Create a ptxls environment\" says the package index is unreachable and what to do", async () => {
      await openFromExplorer(page, "broken.ptx");
      const offer = page.locator(".notifications-toasts .notification-toast", { hasText: "no ptxls environment yet" }).first();
      await offer.waitFor({ timeout: SLOW });
      await offer.getByRole("button", { name: "Create environment" }).click();
      await page.locator(".quick-input-list .monaco-list-row", { hasText: "For this workspace only" }).first().click();
      // pip gives up at once (no retries), so this comes within seconds of the venv.
      const failure = page.locator(".notifications-toasts .notification-toast.notification-fade-in-done", { hasText: /could not reach the Python package index|index could not be reached/ }).first();
      await failure.waitFor({ timeout: 2 * SLOW });
      const text = (await failure.innerText()).replace(/\s+/g, " ").trim();
      for (const expected of ["Try again", "Show output", "PIP_INDEX_URL"]) {
        if (!text.includes(expected)) throw new Error(`the failure notification lacks "${expected}": "${text}"`);
      }
      await shot(page, "setup-no-network");
      return `notification: "${text}"`;
    });
  } finally {
    await page.close().catch(() => undefined);
    await codeServer.stop();
  }
}

// A Python that exists but (normally) lacks ptxls, for the "not installed" notification.
const SYSTEM_PYTHON = ["/usr/bin/python3", "/usr/local/bin/python3"].find((p) => existsSync(p) && resolve(p) !== resolve(PYTHON));

// A value that cannot occur by chance, so finding it anywhere is a leak.
const API_KEY = `sk-ptxls-e2e-${process.pid}-${Date.now()}`;

function filesContaining(roots, needle) {
  const found = [];
  const visit = (path) => {
    const info = statSync(path, { throwIfNoEntry: false });
    if (!info) return;
    if (info.isDirectory()) {
      for (const name of readdirSync(path)) visit(join(path, name));
    } else if (info.isFile() && info.size < 50_000_000 && readFileSync(path).includes(needle)) {
      found.push(path);
    }
  };
  roots.forEach(visit);
  return found;
}

// ---------------------------------------------------------------------------- the oracle

// Starts the server once outside VS Code and records what it says about the examples:
// the diagnostics for broken.ptx (and from them the symbol and the fix to type), its
// status notification, the first hover it answers, and its code actions for vec_add.cu.
async function askServer(workspace) {
  const probe = new LspProbe(PYTHON, ["-m", "ptxls.server", "serve", "--stdio"], {
    cwd: workspace,
    env: testEnv(),
    settings: { server: { pythonPath: PYTHON }, llm: { model: LLM_MODEL } },
  });
  try {
    await probe.initialize(workspace);
    const brokenPath = join(workspace, "broken.ptx");
    const brokenUri = probe.open(brokenPath, "ptx");
    const diagnostics = await probe.diagnostics(brokenUri, SLOW).catch((e) => {
      throw new Error(`the server published no diagnostics for broken.ptx (${e.message}); stderr:\n${probe.stderr}`);
    });
    const messages = diagnostics.map((d) => d.message);
    const symbol = messages.map((m) => /%[A-Za-z_$][\w$]*/.exec(m)?.[0]).find(Boolean);
    if (!symbol) throw new Error(`no diagnostic names a register: ${JSON.stringify(messages)}`);
    const fix = registerRangeFix(readFileSync(brokenPath, "utf8"), symbol);
    // The server's quick fix for that mistake: asked the way an editor asks, with the diagnostic
    // (and the data it carries) under the cursor.
    const onSymbol = diagnostics.find((d) => d.message.includes(symbol));
    const fixActions =
      (await probe.request("textDocument/codeAction", {
        textDocument: { uri: brokenUri },
        range: onSymbol.range,
        context: { diagnostics: [onSymbol] },
      })) ?? [];
    const quickFixAction = fixActions.find((a) => a.kind === "quickfix" && a.edit);
    const quickFix = quickFixAction
      ? { title: quickFixAction.title, line: onSymbol.range.start.line, column: onSymbol.range.start.character }
      : null;

    const statusMessage = await probe.waitForNotification((m) => m.method === "ptxls/status", 15_000).catch(() => null);
    // What the diagnostics use for a file whose .target is not the default arch.
    const sm80Uri = probe.open(join(workspace, SM80_FILE), "ptx");
    const sm80Status = await probe.waitForNotification((m) => m.method === "ptxls/fileStatus" && m.params.uri === sm80Uri, 15_000).catch(() => null);

    // Hovers: the positions a person would point at, in the (fixed) PTX and the CUDA file.
    const fixedText = applyFix(readFileSync(brokenPath, "utf8"), fix);
    probe.notify("textDocument/didChange", { textDocument: { uri: brokenUri, version: 2 }, contentChanges: [{ text: fixedText }] });
    const cuPath = join(workspace, "vec_add.cu");
    const cuUri = probe.open(cuPath, "cuda-cpp");
    const cuText = readFileSync(cuPath, "utf8");
    const candidates = hoverCandidates(fixedText).map((p) => ({ ...p, file: "broken.ptx", uri: brokenUri }));
    const hoverAt = async (c) => {
      const answer = await probe.request("textDocument/hover", { textDocument: { uri: c.uri }, position: { line: c.line, character: c.column } });
      return answer && hoverText(answer).trim() ? { file: c.file, line: c.line, column: c.column, text: hoverText(answer) } : null;
    };
    let hover = null;
    for (const c of candidates) {
      hover = await hoverAt(c);
      if (hover) break;
    }
    // GPU test results are hovers on the kernel's name once a test ran ("no GPU" is the
    // verdict on a machine without one). vec_add.cu: its test spec follows from the signature.
    const cuKernel = kernelNamePositions(cuText)[0];
    let gpuHover = null;
    let gpuTestSummary = null;
    if (cuKernel) {
      const target = { ...cuKernel, file: "vec_add.cu", uri: cuUri };
      const before = await hoverAt(target);
      const result = await probe.request("workspace/executeCommand", { command: "ptxls.runGpuTest", arguments: [cuUri, cuKernel.kernel] }, 300_000).catch((e) => ({ summary: e.message }));
      gpuTestSummary = result?.summary ?? null;
      const after = await hoverAt(target);
      if (after && after.text !== before?.text && gpuTestSummary) gpuHover = { ...after, summary: gpuTestSummary };
    }

    // ptxls.showPtx (uri, kernel): answered only by servers that have it.
    let showPtx = null;
    if (cuKernel) {
      showPtx = await probe
        .request("workspace/executeCommand", { command: "ptxls.showPtx", arguments: [cuUri, cuKernel.kernel] }, 120_000)
        .then((result) => ({ ok: true, result }), (e) => ({ ok: false, error: e.message }));
    }

    // ptxls.showSass (uri, kernel) on a clean PTX file, then the hover it feeds: the first
    // instruction line whose hover lists SASS.
    const { showSass, sassHover } = await askSass(probe, workspace, sm80Uri);

    const kernel = kernelNamePositions(cuText)[0];
    if (!kernel) throw new Error("vec_add.cu has no __global__ kernel");
    const actions =
      (await probe.request("textDocument/codeAction", {
        textDocument: { uri: cuUri },
        range: { start: { line: kernel.line, character: kernel.column }, end: { line: kernel.line, character: kernel.column } },
        context: { diagnostics: [] },
      })) ?? [];
    // The title may carry the kernel name after it: "… (reference) (vec_add)".
    const match = actions.find((a) => a.title.startsWith(ACTION_TITLE));
    const oracle = {
      messages,
      symbol,
      fix,
      quickFix,
      quickFixOffers: fixActions.map((a) => a.title),
      status: statusMessage?.params ?? null,
      sm80Status: sm80Status?.params ?? null,
      hover,
      gpuHover,
      gpuTestSummary,
      showPtx,
      showSass,
      sassHover,
      hoverProbes: candidates.map((c) => `${c.file}:${c.line + 1}:${c.column + 1}`),
      action: match ? { ...kernel, kind: match.kind ?? "quickfix" } : null,
      actionTitles: actions.map((a) => a.title),
    };
    writeFileSync(join(OUT, "oracle.json"), JSON.stringify(oracle, null, 2) + "\n");
    return oracle;
  } finally {
    await probe.close();
  }
}

async function askSass(probe, workspace, uri) {
  const text = readFileSync(join(workspace, SM80_FILE), "utf8");
  const entry = /\.entry\s+([A-Za-z_$][\w$]*)/.exec(text);
  if (!entry) return { showSass: { ok: false, error: `no .entry in ${SM80_FILE}` }, sassHover: null };
  const showSass = await probe
    .request("workspace/executeCommand", { command: "ptxls.showSass", arguments: [uri, entry[1]] }, 120_000)
    .then((result) => ({ ok: result?.ok === true, result, kernel: entry[1] }), (e) => ({ ok: false, error: e.message }));
  if (!showSass.ok) return { showSass, sassHover: null };
  const lines = text.split("\n");
  // instruction lines, the kernel's arithmetic and global loads first (their SASS says more
  // than the parameter loads at the top)
  const isInstruction = (t) => /^\s*(@!?%\w+\s+)?[a-z][\w.]*\s/.test(t);
  const telling = (t) => /^\s*(fma|mad|add|mul)\.[\w.]*f32|^\s*ld\.global/.test(t);
  const order = [...lines.keys()].filter((n) => isInstruction(lines[n])).sort((a, b) => telling(lines[b]) - telling(lines[a]) || a - b);
  for (const line of order) {
    const column = lines[line].search(/\S/);
    const answer = await probe.request("textDocument/hover", { textDocument: { uri }, position: { line, character: column } });
    const said = answer ? hoverText(answer) : "";
    if (said.includes("**SASS**")) return { showSass, sassHover: { file: SM80_FILE, line, column, text: said.slice(said.indexOf("**SASS**")) } };
  }
  return { showSass, sassHover: null };
}

// The mistake is a register used past its declared range (`.reg .b32 %r<6>` and a use of %r6);
// a person fixes it by raising the count. Returns where to type and what.
function registerRangeFix(text, symbol) {
  const [, prefix, index] = /^%([A-Za-z_$]+?)(\d+)$/.exec(symbol) ?? [];
  if (prefix === undefined) throw new Error(`don't know how to fix ${symbol}: not an indexed register`);
  const lines = text.split("\n");
  for (let line = 0; line < lines.length; line++) {
    // Comments may quote the declaration (the example's own does); only code counts.
    const code = lines[line].replace(/\/\/.*$/, "");
    const m = new RegExp(String.raw`\.reg\s+\.\w+\s+%${prefix}<(\d+)>`).exec(code);
    if (m) {
      const oldText = m[1];
      const newText = String(Number(index) + 1);
      const column = m.index + m[0].length - 1 - oldText.length;
      return { line, column, oldText, newText, expectInFile: `%${prefix}<${newText}>` };
    }
  }
  throw new Error(`broken.ptx has no \`.reg .TYPE %${prefix}<N>\` declaration to extend for ${symbol}`);
}

function applyFix(text, fix) {
  const lines = text.split("\n");
  const l = lines[fix.line];
  lines[fix.line] = l.slice(0, fix.column) + fix.newText + l.slice(fix.column + fix.oldText.length);
  return lines.join("\n");
}

// A register operand, a parameter, the kernel name, an opcode: what a person hovers first in PTX.
function hoverCandidates(ptx) {
  const positions = [];
  const lines = ptx.split("\n");
  const firstMatch = (re) => {
    for (let line = 0; line < lines.length; line++) {
      const m = re.exec(lines[line].replace(/\/\/.*$/, ""));
      if (m) return { line, column: m.index + m[0].indexOf(m[1]) };
    }
    return null;
  };
  const patterns = [
    /^\s+[a-z][\w.]*\s+(%(?:rd|r|f|p)\d+)/, // the destination of the first instruction
    /\[([A-Za-z_]\w*_param_\w*)\]/, // a kernel parameter
    /\.entry\s+([A-Za-z_]\w*)/,
    /^\s+(ld)\.global/,
    /^\s+(mad)\./,
  ];
  for (const re of patterns) {
    const p = firstMatch(re);
    if (p) positions.push(p);
  }
  return positions;
}

// The name of each @triton.jit function: where a person puts the cursor for its commands.
function tritonKernelPositions(py) {
  const lines = py.split("\n");
  const positions = [];
  lines.forEach((text, line) => {
    const m = /^def\s+([A-Za-z_]\w*)\s*\(/.exec(text);
    if (m && lines.slice(Math.max(0, line - 3), line).some((l) => /^@triton\.jit/.test(l))) positions.push({ line, column: 4, kernel: m[1] });
  });
  return positions;
}

function kernelNamePositions(cu) {
  const lines = cu.split("\n");
  const positions = [];
  lines.forEach((text, line) => {
    const m = /__global__\s+void\s+([A-Za-z_]\w*)/.exec(text);
    if (m) positions.push({ line, column: m.index + m[0].length - m[1].length, kernel: m[1] });
  });
  return positions;
}

// ---------------------------------------------------------------------------- VS Code, driven

// Focuses the active editor by clicking into its text area (near the top, where there is
// always a line or the empty space after the last one).
// Runs body with the primary side bar and the panel hidden, and shows both again afterwards.
async function withWideEditor(page, body) {
  const parts = [["View: Toggle Primary Side Bar Visibility", ".part.sidebar"], ["View: Toggle Panel Visibility", ".part.panel"]];
  for (const [command, part] of parts) {
    await runCommand(page, command);
    await page.locator(part).first().waitFor({ state: "hidden" });
  }
  try {
    await body();
  } finally {
    for (const [command, part] of parts) {
      await runCommand(page, command);
      await page.locator(part).first().waitFor({ state: "visible" });
    }
  }
}

async function showProblems(page) {
  await page.keyboard.press("Control+Shift+M");
  try {
    await page.locator(".markers-panel").waitFor({ timeout: 5000 });
  } catch {
    await runCommand(page, "View: Focus Problems");
    await page.locator(".markers-panel").waitFor();
  }
}

async function showHover(page, file, line, column, text, shotName) {
  await openFromExplorer(page, file);
  await clickEditor(page);
  await goToLine(page, line + 1, column + 1);
  await hoverAtCursor(page);
  const hover = page.locator(".monaco-hover:visible").first();
  // Compared as plain words: the rendered hover has no markdown, and inline code is split
  // into elements of its own.
  const expected = firstWords(text);
  await waitFor(async () => plainWords(await hover.innerText().catch(() => "")).includes(expected), `a hover containing "${expected}"`, SLOW);
  await shot(page, shotName);
  await page.keyboard.press("Escape");
  return `hover at ${file}:${line + 1}:${column + 1}: "${firstWords(text)}…"`;
}

// Points the mouse at the character after the text cursor, as a person hovering would;
// falls back to the keyboard's "Show or Focus Hover" if no hover appears.
async function hoverAtCursor(page) {
  const cursor = page.locator(".editor-group-container.active .monaco-editor .cursors-layer .cursor").first();
  const box = await cursor.boundingBox();
  if (box) {
    await page.mouse.move(box.x + 6, box.y + box.height / 2);
    try {
      await page.locator(".monaco-hover:visible").first().waitFor({ timeout: 10_000 });
      return;
    } catch {
      // fall through
    }
  }
  await page.keyboard.press("Control+K");
  await page.keyboard.press("Control+I");
  await page.locator(".monaco-hover:visible").first().waitFor();
}

// A code action picked from its menu as a keyboard user picks it: the menu, arrows, Enter.
async function pickCodeAction(page, title, kind, shotName) {
  await openCodeActionMenu(page, kind);
  const entry = page.locator(".action-widget .monaco-list-row", { hasText: title }).first();
  await entry.waitFor({ timeout: SLOW });
  if (shotName) await shot(page, shotName);
  const focused = page.locator(".action-widget .monaco-list-row.focused", { hasText: title });
  for (let i = 0; i < 20 && (await focused.count()) === 0; i++) await page.keyboard.press("ArrowDown");
  await focused.waitFor({ timeout: 5000 });
  await page.keyboard.press("Enter");
}

// How every action that produces a file must end (issue 21): a notification that says what it
// did, and the file open in an editor beside the source (its own editor group), showing
// `content` at its top (a lowering's provenance header). Returns what was seen.
async function endsVisibly(page, { toast, tab, content }) {
  const note = page.locator(".notifications-toasts .notification-toast", { hasText: toast }).first();
  await note.waitFor({ timeout: SLOW });
  const text = (await note.innerText()).replace(/\s+/g, " ").trim();
  const opened = page.locator(".editor-group-container.active .tabs-container .tab.active", { hasText: tab }).first();
  await opened.waitFor({ timeout: SLOW });
  const groups = await page.locator(".editor-group-container").count();
  if (groups < 2) throw new Error(`the result opened in the source's own editor group, not beside it (${groups} group)`);
  await page.locator(".editor-group-container.active .monaco-editor .view-lines", { hasText: content }).first().waitFor({ timeout: SLOW });
  const name = (await opened.innerText()).replace(/\s+/g, " ").trim();
  return `notification "${text}"; "${name}" opened beside the source`;
}

async function openCodeActionMenu(page, kind) {
  if (kind.startsWith("source")) {
    await runCommand(page, "Source Action...");
  } else if (kind.startsWith("refactor")) {
    await runCommand(page, "Refactor...");
  } else {
    await page.keyboard.press("Control+.");
  }
}

// Screenshots worth showing in the README, under stable names. With PTXLS_E2E_SCREENSHOTS=DIR
// (docs/screenshots) a green run refreshes them.
const README_SHOTS = {
  "setup-notification": "vscode-setup-notification.png",
  "setup-progress": "vscode-setup-progress.png",
  "setup-done": "vscode-setup-done.png",
  "setup-no-network": "vscode-setup-no-network.png",
  problems: "vscode-diagnostics.png",
  "quick-fix-menu": "vscode-quick-fix.png",
  fixed: "vscode-fixed.png",
  "status-bar": "vscode-status-bar.png",
  hover: "vscode-hover.png",
  "show-sass": "vscode-show-sass.png",
  "sass-hover": "vscode-sass-hover.png",
  "triton-show-ptx": "vscode-triton-show-ptx.png",
  "sanitizer-lens": "vscode-sanitizer-lens.png",
  "gpu-hover": "vscode-gpu-test-hover.png",
  "code-action-menu": "vscode-code-action.png",
  lowered: "vscode-lowered.png",
  "triton-lowered": "vscode-triton-lowered.png",
  "llm-lowering-progress": "vscode-llm-lowering-progress.png",
  "llm-lowered": "vscode-llm-lowered.png",
  "gpu-test-ran": "vscode-gpu-test-ran.png",
  "show-ptx": "vscode-show-ptx.png",
  "wrong-interpreter": "vscode-wrong-interpreter.png",
  "ptxls-not-installed": "vscode-ptxls-not-installed.png",
};
const readmeShots = [];

function publishScreenshots() {
  const dir = process.env.PTXLS_E2E_SCREENSHOTS;
  if (!dir) return;
  mkdirSync(resolve(REPO, dir), { recursive: true });
  for (const [file, name] of readmeShots) cpSync(file, join(resolve(REPO, dir), name));
  console.log(`copied ${readmeShots.length} screenshots to ${dir}`);
}

// ---------------------------------------------------------------------------- plumbing

function makeWorkspace(dir) {
  for (const name of ["broken.ptx", "vec_add.cu"]) {
    if (!existsSync(join(EXAMPLES, name))) throw new Error(`${join(EXAMPLES, name)} is missing`);
  }
  // The examples minus vec_add.ptx: the code action must create it.
  // (and minus .ptxls/, the scratch folder earlier runs of ptxls may have left there)
  cpSync(EXAMPLES, dir, { recursive: true, filter: (src) => !src.endsWith("/vec_add.ptx") && !src.endsWith("/.ptxls") });
  // A clean kernel whose .target differs from the default arch, for the status bar.
  writeFileSync(join(dir, SM80_FILE), readFileSync(join(EXAMPLES, "broken.ptx"), "utf8").replace(/\.target sm_\d+\w*/, ".target sm_80").replace(/^(\s*\.reg\s+\.b32\s+%r<)6>/m, "$17>"));
  mkdirSync(join(dir, ".vscode"), { recursive: true });
  // No ptxls.server.pythonPath: the empty machine state a stranger starts from.
  writeWorkspaceSettings(dir, undefined);
  return dir;
}

const SM80_FILE = "saxpy_sm80.ptx";
// A Triton kernel from the examples (copied with them), for Show PTX on Triton source.
const TRITON_FILE = "vec_add_triton.py";

// A model name but no endpoint: the server reports "no LLM" until it has an API key, which
// makes the key's way from SecretStorage into the server's environment visible.
const LLM_MODEL = "e2e-model";

function writeWorkspaceSettings(dir, python, extra = {}) {
  const settings = { ...(python ? { "ptxls.server.pythonPath": python } : {}), "ptxls.llm.model": LLM_MODEL, ...extra };
  writeFileSync(join(dir, ".vscode/settings.json"), JSON.stringify(settings, null, 2));
}

// The environment of everything the test starts: without the person's own LLM settings, so
// that "no LLM" before the key is set is a fact of the test, not of the machine.
function testEnv(extra = {}) {
  const env = { ...process.env, ...extra };
  for (const name of ["OPENAI_API_KEY", "OPENAI_BASE_URL", "PTXLS_MODEL"]) delete env[name];
  return env;
}

function startCodeServer(tmp, workspace, extraEnv = {}) {
  return startVsCode({
    codeServer: CODE_SERVER,
    vsix: VSIX,
    tmp,
    workspace,
    log: join(OUT, Object.keys(extraEnv).length ? "code-server-offline.log" : "code-server.log"),
    installLog: join(OUT, "install-extension.log"),
    // pip's own cache (the XDG_CACHE_HOME would hide it): the wheels the project's install
    // already downloaded are not fetched again. Packages still come through the index.
    env: (xdg) => testEnv({ ...xdg, PIP_CACHE_DIR: pipCacheDir(), ...extraEnv }),
    checkEnv(childEnv) {
      // The empty state: no python3 on PATH may already have ptxls.
      const has = spawnSync("python3", ["-c", "import ptxls"], { env: childEnv });
      if (has.status === 0) throw new Error("python3 on PATH can import ptxls, so this is not an empty machine state; run with a PATH whose python3 lacks it");
    },
  });
}

// The ptxls wheel the installed .vsix carries (bundled/ptxls-*.whl in its extension folder).
// tests/e2e/scripted_llm_server.py in the project's Python: { url, stop() }.
async function startScriptedLlm() {
  const child = spawn(PYTHON, [join(HERE, "scripted_llm_server.py"), LLM_MODEL], { env: testEnv(), stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  await waitFor(() => {
    if (child.exitCode !== null) throw new Error(`the scripted LLM exited (${child.exitCode}): ${out}`);
    return /^http:\/\/\S+\/v1$/m.test(out);
  }, "the scripted LLM's URL", 30_000);
  return { url: /^(http:\/\/\S+\/v1)$/m.exec(out)[1], stop: () => child.stdin.end() };
}

function bundledWheel(extensionsDir) {
  for (const dir of readdirSync(extensionsDir).filter((d) => d.startsWith("ptxls."))) {
    const bundled = join(extensionsDir, dir, "bundled");
    const wheels = existsSync(bundled) ? readdirSync(bundled).filter((f) => /^ptxls-.*\.whl$/.test(f)).sort() : [];
    if (wheels.length) return join(bundled, wheels.pop());
  }
  throw new Error(`no bundled/ptxls-*.whl under ${extensionsDir}/ptxls.*`);
}

// A child process, awaited without blocking the event loop (Playwright keeps talking to the
// browser meanwhile); killed after timeoutMs.
function runProcess(command, args, childEnv, timeoutMs) {
  return new Promise((done) => {
    const child = spawn(command, args, { env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      done({ code: -1, output: `${output}\n${e.message}` });
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      done({ code: code ?? -1, output });
    });
  });
}

function pipCacheDir() {
  const asked = spawnSync(PYTHON, ["-m", "pip", "cache", "dir"], { encoding: "utf8" });
  return asked.status === 0 && asked.stdout.trim() ? asked.stdout.trim() : join(tmpdir(), "ptxls-e2e-pip-cache");
}

// The extension host's logs, including the ptxls output channel, for debugging a red run.
function copyLogs(tmp) {
  const logs = join(tmp, "user-data/logs");
  if (existsSync(logs)) cpSync(logs, join(OUT, "vscode-logs"), { recursive: true });
}

function plainWords(text) {
  // Markdown markup and code fences differ from what the hover renders; compare plain words.
  // (`_` only as emphasis at a word's edge: vec_add keeps its underscore.)
  return text.replace(/```\w*|[`*#>|]/g, "").replace(/(^|\s)_+|_+(?=\s|$)/g, "$1 ").replace(/\s+/g, " ").trim();
}

function firstWords(text) {
  return plainWords(text).split(" ").slice(0, 4).join(" ");
}


main()
  .then(() => {
    const failed = results.filter((r) => r.status === "failed");
    if (failed.length === 0) publishScreenshots();
    console.log(`\n${results.filter((r) => r.status === "passed").length} passed, ${results.filter((r) => r.status === "skipped").length} skipped, ${failed.length} failed; screenshots and logs in ${OUT}`);
    process.exit(failed.length ? 1 : 0);
  })
  .catch((error) => {
    console.error(`vscode e2e: ${error.stack ?? error}`);
    process.exit(1);
  });
