"""What the ranks' store process writes reaches the serve log at a bounded rate: torch's
native stack traces folded into the record they follow, every line escaped and cut, the
rest counted (one line per interval)."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from configbags.serve.storehost import LINE_BYTES, StoreHost, StoreOutput

TRACE = [
    b"[W1202 02:38:06.466620513 TCPStoreLibUvBackend.cpp:126] [c10d] Error processing client message: "
    b"Invalid string size. size: 9001, max: 8192",
    b"Exception raised from read_key at /pytorch/torch/csrc/distributed/c10d/TCPStoreLibUvBackend.cpp:588 "
    b"(most recent call first):",
    *(f"frame #{i}: c10::Error::Error(...) + 0x9d (0x7f in libc10.so)".encode() for i in range(14)),
    b"",
]


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "rendezvous store" in r.getMessage()]


def test_a_trace_is_one_line_and_the_rest_are_counted(caplog: pytest.LogCaptureFixture) -> None:
    output = StoreOutput()
    with caplog.at_level(logging.WARNING, logger="configbags.serve.ranks"):
        for _ in range(50):
            for line in TRACE:
                output.line(line)
        output.flush()  # within the interval: nothing yet
        assert len(messages(caplog)) == 1
        output.flush(every=True)
    first, counted = messages(caplog)
    assert first.startswith("the rendezvous store (torch): [c10d] Error processing client message: Invalid string")
    assert "TCPStoreLibUvBackend.cpp:126" not in first and "frame #" not in first
    assert counted.startswith("the rendezvous store (torch): 49 more messages in the last")
    assert counted.endswith("the last: [c10d] Error processing client message: Invalid string size. size: 9001, "
                            "max: 8192")


def test_an_interval_later_the_count_is_logged_and_the_next_one_shown(caplog: pytest.LogCaptureFixture) -> None:
    output = StoreOutput(interval=0.0)
    with caplog.at_level(logging.WARNING, logger="configbags.serve.ranks"):
        output.line(b"one")
        output.line(b"two")
    assert [m.split(": ", 1)[1] for m in messages(caplog)][:2] == [
        "one (native stack traces left out; more are counted: one line every 0 s)",
        "two (native stack traces left out; more are counted: one line every 0 s)"]


def test_a_line_from_the_store_is_escaped_and_cut(caplog: pytest.LogCaptureFixture) -> None:
    output = StoreOutput()
    with caplog.at_level(logging.WARNING, logger="configbags.serve.ranks"):
        output.line(b"[E1202 02:38:06.4 x.cpp:1] key \x1b[31m\xe2\x80\xa8forged\n" + b"y" * 500)
    (message,) = messages(caplog)
    assert "\x1b" not in message and "\u2028" not in message and "\\x1b[31m\\u2028forged" in message
    assert "y" * 150 in message and "y" * 300 not in message


def test_the_relay_reads_every_line_to_the_end_and_cuts_a_long_one(caplog: pytest.LogCaptureFixture) -> None:
    """A real pipe: a line longer than LINE_BYTES is cut there, the rest of it dropped (the
    next line is a record of its own), and what comes last without a newline still counts."""
    script = (f"import sys; w = sys.stderr.buffer.write; w(b'x' * {3 * LINE_BYTES} + b'\\n'); "
              f"w(b'second\\n'); w(b'frame #0: left out\\n'); w(b'last, unfinished')")
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    with caplog.at_level(logging.WARNING, logger="configbags.serve.ranks"):
        host = StoreHost(proc)
        host.stop()
    first, counted = messages(caplog)
    assert "x" * 190 in first
    assert counted.startswith("the rendezvous store (torch): 2 more messages") and counted.endswith("last, unfinished")
