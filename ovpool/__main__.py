"""``python -m ovpool``: the ``ovpool`` command."""

from ovpool.cli.app import main

main()
