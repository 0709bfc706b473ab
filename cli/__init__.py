"""Command line interface of ardselect (installed as the import package ``ardselect_cli``).

Run ``ardselect --help``; the entry point is :data:`ardselect_cli.main.app`.
"""
