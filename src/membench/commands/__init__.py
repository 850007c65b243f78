"""CLI commands that are not DVC stages, and what every command shares."""
