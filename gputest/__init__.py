"""ptxls.gputest."""
