import assert from "node:assert/strict";
import { test } from "node:test";
import { adapterArguments } from "../src/debugArgs";

test("the debug adapter starts through the server's Python, as ptxls.cli debug-adapter", () => {
  assert.deepEqual(adapterArguments(["-m", "ptxls.server", "serve"]), ["-m", "ptxls.cli", "debug-adapter"]);
  assert.deepEqual(adapterArguments(["serve", "--log-level", "debug"]), ["debug-adapter"]);
  assert.deepEqual(adapterArguments([]), ["debug-adapter"]);
});
