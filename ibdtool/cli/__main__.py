"""``python -m ibdtool.cli``: the same command as the ``ibdtool`` console script (same name in
usage lines, and the same ``_IBDTOOL_COMPLETE`` variable for shell completion)."""

from ibdtool.cli.main import main

main(prog_name="ibdtool")
