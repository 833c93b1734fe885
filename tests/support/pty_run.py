#!/usr/bin/env python3
"""tests/support/pty_run.py — a command run from a terminal, as a user
runs `podman run -it`:

    pty_run.py ROWS COLS PROMPT INPUT CMD...

CMD gets a new pty of ROWS x COLS as its stdin, stdout and stderr. INPUT
(backslash escapes read, e.g. "exit 7\\n") is typed once PROMPT has shown
on the terminal, never before: a program that has not read its terminal
yet may drop what was typed. Prints everything the terminal showed and
exits with CMD's status. Bounded: 120 s, then CMD is killed and the exit
status is 124."""
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time


def main():
    rows, cols, prompt = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode()
    typed = sys.argv[4].encode().decode("unicode_escape").encode()
    cmd = sys.argv[5:]
    pid, master = pty.fork()
    if pid == 0:
        os.execvp(cmd[0], cmd)
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    shown, sent, until = b"", False, time.time() + 120
    while time.time() < until:
        if not sent and prompt in shown:
            os.write(master, typed)
            sent = True
        ready, _, _ = select.select([master], [], [], 0.2)
        if not ready:
            continue
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: every holder of the terminal is gone
            break
        if not data:
            break
        shown += data
    else:
        os.kill(pid, signal.SIGKILL)
    sys.stdout.write(shown.decode(errors="replace"))
    _, status = os.waitpid(pid, 0)
    sys.exit(124 if time.time() >= until else os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
