// Source of syntaxes/ptx.tmLanguage.json. The regexes are far easier to read and
// review here (with comments, without JSON double-escaping); run
// `node scripts/ptx-grammar.mjs` after editing and commit both files.
import { writeFileSync } from "node:fs";

const TYPES = String.raw`(?:[su](?:8|16|32|64)|f16x2|bf16x2|bf16|f(?:16|32|64)|tf32|e4m3|e5m2|e2m3|e3m2|e2m1|b(?:8|16|32|64|128)|pred)`;
const DIRECTIVES = [
  "version", "target", "address_size",
  "entry", "func", "callprototype", "calltargets", "branchtargets",
  "visible", "extern", "weak", "common", "alias",
  "reg", "sreg", "param", "local", "shared", "global", "const", "tex",
  "align", "ptr", "file", "loc", "section", "pragma", "noreturn",
  "maxnreg", "maxntid", "reqntid", "minnctapersm", "maxnctapersm",
  "explicitcluster", "reqnctapercluster", "maxclusterrank",
  "texref", "samplerref", "surfref",
].join("|");
const SPECIAL_REGISTERS = [
  "tid", "ntid", "ctaid", "nctaid", "laneid", "warpid", "nwarpid", "smid", "nsmid", "gridid",
  "clusterid", "nclusterid", "cluster_ctaid", "cluster_nctaid", "cluster_ctarank", "cluster_nctarank",
  String.raw`lanemask_(?:eq|le|lt|ge|gt)`, "clock64", "clock_hi", "clock", String.raw`pm[0-7](?:_64)?`,
  String.raw`envreg\d+`, String.raw`globaltimer(?:_lo|_hi)?`, "total_smem_size", "dynamic_smem_size",
  "aggr_smem_size", String.raw`reserved_smem_offset_\w+`, "is_explicit_cluster", "current_graph_exec",
].join("|");
const CONTROL_FLOW = "bra|brx|call|ret|exit|trap|brkpt";

const grammar = {
  $schema: "https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json",
  name: "PTX",
  scopeName: "source.ptx",
  fileTypes: ["ptx"],
  patterns: [
    { include: "#comments" },
    { include: "#strings" },
    { include: "#entry" },
    { include: "#instruction" },
    { include: "#label-definition" },
    { include: "#predicate" },
    { include: "#special-registers" },
    { include: "#registers" },
    { include: "#types" },
    { include: "#directives" },
    { include: "#numbers" },
    { include: "#label-reference" },
    { include: "#punctuation" },
  ],
  repository: {
    comments: {
      patterns: [
        { name: "comment.line.double-slash.ptx", match: "//.*$" },
        { name: "comment.block.ptx", begin: String.raw`/\*`, end: String.raw`\*/` },
      ],
    },
    strings: {
      name: "string.quoted.double.ptx",
      begin: '"',
      end: '"',
      patterns: [{ name: "constant.character.escape.ptx", match: String.raw`\\.` }],
    },
    // `.visible .entry vec_add(` and `.func (.param .b32 r) name(`: the kernel name.
    entry: {
      match: String.raw`(\.(?:entry|func))\s+(?:(\([^)]*\))\s*)?([A-Za-z_$][\w$]*)`,
      captures: {
        1: { name: "keyword.control.directive.ptx" },
        2: { patterns: [{ include: "#types" }, { include: "#directives" }, { include: "#punctuation" }] },
        3: { name: "entity.name.function.ptx" },
      },
    },
    // An instruction is the first word of a statement: after an optional label and an
    // optional guard predicate; a statement starts a line or follows `;`, `{` or a block comment. Its dotted suffixes are modifiers (.global, .v4, .rn)
    // or types (.f32); `ld.global.v4.f32` reads as opcode + three suffixes.
    instruction: {
      match: String.raw`(?:^|(?<=[;{]|\*/))\s*(?:([A-Za-z_$][\w$]*)\s*(:)\s*)?(?:(@)(!)?(%[\w$]+)\s+)?([a-z][a-z0-9_]*)((?:\.[A-Za-z0-9_:]+)*)(?=[\s;]|$)`,
      captures: {
        1: { name: "entity.name.label.ptx" },
        2: { name: "punctuation.separator.label.ptx" },
        3: { name: "keyword.operator.predicate.ptx" },
        4: { name: "keyword.operator.negation.ptx" },
        5: { name: "variable.other.predicate.ptx" },
        6: {
          patterns: [
            { name: "keyword.control.flow.ptx", match: String.raw`\b(?:${CONTROL_FLOW})\b` },
            { name: "keyword.other.opcode.ptx", match: ".+" },
          ],
        },
        7: {
          patterns: [
            { name: "storage.type.ptx", match: String.raw`\.${TYPES}\b` },
            { name: "storage.modifier.ptx", match: String.raw`\.[A-Za-z0-9_:]+` },
          ],
        },
      },
    },
    "label-definition": {
      match: String.raw`^\s*([A-Za-z_$][\w$]*)\s*(:)`,
      captures: {
        1: { name: "entity.name.label.ptx" },
        2: { name: "punctuation.separator.label.ptx" },
      },
    },
    // A guard that does not start the line (after `{` or `;`).
    predicate: {
      match: String.raw`(@)(!)?(%[\w$]+)`,
      captures: {
        1: { name: "keyword.operator.predicate.ptx" },
        2: { name: "keyword.operator.negation.ptx" },
        3: { name: "variable.other.predicate.ptx" },
      },
    },
    "special-registers": {
      name: "variable.language.special-register.ptx",
      match: String.raw`%(?:${SPECIAL_REGISTERS})(?:\.[xyz])?(?![\w$])`,
    },
    // %r1, %rd12, %f<32> (a declared register range), %p1.
    registers: {
      name: "variable.other.register.ptx",
      match: String.raw`%[A-Za-z_$][\w$]*(?:<\d+>)?`,
    },
    types: {
      name: "storage.type.ptx",
      match: String.raw`\.(?:${TYPES}|v2|v4|v8)\b`,
    },
    directives: {
      name: "keyword.control.directive.ptx",
      match: String.raw`\.(?:${DIRECTIVES})\b`,
    },
    numbers: {
      patterns: [
        // 0f3F800000 is 1.0f, 0d3FF0000000000000 is 1.0: IEEE bits written in hex.
        { name: "constant.numeric.float.hex.ptx", match: String.raw`(?<![\w$%.])0[fF][0-9A-Fa-f]{8}\b` },
        { name: "constant.numeric.float.hex.ptx", match: String.raw`(?<![\w$%.])0[dD][0-9A-Fa-f]{16}\b` },
        { name: "constant.numeric.integer.hex.ptx", match: String.raw`(?<![\w$%.])0[xX][0-9A-Fa-f]+U?\b` },
        { name: "constant.numeric.integer.binary.ptx", match: String.raw`(?<![\w$%.])0[bB][01]+U?\b` },
        { name: "constant.numeric.float.decimal.ptx", match: String.raw`(?<![\w$%.])\d+\.\d*(?:[eE][+-]?\d+)?\b` },
        { name: "constant.numeric.integer.decimal.ptx", match: String.raw`(?<![\w$%.])\d+U?\b` },
      ],
    },
    // Branch targets such as `$L__BB0_2` in `bra.uni $L__BB0_2;`.
    "label-reference": {
      name: "entity.name.label.reference.ptx",
      match: String.raw`\$[\w$]+`,
    },
    punctuation: {
      patterns: [
        { name: "punctuation.terminator.statement.ptx", match: ";" },
        { name: "punctuation.separator.comma.ptx", match: "," },
        { name: "punctuation.section.block.ptx", match: "[{}]" },
        { name: "punctuation.section.brackets.ptx", match: String.raw`[\[\]]` },
        { name: "punctuation.section.parens.ptx", match: "[()]" },
        { name: "keyword.operator.arithmetic.ptx", match: String.raw`[+\-*|]` },
      ],
    },
  },
};

const path = new URL("../syntaxes/ptx.tmLanguage.json", import.meta.url);
writeFileSync(path, JSON.stringify(grammar, null, 2) + "\n");
console.log(`wrote ${path.pathname}`);
