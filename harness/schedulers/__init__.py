"""The old home of the scheduling contract, the built-in policies and the bridges (before issue 25's
layout): every name and submodule still imports, with a `DeprecationWarning` naming its new place.

Now: the contract in `harness.scheduling`, the policies and their registry in `harness.policies`, the
bridges in `harness.bridges`, diagnosis in `harness.diagnosis` (see `harness.moved`). Owns nothing.
"""

from harness import moved

moved.install()

__all__ = sorted(moved.MOVED_NAMES[__name__])
__getattr__ = moved.forward(__name__)
