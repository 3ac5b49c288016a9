"""The student example of Zhang, Ohrimenko and Cummings (Example 1, Figure 1).

Five attributes of a school's students, each with a hyperparameter phi (the share of students
with a property):

- ``gender``: share of women, in {0.4, 0.5, 0.6};
- ``income``: share from high-income families (the sensitive attribute), in {0.2, 0.35, 0.5};
- ``sat``: share with an SAT score above 1300, in {0.1, 0.2, 0.3};
- ``height``: share taller than 5'6'', in {0.3, 0.45, 0.6};
- ``weight``: share over 70 kg, in {0.3, 0.5, 0.7}.

Structure (from the spec, consistent with the paper's quilt Q = {gender}, N = {income, sat},
R = {height, weight}): gender -> income, income -> sat, gender -> height, gender -> weight,
height -> weight.

The paper gives no numbers: the CPDs here are ILLUSTRATIVE, chosen so that gender and height
carry a little information about income and SAT a lot. ``theta()`` adds a second, more
pessimistic member in which gender and income are more strongly tied.
"""

from __future__ import annotations

from pgmpy.factors.discrete import TabularCPD
from pgmpy.models import DiscreteBayesianNetwork

STATES = {
    "gender": ["0.4", "0.5", "0.6"],
    "income": ["0.2", "0.35", "0.5"],
    "sat": ["0.1", "0.2", "0.3"],
    "height": ["0.3", "0.45", "0.6"],
    "weight": ["0.3", "0.5", "0.7"],
}
EDGES = [("gender", "income"), ("income", "sat"), ("gender", "height"),
         ("gender", "weight"), ("height", "weight")]


def _network(income_given_gender: list[list[float]], name: str) -> DiscreteBayesianNetwork:
    net = DiscreteBayesianNetwork(EDGES)
    net.name = name
    s = STATES
    net.add_cpds(
        TabularCPD("gender", 3, [[0.3], [0.4], [0.3]], state_names={"gender": s["gender"]}),
        TabularCPD("income", 3, income_given_gender, evidence=["gender"], evidence_card=[3],
                   state_names={"income": s["income"], "gender": s["gender"]}),
        # Columns: income = 0.2, 0.35, 0.5. SAT follows income closely.
        TabularCPD("sat", 3, [[0.60, 0.30, 0.10],
                              [0.30, 0.45, 0.30],
                              [0.10, 0.25, 0.60]], evidence=["income"], evidence_card=[3],
                   state_names={"sat": s["sat"], "income": s["income"]}),
        # Columns: gender = 0.4, 0.5, 0.6 (more women, fewer tall students).
        TabularCPD("height", 3, [[0.25, 0.35, 0.45],
                                 [0.35, 0.35, 0.35],
                                 [0.40, 0.30, 0.20]], evidence=["gender"], evidence_card=[3],
                   state_names={"height": s["height"], "gender": s["gender"]}),
        # Columns: (gender, height) in row-major order of gender then height.
        TabularCPD("weight", 3, [[0.40, 0.30, 0.20, 0.45, 0.35, 0.25, 0.50, 0.40, 0.30],
                                 [0.35, 0.40, 0.40, 0.35, 0.40, 0.40, 0.30, 0.35, 0.40],
                                 [0.25, 0.30, 0.40, 0.20, 0.25, 0.35, 0.20, 0.25, 0.30]],
                   evidence=["gender", "height"], evidence_card=[3, 3],
                   state_names={"weight": s["weight"], "gender": s["gender"],
                                "height": s["height"]}),
    )
    net.check_model()
    return net


def model() -> DiscreteBayesianNetwork:
    """The student network with its illustrative CPDs."""
    return _network([[0.40, 0.35, 0.30],
                     [0.35, 0.35, 0.35],
                     [0.25, 0.30, 0.35]], "student")


def theta() -> list[DiscreteBayesianNetwork]:
    """Theta with two members: :func:`model` and a variant with a stronger gender-income tie."""
    return [model(), _network([[0.50, 0.35, 0.20],
                               [0.30, 0.35, 0.35],
                               [0.20, 0.30, 0.45]], "student-strong-gender-income")]
