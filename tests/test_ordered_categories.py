"""An ordered pandas Categorical gives its column's domain order (drill of session 35): the
sensitive domain under ``emd_ground = "ordered"`` and a categorical QI's levels follow the
categories (``low < mid < high``), not the alphabet (``high, low, mid``), on pandas, Dask and
the CLI's Parquet; an unordered text sensitive column says its order is alphabetical."""

from __future__ import annotations

import re

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpriv.errors import PolicyError
from dpriv.release import anonymize

ORDER = ["low", "mid", "high"]
POLICY = {"id": "rid", "qi": ["age", "weight"], "sensitive": "s", "k": 5, "t": 0.2, "j": 10.0}
POLICY |= {"emd_ground": "ordered", "max_suppression": 0.5}


def view(n: int = 300) -> pd.DataFrame:
    """Severity by age: low young, high middle-aged, mid older, low oldest (30% at random), so
    that groups of neighbouring ages mix low with high, close in the alphabet's order."""
    rng = np.random.default_rng(1)
    age = rng.integers(20, 80, n)
    sev = np.where(age < 35, "low", np.where(age < 50, "high", np.where(age < 65, "mid", "low")))
    sev = np.where(rng.random(n) < 0.3, rng.choice(ORDER, n), sev)
    return pd.DataFrame(
        {
            "rid": np.arange(n),
            "age": age,
            "weight": rng.integers(60, 90, n),
            # "unused": a category no row holds stays out of the domain, as for any inferred one
            "s": pd.Categorical(sev, categories=[*ORDER, "unused"], ordered=True),
        }
    )


def worst_ordered_emd(labels: pd.Series, values: pd.Series, order: list[str]) -> float:
    """The largest EMD (E19, ground distance by rank in ``order``) of a group to the whole."""
    values = values.astype(str)
    whole = values.value_counts(normalize=True).reindex(order, fill_value=0).to_numpy()
    worst = 0.0
    for _, group in values.groupby(labels.to_numpy()):
        p = group.value_counts(normalize=True).reindex(order, fill_value=0).to_numpy()
        worst = max(worst, float(np.abs(np.cumsum(p - whole)).sum()) / (len(order) - 1))
    return worst


@pytest.mark.slow
def test_an_ordered_sensitive_categorical_is_checked_in_its_own_order():
    a = anonymize(view(), POLICY)
    assert a.policy.domains["s"] == ORDER
    assert any("'s': ['low', 'mid', 'high'] (the order of its ordered categories)" in n for n in a.notes)
    # the release holds t under low < mid < high (by the alphabet's order its worst group was 0.345)
    assert worst_ordered_emd(a.assigned["_label"], a.assigned["s"], ORDER) <= POLICY["t"] + 1e-9


@pytest.mark.slow
def test_ordered_categories_on_dask_give_the_same_domains_and_a_qi_its_levels(tmp_path):
    v = view(120)
    v["band"] = pd.Categorical(
        np.where(v["age"] < 40, "young", np.where(v["age"] < 60, "middle", "old")),
        categories=["young", "middle", "old"],
        ordered=True,
    )
    v = v.drop(columns="age")
    v.to_parquet(tmp_path / "v.parquet", index=False)  # Dask reads its categories as unknown
    policy = POLICY | {"qi": ["band", "weight"], "t": 1.0}
    for given in (str(tmp_path / "v.parquet"), dd.from_pandas(v, npartitions=2)):
        a = anonymize(given, policy)
        assert a.policy.domains["s"] == ORDER
        assert a.policy.domains["band"] == ["young", "middle", "old"]
        assert a.policy.kinds["band"] == "categorical"


def test_an_unordered_text_sensitive_says_its_order_is_alphabetical_under_ordered_emd():
    v = view(60).assign(s=lambda f: f["s"].astype(str))
    notes = anonymize(v, POLICY | {"t": 1.0}).notes
    said = [n for n in notes if n.startswith("inferred sensitive domain of 's'")]
    assert len(said) == 1 and "['high', 'low', 'mid']" in said[0]
    assert "alphabetical order" in said[0] and "[domains] s = [...]" in said[0], said
    equal = anonymize(v, POLICY | {"t": 1.0, "emd_ground": "equal"}).notes  # order irrelevant there
    assert not any("alphabetical" in n for n in equal)


@pytest.mark.slow
def test_the_cli_reads_the_order_of_a_parquet_categorical_and_verify_checks_by_it(cli, tmp_path):
    v = view()
    v.to_parquet(tmp_path / "ordered.parquet", index=False)  # Parquet keeps the ordered categories
    v.assign(s=v["s"].astype(str)).to_parquet(tmp_path / "text.parquet", index=False)
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[columns]\nid = "rid"\nqi = ["age", "weight"]\nsensitive = "s"\n'
        '[privacy]\nk = 5\nt = 0.2\nj = 10.0\nemd_ground = "ordered"\nmax_suppression = 0.5\n'
    )
    res = cli(
        "anonymize", tmp_path / "ordered.parquet", "--out", tmp_path / "good.parquet", "--policy", policy
    )
    assert res.exit_code == 0, res.output
    assert "['low', 'mid', 'high'] (the order of its ordered categories)" in res.output
    ok = cli(
        "verify", tmp_path / "good.parquet", "--original", tmp_path / "ordered.parquet", "--policy", policy
    )
    assert ok.exit_code == 0 and "ok: True" in ok.output, ok.output
    # a release made in the alphabet's order breaks t in the categories' order: verify says so
    res = cli("anonymize", tmp_path / "text.parquet", "--out", tmp_path / "abc.parquet", "--policy", policy)
    assert res.exit_code == 0, res.output
    bad = cli(
        "verify", tmp_path / "abc.parquet", "--original", tmp_path / "ordered.parquet", "--policy", policy
    )
    assert bad.exit_code == 2 and "FAIL" in bad.output, bad.output


@pytest.mark.slow
def test_release_says_the_order_of_the_sensitive_domain_it_inferred(cli, tmp_path):
    """``dpriv release`` prints the ledger's inferred domains: the alphabet's order said as such
    under emd_ground = "ordered", an ordered Categorical's order without that hint."""
    history = pd.concat([view(60).assign(v=1), view(60).assign(v=2, rid=lambda f: f["rid"] + 100)])
    history.to_parquet(tmp_path / "ordered.parquet", index=False)
    history.assign(s=history["s"].astype(str)).to_parquet(tmp_path / "text.parquet", index=False)
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[columns]\nid = "rid"\ntime = "v"\nqi = ["age", "weight"]\nsensitive = "s"\n'
        '[privacy]\nk = 5\nt = 1.0\nj = 10.0\nemd_ground = "ordered"\nmax_suppression = 0.5\n'
    )
    text = cli("release", tmp_path / "text.parquet", "--ledger", tmp_path / "T", "--policy", policy)
    assert text.exit_code == 0, text.output
    assert "inferred sensitive domain of 's': ['high', 'low', 'mid'] (in alphabetical order" in text.output
    ordered = cli("release", tmp_path / "ordered.parquet", "--ledger", tmp_path / "O", "--policy", policy)
    assert ordered.exit_code == 0, ordered.output
    assert "inferred sensitive domain of 's': ['low', 'mid', 'high']" in ordered.output
    assert "alphabetical" not in ordered.output


def test_exit_values_an_ordered_sensitive_lacks_are_said_as_for_an_inferred_domain():
    """Not "invalid policy" (the domain read from the categories is not one the user wrote)."""
    policy = POLICY | {"t": 1.0, "exit_values": ["dead", "gone"]}
    with pytest.raises(
        PolicyError, match=r"no domain of 's' is declared, so it was inferred from this input"
    ):
        anonymize(view(60), policy)


def test_exit_values_an_ordered_sensitive_lacks_list_its_domain_in_the_categories_order():
    """A drill: the refusal listed the inferred domain alphabetically (['dead', 'high', 'low',
    'mid']) and suggested [domains] s = ['dead', 'high', 'low', 'mid', 'gone']: declared so, the
    ordered EMD would measure by the alphabet, not by the categories' order."""
    v = view(60)
    v["s"] = v["s"].cat.add_categories("dead").cat.reorder_categories([*ORDER, "dead", "unused"])
    v.loc[[3, 7], "s"] = "dead"
    policy = POLICY | {"t": 1.0, "exit_values": ["dead", "gone"]}
    order = "['low', 'mid', 'high', 'dead']"
    with pytest.raises(PolicyError) as caught:
        anonymize(v, policy)
    said = str(caught.value)
    assert f"inferred from this input ({order})" in said, said
    assert "[domains] s = ['low', 'mid', 'high', 'dead', 'gone'], or drop them" in said, said
    with pytest.raises(PolicyError, match=re.escape(f"({order})")):  # a Dask frame alike
        anonymize(dd.from_pandas(v, npartitions=2), policy)
