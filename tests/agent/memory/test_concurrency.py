"""Cross-process safety: several processes adding to one chat at once lose nothing."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agent.memory.notes import NotesStore
from agent.settings import MemorySettings

WRITER = """
import sys
from pathlib import Path
from agent.memory.notes import NotesStore
from agent.settings import MemorySettings
home, tag, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
notes = NotesStore(home, MemorySettings(memory_char_limit=100_000)).chat("shared chat")
for number in range(count):
    result = notes.add("memory", f"entry {tag}-{number}")
    assert result.outcome == "written", result.message
"""
ROOT = Path(__file__).resolve().parents[3]


def test_two_processes_adding_at_once_lose_no_entry(home: Path) -> None:
    """Two writer processes each add 40 entries to one chat; all 80 are there, none garbled, no drift."""
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(home), tag, "40"], cwd=ROOT, stderr=subprocess.PIPE)
        for tag in ("a", "b")
    ]
    errors = [writer.communicate(timeout=60)[1].decode() for writer in writers]
    assert [writer.returncode for writer in writers] == [0, 0], errors
    snapshot = NotesStore(home, MemorySettings(memory_char_limit=100_000)).chat("shared chat").snapshot()
    expected = {f"entry {tag}-{number}" for tag in ("a", "b") for number in range(40)}
    assert {entry.text for entry in snapshot.memory} == expected
    assert len(snapshot.memory) == 80
    assert snapshot.drift == ()


async def test_concurrent_tool_calls_in_one_process_lose_nothing(home: Path) -> None:
    """Thirty memory tool calls running at once in worker threads all land."""
    import asyncio
    import json

    from agent.tools.base import ToolContext
    from agent.tools.memory_tool import MemoryTool

    tool = MemoryTool(NotesStore(home, MemorySettings(memory_char_limit=10_000)))
    context = ToolContext(chat_id="busy", session_id="s")
    replies = await asyncio.gather(*(
        tool({"action": "add", "target": "memory", "content": f"fact {number}"}, context) for number in range(30)
    ))
    assert [json.loads(reply)["success"] for reply in replies] == [True] * 30
    texts = {entry.text for entry in NotesStore(home, MemorySettings()).chat("busy").snapshot().memory}
    assert texts == {f"fact {number}" for number in range(30)}
