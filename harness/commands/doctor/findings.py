"""What each doctor check finds: `ok`, `warn` or `fail`, a fix, and a failure's exit code."""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import HarnessError, InvalidInput, TrustFailure

OK, WARN, FAIL = "ok", "warn", "fail"


@dataclass(frozen=True)
class Finding:
    check: str
    status: str  # ok | warn | fail
    finding: str
    fix: str | None = None
    exit_code: int = 0  # for a failure: 3 for a trust problem, else 2

    def as_dict(self) -> dict[str, str | None]:
        return {
            "check": self.check,
            "status": self.status,
            "finding": self.finding,
            "fix": self.fix,
        }


def fail(check: str, finding: str, fix: str, trust: bool = False) -> Finding:
    code = TrustFailure.exit_code if trust else InvalidInput.exit_code
    return Finding(check, FAIL, finding, fix, code)


def from_error(check: str, exc: HarnessError, fix: str) -> Finding:
    return fail(check, str(exc), fix, trust=isinstance(exc, TrustFailure))
