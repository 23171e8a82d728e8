"""What the test peers (ble_peer.py, ant_stick.py) share."""
from __future__ import annotations

import os
import stat
import sys


def exits_on_stdin_eof(choice: str) -> bool:
    """Whether a peer ends when its stdin ends (``--stdin-eof``): ``exit`` yes, ``ignore`` no,
    ``auto`` only when stdin is a pipe or a socket (a test that started it and went away), not a
    terminal or /dev/null."""
    if choice != "auto":
        return choice == "exit"
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
