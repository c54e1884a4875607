"""Findings of a notebook user's drill.

1. The repr of ``anonymize()``'s result printed its private ``assigned`` frame (ids, exact QIs,
   true sensitive values, priors), and :class:`AttackStep`'s its arrays: a notebook's last line
   would publish them. 2. ``Ledger`` had no repr. 3. Python calls were told CLI flags
   (``with --tt``, ``--ledger NEW``, ``--categorical``). 4. A text-coded QI against a knowledge
   file that cuts it into numeric ranges failed with a raw ValueError inside the release.
5. Columns a Python history holds beyond the policy's were dropped without a word.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from dpriv.attack import attack_steps
from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError, PolicyError
from dpriv.ledger import Ledger
from dpriv.metrics.release import require
from dpriv.policy import ReleasePolicy
from dpriv.release import anonymize, release_history


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """3 views x 200 of the medical generator, its policy.toml and knowledge files beside it."""
    out = tmp_path_factory.mktemp("drill")
    mh = medical_history(n_views=3, view_size=200, seed=0)
    write_history(out, mh, policy_extra={"privacy": {"k": 5, "t": 0.6, "j": 0.9, "max_suppression": 1.0}})
    return out, mh.history, ReleasePolicy.from_toml(out / "policy.toml")


# -- 1., 2. reprs ----------------------------------------------------------------------------------
def test_anonymized_repr_shows_no_private_value(generated):
    _, history, policy = generated
    view = history[history["view"] == 1].assign(respondent_id=lambda f: f["respondent_id"] + 9_876_000)
    res = anonymize(view, policy)
    text = repr(res)
    assert text == str(res)
    assert text.startswith("Anonymized(released: ") and "assigned: private, not shown" in text
    assert f"released: {len(res.released):,} rows x {res.released.shape[1]} columns" in text
    assert f"n_groups={res.metrics['n_groups']}" in text
    assert "9876" not in text  # no respondent id
    for column in ("respondent_id", "exam_result", "prior_"):  # nor a private column's name or value
        assert column not in text
    assert not any(value in text for value in set(view["exam_result"]))


def test_attack_step_repr_shows_no_array(generated, tmp_path):
    _, history, policy = generated
    led = release_history(history, policy, tmp_path / "led", until=1)
    step = next(attack_steps(led, history, policy, "dk"))
    assert repr(step) == f"AttackStep(release=1, seconds={step.seconds!r})"


def test_ledger_repr_names_root_and_releases(generated, tmp_path):
    _, history, policy = generated
    led = release_history(history, policy, tmp_path / "led", until=2)
    assert repr(led) == f"Ledger({str(tmp_path / 'led')!r}, 2 committed releases)"
    new = Ledger(tmp_path / "new", create=True)
    assert repr(new) == f"Ledger({str(tmp_path / 'new')!r}, 0 committed releases)"
    (tmp_path / "led" / "manifest.json").write_text("{")
    assert repr(Ledger(tmp_path / "led")).endswith(", manifest unreadable: LedgerError)")


# -- 4. a text-coded QI against a knowledge file of numeric ranges ------------------------------------
def _text_gender(generated):
    out, history, policy = generated
    domains = {**policy.domains, "gender": ["F", "M"]}
    text = history.assign(gender=history["gender"].map({1: "F", 2: "M"}).astype("category"))
    return out, text, ReleasePolicy.from_toml(out / "policy.toml", domains=domains)


NUMERIC_RANGES = (
    "knowledge/dk.npz classifies QI 'gender' by numeric ranges (cut points [2]) while the data and "
    "policy hold 'gender' as categorical values (domain ['F', 'M']): recode 'gender' as the numbers "
    "of the knowledge file, or use a knowledge file built for its categorical values"
)


def test_text_qi_against_numeric_knowledge_is_refused_before_release(generated, tmp_path):
    out, text, policy = _text_gender(generated)
    with pytest.raises(PolicyError) as err:
        release_history(text, policy, tmp_path / "led")
    assert str(err.value) == f"knowledge file {out / NUMERIC_RANGES}"
    assert not (tmp_path / "led").exists()


def test_text_qi_against_numeric_knowledge_exits_2(generated, tmp_path):
    out, text, policy = _text_gender(generated)
    text.to_parquet(tmp_path / "h.parquet")
    toml = (out / "policy.toml").read_text().replace("gender = [1, 2]", 'gender = ["F", "M"]')
    (out / "policy_text.toml").write_text(toml)
    args = ["release", str(tmp_path / "h.parquet"), "--policy", str(out / "policy_text.toml")]
    res = CliRunner().invoke(app, [*args, "--ledger", str(tmp_path / "led"), "--no-cluster"])
    assert res.exit_code == 2, res.output
    assert NUMERIC_RANGES in " ".join(res.output.split())
    assert not (tmp_path / "led").exists()


# -- 3. Python calls are told Python arguments, the CLI its flags ------------------------------------
def test_python_refusals_name_python_arguments_the_cli_its_flags(generated, tmp_path):
    out, history, policy = generated
    pf = out / "policy.toml"
    with pytest.raises(PolicyError) as err:
        ReleasePolicy.from_toml(pf, tt=0.5)
    assert str(err.value) == (
        f"invalid policy (policy file {pf} with overrides tt=0.5):\n  unknown key 'tt'; did you mean 't'?"
    )
    with pytest.raises(PolicyError) as err:
        ReleasePolicy.from_toml(pf, t=-1, k=5)
    assert str(err.value) == (
        f"invalid policy (policy file {pf} with overrides t=-1, k=5):\n"
        "  t: must be a number in [0, 1], got -1"
    )
    view = history[history["view"] == 1].astype({"age": object})
    view.loc[view.index[0], "age"] = "unknown"
    with pytest.raises(InputError) as err:
        anonymize(view, policy)
    assert (
        'or declare the QI categorical (--categorical age, [kinds] age = "categorical" in the policy, or '
        "policy.with_overrides(kinds={**policy.kinds, 'age': 'categorical'}) in Python)"
    ) in str(err.value)
    ok = type("Report", (), {"ok": True, "problems": []})()
    with pytest.raises(PolicyError) as err:  # a refusal whose fix is a new ledger, releases committed
        require(ok, policy.with_overrides(max_suppression=0.1), 40, 8, "release 3", committed=2)
    assert str(err.value).endswith(
        "needs a new ledger: release the history with it into --ledger NEW "
        "(release_history(history, policy, NEW) in Python), from the first view)"
    )
    history.to_parquet(tmp_path / "h.parquet")  # the CLI names its flags
    args = ["release", str(tmp_path / "h.parquet"), "--policy", str(pf), "--t", "2", "--k", "5"]
    res = CliRunner().invoke(app, [*args, "--ledger", str(tmp_path / "led"), "--no-cluster"])
    assert res.exit_code == 2, res.output
    assert f"error: --t must be a number in [0, 1], not '2' (policy file {pf} with --k, --t)\n" in res.output


# -- 5. columns the policy does not name: dropped, and said in Python too -----------------------------
def test_python_warns_of_unnamed_columns_once_per_call(generated, tmp_path):
    out, history, policy = generated
    named = history.assign(name="Alice", zip=57000)
    said = r"not released: column\(s\) \['name', 'zip'\] \(not named by the policy as id, time, QI or "
    with pytest.warns(UserWarning, match=said) as caught:
        release_history(named, policy, tmp_path / "led", until=2)
    assert len([w for w in caught if "not released" in str(w.message)]) == 1
    assert caught[0].filename == __file__  # the user's line
    with pytest.warns(UserWarning, match=said) as caught:
        anonymize(named[named["view"] == 1], policy)
    assert len([w for w in caught if "not released" in str(w.message)]) == 1
    named[named["view"] == 1].to_parquet(tmp_path / "h.parquet")  # the CLI prints it once, as its line
    args = ["release", str(tmp_path / "h.parquet"), "--policy", str(out / "policy.toml")]
    res = CliRunner().invoke(app, [*args, "--ledger", str(tmp_path / "cli"), "--no-cluster"])
    assert res.exit_code == 0, res.output
    assert res.output.count("not released: column(s) ['name', 'zip']") == 1
    assert "warning: not released" not in res.output
