// Builds the ptxls wheel from this repository into bundled/, where the .vsix carries it: the
// extension's "Create a ptxls environment" installs it (with its dependencies from the package
// index) for people who have no Python environment with ptxls. PYTHON picks the interpreter
// (default: the repository's .venv, else python3); it needs pip and, for the build backend,
// the package index or pip's cache.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../..");
const out = resolve(here, "../bundled");
const venvPython = join(repo, ".venv", process.platform === "win32" ? "Scripts/python.exe" : "bin/python");
const python = process.env.PYTHON || (existsSync(venvPython) ? venvPython : "python3");

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const build = spawnSync(python, ["-m", "pip", "wheel", "--quiet", "--no-deps", "--disable-pip-version-check", repo, "-w", out], {
  stdio: "inherit",
});
if (build.status !== 0) {
  console.error(`bundle-wheel: "${python} -m pip wheel --no-deps ${repo}" failed (exit ${build.status ?? build.error})`);
  process.exit(1);
}
const wheels = readdirSync(out).filter((f) => /^ptxls-.*\.whl$/.test(f));
if (wheels.length !== 1) {
  console.error(`bundle-wheel: expected one ptxls wheel in ${out}, found ${wheels.join(", ") || "none"}`);
  process.exit(1);
}
console.log(`bundle-wheel: ${join("bundled", wheels[0])}`);
