"""The ``ardselect`` command: the app, its callback, and one module per command.

A thin Typer layer over the public library API (``ardselect.rank_genes``, ``ardselect.get``,
``ardselect.io``, ``ardselect.pl``, ``ardselect.model``, ``ardselect.model_selection``):
``fit.py``, ``predict.py``, ``evaluate.py`` and ``example.py`` each hold one command, ``_options.py``
the options they share and ``_util.py`` errors, atomic outputs and progress. Heavy imports happen
inside the commands so that ``ardselect --help`` stays instant. Results go to files (or stdout for
``predict -o -``); the summary table goes to stdout; progress, warnings and errors go to stderr.
"""

from __future__ import annotations

import re
import sys
from typing import Annotated

import typer
from typer.core import TyperGroup

from ardselect import __version__

from .evaluate import evaluate
from .example import example
from .fit import fit
from .predict import predict

#: click's base of usage and parameter errors, as typer raises them (typer may vendor click).
_CLICK_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def usage_message(exc) -> str:
    """A usage error of click as one line: the option, what is wrong, where the help is."""
    text = " ".join(exc.format_message().split())
    text = re.sub(r"^Invalid value for ('[^']+')(?: / '[^']+')*: (?:Value error, )?",
                  lambda m: f"{m.group(1).strip(chr(39))}: ", text)
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and getattr(ctx, "command_path", None):
        text = f"{text.rstrip('.')} (see '{ctx.command_path} --help')"
    return text


class _OneLineErrors(TyperGroup):
    """The command group: click's usage errors become one ``ardselect: error:`` line (exit 2)."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except _CLICK_ERROR as exc:
            from ._util import error_line

            if type(exc).__name__ == "NoArgsIsHelpError":  # no arguments at all: the help
                exc.show()
                sys.exit(exc.exit_code)
            error_line(usage_message(exc))
            sys.exit(exc.exit_code)
        except typer.Abort:
            from ._util import error_line

            error_line("aborted")
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    name="ardselect",
    cls=_OneLineErrors,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


#: The text of ``ardselect --help`` (``\\b`` keeps click from rewrapping the criteria list).
MAIN_HELP = """Select the few genes that predict a phenotype: ARD probit classification by EP.

ardselect fits a sparse Bayesian (ARD) probit classifier by Expectation Propagation along an
add/delete path of genes and keeps one model of the path, chosen by --criterion:

\b
  cv        (default) the number of genes of lowest held-out log-loss in an inner
            cross-validation along the path, with calibrated probabilities
  loo       the smallest EP leave-one-out error (predictive ARD, Qi et al. 2004); among
            equal errors, the smallest LOO error probability, then the fewest genes
  loo-prob  the smallest EP leave-one-out error probability
  evidence  the largest EP evidence

Input: .h5ad, .zarr, CSV/TSV or GCT(+CLS). 'ardselect COMMAND --help' documents each command.

Exit codes: 0 success, 1 data/file/model error, 2 usage error, 130 interrupted (Ctrl-C),
143 terminated (SIGTERM), 129 hang-up (SIGHUP).
"""


def _version(value: bool):
    if value:
        typer.echo(f"ardselect {__version__}")
        raise typer.Exit()


@app.callback(help=MAIN_HELP)
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
):
    """The ``ardselect`` command group; its help is ``MAIN_HELP``."""


# Registered in this order, which is the order of ``ardselect --help``.
for command in (fit, predict, evaluate, example):
    app.command()(command)


if __name__ == "__main__":  # pragma: no cover
    app()
