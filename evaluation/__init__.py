"""`ptxls eval`: a verified task suite run through the lowering loop, scored and reported."""
