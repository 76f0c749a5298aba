"""Reading the user's code while it runs, for the reports: where each call was started and awaited
(`origins`), what a frame chain says (`frames`), what a parked bridge thread waits on (`threads`), and
the values a hang diagnosis is made of (`wait`).

The lowest layer that reads user frames: the scheduling contract records origins through it, the
thread bridge reads its threads' waits with it, and the runner's hang reading (`harness.run.hang`)
builds on it. It only reads: it never changes the simulation, never judges (oracles do) and never lays
out text (reports do).
"""
