"""The student example of Zhang, Ohrimenko and Cummings (Example 1, Figure 1).

Five attributes of a school's students, each with a hyperparameter phi (the share of students
with a property):

- ``gender``: share of women, in {0.4, 0.5, 0.6};
- ``income``: share from high-income families (the sensitive attribute), in {0.2, 0.35, 0.5};
- ``sat``: share with an SAT score above 1300, in {0.1, 0.2, 0.3};
- ``height``: share taller than 5'6'', in {0.3, 0.45, 0.6};
- ``weight``: share over 70 kg, in {0.3, 0.5, 0.7}.

Structure (consistent with the paper's quilt Q = {gender}, N = {income, sat},
R = {height, weight}): gender -> income, income -> sat, gender -> height, gender -> weight,
height -> weight.

The paper gives no numbers: the CPDs here are ILLUSTRATIVE, chosen so that gender and height
carry a little information about income and SAT a lot. ``theta()`` adds a second, more
pessimistic member in which gender and income are more strongly tied.

The tables are declared with :class:`quiltpriv.NetworkBuilder`, so loading the model does not
import pgmpy; ``network()`` gives the same network as a pgmpy ``DiscreteBayesianNetwork``.
"""

from __future__ import annotations

from typing import Any

from quiltpriv.model.builder import NetworkBuilder
from quiltpriv.model.network import Theta

STATES = {
    "gender": ["0.4", "0.5", "0.6"],
    "income": ["0.2", "0.35", "0.5"],
    "sat": ["0.1", "0.2", "0.3"],
    "height": ["0.3", "0.45", "0.6"],
    "weight": ["0.3", "0.5", "0.7"],
}
EDGES = [("gender", "income"), ("income", "sat"), ("gender", "height"),
         ("gender", "weight"), ("height", "weight")]

#: P(income | gender), one row per gender share: the member of :func:`model` ...
INCOME_GIVEN_GENDER = {"0.4": [0.40, 0.35, 0.25],
                       "0.5": [0.35, 0.35, 0.30],
                       "0.6": [0.30, 0.35, 0.35]}
#: ... and the second member of :func:`theta`, with a stronger gender-income tie.
INCOME_GIVEN_GENDER_STRONG = {"0.4": [0.50, 0.30, 0.20],
                              "0.5": [0.35, 0.35, 0.30],
                              "0.6": [0.20, 0.35, 0.45]}


def _builder(income_given_gender: dict[str, list[float]], name: str) -> NetworkBuilder:
    """The student network with the given P(income | gender); rows are the child's states."""
    b = NetworkBuilder(name)
    for v, states in STATES.items():
        b.attribute(v, states, kind="share")
    b.edges(EDGES)
    b.table("gender", [0.3, 0.4, 0.3])
    b.table("income", income_given_gender)
    # SAT follows income closely.
    b.table("sat", {"0.2": [0.60, 0.30, 0.10],
                    "0.35": [0.30, 0.45, 0.25],
                    "0.5": [0.10, 0.30, 0.60]})
    # More women, fewer tall students.
    b.table("height", {"0.4": [0.25, 0.35, 0.40],
                       "0.5": [0.35, 0.35, 0.30],
                       "0.6": [0.45, 0.35, 0.20]})
    # Keyed by (gender, height).
    b.table("weight", {("0.4", "0.3"): [0.40, 0.35, 0.25],
                       ("0.4", "0.45"): [0.30, 0.40, 0.30],
                       ("0.4", "0.6"): [0.20, 0.40, 0.40],
                       ("0.5", "0.3"): [0.45, 0.35, 0.20],
                       ("0.5", "0.45"): [0.35, 0.40, 0.25],
                       ("0.5", "0.6"): [0.25, 0.40, 0.35],
                       ("0.6", "0.3"): [0.50, 0.30, 0.20],
                       ("0.6", "0.45"): [0.40, 0.35, 0.25],
                       ("0.6", "0.6"): [0.30, 0.40, 0.30]})
    return b


def _member(strong: bool) -> NetworkBuilder:
    if strong:
        return _builder(INCOME_GIVEN_GENDER_STRONG, "student-strong-gender-income")
    return _builder(INCOME_GIVEN_GENDER, "student")


def model() -> Theta:
    """The student network with its illustrative CPDs."""
    # A bundled example: no provenance record, as for a model read from a file.
    return _member(strong=False).to_theta().with_provenance(None)


def theta() -> Theta:
    """Theta with two members: :func:`model` and a variant with a stronger gender-income tie."""
    return model().with_members(_member(strong=True).to_theta())


def network(strong: bool = False) -> Any:
    """A member as a pgmpy ``DiscreteBayesianNetwork`` (imports pgmpy): :func:`model`'s, or
    with ``strong=True`` the second member of :func:`theta`."""
    return _member(strong).to_pgmpy()
