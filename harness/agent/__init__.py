"""The agent loop: a scripted model decides each turn's batch from the transcript so far, and a loop
policy (seed 004's `taskloop`, seed 003's `run_agent`, or yours) drives it, handing each batch to the
scheduler under test. A loop scenario's run reports the batches the model emitted as a plain scenario,
so every oracle reads it as it reads any other.

Layers: `spec` (actions, transcript, AgentSpec), `model` (scripted rules, Python models), `runtime`
(what a policy works with: Task, requests, events), `taskloop` and `run_agent` (the policies),
`registry` (names). Nothing here imports `harness.run` or `harness.scenario`: the runner reads a
loop scenario's turns (`harness.run.turns`), and `--loop` is a CLI option (`harness.cli.loop`).
"""

from harness.agent.registry import BUILTIN_LOOPS, get_loop, loop_names
from harness.agent.runtime import EVENTS, LoopPolicy, Outcome, Pause, RunCalls, Task
from harness.agent.spec import Action, ActionKind, AgentSpec, EmittedCall, Message, Transcript

__all__ = ["BUILTIN_LOOPS", "EVENTS", "Action", "ActionKind", "AgentSpec", "EmittedCall", "LoopPolicy", "Message",
           "Outcome", "Pause", "RunCalls", "Task", "Transcript", "get_loop", "loop_names"]
