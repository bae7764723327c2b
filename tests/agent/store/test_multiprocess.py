"""Two processes writing one state.db at once lose nothing and keep each session's order."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agent.store import SqliteSessionStore

ROOT = Path(__file__).resolve().parents[3]
BATCHES = 150

# Each writer announces it is ready, waits for "go" on stdin (so both write at the same time),
# then appends to one shared session and to its own session, one to three messages per batch.
WRITER = """
import sys
import structlog
structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))  # keep stdout for the protocol
from pathlib import Path
from agent.messages import user
from agent.store import SqliteSessionStore

name, path, batches = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
with SqliteSessionStore(path) as store:
    shared = store.ensure_session("shared", platform="web", chat_id="shared-chat")
    own = store.ensure_session("own:" + name, platform="web", chat_id="own-" + name)
    print("ready", flush=True)
    sys.stdin.readline()
    counter = 0
    for batch in range(batches):
        size = 1 + batch % 3
        texts = [f"{name} note {counter + i}" for i in range(size)]
        counter += size
        store.append(shared.id, [user(t) for t in texts])
        store.append(own.id, [user(t) for t in texts])
    print(counter, flush=True)
"""


def _start(name: str, path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, name, str(path), str(BATCHES)],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )


def test_two_processes_append_concurrently_without_loss(home: Path) -> None:
    """Every message of both writers is stored once, in each writer's order, with gap-free sequence numbers."""
    path = home / "state.db"
    writers = {name: _start(name, path) for name in ("alpha", "beta")}
    for proc in writers.values():
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in writers.values():
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    counts = {}
    for name, proc in writers.items():
        out, _ = proc.communicate(timeout=90)
        assert proc.returncode == 0
        counts[name] = int(out.strip())

    with SqliteSessionStore(path) as store:
        shared = store.active_session("shared")
        assert shared is not None
        stored = store.session_messages(shared.id)
        assert [s.seq for s in stored] == list(range(counts["alpha"] + counts["beta"]))
        for name in ("alpha", "beta"):
            mine = [s.message.text for s in stored if s.message.text.startswith(name)]
            assert mine == [f"{name} note {i}" for i in range(counts[name])]
            own = store.active_session("own:" + name)
            assert own is not None
            assert [m.text for m in store.active_messages(own.id)] == mine
        # Every row was indexed too: the last note of each writer is found in the shared chat.
        for name in ("alpha", "beta"):
            last = f"{name} note {counts[name] - 1}"
            assert [h.snippet for h in store.search("shared-chat", last, limit=1)][0].replace("**", "") == last
