"""Reproducers: a failing run kept as a small data file (`replay`), with the identity of the code it ran
(`code_identity`) so that a replay tells a fix from nondeterminism."""
