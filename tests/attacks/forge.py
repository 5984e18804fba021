"""The attacker's tools, written from the specs (not from harness/), so the suite also
checks that the code does what `docs/specs/ledger.md`, `cell.md` and `goal-file.md` say.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
from pathlib import Path
from typing import Any

GENESIS = "0" * 64
WRONG_SECRET = "wrong-secret-with-enough-bytes-0123456789abcdef"


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def goal_key(secret: str, goal_id: str) -> bytes:
    info = b"goal-harness v1 goal-key\x00" + goal_id.encode()
    return hmac.new(secret.encode(), info, hashlib.sha256).digest()


# ---- ledger lines -----------------------------------------------------------------------


def line_hash(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


def event_of(line: bytes) -> dict[str, Any]:
    return dict(json.loads(line)["e"])


def ledger_line(event: dict[str, Any], key: bytes) -> bytes:
    body = canonical(event)
    mac = hmac.new(key, b"harness-event\x00" + body, hashlib.sha256).hexdigest()
    return b'{"e":' + body + b',"mac":"' + mac.encode() + b'"}\n'


def rechain(lines: list[bytes], start: int, key: bytes) -> list[bytes]:
    """Lines `start`.. re-linked to their (possibly edited) predecessors and re-MAC'd."""
    out = list(lines[:start])
    for line in lines[start:]:
        event = event_of(line)
        event["prev"] = line_hash(out[-1]) if out else GENESIS
        out.append(ledger_line(event, key))
    return out


# ---- cells -------------------------------------------------------------------------------


def cell_fields(data: bytes) -> dict[str, Any]:
    return dict(json.loads(data))


def cell_with_mac(fields: dict[str, Any], key: bytes, goal_id: str) -> bytes:
    body = {k: v for k, v in fields.items() if k != "mac"}
    tag = b"harness-cell\x00" + f"v{body['v']}\x00{goal_id}\x00".encode()
    mac = hmac.new(key, tag + canonical(body), hashlib.sha256).hexdigest()
    return canonical({**body, "mac": mac}) + b"\n"


def flip_bit(data: bytes, offset: int) -> bytes:
    return data[:offset] + bytes([data[offset] ^ 0x01]) + data[offset + 1 :]


# ---- approvals ---------------------------------------------------------------------------


def goal_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def statement(goal_id: str, sha256: str, decision: str = "run") -> str:
    return f"harness-approval v1\ngoal {goal_id}\nsha256 {sha256}\ndecision {decision}\n"


def bound_statement(goal_id: str, sha256: str, decision: str, commit: str, ledger: str) -> str:
    """A ship or unpark decision: bound to the gate's commit and the ledger head."""
    return statement(goal_id, sha256, decision) + f"commit {commit}\nledger {ledger}\n"


def ssh_sign(text: str, key: Path, folder: Path, namespace: str = "harness") -> str:
    """An armored SSHSIG block made by OpenSSH itself: `ssh-keygen -Y sign`."""
    message = folder / "statement.txt"
    message.write_text(text)
    signature = folder / "statement.txt.sig"
    signature.unlink(missing_ok=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", namespace, str(message)],
        check=True,
        capture_output=True,
    )
    return signature.read_text()


def record(text: str, armored: str) -> str:
    return text + armored.removesuffix("\n") + "\n"


def approval_file(*records: str) -> str:
    return "\n".join(records)


def records_of(approval: str) -> list[str]:
    return [chunk + "\n" for chunk in approval.removesuffix("\n").split("\n\n")]


def armor_of(one_record: str) -> str:
    begin = one_record.index("-----BEGIN SSH SIGNATURE-----")
    return one_record[begin:]
