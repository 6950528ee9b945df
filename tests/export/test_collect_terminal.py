"""Every output of ``collect`` is terminal-safe, whatever a fleet member puts in its
event lines or its subjects: C1 controls (U+009B is CSI on a terminal that reads 8-bit
controls), bidi controls (U+202A-U+202E, U+2066-U+2069), DEL. ``--merged`` writes them
as JSON escapes (the line parses to the exact string), ``--json`` keeps JSON's own
escapes, the table and the notes on stderr show them as Python escapes. Against a real
nats-server; the exact bytes written are checked."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.helpers.collect import headers
from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.servers import NatsServer

#: What a terminal would act on: C1 CSI, every bidi control, DEL.
HOSTILE = (
    "\u009b"
    + "".join(map(chr, range(0x202A, 0x202F)))
    + "".join(map(chr, range(0x2066, 0x206A)))
    + "\x7f"
)
#: The same as JSON escapes, as collect must write them.
ESCAPED = "".join(f"\\u{ord(c):04x}" for c in HOSTILE)


def publish(server: NatsServer, msgs: list[tuple[str, dict[str, str], bytes]]) -> None:
    async def send(nc: Any) -> None:
        from nats.js.api import StreamConfig

        js = nc.jetstream()
        await js.add_stream(StreamConfig(name="RINGTOOL", subjects=["ringtool.>"]))
        for subject, head, body in msgs:
            await js.publish(subject, body, headers=head, timeout=5)

    server.run(send)


def collect(server: NatsServer, durable: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    p = subprocess.run([*RINGTOOL, "collect", server.url, "--drain", "--interval", "0.3",
                        "--durable", durable, *args],
                       cwd=ROOT, capture_output=True, timeout=120)  # fmt: skip
    assert p.returncode == 0, p.stderr
    return p


def assert_safe(out: bytes) -> None:
    for ch in HOSTILE:
        assert ch.encode() not in out, (ch, out[:300])
    assert out.decode().replace("\n", "").isprintable()


def test_every_collect_output_is_terminal_safe(nats: NatsServer) -> None:
    lines = [
        # raw in the strings: written anew, escaped
        json.dumps({"type": "open", "ts": 1.0, "cpu": 0, "comm": HOSTILE, "path": "/t/" + HOSTILE},
                   ensure_ascii=False),
        # the host's own "host" key (the other way back)
        json.dumps({"host": "web1", "type": "open", "ts": 2.0, "cpu": 0, "comm": HOSTILE},
                   ensure_ascii=False),
        # already escaped by the member: passed as it is
        json.dumps({"type": "open", "ts": 3.0, "cpu": 0, "comm": HOSTILE}),
    ]  # fmt: skip
    body = "".join(line + "\n" for line in lines).encode()
    hostile_host = f"we{HOSTILE}b"
    publish(nats, [
        ("ringtool.web1.open", headers("web1", "open", 1, 3), body),
        (f"ringtool.{hostile_host}.open", headers("web1", "open", 4, 1), body[: len(lines[0]) + 1]),
        ("ringtool.web1.open", headers(hostile_host, "open", 5, 1), body[: len(lines[0]) + 1]),
    ])  # fmt: skip

    merged = collect(nats, "merged", "--merged")
    assert merged.stdout.decode().splitlines() == [
        f'{{"host": "web1", "type": "open", "ts": 1.0, "cpu": 0, "comm": "{ESCAPED}", '
        f'"path": "/t/{ESCAPED}"}}',
        f'{{"host": "web1", "type": "open", "ts": 2.0, "cpu": 0, "comm": "{ESCAPED}"}}',
        f'{{"host": "web1", "type": "open", "ts": 3.0, "cpu": 0, "comm": "{ESCAPED}"}}',
    ]
    assert [json.loads(line)["comm"] for line in merged.stdout.decode().splitlines()] == [
        HOSTILE] * 3  # fmt: skip
    for p in (merged, collect(nats, "json", "--json"), collect(nats, "table")):
        assert_safe(p.stdout)
        assert_safe(p.stderr)
    notes = merged.stderr.decode()
    assert "ringtool.we\\x9b\\u202a\\u202b\\u202c\\u202d\\u202e" in notes, notes
    assert "\\u2066\\u2067\\u2068\\u2069\\x7fb.open: bad subject" in notes, notes
    summary = json.loads(notes.splitlines()[-1])
    assert summary["per_host"]["web1"]["events"] == 3
    assert summary["bad_reasons"] == {"bad header": 1, "bad subject": 1}, summary
