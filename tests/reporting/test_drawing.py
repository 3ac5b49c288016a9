"""The DAG drawing's geometry: no edge passes through a box, read off the SVG that is drawn.

The check is independent of the layout code: it parses the ``<rect>`` of every node and the
``d`` of every edge path that :func:`quiltpriv.reporting.drawing.dag_svg` writes, samples each cubic
Bezier densely and tests every piece against every box except the edge's own two ends.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import quiltpriv as qp
from quiltpriv.graph.quilts import markov_quilt
from quiltpriv.model.loading import bundled_models
from quiltpriv.reporting.drawing import BOX_H, dag_svg, layered_layout

_RECT = re.compile(r'<g class="node[^"]*" data-node="([^"]*)"><title>.*?</title>'
                   r'<rect x="([-\d.]+)" y="([-\d.]+)" width="([-\d.]+)" height="([-\d.]+)"')
_EDGE = re.compile(r'<path class="edge" data-from="([^"]*)" data-to="([^"]*)" d="([^"]*)"')
_NUM = re.compile(r"[-\d.]+")


def _boxes(svg: str) -> dict[str, tuple[float, float, float, float]]:
    return {m[1]: (float(m[2]), float(m[3]), float(m[2]) + float(m[4]),
                   float(m[3]) + float(m[5])) for m in _RECT.finditer(svg)}


def _polyline(d: str, samples: int = 80) -> list[tuple[float, float]]:
    """Points along path data made of M, C and L commands (Beziers sampled)."""
    pts: list[tuple[float, float]] = []
    for cmd, args in re.findall(r"([MCL])([^MCL]*)", d):
        xs = [float(v) for v in _NUM.findall(args)]
        if cmd in "ML":
            pts.append((xs[0], xs[1]))
            continue
        p0 = np.array(pts[-1])
        p1, p2, p3 = (np.array(xs[k:k + 2]) for k in (0, 2, 4))
        for t in np.linspace(0, 1, samples)[1:]:
            b = ((1 - t) ** 3 * p0 + 3 * (1 - t) ** 2 * t * p1 + 3 * (1 - t) * t ** 2 * p2
                 + t ** 3 * p3)
            pts.append((float(b[0]), float(b[1])))
    return pts


def _segment_hits_box(a, b, box, pad=0.5) -> bool:
    """Liang-Barsky: does segment ab meet the box shrunk by ``pad``?"""
    x0, y0, x1, y1 = box[0] + pad, box[1] + pad, box[2] - pad, box[3] - pad
    dx, dy = b[0] - a[0], b[1] - a[1]
    lo, hi = 0.0, 1.0
    for p, q in ((-dx, a[0] - x0), (dx, x1 - a[0]), (-dy, a[1] - y0), (dy, y1 - a[1])):
        if p == 0:
            if q < 0:
                return False
        else:
            t = q / p
            if p < 0:
                lo = max(lo, t)
            else:
                hi = min(hi, t)
    return lo <= hi


def crossings(theta, quilt=None) -> list[tuple[str, str, str]]:
    """(parent, child, node) for every edge piece that enters another node's box."""
    svg = dag_svg(theta, quilt)
    boxes = _boxes(svg)
    assert set(boxes) == set(theta.nodes)
    edges = list(_EDGE.finditer(svg))
    assert {(m[1], m[2]) for m in edges} == set(theta.edges)
    found = []
    for m in edges:
        p, c, pts = m[1], m[2], _polyline(m[3])
        for v, box in boxes.items():
            if v in (p, c):
                continue
            if any(_segment_hits_box(a, b, box) for a, b in zip(pts, pts[1:], strict=False)):
                found.append((p, c, v))
    return found


def _random_theta(rng, n, p_edge, long_names=False):
    names = [("attribute_with_a_long_name_" if long_names else "v") + str(k) for k in range(n)]
    edges = [(names[a], names[b]) for a in range(n) for b in range(a + 1, n)
             if rng.random() < p_edge]
    parents = {v: [a for a, b in edges if b == v] for v in names}
    cpds = {v: np.full((2,) + (2,) * len(parents[v]), 0.5) for v in names}
    return qp.theta_from_tables(edges, {v: ["0", "1"] for v in names}, cpds)


def test_the_geometric_check_sees_an_edge_through_a_box():
    # A straight vertical path through a box must be caught (the check can fail).
    box = (10.0, 10.0, 60.0, 40.0)
    assert _segment_hits_box((35.0, 0.0), (35.0, 50.0), box)
    assert not _segment_hits_box((5.0, 0.0), (5.0, 50.0), box)
    assert _polyline("M0,0 C0,10 10,10 10,20")[-1] == (10.0, 20.0)


def test_age_to_income_goes_around_education():
    # The newcomer's case: age -> education -> income and age -> income.
    t = qp.theta_from_tables(
        [("age", "education"), ("education", "income"), ("age", "income")],
        {"age": ["0", "1"], "education": ["0", "1"], "income": ["0", "1"]},
        {"age": [0.5, 0.5], "education": [[0.6, 0.3], [0.4, 0.7]],
         "income": np.full((2, 2, 2), 0.5)})
    lay = layered_layout(t)
    assert dict(lay.layer) == {"age": 0, "education": 1, "income": 2}
    route = lay.routes[("age", "income")]
    assert len(route) == 4  # a vertical run through the education layer
    run_x = route[1][0]
    ed = lay.x["education"], lay.width["education"]
    assert abs(run_x - ed[0]) >= ed[1] / 2 + 1  # beside the box, not through it
    assert crossings(t) == []


@pytest.mark.parametrize("name", sorted(bundled_models()))
def test_bundled_models_have_no_edge_through_a_box(name):
    theta = qp.load_model(name)
    assert crossings(theta) == []
    node = theta.nodes[-1]
    assert crossings(theta, markov_quilt(theta, node, theta.parents[node])) == []


def test_random_dags_have_no_edge_through_a_box():
    rng = np.random.default_rng(19)
    for k in range(25):
        t = _random_theta(rng, int(rng.integers(3, 16)), float(rng.uniform(0.15, 0.5)),
                          long_names=k % 5 == 0)
        assert crossings(t) == [], k
        lay = layered_layout(t)
        assert lay == layered_layout(t)  # deterministic
        for p, c in t.edges:
            route = lay.routes[(p, c)]
            assert len(route) == 2 * (lay.layer[c] - lay.layer[p])
            assert route[0] == (lay.x[p], lay.y[p] + BOX_H / 2)
            assert route[-1] == (lay.x[c], lay.y[c] - BOX_H / 2)
            ys = [y for _, y in route]
            assert ys == sorted(ys)  # every edge goes down


def test_boxes_of_a_layer_keep_apart_and_fit_the_canvas():
    rng = np.random.default_rng(2)
    for _ in range(10):
        t = _random_theta(rng, int(rng.integers(4, 18)), 0.3)
        lay = layered_layout(t)
        rows: dict[int, list[str]] = {}
        for v in t.nodes:
            rows.setdefault(lay.layer[v], []).append(v)
        for row in rows.values():
            row.sort(key=lay.x.__getitem__)
            for a, b in zip(row, row[1:], strict=False):
                assert lay.x[a] + lay.width[a] / 2 < lay.x[b] - lay.width[b] / 2
            for v in row:
                assert 0 <= lay.x[v] - lay.width[v] / 2
                assert lay.x[v] + lay.width[v] / 2 <= lay.canvas[0]


def test_drawing_carries_its_colours_without_a_stylesheet():
    theta = qp.load_model("student")
    svg = dag_svg(theta, markov_quilt(theta, "income", ["gender"]))
    boxes = dict(re.findall(r'data-node="(\w+)"><title>[^<]*</title><rect [^>]*fill="([^"]+)"',
                            svg))
    assert boxes == {"gender": "#5dade2", "income": "#f5b041", "sat": "#f5b041",
                     "height": "#d5d8dc", "weight": "#d5d8dc"}
