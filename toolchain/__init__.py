"""Finding and running the CUDA toolchain: ptxas, nvcc, NVRTC, the GPU probe, killable processes."""
