"""Why a stage could not run its units."""


class ClusterError(ValueError):
    """The cluster Dask's configuration names cannot be used (unreachable, other versions)
    or lost a unit for good. A ValueError like every bad input: the stage reports it as
    one line (membench.commands.common.fails_cleanly) and writes nothing."""
