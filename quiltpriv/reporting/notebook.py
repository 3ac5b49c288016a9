"""The Jupyter views of quiltpriv's objects: every ``_repr_html_`` body.

``Theta``, ``Quilt``, ``Influence``, ``Plan``, ``SensitivePlan``, ``Comparison`` and ``Release``
show themselves in a notebook through a ``_repr_html_`` method of one line that imports its
fragment from here when the notebook asks for it (a *presentation hook*: the model, graph,
inference and mechanism layers never import this layer at module level, and the architecture
test allows these hooks and nothing else upwards). Every
fragment is built from :mod:`quiltpriv.utils.format` and the DAG drawing
:mod:`quiltpriv.reporting.drawing`, as the audit report is, so an object reads the same in a
notebook and in a report. Every user-provided string goes through
:func:`~quiltpriv.utils.format.escape`.
"""

from __future__ import annotations

import json
from typing import cast

from quiltpriv.graph.quilts import Quilt
from quiltpriv.inference.result import Influence, fmt_influence
from quiltpriv.mechanisms.apmqm.plan_types import UNVERIFIED_NOTE, Plan, status_word
from quiltpriv.mechanisms.apmqm.sensitive_plan import SensitivePlan, shown_set
from quiltpriv.mechanisms.apmqm_release import Release
from quiltpriv.mechanisms.compare import Comparison
from quiltpriv.model.network import Theta, check_theta
from quiltpriv.reporting.drawing import dag_svg
from quiltpriv.utils.format import (
    badge,
    escape,
    fmt_number,
    html_set,
    inline_style,
    kv_table,
    query_html,
)
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.validation import check_instance

__all__ = ["comparison_html", "influence_html", "plan_html", "quilt_html", "release_html",
           "sensitive_plan_html", "theta_html"]


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
        f"<td>{escape('-' if r.scale is None else fmt_number(r.scale, rounding='up'))}</td>"
        f"<td>{escape('-' if r.std is None else fmt_number(r.std, rounding='up'))}</td>"
        f"<td>{escape(r.guarantee if r.applicable else 'not applicable')}</td>"
        f"<td>{escape(r.detail)}</td></tr>" for r in comparison.rows)
    least = "" if best is None else (f"; least noise: <b>{escape(best.mechanism)}</b> "
                                     f"(std {escape(fmt_number(cast(float, best.std)))})")
    return (f"<div class=\"quiltpriv-comparison\"><p><b>Mechanisms compared</b>: "
            f"\u03b5 = {escape(f'{_fmt(comparison.epsilon)}')}, sensitive "
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
            f"{escape(fmt_number(release.scale, rounding='up'))}, "
            f"sampler {escape(release.sampler)}, secure: {'yes' if release.secure else 'no'}"
            f"{'' if release.seed is None else ', seed ' + escape(release.seed)}{warn}</p>"
            f"{plan_html(release.plan)}</div>")


def influence_html(infl: Influence) -> str:
    """HTML fragment for ``Influence._repr_html_``: the value and what attains it."""
    check_instance(infl, Influence, "infl")
    rows = [("max-influence e(Q | i)", escape(fmt_influence(infl.value))),
            ("sensitive attribute i", f"<code>{escape(infl.sensitive)}</code>"),
            ("quilt Q", html_set(infl.quilt))]
    if infl.member is not None:
        rows.append(("attained under member", f"#{escape(infl.member)} of \u0398"))
    if infl.pair is not None:
        rows.append(("values of \u03c6<sub>i</sub>",
                     f"{escape(infl.pair[0])} vs {escape(infl.pair[1])}"))
    rows.append(("exact", "yes" if infl.bound_via is None else
                 f"NO: an upper bound via the separator {html_set(infl.bound_via)}"))
    rows.append(("arithmetic", escape(infl.arithmetic)))
    if infl.engine is not None:
        rows.append(("engine", escape(infl.engine)))
    return f"<div class=\"quiltpriv-influence\">{kv_table(rows)}</div>"


def _html_shown(names: tuple[str, ...] | None, attrs: tuple[str, ...] | None) -> str:
    """A listed set, or what an unlisted one shows (the plan's text for it, escaped)."""
    if names is not None:
        return html_set(names)
    return escape(shown_set(None, attrs))


def sensitive_plan_html(sp: SensitivePlan) -> str:
    """HTML fragment for ``SensitivePlan._repr_html_``: the quilt chosen for one attribute."""
    check_instance(sp, SensitivePlan, "sp")
    where = ""
    if sp.influence_member is not None and sp.influence_pair is not None:
        a, b = sp.influence_pair
        where = (f" (attained under member {escape(sp.influence_member)}, "
                 f"\u03c6 = {escape(a)} vs {escape(b)})")
    bound = "" if sp.influence_bound_via is None else (
        f" <b>upper bound</b> via the separator {html_set(sp.influence_bound_via)}")
    facts = kv_table([
        ("quilt Q", html_set(sp.quilt)), ("nearby N", _html_shown(sp.nearby,
                                                                     sp.nearby_attributes)),
        ("remote R", _html_shown(sp.remote, None)),
        ("max-influence e(Q | i)", escape(fmt_influence(sp.influence)) + where + bound),
        ("\u0394<sub>A\u2229N</sub> F", escape(_fmt(sp.sensitivity))),
        ("Laplace scale b<sub>i</sub>", escape(_fmt(sp.scale, rounding='up'))),
        ("quilts evaluated", escape(sp.quilts_considered)),
        ("optimal", escape(sp.status.describe())),
    ])
    return (f"<div class=\"quiltpriv-sensitive-plan\"><p><b>Sensitive attribute</b> "
            f"<code>{escape(sp.sensitive)}</code></p>{facts}<p>{escape(sp.explanation)}</p></div>")


def plan_html(plan: Plan) -> str:
    """HTML fragment for ``Plan._repr_html_``: scale, optimality and the per-attribute table."""
    check_instance(plan, Plan, "plan")
    rows = "".join(
        f"<tr><td><code>{escape(sp.sensitive)}</code></td><td>{html_set(sp.quilt)}</td>"
        f"<td>{_html_shown(sp.nearby, sp.nearby_attributes)}</td>"
        f"<td>{_html_shown(sp.remote, None)}</td>"
        f"<td>{escape(fmt_influence(sp.influence))}</td>"
        f"<td>{escape(_fmt(sp.sensitivity))}</td>"
        f"<td>{escape(_fmt(sp.scale, rounding='up'))}</td>"
        f"<td>{escape(status_word(sp))}</td></tr>"
        for sp in plan.sensitive)
    notes = "".join(f"<li>{escape(n)}</li>" for n in plan.notes)
    unverified = "" if plan.verified else (
        "<p>" + badge(False, "", escape(UNVERIFIED_NOTE)) + "</p>")
    return (f"<div class=\"quiltpriv-plan\"><p><b>APMQM plan</b>: \u03b5 = "
            f"{escape(f'{_fmt(plan.epsilon)}')}, Laplace scale b = "
            f"<b>{escape(_fmt(plan.scale, rounding='up'))}</b> "
            f"({'optimal over all quilts' if plan.optimal else 'optimality NOT proven'}); "
            f"|\u0398| = {plan.theta_size}<br>query: {query_html(plan.query)}</p>"
            "<table><thead><tr><th>sensitive</th><th>Q</th><th>N</th><th>R</th>"
            "<th>influence</th><th>\u0394<sub>A\u2229N</sub></th><th>scale</th><th>optimal</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>"
            f"{'<ul>' + notes + '</ul>' if notes else ''}"
            f"{unverified}"
            "</div>")
