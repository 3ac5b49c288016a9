"""quiltpriv's own BIF and XMLBIF readers against pgmpy's readers + theta_from_pgmpy.

The two must give the same Theta bit for bit (nodes and their order, state names, parent axis
order, every float64 of every CPD after validation) on every network pgmpy bundles, on
quiltpriv's own models and on hand-made files that use the corners of the format. Malformed
files must be refused by both, with a one-line ModelError; random edits of a valid file are
either refused by the new reader or read exactly as pgmpy reads them, except where pgmpy
misreads a correct file (listed in quiltpriv/model/readers.py's docstring).

The bundled networks whose pgmpy read takes seconds are marked ``slow`` (deselected by
default; .ci/run runs them with ``-m slow``).
"""

import gzip
import random
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pgmpy
import pytest

from quiltpriv.errors import ModelError, QuiltPrivError
from quiltpriv.model.loading import MAX_STATES, load_model
from quiltpriv.model.readers import read_bif, read_xmlbif

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = Path(pgmpy.__file__).parent / "utils" / "example_models"
BUNDLED = sorted(p.name[: -len(".bif.gz")] for p in EXAMPLES.glob("*.bif.gz"))
#: pgmpy takes over a second to read these (minutes for all of them together).
SLOW = {"andes", "barley", "diabetes", "hailfinder", "hepar2", "link", "mildew", "munin",
        "munin1", "munin2", "munin3", "munin4", "pathfinder", "pigs", "water", "win95pts"}
STUDENT_BIF = (ROOT / "models" / "student.bif").read_text(encoding="utf-8")
TRIED: Counter = Counter()


@pytest.fixture(scope="module", autouse=True)
def _pgmpy_grammar_once():
    """Build pgmpy's BIF grammar once per module rather than once per file.

    ``BIFReader`` builds the same two pyparsing grammars (from constants, about a second) for
    every file it reads; reusing them changes nothing in how a file is parsed and makes the
    comparisons below take milliseconds.
    """
    from pgmpy.readwrite import BIFReader

    built: dict[str, object] = {}
    originals = {name: getattr(BIFReader, name)
                 for name in ("get_variable_grammar", "get_probability_grammar")}

    def once(name):
        def grammar(self):
            if name not in built:
                built[name] = originals[name](self)
            return built[name]
        return grammar

    for name in originals:
        setattr(BIFReader, name, once(name))
    yield
    for name, fn in originals.items():
        setattr(BIFReader, name, fn)


def _same(a, b):
    """Assert two Thetas are the same model, bit for bit."""
    assert a.nodes == b.nodes
    assert dict(a.states) == dict(b.states)
    assert all(type(s) is str for v in a.nodes for s in a.states[v])
    assert dict(a.parents) == dict(b.parents)
    assert a.names == b.names and len(a.members) == len(b.members) == 1
    for v in a.nodes:
        x, y = a.members[0][v].table, b.members[0][v].table
        assert x.dtype == y.dtype == np.float64 and x.shape == y.shape, v
        assert x.flags.c_contiguous and not x.flags.writeable, v
        assert x.tobytes() == y.tobytes(), v
    assert a.fingerprint() == b.fingerprint()


def _both(path):
    """(new reader's Theta, pgmpy path's Theta), asserting they agree."""
    new = load_model(path)
    old = load_model(path, reader="pgmpy")
    _same(new, old)
    return new


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# -- every bundled network -----------------------------------------------------------------------


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in BUNDLED])
def test_bundled_network_reads_as_pgmpy_reads_it(name):
    theta = _both(EXAMPLES / f"{name}.bif.gz")
    text = gzip.open(EXAMPLES / f"{name}.bif.gz", "rt", encoding="utf-8").read()
    assert len(theta.nodes) == text.count("\nvariable ") + text.startswith("variable ")


def test_every_bundled_network_is_tested():
    assert len(BUNDLED) >= 20 and {"asia", "alarm", "munin", "diabetes"} <= set(BUNDLED)
    assert SLOW <= set(BUNDLED)


def test_quiltpriv_models_read_as_pgmpy_reads_them():
    theta = _both(ROOT / "models" / "student.bif")
    # And the same network as the Python module of the same name builds.
    module = load_model("student")
    assert set(theta.nodes) == set(module.nodes) and dict(theta.parents) == dict(module.parents)
    for v in theta.nodes:
        np.testing.assert_allclose(theta.members[0][v].table, module.members[0][v].table,
                                   rtol=0, atol=1e-15)


# -- the corners of the format ------------------------------------------------------------------

TRICKY = """// a comment before the network
/* a block comment
   over lines, with "quotes" and { braces } */
network "tricky net" {
  property version = 1 ;
  property note = "see http://example.org/x" ;
}
variable "Smoker Status" {
  type discrete [ 3 ] { "never smoked", former, "current" };
  property position = (10, 20) ;
}
variable dyspnoea_2.0 {
  type discrete[2]{yes,no};
}
variable x-ray {
  type discrete [ 2 ] { pos, neg } ;
}
variable Age {
  type discrete [ 4 ] { 0-20, 20-40, 40-60, 60+ };
}
probability ( Age ) {
  default 0.25 0.25 0.25 0.25;
}
probability ( "Smoker Status" | age ) {
  (60+) 0.5, 0.3, 0.2;
  (0-20) 9E-1, 5e-2, .05;
  ( 40-60 ) 0.4 0.4 0.2;
  (20-40) +0.6, 0.2, 0.2,;
}
probability ( dyspnoea_2.0 | "Smoker Status", x-ray ) {
  table 0.1 0.2 0.3 0.4 0.5 0.6
        0.9 0.8 0.7 0.6 0.5 0.4 ;
}
probability ( x-ray ) { table 0.3, 0.7; }
"""

OLD_FORM = """network n {
}
variable a {
  type discrete [ 2 ] { x, y };
}
variable b {
  type discrete [ 3 ] { 1, 2, 3 };
}
variable c {
  type discrete [ 2 ] { x, y };
}
probability ( a ) {
  table 0.5, 0.5;
}
probability ( b ) {
  table 0.2, 0.3, 0.5;
}
probability ( c a b ) {
  (y, 3) 0.1, 0.9;
  (x, 1) 0.2, 0.8;
  (x, 2) 0.3, 0.7;
  (x, 3) 0.4, 0.6;
  (y, 1) 0.5, 0.5;
  (y, 2) 0.6, 0.4;
}
"""


def test_tricky_file_reads_as_pgmpy_reads_it(tmp_path):
    theta = _both(_write(tmp_path, "tricky.bif", TRICKY))
    assert theta.states["Smoker Status"] == ("never smoked", "former", "current")
    assert theta.parents["Smoker Status"] == ("Age",)  # "age" in the header, "Age" declared
    assert theta.parents["dyspnoea_2.0"] == ("Smoker Status", "x-ray")
    # A table of a node with parents: the node's state is the slowest axis.
    table = theta.members[0]["dyspnoea_2.0"].table
    assert table.shape == (2, 3, 2)
    np.testing.assert_array_equal(table[0].ravel(), [0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    # Rows in any order land in their parent configuration's column.
    smoker = theta.members[0]["Smoker Status"].table
    np.testing.assert_array_equal(smoker[:, 3], [0.5, 0.3, 0.2])
    np.testing.assert_array_equal(smoker[:, 0], [0.9, 0.05, 0.05])


def test_old_header_form_and_shuffled_rows(tmp_path):
    theta = _both(_write(tmp_path, "old.bif", OLD_FORM))
    assert theta.parents["c"] == ("a", "b")
    table = theta.members[0]["c"].table
    assert table.shape == (2, 2, 3)
    np.testing.assert_array_equal(table[0], [[0.2, 0.3, 0.4], [0.5, 0.6, 0.1]])


def test_renormalised_columns_agree_bit_for_bit(tmp_path):
    # Rounded columns (sums 1 +- 1e-7) are renormalised by theta_from_tables on both paths.
    rng = random.Random(7)
    rows = []
    for a in ("x", "y"):
        for b in ("1", "2", "3"):
            p = [rng.random() for _ in range(9)]
            s = sum(p)
            rows.append(f"  ({a}, {b}) " + ", ".join(f"{v / s:.7f}" for v in p) + ";")
    text = OLD_FORM.replace("""variable c {
  type discrete [ 2 ] { x, y };""", """variable c {
  type discrete [ 9 ] { c0, c1, c2, c3, c4, c5, c6, c7, c8 };""")
    head, _, _ = text.partition("probability ( c a b )")
    text = head + "probability ( c | a, b ) {\n" + "\n".join(rows) + "\n}\n"
    theta = _both(_write(tmp_path, "round.bif", text))
    sums = theta.members[0]["c"].table.sum(axis=0)
    assert np.all(np.abs(sums - 1) < 1e-15)


def test_names_unicode_and_case(tmp_path):
    text = STUDENT_BIF.replace("gender", "géndér_性別").replace("income", "Income")
    text = text.replace("probability ( sat | Income )", "probability ( sat | INCOME )")
    theta = _both(_write(tmp_path, "u.bif", text))
    assert "géndér_性別" in theta.nodes and theta.parents["sat"] == ("Income",)


# -- where pgmpy misreads a correct file, the new reader reads what it says ---------------------


@pytest.mark.parametrize("edit", ["no_final_newline", "one_line", "split_header"])
def test_files_pgmpy_misreads(tmp_path, edit):
    text = {
        "no_final_newline": STUDENT_BIF.rstrip(),
        "one_line": " ".join(STUDENT_BIF.split()),
        "split_header": STUDENT_BIF.replace("( weight | gender, height )",
                                            "( weight |\n  gender,\n  height )"),
    }[edit]
    want = load_model(ROOT / "models" / "student.bif")
    got = load_model(_write(tmp_path, "s.bif", text))
    assert got.nodes == want.nodes and dict(got.parents) == dict(want.parents)
    for v in want.nodes:
        assert got.members[0][v].table.tobytes() == want.members[0][v].table.tobytes()
    with pytest.raises(QuiltPrivError):  # pgmpy misses the last block or garbles the header
        load_model(_write(tmp_path, "s.bif", text), reader="pgmpy")


def test_line_endings_do_not_matter():
    # A .bif.gz file is decoded without newline translation: "\r\n" must read as "\n".
    want = read_bif(STUDENT_BIF, "s.bif")
    for ending in ("\r\n", "\r"):
        _same(read_bif(STUDENT_BIF.replace("\n", ending), "s.bif"), want)


def test_names_that_differ_only_in_case_are_not_guessed(tmp_path):
    text = TRICKY.replace("variable Age {", "variable AGE {\n  type discrete [ 1 ] { all };\n}"
                          "\nprobability ( AGE ) { table 1; }\nvariable Age {")
    with pytest.raises(ModelError, match="'age', which is not a declared variable.*'AGE', "
                                         "'Age'"):
        load_model(_write(tmp_path, "case.bif", text))


# -- malformed files ---------------------------------------------------------------------------

TWO = "network c {\n}\nvariable a { type discrete [ 2 ] { x, y }; }\n" \
      "variable b { type discrete [ 2 ] { x, y }; }\nprobability ( a ) { table 0.5, 0.5; }\n"
MALFORMED = {
    # (file text, what the message must say)
    "unclosed_variable": ("variable a { type discrete [ 2 ] { x, y };\n", "ends inside"),
    "unclosed_block": (TWO + "probability ( b | a ) { (x) 0.5, 0.5; (y) 0.5, 0.5;\n",
                       "ends inside"),
    "stray_brace": (TWO + "}\nprobability ( b ) { table 0.5, 0.5; }\n", "found '}'"),
    "garbage_in_block": (TWO + "probability ( b ) { foo table 0.5, 0.5; }\n",
                         "expected '( parent states )"),
    "missing_row": (TWO + "probability ( b | a ) { (x) 0.5, 0.5; }\n", "has 1 rows, expected"),
    "duplicate_row": (TWO + "probability ( b | a ) { (x) 0.5, 0.5; (x) 0.4, 0.6; }\n",
                      "gives the row (x) twice"),
    "row_too_short": (TWO + "probability ( b | a ) { (x) 0.5, 0.5; (y) 1.0; }\n",
                      "a row has 1 probabilities, expected 2"),
    "row_too_many_states": (TWO + "probability ( b | a ) { (x, y) 0.5, 0.5; (y) 1, 0; }\n",
                            "names 2 parent states, expected 1"),
    "unknown_state": (TWO + "probability ( b | a ) { (x) 0.5, 0.5; (z) 1, 0; }\n",
                      "'z' in the row (z) is not a state of parent 'a'"),
    "table_and_rows": (TWO + "probability ( b | a ) { table 0.5, 0.5, 0.5, 0.5; (x) 1, 0; }\n",
                       "mixes 'table' with rows"),
    "two_tables": (TWO + "probability ( b ) { table 0.5, 0.5; table 0.5, 0.5; }\n",
                   "more than one table"),
    "default_with_parents": (TWO + "probability ( b | a ) { default 0.5, 0.5; }\n",
                             "'default' entries are not supported"),
    "rows_without_parents": (TWO + "probability ( b ) { (x) 0.5, 0.5; }\n", "no parents"),
    "no_probabilities": (TWO + "probability ( b ) { }\n", "gives no probabilities"),
    "empty_table": (TWO + "probability ( b ) { table ; }\n", "gives no probabilities"),
    "double_comma": (TWO + "probability ( b ) { table 0.5,, 0.5; }\n", "empty entry"),
    "leading_comma": (TWO + "probability ( b | a ) { (x) 0.5, 0.5; (y) , 1, 0; }\n",
                      "empty entry in ', 1, 0'"),
    "underscore_number": (TWO + "probability ( b ) { table 0.5, 0_5; }\n",
                          "'0_5' is not a number"),
    "unicode_digit": (TWO + "probability ( b ) { table 0.5, \u0660.5; }\n", "is not a number"),
    "bad_number": (TWO + "probability ( b ) { table 0.5, 1e; }\n", "'1e' is not a number"),
    "word_in_row": (TWO + "probability ( b | a ) { (x) 0.5, 0.5 x; (y) 1, 0; }\n",
                    "'x' is not a number"),
    "infinity": (TWO + "probability ( b ) { table Infinity, 0.5; }\n", "NaN or infinite"),
    "overflow": (TWO + "probability ( b ) { table 1e999, 0.5; }\n", "NaN or infinite"),
    "underflow": (TWO + "probability ( b ) { table 1e-400, 1; }\n",
                  "below float64's normal range"),
    "subnormal": (TWO + "probability ( b ) { table 4e-320, 1; }\n",
                  "below float64's normal range"),
    "negative": (TWO + "probability ( b ) { table -0.5, 1.5; }\n", "negative probabilities"),
    "not_normalised": (TWO + "probability ( b ) { table 0.5, 0.6; }\n", "does not sum to one"),
    "undeclared_node": (TWO + "probability ( zz ) { table 0.5, 0.5; }\n",
                        "a probability block names 'zz'"),
    "undeclared_parent": (TWO + "probability ( b | zz ) { (x) 0.5, 0.5; }\n",
                          "the probability block of 'b' names 'zz'"),
    "repeated_parent": (TWO + "probability ( b | a, a ) { (x, x) 1, 0; }\n",
                        "lists parent 'a' twice"),
    "bar_without_parents": (TWO + "probability ( b | ) { table 0.5, 0.5; }\n",
                            "'|' but no parents"),
    "cycle": (TWO.replace("probability ( a ) { table 0.5, 0.5; }",
                          "probability ( a | b ) { (x) 0.5, 0.5; (y) 0.5, 0.5; }")
              + "probability ( b | a ) { (x) 0.5, 0.5; (y) 0.5, 0.5; }\n",
              "c.bif: the graph has a cycle"),
    "missing_block": (TWO, "no probability block for variable(s) 'b'"),
    "no_type": ("variable a { property x = 1; }\n", "declares no states"),
    "two_types": ("variable a { type discrete [ 1 ] { x }; type discrete [ 1 ] { x }; }\n",
                  "declares its type twice"),
    "not_discrete": ("variable a { type continuous [ 1 ] { x }; }\n", "type 'continuous'"),
    "states_without_commas": ("variable a { type discrete [ 1 ] { x y }; }\n",
                              "without commas"),
    "count_mismatch": ("variable a { type discrete [ 3 ] { x, y }; }\n",
                       "declares 3 states but lists 2"),
    "too_many_states": ("variable a { type discrete [ 10001 ] { x }; }\n",
                        f"at most {MAX_STATES}"),
    "huge_count": ("variable a { type discrete [ " + "9" * 5000 + " ] { x }; }\n",
                   "5000-digit number"),
    "no_states": ("variable a { type discrete [ 0 ] { }; }\n", "declares no states"),
    "name_with_brace_char": ("variable a|b { type discrete [ 1 ] { x }; }\n",
                             "holds '|'"),
    "second_network": ("network a { }\nnetwork b { }\n", "a second 'network' block"),
    "nul": ("network a { }\x00", "NUL character"),
    "astronomic_parents": (
        "".join(f"variable v{k} {{ type discrete [ 10000 ] {{ "
                f"{', '.join(f's{j}' for j in range(10000))} }}; }}\n" for k in range(12))
        + "variable c { type discrete [ 2 ] { x, y }; }\n"
        + "probability ( c | " + ", ".join(f"v{k}" for k in range(12)) + " ) { (s0, s0, s0, "
          "s0, s0, s0, s0, s0, s0, s0, s0, s0) 1, 0; }\n",
        "has 1 rows, expected one per configuration of its parents (about 10^48)"),
    "astronomic_table": (
        "".join(f"variable v{k} {{ type discrete [ 2 ] {{ x, y }}; }}\n" for k in range(20000))
        + "".join(f"probability ( v{k} ) {{ table 0.5, 0.5; }}\n" for k in range(20000))
        + "variable c { type discrete [ 2 ] { x, y }; }\n"
        + "probability ( c | " + ", ".join(f"v{k}" for k in range(20000)) + " ) { table 1; }\n",
        "has 1 probabilities, expected about 10^6021 (2 states x about 10^6021 configurations"),
}


@pytest.mark.parametrize("case", list(MALFORMED), ids=list(MALFORMED))
def test_malformed_bif_is_refused_with_a_clear_message(tmp_path, case):
    text, needle = MALFORMED[case]
    TRIED["malformed"] += 1
    with pytest.raises(ModelError) as info:
        load_model(_write(tmp_path, "c.bif", text))
    msg = str(info.value)
    assert needle in msg and "\n" not in msg, msg
    assert "c.bif" in msg, msg


@pytest.mark.parametrize("case", [c for c in MALFORMED if c not in {
    # pgmpy accepts these (its bugs): garbage, repeated rows and stray braces are skipped or
    # overwritten, 'type' is not checked, a second table is appended to the first.
    "stray_brace", "garbage_in_block", "word_in_row", "duplicate_row", "two_tables",
    "two_types", "not_discrete", "second_network",
    # the pgmpy path cannot build these in reasonable time or memory (the new reader refuses
    # them before allocating anything)
    "astronomic_parents", "astronomic_table", "huge_count",
}])
def test_pgmpy_path_refuses_them_too(tmp_path, case):
    with pytest.raises(QuiltPrivError):
        load_model(_write(tmp_path, "c.bif", MALFORMED[case][0]), reader="pgmpy")


def test_unknown_reader():
    with pytest.raises(ModelError, match="unknown model reader 'fast'"):
        load_model(ROOT / "models" / "student.bif", reader="fast")


# -- random edits ----------------------------------------------------------------------------------

EDIT_CHARS = list('{}();,|" \n\t') + list("ab0123456789.-e")


def _edit(text, rng):
    lines = text.split("\n")
    kind = rng.randrange(6)
    i = rng.randrange(len(text))
    if kind == 0:
        return text[:i] + text[i + 1:]
    if kind == 1:
        return text[:i] + rng.choice(EDIT_CHARS) + text[i:]
    if kind == 2:
        return text[:i] + rng.choice(EDIT_CHARS) + text[i + 1:]
    k = rng.randrange(len(lines))
    if kind == 3:
        del lines[k]
    elif kind == 4:
        lines.insert(k, lines[rng.randrange(len(lines))])
    else:
        j = rng.randrange(len(lines))
        lines[k], lines[j] = lines[j], lines[k]
    return "\n".join(lines)


def _pgmpy_misreads(text):
    """Whether ``text`` has a layout pgmpy's BIFReader misreads (see quiltpriv/model/readers.py).

    pgmpy finds blocks with ``(variable|probability).*?}\\n`` and reads a probability header
    from the block's first line only: a last block without a newline after its "}", a "}"
    followed by more text on its line, or a header whose ")" is on a later line, is lost or
    garbled.
    """
    body = text.rstrip(" \t")
    if not body.endswith("}\n"):
        return True
    lines = body.split("\n")
    if any("}" in line and not line.rstrip().endswith("}") for line in lines):
        return True
    return any("probability" in line and ")" not in line for line in lines)


@pytest.mark.parametrize("seed", range(4))
def test_random_edits_are_refused_or_read_as_pgmpy_reads_them(tmp_path, seed):
    """150 edits of student.bif and of the tricky file per seed.

    The new reader must raise nothing but ModelError; whatever it accepts pgmpy must read to
    the same model, unless the edit made a layout pgmpy's reader misreads
    (:func:`_pgmpy_misreads`).
    """
    rng = random.Random(seed)
    outcomes = Counter()
    for k in range(150):
        text = STUDENT_BIF if k % 2 else TRICKY
        for _ in range(rng.randrange(1, 3)):
            text = _edit(text, rng)
        try:
            new = read_bif(text, "e.bif", name="e.bif")
        except ModelError as exc:
            assert "\n" not in str(exc)
            outcomes["refused"] += 1
            continue
        path = _write(tmp_path, "e.bif", text)
        try:
            old = load_model(path, reader="pgmpy")
        except QuiltPrivError:
            assert _pgmpy_misreads(text), text
            outcomes["pgmpy misreads"] += 1
            continue
        _same(new, old)
        outcomes["same model"] += 1
    TRIED["edits"] += sum(outcomes.values())
    assert outcomes["same model"] >= 10 and outcomes["refused"] >= 50, outcomes


# -- XMLBIF ----------------------------------------------------------------------------------------


def _xmlbif(theta_path, tmp_path):
    from pgmpy.readwrite import BIFReader, XMLBIFWriter

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = Path(theta_path).read_bytes()
        if str(theta_path).endswith(".gz"):
            text = gzip.decompress(text)
        model = BIFReader(string=text.decode("utf-8")).get_model()
        xml = tmp_path / (Path(theta_path).name.split(".")[0] + ".xml")
        XMLBIFWriter(model).write(str(xml))
    return xml


@pytest.mark.parametrize("name", ["asia", "alarm", "insurance", "sachs"])
def test_xmlbif_reads_as_pgmpy_reads_it(tmp_path, name):
    xml = _xmlbif(EXAMPLES / f"{name}.bif.gz", tmp_path)
    theta = _both(xml)
    bif = load_model(EXAMPLES / f"{name}.bif.gz")
    assert set(theta.nodes) == set(bif.nodes)
    for v in bif.nodes:  # same model as the BIF file, up to the parents' axis order
        perm = [0] + [1 + theta.parents[v].index(p) for p in bif.parents[v]]
        np.testing.assert_array_equal(
            np.transpose(theta.members[0][v].table, perm), bif.members[0][v].table)


@pytest.fixture(scope="module")
def student_xml(tmp_path_factory):
    return _xmlbif(ROOT / "models" / "student.bif", tmp_path_factory.mktemp("x")).read_text()


def test_xmlbif_ignores_unknown_elements_and_keeps_texts(tmp_path, student_xml):
    text = student_xml.replace("<NETWORK>", "<NETWORK><COMMENT>made by hand</COMMENT>", 1)
    text = text.replace("</VARIABLE>", "<PROPERTY>a = b = c</PROPERTY></VARIABLE>", 1)
    theta = load_model(_write(tmp_path, "s.xml", text))
    _same(theta, load_model(_write(tmp_path, "s.xml", student_xml)))


DOG_PROBLEM = """<?xml version="1.0" encoding="US-ASCII"?>
<!DOCTYPE BIF [
  <!ELEMENT BIF ( NETWORK )*>
  <!ATTLIST BIF VERSION CDATA #REQUIRED>
  <!ELEMENT NETWORK ( NAME, ( PROPERTY | VARIABLE | DEFINITION )* )>
  <!ELEMENT NAME (#PCDATA)>
  <!ELEMENT VARIABLE ( NAME, ( OUTCOME |  PROPERTY )* ) >
  <!ATTLIST VARIABLE TYPE (nature|decision|utility) "nature">
  <!ELEMENT OUTCOME (#PCDATA)>
  <!ELEMENT DEFINITION ( FOR | GIVEN | TABLE | PROPERTY )* >
  <!ELEMENT FOR (#PCDATA)>
  <!ELEMENT GIVEN (#PCDATA)>
  <!ELEMENT TABLE (#PCDATA)>
  <!ELEMENT PROPERTY (#PCDATA)>
]>
<BIF VERSION="0.3">
<NETWORK>
<NAME>Dog-Problem</NAME>
<VARIABLE TYPE="nature">
  <NAME>light-on</NAME>
  <OUTCOME>true</OUTCOME>
  <OUTCOME>false</OUTCOME>
  <PROPERTY>position = (218, 195)</PROPERTY>
</VARIABLE>
<VARIABLE TYPE="nature">
  <NAME>family-out</NAME>
  <OUTCOME>true</OUTCOME>
  <OUTCOME>false</OUTCOME>
</VARIABLE>
<DEFINITION>
  <FOR>light-on</FOR>
  <GIVEN>family-out</GIVEN>
  <TABLE>0.6 0.4 0.05 0.95 </TABLE>
</DEFINITION>
<DEFINITION>
  <FOR>family-out</FOR>
  <TABLE>0.15 0.85 </TABLE>
</DEFINITION>
</NETWORK>
</BIF>
"""


def test_xmlbif_with_the_formats_dtd_reads_as_pgmpy_reads_it(tmp_path):
    # Cozman's interchange format ships its DTD inline: element declarations are fine.
    theta = _both(_write(tmp_path, "dog.xml", DOG_PROBLEM))
    assert theta.parents["light-on"] == ("family-out",)
    np.testing.assert_array_equal(theta.members[0]["light-on"].table, [[0.6, 0.05],
                                                                       [0.4, 0.95]])


XML_MALFORMED = {
    "entity": ('<?xml version="1.0"?><!DOCTYPE BIF [<!ENTITY e "0.5">]><BIF><NETWORK>'
               "<NAME>x</NAME></NETWORK></BIF>", "declares XML entities"),
    "no_network": ("<BIF><NAME>x</NAME></BIF>", "no <NETWORK>"),
    "no_name": ("<BIF><NETWORK></NETWORK></BIF>", "exactly one NAME"),
    "no_variables": ("<BIF><NETWORK><NAME>x</NAME></NETWORK></BIF>", "declares no variables"),
    "element_in_leaf": ("<BIF><NETWORK><NAME>x<B/></NAME></NETWORK></BIF>",
                        "unexpected element <B> inside <NAME>"),
}


@pytest.mark.parametrize("case", list(XML_MALFORMED), ids=list(XML_MALFORMED))
def test_malformed_xmlbif_is_refused(tmp_path, case):
    text, needle = XML_MALFORMED[case]
    with pytest.raises(ModelError, match=needle):
        load_model(_write(tmp_path, "m.xml", text))


XML_EDITS = {
    "comma_numbers": ("<TABLE>0.3 0.4 0.3 </TABLE>", "<TABLE>0.3, 0.4, 0.3 </TABLE>",
                      "'0.3,' is not a number"),
    "semicolon": ("<TABLE>0.3 0.4 0.3 </TABLE>", "<TABLE>0.3;0.4 0.3 </TABLE>",
                  "is not a number"),
    "two_tables": ("<TABLE>0.3 0.4 0.3 </TABLE>", "<TABLE>0.3 0.4 0.3 </TABLE><TABLE>1 0 0"
                   "</TABLE>", "exactly one TABLE"),
    "unknown_for": ("<FOR>gender</FOR>", "<FOR>zz</FOR>", "'zz', which is not a declared"),
    "unknown_given": ("<GIVEN>gender</GIVEN>", "<GIVEN>zz</GIVEN>", "parent 'zz'"),
    "empty_outcome": ("<OUTCOME>0_4</OUTCOME>", "<OUTCOME></OUTCOME>", "empty OUTCOME"),
    "duplicate_outcome": ("<OUTCOME>0_5</OUTCOME>", "<OUTCOME>0_4</OUTCOME>",
                          "lists a state twice"),
    "tiny": ("<TABLE>0.3 0.4 0.3 </TABLE>", "<TABLE>0.3 0.4 0.3e-330 </TABLE>",
             "below float64's normal range"),
    "nan": ("<TABLE>0.3 0.4 0.3 </TABLE>", "<TABLE>nan 0.4 0.3 </TABLE>", "NaN or infinite"),
    "short": ("<TABLE>0.3 0.4 0.3 </TABLE>", "<TABLE>0.3 0.7 </TABLE>",
              "has 2 probabilities, expected 3"),
}


@pytest.mark.parametrize("case", list(XML_EDITS), ids=list(XML_EDITS))
def test_xmlbif_edits_are_refused(tmp_path, student_xml, case):
    old, new, needle = XML_EDITS[case]
    assert old in student_xml
    with pytest.raises(ModelError, match=needle):
        load_model(_write(tmp_path, "m.xml", student_xml.replace(old, new, 1)))
    TRIED["xml"] += 1


def test_literals_are_read_as_python_reads_them():
    # Every literal goes through numpy's string conversion: it must be float()'s, bit for bit.
    from quiltpriv.model.readers import _numbers, _Source

    rng = random.Random(3)
    literals = []
    for _ in range(3000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randrange(1, 25)))
        point = rng.randrange(len(digits) + 1)
        lit = digits[:point] + "." + digits[point:]
        if rng.random() < 0.5:
            lit += f"e{rng.randrange(-300, 5)}"
        literals.append(lit)
    got = _numbers([", ".join(literals)], _Source("", "x"), 0, "the CPD")
    assert got.tobytes() == np.array([float(x) for x in literals]).tobytes()


def test_read_functions_name_the_member():
    theta = read_bif(STUDENT_BIF, "/some/where/student.bif", name="student.bif")
    assert theta.names == ("student.bif",)
    xml = read_xmlbif("<BIF><NETWORK><NAME>n</NAME><VARIABLE><NAME>a</NAME><OUTCOME>x</OUTCOME>"
                      "<OUTCOME>y</OUTCOME></VARIABLE><DEFINITION><FOR>a</FOR><TABLE>0.25 0.75"
                      "</TABLE></DEFINITION></NETWORK></BIF>", "a.xml")
    assert xml.names == ("a.xml",) and xml.states["a"] == ("x", "y")
    assert xml.members[0]["a"].table.tolist() == [0.25, 0.75]
