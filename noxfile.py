"""Developer sessions: `nox -s tests lint typecheck determinism docs`."""

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def tests(session: nox.Session) -> None:
    session.install("-e", ".[dev]")
    session.run("python", "-m", "pytest", "-q", "-n", "auto", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.5")
    session.run("ruff", "check", "harness", "tests", "benchmarks", "noxfile.py")


@nox.session
def typecheck(session: nox.Session) -> None:
    session.install("-e", ".[dev]")
    session.run("mypy")


@nox.session
def determinism(session: nox.Session) -> None:
    """Same seed, fresh processes, different PYTHONHASHSEED: same fingerprints."""
    session.install("-e", ".[dev]")
    session.run("python", "-m", "pytest", "-q", "tests/determinism", *session.posargs)


@nox.session
def dask(session: nox.Session) -> None:
    """Sweeps, comparisons and explorations on a two-worker Dask LocalCluster give the local results."""
    session.install("-e", ".[dev,dask]")
    session.run("python", "-m", "pytest", "-q", "tests/cluster", "tests/determinism/test_process_counts.py",
                *session.posargs)


@nox.session
def runtimes(session: nox.Session) -> None:
    """The recipes for real runtimes (harness/recipes/, docs/recipes/): openai-agents, LangGraph, pydantic-ai,
    smolagents, AutoGen (autogen-agentchat)."""
    session.install("-e", ".[dev,runtimes]")
    session.run("python", "-m", "pytest", "-q", "tests/runtimes", *session.posargs)


@nox.session
def fuzz(session: nox.Session) -> None:
    """Mutated scenarios, reproducers and transcripts, 10,000 of each, through the loaders and through the
    commands (run, replay, import): clean errors, never a crash (exit 70). HARNESS_FUZZ_COUNTS=FILE in the
    environment (nox passes it on) records each command's exit code."""
    session.install("-e", ".[dev]")
    session.run("python", "-m", "pytest", "-q", "tests/fuzz", *session.posargs,
                env={"HARNESS_FUZZ_EXAMPLES": "10000", "HYPOTHESIS_PROFILE": "dev"})


@nox.session
def browser(session: nox.Session) -> None:
    """The report pages in headless Chromium: images load, no errors logged; screenshots kept in
    reports/browser/. Needs Debian's `chromium` (apt-get install chromium) or HARNESS_CHROMIUM."""
    session.install("-e", ".[dev]", "playwright")
    session.run("python", "-m", "pytest", "-q", "tests/browser", *session.posargs,
                env={"HARNESS_SCREENSHOTS": "reports/browser"})


@nox.session
def docs(session: nox.Session) -> None:
    """The docs site (mkdocs.yml, docs/) built into site/ in strict mode: a broken link, a missing page or
    reference, or any other warning fails the build."""
    session.install("-e", ".[docs]")
    # NO_MKDOCS_2_WARNING: Material 9.7+ prints a banner about its successor on every build; it is no build
    # warning (strict mode ignores it) and says nothing about these pages.
    session.run("mkdocs", "build", "--strict", "--site-dir", "site", *session.posargs,
                env={"NO_MKDOCS_2_WARNING": "1"})
