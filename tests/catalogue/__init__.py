"""A catalogue of realistic buggy schedulers, the scenarios that expose them and the labels the
oracles must report for each (see `cases.CASES`)."""
