"""The scenario: its model, its file format, and the builder that replays it."""
