"""Repository-level pytest set-up: the ``--runslow`` switch for reproduction runs marked ``slow``."""

import os

import pytest


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run tests marked slow (reproductions, seed sweeps)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow") or os.environ.get("ARDSELECT_RUNSLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow (CI runs them)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
