"""Regenerate docs/figures/example1-quilt.svg (the concepts page's figure).

Run ``python docs/make_figures.py``. The drawing is the audit report's own
(quiltpriv.reporting.report),
made standalone with its styles inlined.
"""

from pathlib import Path

import quiltpriv as qp
from quiltpriv.reporting import report

KEEP = (".role", ".node", ".edge", ".legend", "svg", "text")


def example1_svg() -> str:
    theta = qp.load_model("student")
    quilt = qp.markov_quilt(theta, "income", ["gender"])
    svg = report.dag_svg(theta, quilt, svg_id="example1")
    css = "".join(line for line in report._CSS.splitlines() if line.startswith(KEEP))
    head, sep, rest = svg.partition(">")
    if 'xmlns="' not in head:
        head = head.replace("<svg", '<svg xmlns="http://www.w3.org/2000/svg"', 1)
    return f"{head}{sep}<style>{css}</style>{rest}\n"


if __name__ == "__main__":
    out = Path(__file__).with_name("figures") / "example1-quilt.svg"
    out.write_text(example1_svg(), encoding="utf-8")
    print(f"wrote {out}")
