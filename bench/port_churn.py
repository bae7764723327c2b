"""Open and close loopback ports in a loop for a while: the busy machine the test suite must pass on.

    python3 bench/port_churn.py --seconds 600 [--held 200] [--pause 0.005]

Each round binds (and listens on) `--held` sockets on 127.0.0.1 port 0, then closes them; the kernel hands out
ephemeral ports, so a test that picks a "free" port and binds it later is likely to find it taken meanwhile.
Bounded by `--seconds`; it prints how many ports it opened.
"""
from __future__ import annotations

import argparse
import socket
import time


def churn(seconds: float, held: int, pause: float) -> int:
    opened = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sockets: list[socket.socket] = []
        try:
            for _ in range(held):
                sock = socket.socket()
                sock.bind(("127.0.0.1", 0))
                sock.listen(1)
                sockets.append(sock)
                opened += 1
        finally:
            for sock in sockets:
                sock.close()
        time.sleep(pause)  # leaves the shared machine's cores to the tests
    return opened


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600.0, help="how long to run (default 600)")
    parser.add_argument("--held", type=int, default=200, help="sockets held open per round (default 200)")
    parser.add_argument("--pause", type=float, default=0.005, help="seconds between rounds (default 0.005)")
    args = parser.parse_args()
    print(f"opened and closed {churn(args.seconds, args.held, args.pause)} loopback ports")


if __name__ == "__main__":
    main()
