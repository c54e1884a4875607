"""Jupyter helpers: the Dask dashboard as a link, a progress bar over the releases of a history
(with each release's steps), and the HTML report inline.

Plain HTML outputs (IPython's ``display``), no widget library: they render in JupyterLab,
classic Notebook, VS Code and in a saved notebook alike. IPython is imported only when a helper
is called (it comes with ``ipykernel``; dpriv itself does not need it).

>>> progress = ReleaseProgress(total=6)              # doctest: +SKIP
>>> release_history(history, policy, "ledger", on_release=progress)   # doctest: +SKIP
>>> show_report(write_report(ledger, "report.html"))  # doctest: +SKIP
"""

from __future__ import annotations

import html
import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dpriv.errors import InputError
from dpriv.report.explain import percent

#: Colours of the release steps in a progress row (``metrics.json`` ``seconds`` keys), in order.
_STEP_COLORS = ("#4f81bd", "#c0504d", "#9bbb59", "#8064a2", "#4bacc6", "#f79646", "#2c4f7c", "#7f7f7f")


def dashboard(client: Any):
    """A clickable link to the Dask dashboard of ``client`` (an ``IPython.display.HTML``).

    The dashboard is served only when ``bokeh`` is installed (``pip install bokeh``); the link
    says so when it is not. ``client._repr_html_()`` (the client as a cell's last line) shows the
    same link with the cluster's details.
    """
    from IPython.display import HTML

    if not hasattr(client, "dashboard_link") or not hasattr(client, "scheduler_info"):
        # dask_client() is a context manager: `client = dask_client()` holds no client yet
        given = (
            "a context manager (the client is what its with gives)"
            if hasattr(client, "__enter__")
            else repr(client)
        )
        raise InputError(
            f"dashboard() takes a distributed.Client (the one of `with dpriv.cluster.dask_client() as "
            f"client:`, or Client()), not {given}"
        )
    link = html.escape(str(client.dashboard_link))
    workers = len(client.scheduler_info().get("workers", {}))
    note = (
        ""
        if importlib.util.find_spec("bokeh")
        else ' <span style="color:#a00">(the dashboard needs bokeh: pip install bokeh)</span>'
    )
    return HTML(
        f'<p>Dask dashboard: <a href="{link}" target="_blank">{link}</a> '
        f"({workers} worker{'s' if workers != 1 else ''}){note}</p>"
    )


def _color(k: int) -> str:
    return _STEP_COLORS[k % len(_STEP_COLORS)]


class ReleaseProgress:
    """A progress bar over the releases of a history, for ``release_history(on_release=...)``.

    Displays (once, then updates in place) a ``<progress>`` bar of releases done out of
    ``total`` and one row per committed release: QI-groups, suppression (percent of the view),
    seconds, and a bar of its steps' seconds (``metrics.json`` ``seconds``: rbk, keys, shuffle,
    grouping, ..., write), so the slow step of every release is visible.

    Parameters
    ----------
    total : int
        Number of releases expected (e.g. the number of views).
    display : bool, default True
        Show it with IPython's ``display`` (False: only :meth:`html`, e.g. outside Jupyter).
    """

    def __init__(self, total: int, *, display: bool = True) -> None:
        self.total = int(total)
        self.rows: list[tuple[int, Mapping[str, Any]]] = []
        self._handle = None
        if display:
            from IPython.display import HTML
            from IPython.display import display as show

            self._handle = show(HTML(self.html()), display_id=True)

    def __call__(self, index: int, metrics: Mapping[str, Any]) -> None:
        """The ``on_release`` callback: record release ``index`` and redraw."""
        self.rows.append((int(index), metrics))
        if self._handle is not None:
            from IPython.display import HTML

            self._handle.update(HTML(self.html()))

    @property
    def done(self) -> int:
        return len(self.rows)

    def html(self) -> str:
        """The current state as an HTML fragment."""
        e = html.escape
        out = [
            f'<div class="dpriv-progress"><progress value="{self.done}" max="{self.total}" '
            f'style="width:24em"></progress> <b>{self.done} / {self.total} releases</b>'
        ]
        if self.rows:
            out.append('<table style="font-size:.85em;border-collapse:collapse">')
            out.append(
                "<tr><th>release</th><th>QI-groups</th><th>suppression</th><th>seconds</th>"
                '<th style="text-align:left">steps (width = seconds)</th></tr>'
            )
            for i, m in self.rows:
                steps = m.get("seconds") or {}
                steps = steps if isinstance(steps, Mapping) else {"total": float(steps)}
                total = sum(steps.values()) or 1.0
                bars = "".join(
                    f'<span title="{e(name)}: {sec:.2f} s" style="display:inline-block;height:.9em;'
                    f'width:{300 * sec / total:.1f}px;background:{_color(k)}"></span>'
                    for k, (name, sec) in enumerate(steps.items())
                )
                slow = max(steps, key=steps.get) if steps else "-"
                out.append(
                    f'<tr data-release="{i}"><td>{i}</td><td>{e(str(m.get("n_groups")))}</td>'
                    f"<td>{e(percent(m.get('suppression_rate')))}</td><td>{sum(steps.values()):.2f}</td>"
                    f"<td>{bars} slowest: {e(slow)}</td></tr>"
                )
            out.append("</table>")
        out.append("</div>")
        return "".join(out)


def show_report(path: str | Path, *, height: int = 900):
    """The HTML report at ``path`` inline in the notebook (an ``IPython.display.HTML`` holding
    an ``<iframe srcdoc=...>``: the page is self-contained, so the output is too)."""
    from IPython.display import HTML

    if not isinstance(path, str | Path) or isinstance(height, bool) or not isinstance(height, int):
        raise InputError(
            f"show_report() takes the path of a report page (str or Path) and a height in pixels "
            f"(int), not {path!r}, {height!r}"
        )
    path = Path(path)
    try:
        page = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else (exc.strerror or str(exc))
        raise InputError(
            f"show_report(): {path} cannot be shown ({why}); give the page dpriv report or "
            "write_report() wrote (report.html)"
        ) from None
    return HTML(  # in a <div>: IPython warns about a bare <iframe> output
        f'<div class="dpriv-report"><iframe srcdoc="{html.escape(page, quote=True)}" '
        f'title="dpriv release report" style="width:100%;height:{int(height)}px;border:1px solid #ccc">'
        "</iframe></div>"
    )
