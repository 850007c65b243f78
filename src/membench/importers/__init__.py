"""Importers: public long-term-memory benchmarks (LoCoMo, LongMemEval, Letta's leaderboard)
converted to format-2 scenarios, one module per format, registered in
membench.importers.model.IMPORTERS. Pure conversion; the files are read and written by
membench.io.import_files and the `membench import` command."""
