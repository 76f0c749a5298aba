"""Recipes for real agent runtimes (openai-agents, LangGraph, pydantic-ai, smolagents): each runtime's
own tool-execution code, unchanged, run through the harness's bridges. One `*_glue.py` module per
runtime (the code docs/recipes/ shows) and one test module asserting what the oracles find. The
tests skip when the runtime is not installed (`pip install -e '.[dev,runtimes]'`, `nox -s runtimes`).
"""
