"""ptxls.lowering."""
