"""The ``ptxls`` command line: check, usage, test, lower, bench, doctor, demo, serve."""
