"""judge.failing_tests: ids from runner output and JUnit XML, hostile XML refused."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.loop.judge import MAX_JUNIT_BYTES, failing_tests, first_failing_test, junit_counts
from harness.loop.steps import child_env, run_step

DATA = Path(__file__).resolve().parents[1] / "data"
PYTEST_IDS = (
    "tests/test_login.py::test_login_timeout",
    "tests/test_params.py::TestParams::test_value[a b-1]",
    "tests/test_params.py::TestParams::test_value[c-3]",
    "tests/test_login.py::test_session_expiry",
)
JUNIT_IDS = (
    "tests.test_login::test_login_timeout",
    "tests.test_login::test_session_expiry",
    "tests.test_params.TestParams::test_value[a b-1]",
)
FALLBACK = "FAILED tests/test_fallback.py::test_from_output - boom\n"


def _data(name: str) -> str:
    return (DATA / name).read_text()


# --- output parsers ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("", ()),
        ("all 12 tests passed\n", ()),
        # pytest short summary
        ("FAILED tests/test_x.py::test_a - AssertionError: 1 != 2", ("tests/test_x.py::test_a",)),
        ("ERROR tests/test_x.py::test_b - RuntimeError: db", ("tests/test_x.py::test_b",)),
        ("ERROR tests/test_x.py", ("tests/test_x.py",)),
        ("FAILED t.py::C::test_p[x - y] - boom", ("t.py::C::test_p[x - y]",)),
        ("\x1b[31mFAILED\x1b[0m t.py::test_red - x", ("t.py::test_red",)),
        # unittest: the dotted name in parentheses, method appended when missing
        ("FAIL: test_a (tests.test_x.TestX.test_a)", ("tests.test_x.TestX.test_a",)),
        ("ERROR: test_b (pkg.mod.Class)", ("pkg.mod.Class.test_b",)),
        ("FAIL: test_c (pkg.mod.Class.test_c) (i=1)", ("pkg.mod.Class.test_c",)),
        # generic and go test
        ("FAILED spec/login_spec.rb:12", ("spec/login_spec.rb:12",)),
        ("--- FAIL: TestLogin (0.01s)", ("TestLogin",)),
        ("    --- FAIL: TestLogin/expired_token (0.00s)", ("TestLogin/expired_token",)),
        # lines that only look like failures
        ("FAILED (failures=1)", ()),
        ("FAILED (failures=2, errors=1)", ()),
        ("ERROR: could not connect to database", ()),
        ("ERROR something went wrong here", ()),
        ("FAILED: build step", ()),
        ("test_a FAILED", ()),
        ("FAILED " + "x" * 10_000, ()),
        # order kept, duplicates dropped
        ("FAILED b::t\nFAILED a::t\nFAILED b::t - again", ("b::t", "a::t")),
    ],
)
def test_output_ids(output: str, expected: tuple[str, ...]) -> None:
    assert failing_tests(output, None) == expected


def test_recorded_pytest_output() -> None:
    assert failing_tests(_data("judge_pytest_output.txt"), None) == PYTEST_IDS


def test_recorded_unittest_output() -> None:
    assert failing_tests(_data("judge_unittest_output.txt"), None) == (
        "tests.test_tokens.TokenTest.test_refresh",
        "tests.test_tokens.TokenTest.test_expiry",
        "tests.test_tokens.TokenTest.test_range",
    )


def test_first_failing_test() -> None:
    assert first_failing_test(_data("judge_pytest_output.txt"), None) == PYTEST_IDS[0]
    assert first_failing_test("3 passed", None) is None


# --- JUnit ---------------------------------------------------------------------------


def test_junit_ids_in_document_order() -> None:
    assert failing_tests(FALLBACK, DATA / "judge_junit_pytest.xml") == JUNIT_IDS


def test_junit_nested_suites_and_empty_classname() -> None:
    assert failing_tests("", DATA / "judge_junit_nested.xml") == (
        "renders login form",
        "LoginForm::validates email",
    )


@pytest.mark.parametrize(
    ("xml", "expected"),
    [
        (b'<testcase classname="c" name="t"><failure/></testcase>', ("c::t",)),
        (b'<testcase classname="c" name="t"><error type="E"/></testcase>', ("c::t",)),
        (b'<testcase classname="c" name="t"><skipped/></testcase>', ()),
        (b'<testcase classname="c" name="t"><x><failure/></x></testcase>', ()),
        (b'<testcase classname="c"><failure/></testcase>', ()),
        (b"<failure/>", ()),
        (
            b'<testcase name="a"><failure/><failure/></testcase><testcase name="a"><failure/>'
            b"</testcase>",
            ("a",),
        ),
    ],
)
def test_junit_cases(tmp_path: Path, xml: bytes, expected: tuple[str, ...]) -> None:
    junit = _write(
        tmp_path / "j.xml", b"<testsuites><testsuite>" + xml + b"</testsuite></testsuites>"
    )
    assert failing_tests("", junit) == expected


def _counts(tests: int, failures: int = 0, errors: int = 0, skipped: int = 0) -> dict[str, int]:
    return {"tests": tests, "failures": failures, "errors": errors, "skipped": skipped}


@pytest.mark.parametrize(
    ("xml", "expected"),
    [
        (b'<testcase name="a"/><testcase name="b"/>', _counts(2)),
        (b'<testcase name="a"><failure/></testcase><testcase name="b"/>', _counts(2, 1)),
        (b'<testcase name="a"><skipped/></testcase>', _counts(1, skipped=1)),
        # A case counts once: an error outranks a failure, a failure a skip.
        (b'<testcase name="a"><failure/><error/><skipped/></testcase>', _counts(1, errors=1)),
        (b'<testcase name="a"><skipped/><failure/></testcase>', _counts(1, 1)),
        # Only a test case's own children count.
        (b'<testcase name="a"><x><failure/></x></testcase><failure/>', _counts(1)),
        (b"", _counts(0)),
    ],
)
def test_junit_counts(tmp_path: Path, xml: bytes, expected: dict[str, int]) -> None:
    junit = _write(
        tmp_path / "j.xml", b"<testsuites><testsuite>" + xml + b"</testsuite></testsuites>"
    )
    assert junit_counts(junit) == expected


def test_junit_counts_of_pytest_and_of_a_file_refused_or_missing(tmp_path: Path) -> None:
    assert junit_counts(tmp_path / "missing.xml") is None
    assert junit_counts(_write(tmp_path / "bad.xml", b"<testsuite><testcase")) is None
    assert junit_counts(DATA / "judge_junit_billion_laughs.xml") is None
    # pytest's own file: the counts its <testsuite> attributes state.
    assert junit_counts(DATA / "judge_junit_pytest.xml") == _counts(6, 2, 1, 1)


def test_junit_wins_over_output() -> None:
    found = first_failing_test(_data("judge_pytest_output.txt"), DATA / "judge_junit_pytest.xml")
    assert found == JUNIT_IDS[0]


@pytest.mark.parametrize(
    "name", ["judge_junit_billion_laughs.xml", "judge_junit_external_entity.xml"]
)
def test_hostile_junit_is_ignored_for_the_output(name: str) -> None:
    assert failing_tests(FALLBACK, DATA / name) == ("tests/test_fallback.py::test_from_output",)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


PASSING_JUNIT = b'<testsuite><testcase classname="c" name="ok"/></testsuite>'


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda d: d / "missing.xml", "missing"),
        (lambda d: _write(d / "empty.xml", b""), "empty"),
        (lambda d: _write(d / "bad.xml", b"<testsuite><testcase"), "malformed"),
        (lambda d: _write(d / "text.xml", b"FAILED nothing::here"), "not XML"),
        (lambda d: _write(d / "pass.xml", PASSING_JUNIT), "names no failure"),
        (lambda d: d, "a directory"),
        (
            lambda d: _write(
                d / "dtd.xml",
                b'<!DOCTYPE testsuite SYSTEM "junit.dtd"><testsuite>'
                b'<testcase classname="c" name="t"><failure/></testcase></testsuite>',
            ),
            "a DOCTYPE without entities",
        ),
        (
            lambda d: _write(
                d / "utf16.xml",
                '<?xml version="1.0" encoding="UTF-16"?>'
                '<!DOCTYPE t [<!ENTITY e "x">]><testsuite><testcase name="&e;">'
                "<failure/></testcase></testsuite>".encode("utf-16"),
            ),
            "a DOCTYPE hidden by UTF-16",
        ),
    ],
)
def test_unusable_junit_falls_back_to_output(
    tmp_path: Path, make: Callable[[Path], Path], why: str
) -> None:
    junit = make(tmp_path)
    assert failing_tests(FALLBACK, junit) == ("tests/test_fallback.py::test_from_output",), why


def test_oversized_junit_is_refused(tmp_path: Path) -> None:
    case = b'<testcase classname="c" name="big"><failure/></testcase>'
    body = b"<testsuite>" + case + b" " * MAX_JUNIT_BYTES + b"</testsuite>"
    assert failing_tests(FALLBACK, _write(tmp_path / "big.xml", body))[0].endswith(
        "test_from_output"
    )
    # The same document within the limit is read: the refusal is the size alone.
    small = _write(tmp_path / "small.xml", b"<testsuite>" + case + b"</testsuite>")
    assert failing_tests(FALLBACK, small) == ("c::big",)


def test_symlinked_junit_is_not_followed(tmp_path: Path) -> None:
    target = DATA / "judge_junit_pytest.xml"
    link = tmp_path / "junit.xml"
    link.symlink_to(target)
    assert failing_tests(FALLBACK, link) == ("tests/test_fallback.py::test_from_output",)


def test_fifo_junit_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "junit.xml"
    os.mkfifo(fifo)
    assert failing_tests(FALLBACK, fifo) == ("tests/test_fallback.py::test_from_output",)


# --- real runners --------------------------------------------------------------------

FAILING_TESTS = """
    import pytest
    import unittest

    @pytest.fixture
    def broken():
        raise RuntimeError("no database")

    def test_passes():
        assert True

    def test_fails():
        assert 1 == 2

    def test_errors(broken):
        pass

    class TestGroup:
        @pytest.mark.parametrize("v", [1, 2])
        def test_param(self, v):
            assert v == 1

    class UnitCase(unittest.TestCase):
        def test_unit_fails(self):
            self.assertEqual("a", "b")
"""


def _judge(tmp_path: Path, *args: str) -> str:
    (tmp_path / "test_sample.py").write_text(textwrap.dedent(FAILING_TESTS))
    env = child_env(os.environ, [], {})
    result = run_step([sys.executable, "-m", *args], tmp_path, env, b"", 60)
    assert result.exit_code == 1, result.output_tail
    return result.output_tail


def test_real_pytest_junit_and_output_agree_on_the_failures(tmp_path: Path) -> None:
    junit = tmp_path / "reports" / "junit.xml"
    output = _judge(
        tmp_path, "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", "-rfE"
    )
    assert failing_tests(output, junit) == (
        "test_sample::test_fails",
        "test_sample::test_errors",
        "test_sample.TestGroup::test_param[2]",
        "test_sample.UnitCase::test_unit_fails",
    )
    assert failing_tests(output, None) == (
        "test_sample.py::test_fails",
        "test_sample.py::TestGroup::test_param[2]",
        "test_sample.py::UnitCase::test_unit_fails",
        "test_sample.py::test_errors",
    )


def test_real_unittest_output(tmp_path: Path) -> None:
    output = _judge(tmp_path, "unittest", "test_sample")
    assert failing_tests(output, None) == ("test_sample.UnitCase.test_unit_fails",)
