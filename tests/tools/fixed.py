"""`tests.tools.broken`'s `read_file`, fixed: it returns what the harness can record."""

from tests.tools.broken import read_file

TOOLS = [read_file("fixed")]
