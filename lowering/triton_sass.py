"""SASS of a Triton kernel: Triton's PTX (built from the kernel's own source, never running the
file: triton_reference.compile_kernel) carries ``.loc`` into the .py, so diagnostics.sass maps
each SASS instruction to its Python line and its PTX line."""

from __future__ import annotations

from dataclasses import replace

from ptxls.diagnostics.sass import DEFAULT_ARCH, SassOptions, SassReport, sass_for_ptx

from .triton_reference import assembled_arch, compile_kernel, source_name


async def sass_for_triton(
    text: str, kernel: str, options: SassOptions, *, file_path: str | None = None
) -> SassReport:
    """Triton's compile problems (no triton, an unsupported signature) come back as errors."""
    arch = options.arch or DEFAULT_ARCH
    name = source_name(file_path)
    _build, result = await compile_kernel(text, kernel, file_path, arch, options.timeout)
    if not result.ok:
        return SassReport(
            ok=False,
            arch=arch,
            file_name=name,
            ptx_text="",
            errors=[result.message],
            cannot_run=result.no_triton or "did not finish" in result.message,
        )
    ptx = result.ptx  # with its .debug_str section: the .loc lines' function_name labels are there
    ptx_options = replace(
        options,
        arch=assembled_arch(ptx, arch),
        file_name=f"{kernel}.ptx",
        source_text=text,
        source_name=name,
    )
    return await sass_for_ptx(ptx, ptx_options)
