"""The Jupyter views of quiltpriv's objects: every ``_repr_html_`` body.

``Theta``, ``Quilt``, ``Comparison`` and ``Release`` show themselves in a notebook through a
``_repr_html_`` method of one line that imports its fragment from here when the notebook asks
for it (a *presentation hook*: the model, graph and mechanism layers never import this layer
at module level, and the architecture test allows these hooks and nothing else upwards). Every
fragment is built from :mod:`quiltpriv.utils.format` and the DAG drawing
:mod:`quiltpriv.reporting.drawing`, as the audit report is, so an object reads the same in a
notebook and in a report. Every user-provided string goes through
:func:`~quiltpriv.utils.format.escape`.
"""

from __future__ import annotations

import json
from typing import cast

from quiltpriv.graph.quilts import Quilt
from quiltpriv.mechanisms.apmqm import plan_html
from quiltpriv.mechanisms.apmqm_release import Release
from quiltpriv.mechanisms.compare import Comparison
from quiltpriv.model.network import Theta, check_theta
from quiltpriv.reporting.drawing import dag_svg
from quiltpriv.utils.format import escape, fmt_number, html_set, inline_style, kv_table, query_html
from quiltpriv.utils.validation import check_instance

__all__ = ["comparison_html", "quilt_html", "release_html", "theta_html"]


def theta_html(theta: Theta) -> str:
    """HTML fragment for ``Theta._repr_html_``: summary, DAG drawing and node table."""
    check_theta(theta)

    rows = "".join(
        f"<tr><td><code>{escape(v)}</code></td><td>{len(theta.states[v])}</td>"
        f"<td>{html_set(theta.parents[v])}</td></tr>" for v in theta.nodes)
    return (f"<div class=\"quiltpriv-theta\"><p><b>Theta</b>: {len(theta.nodes)} nodes, "
            f"{len(theta.edges)} edges, {len(theta)} member{'s' if len(theta) != 1 else ''} "
            f"({escape(', '.join(theta.names))})<br>fingerprint <code>"
            f"{escape(theta.fingerprint()[:16])}\u2026</code></p>"
            f"<div style=\"overflow-x:auto\">{inline_style()}"
            f"{dag_svg(theta, svg_id=f'theta-{id(theta):x}')}</div>"
            "<table><thead><tr><th>node</th><th>states</th><th>parents</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>")


def quilt_html(quilt: Quilt) -> str:
    """HTML fragment for ``Quilt._repr_html_``: the partition N, Q, R of one node."""
    check_instance(quilt, Quilt, "quilt")

    kind = " (the trivial quilt: everything nearby)" if quilt.is_trivial else ""
    return (f"<div class=\"quiltpriv-quilt\"><p><b>Markov quilt</b> of <code>"
            f"{escape(quilt.sensitive)}</code>{kind}</p>" + kv_table([
                ("quilt Q", html_set(quilt.quilt)), ("nearby N", html_set(quilt.nearby)),
                ("remote R", html_set(quilt.remote))]) + "</div>")


def comparison_html(comparison: Comparison) -> str:
    """HTML fragment for ``Comparison._repr_html_``: every mechanism's noise side by side."""
    check_instance(comparison, Comparison, "comparison")

    best = comparison.best
    mark = ' class="best"'
    rows = "".join(
        f"<tr{mark if r is best else ''}><td>{escape(r.mechanism)}</td>"
        f"<td>{escape(r.noise or '-')}</td>"
        f"<td>{escape('-' if r.scale is None else fmt_number(r.scale))}</td>"
        f"<td>{escape('-' if r.std is None else fmt_number(r.std))}</td>"
        f"<td>{escape(r.guarantee if r.applicable else 'not applicable')}</td>"
        f"<td>{escape(r.detail)}</td></tr>" for r in comparison.rows)
    least = "" if best is None else (f"; least noise: <b>{escape(best.mechanism)}</b> "
                                     f"(std {escape(fmt_number(cast(float, best.std)))})")
    return (f"<div class=\"quiltpriv-comparison\"><p><b>Mechanisms compared</b>: "
            f"\u03b5 = {escape(f'{comparison.epsilon:g}')}, sensitive "
            f"{escape(', '.join(comparison.sensitive))}{least}<br>query: "
            f"{query_html(comparison.query)}</p>"
            "<table><thead><tr><th>mechanism</th><th>noise</th><th>scale</th><th>std</th>"
            f"<th>guarantee</th><th>detail</th></tr></thead><tbody>{rows}</tbody></table>"
            "</div>")


def release_html(release: Release) -> str:
    """HTML fragment for ``Release._repr_html_``: the release record and its plan."""
    check_instance(release, Release, "release")

    value = list(release.value) if isinstance(release.value, tuple) else release.value
    warn = "" if release.secure or release.scale == 0 else (
        " <b>(seeded: reproducible and NOT secure; experiments only)</b>")
    return (f"<div class=\"quiltpriv-release\"><p><b>Release</b>: value "
            f"<code>{escape(json.dumps(value))}</code>, noise scale "
            f"{escape(fmt_number(release.scale))}, "
            f"sampler {escape(release.sampler)}, secure: {'yes' if release.secure else 'no'}"
            f"{'' if release.seed is None else ', seed ' + escape(release.seed)}{warn}</p>"
            f"{plan_html(release.plan)}</div>")
