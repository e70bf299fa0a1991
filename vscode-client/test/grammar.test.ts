// Tokenises PTX with the real TextMate engine VS Code uses (vscode-textmate + oniguruma)
// and checks the scope each token gets.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { before, test } from "node:test";
import * as oniguruma from "vscode-oniguruma";
import * as textmate from "vscode-textmate";

const root = join(__dirname, "..");
let grammar: textmate.IGrammar;

before(async () => {
  const wasm = readFileSync(join(root, "node_modules/vscode-oniguruma/release/onig.wasm"));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new textmate.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns: string[]) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s: string) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async () =>
      textmate.parseRawGrammar(readFileSync(join(root, "syntaxes/ptx.tmLanguage.json"), "utf8"), "ptx.tmLanguage.json"),
  });
  const loaded = await registry.loadGrammar("source.ptx");
  assert.ok(loaded, "grammar did not load");
  grammar = loaded;
});

// Returns the innermost scope of the token covering each requested text on `line`
// (the first occurrence of the text), tokenising `lines` in order so that multi-line
// state (block comments) carries over.
function scopesOf(lines: string[], lineIndex: number, texts: string[]): Record<string, string> {
  let state = textmate.INITIAL;
  let tokens: textmate.IToken[] = [];
  for (let i = 0; i <= lineIndex; i++) {
    const result = grammar.tokenizeLine(lines[i], state);
    state = result.ruleStack;
    tokens = result.tokens;
  }
  const line = lines[lineIndex];
  const found: Record<string, string> = {};
  for (const text of texts) {
    const start = line.indexOf(text);
    assert.ok(start >= 0, `"${text}" not in line "${line}"`);
    const token = tokens.find((t) => t.startIndex <= start && start < t.endIndex);
    assert.ok(token, `no token at "${text}"`);
    assert.equal(line.slice(token.startIndex, token.endIndex), text, `token boundaries differ for "${text}" in "${line}"`);
    found[text] = token.scopes[token.scopes.length - 1];
  }
  return found;
}

test("an instruction splits into opcode, modifiers, types and operands", () => {
  const lines = ["\tld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd4+16];"];
  assert.deepEqual(scopesOf(lines, 0, ["ld", ".global", ".v4", ".f32", "%f1", "%rd4", "16"]), {
    ld: "keyword.other.opcode.ptx",
    ".global": "storage.modifier.ptx",
    ".v4": "storage.modifier.ptx",
    ".f32": "storage.type.ptx",
    "%f1": "variable.other.register.ptx",
    "%rd4": "variable.other.register.ptx",
    "16": "constant.numeric.integer.decimal.ptx",
  });
});

test("special registers are told apart from ordinary registers", () => {
  const lines = ["\tmov.u32 %r1, %tid.x;", "\tmov.u32 %r2, %ctaid.y;"];
  assert.deepEqual(scopesOf(lines, 0, ["mov", "%r1", "%tid.x"]), {
    mov: "keyword.other.opcode.ptx",
    "%r1": "variable.other.register.ptx",
    "%tid.x": "variable.language.special-register.ptx",
  });
  assert.equal(scopesOf(lines, 1, ["%ctaid.y"])["%ctaid.y"], "variable.language.special-register.ptx");
});

test("guard predicates, negated or not, and branch labels", () => {
  const lines = ["\t@%p1 bra $L__BB0_2;", "\t@!%p2 ret;", "$L__BB0_2:"];
  assert.deepEqual(scopesOf(lines, 0, ["@", "%p1", "bra", "$L__BB0_2"]), {
    "@": "keyword.operator.predicate.ptx",
    "%p1": "variable.other.predicate.ptx",
    bra: "keyword.control.flow.ptx",
    $L__BB0_2: "entity.name.label.reference.ptx",
  });
  assert.deepEqual(scopesOf(lines, 1, ["!", "%p2", "ret"]), {
    "!": "keyword.operator.negation.ptx",
    "%p2": "variable.other.predicate.ptx",
    ret: "keyword.control.flow.ptx",
  });
  assert.equal(scopesOf(lines, 2, ["$L__BB0_2"])["$L__BB0_2"], "entity.name.label.ptx");
});

test("directives, declarations and the kernel name", () => {
  const lines = [".version 8.5", ".visible .entry vec_add(", "\t.param .u64 vec_add_param_0,", "\t.reg .pred %p<2>;"];
  assert.deepEqual(scopesOf(lines, 0, [".version", "8.5"]), {
    ".version": "keyword.control.directive.ptx",
    "8.5": "constant.numeric.float.decimal.ptx",
  });
  assert.deepEqual(scopesOf(lines, 1, [".visible", ".entry", "vec_add"]), {
    ".visible": "keyword.control.directive.ptx",
    ".entry": "keyword.control.directive.ptx",
    vec_add: "entity.name.function.ptx",
  });
  assert.deepEqual(scopesOf(lines, 2, [".param", ".u64"]), {
    ".param": "keyword.control.directive.ptx",
    ".u64": "storage.type.ptx",
  });
  assert.deepEqual(scopesOf(lines, 3, [".reg", ".pred", "%p<2>"]), {
    ".reg": "keyword.control.directive.ptx",
    ".pred": "storage.type.ptx",
    "%p<2>": "variable.other.register.ptx",
  });
});

test("hex float, hex and decimal literals", () => {
  const lines = ["\tmov.f32 %f1, 0f3F800000;", "\tmov.f64 %fd1, 0d3FF0000000000000;", "\tand.b32 %r3, %r2, 0xFF;"];
  assert.equal(scopesOf(lines, 0, ["0f3F800000"])["0f3F800000"], "constant.numeric.float.hex.ptx");
  assert.equal(scopesOf(lines, 1, ["0d3FF0000000000000"])["0d3FF0000000000000"], "constant.numeric.float.hex.ptx");
  assert.equal(scopesOf(lines, 2, ["0xFF"])["0xFF"], "constant.numeric.integer.hex.ptx");
});

test("line and block comments, including a block comment across lines", () => {
  const lines = ["\tadd.s32 %r1, %r2, 1; // bump", "/* start", "ld.global.f32 inside */ ret;"];
  assert.equal(scopesOf(lines, 0, ["// bump"])["// bump"], "comment.line.double-slash.ptx");
  assert.equal(scopesOf(lines, 2, ["ld.global.f32 inside "])["ld.global.f32 inside "], "comment.block.ptx");
  assert.equal(scopesOf(lines, 2, ["ret"]).ret, "keyword.control.flow.ptx");
});
