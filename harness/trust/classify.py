"""Destructive-change classes: which changes a human must see before the loop goes on.

After every build the controller hands this module the staged diff of the goal worktree,
and before running them, every step command the goal declares. A hit parks the goal at
eyes with gate `destructive:<class>` until a human signs an unpark for that class.

The built-in rules are documented, each with an example that fires and one that does not,
in docs/specs/destructive.md; tests/trust/test_classify.py holds every rule id to a firing and a
non-firing case. False positives cost a human a look, so paths match whole segments, file
names and extensions (never substrings: `authority.md` is not auth), and line rules match
specific statements, never bare words.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from harness.model.config import DESTRUCTIVE_CLASSES

if TYPE_CHECKING:  # keeps importing this module cheap: config pulls in YAML and schemas
    from harness.model.config import DestructiveRule

CLASSES = DESTRUCTIVE_CLASSES  # the contract's eight, in its order

# Large removals (data_deletion). Lock files and generated files do not count: a
# regenerated lock file routinely removes thousands of lines and deletes nothing.
DELETED_FILE_LINES = 200  # a deleted file of more than this many lines
FILE_REMOVED_LINES = 500  # more than this many lines removed from one surviving file
TOTAL_REMOVED_LINES = 2000  # more than this many lines removed across the whole diff

# A file with thousands of matching lines (a SQL dump) names enough evidence in its first
# few; the cap keeps the hit list, and any event that records it, bounded.
MAX_HITS_PER_RULE_AND_FILE = 10
TEXT_LIMIT = 200


@dataclass(frozen=True)
class Hit:
    """One piece of evidence that a change (or a command) is in a destructive class."""

    cls: str  # one of CLASSES (or a class named by a config rule)
    rule: str  # a stable rule id: a built-in id, or config:<index>
    path: str  # repository path; "" for a command hit and for the whole-diff removal count
    line: int | None  # new line number (added), old line number (removed), None for a path
    text: str  # the matching line or command, one line, at most TEXT_LIMIT characters

    def describe(self) -> str:
        """`path:line: text (rule)`, one line, for logs and the report."""
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        head = f"{where}: " if where else ""
        return _one_line(f"{head}{self.text} ({self.rule})")


@dataclass(frozen=True)
class FileChange:
    """One file of a unified diff: its status and the lines it adds and removes."""

    path: str
    status: str  # "A" added, "M" modified (content or mode), "D" deleted
    added: tuple[tuple[int, str], ...]  # (new line number, text)
    removed: tuple[tuple[int, str], ...]  # (old line number, text)
    binary: bool


# ---------------------------------------------------------------------------------------
# Parsing `git diff -U0 --no-renames --no-color`

_HUNK_RE = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_DEV_NULL = "/dev/null"
# git's default prefixes are a/ and b/; diff.mnemonicPrefix makes them c/ i/ w/ o/.
_DIFF_PREFIXES = ("a/", "b/", "c/", "i/", "w/", "o/")
_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_OCTAL_RE = re.compile(r"[0-7]{1,3}")


@dataclass
class _FileBuilder:
    header_path: str
    status: str = "M"
    old_path: str | None = None
    new_path: str | None = None
    binary: bool = False
    added: list[tuple[int, str]] = field(default_factory=list)
    removed: list[tuple[int, str]] = field(default_factory=list)
    old_line: int = 0
    new_line: int = 0
    old_left: int = 0
    new_left: int = 0

    def in_hunk(self) -> bool:
        return self.old_left > 0 or self.new_left > 0

    def hunk_line(self, line: str) -> bool:
        """Take one body line of the current hunk; False when it is not one (malformed)."""
        tag, text = line[:1], line[1:]
        if tag == "+" and self.new_left:
            self.added.append((self.new_line, text))
            self.new_line, self.new_left = self.new_line + 1, self.new_left - 1
        elif tag == "-" and self.old_left:
            self.removed.append((self.old_line, text))
            self.old_line, self.old_left = self.old_line + 1, self.old_left - 1
        elif tag in (" ", "") and self.old_left and self.new_left:
            # Context (only with -U1 and up); some tools strip the lone space of a blank one.
            self.old_line, self.old_left = self.old_line + 1, self.old_left - 1
            self.new_line, self.new_left = self.new_line + 1, self.new_left - 1
        elif tag != "\\":  # "\ No newline at end of file" belongs to the hunk
            self.old_left = self.new_left = 0
            return False
        return True

    def header_line(self, line: str) -> None:
        hunk = _HUNK_RE.match(line)
        if hunk:
            self._start_hunk(hunk)
        elif line.startswith("new file mode"):
            self.status = "A"
        elif line.startswith("deleted file mode"):
            self.status = "D"
        elif line.startswith(("--- ", "+++ ")):
            self._file_line(line[:3], _diff_path(line[4:]))
        elif line.startswith("Binary files ") or line == "GIT binary patch":
            self.binary = True
        elif line.startswith(("rename to ", "copy to ")):
            # Renames only appear without --no-renames; the new name is the one that counts.
            self.new_path = _unquote(line.split(" ", 2)[2])

    def _start_hunk(self, hunk: re.Match[str]) -> None:
        self.old_line, self.new_line = int(hunk[1]), int(hunk[3])
        self.old_left = 1 if hunk[2] is None else int(hunk[2])
        self.new_left = 1 if hunk[4] is None else int(hunk[4])

    def _file_line(self, marker: str, path: str | None) -> None:
        if marker == "---":
            self.old_path = path
            self.status = "A" if path is None else self.status
        else:
            self.new_path = path
            self.status = "D" if path is None else self.status

    def finish(self) -> FileChange:
        return FileChange(
            path=self.new_path or self.old_path or self.header_path,
            status=self.status,
            added=tuple(self.added),
            removed=tuple(self.removed),
            binary=self.binary,
        )


def parse_diff(diff_text: str) -> list[FileChange]:
    """Every file of a `git diff` in order: binary, mode-only, added and deleted included."""
    changes: list[FileChange] = []
    current: _FileBuilder | None = None
    # Split on "\n" only: str.splitlines would also break at \x0b, \x1c, \u2028... in content.
    for raw in diff_text.split("\n"):
        line = raw[:-1] if raw.endswith("\r") else raw  # CRLF files: the \r is not content
        if current is not None and current.in_hunk() and current.hunk_line(line):
            continue
        if line.startswith("diff --git "):
            if current is not None:
                changes.append(current.finish())
            current = _FileBuilder(_header_path(line[len("diff --git ") :]))
        elif current is not None:
            current.header_line(line)
    if current is not None:
        changes.append(current.finish())
    return changes


def _header_path(rest: str) -> str:
    """The path of `diff --git a/P b/P`; both halves name the same path without renames."""
    if rest.startswith('"'):
        return _strip_prefix(_take_quoted(rest)[0])
    half = len(rest) // 2
    if len(rest) % 2 == 1 and rest[half] == " ":
        first, second = _strip_prefix(rest[:half]), _strip_prefix(rest[half + 1 :])
        if first == second:
            return first
    cut = rest.find(" b/")
    return _strip_prefix(rest[:cut] if cut > 0 else rest)


def _diff_path(text: str) -> str | None:
    """The path of a `---`/`+++` line, None for /dev/null."""
    # git appends a tab when the name has a space; a name with a tab in it is quoted.
    text = text.split("\t", 1)[0]
    return None if text == _DEV_NULL else _strip_prefix(_unquote(text))


def _strip_prefix(path: str) -> str:
    return path[2:] if path.startswith(_DIFF_PREFIXES) else path


def _unquote(text: str) -> str:
    return _take_quoted(text)[0] if text.startswith('"') else text


def _take_quoted(text: str) -> tuple[str, str]:
    """Decode git's C-style quoted name at the start of text; return it and the rest."""
    out, index = bytearray(), 1
    while index < len(text) and text[index] != '"':
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            octal = _OCTAL_RE.match(text, index + 1)
            if octal:  # core.quotePath writes non-ASCII bytes as \ooo
                out.append(int(octal[0], 8) & 0xFF)
                index = octal.end()
                continue
            char = text[index + 1]
            index += 1
            if char in _C_ESCAPES:
                out.append(_C_ESCAPES[char])
                index += 1
                continue
        out.extend(char.encode("utf-8", "surrogateescape"))
        index += 1
    return out.decode("utf-8", "replace"), text[index + 1 :]


# ---------------------------------------------------------------------------------------
# Globs: config rules' paths, and built-in file-name patterns


def _glob_regex(glob: str) -> str:
    """A regex for a repository-path glob: `*` and `?` stay in one segment, `**` spans any.

    As in .gitignore, a glob without a `/` matches a file name in any folder, a glob with
    one is anchored at the repository root, and a trailing `/` means everything under it.
    """
    if glob.endswith("/"):
        glob += "**"
    anchored = "/" in glob
    body = _glob_body(glob.lstrip("/"))
    return body if anchored else f"(?:.*/)?{body}"


def _glob_body(glob: str) -> str:
    out, index = [], 0
    while index < len(glob):
        piece, index = _glob_piece(glob, index)
        out.append(piece)
    return "".join(out)


def _glob_piece(glob: str, index: int) -> tuple[str, int]:
    if glob.startswith("**/", index):
        return "(?:.*/)?", index + 3
    if glob.startswith("**", index):
        return ".*", index + 2
    char = glob[index]
    if char == "*":
        return "[^/]*", index + 1
    if char == "?":
        return "[^/]", index + 1
    if char == "[":
        close = glob.find("]", index + 2)
        if close > 0:
            inner = glob[index + 1 : close].replace("\\", "\\\\")
            inner = "^" + inner[1:] if inner.startswith("!") else inner
            return f"[{inner}]", close + 1
    return re.escape(char), index + 1


def _glob_any(name: str, patterns: tuple[re.Pattern[str], ...]) -> bool:
    return any(pattern.fullmatch(name) for pattern in patterns)


def _name_globs(*globs: str) -> tuple[re.Pattern[str], ...]:
    """Lowercase file-name globs (no directories): `*` and `?` only."""
    return tuple(re.compile(_glob_regex(glob)) for glob in globs)


# ---------------------------------------------------------------------------------------
# What a path says about a file

_PROSE_SUFFIXES = frozenset(
    {".md", ".markdown", ".mdx", ".rst", ".txt", ".adoc", ".asciidoc", ".org", ".rdoc"}
)
_PROSE_NAMES = frozenset({"readme", "changelog", "changes", "history", "license", "licence"})
_ASSET_SUFFIXES = frozenset(
    {".png", ".jpg", ".jpeg", ".gif", ".svg", ".ico", ".webp", ".bmp", ".css", ".scss"}
    | {".sass", ".less", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp3", ".mp4", ".pdf"}
)
# .txt files that are read by tools, not people.
_TEXT_NOT_PROSE = _name_globs("*requirements*.txt", "*constraints*.txt", "cmakelists.txt")
_SQL_SUFFIXES = frozenset({".sql", ".ddl", ".psql", ".pgsql", ".mysql", ".plsql", ".hql"})
# Camel-case words of a name segment: OAuth2Client -> O, Auth, 2, Client; JWTService -> JWT.
_WORD_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_CHUNK_RE = re.compile(r"[^A-Za-z0-9]+")


@dataclass(frozen=True)
class _PathFacts:
    dirs: tuple[str, ...]  # lowercase directory segments
    name: str  # lowercase file name
    suffix: str  # lowercase last extension, "" for none and for dot files like .env
    words: frozenset[str]  # lowercase words of every directory and of the name's stem
    prose: bool  # documentation: line rules about code do not apply, path words do not
    asset: bool  # images, styles, fonts: path words do not apply

    def under(self, *sequence: str) -> bool:
        """Whether the directories include these consecutive segments."""
        width = len(sequence)
        return any(self.dirs[i : i + width] == sequence for i in range(len(self.dirs)))

    def in_dir(self, names: frozenset[str]) -> bool:
        return any(segment in names for segment in self.dirs)


def _facts(path: str) -> _PathFacts:
    segments = [segment for segment in path.split("/") if segment]
    name = segments[-1] if segments else ""
    stem, suffix = posixpath.splitext(name)
    words: set[str] = set()
    for segment in [*segments[:-1], stem]:
        words.update(_words(segment))
    lower = name.lower()
    return _PathFacts(
        dirs=tuple(segment.lower() for segment in segments[:-1]),
        name=lower,
        suffix=suffix.lower(),
        words=frozenset(words),
        prose=_is_prose(lower, suffix.lower()),
        asset=suffix.lower() in _ASSET_SUFFIXES,
    )


def _is_prose(name: str, suffix: str) -> bool:
    if suffix in _PROSE_SUFFIXES:
        return not _glob_any(name, _TEXT_NOT_PROSE)
    return name in _PROSE_NAMES


def _words(segment: str) -> set[str]:
    chunks = [chunk for chunk in _CHUNK_RE.split(segment) if chunk]
    words = {chunk.lower() for chunk in chunks}
    for chunk in chunks:
        words.update(word.lower() for word in _WORD_RE.findall(chunk))
    return words


# ---------------------------------------------------------------------------------------
# Path rules: what a file is, whatever its content


@dataclass(frozen=True)
class _PathRule:
    id: str
    cls: str
    test: Callable[[_PathFacts], bool]
    statuses: str = "AMD"


_MIGRATION_DIRS = frozenset({"migrations", "migration", "flyway"})
_SCHEMA_NAMES = frozenset(
    {"schema.rb", "structure.sql", "schema.sql", "schema.prisma"}
    | {f"db.changelog-master.{ext}" for ext in ("xml", "yaml", "yml", "json")}
)


def _is_migration(p: _PathFacts) -> bool:
    located = p.in_dir(_MIGRATION_DIRS) or p.under("alembic", "versions")
    return not p.prose and (located or p.under("db", "migrate") or p.under("db", "changelog"))


def _is_schema_file(p: _PathFacts) -> bool:
    return p.name in _SCHEMA_NAMES or p.suffix == ".prisma"


_DB_SUFFIXES = frozenset({".db", ".sqlite", ".sqlite3", ".db3", ".mdb", ".accdb", ".dump"})
_TABLE_SUFFIXES = frozenset(
    {".csv", ".tsv", ".parquet", ".json", ".jsonl", ".ndjson", ".yaml", ".yml", ".xml"}
    | {".xls", ".xlsx", ".avro", ".orc", ".feather", ".arrow", ".h5", ".hdf5", ".npy"}
    | {".npz", ".pkl", ".pickle", ".sql", ".gz", ".zip"}
)
_DATA_DIRS = frozenset({"data", "datasets", "dataset", "fixtures", "seeds", "seed", "dumps"})


def _is_data_file(p: _PathFacts) -> bool:
    return p.suffix in _DB_SUFFIXES or (p.suffix in _TABLE_SUFFIXES and p.in_dir(_DATA_DIRS))


_KEY_NAMES = frozenset(
    {"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk"}
)
_KEY_SUFFIXES = frozenset(
    {".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk", ".kdbx", ".p8"}
)


def _is_key_file(p: _PathFacts) -> bool:
    return p.suffix in _KEY_SUFFIXES or p.name in _KEY_NAMES


_ENV_TEMPLATES = ("example", "sample", "template", "dist", "defaults", "schema")


def _is_env_file(p: _PathFacts) -> bool:
    named = p.name in (".env", ".envrc") or p.name.startswith(".env.") or p.suffix == ".env"
    return named and not any(word in p.name for word in _ENV_TEMPLATES)


_SECRET_STORE_NAMES = frozenset(
    {"secrets.yaml", "secrets.yml", "secrets.json", "secrets.toml", "secret.yaml"}
    | {"secret.yml", ".sops.yaml", "credentials.json", "service-account.json", "vault.yml"}
    | {"service_account.json", "vault.yaml", ".vault_pass", ".vault-password"}
)
_SECRET_STORE_GLOBS = _name_globs(
    "*.enc.yaml", "*.enc.yml", "*.enc.json", "*.enc.env", "*.sops.*", "*service-account*.json"
)


def _is_secret_store(p: _PathFacts) -> bool:
    listed = p.name in _SECRET_STORE_NAMES or _glob_any(p.name, _SECRET_STORE_GLOBS)
    return listed or (p.in_dir(frozenset({"secrets", ".secrets"})) and not p.prose)


_AUTH_WORDS = frozenset(
    {"auth", "authn", "authz", "authenticate", "authentication", "authenticator"}
    | {"authorize", "authorization", "authorizer", "authorise", "authorisation", "login"}
    | {"logout", "signin", "signout", "session", "sessions", "permission", "permissions"}
    | {"rbac", "abac", "acl", "acls", "oauth", "oauth2", "oidc", "openid", "jwt", "jwks"}
    | {"saml", "sso", "mfa", "totp", "passwd", "password", "passwords", "csrf", "iam"}
    | {"keycloak", "cognito", "okta"}
)
_AUTH_NAMES = frozenset({"authorized_keys", ".htpasswd", "sudoers"})
_AUTH_DIRS = frozenset({"policies", "sudoers.d", "pam.d"})


def _is_auth(p: _PathFacts) -> bool:
    if p.name in _AUTH_NAMES:
        return True
    hinted = bool(p.words & _AUTH_WORDS) or p.in_dir(_AUTH_DIRS)
    return hinted and not (p.prose or p.asset)


_PAYMENT_WORDS = frozenset(
    {"payment", "payments", "billing", "invoice", "invoices", "invoicing", "checkout"}
    | {"subscription", "subscriptions", "stripe", "paypal", "braintree", "adyen", "razorpay"}
    | {"mollie", "klarna", "chargebee", "recurly", "paddle", "payout", "payouts", "refund"}
    | {"refunds"}
)


def _is_payments(p: _PathFacts) -> bool:
    return bool(p.words & _PAYMENT_WORDS) and not (p.prose or p.asset)


_INFRA_SUFFIXES = frozenset({".tf", ".tfvars", ".hcl", ".nomad", ".bicep"})
_INFRA_NAMES = frozenset({"pulumi.yaml", "pulumi.yml", "cdk.json", "samconfig.toml"})
_INFRA_GLOBS = _name_globs("*.tf.json", "pulumi.*.yaml", "pulumi.*.yml", "*.cfn.*")
_INFRA_DIRS = frozenset({"terraform", "pulumi", "cloudformation", "cfn", "iac", "cdk"})


def _is_infra_code(p: _PathFacts) -> bool:
    named = p.name in _INFRA_NAMES or _glob_any(p.name, _INFRA_GLOBS)
    located = p.in_dir(_INFRA_DIRS) and not p.prose
    return p.suffix in _INFRA_SUFFIXES or named or located


_K8S_DIRS = frozenset({"k8s", "kubernetes", "kustomize", "helm", "argocd", "gitops", "openshift"})
_K8S_NAMES = frozenset(
    {"chart.yaml", "kustomization.yaml", "kustomization.yml", "skaffold.yaml", ".helmignore"}
    | {"skaffold.yml", "helmfile.yaml", "helmfile.yml"}
)
_CHART_SUFFIXES = frozenset({".yaml", ".yml", ".tpl", ".json"})


def _is_kubernetes(p: _PathFacts) -> bool:
    if p.name in _K8S_NAMES or (p.in_dir(_K8S_DIRS) and not p.prose):
        return True
    # "charts" is also a folder of UI chart components; Helm's holds YAML and templates.
    return p.in_dir(frozenset({"charts", "chart"})) and p.suffix in _CHART_SUFFIXES


_PLATFORM_NAMES = frozenset(
    {"procfile", "fly.toml", "app.yaml", "app.yml", "serverless.yml", "serverless.yaml"}
    | {"serverless.ts", "serverless.json", "render.yaml", "vercel.json", "netlify.toml"}
    | {"heroku.yml", "appspec.yml", "appspec.yaml", "railway.json", "railway.toml"}
    | {"now.json", "firebase.json", ".firebaserc", "capfile", "dockerrun.aws.json"}
    | {"apprunner.yaml", "apprunner.yml", "amplify.yml", "wrangler.toml"}
    | {"zappa_settings.json", ".platform.app.yaml"}
)
_PLATFORM_DIRS = frozenset({".ebextensions", ".platform", "copilot"})


def _is_platform_file(p: _PathFacts) -> bool:
    return p.name in _PLATFORM_NAMES or p.in_dir(_PLATFORM_DIRS)


_CONFIG_MGMT_DIRS = frozenset({"ansible", "playbooks", "cookbooks", "puppet", "chef", "pillar"})
_PLAYBOOK_GLOBS = _name_globs("*playbook*.yml", "*playbook*.yaml", "ansible.cfg")


def _is_config_mgmt(p: _PathFacts) -> bool:
    located = p.in_dir(_CONFIG_MGMT_DIRS) and not p.prose
    return located or _glob_any(p.name, _PLAYBOOK_GLOBS)


_DEPLOY_WORDS = frozenset(
    {"deploy", "deploys", "deployment", "deployments", "deployer", "rollout", "rollouts"}
    | {"provision", "provisioning"}
)


def _is_deploy_path(p: _PathFacts) -> bool:
    return bool(p.words & _DEPLOY_WORDS) and not (p.prose or p.asset)


_CI_NAMES = frozenset(
    {".gitlab-ci.yml", ".gitlab-ci.yaml", "jenkinsfile", "azure-pipelines.yml", ".travis.yml"}
    | {"azure-pipelines.yaml", "bitbucket-pipelines.yml", ".drone.yml", ".woodpecker.yml"}
    | {"buildspec.yml", "buildspec.yaml", "cloudbuild.yaml", "cloudbuild.yml", "appveyor.yml"}
    | {"cloudbuild.json", ".appveyor.yml", "codemagic.yaml", "bitrise.yml", "wercker.yml"}
)
_CI_DIRS = frozenset(
    {".circleci", ".buildkite", ".azure-pipelines", ".woodpecker", ".teamcity", ".semaphore"}
    | {".tekton"}
)


def _is_ci(p: _PathFacts) -> bool:
    github = p.under(".github", "workflows") or p.under(".github", "actions")
    named = p.name in _CI_NAMES or p.name.startswith("jenkinsfile.")
    return github or named or p.in_dir(_CI_DIRS) or p.under(".gitlab", "ci")


_GOVERNANCE_NAMES = frozenset(
    {"codeowners", "renovate.json", "renovate.json5", ".renovaterc", ".renovaterc.json"}
    | {".mergify.yml", "mergify.yml", ".kodiak.toml", "bors.toml"}
)
_GOVERNANCE_GLOBS = _name_globs("branch-protection*", "branch_protection*", "branch-rules*")


def _is_governance(p: _PathFacts) -> bool:
    github = p.dirs == (".github",) and p.name in ("settings.yml", "dependabot.yml")
    named = p.name in _GOVERNANCE_NAMES or _glob_any(p.name, _GOVERNANCE_GLOBS)
    return github or named or p.under(".github", "rulesets")


_HOOK_NAMES = frozenset(
    {".pre-commit-config.yaml", ".pre-commit-config.yml", "lefthook.yml", "lefthook.yaml"}
    | {".lefthook.yml", "lefthook-local.yml", ".overcommit.yml"}
)


def _is_git_hooks(p: _PathFacts) -> bool:
    return p.name in _HOOK_NAMES or p.in_dir(frozenset({".githooks", ".husky", ".git-hooks"}))


_CREDENTIAL_NAMES = frozenset(
    {".pypirc", ".netrc", "_netrc", ".git-credentials", ".dockercfg", ".terraformrc"}
    | {"terraform.rc", "kubeconfig", ".boto", ".s3cfg"}
)
_CREDENTIAL_GLOBS = _name_globs("client_secret*.json", "*.kubeconfig", "kubeconfig*")
_CREDENTIAL_IN_DIR = frozenset(
    {(".aws", "credentials"), (".aws", "config"), (".kube", "config"), (".gem", "credentials")}
    | {(".docker", "config.json"), (".cargo", "credentials"), (".cargo", "credentials.toml")}
    | {("gh", "hosts.yml")}
)


def _is_credential_config(p: _PathFacts) -> bool:
    parent = p.dirs[-1] if p.dirs else ""
    in_dir = (parent, p.name) in _CREDENTIAL_IN_DIR
    return in_dir or p.name in _CREDENTIAL_NAMES or _glob_any(p.name, _CREDENTIAL_GLOBS)


_DNS_GLOBS = _name_globs("*.zone", "*.zonefile", "named.conf*", "dnsconfig.js")


def _is_dns_zone(p: _PathFacts) -> bool:
    return _glob_any(p.name, _DNS_GLOBS) or p.in_dir(frozenset({"octodns"}))


_PATH_RULES = (
    _PathRule("migration-path", "schema_change", _is_migration),
    _PathRule("schema-file", "schema_change", _is_schema_file),
    _PathRule("data-file-deleted", "data_deletion", _is_data_file, statuses="D"),
    _PathRule("secret-key-file", "secret_rotation", _is_key_file),
    _PathRule("secret-env-file", "secret_rotation", _is_env_file),
    _PathRule("secret-store-file", "secret_rotation", _is_secret_store),
    _PathRule("auth-path", "auth", _is_auth),
    _PathRule("payments-path", "payments", _is_payments),
    _PathRule("deploy-infra-code", "production_deploy", _is_infra_code),
    _PathRule("deploy-kubernetes", "production_deploy", _is_kubernetes),
    _PathRule("deploy-platform-file", "production_deploy", _is_platform_file),
    _PathRule("deploy-config-mgmt", "production_deploy", _is_config_mgmt),
    _PathRule("deploy-path", "production_deploy", _is_deploy_path),
    _PathRule("ci-pipeline", "branch_protection", _is_ci),
    _PathRule("repo-governance", "branch_protection", _is_governance),
    _PathRule("git-hooks", "branch_protection", _is_git_hooks),
    _PathRule("credential-config-file", "external_accounts", _is_credential_config),
    _PathRule("dns-zone-file", "external_accounts", _is_dns_zone),
)


# ---------------------------------------------------------------------------------------
# Line rules: statements in added or removed lines, and in declared commands


def _code(p: _PathFacts) -> bool:
    """Files that run or configure something: everything but prose."""
    return not p.prose


def _anywhere(p: _PathFacts) -> bool:
    """Key material leaks from a README as surely as from code."""
    return True


@dataclass(frozen=True)
class _LineRule:
    id: str
    cls: str
    # Lower-case literals of which every match contains one. A substring test is a hundred
    # times cheaper than a failing search through a rule's alternatives, and most lines of
    # a large diff match no rule.
    needles: tuple[str, ...]
    needle_re: re.Pattern[str]
    pattern: re.Pattern[str]
    sides: str = "+-"  # "+" added lines, "-" removed lines
    scope: Callable[[_PathFacts], bool] = _code
    # Case-insensitive twin, used in SQL files and in commands that run a SQL client; in
    # other code only upper-case keywords count ("create index of pages" is English).
    sql_pattern: re.Pattern[str] | None = None
    unless_next: re.Pattern[str] | None = None  # a match is void if the next line matches
    accept: Callable[[re.Match[str]], bool] | None = None  # a further check of the match


def _any(*alternatives: str) -> str:
    return "(?:" + "|".join(alternatives) + ")"


def _line(
    rule_id: str,
    cls: str,
    needles: str,
    *alternatives: str,
    sides: str = "+-",
    scope: Callable[[_PathFacts], bool] = _code,
    sql: bool = False,
    unless_next: str | None = None,
    accept: Callable[[re.Match[str]], bool] | None = None,
) -> _LineRule:
    if needles != needles.lower():  # lines are lowered before the needle test
        raise ValueError(f"{rule_id}: needles must be lower case: {needles!r}")
    source = _any(*alternatives)
    return _LineRule(
        id=rule_id,
        cls=cls,
        needles=tuple(needles.split()),
        needle_re=re.compile("|".join(map(re.escape, needles.split()))),
        pattern=re.compile(source),
        sides=sides,
        scope=scope,
        sql_pattern=re.compile(source, re.IGNORECASE) if sql else None,
        unless_next=None if unless_next is None else re.compile(unless_next, re.IGNORECASE),
        accept=accept,
    )


# A command word where a shell command starts: line start (after "- ", "$ " or "run:"),
# after ; & | ( or `, or after sudo/exec/npx. Used for short program names (stripe, sam).
_AT = r"(?:^\s*(?:-\s+|\$\s+|run:\s*)?|[;&|(`]\s*|\$\(\s*|\bsudo\s+|\bexec\s+|\bnpx\s+)"
# The rest of one shell command: stops at ; & | # and newlines. Bounded, like every run
# below that a later part must backtrack over, so a huge one-line file stays linear.
_ARGS = r"[^\n;&|#]{0,300}?"
_TABLE = r"[\w.\"`\[\]{}$]+"

_SQL_OBJECTS = "TABLE|INDEX|VIEW|SCHEMA|DATABASE|SEQUENCE|TYPE|TRIGGER|DOMAIN|EXTENSION"
_SQL_RULES = (
    _line(
        "sql-ddl-create",
        "schema_change",
        "create",
        r"\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:(?:UNIQUE|TEMP|TEMPORARY|GLOBAL|LOCAL|UNLOGGED"
        rf"|MATERIALIZED|VIRTUAL|FOREIGN)\s+)*(?:{_SQL_OBJECTS})\b",
        sql=True,
    ),
    _line(
        "sql-ddl-alter",
        "schema_change",
        "alter rename column constraint",
        rf"\bALTER\s+(?:MATERIALIZED\s+)?(?:{_SQL_OBJECTS}|COLUMN)\b",
        r"\bRENAME\s+(?:TABLE|COLUMN)\b",
        r"\bADD\s+(?:COLUMN|CONSTRAINT)\b",
        sql=True,
    ),
    _line(
        "sql-ddl-drop",
        "schema_change",
        "drop",
        rf"\bDROP\s+(?:(?:MATERIALIZED|TEMPORARY|TEMP|FOREIGN)\s+)?(?:{_SQL_OBJECTS}|COLUMN"
        r"|CONSTRAINT)\b",
        sql=True,
    ),
    _line(
        "sql-ddl-truncate",
        "schema_change",
        "truncate",
        rf"\bTRUNCATE\s+(?:TABLE\s+)?{_TABLE}",
        sql=True,
    ),
    _line(
        "sql-drop-data",
        "data_deletion",
        "drop",
        r"\bDROP\s+(?:TABLE|DATABASE|SCHEMA|COLUMN)\b",
        sides="+",
        sql=True,
    ),
    _line(
        "sql-truncate-data",
        "data_deletion",
        "truncate",
        rf"\bTRUNCATE\s+(?:TABLE\s+)?{_TABLE}",
        sides="+",
        sql=True,
    ),
    _line(
        "sql-delete-all",
        "data_deletion",
        "delete",
        # Nothing but the end of the statement after the table name: no WHERE.
        rf"\bDELETE\s+FROM\s+{_TABLE}\s*(?:;|$|[\"'`)])",
        sides="+",
        sql=True,
        # The WHERE of a statement split over lines, also as the next piece of a string.
        unless_next=r"^\s*(?:[+(]\s*)?(?:[rbfu]{0,2}[\"'`]+)?\s*(?:WHERE|USING)\b",
    ),
)

_ORM_RULES = (
    _line(
        "orm-migration-op",
        "schema_change",
        "op. migrations. _table _column _index _reference _foreign_key schema. queryinterface queryrunner schema:: migrationbuilder",
        r"\bop\.(?:create_table|drop_table|rename_table|add_column|drop_column|alter_column"
        r"|create_index|drop_index|create_foreign_key|create_unique_constraint"
        r"|create_check_constraint|create_primary_key|drop_constraint|execute"
        r"|batch_alter_table)\b",
        r"\bmigrations\.(?:CreateModel|DeleteModel|RenameModel|AddField|RemoveField|AlterField"
        r"|RenameField|AddIndex|RemoveIndex|RenameIndex|AddConstraint|RemoveConstraint"
        r"|AlterModelTable|AlterUniqueTogether|RunSQL|RunPython)\b",
        r"^\s*(?:create_table|drop_table|rename_table|change_table|add_column|remove_column"
        r"|remove_columns|change_column|change_column_null|change_column_default"
        r"|rename_column|add_index|remove_index|add_reference|remove_reference"
        r"|add_foreign_key|remove_foreign_key|create_join_table|drop_join_table)\b",
        r"\bschema\.(?:createTable|createTableIfNotExists|dropTable|dropTableIfExists"
        r"|alterTable|renameTable)\b",
        r"\b(?:queryInterface|queryRunner)\.(?:createTable|dropTable|renameTable|addColumn"
        r"|removeColumn|changeColumn|renameColumn|dropColumn|addIndex|removeIndex|dropIndex"
        r"|createIndex|addConstraint|removeConstraint|createForeignKey|dropForeignKey)\b",
        r"\bSchema::(?:create|drop|dropIfExists|table|rename)\b",
        r"\bmigrationBuilder\.(?:CreateTable|DropTable|AddColumn|DropColumn|AlterColumn"
        r"|RenameColumn|RenameTable|CreateIndex|DropIndex|Sql)\b",
    ),
    _line(
        "orm-drop-data",
        "data_deletion",
        "op. migrations. drop_table remove_column drop_join_table schema. queryinterface queryrunner schema:: ->dropcolumn migrationbuilder",
        r"\bop\.drop_(?:table|column)\b",
        r"\bmigrations\.(?:DeleteModel|RemoveField)\b",
        r"^\s*(?:drop_table|remove_column|remove_columns|drop_join_table)\b",
        r"\bschema\.(?:dropTable|dropTableIfExists)\b",
        r"\b(?:queryInterface|queryRunner)\.(?:dropTable|removeColumn|dropColumn"
        r"|dropAllTables|bulkDelete)\b",
        r"\bSchema::(?:drop|dropIfExists)\b",
        r"->dropColumn\(",
        r"\bmigrationBuilder\.(?:DropTable|DropColumn)\b",
        sides="+",
    ),
    _line(
        "orm-bulk-delete",
        "data_deletion",
        "delete _all drop flush",
        r"\.objects\.all\(\)\.delete\(\)",
        r"\.(?:delete_all|destroy_all)\b",
        r"\.query\(\s*[\w.]+\s*\)\.delete\(",  # no filter between query and delete
        r"\.deleteMany\(\s*(?:\{\s*\})?\s*\)",
        r"\.dropDatabase\(\)|\.dropCollection\(|\bdb\.\w+\.drop\(\)",
        r"\.flush(?:all|db)\(|\bFLUSH(?:ALL|DB)\b",
        sides="+",
    ),
)

_PLACEHOLDER_WORDS = (
    "example", "changeme", "change_me", "your", "xxx", "dummy", "placeholder", "redacted",
    "fake", "sample", "test", "demo", "${", "{{", "%(", "<", "***", "://",
)  # fmt: skip
# Names, not values: an env var's name (HARNESS_SECRET_FILE), an identifier (privateKeyUsage).
_NAME_LIKE_RE = re.compile(r"[A-Z][A-Z0-9_]*|[A-Za-z]+")
_PATH_LIKE_RE = re.compile(r"[\w.-]*(?:/[\w.-]+)+/?")


def _real_secret(match: re.Match[str]) -> bool:
    value = match["value"]
    placeholder = any(word in value.lower() for word in _PLACEHOLDER_WORDS)
    placeholder = placeholder or _NAME_LIKE_RE.fullmatch(value) is not None
    return (
        not placeholder
        and not value.startswith(("/", "./"))
        and not (_PATH_LIKE_RE.fullmatch(value))
    )


_SECRET_RULES = (
    _line(
        "secret-private-key-block",
        "secret_rotation",
        "private key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
        scope=_anywhere,
    ),
    _line(
        "secret-token-literal",
        "secret_rotation",
        "akia asia k_live_ ghp_ gho_ ghu_ ghs_ ghr_ github_pat_ xox glpat- npm_ pypi-age aiza sg. hooks.slack.com",
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        r"\b[sr]k_live_[0-9A-Za-z]{16,}",
        r"\bgh[pousr]_[A-Za-z0-9]{36,}",
        r"\bgithub_pat_[A-Za-z0-9_]{40,}",
        r"\bxox[abposr]-[0-9A-Za-z-]{10,}",
        r"\bglpat-[0-9A-Za-z_-]{20,}",
        r"\bnpm_[A-Za-z0-9]{36}\b",
        r"\bpypi-AgE[A-Za-z0-9_-]{50,}",
        r"\bAIza[0-9A-Za-z_-]{35}\b",
        r"\bSG\.[0-9A-Za-z_-]{22}\.[0-9A-Za-z_-]{43}\b",
        r"hooks\.slack\.com/services/T[0-9A-Z]+/B[0-9A-Z]+/[0-9A-Za-z]+",
        scope=_anywhere,
    ),
    _line(
        "secret-manifest",
        "secret_rotation",
        "kind resource aws::",
        r"^\s*kind:\s*[\"']?(?:Secret|SealedSecret|ExternalSecret|SecretStore"
        r"|ClusterSecretStore|SecretProviderClass)[\"']?\s*(?:#.*)?$",
        r"\"kind\"\s*:\s*\"(?:Secret|SealedSecret|ExternalSecret)\"",
        r"\bresource\s+\"(?:aws_secretsmanager_\w+|aws_ssm_parameter|google_secret_manager_\w+"
        r"|azurerm_key_vault_(?:secret|key)|kubernetes_secret(?:_v1)?|vault_\w*secret\w*)\"",
        r"\bAWS::SecretsManager::\w+|\bAWS::SSM::Parameter\b",
    ),
    _line(
        "secret-assignment",
        "secret_rotation",
        "secret passw api_key api-key apikey access_key access-key accesskey auth_token auth-token authtoken private_key private-key privatekey signing_key signing-key signingkey",
        r"(?i:secret|password|passwd|api[_-]?key|access[_-]?key|auth[_-]?token"
        r"|private[_-]?key|signing[_-]?key)[\w.-]{0,64}[\"']?\s*(?:=|:|:=|=>)\s*"
        r"[\"'](?P<value>[^\"'\s]{16,})[\"']",
        accept=_real_secret,
    ),
)

_AUTH_RULES = (
    _line(
        "auth-decorator",
        "auth",
        "@ [authorize [allowanonymous before_action before_filter permission_classes authentication_classes allowany isauthenticated isadminuser depends(",
        r"@(?:login_required|permission_required|user_passes_test|staff_member_required"
        r"|superuser_required|requires?_auth|auth_required|jwt_required|jwt_optional"
        r"|fresh_jwt_required|token_required|roles_required|roles_accepted"
        r"|auth\.login_required|csrf_exempt|authenticated|PreAuthorize|PostAuthorize"
        r"|Secured|RolesAllowed|PermitAll|DenyAll|UseGuards|AllowAnonymous)\b",
        r"\[(?:Authorize|AllowAnonymous)\b",
        r"\b(?:skip_)?before_(?:action|filter)\s+:(?:authenticate\w*|require_login"
        r"|authorize\w*|verify_authenticity_token)",
        r"\b(?:permission_classes|authentication_classes)\s*=",
        r"\b(?:AllowAny|IsAuthenticated\w*|IsAdminUser)\b",
        r"\bDepends\(\s*get_current_(?:active_)?user\b",
    ),
    _line(
        "auth-verify-disabled",
        "auth",
        "verify algorithms check_hostname cert_none rejectunauthorized node_tls wtf_csrf",
        r"verify_signature[\"']?\s*[:=]\s*False",
        r"algorithms\s*=\s*\[\s*[\"']none[\"']",
        r"\bverify\s*=\s*False\b|\bcheck_hostname\s*=\s*False\b|\bCERT_NONE\b",
        r"\bInsecureSkipVerify:\s*true\b|\brejectUnauthorized:\s*false\b",
        r"\bNODE_TLS_REJECT_UNAUTHORIZED\s*=\s*[\"']?0",
        r"\bWTF_CSRF_ENABLED\s*=\s*False\b",
        sides="+",
    ),
    _line(
        "auth-access-policy",
        "auth",
        "effect resource aws:: kind",
        r"\"Effect\"\s*:\s*\"(?:Allow|Deny)\"",
        r"^\s*-?\s*Effect:\s*[\"']?(?:Allow|Deny)\b",
        r"\bresource\s+\"(?:aws_iam_(?:policy|role|role_policy|role_policy_attachment"
        r"|policy_attachment|group_policy|group_policy_attachment|user_policy"
        r"|user_policy_attachment|instance_profile|openid_connect_provider|saml_provider"
        r"|group)|google_\w+_iam_(?:member|binding|policy)|azurerm_role_(?:assignment"
        r"|definition)|aws_s3_bucket_policy|aws_kms_key_policy"
        r"|kubernetes_(?:cluster_)?role(?:_binding)?(?:_v1)?)\"",
        r"\bAWS::IAM::(?:Policy|ManagedPolicy|Role|InstanceProfile|Group)\b",
        r"\bAWS::S3::BucketPolicy\b",
        r"^\s*kind:\s*[\"']?(?:Role|ClusterRole|RoleBinding|ClusterRoleBinding|ServiceAccount"
        r"|PodSecurityPolicy|AuthorizationPolicy|PeerAuthentication|RequestAuthentication)"
        r"[\"']?\s*(?:#.*)?$",
    ),
)

_PAYMENT_RULES = (
    _line(
        "payments-sdk",
        "payments",
        "stripe braintree paypal adyen razorpay mollie chargebee recurly",
        r"^\s*(?:import|from)\s+(?:stripe|braintree|paypalrestsdk|paypalcheckoutsdk|Adyen"
        r"|adyen|razorpay|mollie|chargebee|recurly)\b",
        r"\brequire\(\s*[\"'](?:stripe|braintree|paypal-rest-sdk|@paypal/[\w.-]+|razorpay"
        r"|@mollie/[\w.-]+|chargebee|recurly|@adyen/[\w.-]+)[\"']\s*\)",
        r"\bfrom\s+[\"'](?:stripe|@stripe/[\w.-]+|braintree|@paypal/[\w.-]+|razorpay"
        r"|@mollie/[\w.-]+|@adyen/[\w.-]+)[\"']",
        r"github\.com/(?:stripe/stripe-go|braintree-go|plutov/paypal|razorpay/razorpay-go"
        r"|adyen/adyen-go)",
        r"\bimport\s+com\.(?:stripe|braintreegateway|paypal|adyen)\.",
        r"\b(?:gem|require)\s+[\"'](?:stripe|braintree|paypal-sdk-rest|razorpay|adyen"
        r"|recurly|chargebee)[\"']",
        r"\\Stripe\\|\bStripe::|\bnew\s+Stripe\(",
        r"\b[Ss]tripe\.(?:[A-Z][A-Za-z]+|api_key|apiKey|setApiKey)\b",
        r"\bstripe\.(?:charges|paymentIntents|paymentMethods|refunds|subscriptions|invoices"
        r"|customers|checkout|payouts|transfers|prices|products|setupIntents|billingPortal"
        r"|webhooks)\.",
        r"\bbraintree\.(?:Transaction|Subscription|Customer|BraintreeGateway|Configuration"
        r"|PaymentMethod)\b",
        # A dependency line: requirements.txt, package.json, pyproject, YAML settings.
        r"^\s*[\"']?(?:stripe|braintree|paypalrestsdk|razorpay|@stripe/[\w.-]+"
        r"|@paypal/[\w.-]+)[\"']?\s*(?:[:=<>~!^@]|$)",
    ),
    _line(
        "payments-api",
        "payments",
        "stripe paypal braintree razorpay mollie adyen",
        _AT + r"stripe\s+[a-z]",
        r"\bapi\.stripe\.com\b|\bapi(?:-m)?\.(?:sandbox\.)?paypal\.com\b",
        r"\bbraintreegateway\.com\b|\bapi\.razorpay\.com\b|\bapi\.mollie\.com\b",
        r"\b(?:checkout|pal)-(?:test|live)\.adyen\.com\b",
        sides="+",
    ),
)

_DEPLOY_LINE_RULES = (
    _line(
        "deploy-manifest",
        "production_deploy",
        "kind awstemplateformatversion aws::",
        r"^\s*kind:\s*[\"']?(?:Deployment|StatefulSet|DaemonSet|ReplicaSet|CronJob|Job|Service"
        r"|Ingress|IngressRoute|Gateway|HTTPRoute|VirtualService|ConfigMap|Namespace"
        r"|HorizontalPodAutoscaler|PodDisruptionBudget|NetworkPolicy|PersistentVolume"
        r"|PersistentVolumeClaim|StorageClass|Application|ApplicationSet|HelmRelease|Rollout"
        r"|Certificate|ClusterIssuer)[\"']?\s*(?:#.*)?$",
        r"\"kind\"\s*:\s*\"(?:Deployment|StatefulSet|DaemonSet|CronJob|Service|Ingress"
        r"|ConfigMap|Namespace)\"",
        r"^\s*AWSTemplateFormatVersion\s*:",
        r"^\s*Type:\s*[\"']?AWS::(?!IAM::)\w+::\w+",
        r"^\s*Transform:\s*[\"']?AWS::Serverless",
    ),
)

_GIT_PUSH_FLAGS = frozenset(
    {"--force", "--force-with-lease", "--force-if-includes", "--mirror", "--delete"}
    | {"--no-verify", "--all", "--prune"}
)
_PROTECTED_BRANCHES = frozenset(
    {"main", "master", "trunk", "production", "prod", "release", "stable", "live", "develop"}
    | {"gh-pages"}
)


def _risky_push(match: re.Match[str]) -> bool:
    """A push that forces, deletes, mirrors, skips hooks, or targets a protected branch."""
    words = [word.strip("\"'") for word in match["args"].split()]
    flags = [word for word in words if word.startswith("-")]
    refspecs = [word for word in words if not word.startswith("-")][1:]  # [0] is the remote
    return any(_risky_push_flag(flag) for flag in flags) or any(map(_risky_refspec, refspecs))


def _risky_push_flag(flag: str) -> bool:
    if flag.startswith("--"):
        return flag.split("=", 1)[0] in _GIT_PUSH_FLAGS
    return "f" in flag or "d" in flag  # -f, -d, and clusters such as -uf


def _risky_refspec(refspec: str) -> bool:
    if refspec.startswith(("+", ":")):  # forced update; deletion
        return True
    target = refspec.rsplit(":", 1)[-1].removeprefix("refs/heads/")
    return target in _PROTECTED_BRANCHES or target.startswith(("release/", "release-"))


_DISPOSABLE_DIRS = frozenset(
    {"build", "dist", "out", "target", "node_modules", "__pycache__", ".pytest_cache"}
    | {".mypy_cache", ".ruff_cache", ".tox", ".nox", ".venv", "venv", ".cache", "coverage"}
    | {"htmlcov", ".coverage", ".next", ".nuxt", ".parcel-cache", ".eggs", "_build", "site"}
    | {"tmp", ".tmp", "temp"}
)
_TEMP_VAR_RE = re.compile(r"\$\{?(?:tmp|temp)\w*\}?(?:/|$)", re.IGNORECASE)


def _risky_rm(match: re.Match[str]) -> bool:
    """A recursive rm whose targets are not all build output or temporary folders."""
    if match["listflag"] is not None:  # ["rm", "-rf", ...]: the targets are out of sight
        return _recursive_flag(match["listflag"])
    words = [word.strip("\"'") for word in match["args"].split()]
    if not any(_recursive_flag(word) for word in words if word.startswith("-")):
        return False
    targets = [word for word in words if not word.startswith("-")]
    return not targets or not all(map(_disposable, targets))


def _recursive_flag(flag: str) -> bool:
    if flag.startswith("--"):
        return flag == "--recursive"
    return "r" in flag or "R" in flag


def _disposable(target: str) -> bool:
    if target == "/tmp" or target.startswith("/tmp/") or _TEMP_VAR_RE.match(target):
        return True
    first = target.removeprefix("./").split("/", 1)[0]
    return first in _DISPOSABLE_DIRS or first.endswith(".egg-info")


_SCRIPT_RULES = (
    _line(
        "shell-rm-recursive",
        "data_deletion",
        "rm",
        r"(?<![\w.-])(?<!git )rm\s+(?P<args>[^;&|\n`)#>]*)",
        r"[\"']rm[\"']\s*,\s*[\"'](?P<listflag>-{1,2}[\w-]+)[\"']",
        sides="+",
        accept=_risky_rm,
    ),
    _line(
        "git-push-protected",
        "branch_protection",
        "push",
        r"\bgit(?:\s+-[cC]\s+\S+)*\s+push\b(?P<args>[^;&|\n`)#]*)",
        sides="+",
        accept=_risky_push,
    ),
    _line(
        "git-hook-bypass",
        "branch_protection",
        "hookspath --no-verify husky",
        r"\bcore\.hooksPath\b",
        rf"\bgit\b{_ARGS}\s--no-verify\b",
        r"\bHUSKY\s*=\s*[\"']?0\b",
        sides="+",
    ),
    _line(
        "branch-protection-api",
        "branch_protection",
        "/protection resource ruleset protected_branches branch_protection required_status_checks enforce_admins required_pull_request_reviews",
        r"/branches/[^/\s\"']+/protection\b",
        r"\bresource\s+\"(?:github_branch_protection(?:_v3)?|github_repository_ruleset"
        r"|github_organization_ruleset|gitlab_branch_protection|gitlab_tag_protection"
        r"|github_branch_default|bitbucket_branch_restriction)\"",
        rf"\bgh\s+(?:api\b{_ARGS}\brulesets\b|ruleset\s+\w+)",
        r"\bprotected_branches\b|\bbranch_protection_rules?\b",
        r"\brequired_status_checks\b|\benforce_admins\b|\brequired_pull_request_reviews\b",
    ),
)

_ACCOUNT_RULES = (
    _line(
        "registry-auth-token",
        "external_accounts",
        "_authtoken npmauthtoken :_password _auth twine_password poetry_pypi_token_ poetry_http_basic_ uv_publish_token node_auth_token cargo_registry_token gem_host_api_key",
        r"_authToken\b|\bnpmAuthToken\b|:_password\s*=|(?:^|\s)_auth\s*=",
        r"\bTWINE_PASSWORD\b|\bPOETRY_PYPI_TOKEN_\w+|\bPOETRY_HTTP_BASIC_\w+_PASSWORD\b",
        r"\bUV_PUBLISH_TOKEN\b|\bNODE_AUTH_TOKEN\b|\bCARGO_REGISTRY_TOKEN\b",
        r"\bGEM_HOST_API_KEY\b",
    ),
    _line(
        "oauth-app-config",
        "external_accounts",
        "client_secret clientsecret redirect_uri authorized_javascript_origins",
        r"(?i:client_?secret)\w*[\"']?\s*(?:=|:|=>)",
        r"\b(?i:redirect_uris?|authorized_javascript_origins)[\"']?\s*[:=]",
    ),
    _line(
        "iam-account-resource",
        "external_accounts",
        "resource aws::iam::",
        r"\bresource\s+\"(?:aws_iam_user|aws_iam_access_key|aws_iam_user_login_profile"
        r"|aws_iam_user_group_membership|aws_iam_group_membership|aws_iam_user_ssh_key"
        r"|aws_iam_service_specific_credential|google_service_account|google_service_account_key"
        r"|azuread_user|azuread_application|azuread_application_password"
        r"|azuread_service_principal|azuread_service_principal_password|github_membership"
        r"|github_team_membership|github_repository_collaborator|github_actions_secret"
        r"|github_actions_organization_secret|github_actions_variable|github_dependabot_secret"
        r"|gitlab_user|gitlab_project_variable|gitlab_group_variable|gitlab_deploy_token"
        r"|cloudflare_api_token|okta_user|auth0_client|auth0_user|datadog_api_key)\"",
        r"\bAWS::IAM::(?:User|AccessKey|UserToGroupAddition)\b",
    ),
)

# Commands: matched in declared step commands and in added lines of scripts, CI files,
# Makefiles and code (a deploy written into a script deploys when the script runs).
_COMMAND_RULES = (
    _line(
        "cmd-db-migrate",
        "schema_change",
        "alembic manage.py django-admin db: flyway liquibase prisma knex sequelize diesel sqlx -database goose atlas dbmate artisan dotnet",
        rf"\balembic\b{_ARGS}\s(?:upgrade|downgrade|stamp)\b",
        r"\b(?:manage\.py|django-admin)\s+migrate\b",
        r"\b(?:rails|rake|bin/rails)\s+db:(?:migrate|rollback|schema:load|setup"
        r"|structure:load)\b",
        rf"\bflyway\b{_ARGS}\s(?:migrate|repair|baseline|undo)\b",
        rf"\bliquibase\b{_ARGS}\s(?:update|rollback)",
        r"\bprisma\s+(?:migrate\s+(?:deploy|dev|resolve)|db\s+push)\b",
        r"\bknex\s+migrate:(?:latest|up|down|rollback)\b",
        r"\bsequelize(?:-cli)?\s+db:migrate\b",
        r"\bdiesel\s+migration\s+(?:run|revert|redo)\b|\bsqlx\s+migrate\s+(?:run|revert)\b",
        rf"\bmigrate\b{_ARGS}\s-database\b{_ARGS}\s(?:up|down|drop|force|goto)\b",
        rf"\bgoose\b{_ARGS}\s(?:up|up-by-one|up-to|down|down-to|redo|reset)\b",
        r"\batlas\s+(?:migrate|schema)\s+apply\b",
        rf"\bdbmate\b{_ARGS}\s(?:up|down|rollback|migrate)\b",
        r"\bartisan\s+migrate\b|\bdotnet\s+ef\s+database\s+update\b",
        sides="+",
    ),
    _line(
        "cmd-data-drop",
        "data_deletion",
        "dropdb mysqladmin db: manage.py redis-cli flyway prisma sequelize dbmate artisan aws gsutil gcloud",
        r"\bdropdb\b",
        rf"\bmysqladmin\b{_ARGS}\sdrop\b",
        r"\b(?:rails|rake|bin/rails)\s+db:(?:drop|reset|purge|truncate_all|seed:replant)\b",
        r"\bmanage\.py\s+(?:flush|reset_db|sqlflush)\b",
        rf"\bredis-cli\b{_ARGS}\s(?i:flushall|flushdb)\b",
        rf"\bflyway\b{_ARGS}\sclean\b",
        rf"\bprisma\s+(?:migrate\s+reset|db\s+push\b{_ARGS}\s--accept-data-loss)\b",
        r"\bsequelize(?:-cli)?\s+db:drop\b",
        rf"\bdbmate\b{_ARGS}\sdrop\b",
        r"\bartisan\s+(?:migrate:(?:fresh|reset|rollback)|db:wipe)\b",
        rf"\baws\s+s3\s+(?:rm\b{_ARGS}\s--recursive\b|rb\b)",
        rf"\bgsutil\b{_ARGS}\s(?:rm\s+-\w*r|rb)\b",
        rf"\bgcloud\s+storage\s+(?:rm\b{_ARGS}\s--recursive\b|buckets\s+delete\b)",
        sides="+",
    ),
    _line(
        "cmd-infra-apply",
        "production_deploy",
        "terra tofu pulumi cdk sam serverless sls cloudformation ansible-playbook nomad",
        rf"\b(?:terraform|tofu|terragrunt)\b{_ARGS}\s(?:apply|destroy|import|taint|untaint"
        r"|force-unlock|state\s+(?:rm|mv|push|replace-provider))\b",
        rf"\bpulumi\b{_ARGS}\s(?:up|update|destroy|refresh|import|cancel)\b",
        rf"{_AT}cdk\b{_ARGS}\s(?:deploy|destroy)\b",
        rf"{_AT}sam\s+(?:deploy|delete|sync)\b",
        r"\b(?:serverless|sls)\s+(?:deploy|remove|rollback)\b",
        r"\baws\s+cloudformation\s+(?:deploy|create-stack|update-stack|delete-stack"
        r"|execute-change-set|create-stack-set|update-stack-set|delete-stack-set)\b",
        r"\bansible-playbook\b|\bnomad\s+job\s+(?:run|stop|revert)\b",
        sides="+",
    ),
    _line(
        "cmd-kubernetes",
        "production_deploy",
        "kubectl oc helm skaffold argocd flux",
        rf"\b(?:kubectl|oc)\b{_ARGS}\s(?:apply|create|delete|replace|patch|edit|scale"
        r"|autoscale|label|annotate|drain|cordon|uncordon|taint|expose|run"
        r"|rollout\s+(?:restart|undo|resume|pause)"
        r"|set\s+(?:image|env|resources|serviceaccount))\b",
        rf"\bhelm\b{_ARGS}\s(?:install|upgrade|uninstall|delete|rollback)\b",
        rf"\bhelmfile\b{_ARGS}\s(?:apply|sync|destroy|delete)\b",
        r"\bskaffold\s+(?:run|deploy|delete)\b",
        r"\bargocd\s+app\s+(?:sync|create|delete|set|rollback|patch)\b",
        r"\bflux\s+(?:reconcile|create|delete|suspend|resume)\b",
        sides="+",
    ),
    _line(
        "cmd-platform-deploy",
        "production_deploy",
        "fly heroku vercel netlify gcloud az eb cap railway firebase kamal copilot docker aws",
        r"\bfly(?:ctl)?\s+(?:deploy|scale|machine\s+(?:run|destroy|stop)|apps\s+destroy"
        r"|releases\s+rollback)\b",
        r"\bheroku\s+(?:container:release|releases:rollback|ps:scale|apps:destroy|pg:reset"
        r"|maintenance:on)\b",
        r"\bgit\s+push\s+(?:-\S+\s+)*heroku\b",
        rf"\bvercel\b{_ARGS}\s--prod\b|\bvercel\s+(?:deploy|promote|rollback|alias|remove)\b",
        rf"\bnetlify\s+deploy\b{_ARGS}\s--prod\b",
        rf"\bgcloud\s+(?:app|run|functions|deployment-manager)\b{_ARGS}\s(?:deploy|create"
        r"|update|delete)\b",
        rf"{_AT}az\s+(?:webapp|functionapp|containerapp|deployment)\b{_ARGS}\s(?:deploy"
        r"|create|up|update|delete|restart)\b",
        rf"{_AT}eb\s+(?:deploy|terminate|scale|swap)\b|{_AT}cap\s+\w+\s+deploy\b",
        r"\brailway\s+(?:up|deploy)\b|\bfirebase\s+deploy\b|\bkamal\s+(?:deploy|setup"
        r"|rollback|redeploy)\b|\bcopilot\s+(?:svc\s+)?deploy\b",
        r"\bdocker\s+(?:stack\s+deploy|service\s+(?:create|update|rm|scale))\b",
        r"\baws\s+(?:ecs\s+(?:update-service|create-service|delete-service|run-task)"
        r"|lambda\s+(?:update-function-code|update-function-configuration|create-function"
        r"|delete-function|publish-version|update-alias)|deploy\s+create-deployment"
        r"|elasticbeanstalk\s+update-environment|apprunner\s+(?:start-deployment"
        r"|update-service))\b",
        rf"\baws\s+s3\s+sync\b{_ARGS}\s--delete\b",
        sides="+",
    ),
    _line(
        "cmd-package-publish",
        "production_deploy",
        "publish deprecate twine cargo gem push mvn gradle goreleaser release",
        rf"\b(?:npm|pnpm|yarn)\b{_ARGS}\s(?:publish|unpublish|deprecate)\b",
        r"\btwine\s+upload\b|\b(?:poetry|uv|flit|hatch|pdm)\s+publish\b",
        r"\bcargo\s+(?:publish|yank)\b|\bgem\s+(?:push|yank)\b",
        r"\b(?:docker|podman|buildah)\s+(?:image\s+)?push\b",
        rf"\bdocker\s+buildx\s+build\b{_ARGS}\s--push\b",
        rf"\bmvn\b{_ARGS}\s(?:deploy|release:perform)\b",
        rf"\bgradlew?\b{_ARGS}\s(?:publish\w*|uploadArchives)\b",
        r"\bgoreleaser\s+release\b|\bgh\s+release\s+(?:create|upload|delete|edit)\b",
        r"\bdotnet\s+nuget\s+push\b|\bhelm\s+push\b",
        sides="+",
    ),
    _line(
        "cmd-deploy-script",
        "production_deploy",
        "deploy release rollout provision",
        r"(?:^|[\s;&|(])(?:make|just|rake|task|invoke|mage|fab|npm\s+run|yarn(?:\s+run)?"
        r"|pnpm(?:\s+run)?|bun\s+run|nox\s+-s|tox\s+-e)\s+(?:-\S+\s+)*[\w:-]{0,64}"
        r"(?:deploy|release|rollout|provision)",
        r"(?:^|[\s/;&|(\"'])(?:deploy|release|rollout|provision)[\w.-]{0,64}\.(?:sh|bash|py|rb|js"
        r"|ts|pl|ps1)\b",
        r"(?:^|[\s;&|(\"'])(?:\./|bin/|scripts?/)(?:deploy|rollout|provision)",
        sides="+",
    ),
    _line(
        "cmd-secret-store",
        "secret_rotation",
        "vault secretsmanager ssm kms gcloud keyvault kubectl sops ssh-keygen openssl certbot gpg",
        r"\bvault\s+(?:write|delete|kv\s+(?:put|patch|delete|destroy|rollback"
        r"|metadata\s+delete)|secrets\s+(?:enable|disable|move)|token\s+(?:create|revoke))\b",
        r"\baws\s+secretsmanager\s+(?:create-secret|put-secret-value|update-secret"
        r"|rotate-secret|delete-secret|restore-secret|cancel-rotate-secret)\b",
        r"\baws\s+ssm\s+(?:put-parameter|delete-parameters?)\b",
        r"\baws\s+kms\s+(?:create-key|schedule-key-deletion|disable-key|enable-key-rotation"
        r"|disable-key-rotation|import-key-material)\b",
        r"\bgcloud\s+(?:secrets\s+(?:create|delete|update|versions\s+(?:add|destroy|disable"
        r"|enable))|kms\s+keys\s+(?:create|versions\s+(?:create|destroy|disable)))\b",
        r"\baz\s+keyvault\s+(?:secret|key|certificate)\s+(?:set|delete|create|import|rotate"
        r"|purge)\b",
        rf"\bkubectl\b{_ARGS}\screate\s+secret\b",
        rf"\bsops\b{_ARGS}\s(?:-e|--encrypt|-r|--rotate|updatekeys|-i|--in-place|set|unset)\b",
        rf"\bssh-keygen\b{_ARGS}\s-[tpN]\b",
        rf"\bopenssl\s+(?:genrsa|genpkey|ecparam\b{_ARGS}\s-genkey|req\b{_ARGS}\s-new(?:key)?)\b",
        r"\bcertbot\s+(?:certonly|renew|revoke|delete)\b",
        rf"\bgpg\b{_ARGS}\s--(?:gen-key|full-generate-key|quick-gen-key|delete-secret-keys?"
        r"|import)\b",
        sides="+",
    ),
    _line(
        "cmd-iam-policy",
        "auth",
        "iam role kubectl",
        r"\baws\s+iam\s+(?:(?:attach|detach|put|delete)-(?:role|group|user)-policy"
        r"|(?:create|delete|set-default)-policy(?:-version)?|(?:create|delete|update)-role"
        r"|update-assume-role-policy|(?:add|remove)-role-(?:to|from)-instance-profile)\b",
        rf"\bgcloud\b{_ARGS}\s(?:add|remove|set)-iam-policy(?:-binding)?\b",
        r"\baz\s+role\s+(?:assignment|definition)\s+(?:create|delete|update)\b",
        rf"\bkubectl\b{_ARGS}\screate\s+(?:cluster)?rolebinding\b|\bkubectl\s+auth\s+reconcile\b",
        sides="+",
    ),
    _line(
        "cmd-account-admin",
        "external_accounts",
        "aws gcloud az login logout adduser token auth heroku api credential.helper",
        r"\baws\s+iam\s+(?:(?:create|delete|update)-(?:user|access-key|login-profile"
        r"|service-specific-credential|group)|(?:add|remove)-user-(?:to|from)-group)\b",
        r"\baws\s+organizations\s+(?:create|invite|remove|close)-[\w-]+",
        r"\baws\s+configure\b(?!\s+(?:get|list|export-credentials)\b)",
        r"\bgcloud\s+iam\s+service-accounts\s+(?:create|delete|disable|enable"
        r"|keys\s+(?:create|delete|upload))\b",
        r"\bgcloud\s+auth\s+(?:login|activate-service-account|revoke)\b",
        r"\baz\s+ad\s+(?:user|sp|app|group)\s+(?:create|delete|update|credential\s+reset)\b",
        r"\b(?:npm|pnpm|yarn)\s+(?:login|logout|adduser|token\s+(?:create|revoke))\b",
        r"\b(?:docker|podman)\s+login\b|\bhelm\s+registry\s+login\b",
        r"\bgh\s+auth\s+(?:login|logout|refresh|token|setup-git)\b",
        r"\bheroku\s+(?:login|authorizations:\w+)\b",
        rf"\bgh\s+api\b{_ARGS}/(?:collaborators|members|memberships|invitations|keys|hooks)\b",
        rf"\bgit\s+config\b{_ARGS}\scredential\.helper\b",
        sides="+",
    ),
    _line(
        "cmd-platform-secret",
        "external_accounts",
        "secret variable config: env doppler circleci",
        r"\bgh\s+(?:secret|variable)\s+(?:set|delete|remove)\b",
        r"\bheroku\s+config:(?:set|unset|add|remove)\b",
        r"\bfly(?:ctl)?\s+secrets\s+(?:set|unset|import)\b",
        r"\bvercel\s+env\s+(?:add|rm|remove)\b|\bnetlify\s+env:(?:set|unset|import|clone)\b",
        r"\bdoppler\s+secrets\s+(?:set|delete|upload)\b|\brailway\s+variables?\s+(?:--)?set\b",
        r"\bglab\s+variable\s+(?:set|delete|update)\b|\bwrangler\s+secret\s+(?:put|delete)\b",
        r"\bcircleci\s+context\s+(?:store-secret|remove-secret)\b|\btravis\s+env\s+set\b",
        sides="+",
    ),
)

_LINE_RULES = (
    *_SQL_RULES,
    *_ORM_RULES,
    *_SECRET_RULES,
    *_AUTH_RULES,
    *_PAYMENT_RULES,
    *_DEPLOY_LINE_RULES,
    *_SCRIPT_RULES,
    *_ACCOUNT_RULES,
    *_COMMAND_RULES,
)
_SQL_CLIENT_RE = re.compile(
    r"(?:^|[\s/;&|(\"'])(?:psql|mysql|mariadb|sqlite3|sqlcmd|duckdb|clickhouse-client"
    r"|cqlsh|snowsql|bq|cockroach)\b"
)


# ---------------------------------------------------------------------------------------
# Size rules: large removals

_GENERATED_NAMES = frozenset(
    {"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock"}
    | {"pipfile.lock", "uv.lock", "cargo.lock", "gemfile.lock", "composer.lock", "go.sum"}
    | {"flake.lock", "packages.lock.json", "pdm.lock", "mix.lock", "pubspec.lock"}
    | {"podfile.lock", "gradle.lockfile"}
)
_GENERATED_GLOBS = _name_globs("*.min.js", "*.min.css", "*.map", "*.snap")
_SIZE_RULES = {
    "large-file-deletion": "data_deletion",
    "large-removal-file": "data_deletion",
    "large-removal-total": "data_deletion",
}


def _counts_as_removal(change: FileChange) -> bool:
    name = posixpath.basename(change.path).lower()
    return name not in _GENERATED_NAMES and not _glob_any(name, _GENERATED_GLOBS)


def _file_size_hits(change: FileChange) -> list[Hit]:
    removed = len(change.removed)
    if not _counts_as_removal(change):
        return []
    if change.status == "D" and removed > DELETED_FILE_LINES:
        text = f"deleted file of {removed} lines"
        return [Hit("data_deletion", "large-file-deletion", change.path, None, text)]
    if change.status != "D" and removed > FILE_REMOVED_LINES:
        text = f"{removed} lines removed"
        return [Hit("data_deletion", "large-removal-file", change.path, None, text)]
    return []


def _total_size_hits(changes: Sequence[FileChange]) -> list[Hit]:
    counted = [change for change in changes if _counts_as_removal(change)]
    total = sum(len(change.removed) for change in counted)
    if total <= TOTAL_REMOVED_LINES:
        return []
    text = f"{total} lines removed across {len(counted)} files"
    return [Hit("data_deletion", "large-removal-total", "", None, text)]


RULE_CLASSES: Mapping[str, str] = MappingProxyType(
    {rule.id: rule.cls for rule in _PATH_RULES}
    | {rule.id: rule.cls for rule in _LINE_RULES}
    | _SIZE_RULES
)
"""Every built-in rule id and the class it reports (documented in docs/specs/destructive.md)."""


# ---------------------------------------------------------------------------------------
# Classifying


def classify_changes(
    changes: Sequence[FileChange], extra: Sequence[DestructiveRule] = ()
) -> list[Hit]:
    """Every destructive-class hit in a parsed diff, built-in rules then config rules."""
    hits: list[Hit] = []
    for change in changes:
        facts = _facts(change.path)
        hits += _path_hits(change, facts)
        hits += _line_hits(change, facts)
        hits += _file_size_hits(change)
    hits += _total_size_hits(changes)
    hits += _extra_change_hits(changes, extra)
    return _ordered(hits)


def classify_command(argv: Sequence[str], extra: Sequence[DestructiveRule] = ()) -> list[Hit]:
    """Hits for a declared step command (not the ship command: ship is always gated)."""
    command = " ".join(argv)
    side = _side(tuple(enumerate(command.splitlines(), start=1)))
    in_sql_client = _SQL_CLIENT_RE.search(command) is not None
    hits: list[Hit] = []
    for rule in _LINE_RULES:
        pattern = rule.sql_pattern if in_sql_client and rule.sql_pattern else rule.pattern
        hits += (_command_hit(rule.cls, rule.id, text) for _, text in _scan(rule, pattern, side))
    for index, config_rule in enumerate(extra):
        patterns = [re.compile(source) for source in config_rule.lines]
        matched = (text for _, text in side.lines if any(p.search(text) for p in patterns))
        hits += (_command_hit(config_rule.cls, f"config:{index}", text) for text in matched)
    return _ordered(hits)


def _command_hit(cls: str, rule: str, text: str) -> Hit:
    return Hit(cls, rule, "", None, _clip(text))


def _path_hits(change: FileChange, facts: _PathFacts) -> list[Hit]:
    text = _STATUS_TEXT.get(change.status, "changed file")
    return [
        Hit(rule.cls, rule.id, change.path, None, text)
        for rule in _PATH_RULES
        if change.status in rule.statuses and rule.test(facts)
    ]


_STATUS_TEXT = {"A": "added file", "M": "modified file", "D": "deleted file"}


def _line_hits(change: FileChange, facts: _PathFacts) -> list[Hit]:
    if change.binary:
        return []
    in_sql_file = facts.suffix in _SQL_SUFFIXES
    sides = (("+", _side(change.added)), ("-", _side(change.removed)))
    hits: list[Hit] = []
    for rule in _LINE_RULES:
        if not rule.scope(facts):
            continue
        pattern = rule.sql_pattern if in_sql_file and rule.sql_pattern else rule.pattern
        for sign, side in sides:
            if sign in rule.sides:
                found = _scan(rule, pattern, side)
                hits += (Hit(rule.cls, rule.id, change.path, n, _clip(t)) for n, t in found)
    return hits


@dataclass(frozen=True)
class _Side:
    """Numbered lines (one side of a file's diff, or a command), lowered once for needles."""

    lines: Sequence[tuple[int, str]]
    lowered: str  # every line lower-cased, joined with newlines
    starts: tuple[int, ...]  # where each line starts in `lowered`
    by_number: Mapping[int, str]


def _side(lines: Sequence[tuple[int, str]]) -> _Side:
    texts = [text.lower() for _, text in lines]
    starts, offset = [], 0
    for text in texts:
        starts.append(offset)
        offset += len(text) + 1
    return _Side(lines, "\n".join(texts), tuple(starts), dict(lines))


def _candidates(rule: _LineRule, side: _Side) -> list[int]:
    """Indexes of the lines that hold one of the rule's needles, in order."""
    # Substring tests over the whole side are fast C scans; most rules stop here.
    if not any(needle in side.lowered for needle in rule.needles):
        return []
    starts, matches = side.starts, rule.needle_re.finditer(side.lowered)
    return sorted({bisect.bisect_right(starts, match.start()) - 1 for match in matches})


def _fires(rule: _LineRule, pattern: re.Pattern[str], text: str) -> bool:
    if rule.accept is None:
        return pattern.search(text) is not None
    # `rm -rf build; rm -rf data`: a later match can pass where the first one did not.
    return any(rule.accept(match) for match in pattern.finditer(text))


def _scan(rule: _LineRule, pattern: re.Pattern[str], side: _Side) -> list[tuple[int, str]]:
    """The first MAX_HITS_PER_RULE_AND_FILE lines where the rule fires."""
    found: list[tuple[int, str]] = []
    for index in _candidates(rule, side):
        number, text = side.lines[index]
        if not _fires(rule, pattern, text):
            continue
        after = side.by_number.get(number + 1, "")
        if rule.unless_next is not None and rule.unless_next.search(after):
            continue
        found.append((number, text))
        if len(found) >= MAX_HITS_PER_RULE_AND_FILE:
            break
    return found


def _extra_change_hits(
    changes: Sequence[FileChange], extra: Sequence[DestructiveRule]
) -> list[Hit]:
    hits: list[Hit] = []
    for index, rule in enumerate(extra):
        globs = [re.compile(_glob_regex(glob)) for glob in rule.paths]
        patterns = [re.compile(source) for source in rule.lines]
        for change in changes:
            hits += _extra_hits(rule.cls, f"config:{index}", change, globs, patterns)
    return hits


def _extra_hits(
    cls: str,
    rule_id: str,
    change: FileChange,
    globs: Sequence[re.Pattern[str]],
    patterns: Sequence[re.Pattern[str]],
) -> Iterable[Hit]:
    if any(glob.fullmatch(change.path) for glob in globs):
        yield Hit(cls, rule_id, change.path, None, _STATUS_TEXT.get(change.status, "changed file"))
    count = 0
    for side, lines in (("+", change.added), ("-", change.removed)):
        for number, text in lines:
            # Also searched with the diff's own +/- in front, so `^\+` means "added only".
            if any(p.search(text) or p.search(side + text) for p in patterns):
                yield Hit(cls, rule_id, change.path, number, _clip(text))
                count += 1
                if count >= MAX_HITS_PER_RULE_AND_FILE:
                    return


def _ordered(hits: Iterable[Hit]) -> list[Hit]:
    """Unique hits, grouped by class in CLASSES order, then path, line and rule."""
    unique = dict.fromkeys(hits)
    return sorted(unique, key=lambda h: (_class_rank(h.cls), h.path, h.line or 0, h.rule))


def _class_rank(cls: str) -> int:
    return CLASSES.index(cls) if cls in CLASSES else len(CLASSES)


def classes_of(hits: Iterable[Hit]) -> tuple[str, ...]:
    """The classes hit, in CLASSES order (config-named classes last, by name)."""
    return tuple(sorted({hit.cls for hit in hits}, key=lambda cls: (_class_rank(cls), cls)))


# ---------------------------------------------------------------------------------------
# Text for people

_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def _one_line(text: str) -> str:
    return _CONTROL_RE.sub(" ", text)


def _clip(text: str) -> str:
    return _one_line(text.strip())[:TEXT_LIMIT]


def summarize(hits: Sequence[Hit], limit: int = 20) -> str:
    """One line for a gate detail: `class: path:line text; ... | class: ...`, `limit` items."""
    groups: dict[str, dict[str, None]] = {}  # class -> its items, unique, in order
    for hit in hits:
        groups.setdefault(hit.cls, {})[_summary_item(hit)] = None
    parts, room = [], max(limit, 0)
    for cls in classes_of(hits):
        shown = list(groups[cls])[:room]
        room -= len(shown)
        parts.append(f"{cls}: " + ("; ".join(shown) if shown else "…"))
    hidden = sum(len(items) for items in groups.values()) - (max(limit, 0) - room)
    tail = f" … (+{hidden} more)" if hidden > 0 else ""
    return _one_line(" | ".join(parts) + tail)


def _summary_item(hit: Hit) -> str:
    if hit.line is not None:
        return f"{hit.path}:{hit.line} {hit.text}"
    return hit.path or hit.text
