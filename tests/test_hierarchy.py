"""Generalization hierarchies of categorical QIs (issue 16 item 1).

A hand-written six-city tree checks the tree order, the lowest common node of a group and
ARX's loss by hand; every validation error of the file; the verifier refusing tampered
nodes; the same bytes for any number of partitions; the CLI flag and the policy table; and
ARX's own Adult hierarchies (skipped where /work/shared/data is absent).
"""

from pathlib import Path

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpriv.anonymity.verify import verify_release
from dpriv.errors import InputError, PolicyError
from dpriv.hierarchy import read_hierarchy
from dpriv.metrics.utility import group_table
from dpriv.policy import ReleasePolicy
from dpriv.release import anonymize
from dpriv.released import LABEL, qig_table
from dpriv.validate import codes

# file order deliberately interleaves the branches: tree order must regroup siblings
CITY = """Metz;Lorraine;France;*
Paris;IDF;France;*
Nancy;Lorraine;France;*
Berlin;Brandenburg;Germany;*
Versailles;IDF;France;*
Potsdam;Brandenburg;Germany;*
"""
CITIES = ["Metz", "Paris", "Nancy", "Berlin", "Versailles", "Potsdam"]


@pytest.fixture
def city_file(tmp_path) -> Path:
    path = tmp_path / "city.csv"
    path.write_text(CITY)
    return path


def _file(tmp_path: Path, text: str, name: str = "h.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def city_view(n: int = 240, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "rid": np.arange(n),
            "age": rng.integers(20, 70, n),
            "city": rng.choice(CITIES, n),
            "s": rng.choice(["a", "b", "c"], n),
        }
    )


def city_policy(path: Path, **kw) -> ReleasePolicy:
    base = dict(id="rid", qi=["age", "city"], sensitive="s", k=4, t=0.6, j=1.0, seed=3)
    return ReleasePolicy(**{**base, **kw, "hierarchies": {"city": str(path)}})


# --------------------------------------------------------------------------------------
# the tree by hand
# --------------------------------------------------------------------------------------
def test_tree_order_puts_siblings_next_to_each_other(city_file):
    h = read_hierarchy(city_file)
    assert h.leaves == ("Metz", "Nancy", "Paris", "Versailles", "Berlin", "Potsdam")
    assert h.height == 4
    assert h.leaves_under("Lorraine") == ("Metz", "Nancy")
    assert h.leaves_under("France") == ("Metz", "Nancy", "Paris", "Versailles")
    assert h.leaves_under("*") == h.leaves


def test_lowest_common_node_of_hand_made_groups(city_file):
    pol = city_policy(city_file, domains={"city": list(read_hierarchy(city_file).leaves)})
    groups = {
        1: ["Metz", "Nancy", "Metz"],  # Lorraine
        2: ["Paris", "Versailles"],  # IDF
        3: ["Metz", "Versailles"],  # France (Lorraine and IDF)
        4: ["Nancy", "Potsdam"],  # * (two countries)
        5: ["Berlin", "Berlin"],  # the leaf itself
        6: ["Paris", "Nancy", "Versailles"],  # France: first and last leaf are Nancy, Versailles
    }
    rows = pd.DataFrame(
        [(g, 30, c) for g, cs in groups.items() for c in cs], columns=[LABEL, "age", "city"]
    ).astype({LABEL: "int64"})
    table = qig_table(rows, pol)
    assert table["city"].to_dict() == {1: "Lorraine", 2: "IDF", 3: "France", 4: "*", 5: "Berlin", 6: "France"}


def test_arx_loss_of_each_node_by_hand(city_file):
    h = read_hierarchy(city_file)
    # (leaves under the node - 1) / (6 leaves - 1)
    assert [h.loss(n) for n in ("Metz", "Lorraine", "France", "Germany", "*")] == [0.0, 0.2, 0.6, 0.2, 1.0]
    released = pd.DataFrame(
        {
            "qi_group": [1, 1, 2, 2, 3, 3, 4, 4],
            "age_min": [20, 20, 30, 30, 20, 20, 40, 40],
            "age_max": [30, 30, 30, 30, 70, 70, 45, 45],
            "city": ["Lorraine", "Lorraine", "France", "France", "*", "*", "Potsdam", "Potsdam"],
        }
    )
    g = group_table(released, {"age": (20, 70)}, {"city": list(h.leaves)}, hierarchies={"city": h})
    assert g["ncp__city"].to_dict() == pytest.approx({1: 0.2, 2: 0.6, 3: 1.0, 4: 0.0})
    # with age: 10/50 + 0.2, 0 + 0.6, 1 + 1, 5/50 + 0
    assert g["ncp"].to_dict() == pytest.approx({1: 0.4, 2: 0.6, 3: 2.0, 4: 0.1})


def test_the_qi_levels_and_hilbert_codes_follow_the_tree(city_file):
    from dpriv.input_checks import resolve_policy

    pol, notes = resolve_policy(city_view(), city_policy(city_file))
    assert f"levels of 'city' from its hierarchy {city_file}: 6 leaves in tree order" in notes
    assert pol.domains["city"] == ["Metz", "Nancy", "Paris", "Versailles", "Berlin", "Potsdam"]
    # Metz/Nancy and Paris/Versailles are adjacent codes; without the hierarchy (sorted
    # levels: Berlin, Metz, Nancy, Paris, Potsdam, Versailles) Paris and Versailles are not
    c = codes(pd.Series(["Metz", "Nancy", "Paris", "Versailles"]), pol.domains["city"])
    assert list(c) == [0, 1, 2, 3]
    plain, _ = resolve_policy(city_view(), city_policy(city_file).with_overrides(hierarchies={}))
    c = codes(pd.Series(["Paris", "Versailles"]), plain.domains["city"])
    assert abs(int(c[1] - c[0])) == 2


# --------------------------------------------------------------------------------------
# validation of the file and of the data against it
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, patterns",
    [
        ("Metz;Lorraine;*\nParis;*\n", ["row 2", "2 columns but row 1 has 3", "same depth"]),
        ("Metz;Lorraine;*\nNancy;Lorraine;*\nMetz;IDF;*\n", ["'Metz'", "rows 1 and 3", "one parent"]),
        (
            "Metz;Lorraine;France;*\nNancy;Lorraine;Germany;*\n",
            ["node 'Lorraine'", "two parents", "'France'", "'Germany'"],
        ),
        ("Metz;France\nBerlin;Germany\n", ["2 roots", "add a last column '\\*'"]),
        ("Metz;Metz;*\nNancy;Metz;*\n", ["'Metz' names two different nodes", "rename"]),
        ("Metz;;*\n", ["row 1 has an empty cell in column 2"]),
        ("Metz,Lorraine,*\n", ["one column", "';'-separated"]),
        ("\n\n", ["empty"]),
    ],
    ids=[
        "depth",
        "leaf-two-parents",
        "node-two-parents",
        "two-roots",
        "name-two-nodes",
        "empty-cell",
        "commas",
        "empty",
    ],
)
def test_invalid_hierarchy_files_are_refused(tmp_path, text, patterns):
    import re

    path = _file(tmp_path, text)
    with pytest.raises(InputError) as err:
        read_hierarchy(path)
    msg = str(err.value)
    assert str(path) in msg and "nothing was written" in msg
    for pat in patterns:
        assert re.search(pat, msg), (pat, msg)


def test_a_chain_repeating_a_name_is_one_node(tmp_path):
    h = read_hierarchy(_file(tmp_path, "Private;Private;*\nState;Gov;*\nLocal;Gov;*\n"))
    assert h.leaves == ("Private", "State", "Local")
    assert h.leaves_under("Private") == ("Private",) and h.loss("Gov") == 0.5


def test_missing_file_and_non_qi_and_numeric_kind_are_refused(tmp_path, city_file):
    with pytest.raises(InputError, match="does not exist"):
        read_hierarchy(tmp_path / "nope.csv")
    with pytest.raises(PolicyError, match=r"\[hierarchies\] names 'zip', which is not a QI"):
        ReleasePolicy.from_dict(dict(qi=["city"], sensitive="s", hierarchies={"zip": str(city_file)}))
    with pytest.raises(PolicyError, match="declared numeric"):
        ReleasePolicy.from_dict(
            dict(qi=["city"], sensitive="s", kinds={"city": "numeric"}, hierarchies={"city": str(city_file)})
        )


def test_a_value_missing_from_the_hierarchy_is_named(city_file):
    view = city_view()
    view.loc[7, "city"] = "Lyon"
    with pytest.raises(InputError) as err:
        anonymize(view, city_policy(city_file))
    msg = str(err.value)
    assert "'Lyon'" in msg and "add a row for each" in msg and str(city_file) in msg


def test_a_declared_domain_other_than_the_leaves_is_refused(city_file):
    pol = city_policy(city_file, domains={"city": sorted(CITIES)})
    with pytest.raises(PolicyError, match="differs from the leaves of its hierarchy"):
        anonymize(city_view(), pol)


def test_integer_codes_with_a_hierarchy(tmp_path):
    path = _file(tmp_path, "1;low;*\n2;low;*\n3;high;*\n4;high;*\n")
    rng = np.random.default_rng(1)
    view = pd.DataFrame(
        {"rid": range(120), "grade": rng.integers(1, 5, 120), "s": rng.choice(["a", "b"], 120)}
    )
    pol = ReleasePolicy(
        id="rid", qi=["grade"], sensitive="s", k=5, t=0.9, j=2.0, hierarchies={"grade": str(path)}
    )
    out = anonymize(view, pol)
    assert out.policy.domains["grade"] == [1, 2, 3, 4]
    assert set(out.released["grade"]) <= {"1", "2", "3", "4", "low", "high", "*"}


# --------------------------------------------------------------------------------------
# a release with a hierarchy: covered members, the verifier, same bytes
# --------------------------------------------------------------------------------------
def _covers(released: pd.DataFrame, assigned: pd.DataFrame, h) -> None:
    """Independent oracle: every member's value is a leaf under its group's node, and no
    child of that node holds all of them (a plain walk over the file's rows)."""
    node = released.drop_duplicates("qi_group").set_index("qi_group")["city"]
    for label, g in assigned.groupby(LABEL):
        under = set(h.leaves_under(node[label]))
        values = set(g["city"])
        assert values <= under, (label, node[label], values)
        children = {n for n in h.names if set(h.leaves_under(n)) < under}
        assert not any(values <= set(h.leaves_under(c)) for c in children), (label, node[label])


def test_release_covers_members_and_uses_the_hierarchy_loss(city_file):
    out = anonymize(city_view(), city_policy(city_file))
    h = read_hierarchy(city_file)
    assert out.metrics["ok"] and set(out.released["city"]) <= set(h.names)
    assert not out.released["city"].str.startswith("{").any()
    _covers(out.released, out.assigned, h)
    # the reported semiperimeter is the mean over groups of age width + ARX loss of the node
    g = out.released.drop_duplicates("qi_group")
    expected = ((g["age_max"] - g["age_min"]) / (69 - 20) + g["city"].map(h.loss)).mean()
    assert out.metrics["average_semiperimeter"] == pytest.approx(expected)


def _tampered(out, h, change):
    rel = out.released.copy()
    nodes = rel.drop_duplicates("qi_group").set_index("qi_group")["city"]
    label, new = change(nodes, h)
    rel.loc[rel["qi_group"] == label, "city"] = new
    from dpriv.validate import validate_view

    counts = validate_view(city_view(), out.policy).s_counts
    return verify_release(rel, out.policy, view_counts=counts, assigned=out.assigned)


def test_the_verifier_rejects_a_tampered_node(city_file):
    out = anonymize(city_view(), city_policy(city_file))
    h = read_hierarchy(city_file)
    leaf_groups = [(g, n) for g, n in _nodes(out).items() if n in h.leaves]
    assert leaf_groups, "the view should give some single-city groups"

    def sibling(nodes, h):  # a single-city group shown as another city: members outside
        g, n = leaf_groups[0]
        other = [c for c in h.leaves if c != n][0]
        return g, other

    def parent(nodes, h):  # a single-city group shown as its country: true but not lowest
        g, n = leaf_groups[0]
        return g, "France" if n in h.leaves_under("France") else "Germany"

    def alien(nodes, h):
        return nodes.index[0], "Atlantis"

    rep = _tampered(out, h, sibling)
    assert not rep.ok and any("outside their group's hierarchy node" in p for p in rep.problems)
    rep = _tampered(out, h, parent)
    assert not rep.ok and any("not the lowest common node" in p for p in rep.problems)
    rep = _tampered(out, h, alien)
    assert not rep.ok and any("'Atlantis'" in p and "not nodes of its hierarchy" in p for p in rep.problems)

    def previous(nodes, h):  # shown as the leaf just before its city in tree order: one past its end
        leaves = list(h.leaves)
        g, n = next((g, n) for g, n in leaf_groups if leaves.index(n) > 0)
        return g, leaves[leaves.index(n) - 1]

    rep = _tampered(out, h, previous)
    assert not rep.ok and any("outside their group's hierarchy node" in p for p in rep.problems)


def _nodes(out) -> pd.Series:
    return out.released.drop_duplicates("qi_group").set_index("qi_group")["city"]


@pytest.mark.slow
def test_same_bytes_for_any_number_of_partitions(city_file):
    view, pol = city_view(n=400, seed=5), city_policy(city_file)
    one = anonymize(view, pol, npartitions=1).released
    assert set(one["city"]) & {"Lorraine", "IDF", "Brandenburg", "France", "Germany", "*"}
    for n in (3, 5):
        other = anonymize(view, pol, npartitions=n).released
        assert one.to_csv(index=False).encode() == other.to_csv(index=False).encode()
    lazy = anonymize(dd.from_pandas(view, npartitions=4), pol, npartitions=4).released
    assert one.to_csv(index=False) == lazy.to_csv(index=False)


# --------------------------------------------------------------------------------------
# policy file and CLI
# --------------------------------------------------------------------------------------
def test_policy_table_paths_are_relative_to_the_policy_file(tmp_path, city_file):
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "city.csv").write_text(CITY)
    pfile = _file(
        tmp_path,
        '[columns]\nid = "rid"\nqi = ["age", "city"]\nsensitive = "s"\n[hierarchies]\ncity = "h/city.csv"\n',
        "policy.toml",
    )
    pol = ReleasePolicy.from_toml(pfile)
    assert pol.kind("city") == "categorical"
    assert pol.hierarchy("city").leaves[:2] == ("Metz", "Nancy")
    assert pol.hierarchy_path("city") == tmp_path / "h" / "city.csv"


@pytest.mark.slow
def test_cli_hierarchy_flag(tmp_path, city_file, cli):
    data = tmp_path / "v.csv"
    city_view().to_csv(data, index=False)
    out = tmp_path / "r.csv"
    args = ["anonymize", data, "--out", out, "--id", "rid", "--qi", "age,city", "--sensitive", "s"]
    args += ["--k", "4", "--t", "0.6", "--j", "1"]
    res = cli(*args, "--hierarchy", f"city={city_file}")
    assert res.exit_code == 0, res.output
    released = pd.read_csv(out)
    assert set(released["city"]) <= set(read_hierarchy(city_file).names)

    bad = _file(tmp_path, "Metz;Lorraine;*\nParis;*\n", "bad.csv")
    out2 = tmp_path / "r2.csv"
    args[3] = out2
    for flag, pattern in [
        (f"city={bad}", "row 2 .* has 2 columns"),
        ("city", "write COL=PATH"),
        (f"zip={city_file}", "'zip', which is not a QI"),
        (f"city={tmp_path / 'nope.csv'}", "does not exist"),
    ]:
        res = cli(*args, "--hierarchy", flag)
        assert res.exit_code == 2, res.output
        assert "Traceback" not in res.output
        assert __import__("re").search(pattern, " ".join(res.output.split())), (pattern, res.output)
        assert not out2.exists()
    view = city_view()
    view.loc[3, "city"] = "Lyon"
    view.to_csv(data, index=False)
    res = cli(*args, "--hierarchy", f"city={city_file}")
    assert res.exit_code == 2 and "'Lyon'" in res.output and not out2.exists()


# --------------------------------------------------------------------------------------
# ARX's Adult hierarchies
# --------------------------------------------------------------------------------------
ADULT_QI = ["age", "sex", "race", "marital-status", "education"]


def _adult(shared_data: Path, name: str):
    arx = shared_data / "arx"
    if not (arx / name).is_file() or not (arx / "adult_hierarchy_education.csv").is_file():
        pytest.skip(f"ARX's Adult data and hierarchies are absent from {arx}")
    view = pd.read_csv(arx / name, sep=";")
    view.insert(0, "rid", np.arange(len(view)))
    hier = {q: str(arx / f"adult_hierarchy_{q}.csv") for q in ADULT_QI[1:]}
    pol = ReleasePolicy(id="rid", qi=ADULT_QI, sensitive="salary-class", k=5, t=0.2, j=2.0, hierarchies=hier)
    return view[["rid", *ADULT_QI, "salary-class"]], pol


def _check_adult(out, pol):
    assert out.metrics["ok"] and out.metrics["k_achieved"] >= 5
    first = out.released.drop_duplicates("qi_group").set_index("qi_group")
    for q in ADULT_QI[1:]:
        h = pol.hierarchy(q)
        node = first[q].reindex(out.assigned[LABEL].to_numpy()).to_numpy()
        under = [str(v) in set(h.leaves_under(n)) for v, n in zip(out.assigned[q], node)]
        assert all(under), q


def test_adult_subset_with_arx_hierarchies(shared_data):
    view, pol = _adult(shared_data, "adult_subset.csv")
    out = anonymize(view, pol)
    _check_adult(out, pol)
    edu = pol.hierarchy("education")
    assert set(out.released["education"]) <= set(edu.names)
    assert out.released["education"].isin(["Undergraduate", "High School", "Higher education"]).any()


@pytest.mark.slow
@pytest.mark.heavy
def test_adult_with_arx_hierarchies(shared_data):
    view, pol = _adult(shared_data, "adult.csv")
    out = anonymize(view, pol)
    _check_adult(out, pol)
    assert out.metrics["n_suppressed"] == 0 and out.metrics["t_achieved"] <= 0.2


# --------------------------------------------------------------------------------------
# a history: the ledger pins the hierarchy; same bytes for any number of partitions
# --------------------------------------------------------------------------------------
def _age_hierarchy(path: Path) -> Path:
    rows = [f"{a};{a - a % 5}-{a - a % 5 + 4};{a - a % 10}s;*" for a in range(45, 75)]
    path.write_text("\n".join(rows[::-1]) + "\n")  # reversed file: tree order is by first appearance
    return path


@pytest.fixture(scope="module")
def history_setting(tmp_path_factory):
    from dpriv.datasets import medical_history, write_history

    out = tmp_path_factory.mktemp("hist")
    mh = medical_history(n_views=2, view_size=300, seed=2)
    pol = ReleasePolicy.from_toml(write_history(out, mh), t=0.5, j=0.8, max_suppression=1.0)
    domains = {q: v for q, v in pol.domains.items() if q != "age"}
    pol = pol.with_overrides(domains=domains, hierarchies={"age": str(_age_hierarchy(out / "age.csv"))})
    return mh, ReleasePolicy.from_dict({**pol.model_dump(), "domains": domains})


@pytest.mark.slow
def test_history_with_a_hierarchy_same_bytes_and_pinned(history_setting, tmp_path):
    import hashlib
    import json

    from dpriv.errors import LedgerError
    from dpriv.release import release_history

    mh, pol = history_setting
    one = release_history(mh.history, pol, tmp_path / "one", npartitions=1)
    release_history(mh.history, pol, tmp_path / "three", npartitions=3)
    h = pol.hierarchy("age")
    assert h.leaves[:3] == ("74", "73", "72")  # tree order follows the file's first appearances
    for i in (1, 2):
        a = (tmp_path / "one" / "releases" / str(i) / "view.parquet").read_bytes()
        assert a == (tmp_path / "three" / "releases" / str(i) / "view.parquet").read_bytes()
        view = one.read_view(i)
        assert "age_min" not in view.columns and set(view["age"].astype(str)) <= set(h.names)
        assert one.read_metrics(i)["ok"]
    stored = json.loads((tmp_path / "one" / "policy.json").read_text())
    path = Path(pol.hierarchies["age"])
    assert stored["hierarchy_sha256"] == {"age": hashlib.sha256(path.read_bytes()).hexdigest()}
    assert stored["domains"]["age"] == list(range(74, 44, -1))  # integer leaves, in tree order
    # a hierarchy edited in place (same leaves, other bands) is refused for this ledger
    copy = tmp_path / "age.csv"
    copy.write_text(path.read_text().replace("70-74;70s", "70-74;60s"))
    with pytest.raises(LedgerError, match="hierarchy_sha256"):
        release_history(mh.history, pol.with_overrides(hierarchies={"age": str(copy)}), tmp_path / "one")


# --------------------------------------------------------------------------------------
# Mondrian cuts along the hierarchy
# --------------------------------------------------------------------------------------
def test_child_starts_by_hand(city_file):
    h = read_hierarchy(city_file)
    # tree order Metz Nancy | Paris Versailles || Berlin Potsdam
    assert h.child_starts(h.node_index["*"]).tolist() == [4]
    assert h.child_starts(h.node_index["France"]).tolist() == [2]
    assert h.child_starts(h.node_index["Lorraine"]).tolist() == [1]
    assert h.child_starts(h.node_index["Metz"]).tolist() == []


def test_mondrian_cuts_between_children_not_at_the_median(city_file):
    from dpriv.anonymity.mondrian import mondrian_groups

    h = read_hierarchy(city_file)
    grid = np.arange(6, dtype=float).reshape(-1, 1)  # one tuple per city, tree order
    s, counts = np.zeros(6, dtype=np.int64), np.array([6])
    by_tree = mondrian_groups(grid, s, counts, k=2, model="k", trees={0: h})
    # * -> France | Germany (4 | 2), France -> Lorraine | IDF (2 | 2)
    assert by_tree.tolist() == [0, 0, 1, 1, 2, 2]
    nodes = [h.names[h.lowest_common([lo], [lo + 1])[0]] for lo in (0, 2, 4)]
    assert nodes == ["Lorraine", "IDF", "Brandenburg"]
    # the median cut splits IDF (3 | 3): groups France-wide and world-wide
    assert mondrian_groups(grid, s, counts, k=2, model="k").tolist() == [0, 0, 0, 1, 1, 1]


def test_mondrian_release_with_a_hierarchy_is_verified(city_file):
    from dpriv.anonymity.mondrian import mondrian_view
    from dpriv.input_checks import resolve_policy
    from dpriv.validate import validate_view

    view = city_view()
    pol, _ = resolve_policy(view, city_policy(city_file))
    out = mondrian_view(view, pol, model="t")
    h = pol.hierarchy("city")
    _covers(out.released, out.assigned, h)
    counts = validate_view(view, pol).s_counts
    assigned = out.assigned.assign(**{c: 1 / 3 for c in pol.prior_columns})  # the JS check needs priors
    rep = verify_release(out.released, pol, view_counts=counts, assigned=assigned)
    assert rep.ok, rep.problems


@pytest.mark.slow
def test_cli_release_resume_verify_and_attack_with_a_hierarchy(history_setting, tmp_path, cli):
    import json

    from dpriv.toml_writer import toml_dumps

    mh, pol = history_setting
    hist = tmp_path / "history.parquet"
    mh.history.to_parquet(hist)
    ledger = tmp_path / "ledger"
    pfile = tmp_path / "policy.toml"
    knowledge = {k: str(pol.knowledge_path(k)) for k in pol.knowledge}
    pfile.write_text(
        toml_dumps(
            {
                "columns": {"id": pol.id, "time": pol.time, "qi": pol.qi, "sensitive": pol.sensitive},
                "privacy": {"k": pol.k, "t": pol.t, "j": pol.j, "max_suppression": 1.0},
                "domains": {q: v for q, v in pol.domains.items() if q != "age"},
                "knowledge": knowledge,
            }
        )
    )
    age = pol.hierarchies["age"]
    res = cli("release", hist, "--ledger", ledger, "--policy", pfile, "--hierarchy", f"age={age}")
    assert res.exit_code == 0, res.output
    assert json.loads((ledger / "policy.json").read_text())["hierarchies"] == {"age": age}
    before = {p: p.read_bytes() for p in ledger.rglob("*") if p.is_file()}
    # resumed from the ledger's own policy.json (no --policy, no --hierarchy): nothing to do
    res = cli("release", hist, "--ledger", ledger)
    assert res.exit_code == 0 and "nothing to release" in res.output, res.output
    assert {p: p.read_bytes() for p in ledger.rglob("*") if p.is_file()} == before
    res = cli("verify", "--ledger", ledger, "--view", "2", "--history", hist)
    assert res.exit_code == 0 and "FAIL" not in res.output, res.output
    # the released file alone: without its hierarchy the nodes are not value sets
    view1 = tmp_path / "v1.parquet"
    view1.write_bytes((ledger / "releases" / "1" / "view.parquet").read_bytes())
    common = ["verify", view1, "--original", hist, "--policy", pfile, "--view", "1"]
    assert cli(*common, "--hierarchy", f"age={age}").exit_code == 0
    res = cli(*common)
    assert res.exit_code == 2 and "FAIL" in res.output and "--hierarchy age=PATH" in res.output, res.output
    res = cli(
        "attack",
        ledger,
        "--history",
        hist,
        "--knowledge",
        "dk",
        "--membership",
        "qi",
        "--out",
        tmp_path / "g.csv",
    )
    assert res.exit_code == 0, res.output
    gains = pd.read_csv(tmp_path / "g.csv")
    assert len(gains) == 2 and gains["share_pinned"].between(0, 1).all()  # nodes read as their leaves
