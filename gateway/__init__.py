"""The gateway: the only package that joins the platform adapters to the agent.

The folders follow the path of a message (docs/architecture.md walks it):

- `intake/`    adapter queue -> access, routing, triggers, commands -> a decision -> journal -> session lanes
- `sessions/`  one job on one session under its lock: agent pool, turns, hygiene, media, appends, review
- `delivery/`  replies through the outbox, streaming edits, typing, progress notices
- `chats/`     per-chat settings: persona, model, admins (policy), the chat store (model choice, usage), pairing
- `coord/`     what several gateway processes share: locks, agent cache, de-duplication, outbox (memory | Redis)
- `ops/`       health, metrics, logging, live configuration
- `admin/`     the operator API and dashboard
- `platforms/` config -> adapter factories;  `cli/` and `doctor/` the command line
- `app.py` runs the pipeline, `build.py` composes it from `config.py`'s tree.
"""
