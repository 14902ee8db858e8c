"""``python -m ibdtool.cli``: the same command as the ``ibdtool`` console script."""

from ibdtool.cli.main import main

main()
