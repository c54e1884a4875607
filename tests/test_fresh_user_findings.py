"""Findings of a fresh-user run: each refusal exits 2 with a message naming the value and the
fix, and writes nothing (every byte and mtime of the files around unchanged).

1. ``dpriv attack`` refuses a history with one QI changed in a released view (the digest the
   ledger recorded), naming the view and the first row outside its group by its line (a row of a
   Parquet folder by its part and its row there);
2. ``--out nodir/x.csv`` is refused, ``nodir`` is not created;
3. ``dpriv release`` prints nothing to stdout before its checks pass;
4. a policy number outside its bounds (NaN) names the whole interval;
5. ``write_report``, ``save_gain`` and ``write_pbc`` never overwrite a file they did not write;
6. ``dpriv release`` says the date hint as ``dpriv anonymize`` does;
7. k larger than a view of a ledger that holds releases says a new ledger is needed.
"""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_cli import assert_refused
from test_cli_safety import snapshot
from test_folder_rows import PARTS, _folder
from test_pbc import ROWS, quiet, visits_csv
from typer.testing import CliRunner

from dpriv.attack import attack, gain_path, save_gain
from dpriv.cli import app
from dpriv.datasets import medical_history, write_history, write_pbc
from dpriv.errors import InputError, LedgerError, PolicyError
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.policy_fix import TAKE_UP_SMALL_VIEW
from dpriv.release import release_history
from dpriv.report import write_report


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """A generated history (2 views x 60, also as CSV), a ledger of both and its dk attack."""
    out = tmp_path_factory.mktemp("gen")
    mh = medical_history(n_views=2, view_size=60, seed=0)
    privacy = {"privacy": {"k": 4, "t": 0.6, "j": 0.9, "max_suppression": 1.0}}
    write_history(out, mh, policy_extra=privacy)
    mh.history.to_csv(out / "history.csv", index=False)
    policy = ReleasePolicy.from_toml(out / "policy.toml")
    release_history(mh.history, policy, out / "led")
    res = run("attack", out / "led", "--history", out / "history.csv", "--knowledge", "dk")
    assert res.exit_code == 0, res.output
    return out, mh.history, policy


def _member(out: Path, history: pd.DataFrame, policy: ReleasePolicy, inside: bool):
    """(row position in the history, new age) for a kept tuple of release 1 whose age box has
    room: a new age inside her group's box (``inside``) or just outside it (within the domain)."""
    led = Ledger(out / "led")
    state, view = led.read_state(1), led.read_view(1)
    kept = state[state["last_release"] == 1]
    boxes = view.drop_duplicates("qi_group").set_index("qi_group")
    lo_dom, hi_dom = policy.domains["age"][0], policy.domains["age"][-1]
    v1 = history[history["view"] == 1]
    for rid, group in zip(kept[policy.id], kept["last_group"]):
        lo, hi = boxes.loc[group, "age_min"], boxes.loc[group, "age_max"]
        pos = int(np.flatnonzero((history["view"] == 1) & (history[policy.id] == rid))[0])
        age = v1.loc[v1[policy.id] == rid, "age"].iloc[0]
        if inside and lo < hi:
            return pos, int(lo if age != lo else hi)
        if not inside and (hi + 1 <= hi_dom or lo - 1 >= lo_dom):
            return pos, int(hi + 1 if hi + 1 <= hi_dom else lo - 1)
    pytest.skip("no kept tuple with room in its box")  # pragma: no cover - the fixture has them


# -- 1. a history with a changed QI -----------------------------------------------------------
@pytest.mark.slow
def test_attack_refuses_a_qi_changed_outside_its_group_naming_the_line(released, tmp_path):
    out, history, policy = released
    pos, age = _member(out, history, policy, inside=False)
    changed = history.copy()
    changed.loc[changed.index[pos], "age"] = age
    bad = tmp_path / "h.csv"
    changed.to_csv(bad, index=False)
    before = snapshot(out / "led")
    res = run("attack", out / "led", "--history", bad, "--knowledge", "dk")
    assert_refused(
        res,
        r"view 1 of the history is not the one released into",
        rf"line {pos + 2} of {bad}",  # the header is line 1
        rf"has age = {age}, outside the age \[",
        "give the history that was released",
    )
    assert f"{policy.id}=" not in res.output  # the respondent is never named by her id
    assert snapshot(out / "led") == before  # gain_dk.csv not rewritten


def test_attack_names_a_changed_row_of_a_parquet_folder_in_its_file(released, tmp_path):
    """A history given as a folder of Parquet parts: the row was named in the whole folder (``row
    N of DIR``, which no file shows); now in its own part, as the input checks name it."""
    out, history, policy = released
    pos, age = _member(out, history, policy, inside=False)
    changed = history.copy()
    changed.loc[changed.index[pos], "age"] = age
    folder = _folder(tmp_path / "h", changed)  # part.1, part.2, part.10: Dask's order, not the text order
    name, (start, _) = next((n, ab) for n, ab in PARTS.items() if ab[0] <= pos < ab[1])
    before = snapshot(out / "led")
    res = run("attack", out / "led", "--history", folder, "--knowledge", "dk")
    assert_refused(
        res,
        r"view 1 of the history is not the one released into",
        rf"row {pos - start + 1} of {folder}/{re.escape(name)} has ",
        rf"has age = {age}, outside the age \[",
        "give the history that was released",
    )
    assert f"row {pos + 1} of {folder} " not in res.output
    assert f"{policy.id}=" not in res.output
    assert snapshot(out / "led") == before


def test_attack_refuses_a_qi_changed_within_its_group_naming_the_view(released, tmp_path):
    out, history, policy = released
    pos, age = _member(out, history, policy, inside=True)
    changed = history.copy()
    changed.loc[changed.index[pos], "age"] = age
    before = snapshot(out / "led")
    with pytest.raises(InputError, match="view 1 of the history is not the one released.*cannot be named"):
        attack(out / "led", changed, policy, "dk")
    bad = tmp_path / "h.csv"
    changed.to_csv(bad, index=False)
    res = run("attack", out / "led", "--history", bad, "--knowledge", "dk")
    assert_refused(res, "view 1 of the history is not the one released", "cannot be named")
    assert snapshot(out / "led") == before


def test_attack_names_a_row_by_its_label_in_python(released):
    out, history, policy = released
    pos, age = _member(out, history, policy, inside=False)
    changed = history.copy()
    label = changed.index[pos]
    changed.loc[label, "age"] = age
    with pytest.raises(InputError, match=rf"view 1 .*: row {int(label)!r} has age = {age}") as err:
        attack(out / "led", changed, policy, "dk")
    assert f"{policy.id}=" not in str(err.value)  # her label, never her id


# -- 2. --out into a folder that does not exist ---------------------------------------------------
@pytest.mark.parametrize("command", ["attack", "report", "export"])
def test_an_out_in_a_missing_folder_is_refused(command, released, tmp_path):
    out, _, _ = released
    target = tmp_path / "nodir" / {"attack": "g.csv", "report": "r.html", "export": "e.csv"}[command]
    args = {
        "attack": ("attack", out / "led", "--history", out / "history.csv", "--knowledge", "dk"),
        "report": ("report", out / "led"),
        "export": ("export", "--ledger", out / "led", "--view", "1"),
    }[command]
    before = snapshot(out)
    res = run(*args, "--out", target)
    assert_refused(res, rf"folder {tmp_path / 'nodir'} does not exist; create it first")
    assert not (tmp_path / "nodir").exists()
    assert snapshot(out) == before


def test_generate_into_a_missing_parent_folder_is_refused(tmp_path):
    res = run("generate", "medical", "--views", "1", "--view-size", "10", "--out", tmp_path / "a" / "b")
    assert_refused(res, rf"folder {tmp_path / 'a'} does not exist; create it first")
    assert not (tmp_path / "a").exists()


# -- 3 and 7. release: nothing on stdout before the checks; the new-ledger wording ----------------
@pytest.fixture
def small(tmp_path):
    """A ledger of views 1-2 of a 12-respondent history, and that history with a view 3 of one
    tuple (fewer than k = 2)."""
    rows = [
        {"rid": r, "view": v, "age": 20 + 3 * r + v, "gender": "FM"[r % 2], "s": "abc"[(r + v) % 3]}
        for v in (1, 2)
        for r in range(12)
    ]
    h12 = pd.DataFrame(rows)
    h12.to_csv(tmp_path / "h12.csv", index=False)
    more = pd.DataFrame([{"rid": 0, "view": 3, "age": 30, "gender": "F", "s": "a"}])
    pd.concat([h12, more]).to_csv(tmp_path / "h123.csv", index=False)
    (tmp_path / "pol.toml").write_text(
        '[columns]\nid = "rid"\ntime = "view"\nqi = ["age", "gender"]\nsensitive = "s"\n'
        "[privacy]\nk = 2\nt = 1.0\nj = 1.0\n"
    )
    res = run(
        "release", tmp_path / "h12.csv", "--ledger", tmp_path / "led", "--policy", tmp_path / "pol.toml"
    )
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[0].split()[:2] == ["release", "groups"]  # the table when released
    return tmp_path


def test_k_larger_than_a_view_of_a_ledger_with_releases_says_how_to_go_on(small):
    before = snapshot(small / "led")
    res = run("release", small / "h123.csv", "--ledger", small / "led")
    assert_refused(
        res,
        r"view = 3: k = 2 is larger than the view \(1 row\): lower k or add data",
        r"\(releases 1\.\.2 are committed: " + re.escape(TAKE_UP_SMALL_VIEW),
    )
    assert res.stdout == ""  # not even the table's header
    assert snapshot(small / "led") == before
    # the advice works on this ledger: view 3 is released fully suppressed, the policy records it
    res = run("release", small / "h123.csv", "--ledger", small / "led", "--small-view", "suppress")
    assert res.exit_code == 0, res.output
    led = Ledger(small / "led")
    assert led.last_index() == 3 and len(led.read_view(3)) == 0
    assert led.read_metrics(3)["n_suppressed"] == 1
    assert led.policy().small_view == "suppress"
    kept = [k for k in before if re.search(r"/(releases|state)/[12]/", k)]  # releases 1, 2 untouched
    assert len(kept) >= 4 and all(snapshot(small / "led")[k] == before[k] for k in kept)
    for view in ("2", "3"):
        res = run("verify", "--ledger", small / "led", "--view", view, "--history", small / "h123.csv")
        assert res.exit_code == 0, res.output
    # ... and is never dropped again: "refuse" would refuse the committed release 3
    after = snapshot(small / "led")
    res = run("release", small / "h123.csv", "--ledger", small / "led", "--small-view", "refuse")
    assert_refused(
        res, r"fields \['small_view'\]: small_view: \"suppress\" recorded, \"refuse\" \(the default\) given"
    )
    assert snapshot(small / "led") == after
    with pytest.raises(LedgerError, match=r"small_view: \"suppress\" recorded, \"refuse\" given"):
        led.check_policy({**led.policy().fingerprint(), "small_view": "refuse"})


def test_k_larger_than_the_first_view_keeps_its_words(small):
    res = run("release", small / "h123.csv", "--ledger", small / "new", "--policy", small / "pol.toml")
    out = assert_refused(res, r"k = 2 is larger than the view \(1 row\)")
    assert "committed" not in out and res.stdout == ""
    assert not (small / "new").exists()


# -- 4. a number outside its bounds ------------------------------------------------------------------
@pytest.mark.parametrize("value, shown", [("nan", "nan"), ("1.5", "1.5"), ("0", "0")])
def test_retro_max_gain_outside_its_bounds_names_the_interval(value, shown, small):
    text = (small / "pol.toml").read_text() + f"retro_max_gain = {value}\n"
    (small / "bad.toml").write_text(text)
    with pytest.raises(PolicyError, match=rf"retro_max_gain: must be a number in \(0, 1\], got {shown}"):
        ReleasePolicy.from_toml(small / "bad.toml")
    res = run("release", small / "h12.csv", "--ledger", small / "led2", "--policy", small / "bad.toml")
    assert_refused(res, r"must be a number in \(0, 1\]")
    assert res.stdout == "" and not (small / "led2").exists()


def test_an_int_bound_names_its_interval():
    with pytest.raises(PolicyError, match=r"k: must be a number in \[1, inf\), got 0"):
        ReleasePolicy.from_dict({"id": "r", "qi": ["a"], "sensitive": "s", "k": 0})


# -- 5. the Python writers never overwrite a file they did not write ------------------------------
@pytest.mark.slow
def test_write_report_replaces_only_its_own_page(released, tmp_path):
    out, _, _ = released
    page = tmp_path / "r.html"
    page.write_text("mine")
    with pytest.raises(InputError, match="was not written by dpriv"):
        write_report(out / "led", page)
    assert page.read_text() == "mine"
    page.unlink()
    write_report(out / "led", page)
    write_report(out / "led", page)  # its own page, unchanged: replaced
    page.write_text(page.read_text() + "<!-- edited -->")
    edited = snapshot(page)
    with pytest.raises(InputError, match="has changed since dpriv report wrote it"):
        write_report(out / "led", page)
    assert snapshot(page) == edited


def test_save_gain_and_the_cli_replace_only_an_attack_result(released, tmp_path):
    out, _, _ = released
    gain = pd.DataFrame({"release": [1, 2], "adversary_gain": [0.1, 0.2]})
    path = save_gain(gain, out / "led", "ie", assume_this_ledger=True)  # made here, not by attack()
    assert path == gain_path(out / "led", "ie")
    save_gain(
        gain.assign(adversary_gain=[0.3, 0.4]), out / "led", "ie", assume_this_ledger=True
    )  # its own result
    assert pd.read_csv(path)["adversary_gain"].tolist() == [0.3, 0.4]
    # an attack result the user edited keeps its header but is no longer dpriv's to replace
    path.write_text(path.read_text() + "3,0.5\n")
    edited = path.read_text()
    with pytest.raises(InputError, match=r"gain_ie\.csv has changed since dpriv attack wrote it"):
        save_gain(gain, out / "led", "ie")
    res = run("attack", out / "led", "--history", out / "history.csv", "--knowledge", "ie")
    assert_refused(res, "has changed since dpriv attack wrote it", "write this attack elsewhere with --out")
    assert path.read_text() == edited
    path.unlink()
    foreign = gain_path(out / "led", "dk-1")
    foreign.write_text("my notes\n")
    with pytest.raises(InputError, match="exists and no dpriv attack recorded writing it"):
        save_gain(gain, out / "led", "dk-1")
    res = run("attack", out / "led", "--history", out / "history.csv", "--knowledge", "dk-1")
    assert_refused(res, "no dpriv attack recorded writing it", "move it away first")
    assert foreign.read_text() == "my notes\n"
    foreign.unlink()


@quiet
def test_write_pbc_and_generate_pbc_replace_only_their_own_files(tmp_path):
    path = visits_csv(tmp_path, ROWS)
    out = tmp_path / "out"
    out.mkdir()
    (out / "policy.toml").write_text("# mine\n")
    with pytest.raises(InputError, match=r"already holds \['policy.toml'\]"):
        write_pbc(out, path, min_view_size=1)
    res = run("generate", "pbc", "--path", path, "--out", out, "--force")
    assert_refused(res, r"holds \['policy.toml'\], changed since dpriv wrote it or not written by dpriv")
    assert (out / "policy.toml").read_text() == "# mine\n" and not (out / "history.parquet").exists()
    (out / "policy.toml").unlink()
    write_pbc(out, path, min_view_size=1)
    with pytest.raises(InputError, match="already holds"):
        write_pbc(out, path, min_view_size=1)
    write_pbc(out, path, min_view_size=1, overwrite=True)  # its own files, unchanged
    res = run("generate", "pbc", "--path", path, "--out", tmp_path / "nope" / "out")
    assert_refused(res, rf"folder {tmp_path / 'nope'} does not exist; create it first")
    assert not (tmp_path / "nope").exists()


# -- 6. the date hint in release ---------------------------------------------------------------------
def test_release_says_the_date_hint_as_anonymize_does(tmp_path):
    rng = np.random.default_rng(0)
    n = 16
    days = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 300, 2 * n), unit="D")
    h = pd.DataFrame(
        {
            "rid": np.tile(np.arange(n), 2),
            "view": np.repeat([1, 2], n),
            "age": rng.integers(20, 60, 2 * n),
            "adm": days.strftime("%Y-%m-%d"),
            "s": rng.choice(["a", "b", "c"], 2 * n),
        }
    )
    h.to_csv(tmp_path / "h.csv", index=False)
    flags = ["--id", "rid", "--time", "view", "--qi", "age,adm", "--sensitive", "s", "--k", "2"]
    hint = r"'adm' looks like dates: pass --date adm to release it as date intervals"
    res = run("release", tmp_path / "h.csv", "--ledger", tmp_path / "led", *flags, "--t", "1", "--j", "1")
    assert res.exit_code in (0, 2), res.output
    assert len(re.findall(hint, res.stderr)) == 1, res.stderr
    res = run("release", tmp_path / "h.csv", "--ledger", tmp_path / "led2", *flags, "--date", "adm")
    assert "looks like dates" not in res.output


# -- session 9's pass: option errors, an unknown defender, the writability probe -----------------------
def test_an_unknown_option_value_gets_no_policy_advice(small):
    args = ["--history", small / "h12.csv", "--knowledge", "snapshot", "--out", small / "g.csv"]
    for option in ("--membership", "--revision"):
        res = run("attack", small / "led", *args, option, "foo")
        out = assert_refused(res, r"foo")
        assert "pass --policy" not in out


def test_an_unknown_defender_names_the_knowledge_entries(tmp_path):
    from dpriv.sources import defender_knowledge

    mh = medical_history(n_views=1, view_size=50, seed=0)
    policy = ReleasePolicy.from_toml(write_history(tmp_path, mh))

    def named(source):
        return policy.with_overrides(knowledge={**policy.knowledge, "defender": source})

    with pytest.raises(PolicyError, match=r"defender = 'dkx' is neither an entry of \[knowledge\] \(\['dk'"):
        defender_knowledge(named("dkx"))
    assert defender_knowledge(named("dk-1")).tables is not None


def test_a_refused_release_leaves_the_ledger_folder_time_as_it_was(small):
    import os

    os.utime(small / "led", ns=(10**18, 10**18))
    before = snapshot(small / "led")
    res = run("release", small / "h123.csv", "--ledger", small / "led")  # view 3: smaller than k
    assert_refused(res, r"k = 2 is larger than the view")
    assert (small / "led").stat().st_mtime_ns == 10**18 and snapshot(small / "led") == before


def test_a_qi_flag_narrows_the_policy_file_with_its_entries(tmp_path):
    mh = medical_history(n_views=2, view_size=60, seed=0)
    path = write_history(tmp_path, mh)
    pol = ReleasePolicy.from_toml(path, qi=["age", "gender"])
    assert pol.qi == ["age", "gender"] and "weight" not in pol.domains
    assert pol.domains["age"] == ReleasePolicy.from_toml(path).domains["age"]  # the kept ones stay
    # a typo is then named by the column check, not as a [domains] entry of the file
    res = run("release", tmp_path / "history.parquet", "--ledger", tmp_path / "led", "--policy", path,
              "--qi", "agee,gender")  # fmt: skip
    out = assert_refused(res, r"missing column\(s\) \['agee'\]")
    assert "Value error" not in out and not (tmp_path / "led").exists()
    res = run("release", tmp_path / "history.parquet", "--ledger", tmp_path / "led", "--policy", path,
              "--qi", "age,gender", "--t", "1", "--j", "10")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert set(Ledger(tmp_path / "led").read_view(1).columns) >= {"age_min", "gender_min"}
    assert not any(c.startswith("weight") for c in Ledger(tmp_path / "led").read_view(1).columns)


def test_k_larger_than_every_view_asks_for_a_smaller_k_not_suppress(small):
    """A fresh user's drill (s40, 7): k larger than every view was told to set small_view =
    "suppress", which would publish only empty releases. It names the largest view instead."""
    res = run(
        "release", small / "h12.csv", "--ledger", small / "new", "--policy", small / "pol.toml", "--k", 100000
    )
    out = assert_refused(
        res,
        r"k = 100000 exceeds every view of the history \(the largest, view = \d, holds 12 tuples\): "
        r"choose k of at most 12",
    )
    assert 'suppress" in [privacy]' not in out and "--small-view suppress" not in out
    assert not (small / "new").exists()
