"""HTML index pages for report directories, rendered with jinja2 (autoescaped).

Owns the page layout. Every link points at a file written into the same directory. It never
computes figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.atomic import write_text

_COMPARISON = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>harness compare</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem; max-width: 70rem; }
table { border-collapse: collapse; margin: 1rem 0; } td, th { border: 1px solid #ccc; padding: .3rem .6rem; }
td.num { text-align: right; } .bad { color: #b00; } img { max-width: 100%; margin: 1rem 0; }
code { background: #f4f4f4; padding: 0 .2rem; }
table.verdicts tr.unsafe td { background: repeating-linear-gradient(135deg, #fde8e8 0 6px, #f8d0d0 6px 12px); }
table.verdicts tr.unsafe td.verdict { color: #a00; font-weight: bold; }
table.verdicts tr.unsafe td.speedup { color: #777; text-decoration: line-through; }
table.verdicts tr.best td.speedup { background: #c8f0c8; font-weight: bold; }
table.verdicts tr.safe td.verdict { color: #060; }
</style></head><body>
<h1>Scheduler comparison</h1>
{% if verdicts %}
<table class="verdicts" id="verdicts"><caption>Verdict: which policies are safe, and how fast (speedup
highlighted among safe policies only)</caption>
<tr>{% if many %}<th>scenario</th>{% endif %}<th>policy</th><th>p50 ms</th><th>p95 ms</th>
<th>speedup vs serial</th><th>runs violating</th><th>verdict</th></tr>
{% for r in verdicts %}<tr class="{{ 'safe' if r.safe else 'unsafe' }}{{ ' best' if r.best else '' }}"
 data-policy="{{ r.scheduler }}">{% if many %}<td>{{ r.scenario }}</td>{% endif %}<td>{{ r.scheduler }}</td>
<td class="num">{{ "%.0f"|format(r.p50_ms) }}</td><td class="num">{{ "%.0f"|format(r.p95_ms) }}</td>
<td class="num speedup">{{ "%.2f"|format(r.speedup) if r.speedup is not none else "-" }}</td>
<td class="num">{{ r.violations_pct }}</td><td class="verdict">{{ r.verdict }}</td></tr>
{% endfor %}</table>
{% endif %}
<p>Command: <code>{{ summary.command }}</code> &middot; {{ summary.runs_per_cell }} runs per cell,
seeds {{ summary.seeds[0] }}&ndash;{{ summary.seeds[1] }} &middot; random exploration (latencies drawn
from the scenarios' distributions).</p>
<p>Data: {% for f in files %}<a href="{{ f }}">{{ f }}</a>{% if not loop.last %} &middot; {% endif %}{% endfor %}</p>
{% for scenario, table in summary.scenarios.items() %}
<h2>{{ scenario }}</h2>
<table><tr><th>scheduler</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th><th>speedup vs serial</th>
<th>ratio to optimal</th><th>violations</th></tr>
{% for scheduler in schedulers if scheduler in table %}{% set s = table[scheduler] %}
<tr><td>{{ scheduler }}</td><td class="num">{{ "%.0f"|format(s.p50_ms) }}</td>
<td class="num">{{ "%.0f"|format(s.p95_ms) }}</td><td class="num">{{ "%.0f"|format(s.p99_ms) }}</td>
<td class="num">{{ "%.2f"|format(s.speedup_vs_serial) if s.speedup_vs_serial is not none else "-" }}</td>
<td class="num">{{ "%.2f"|format(s.ratio_to_optimal) if s.ratio_to_optimal is not none else "-" }}</td>
<td{% if s.violations %} class="bad"{% endif %}>
{%- for label, n in s.violations.items() %}{{ label }}: {{ n }}{% if not loop.last %}, {% endif %}
{%- else %}none{% endfor %}</td></tr>
{% endfor %}</table>
{% endfor %}
<h2>Plots</h2>
{% for image in images %}<p><a href="{{ image }}"><img src="{{ image }}" alt="{{ image }}"></a></p>{% endfor %}
</body></html>
"""

_RUN = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>harness run {{ doc.scenario }}</title>
<style>body { font-family: system-ui, sans-serif; margin: 2rem; max-width: 70rem; } img { max-width: 100%; }
code, pre { background: #f4f4f4; padding: .2rem; } .bad { color: #b00; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; }
.story, .hang { white-space: pre; overflow-x: auto; font-family: monospace; background: #f4f4f4; padding: .5rem;
  margin: .5rem 0; }</style></head><body>
<h1>{{ doc.scenario }} under {{ doc.scheduler }}, seed {{ doc.seed }}</h1>
<p>Reproduce: <code>{{ doc.reproduce }}</code></p>
<p>Makespan {{ doc.makespan_ms }} ms &middot; fingerprint <code>{{ doc.fingerprint[:16] }}</code> &middot;
{% if doc.passed %}every oracle holds{% else %}<span class="bad">violations:
{% for v in doc.verdicts if not v.ok %}{{ v.label }}{% if not loop.last %}, {% endif %}{% endfor %}</span>
{%- endif %}</p>
<p>Files: {% for f in files %}<a href="{{ f }}">{{ f }}</a>{% if not loop.last %} &middot; {% endif %}{% endfor %}
(open <code>trace.perfetto.json</code> in <a href="https://ui.perfetto.dev">ui.perfetto.dev</a>)</p>
{% set failed = doc.verdicts | rejectattr("ok") | list %}
{% if failed %}<h2>What went wrong</h2>
<ul class="why">
{% for v in failed %}{% for x in v.violations %}<li><strong class="bad">{{ x.label }}</strong> ({{ v.oracle }}):
{{ x.explanation | default(x.message) }}</li>
{% endfor %}{% endfor %}</ul>{% endif %}
{% for lines in stories %}<div class="story">{{ lines | join("\n") }}</div>
{% endfor %}{% if hang %}<h2>What the hung batch waited on</h2>
<div class="hang">{{ hang | join("\n") }}</div>{% endif %}
<p><img src="gantt.png" alt="Gantt chart"></p>
<h2>World against the serial reference</h2>
<pre>{{ world_diff or "identical to the serial run" }}</pre>
</body></html>
"""


def _environment() -> Any:
    import jinja2

    return jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)


def write_comparison(path: Path, summary: dict[str, Any], schedulers: Sequence[str], images: Sequence[str],
                     files: Sequence[str], verdicts: Sequence[dict[str, Any]] = ()) -> None:
    """The comparison page: the verdict table (`compare.verdict_table`) first, then per scenario
    the full figures, then the plots."""
    page = _environment().from_string(_COMPARISON).render(
        summary=summary, schedulers=list(schedulers), images=list(images), files=list(files),
        verdicts=list(verdicts), many=len({row["scenario"] for row in verdicts}) > 1)
    write_text(path, page)


def write_run(path: Path, document: dict[str, Any], world_diff: str, files: Sequence[str],
              hang: Sequence[str] = ()) -> None:
    """The run page; `hang` is the hang diagnosis as text lines (harness.report.hang), if the run hung."""
    from harness.report.story import Story, render

    stories = [render(Story.from_json(x["story"])) for v in document["verdicts"] for x in v["violations"]
               if x.get("story")][:2]
    page = _environment().from_string(_RUN).render(doc=document, world_diff=world_diff, files=list(files),
                                                   stories=stories, hang=list(hang))
    write_text(path, page)
