"""``ibdtool copy`` over ssh, against a real sshd on 127.0.0.1.

Each session starts Debian's ``/usr/sbin/sshd`` with its own host key, an authorized test key
and a free port (``-D -f`` a temporary config), and stops it by pid. The client runs the system
``ssh`` with a temporary config and known_hosts (passed through ``IBDTOOL_SSH``), so the user's
own ssh files are never read or written. The remote end is this machine's ``python3`` as an ssh
login finds it. Expected values come from the files themselves (bytes, ``st_blocks``, a
SEEK_DATA walk written here), never from ibdtool's own report.
"""

from __future__ import annotations

import ast
import contextlib
import errno
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli_runner import IBDTOOL as CLI_MODULE
from tests.cli_runner import cli_env, run_ibdtool
from tests.conftest import sparse_copy
from tests.processes import children
from tests.samples_manifest import sample

REPO = Path(__file__).resolve().parents[1]
_SCRIPT = Path(sys.executable).with_name("ibdtool")
IBDTOOL = [str(_SCRIPT)] if _SCRIPT.exists() else CLI_MODULE
SSHD = "/usr/sbin/sshd"
HOST = "ibdtest"
NOPY_HOST = "ibdtest-nopython"


# --- a throwaway sshd ----------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class ThrowawaySshd:
    """sshd on 127.0.0.1 for the current user, configured and keyed inside ``root``."""

    root: Path
    alias: str
    set_env: str = ""
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    @property
    def ssh_config(self) -> Path:
        return self.root / "ssh_config"

    @property
    def ssh_command(self) -> str:
        return f"ssh -F {self.ssh_config}"

    def start(self) -> ThrowawaySshd:
        for tool in (SSHD, shutil.which("ssh"), shutil.which("ssh-keygen")):
            if not tool or not os.access(tool, os.X_OK):
                pytest.fail(
                    "openssh-server and openssh-client are needed (scripts/setup.sh --test)"
                )
        r = self.root
        r.mkdir(parents=True, exist_ok=True)
        for key in ("host_key", "client_key"):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(r / key)], check=True
            )
        shutil.copy(r / "client_key.pub", r / "authorized_keys")
        self.port = _free_port()
        user = (
            os.environ.get("USER")
            or subprocess.run(
                ["id", "-un"], capture_output=True, text=True, check=True
            ).stdout.strip()
        )
        (r / "sshd_config").write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {r}/host_key\n"
            f"PidFile {r}/sshd.pid\nAuthorizedKeysFile {r}/authorized_keys\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nStrictModes no\n"
            "UsePAM no\nLogLevel ERROR\nSubsystem sftp internal-sftp\n"
            + (f"SetEnv {self.set_env}\n" if self.set_env else "")
        )
        host_pub = (r / "host_key.pub").read_text().strip()
        (r / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {host_pub}\n")
        self.ssh_config.write_text(
            f"Host {self.alias}\n  HostName 127.0.0.1\n  Port {self.port}\n  User {user}\n"
            f"  IdentityFile {r}/client_key\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {r}/known_hosts\n  GlobalKnownHostsFile /dev/null\n"
            "  StrictHostKeyChecking yes\n  BatchMode yes\n  ConnectTimeout 20\n"
        )
        if os.geteuid() == 0:  # sshd insists on its privilege separation directory
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        self.proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(r / "sshd_config")],
            stderr=open(r / "sshd.log", "wb"),  # noqa: SIM115
        )
        deadline = time.monotonic() + 120  # a login's key exchange waits for a core under load
        while True:
            probe = subprocess.run(
                ["ssh", "-F", str(self.ssh_config), self.alias, "true"], capture_output=True
            )
            if probe.returncode == 0 or (self.set_env and probe.returncode == 127):
                return self
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = (r / "sshd.log").read_text(errors="replace")
                self.stop()
                pytest.fail(f"sshd did not come up: {probe.stderr.decode()!r} {log[-500:]!r}")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None


@contextlib.contextmanager
def throwaway_sshd(root: Path, alias: str = HOST, set_env: str = "") -> Iterator[ThrowawaySshd]:
    sshd = ThrowawaySshd(root, alias, set_env).start()
    try:
        yield sshd
    finally:
        sshd.stop()


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThrowawaySshd]:
    with throwaway_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


@pytest.fixture(scope="session")
def sshd_without_python(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThrowawaySshd]:
    """A host whose login environment finds no python3 (PATH and HOME point at empty dirs)."""
    root = tmp_path_factory.mktemp("sshd-nopy")
    (root / "bin").mkdir()
    (root / "home").mkdir()
    env = f"PATH={root}/bin HOME={root}/home"
    with throwaway_sshd(root, NOPY_HOST, env) as server:
        yield server


# --- helpers -------------------------------------------------------------------------------------


def run(args: list[str], sshd: ThrowawaySshd, **kw: object) -> subprocess.CompletedProcess[str]:
    env = cli_env(IBDTOOL_SSH=sshd.ssh_command)
    return run_ibdtool(*args, command=IBDTOOL, env=env, timeout=300, **kw)


def spawn(args: list[str], **env: str) -> subprocess.Popen[str]:
    """ibdtool running in the background, to be interrupted."""
    return subprocess.Popen(
        [*IBDTOOL, *args],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO), **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def allocated(path: Path) -> int:
    return os.stat(path).st_blocks * 512


def seek_data_ranges(path: Path) -> list[tuple[int, int]]:
    """The data map walked here, independently of ibdtool."""
    out: list[tuple[int, int]] = []
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        pos = 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:
                    break
                raise
            end = os.lseek(fd, start, os.SEEK_HOLE)
            out.append((start, end))
            pos = end
    finally:
        os.close(fd)
    return out


def synced_sparse_copy(src: Path, dst: Path) -> Path:
    sparse_copy(src, dst)
    fd = os.open(dst, os.O_RDONLY)
    os.fsync(fd)  # settle delayed allocation so st_blocks counts the extent tree too
    os.close(fd)
    return dst


PC_SAMPLES = ["mariadb/p16k-pc_zlib.ibd", "mariadb/p16k-crc32_pc_lz4.ibd", "mysql80/zlib.ibd"]


# --- push and pull -------------------------------------------------------------------------------


@pytest.mark.parametrize("rel", PC_SAMPLES)
def test_push_and_pull_keep_bytes_and_holes(rel: str, sshd: ThrowawaySshd, tmp_path: Path) -> None:
    src = synced_sparse_copy(sample(rel), tmp_path / "src.ibd")
    os.chmod(src, 0o640)
    os.utime(src, ns=(1_600_000_000_000_000_000, 1_600_000_000_123_456_789))
    remote_dir = tmp_path / "remote"
    remote_dir.mkdir()
    push = run(["copy", str(src), f"{HOST}:{remote_dir}/"], sshd)
    assert push.returncode == 0, push.stderr
    pushed = remote_dir / "src.ibd"
    pulled = tmp_path / "back" / "t.ibd"
    pulled.parent.mkdir()
    pull = run(["copy", "--json", f"{HOST}:{pushed}", str(pulled)], sshd)
    assert pull.returncode == 0, pull.stderr
    ranges = seek_data_ranges(src)
    for copy in (pushed, pulled):
        assert sha(copy) == sha(src)
        st, cst = os.stat(src), os.stat(copy)
        assert (cst.st_size, cst.st_mode & 0o7777, cst.st_mtime_ns) == (
            st.st_size,
            0o640,
            1_600_000_000_123_456_789,
        )
        assert abs(allocated(copy) - allocated(src)) <= 4096 * len(ranges), copy
    assert not [p for p in remote_dir.iterdir() if p.name != "src.ibd"]  # no part, no state


def test_path_with_spaces_quotes_and_semicolon_is_copied_not_run(
    sshd: ThrowawaySshd, tmp_path: Path
) -> None:
    src = synced_sparse_copy(sample("mariadb/p16k-pc_zlib.ibd"), tmp_path / "a b;c.ibd")
    canary = "ibdtool-test-canary"  # a remote shell would run in the home directory
    odd = tmp_path / f"dir with 'quotes' \"and\" ;touch {canary};$(touch {canary})`touch x`"
    odd.mkdir()
    res = run(["copy", str(src), f"{HOST}:{odd}/"], sshd)
    assert res.returncode == 0, res.stderr
    back = tmp_path / "back.ibd"
    res = run(["copy", f"{HOST}:{odd}/a b;c.ibd", str(back)], sshd)
    assert res.returncode == 0, res.stderr
    assert sha(odd / "a b;c.ibd") == sha(src) == sha(back)
    for where in (Path.home(), REPO, tmp_path, odd):
        assert not (where / canary).exists()
        assert not (where / "x").exists()


def test_densified_push_is_repunched_at_the_far_end(sshd: ThrowawaySshd, tmp_path: Path) -> None:
    rel = "mariadb/p16k-pc_zlib.ibd"
    dense = tmp_path / "dense.ibd"
    dense.write_bytes(sample(rel).read_bytes())  # every byte written: no holes
    live = _manifest_live(rel)
    remote = tmp_path / "remote.ibd"
    res = run(["copy", str(dense), f"{HOST}:{remote}"], sshd)
    assert res.returncode == 0, res.stderr
    assert sha(remote) == sha(dense)
    assert abs(allocated(remote) - live) <= live // 100
    pulled = tmp_path / "pulled.ibd"  # pull of a dense remote file: re-punched here
    res = run(["copy", f"{HOST}:{dense}", str(pulled)], sshd)
    assert res.returncode == 0, res.stderr
    assert sha(pulled) == sha(dense)
    assert abs(allocated(pulled) - live) <= live // 100


def _manifest_live(rel: str) -> int:
    from tests.samples_manifest import live_allocated

    return live_allocated(rel)


def test_zstd_when_the_remote_python_has_it(sshd: ThrowawaySshd, tmp_path: Path) -> None:
    """The venv's python has zstandard: the stream is compressed, the copy identical."""
    src = tmp_path / "plain.ibd"
    src.write_bytes(sample("mariadb/p16k-plain.ibd").read_bytes())
    remote = tmp_path / "r.ibd"
    res = run(
        ["copy", "--json", "--remote-python", sys.executable, str(src), f"{HOST}:{remote}"],
        sshd,
    )
    assert res.returncode == 0, res.stderr
    import json

    doc = json.loads(res.stdout)
    assert doc["codec"] == "zstd"
    assert doc["bytes_sent"] < doc["bytes_read"] / 2  # plain InnoDB pages compress well
    assert sha(remote) == sha(src)


def test_remote_to_remote_relays_through_here(sshd: ThrowawaySshd, tmp_path: Path) -> None:
    src = synced_sparse_copy(sample("mysql57/lz4.ibd"), tmp_path / "one.ibd")
    dst = tmp_path / "two.ibd"
    res = run(["copy", f"{HOST}:{src}", f"{HOST}:{dst}"], sshd)
    assert res.returncode == 0, res.stderr
    assert sha(dst) == sha(src)
    assert abs(allocated(dst) - allocated(src)) <= 4096 * len(seek_data_ranges(src))


def test_several_files_to_a_remote_directory(sshd: ThrowawaySshd, tmp_path: Path) -> None:
    names = ["mysql80/zlib.ibd", "mysql80/lz4.ibd", "mariadb/p64k-pc_zlib.ibd"]
    srcs = [synced_sparse_copy(sample(n), tmp_path / Path(n).name) for n in names]
    out = tmp_path / "out"
    out.mkdir()
    res = run(["copy", *map(str, srcs), f"{HOST}:{out}"], sshd)
    assert res.returncode == 0, res.stderr
    for s in srcs:
        assert sha(out / s.name) == sha(s)


def test_remote_destination_exists_needs_force(sshd: ThrowawaySshd, tmp_path: Path) -> None:
    src = synced_sparse_copy(sample("mysql80/zlib.ibd"), tmp_path / "s.ibd")
    dst = tmp_path / "d.ibd"
    dst.write_bytes(b"keep me")
    res = run(["copy", str(src), f"{HOST}:{dst}"], sshd)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"ibdtool: error: {HOST}: {dst}: already exists (use --force to overwrite)"
    ]
    assert dst.read_bytes() == b"keep me"
    res = run(["copy", "--force", str(src), f"{HOST}:{dst}"], sshd)
    assert res.returncode == 0, res.stderr
    assert sha(dst) == sha(src)


# --- interrupted, then resumed -------------------------------------------------------------------


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _make_sparse_file(path: Path, mib: int, seed: int) -> None:
    import random

    rng = random.Random(seed)
    with open(path, "wb") as f:
        f.truncate(mib << 20)
        for i in range(mib):
            if rng.random() < 0.5:
                f.seek(i << 20)
                f.write(rng.randbytes(1 << 20))


def _wait_for(cond: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.1)


def test_killed_ssh_leaves_no_final_file_and_resume_finishes(
    sshd: ThrowawaySshd, tmp_path: Path
) -> None:
    src = tmp_path / "big.bin"
    _make_sparse_file(src, 48, seed=7)
    remote_dir = tmp_path / "remote"
    remote_dir.mkdir()
    final = remote_dir / "big.bin"
    part = remote_dir / ".big.bin.ibdtool-part"
    state = remote_dir / ".big.bin.ibdtool-part.json"
    proc = spawn(
        ["copy", "--bwlimit", "4M", str(src), f"{HOST}:{remote_dir}/"],
        IBDTOOL_SSH=sshd.ssh_command,
    )
    try:
        _wait_for(lambda: state.exists() and b'"windows": [' in state.read_bytes()
                  and state.read_bytes().count(b",") > 8)  # fmt: skip
        ssh = [p for p in children(proc.pid) if _comm(p) == "ssh"]
        assert len(ssh) == 1, ssh
        os.kill(ssh[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 2
    assert "connection lost" in err and "--resume" in err, err
    assert not final.exists()
    _wait_for(lambda: not _agent_running(remote_dir))
    assert part.exists() and state.exists()
    res = run(["copy", "--resume", "--json", str(src), f"{HOST}:{remote_dir}/"], sshd)
    assert res.returncode == 0, res.stderr
    import json

    doc = json.loads(res.stdout)
    assert 0 < doc["resumed_bytes"] < doc["plan_bytes"]
    assert doc["bytes_read"] == doc["plan_bytes"] - doc["resumed_bytes"]
    assert sha(final) == sha(src)
    assert abs(allocated(final) - allocated(src)) <= 4096 * len(seek_data_ranges(src))
    assert sorted(p.name for p in remote_dir.iterdir()) == ["big.bin"]


def _agent_running(directory: Path) -> bool:
    """An agent still holds the part file open (it is finishing after the link broke)."""
    part = directory / ".big.bin.ibdtool-part"
    if not part.exists():
        return False
    target = os.stat(part)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    st = os.stat(fd)
                    if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
                        return True
    return False


# --- bad input over ssh --------------------------------------------------------------------------


def test_remote_without_python3_one_line_nothing_left(
    sshd_without_python: ThrowawaySshd, tmp_path: Path
) -> None:
    src = synced_sparse_copy(sample("mysql80/zlib.ibd"), tmp_path / "s.ibd")
    other = synced_sparse_copy(sample("mysql80/lz4.ibd"), tmp_path / "t.ibd")
    dst_dir = tmp_path / "d"
    dst_dir.mkdir()
    # two files, one host that cannot run the agent: one line, one attempt
    res = run(["copy", str(src), str(other), f"{NOPY_HOST}:{dst_dir}/"], sshd_without_python)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert lines == [
        f"ibdtool: error: {NOPY_HOST}: python3 not found on the remote host (ibdtool runs a "
        "small python3 program there; install python3 or pass --remote-python PATH)"
    ]
    assert list(dst_dir.iterdir()) == []


def test_remote_missing_source_and_missing_directory(sshd: ThrowawaySshd, tmp_path: Path) -> None:
    missing = tmp_path / "nope.ibd"
    res = run(["copy", f"{HOST}:{missing}", str(tmp_path / "x.ibd")], sshd)
    assert (res.returncode, res.stderr.strip()) == (
        2,
        f"ibdtool: error: {HOST}: {missing}: no such file or directory",
    )
    src = synced_sparse_copy(sample("mysql80/zlib.ibd"), tmp_path / "s.ibd")
    res = run(["copy", str(src), f"{HOST}:{tmp_path}/no/such/dir/"], sshd)
    assert (res.returncode, res.stderr.strip()) == (
        2,
        f"ibdtool: error: {HOST}: {tmp_path}/no/such/dir/: no such directory",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.ibd"]


# --- the agent stays runnable by old python3 -----------------------------------------------------


def test_agent_source_is_python36_compatible() -> None:
    """RHEL 8's python3 is 3.6: no annotations, no 3.7+ syntax, stdlib imports only."""
    path = REPO / "ibdtool" / "copy" / "agent.py"
    tree = ast.parse(path.read_text(), feature_version=(3, 6))
    # 3.14's zstd and ISA-L's CRC-32, imported if there
    stdlib = set(sys.stdlib_module_names) | {"compression", "isal"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.module != "__future__", "from __future__ needs 3.7"
            assert (node.module or "").split(".")[0] in stdlib, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                assert alias.name.split(".")[0] in stdlib | {"zstandard"}, alias.name
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.returns is None, f"{node.name}: annotations need care on 3.6"
            assert all(a.annotation is None for a in node.args.args), node.name
        elif isinstance(node, ast.AnnAssign):
            raise AssertionError(f"line {node.lineno}: variable annotation")
        elif isinstance(node, ast.NamedExpr):
            raise AssertionError(f"line {node.lineno}: walrus needs 3.8")
