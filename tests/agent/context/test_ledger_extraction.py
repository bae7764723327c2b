"""Table tests: which clauses of a message the fact ledger keeps, and what kind of fact each is."""
from __future__ import annotations

import pytest

from agent.context._facts import Speaker, extract_facts

# (speaker, message, [(verbatim clause kept, a kind it must carry)])
CASES: list[tuple[str, Speaker, str, list[tuple[str, str]]]] = [
    ("en-never", "user", "Thanks! Never push directly to main.", [("Never push directly to main.", "constraint")]),
    ("en-dont", "user", "Please don't touch tests/fixtures/.", [("Please don't touch tests/fixtures/.", "constraint")]),
    ("en-must", "user", "All replies must be in British English.", [("All replies must be in British English.", "constraint")]),
    ("en-i-dont-is-no-rule", "user", "I don't remember the reservation ID, sorry.", []),
    ("de", "user", "Bitte niemals am Freitag deployen.", [("Bitte niemals am Freitag deployen.", "constraint")]),
    ("de-muss", "user", "Der Bericht muss auf Deutsch sein.", [("Der Bericht muss auf Deutsch sein.", "constraint")]),
    ("fr", "user", "Ne supprime jamais la branche release.", [("Ne supprime jamais la branche release.", "constraint")]),
    ("fr-toujours", "user", "Utilise toujours des tabulations.", [("Utilise toujours des tabulations.", "constraint")]),
    ("es", "user", "Nunca uses la base de datos de producción.", [("Nunca uses la base de datos de producción.", "constraint")]),
    ("es-siempre", "user", "Responde siempre en español.", [("Responde siempre en español.", "constraint")]),
    ("zh", "user", "不要在周五部署。", [("不要在周五部署。", "constraint")]),
    ("zh-must", "user", "所有回复必须使用中文。", [("所有回复必须使用中文。", "constraint")]),
    ("ru", "user", "Никогда не пушь в main.", [("Никогда не пушь в main.", "constraint")]),
    ("ru-always", "user", "Всегда отвечай по-русски.", [("Всегда отвечай по-русски.", "constraint")]),
    ("unit-seconds", "user", "The job timeout is 45 seconds.", [("The job timeout is 45 seconds.", "value")]),
    ("unit-memory", "user", "Give the worker 512 MB of memory.", [("Give the worker 512 MB of memory.", "value")]),
    ("unit-de", "user", "Die Zeitüberschreitung ist 30 Sekunden.", [("Die Zeitüberschreitung ist 30 Sekunden.", "value")]),
    ("money", "user", "The budget is $300 per month.", [("The budget is $300 per month.", "value")]),
    ("time-date", "user", "The call is at 14:30 on 2024-05-01.", [("The call is at 14:30 on 2024-05-01.", "value")]),
    ("port-en", "user", "The staging API listens on port 8443.", [("The staging API listens on port 8443.", "value")]),
    ("port-host", "user", "Redis runs at localhost:6380 now.", [("Redis runs at localhost:6380 now.", "value")]),
    ("port-fr", "user", "Le port est 8080.", [("Le port est 8080.", "value")]),
    ("port-es", "user", "El puerto es 5432.", [("El puerto es 5432.", "value")]),
    ("port-zh", "user", "端口是8080。", [("端口是8080。", "value")]),
    ("port-ru", "user", "Порт 6380.", [("Порт 6380.", "value")]),
    ("version", "user", "Pin the client to v2.3.1 please.", [("Pin the client to v2.3.1 please.", "value")]),
    ("version-name", "user", "We run on Python 3.11 in production.", [("We run on Python 3.11 in production.", "value")]),
    ("pip-pin", "user", "Use requests==2.31 for now.", [("Use requests==2.31 for now.", "value")]),
    ("path-abs", "user", "The config lives in /etc/chorus/config.yaml.", [("The config lives in /etc/chorus/config.yaml.", "path")]),
    ("path-rel", "user", "Start with src/app/main.py today.", [("Start with src/app/main.py today.", "path")]),
    ("path-win", "user", "Logs go to C:\\chorus\\logs today.", [("Logs go to C:\\chorus\\logs today.", "path")]),
    ("url", "user", "Docs: https://example.com/docs/setup?x=1 for details.", [("Docs: https://example.com/docs/setup?x=1 for details.", "url")]),
    ("email", "user", "Send the report to ops@example.org tonight.", [("Send the report to ops@example.org tonight.", "email")]),
    ("ticket-jira", "user", "This is tracked in ABC-123 already.", [("This is tracked in ABC-123 already.", "ticket")]),
    ("ticket-hash", "user", "It was fixed in #456 last week.", [("It was fixed in #456 last week.", "ticket")]),
    ("ticket-not-utf8", "user", "The file is UTF-8 encoded.", []),
    ("identifier", "user", "Sure, it's sofia_kim_7287.", [("Sure, it's sofia_kim_7287.", "identifier")]),
    ("reservation", "user", "My reservation is ZFA04Y, thanks.", [("My reservation is ZFA04Y, thanks.", "identifier")]),
    ("name", "user", "Hi, my name is Sofia Kim.", [("Hi, my name is Sofia Kim.", "name")]),
    ("decision-en", "user", "We decided to keep the cache at 512 MB.", [("We decided to keep the cache at 512 MB.", "decision")]),
    ("decision-de", "user", "Wir haben entschieden, Postgres zu nehmen.", [("Wir haben entschieden, Postgres zu nehmen.", "decision")]),
    ("decision-fr", "user", "On a décidé de garder SQLite.", [("On a décidé de garder SQLite.", "decision")]),
    ("decision-es", "user", "Decidimos usar Redis para la cola.", [("Decidimos usar Redis para la cola.", "decision")]),
    ("decision-zh", "user", "我们决定使用PostgreSQL。", [("我们决定使用PostgreSQL。", "decision")]),
    ("decision-ru", "user", "Мы решили оставить Redis для очереди.", [("Мы решили оставить Redis для очереди.", "decision")]),
    ("assistant-decision", "assistant", "We decided to keep the retry limit at 5 attempts.",
     [("We decided to keep the retry limit at 5 attempts.", "decision")]),
    ("assistant-values-alone", "assistant", "I will edit /testbed/django/db/models/query.py next.", []),
    ("chatter", "user", "thanks, that looks good to me", []),
    ("bare-identifier", "user", "your_command_here", []),
]


@pytest.mark.parametrize(("speaker", "text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_extraction_table(speaker: Speaker, text: str, expected: list[tuple[str, str]]) -> None:
    """Each message yields exactly the expected verbatim clauses, each with the expected kind."""
    facts = extract_facts(text, speaker)
    assert [f.text for f in facts] == [clause for clause, _ in expected]
    for fact, (_, kind) in zip(facts, expected, strict=True):
        assert kind in fact.kinds


def test_long_line_keeps_only_the_clause_with_the_fact() -> None:
    """A long sentence is narrowed to the clause holding the fact, a verbatim substring of it."""
    filler = "we talked about the weather and lunch and many other unrelated things for a long while, " * 3
    text = f"So, {filler}and never deploy on Fridays, then we went home."
    facts = extract_facts(text, "user")
    assert [f.text for f in facts] == ["and never deploy on Fridays,"]
    assert facts[0].text in text


def test_each_sentence_is_its_own_fact() -> None:
    """Two facts in two sentences of one line are kept separately; chatter between them is not."""
    text = "Always run make lint first. The weather is nice. The API port is 8443."
    assert [f.text for f in extract_facts(text, "user")] == ["Always run make lint first.", "The API port is 8443."]


def test_list_markers_are_not_part_of_the_fact() -> None:
    """A bullet's marker is left out, the rest of the line is kept verbatim."""
    assert [f.text for f in extract_facts("- Never use tabs\n2. Keep lines under 100 chars", "user")] == [
        "Never use tabs",
        "Keep lines under 100 chars",
    ]


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("Never use tabs.", "Always use tabs."),
        ("timeout = 30s", "Set the timeout to 45 seconds."),
        ("The API port is 8443.", "API port: 9443"),
        ("Le port est 8080.", "Le port est 9090."),
        ("Bitte nie auf main pushen.", "Immer auf main pushen."),
        ("端口是8080。", "端口是9090。"),
    ],
)
def test_same_subject(older: str, newer: str) -> None:
    """A restatement on the same subject shares a subject key with the older statement."""
    (old,) = extract_facts(older, "user")
    (new,) = extract_facts(newer, "user")
    assert set(old.subjects) & set(new.subjects) != set()


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("The API port is 8443.", "The Redis port is 6380."),
        ("Never use tabs.", "Never use global variables."),
        ("The staging API listens on port 8443.", "The metrics exporter listens on port 9100."),
    ],
)
def test_different_subjects(first: str, second: str) -> None:
    """Statements about different things never share a subject (so neither replaces the other)."""
    (a,) = extract_facts(first, "user")
    (b,) = extract_facts(second, "user")
    assert set(a.subjects) & set(b.subjects) == set()
