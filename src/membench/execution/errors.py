"""Why a stage could not run its units (light: imported by every command)."""


class ClusterError(RuntimeError):
    """The cluster cannot be used (unreachable, other versions) or lost a unit for good;
    reported as one line, before any output is written."""
