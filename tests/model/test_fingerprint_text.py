"""The canonical text the fingerprint hashes, written in linear time, is the document's JSON.

:func:`quiltpriv.model.canonical_text.canonical_text` writes the canonical document without
building it (each distinct table once); it must give the very characters ``json.dumps`` gives
for the document as :meth:`Theta.canonical_document` defined it before (the reference below,
kept word for word), so that every fingerprint, and every plan saved with one, stays valid.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import quiltpriv as qp
from quiltpriv.model.network import FINGERPRINT_FORMAT, _align, theta_from_tables


def reference_document(theta: qp.Theta) -> str:
    """The canonical document as it was built and dumped before (the definition)."""
    order = {v: tuple(sorted(theta.parents[v])) for v in theta.nodes}

    def dumps(x):
        return json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                          allow_nan=False)

    tables = [{v: (_align(m[v], order[v]).table + 0.0).tolist() for v in theta.nodes}
              for m in theta.members]
    keyed = sorted((dumps(t), k) for k, t in enumerate(tables))
    return dumps({
        "format": FINGERPRINT_FORMAT,
        "nodes": {v: {"states": list(theta.states[v]), "parents": list(order[v])}
                  for v in theta.nodes},
        "members": [tables[k] for _, k in keyed],
    })


#: Fingerprints computed by the code before the linear writer (main at 59f4a3a): a plan saved
#: then names its model by these, so they must never change.
KNOWN = {
    "student": "23f775800a0537a07471cf2dc7e1925e4360fde4618b1d2aef38991ec9c86a05",
    "student:theta": "388d9cb3f2b9320aa5fad1324e7e89649a361e3b6fe767c542ece331b5cbe276",
    "chain": "5d9e1aafd8457ef2e494702a5b3042e9082b5b7ac11a4b6c13969268f2c09ab0",
    "example3": "ee9030a2fd16ddcbabcc0d12532b2287b16d6a7679b450dd0a7f1b1c50dd1c3f",
}


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_bundled_models_keep_their_fingerprints(name):
    theta = qp.load_model(name)
    assert theta.canonical_document() == reference_document(theta)
    assert theta.fingerprint() == KNOWN[name]


def test_time_series_builders_keep_their_fingerprints():
    chain = qp.markov_chain(200, [[0.9, 0.1], [0.2, 0.8]], [0.5, 0.5])
    hmm = qp.hidden_markov(100, [[0.9, 0.1], [0.1, 0.9]], [[0.8, 0.2], [0.2, 0.8]],
                           [0.5, 0.5])
    assert chain.fingerprint() == \
        "88d9177e6e90f5ce50d448f2eed9473904a3c9d58fdb94268b77a5fb2143f47f"
    assert hmm.fingerprint() == \
        "95d7c3853d0b67d5d517cf90b2c134c8807b5497f1bb5121200333d1b44ad153"
    for theta in (chain, hmm):
        assert theta.canonical_document() == reference_document(theta)


def _random_theta(seed: int) -> qp.Theta:
    """Random DAG, awkward names (quotes, backslashes, non-ASCII, digits sorting as text),
    parents declared out of sorted order, shared and repeated tables (equal bytes, other
    shapes), -0.0 entries, 1-3 members (some equal)."""
    r = random.Random(seed)
    rng = np.random.default_rng(seed)
    n = r.randint(1, 9)
    pool = ["x10", "x9", "x1", 'q"u', "b\\s", "é", "Z", "ü ", "n\t", "a", "x2", "€"]
    names = r.sample(pool, n)
    states = {v: r.sample(["0", "1", "2.5", "lo", 'h"i', "ñ", "-1"], r.choice([1, 2, 2, 3, 4]))
              for v in names}
    edges = [(names[i], names[j]) for j in range(n) for i in range(j)
             if r.random() < 0.4][:10]
    parents = {v: [a for a, b in edges if b == v] for v in names}
    order = {v: r.sample(ps, len(ps)) for v, ps in parents.items()}  # declared axis order
    shared: dict[tuple[int, ...], np.ndarray] = {}

    def table(v: str) -> np.ndarray:
        shape = (len(states[v]), *(len(states[p]) for p in order[v]))
        if shape in shared and r.random() < 0.5:
            return shared[shape]
        t = rng.dirichlet(np.ones(shape[0]), size=shape[1:]).astype(np.float64)
        t = np.moveaxis(t, -1, 0)
        if shape[0] > 1 and r.random() < 0.3:  # a column (1, 0, ...) with its 0 as -0.0
            t = t.copy()
            col = (slice(None),) + (0,) * (t.ndim - 1)
            t[col] = 0.0
            t[(1,) + (0,) * (t.ndim - 1)] = 1.0
            t.flat[0] = -0.0
        shared[shape] = t
        return t

    members = [{v: table(v) for v in names} for _ in range(r.randint(1, 3))]
    if len(members) > 1 and r.random() < 0.3:
        members.append(dict(members[0]))
    return theta_from_tables(edges, states, members, parents_order=order)


@pytest.mark.parametrize("seed", range(40))
def test_linear_text_is_the_documents_json_on_random_models(seed):
    theta = _random_theta(seed)
    assert theta.canonical_document() == reference_document(theta)


def test_with_provenance_shares_the_parts_and_keeps_the_fingerprint():
    theta = qp.markov_chain(80, [[0.9, 0.1], [0.2, 0.8]], [0.5, 0.5])
    fp = theta.fingerprint()
    other = theta.with_provenance({"source": "test", "rows": [1, 2]})
    assert other.fingerprint() == fp and other.nodes is theta.nodes
    assert other.provenance == {"source": "test", "rows": (1, 2)}
    assert theta.provenance["source"] == "quiltpriv.markov_chain"  # the original's, unchanged
    assert other.with_provenance(None).provenance is None
