"""The analysis core's readers: PTX, CUDA and Triton kernel sources, C types, ptxas -v reports,
SASS listings and sanitizer reports. Plain text in, dataclasses out: no IO, no subprocesses, and
never an exception on bad user text."""
