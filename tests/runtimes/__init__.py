"""Tests of the recipes for real agent runtimes (openai-agents, LangGraph, pydantic-ai, smolagents,
AutoGen): each runtime's own tool-execution code, unchanged, run through the harness's bridges by the
glue in `harness/recipes/` (the code docs/recipes/ shows), and one test module per runtime asserting
what the oracles find. The tests skip when the runtime is not installed (`pip install -e
'.[dev,runtimes]'`, `nox -s runtimes`); test_recipe_pages.py needs no runtime.
"""
