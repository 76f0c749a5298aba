"""Where many runs execute: local worker processes (`workers`) and a Dask cluster (`cluster`).

Owns only the placement of work; what a run or a chunk of runs is belongs to `harness.sweep` and
`harness.explore`."""
