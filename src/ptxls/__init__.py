"""ptxls: a language server, CLI and toolbox for PTX. Its rooms are the folders at the top of
the repository (docs/architecture.md); src/ptxls/ links them under one importable name."""
