"""World templates: the worlds built most recently, kept to thaw copies from.

Owns `Template` (a built filesystem, pickled, with a copier that hands out independent copies of
it, and what the worlds thawed from it learned about its paths) and `Templates`, the bounded cache
of them by the identity of their `WorldState`: building a world from a state costs ~3x more than
thawing a kept one. It never builds a world from a state (`World.from_state` does, and keeps the
first) and never copies a filesystem object by object itself (`harness.world.copying`).
"""

from __future__ import annotations

import pickle
from collections import OrderedDict

from pyfakefs.fake_filesystem import FakeFilesystem

from harness.world.copying import FilesystemCopier
from harness.world.state import WorldState


class Template:
    """A built filesystem, pickled without its open files (the standard streams, which a thawed
    copy opens again as a new filesystem does), and the world's symlink count."""

    __slots__ = ("blob", "copier", "identities", "symlinks")

    def __init__(self, fs: FakeFilesystem, symlinks: int) -> None:
        open_files, fs.open_files = fs.open_files, []
        try:
            self.blob = pickle.dumps(fs, protocol=pickle.HIGHEST_PROTOCOL)
        finally:
            fs.open_files = open_files
        self.symlinks = symlinks
        #: path -> identity on the pristine tree, filled by the worlds thawed from it (see `World.from_state`).
        self.identities: dict[str, str] = {}
        # A private, never-changed copy to copy object by object (a few times cheaper than
        # unpickling); the pickle stays for what the copier does not know.
        self.copier = FilesystemCopier.of(self._unpickled())

    def thaw(self) -> FakeFilesystem:
        return self.copier.copy() if self.copier is not None else self._unpickled()

    def _unpickled(self) -> FakeFilesystem:
        fs: FakeFilesystem = pickle.loads(self.blob)  # our own bytes, made just above
        fs._add_standard_streams()  # what FakeFilesystem.reset does: fds 0-2, then the world's files
        return fs


class Templates:
    """The templates of the worlds built most recently, by the identity of their state.

    A `WorldState` is immutable (a scenario changed in place is reloaded as a new object, see
    `harness.scenario.library`), and an entry holds its state, so no other state can take its id
    while the entry lives. `MAX` entries and `MAX_BYTES` of pickles at most: a long sweep over many
    scenarios, or over big `from_dir` worlds (up to 16 MB each), stays bounded.
    """

    MAX = 64
    MAX_BYTES = 64 << 20

    def __init__(self) -> None:
        self._entries: OrderedDict[int, tuple[WorldState, Template]] = OrderedDict()
        self._bytes = 0

    def get(self, state: WorldState) -> Template | None:
        entry = self._entries.get(id(state))
        if entry is None or entry[0] is not state:
            return None
        self._entries.move_to_end(id(state))
        return entry[1]

    def keep(self, state: WorldState, fs: FakeFilesystem, symlinks: int) -> Template | None:
        """Keep the built filesystem `fs` of `state` (with `symlinks` symlinks) as its template."""
        try:
            template = Template(fs, symlinks)
        except Exception:  # something pyfakefs cannot pickle: that state is simply built each time
            return None
        if len(template.blob) > self.MAX_BYTES // 4:
            return template  # too big to keep: that world is assembled each time
        replaced = self._entries.pop(id(state), None)
        if replaced is not None:
            self._bytes -= len(replaced[1].blob)
        self._entries[id(state)] = (state, template)
        self._bytes += len(template.blob)
        while len(self._entries) > self.MAX or self._bytes > self.MAX_BYTES:
            self._bytes -= len(self._entries.popitem(last=False)[1][1].blob)
        return template

