// Bundles the extension (and, with --tests, the unit tests) with esbuild.
// `vscode` stays external: VS Code provides it at run time.
import * as esbuild from "esbuild";
import { readdirSync } from "node:fs";

const args = new Set(process.argv.slice(2));
const production = args.has("--production");

const common = {
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  sourcemap: !production,
  minify: production,
  logLevel: "info",
};

if (args.has("--tests")) {
  // Tests cover the pure modules (kernel finding, grammar); they never import `vscode`.
  const entryPoints = readdirSync("test")
    .filter((f) => f.endsWith(".test.ts"))
    .map((f) => `test/${f}`);
  await esbuild.build({ ...common, entryPoints, outdir: "out-test", external: ["vscode"] });
} else {
  const options = {
    ...common,
    entryPoints: ["src/extension.ts"],
    outfile: "out/extension.js",
    external: ["vscode"],
  };
  if (args.has("--watch")) {
    const ctx = await esbuild.context(options);
    await ctx.watch();
  } else {
    await esbuild.build(options);
  }
}
