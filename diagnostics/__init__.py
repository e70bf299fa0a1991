"""ptxls.diagnostics."""
