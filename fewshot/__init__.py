"""ptxls.fewshot."""
