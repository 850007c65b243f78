"""Where a stage's independent units of work run: in this process, on a private Dask
`LocalCluster`, or on an existing Dask cluster named by Dask's own configuration.

The executor never changes a result: units are pure functions of their inputs, results
are taken in the units' order, and nothing about the executor is a param."""
