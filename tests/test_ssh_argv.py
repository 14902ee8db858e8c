"""The ssh command line ``copy`` and ``report host:path`` run: keepalives unless the user says."""

from __future__ import annotations

from itertools import pairwise

from ibdtool.copy.remote import KEEPALIVE, SshConfig


def options_of(argv: list[str]) -> dict[str, str]:
    """The -o NAME=VALUE pairs before ``--`` (the first of each wins, as ssh reads them)."""
    out: dict[str, str] = {}
    for flag, opt in pairwise(argv):
        if flag == "--":
            break
        if flag == "-o":
            name, _, value = opt.partition("=")
            out.setdefault(name.lower(), value)
    return out


def test_a_silent_host_is_dropped_by_default() -> None:
    argv = SshConfig(("ssh", "-F", "conf")).argv("db1", "python3 -c x")
    assert argv[:3] == ["ssh", "-F", "conf"] and argv[-3:] == ["--", "db1", "python3 -c x"]
    assert options_of(argv) == {name.lower(): value for name, value in KEEPALIVE}


def test_the_users_options_win_and_are_not_doubled() -> None:
    cfg = SshConfig(("/usr/bin/ssh",), ("serveraliveinterval=3", "BatchMode=yes"))
    argv = cfg.argv("db1", "true")
    opts = options_of(argv)
    assert opts["serveraliveinterval"] == "3" and opts["batchmode"] == "yes"
    assert opts["serveralivecountmax"] == "4"
    assert sum(a.lower().startswith("serveraliveinterval") for a in argv) == 1


def test_another_command_gets_only_what_the_user_gave() -> None:
    argv = SshConfig(("my-wrapper",), ("BatchMode=yes",)).argv("db1", "true")
    assert options_of(argv) == {"batchmode": "yes"}
