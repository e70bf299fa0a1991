import assert from "node:assert/strict";
import { test } from "node:test";
import { adapterArguments, firstWrongLaunch } from "../src/debugArgs";

test("the debug adapter starts through the server's Python, as ptxls.cli debug-adapter", () => {
  assert.deepEqual(adapterArguments(["-m", "ptxls.server", "serve"]), ["-m", "ptxls.cli", "debug-adapter"]);
  assert.deepEqual(adapterArguments(["serve", "--log-level", "debug"]), ["debug-adapter"]);
  assert.deepEqual(adapterArguments([]), ["debug-adapter"]);
});

test("a hover's link starts only a ptxls launch, with only the launch configuration's fields", () => {
  const config = { type: "ptxls", request: "launch", name: "Debug k at c[3]", program: "/p/k.ptx", kernel: "k", n: 1000, seed: 7, watch: "c[3]" };
  assert.deepEqual(firstWrongLaunch(config), config);
  assert.deepEqual(firstWrongLaunch({ ...config, preLaunchTask: "rm -rf /", debugServer: 4711 }), config);
  assert.equal(firstWrongLaunch({ ...config, type: "node" }), undefined);
  assert.equal(firstWrongLaunch({ ...config, program: 5 }), undefined);
  assert.equal(firstWrongLaunch("c[3]"), undefined);
  assert.equal(firstWrongLaunch(null), undefined);
});
