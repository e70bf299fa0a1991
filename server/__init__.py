"""ptxls.server."""
