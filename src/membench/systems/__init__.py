"""Real memory systems (mem0, ...) driven through their own write path: the interface
(base), the run that scores them and audits their files (run), the stage's summary."""
