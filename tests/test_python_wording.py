"""Refusals name what their reader typed: a Python call its arguments (``original``,
``view=<index>``, ``out``, ``view_size``, ``scheduler``, ``cluster=False``), the command line its
flags (``--original``, ``--view <index>``, ``--out``, ``--view-size``, ``--no-cluster``). These
named flags to a Python caller too (dpriv/wording.py; session 32's ``read_toml(named=...)``)."""

import re
import shutil

import pandas as pd
import pytest
from conftest import random_view
from test_cli import QI
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.errors import InputError, PolicyError
from dpriv.policy import ReleasePolicy
from dpriv.wording import argument_named, flag_named


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_an_argument_is_named_as_python_or_as_the_command_line_writes_it():
    assert [argument_named("view"), argument_named("view", "<index>"), argument_named("cluster", False)] == [
        "view",
        "view=<index>",
        "cluster=False",
    ]
    assert [flag_named("view_size"), flag_named("view", "<index>")] == ["--view-size", "--view <index>"]
    assert [flag_named("cluster", True), flag_named("cluster", False)] == ["--cluster", "--no-cluster"]


@pytest.fixture(scope="module")
def two_views(tmp_path_factory):
    """A history of 2 views (``view``), CSV, and the release of its first view as CSV."""
    from dpriv.release import anonymize

    folder = tmp_path_factory.mktemp("views")
    history = pd.concat([random_view(60, seed=s).assign(view=s) for s in (1, 2)], ignore_index=True)
    history.to_csv(folder / "history.csv", index=False)
    fields = {"id": "respondent_id", "qi": ["age", "gender", "weight"], "sensitive": "exam_result"}
    released = anonymize(
        history[history["view"] == 1].drop(columns="view"), {**fields, "k": 3, "t": 0.9, "j": 5}
    )
    released.released.to_csv(folder / "released.csv", index=False)
    return folder, history, released.released, ReleasePolicy.from_dict({**fields, "time": "view", "k": 3})


def test_verify_view_names_its_arguments_and_dpriv_verify_its_flags(two_views):
    folder, history, released, policy = two_views
    from dpriv.release import verify_view

    several = "original holds 2 views (view = 1..2); t is checked against the view a release was made from: "
    with pytest.raises(InputError, match=f"^{re.escape(several)}pass view=<index>$"):
        verify_view(released, history, policy)
    with pytest.raises(InputError, match=r"^original has no rows with view = 5; it holds \[1, 2\]$"):
        verify_view(released, history, policy, view=5)
    doubled = pd.concat([history, history.iloc[[3]]], ignore_index=True)
    with pytest.raises(InputError, match="^original: view = 1: duplicate 'respondent_id' within one view"):
        verify_view(released, doubled, policy, view=1)

    given = ["verify", folder / "released.csv", "--original", folder / "history.csv", "--time", "view", *QI]
    res = run(*given, "--k", 3, "--t", 0.9)
    assert res.exit_code == 2 and f"error: --{several}pass --view <index>\n" in res.output, res.output
    res = run(*given, "--k", 3, "--t", 0.9, "--view", 5)
    assert res.exit_code == 2 and "error: --original has no rows with view = 5;" in res.output, res.output


def test_run_experiment_names_out_and_view_size_and_dpriv_experiment_its_flags(tmp_path):
    from dpriv.experiment import run_experiment

    afile = tmp_path / "afile"
    afile.write_text("mine")
    said = f"{afile} is a file, not a folder: choose a folder for the experiment"
    with pytest.raises(InputError, match=f"^out {re.escape(said)}$"):
        run_experiment(afile, views=1, view_size=5, say=lambda _: None)
    res = run("experiment", "paper", "--out", afile, "--views", 1, "--view-size", 5)
    assert res.exit_code == 2 and f"error: --out {said}\n" in res.output, res.output

    few = "nothing was written: give a larger "
    with pytest.raises(InputError, match=f"{few}view_size$"):
        run_experiment(tmp_path / "tiny", views=1, view_size=3, say=lambda _: None)
    res = run("experiment", "paper", "--out", tmp_path / "tiny", "--views", 1, "--view-size", 3)
    assert res.exit_code == 2 and f"{few}--view-size\n" in res.output, res.output
    assert afile.read_text() == "mine" and not (tmp_path / "tiny").exists()


@pytest.mark.parametrize(
    "named, small, lazy",
    [
        (argument_named, "(cluster=True starts one, scheduler=ADDR uses yours)", "cluster=False: to be"),
        (flag_named, "(--cluster starts one, --scheduler ADDR uses yours)", "--no-cluster: to be"),
    ],
)
def test_where_a_release_runs_is_said_in_the_callers_words(named, small, lazy):
    from dpriv.cluster import Placement, history_size, release_frame

    frame = random_view(20)
    policy = ReleasePolicy.from_dict(
        {"id": "respondent_id", "qi": ["age"], "sensitive": "exam_result", "k": 2}
    )
    said: list[str] = []
    for size in (history_size(frame, policy), None):
        with release_frame(Placement("process", size, frame), say=said.append, named=named):
            pass
    assert said[0].endswith(f"no Dask cluster started {small}") and said[1].startswith(lazy), said


def test_write_history_names_out_dir_and_dpriv_generate_its_flag(tmp_path):
    from dpriv.datasets import medical_history, write_history

    mh = medical_history(1, 20, seed=0)
    write_history(tmp_path, mh)
    (tmp_path / "policy.toml").write_text("# edited\n")
    edited = r"overwrite=True replaces only .* or choose another folder \(out_dir\)$"
    with pytest.raises(InputError, match=edited):
        write_history(tmp_path, mh, overwrite=True)
    res = run("generate", "medical", "--out", tmp_path, "--views", 1, "--view-size", 20, "--force")
    assert res.exit_code == 2 and "or choose another folder (--out)\n" in res.output, res.output
    afile = tmp_path / "afile"
    afile.write_text("mine")
    with pytest.raises(InputError, match=r"is a file, not a folder; choose a folder for .* \(out_dir\)$"):
        write_history(afile, mh)


def test_a_count_of_one_takes_the_singular():
    """A drill: '(1 rows: line 7 of h.csv)' and 'larger than the view (1 rows)'."""
    from dpriv.wording import counted

    assert [counted(n, "row") for n in (0, 1, 2)] == ["0 rows", "1 row", "2 rows"]
    assert counted(1, "kept tuple lies", "kept tuples lie") == "1 kept tuple lies"
    assert counted(3, "kept tuple lies", "kept tuples lie") == "3 kept tuples lie"


@pytest.fixture(scope="module")
def small_ledger(tmp_path_factory):
    """A ledger of 2 views of 12 respondents (k = 2), and its history as CSV."""
    from dpriv.release import release_history

    folder = tmp_path_factory.mktemp("small")
    rows = [
        {"rid": r, "view": v, "age": 20 + 3 * r + v, "gender": "FM"[r % 2], "s": "abc"[(r + v) % 3]}
        for v in (1, 2)
        for r in range(12)
    ]
    history = pd.DataFrame(rows)
    history.to_csv(folder / "h12.csv", index=False)
    fields = {"id": "rid", "time": "view", "qi": ["age", "gender"], "sensitive": "s", "k": 2}
    release_history(history, ReleasePolicy.from_dict({**fields, "t": 1.0, "j": 1.0}), folder / "led")
    return folder


def test_write_report_names_out_html_and_no_force_flag_it_lacks(small_ledger, tmp_path):
    """A drill: write_report onto a user's page said '--out ... --force replaces only ...', but
    write_report takes out_html and no force (it always replaces its own unchanged page)."""
    from dpriv.report import write_report

    page = tmp_path / "notes.html"
    page.write_text("mine")
    theirs = f"{page} was not written by dpriv (no record of it in {tmp_path / '.dpriv-outputs'}): "
    rule = "replaces only a file an earlier dpriv report wrote, never another file; nothing was written"
    with pytest.raises(InputError, match=f"^out_html {re.escape(theirs)}write_report {rule}") as caught:
        write_report(small_ledger / "led", page)
    assert "--" not in str(caught.value), caught.value
    res = run("report", small_ledger / "led", "--out", page, "--force")  # the command's words
    assert res.exit_code == 2 and f"error: --out {theirs}--force {rule}" in res.output, res.output
    assert page.read_text() == "mine"


def test_save_gain_says_how_to_save_elsewhere_in_python_and_dpriv_attack_with_out(small_ledger):
    """A drill: save_gain onto an edited result said 'write this attack elsewhere with --out'."""
    from dpriv.attack import save_gain

    led = small_ledger / "led"
    gain = pd.DataFrame({"release": [1, 2], "adversary_gain": [0.1, 0.2]})
    path = save_gain(gain, led, "dk", assume_this_ledger=True)
    path.write_text(path.read_text() + "3,0.5\n")  # edited: no longer dpriv's to replace
    edited = path.read_text()
    with pytest.raises(
        InputError, match=r"move it away first, or save the frame elsewhere with frame\.to_csv"
    ):
        save_gain(gain, led, "dk", assume_this_ledger=True)
    res = run("attack", led, "--history", small_ledger / "h12.csv", "--knowledge", "dk")
    assert res.exit_code == 2 and "or write this attack elsewhere with --out\n" in res.output, res.output
    assert path.read_text() == edited
    shutil.rmtree(path.parent)  # the attack/ folder, its record with it
    path.parent.write_text("mine")  # a file where the attack/ folder goes
    with pytest.raises(InputError, match=r"nothing was written; move it away, or save the frame elsewhere"):
        save_gain(gain, led, "dk", assume_this_ledger=True)
    res = run("attack", led, "--history", small_ledger / "h12.csv", "--knowledge", "dk")
    assert res.exit_code == 2 and "or write the results elsewhere with --out\n" in res.output, res.output
    assert path.parent.read_text() == "mine"
    path.parent.unlink()


@pytest.mark.parametrize("lazy", [False, True])
def test_a_frame_whose_id_is_its_index_is_told_to_reset_it_not_to_pass_add_row_id(lazy, tmp_path):
    """A drill: anonymize(frame.set_index(id)) said 'pass --add-row-id ... --id C', flags a
    Python call has not; the ids are there, as the index."""
    import dask.dataframe as dd

    from dpriv.release import anonymize, release_history

    view = random_view(30).set_index("respondent_id")
    view = dd.from_pandas(view, npartitions=2) if lazy else view
    fields = {"id": "respondent_id", "qi": ["age", "gender"], "sensitive": "exam_result", "k": 3}
    said = "takes the view's id column 'respondent_id' as a column, but it is the frame's index: "
    with pytest.raises(InputError, match=f"^anonymize\\(\\) {re.escape(said)}pass view\\.reset_index\\(\\)$"):
        anonymize(view, fields)
    history = view.assign(view=1)
    with pytest.raises(InputError, match=r"^release_history\(\) .* index: pass history\.reset_index\(\)$"):
        release_history(history, ReleasePolicy.from_dict({**fields, "time": "view"}), tmp_path / "led")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "field, said",
    [
        ({"release_format": "anatomy"}, 'or release_format = "generalized"'),
        ({"persistent_groups": True}, "or persistent_groups = false"),
        ({"posterior_bound": 0.9}, "or remove posterior_bound from the policy"),
    ],
)
def test_a_method_refusal_names_the_python_argument_too(field, said, tmp_path):
    """release_history(..., method=...) refused with only 'use --method jsreduce', a flag; a
    refusal raised inside the release names both forms (dpriv/wording.py)."""
    from dpriv.release import release_history

    fields = {
        "id": "respondent_id",
        "time": "view",
        "qi": ["age", "gender", "weight"],
        "sensitive": "exam_result",
    }
    policy = ReleasePolicy.from_dict({**fields, "k": 3, **field})
    both = re.escape(f'use --method jsreduce (method="jsreduce" in Python) {said}')
    with pytest.raises(PolicyError, match=f"method 'mondrian-t' .*{both}$"):
        release_history(random_view(30).assign(view=1), policy, tmp_path / "led", method="mondrian-t")
    assert list(tmp_path.iterdir()) == []


def test_to_interchange_names_its_arguments_beside_dpriv_exports_flags():
    """to_interchange refused with '--metrics F', '--suppressed omit' and '--policy F' only, flags
    of dpriv export; its refusals name the Python arguments too."""
    from test_interchange import hand_view

    from dpriv.interchange import to_interchange

    unknown = (
        '(--metrics F; n_suppressed=N in Python), or leave them out (--suppressed omit; suppressed="omit" in'
    )
    with pytest.raises(InputError, match=re.escape(unknown) + " Python\\)$"):
        to_interchange(hand_view())
    policy = "(--policy F, or --ledger L --view I; qi=[...], sensitive=... in Python)"
    with pytest.raises(InputError, match=r"extra \['respondent_id'\].*" + re.escape(policy) + "$"):
        to_interchange(
            hand_view().assign(respondent_id=range(5)), qi=["age", "city", "w"], sensitive="disease"
        )
    with pytest.raises(InputError, match=re.escape("(--policy F; qi=[...], sensitive=... in Python) if the")):
        to_interchange(hand_view().drop(columns="w_max"), suppressed="omit")


def test_a_frame_without_ids_is_told_the_pandas_and_policy_fix_not_add_row_id(tmp_path):
    """A drill: anonymize(frame_without_id, policy) said 'pass --add-row-id ... (or --id C ...)'
    and 'pass --id/--qi/--sensitive', flags a Python call has not; dpriv anonymize keeps them."""
    from dpriv.release import anonymize, release_history

    view = random_view(30).drop(columns="respondent_id")
    fields = {"qi": ["age", "gender"], "sensitive": "exam_result", "k": 3}
    with pytest.raises(InputError) as caught:
        anonymize(view, fields)
    said = str(caught.value)
    assert "name them in the policy's id, qi and sensitive fields" in said, said
    assert "number its rows as the id with view.assign(respondent_id=range(len(view)))" in said, said
    assert "--" not in said, said
    with pytest.raises(InputError, match=r"name its id column in the policy's id field\.$") as caught:
        release_history(
            view.assign(view=1), ReleasePolicy.from_dict({**fields, "time": "view"}), tmp_path / "l"
        )
    assert "--" not in str(caught.value) and "assign" not in str(caught.value), caught.value
    assert list(tmp_path.iterdir()) == []
    view.to_csv(tmp_path / "v.csv", index=False)  # the command's words, as before
    res = run("anonymize", tmp_path / "v.csv", "--out", tmp_path / "o.csv", *QI, "--k", 3)
    assert (
        res.exit_code == 2
        and "Rename the columns or pass --id/--qi/--sensitive (or [columns] in the policy)." in res.output
    )
    assert "pass --add-row-id to number its rows as the id (or --id C to name its id column)." in res.output


def test_a_history_given_to_anonymize_is_told_release_history_in_python_too():
    """A drill: anonymize(history) with its repeated ids said only 'dpriv release FILE --ledger ...'."""
    from dpriv.release import anonymize

    history = pd.concat([random_view(30).assign(view=v) for v in (1, 2)], ignore_index=True)
    fields = {"id": "respondent_id", "qi": ["age", "gender"], "sensitive": "exam_result", "k": 3}
    both = "dpriv release FILE --ledger LEDGER (release_history(history, policy, ledger) in Python)"
    with pytest.raises(InputError, match=re.escape(both)):
        anonymize(history, fields)


def test_a_date_hint_names_the_python_override_too():
    """A drill: anonymize's note on a QI of ISO dates said only 'pass --date adm'."""
    from dpriv.release import anonymize

    view = random_view(60, qi=("age", "gender"))
    days = pd.Timestamp("2024-01-01") + pd.to_timedelta(view["respondent_id"] % 9 * 17, unit="D")
    view["adm"] = days.dt.strftime("%Y-%m-%d")
    fields = {"qi": ["age", "adm"], "sensitive": "exam_result", "k": 3, "t": 0.9, "j": 5}
    notes = anonymize(view, fields).notes
    hint = "in Python, policy.with_overrides(kinds={**policy.kinds, 'adm': 'date'}))"
    assert any("'adm' looks like dates: pass --date adm" in n and hint in n for n in notes), notes


def test_release_history_on_a_running_ledger_is_not_told_to_declare_a_qi_categorical(tmp_path):
    """A drill: release_history's week 2 with text in numeric age, into a ledger holding week 1,
    said 'declare the QI categorical (--categorical age, ...)', which the ledger refuses
    (dpriv release already said a new ledger is needed: dpriv/policy_fix.py)."""
    from dpriv.ledger import Ledger
    from dpriv.release import release_history

    week = random_view(30, seed=0)
    second = week.assign(week=2, exam_result=week["exam_result"].to_numpy()[::-1])
    history = pd.concat([week.assign(week=1), second], ignore_index=True)
    fields = {"id": "respondent_id", "time": "week", "qi": ["age", "gender", "weight"]}
    policy = ReleasePolicy.from_dict({**fields, "sensitive": "exam_result", "k": 3, "t": 1.0, "j": 10.0})
    release_history(history[history["week"] == 1], policy, tmp_path / "L")
    history = history.astype({"age": object})
    history.loc[33, "age"] = "unknown"
    with pytest.raises(InputError) as caught:
        release_history(history, policy, tmp_path / "L")
    said = str(caught.value)
    assert "(release 1 is committed and the ledger keeps the kind of each QI;" in said, said
    assert "declare the QI categorical" not in said and "[kinds]" not in said, said
    assert [r["index"] for r in Ledger(tmp_path / "L").committed()] == [1]
    with pytest.raises(InputError, match=r"or declare the QI categorical \(--categorical age, ") as caught:
        release_history(history, policy, tmp_path / "new")  # a new ledger: the advice stands
    assert "committed" not in str(caught.value)


def test_columns_left_out_are_told_how_to_add_a_qi_in_the_callers_words(tmp_path):
    """A drill: anonymize(view with a zip column) warned '... belongs in the policy's qi (--qi)',
    a flag a Python call has not; the command line still names --qi."""
    import warnings

    from dpriv.release import anonymize, release_history

    view = random_view(40).assign(zip=57000)
    fields = {"id": "respondent_id", "qi": ["age", "gender", "weight"], "sensitive": "exam_result", "k": 3}
    python = "belongs in the policy's qi (policy.with_overrides(qi=[*policy.qi, COLUMN]) in Python) to be"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        notes = anonymize(view, {**fields, "t": 0.9, "j": 5}).notes
        release_history(view.assign(view=1), {**fields, "time": "view", "t": 1.0, "j": 10.0}, tmp_path / "L")
    said = [str(w.message) for w in caught if "not released: column(s) ['zip']" in str(w.message)]
    unused = [n for n in notes if n.startswith("not released")]
    assert len(said) == 2 and len(unused) == 1, (said, notes)
    assert all(python in s and "--qi" not in s for s in [*said, *unused]), (said, unused)

    view.to_csv(tmp_path / "v.csv", index=False)
    flag = "not released: column(s) ['zip'] (not named by the policy as id, time, QI or sensitive); a "
    flag += "quasi-identifier among them belongs in the policy's qi (--qi) to be released generalized"
    privacy = ["--k", 3, "--t", 0.9, "--j", 5]
    res = run("anonymize", tmp_path / "v.csv", "--out", tmp_path / "o.csv", *QI, *privacy)
    assert res.exit_code == 0 and flag in " ".join(res.output.split()), res.output
    assert "with_overrides" not in res.output
    view.assign(view=1).to_csv(tmp_path / "h.csv", index=False)
    res = run("release", tmp_path / "h.csv", "--ledger", tmp_path / "cli", "--time", "view", *QI, *privacy)
    assert res.exit_code == 0 and flag in " ".join(res.output.split()), res.output
    assert "with_overrides" not in res.output
