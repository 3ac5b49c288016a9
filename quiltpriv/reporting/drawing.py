"""Drawings of a hyperparameter network's DAG: one layered layout for every view.

:func:`layered_layout` places the nodes and routes the edges; :func:`dag_svg` draws them as
inline SVG. The audit report (:mod:`quiltpriv.reporting.report`), Jupyter's ``_repr_html_`` views
and the local explorer (:mod:`quiltpriv.explorer`) all draw with these two functions, so a
network looks the same everywhere. It lives beside :class:`~quiltpriv.model.network.Theta`, below
every layer that draws a network.

The layout is the classic layered (Sugiyama) scheme:

1. **Layers**: longest-path layering along the topological order (a root is in layer 0, any
   other node one below its deepest parent), so every edge points down.
2. **Long edges**: an edge spanning ``k > 1`` layers gets ``k - 1`` dummy points, one per
   layer it passes, and takes a slot in each of those layers like a (narrow) node.
3. **Order**: within each layer, alternating down and up barycentre sweeps (mean position of
   the neighbours in the layer above, then below); the order with the fewest edge crossings
   seen is kept. Ties keep the current order, so the result depends only on the network.
4. **Coordinates**: each layer is placed, in that order and with a minimum gap between
   neighbours, as close as possible (least squares) to the mean x of its neighbours in the
   adjacent layer, alternately downwards and upwards (pool-adjacent-violators solves each
   layer exactly).

An edge leaves its parent's box at the bottom, crosses the empty band between two layers as a
curve, passes each layer it spans vertically through its dummy slot (never through a box),
and enters the child's box at the top. The SVG carries its own colours as presentation
attributes, so it renders the same without any stylesheet (Jupyter, an e-mail, a viewer).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: the drawing reads a quilt's attributes
    from quiltpriv.graph.quilts import Quilt
from quiltpriv.errors import ParameterError
from quiltpriv.model.network import Theta, check_theta
from quiltpriv.utils.validation import check_array, check_instance, check_scalar


def _check_quilt(quilt: Quilt) -> None:
    if not all(hasattr(quilt, a) for a in ("sensitive", "quilt", "nearby", "remote")):
        raise ParameterError(f"quilt must be a quiltpriv Quilt, got {type(quilt).__name__}")

#: Height of a node's box, vertical distance between layers and the least gaps between boxes.
BOX_H = 30.0
LAYER_GAP = 90.0
NODE_GAP = 28.0
#: Least horizontal distance between a long edge's vertical run and a box or another run.
DUMMY_GAP = 12.0
MARGIN = 20.0
MAX_LABEL = 22

#: Fill colour of each role of a node for a Markov quilt (the audit report's colours).
ROLE_FILL = MappingProxyType({"nearby": "#f5b041", "quilt": "#5dade2", "remote": "#d5d8dc",
                              "none": "#ffffff"})
ROLE_LABEL = MappingProxyType({"nearby": "N (nearby)", "quilt": "Q (quilt)",
                               "remote": "R (remote)"})
SENSITIVE_STROKE = "#c0392b"
EDGE_STROKE = "#555"

Point = tuple[float, float]


@dataclass(frozen=True)
class Layout:
    """A layered drawing of the DAG.

    Attributes
    ----------
    x, y : mapping of str to float
        Centre of each node's box.
    width : mapping of str to float
        Width of each node's box (its height is :data:`BOX_H`).
    layer : mapping of str to int
        Longest-path layer of each node (0 for roots).
    canvas : (float, float)
        Width and height of the drawing.
    routes : mapping of (parent, child) to tuple of points
        Each edge's waypoints: the bottom centre of the parent's box, then for every layer the
        edge passes the top and bottom of its vertical run there, then the top centre of the
        child's box. Consecutive waypoints alternate between the empty band between two layers
        (drawn as a curve) and a run inside a layer (a vertical line).
    """

    x: Mapping[str, float]
    y: Mapping[str, float]
    width: Mapping[str, float]
    layer: Mapping[str, int]
    canvas: tuple[float, float]
    routes: Mapping[tuple[str, str], tuple[Point, ...]]


def label(name: str) -> str:
    """The text shown in a node's box: the name, cut with an ellipsis past :data:`MAX_LABEL`."""
    if not isinstance(name, str):
        raise ParameterError(f"a node label must be a string, got {name!r}")
    return name if len(name) <= MAX_LABEL else name[: MAX_LABEL - 1] + "\u2026"


def _text_width(name: str) -> float:
    # Approximate 13px sans-serif advance widths: capitals and digits are wider.
    return 18.0 + sum(9.2 if ch.isupper() or ch.isdigit() else 7.4 for ch in label(name))


def _inversions(seq: list[int]) -> int:
    """Number of pairs ``i < j`` with ``seq[i] > seq[j]`` (merge sort, O(n log n))."""
    if len(seq) < 2:
        return 0
    mid = len(seq) // 2
    left, right = sorted(seq[:mid]), sorted(seq[mid:])
    count = _inversions(seq[:mid]) + _inversions(seq[mid:])
    j = 0
    for a in left:
        while j < len(right) and right[j] < a:
            j += 1
        count += j
    return count


def _crossings(rows: list[list[int]], down: list[list[int]], pos: list[int]) -> int:
    """Edge crossings between consecutive layers for the order ``rows`` (``pos`` = index)."""
    total = 0
    for row in rows[:-1]:
        pairs = sorted((pos[u], pos[w]) for u in row for w in down[u])
        total += _inversions([b for _, b in pairs])
    return total


def _isotonic(target: list[float], gaps: list[float]) -> list[float]:
    """Least-squares ``x`` close to ``target`` with ``x[k+1] - x[k] >= gaps[k]`` (exact).

    Shifting by the cumulative gaps turns the constraints into ``z`` non-decreasing, solved
    by pool-adjacent-violators.
    """
    offset = [0.0]
    for g in gaps:
        offset.append(offset[-1] + g)
    z = [t - o for t, o in zip(target, offset, strict=True)]
    blocks: list[list[float]] = []  # [mean, count]
    for v in z:
        blocks.append([v, 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, c2 = blocks.pop()
            m1, c1 = blocks.pop()
            blocks.append([(m1 * c1 + m2 * c2) / (c1 + c2), c1 + c2])
    out: list[float] = []
    for m, c in blocks:
        out.extend([m] * int(c))
    return [v + o for v, o in zip(out, offset, strict=True)]


def layered_layout(theta: Theta, sweeps: int = 8) -> Layout:
    """Deterministic layered layout of ``theta``'s DAG, with long edges routed around boxes.

    See the module docstring for the method. Every edge points downwards, boxes of one layer
    never overlap, and no edge passes through a box other than its own two ends.
    """
    nodes = check_theta(theta).nodes
    sweeps = int(check_scalar(sweeps, "sweeps", integer=True, min_val=0))
    n = len(nodes)
    layer = _layers(theta)
    depth = max(layer.values()) + 1
    items = _items(theta, layer)
    rows = _ordered_rows(items, depth, sweeps)
    x = _x_positions(items, rows, n, depth, sweeps)
    width = items.width
    m = len(x)
    left = min(x[k] - width[k] / 2 for k in range(m))
    x = [round(v - left + MARGIN, 1) for v in x]
    canvas_w = max(x[k] + width[k] / 2 for k in range(m)) + MARGIN
    routes: dict[tuple[str, str], tuple[Point, ...]] = {}
    h = BOX_H / 2
    for (p, c), chain in items.chains.items():
        pts: list[Point] = [(x[chain[0]], _y_of(layer[p]) + h)]
        for k in chain[1:-1]:
            yd = _y_of(items.layer[k])
            pts += [(x[k], yd - h), (x[k], yd + h)]
        pts.append((x[chain[-1]], _y_of(layer[c]) - h))
        routes[(p, c)] = tuple(pts)
    return Layout(
        x=MappingProxyType({v: x[k] for k, v in enumerate(nodes)}),
        y=MappingProxyType({v: _y_of(layer[v]) for v in nodes}),
        width=MappingProxyType({v: width[k] for k, v in enumerate(nodes)}),
        layer=MappingProxyType(dict(layer)),
        canvas=(round(canvas_w, 1), _y_of(depth - 1) + 30.0),
        routes=MappingProxyType(routes),
    )


def _y_of(d: int) -> float:
    """The vertical centre of layer ``d``."""
    return 30.0 + d * LAYER_GAP


def _layers(theta: Theta) -> dict[str, int]:
    """Each node's layer: one below its lowest parent (roots on layer 0)."""
    layer: dict[str, int] = {}
    for v in theta.nodes:  # topological, so parents come first
        ps = theta.parents[v]
        layer[v] = 1 + max(layer[p] for p in ps) if ps else 0
    return layer


@dataclass(frozen=True)
class _Items:
    """The items laid out: 0..n-1 are the nodes, the rest dummy points of long edges."""

    layer: list[int]
    width: list[float]
    seed: list[float]
    """Initial order key (topological position; a dummy's lies between its edge's ends)."""
    up: list[list[int]]
    down: list[list[int]]
    chains: dict[tuple[str, str], list[int]]
    """Per edge, its items from parent to child."""


def _items(theta: Theta, layer: Mapping[str, int]) -> _Items:
    """The nodes and a dummy item per layer crossed by a long edge, with their links."""
    nodes = theta.nodes
    n = len(nodes)
    item_layer = [layer[v] for v in nodes]
    width = [_text_width(v) for v in nodes]
    seed = [float(k) for k in range(n)]  # initial order key: topological position
    up: list[list[int]] = [[] for _ in range(n)]
    down: list[list[int]] = [[] for _ in range(n)]
    chains: dict[tuple[str, str], list[int]] = {}
    idx = theta.index
    for p, c in theta.edges:
        chain = [idx[p]]
        for d in range(layer[p] + 1, layer[c]):
            item_layer.append(d)
            width.append(0.0)
            # A dummy starts between its ends in the order, nearer the parent.
            seed.append(idx[p] + (idx[c] - idx[p]) * (d - layer[p]) / (layer[c] - layer[p]))
            up.append([])
            down.append([])
            chain.append(len(item_layer) - 1)
        chain.append(idx[c])
        for a, b in zip(chain, chain[1:], strict=False):
            down[a].append(b)
            up[b].append(a)
        chains[(p, c)] = chain
    return _Items(item_layer, width, seed, up, down, chains)


def _ordered_rows(items: _Items, depth: int, sweeps: int) -> list[list[int]]:
    """The items of each layer in order: barycentre sweeps, keeping the fewest crossings."""
    up, down = items.up, items.down
    m = len(items.layer)
    rows: list[list[int]] = [[] for _ in range(depth)]
    for k in sorted(range(m), key=lambda k: (items.seed[k], k)):
        rows[items.layer[k]].append(k)
    pos = [0] * m
    for row in rows:
        for k, v in enumerate(row):
            pos[v] = k

    def reorder(row: list[int], neighbours: list[list[int]]) -> list[int]:
        def bary(v: int) -> tuple[float, int]:
            ns = neighbours[v]
            return (sum(pos[u] for u in ns) / len(ns) if ns else float(pos[v]), pos[v])
        return sorted(row, key=bary)

    best_rows = [list(r) for r in rows]
    best = _crossings(rows, down, pos)
    for s in range(sweeps):
        if best == 0:
            break
        span = range(1, depth) if s % 2 == 0 else range(depth - 2, -1, -1)
        for d in span:
            rows[d] = reorder(rows[d], up if s % 2 == 0 else down)
            for k, v in enumerate(rows[d]):
                pos[v] = k
        c = _crossings(rows, down, pos)
        if c < best:
            best, best_rows = c, [list(r) for r in rows]
    return best_rows


def _x_positions(items: _Items, rows: list[list[int]], n: int, depth: int,
                 sweeps: int) -> list[float]:
    """Horizontal centres: packed left to right, then pulled towards the neighbours' mean
    (isotonic regression keeps the order and the gaps)."""
    width, up, down = items.width, items.up, items.down

    def gap(a: int, b: int) -> float:
        g = NODE_GAP if a < n and b < n else DUMMY_GAP
        return (width[a] + width[b]) / 2 + g

    x = [0.0] * len(width)
    for row in rows:  # packed left to right, to start
        cur = 0.0
        for k, v in enumerate(row):
            if k:
                cur += gap(row[k - 1], v)
            x[v] = cur
    for s in range(2 * sweeps):
        span = range(1, depth) if s % 2 == 0 else range(depth - 2, -1, -1)
        for d in span:
            row = rows[d]
            nb = up if s % 2 == 0 else down
            target = [sum(x[u] for u in nb[v]) / len(nb[v]) if nb[v] else x[v] for v in row]
            gaps = [gap(a, b) for a, b in zip(row, row[1:], strict=False)]
            for v, xv in zip(row, _isotonic(target, gaps), strict=True):
                x[v] = xv
    return x


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def edge_path(points: Sequence[Point], dx: float = 0.0) -> str:
    """SVG path data of one routed edge: curves across the bands, lines through layers."""
    pts = check_array(points, "points")
    if pts.ndim != 2 or pts.shape[1] != 2 or pts.shape[0] < 2:
        raise ParameterError(f"points must be at least two (x, y) pairs, got shape {pts.shape}")
    dx = float(check_scalar(dx, "dx"))
    (x0, y0), *rest = (tuple(map(float, p)) for p in pts)
    out = [f"M{x0 + dx:.1f},{y0:.1f}"]
    prev = (x0, y0)
    for k, (x1, y1) in enumerate(rest):
        if k == len(rest) - 1:
            y1 -= 1.0  # leave room for the arrowhead's tip
        if k % 2 == 0:  # across a band: vertical tangents at both ends
            my = (y1 - prev[1]) / 2
            out.append(f"C{prev[0] + dx:.1f},{prev[1] + my:.1f} {x1 + dx:.1f},{y1 - my:.1f} "
                       f"{x1 + dx:.1f},{y1:.1f}")
        else:  # through a layer, in the dummy's slot
            out.append(f"L{x1 + dx:.1f},{y1:.1f}")
        prev = (x1, y1)
    return " ".join(out)


def roles(theta: Theta, quilt: Quilt | None) -> dict[str, str]:
    """Each node's role for ``quilt``: ``nearby``, ``quilt``, ``remote`` (``none`` without)."""
    theta = check_theta(theta)
    if quilt is not None:
        _check_quilt(quilt)
    role = {v: "none" for v in theta.nodes}
    if quilt is not None:
        role.update({v: "nearby" for v in quilt.nearby})
        role.update({v: "quilt" for v in quilt.quilt})
        role.update({v: "remote" for v in quilt.remote})
    return role


def dag_svg(theta: Theta, quilt: Quilt | None = None, *, svg_id: str = "dag",
            layout: Layout | None = None) -> str:
    """Inline SVG of the DAG; with ``quilt`` its N, Q, R coloured and the sensitive node marked.

    Each node is a ``<g class="node role-...">`` holding one ``<rect>`` and its label; the full
    (escaped) name is in ``data-node`` and a ``<title>`` tooltip. Each edge is a
    ``<path class="edge">`` with ``data-from`` and ``data-to``. Colours are presentation
    attributes, so no stylesheet is needed (a stylesheet may still override them).
    """
    theta = check_theta(theta)
    if layout is not None:
        check_instance(layout, Layout, "layout")
    lay = layout or layered_layout(theta)
    role = roles(theta, quilt)
    legend_h = 34.0 if quilt is not None else 0.0
    w, h = lay.canvas
    w = max(w, 560.0 if quilt is not None else 0.0)
    total_h = h + legend_h
    marker = f"{svg_id}-arrow"
    out = [f'<svg class="dag" id="{_e(svg_id)}" width="{w:.0f}" height="{total_h:.0f}" '
           f'viewBox="0 0 {w:.0f} {total_h:.0f}" role="img" font-family="system-ui,sans-serif" '
           f'font-size="13" aria-label="DAG of the hyperparameter network">',
           f'<defs><marker id="{_e(marker)}" viewBox="0 0 10 10" refX="10" refY="5" '
           'markerWidth="8" markerHeight="8" orient="auto-start-reverse">'
           f'<path d="M0,0 L10,5 L0,10 z" fill="{EDGE_STROKE}"/></marker></defs>']
    dx = (w - lay.canvas[0]) / 2
    for p, c in theta.edges:
        out.append(f'<path class="edge" data-from="{_e(p)}" data-to="{_e(c)}" '
                   f'd="{edge_path(lay.routes[(p, c)], dx)}" fill="none" '
                   f'stroke="{EDGE_STROKE}" stroke-width="1.3" '
                   f'marker-end="url(#{_e(marker)})"><title>{_e(p)} \u2192 {_e(c)}</title>'
                   '</path>')
    for v in theta.nodes:
        sensitive = quilt is not None and v == quilt.sensitive
        cls = f"node role-{role[v]}" + (" sensitive" if sensitive else "")
        stroke = (f'stroke="{SENSITIVE_STROKE}" stroke-width="3.5"' if sensitive
                  else 'stroke="#333" stroke-width="1.2"')
        bw = lay.width[v]
        x, y = lay.x[v] + dx, lay.y[v]
        out.append(f'<g class="{cls}" data-node="{_e(v)}"><title>{_e(v)}'
                   f'{" (sensitive)" if sensitive else ""}</title>'
                   f'<rect x="{x - bw / 2:.1f}" y="{y - BOX_H / 2:.1f}" width="{bw:.1f}" '
                   f'height="{BOX_H:.0f}" rx="9" fill="{ROLE_FILL[role[v]]}" {stroke}/>'
                   f'<text x="{x:.1f}" y="{y + 4.5:.1f}" text-anchor="middle">'
                   f'{_e(label(v))}</text></g>')
    if quilt is not None:
        y0 = h + 6
        x = 12.0
        for r in ("nearby", "quilt", "remote"):
            out.append(f'<g class="legend role-{r}"><rect x="{x:.0f}" y="{y0:.0f}" width="18" '
                       f'height="18" rx="4" fill="{ROLE_FILL[r]}" stroke="#333" '
                       f'stroke-width="1"/><text x="{x + 24:.0f}" y="{y0 + 14:.0f}">'
                       f'{ROLE_LABEL[r]}</text></g>')
            x += 130
        out.append(f'<g class="legend sensitive-key"><rect x="{x:.0f}" y="{y0:.0f}" '
                   f'width="18" height="18" rx="4" fill="#fff" stroke="{SENSITIVE_STROKE}" '
                   f'stroke-width="3.5"/><text x="{x + 24:.0f}" y="{y0 + 14:.0f}">'
                   f'sensitive attribute</text></g>')
    out.append("</svg>")
    return "".join(out)
