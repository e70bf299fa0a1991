// Every Python the extension starts runs outside the folder VS Code was opened on. `python -c`
// and `python -m` put their working directory first on sys.path, and the extension host's
// working directory can be that folder (`code .` in a cloned repository), whose `ptxls/`,
// `venv.py` or `ensurepip.py` would then run. Real python3, real hostile files, real markers.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { checkServerCommand } from "../src/preflight";
import { privateWorkingDirectory, probePython } from "../src/pythonProbe";

function hostileFolder(): { folder: string; marker: (name: string) => string } {
  const root = mkdtempSync(join(tmpdir(), "ptxls-hostile-"));
  const folder = join(root, "repo");
  const markers = join(root, "markers");
  mkdirSync(join(folder, "ptxls", "server"), { recursive: true });
  mkdirSync(markers);
  const plant = (file: string, name: string) =>
    writeFileSync(join(folder, file), `open(${JSON.stringify(join(markers, name))}, "w").write("ran")\n`);
  plant(join("ptxls", "__init__.py"), "ptxls");
  writeFileSync(join(folder, "ptxls", "server", "__init__.py"), "");
  writeFileSync(join(folder, "ptxls", "server", "app.py"), "");
  plant("venv.py", "venv");
  plant("ensurepip.py", "ensurepip");
  return { folder, marker: (name) => join(markers, name) };
}

const SERVE = { command: "python3", args: ["-m", "ptxls.server", "serve"], origin: "python3 on PATH" as const };

test("the preflight import runs in the server's own folder, not the workspace", async () => {
  const { folder, marker } = hostileFolder();
  const own = privateWorkingDirectory(join(folder, "..", "storage"));
  const cwd = process.cwd();
  process.chdir(folder); // where VS Code itself may have been started
  try {
    await checkServerCommand(SERVE, process.env, own);
    assert.equal(existsSync(marker("ptxls")), false, "the workspace's ptxls/ was imported");
    // the same check run in the folder does import it: what the cwd argument prevents
    await checkServerCommand(SERVE, process.env, folder);
    assert.equal(existsSync(marker("ptxls")), true);
  } finally {
    process.chdir(cwd);
  }
});

test("the interpreter probe (venv, ensurepip) runs in a private folder", async () => {
  const { folder, marker } = hostileFolder();
  const own = privateWorkingDirectory(join(folder, "..", "storage"));
  const cwd = process.cwd();
  process.chdir(folder);
  try {
    const probe = await probePython("python3", "on PATH", own);
    assert.equal(probe.ok, true, probe.error);
    assert.equal(existsSync(marker("venv")) || existsSync(marker("ensurepip")), false);
    await probePython("python3", "on PATH", folder);
    assert.equal(existsSync(marker("venv")), true);
  } finally {
    process.chdir(cwd);
  }
});
