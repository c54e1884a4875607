"""A policy value out of its range is one ``error:`` line (README: "an out-of-range value ... one
``error:`` line"), naming the flag, the value as typed and where the policy came from: ``dpriv
release ... --t -1`` said ``error: invalid policy (policy file p.toml with --t):`` and, on a second
line, ``t: must be a number in [0, 1], got -1.0``; ``--j 1e400`` said ``got inf``, then ``not 'inf'``:
the value is quoted as the flag or the policy file gave it."""

import pytest
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.cli.policy_message import one_line_policy


@pytest.fixture
def files(tmp_path):
    (tmp_path / "h.csv").write_text("respondent_id,view,age,exam_result\n1,1,50,a\n")
    (tmp_path / "p.toml").write_text(
        '[columns]\nid = "respondent_id"\ntime = "view"\nqi = ["age"]\nsensitive = "exam_result"\n'
        "[privacy]\nk = 2\nt = 0.5\nj = 1.0\n"
    )
    return tmp_path


def refused(files, *flags):
    args = ["release", files / "h.csv", "--ledger", files / "L", "--policy", files / "p.toml", *flags]
    res = CliRunner().invoke(app, [str(a) for a in args], prog_name="dpriv")
    assert res.exit_code == 2 and not (files / "L").exists(), res.output
    return [line for line in res.output.splitlines() if line.startswith(("error:", "  "))]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--t", "-1"], "--t must be a number in [0, 1], not '-1' (policy file {p} with --t)"),
        (["--t", "nan"], "--t must be a number in [0, 1], not 'nan' (policy file {p} with --t)"),
        (["--t", "1.5"], "--t must be a number in [0, 1], not '1.5' (policy file {p} with --t)"),
        (
            ["--retro-max-gain", "-1"],
            "--retro-max-gain must be a number in (0, 1], not '-1' (policy file {p} with --retro-max-gain)",
        ),
        (
            ["--j", "1e400"],
            "--j must be a number in [0, inf), not '1e400': too large to be a finite number "
            "(policy file {p} with --j)",
        ),
        (["--t", "2.50"], "--t must be a number in [0, 1], not '2.50' (policy file {p} with --t)"),
        (["--j", "inf"], "--j must be a number in [0, inf), not 'inf' (policy file {p} with --j)"),
        # a flag given beside the bad one: the bad one named as the flag still
        (
            ["--k", "3", "--t", "-0.5"],
            "--t must be a number in [0, 1], not '-0.5' (policy file {p} with --k, --t)",
        ),
    ],
)
def test_one_bad_flag_value_is_one_error_line(files, flags, said):
    assert refused(files, *flags) == ["error: " + said.format(p=files / "p.toml")]


def test_a_bad_value_of_the_file_names_the_key_and_several_problems_stay_a_line_each(files):
    text = (files / "p.toml").read_text().replace("t = 0.5", "t = 2")
    (files / "p.toml").write_text(text)
    p = files / "p.toml"
    assert refused(files) == [f"error: t must be a number in [0, 1], not '2' (policy file {p})"]
    (files / "p.toml").write_text(text.replace("t = 2", "t = 0.5").replace("j = 1.0", "j = 1e400  # big"))
    assert refused(files, "--k", "3") == [
        f"error: j must be a number in [0, inf), not '1e400': too large to be a finite number "
        f"(policy file {p} with --k)"
    ]
    (files / "p.toml").write_text(text.replace("t = 2", "t = 1_0.0"))  # TOML's digit separator
    assert refused(files) == [f"error: t must be a number in [0, 1], not '1_0.0' (policy file {p})"]
    (files / "p.toml").write_text(text)
    assert refused(files, "--j", "-1") == [
        f"error: invalid policy (policy file {p} with --j):",
        "  t must be a number in [0, 1], not '2'",
        "  --j must be a number in [0, inf), not '-1'",
    ]


def test_several_bad_values_and_a_table_are_each_quoted_as_typed_in_the_file(files):
    """A drill: one bad value was quoted as typed, but of two each line showed the number read
    (``got -1.0`` for ``-1e0``, ``got inf`` for ``1e400``), and a table Python's repr (``{'a': 1}``
    for ``{a = 1}``)."""
    p, text = files / "p.toml", (files / "p.toml").read_text()
    p.write_text(text.replace("t = 0.5", "t = -1e0").replace("j = 1.0", "j = 1e400  # big"))
    assert refused(files) == [
        f"error: invalid policy (policy file {p}):",
        "  t must be a number in [0, 1], not '-1e0'",
        "  j must be a number in [0, inf), not '1e400': too large to be a finite number",
    ]
    p.write_text(text.replace("t = 0.5", "t = {a = 1}"))
    assert refused(files) == [f"error: t must be a number, not '{{a = 1}}' (policy file {p})"]
    p.write_text(text.replace("t = 0.5", "t = [0.5, 1]").replace("j = 1.0", "j = -2.50"))
    assert refused(files) == [
        f"error: invalid policy (policy file {p}):",
        "  t must be a number, not '[0.5, 1]'",
        "  j must be a number in [0, inf), not '-2.50'",
    ]
    p.write_text(text.replace("t = 0.5\n", "") + "[privacy.t]\na = 1\n")  # a table of its own
    assert refused(files) == [f"error: t must be a number, not the table [privacy.t] (policy file {p})"]


def test_other_one_problem_refusals_are_one_line_and_other_messages_unchanged():
    said = "invalid policy (policy file p.toml with --qi):\n  columns ['a'] are used twice"
    assert (
        one_line_policy(said) == "invalid policy (policy file p.toml with --qi): columns ['a'] are used twice"
    )
    # --tt is not --t: the key is named as in the file
    said = "invalid policy (flags --tt):\n  t: must be a number in [0, 1], got 2"
    assert one_line_policy(said) == "t must be a number in [0, 1], not '2' (flags --tt)"
    assert one_line_policy("no policy file: give --policy FILE") == "no policy file: give --policy FILE"
    # the value as given, when known: a number read as inf is said too large unless typed inf
    said = "invalid policy (flags --j):\n  j: must be a number in [0, inf), got inf"
    too_large = "--j must be a number in [0, inf), not '{}': too large to be a finite number (flags --j)"
    assert one_line_policy(said, lambda name, where: "1E+400") == too_large.format("1E+400")
    assert one_line_policy(said) == too_large.format("inf")  # not known: as before
    assert (
        one_line_policy(said, lambda name, where: "+inf")
        == "--j must be a number in [0, inf), not '+inf' (flags --j)"
    )
    assert one_line_policy(said, lambda name, where: "7") == too_large.format("inf")  # not the number shown


def test_a_value_outside_a_keys_choices_is_quoted_with_the_closest_choice(files):
    """A fresh user's drill (s40, 6): ``grouping = "top-down"`` said pydantic's ``Input should be
    'scan' or 'topdown'``, neither quoting the value nor offering the closest choice, unlike a key."""
    text = (files / "p.toml").read_text() + '[release]\ngrouping = "top-down"\n'
    (files / "p.toml").write_text(text)
    assert refused(files) == [
        "error: grouping must be 'scan', 'topdown' or 'literal' (did you mean 'topdown'?), not 'top-down' "
        f"(policy file {files / 'p.toml'})"
    ]
