"""A fresh user's drill in Jupyter (s37): her interrupt (``_thread.interrupt_main``) inside a
numba kernel came out of ``release_history`` as ``SystemError: CPUDispatcher(...) returned a
result with an exception set``, chained from the KeyboardInterrupt, which her ``except
KeyboardInterrupt`` missed (the CLI already mapped it). The public entry points now raise the
interrupt itself (:func:`dpriv.pending_interrupt.as_interrupt`). A fake kernel raises that
chained SystemError here: no timing."""

import pandas as pd
import pytest

from dpriv.datasets import medical_history, write_history
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy

#: What numba's dispatcher raises when a KeyboardInterrupt arrives while it runs a kernel.
_NUMBA = "CPUDispatcher(<function split_rows at 0x7f>) returned a result with an exception set"


def _interrupted_kernel(*args, **kwargs):
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as exc:
        raise SystemError(_NUMBA) from exc


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """Two views of 60 and their policy (loose enough to release everything)."""
    root = tmp_path_factory.mktemp("int")
    mh = medical_history(n_views=2, view_size=60, seed=0)
    data = write_history(root / "data", mh)
    return mh.history, ReleasePolicy.from_toml(data, t=1.0, j=1.0, k=3, max_suppression=1.0)


def test_the_decorator_raises_the_interrupt_and_passes_other_errors():
    from dpriv.pending_interrupt import as_interrupt, interrupt_of

    with pytest.raises(KeyboardInterrupt) as err:
        as_interrupt(_interrupted_kernel)()
    assert type(err.value) is KeyboardInterrupt and err.value.__suppress_context__

    @as_interrupt
    def broken():
        raise SystemError(_NUMBA)  # no interrupt in its chain: dpriv's own fault, as it is

    with pytest.raises(SystemError, match="returned a result"):
        broken()
    assert interrupt_of(ValueError("x")) is None


def test_release_history_interrupted_in_a_kernel_raises_keyboard_interrupt(small, tmp_path, monkeypatch):
    import dpriv.release as release
    from dpriv.release import release_history

    history, policy = small
    real, calls = release.generalize_view, []

    def second_view_interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            _interrupted_kernel()
        return real(*args, **kwargs)

    monkeypatch.setattr(release, "generalize_view", second_view_interrupted)
    with pytest.raises(KeyboardInterrupt):
        release_history(history, policy, tmp_path / "led")
    assert len(calls) == 2
    assert [e["index"] for e in Ledger(tmp_path / "led").committed()] == [1]  # the first release stays


def test_anonymize_and_attack_interrupted_in_a_kernel_raise_keyboard_interrupt(small, tmp_path, monkeypatch):
    import dpriv.attack as attack_module
    import dpriv.one_view as one_view
    from dpriv.attack import attack
    from dpriv.release import anonymize, release_history

    history, policy = small
    ledger = release_history(history, policy, tmp_path / "led")
    with monkeypatch.context() as m:
        m.setattr(one_view, "generalize_view", _interrupted_kernel)
        with pytest.raises(KeyboardInterrupt):
            anonymize(history[history["view"] == 1].drop(columns="view"), policy)
    with monkeypatch.context() as m:
        m.setattr(attack_module, "masked_omega", _interrupted_kernel)
        with pytest.raises(KeyboardInterrupt):
            attack(ledger, history, policy, "dk")
    assert isinstance(attack(ledger, history, policy, "dk"), pd.DataFrame)  # unpatched: runs


def test_ctrl_c_while_typer_builds_the_command_is_one_line_exit_130(monkeypatch, capsys):
    """A Ctrl-C 3.8 s into `dpriv release` (inside typer's get_params_from_function, before
    dpriv's handler) printed a traceback; README: no exit prints one without --debug."""
    import typer.main

    import dpriv.__main__ as entry

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    def leave(code):  # the real one ends the process (os._exit)
        raise SystemExit(code)

    monkeypatch.setattr(typer.main, "get_command", interrupted)
    monkeypatch.setattr(entry, "leave", leave)
    monkeypatch.setattr("sys.argv", ["dpriv", "status", "nowhere"])
    try:
        with pytest.raises(SystemExit) as done:
            entry.main()
    except KeyboardInterrupt:  # not let through to pytest, which would stop the session
        pytest.fail("the KeyboardInterrupt left dpriv's entry point (a traceback)")
    assert done.value.code == 130
    assert capsys.readouterr().err == "interrupted (Ctrl-C) while starting: nothing was read or written\n"
