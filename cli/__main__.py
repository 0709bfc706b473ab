"""``python -m ardselect_cli``: the same as the ``ardselect`` command."""

from .main import app

app(prog_name="ardselect")
