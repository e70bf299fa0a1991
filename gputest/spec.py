"""What a GPU test of one kernel is: parameters with their roles, launch configuration, sizes,
reference and tolerance. Plain data that travels to the worker as JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from .dtypes import DTYPES

if TYPE_CHECKING:
    from ptxls.frontend.triton_build import TritonBuild

BLOCK = 256
# 0 and 1; one short of a block and one past it; a size that is no multiple of the block (and
# odd, so a v4/v2 rewrite without a scalar tail shows); a large one, for timing and for
# kernels that only break once several waves of blocks run.
DEFAULT_SIZES = (0, 1, BLOCK - 1, BLOCK + 1, 1000 * 3 + 7, 1 << 24)

# scratch: a workspace buffer (per-block partials, scan tile flags) zero-filled before every
# launch, never compared: one-pass grid-wide kernels need one and must not rely on the output.
ROLES = ("in", "out", "inout", "size", "scalar", "scratch")


@dataclass
class ParamSpec:
    name: str
    role: str  # in | out | inout (pointers) | size (the problem size) | scalar (fixed value)
    dtype: str  # key of DTYPES: element type for pointers, value type for scalars
    length: str = "n"  # pointers: element count as an expression of n and scalars
    value: str | None = None  # scalars: expression of n and other scalars
    # integer inputs: inclusive [lo, hi] of the random values (histogram bytes: [0, 255])
    range: list[int] | None = None

    @property
    def is_pointer(self) -> bool:
        return self.role in ("in", "out", "inout", "scratch")


@dataclass
class LaunchSpec:
    grid: str = f"ceil(n/{BLOCK})"  # expressions of n and scalars; x only, or "x, y[, z]"
    block: str = str(BLOCK)
    shared: str = "0"  # dynamic shared memory in bytes


@dataclass
class TestSpec:
    __test__ = False  # a data class, not a pytest test class

    kernel: str
    params: list[ParamSpec]
    launch: LaunchSpec = field(default_factory=LaunchSpec)
    sizes: list[int] = field(default_factory=lambda: list(DEFAULT_SIZES))
    # numpy reference: "c = a + b" lines (';'-separated), over float64 copies of the inputs;
    # None when the reference is the paired CUDA kernel.
    numpy_ref: str | None = None
    tol: float | None = None  # None: each output's dtype default
    seed: int | None = None  # None: a fresh seed per run (shown in the report)
    timing_runs: int = 20
    origin: list[str] = field(default_factory=list)  # where each part came from, for the report
    # The library's spec.json: the CUDA reference file (relative to the spec) whose nvcc -O3
    # build is the timed baseline, and the benchmark section (sizes, bytes, flops, bound,
    # torch) described in fewshot/README.md.
    reference: str | None = None
    bench: dict | None = None

    def param(self, name: str) -> ParamSpec | None:
        return next((p for p in self.params if p.name == name), None)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> TestSpec:
        d = dict(d)
        d["params"] = [ParamSpec(**p) for p in d["params"]]
        d["launch"] = LaunchSpec(**d.get("launch", {}))
        return cls(**d)


@dataclass(frozen=True)
class SpecProblem:
    """Something wrong with a spec or annotation, pointing at the text that caused it
    (0-based line/columns in the file the spec came from; line -1 when no line applies)."""

    message: str
    line: int = -1
    col: int = 0
    end_col: int = 0
    file: str = ""  # the file the line is in, when it is not the one being tested

    def __str__(self) -> str:
        where = f"{self.file}:" if self.file else ""
        if self.line >= 0:
            return f"{where}{self.line + 1}:{self.col + 1}: {self.message}"
        return f"{where} {self.message}".strip() if where else self.message


@dataclass
class SpecResolution:
    """What one kernel's source resolved to (``spec_source.resolve_spec``): the spec, or the
    problems and why it cannot be tested; what the test compares against where that is a
    source of its own (a paired CUDA, a Triton kernel's build)."""

    spec: TestSpec | None
    problems: list[SpecProblem] = field(default_factory=list)
    reference_source: str | None = None  # the paired CUDA text, when there is one
    reference_path: str | None = None
    build: TritonBuild | None = None  # a Triton kernel's build: the reference its test launches
    # why it cannot be tested: resolve_spec sets it whenever the resolution is not ok ("" when
    # it is); a resolution made elsewhere may leave it to ``unusable``
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.spec is not None and not self.problems

    @property
    def unusable(self) -> str:
        """Why it cannot be tested, in one line ("" when it can): the one wording of it."""
        if self.ok:
            return ""
        if self.reason:
            return self.reason
        detail = "; ".join(str(getattr(p, "message", p)) for p in self.problems[:3])
        return f"no usable test spec from the source ({detail or 'none inferred'})"


def validate(spec: TestSpec) -> list[SpecProblem]:
    """Problems that would make the test meaningless: unknown types, no outputs, size unused."""
    problems = []
    for p in spec.params:
        if p.dtype not in DTYPES:
            problems.append(SpecProblem(f"parameter '{p.name}': unknown type '{p.dtype}'"))
        if p.role == "scalar" and p.value is None:
            problems.append(
                SpecProblem(
                    f"scalar parameter '{p.name}' has no value: annotate it, e.g. "
                    f"'// @gputest {p.name}: {p.dtype} = 2'"
                )
            )
    if not any(p.role in ("out", "inout") for p in spec.params):
        problems.append(
            SpecProblem(
                f"kernel '{spec.kernel}' has no output pointer to check (a non-const pointer "
                "is an output; annotate 'NAME: out TYPE[n]')"
            )
        )
    if len(spec.sizes) == 0:
        problems.append(SpecProblem("no sizes to test"))
    return problems


def spec_from_json(
    text: str, where: str = "spec.json"
) -> tuple[TestSpec | None, list[SpecProblem]]:
    """A spec.json (the library's format, fewshot/README.md) as a TestSpec, or the problems that
    stop it: never raises on a bad file."""
    import json

    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        return None, [SpecProblem(f"{where}: not JSON: {e.msg}", e.lineno - 1, e.colno - 1)]
    if not isinstance(d, dict):
        return None, [SpecProblem(f"{where}: expected a JSON object")]
    known = set(TestSpec.__dataclass_fields__)
    unknown = sorted(set(d) - known)
    if unknown:
        return None, [SpecProblem(f"{where}: unknown field(s) {', '.join(unknown)} "
                                  f"(known: {', '.join(sorted(known))})")]  # fmt: skip
    try:
        params = d.get("params")
        if not isinstance(params, list) or not all(isinstance(p, dict) for p in params):
            raise TypeError("'params' must be a list of objects")
        for p in params:
            bad = sorted(set(p) - set(ParamSpec.__dataclass_fields__))
            if bad:
                raise TypeError(
                    f"parameter {p.get('name', '?')!r}: unknown field(s) {', '.join(bad)}"
                )
            if p.get("role") not in ROLES:
                raise TypeError(
                    f"parameter {p.get('name', '?')!r}: role must be one of {', '.join(ROLES)}"
                )
        spec = TestSpec.from_dict(d)
        # Inside the try: '"sizes": ["x"]' or '"sizes": 5' is a bad file, not a traceback.
        if not isinstance(spec.sizes, list) or not all(
            isinstance(x, int | float) and not isinstance(x, bool) and float(x).is_integer()
            for x in spec.sizes
        ):
            raise TypeError("'sizes' must be a list of whole numbers")
        spec.sizes = [int(x) for x in spec.sizes]
    except (TypeError, KeyError, ValueError, OverflowError) as e:
        return None, [SpecProblem(f"{where}: {e}")]
    return spec, validate(spec)
