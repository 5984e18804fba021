"""Path rules: what a file is, whatever its content (a migration, a key, a CI pipeline)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.trust.destructive.paths import PathFacts, glob_any, name_globs


@dataclass(frozen=True)
class PathRule:
    id: str
    cls: str
    test: Callable[[PathFacts], bool]
    statuses: str = "AMD"


_MIGRATION_DIRS = frozenset({"migrations", "migration", "flyway"})
_SCHEMA_NAMES = frozenset(
    {"schema.rb", "structure.sql", "schema.sql", "schema.prisma"}
    | {f"db.changelog-master.{ext}" for ext in ("xml", "yaml", "yml", "json")}
)


def _is_migration(p: PathFacts) -> bool:
    located = p.in_dir(_MIGRATION_DIRS) or p.under("alembic", "versions")
    return not p.prose and (located or p.under("db", "migrate") or p.under("db", "changelog"))


def _is_schema_file(p: PathFacts) -> bool:
    return p.name in _SCHEMA_NAMES or p.suffix == ".prisma"


_DB_SUFFIXES = frozenset({".db", ".sqlite", ".sqlite3", ".db3", ".mdb", ".accdb", ".dump"})
_TABLE_SUFFIXES = frozenset(
    {".csv", ".tsv", ".parquet", ".json", ".jsonl", ".ndjson", ".yaml", ".yml", ".xml"}
    | {".xls", ".xlsx", ".avro", ".orc", ".feather", ".arrow", ".h5", ".hdf5", ".npy"}
    | {".npz", ".pkl", ".pickle", ".sql", ".gz", ".zip"}
)
_DATA_DIRS = frozenset({"data", "datasets", "dataset", "fixtures", "seeds", "seed", "dumps"})


def _is_data_file(p: PathFacts) -> bool:
    return p.suffix in _DB_SUFFIXES or (p.suffix in _TABLE_SUFFIXES and p.in_dir(_DATA_DIRS))


_KEY_NAMES = frozenset(
    {"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk"}
)
_KEY_SUFFIXES = frozenset(
    {".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk", ".kdbx", ".p8"}
)


def _is_key_file(p: PathFacts) -> bool:
    return p.suffix in _KEY_SUFFIXES or p.name in _KEY_NAMES


_ENV_TEMPLATES = ("example", "sample", "template", "dist", "defaults", "schema")


def _is_env_file(p: PathFacts) -> bool:
    named = p.name in (".env", ".envrc") or p.name.startswith(".env.") or p.suffix == ".env"
    return named and not any(word in p.name for word in _ENV_TEMPLATES)


_SECRET_STORE_NAMES = frozenset(
    {"secrets.yaml", "secrets.yml", "secrets.json", "secrets.toml", "secret.yaml"}
    | {"secret.yml", ".sops.yaml", "credentials.json", "service-account.json", "vault.yml"}
    | {"service_account.json", "vault.yaml", ".vault_pass", ".vault-password"}
)
_SECRET_STORE_GLOBS = name_globs(
    "*.enc.yaml", "*.enc.yml", "*.enc.json", "*.enc.env", "*.sops.*", "*service-account*.json"
)


def _is_secret_store(p: PathFacts) -> bool:
    listed = p.name in _SECRET_STORE_NAMES or glob_any(p.name, _SECRET_STORE_GLOBS)
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


def _is_auth(p: PathFacts) -> bool:
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


def _is_payments(p: PathFacts) -> bool:
    return bool(p.words & _PAYMENT_WORDS) and not (p.prose or p.asset)


_INFRA_SUFFIXES = frozenset({".tf", ".tfvars", ".hcl", ".nomad", ".bicep"})
_INFRA_NAMES = frozenset({"pulumi.yaml", "pulumi.yml", "cdk.json", "samconfig.toml"})
_INFRA_GLOBS = name_globs("*.tf.json", "pulumi.*.yaml", "pulumi.*.yml", "*.cfn.*")
_INFRA_DIRS = frozenset({"terraform", "pulumi", "cloudformation", "cfn", "iac", "cdk"})


def _is_infra_code(p: PathFacts) -> bool:
    named = p.name in _INFRA_NAMES or glob_any(p.name, _INFRA_GLOBS)
    located = p.in_dir(_INFRA_DIRS) and not p.prose
    return p.suffix in _INFRA_SUFFIXES or named or located


_K8S_DIRS = frozenset({"k8s", "kubernetes", "kustomize", "helm", "argocd", "gitops", "openshift"})
_K8S_NAMES = frozenset(
    {"chart.yaml", "kustomization.yaml", "kustomization.yml", "skaffold.yaml", ".helmignore"}
    | {"skaffold.yml", "helmfile.yaml", "helmfile.yml"}
)
_CHART_SUFFIXES = frozenset({".yaml", ".yml", ".tpl", ".json"})


def _is_kubernetes(p: PathFacts) -> bool:
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


def _is_platform_file(p: PathFacts) -> bool:
    return p.name in _PLATFORM_NAMES or p.in_dir(_PLATFORM_DIRS)


_CONFIG_MGMT_DIRS = frozenset({"ansible", "playbooks", "cookbooks", "puppet", "chef", "pillar"})
_PLAYBOOK_GLOBS = name_globs("*playbook*.yml", "*playbook*.yaml", "ansible.cfg")


def _is_config_mgmt(p: PathFacts) -> bool:
    located = p.in_dir(_CONFIG_MGMT_DIRS) and not p.prose
    return located or glob_any(p.name, _PLAYBOOK_GLOBS)


_DEPLOY_WORDS = frozenset(
    {"deploy", "deploys", "deployment", "deployments", "deployer", "rollout", "rollouts"}
    | {"provision", "provisioning"}
)


def _is_deploy_path(p: PathFacts) -> bool:
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


def _is_ci(p: PathFacts) -> bool:
    github = p.under(".github", "workflows") or p.under(".github", "actions")
    named = p.name in _CI_NAMES or p.name.startswith("jenkinsfile.")
    return github or named or p.in_dir(_CI_DIRS) or p.under(".gitlab", "ci")


_GOVERNANCE_NAMES = frozenset(
    {"codeowners", "renovate.json", "renovate.json5", ".renovaterc", ".renovaterc.json"}
    | {".mergify.yml", "mergify.yml", ".kodiak.toml", "bors.toml"}
)
_GOVERNANCE_GLOBS = name_globs("branch-protection*", "branch_protection*", "branch-rules*")


def _is_governance(p: PathFacts) -> bool:
    github = p.dirs == (".github",) and p.name in ("settings.yml", "dependabot.yml")
    named = p.name in _GOVERNANCE_NAMES or glob_any(p.name, _GOVERNANCE_GLOBS)
    return github or named or p.under(".github", "rulesets")


_HOOK_NAMES = frozenset(
    {".pre-commit-config.yaml", ".pre-commit-config.yml", "lefthook.yml", "lefthook.yaml"}
    | {".lefthook.yml", "lefthook-local.yml", ".overcommit.yml"}
)


def _is_git_hooks(p: PathFacts) -> bool:
    return p.name in _HOOK_NAMES or p.in_dir(frozenset({".githooks", ".husky", ".git-hooks"}))


_CREDENTIAL_NAMES = frozenset(
    {".pypirc", ".netrc", "_netrc", ".git-credentials", ".dockercfg", ".terraformrc"}
    | {"terraform.rc", "kubeconfig", ".boto", ".s3cfg"}
)
_CREDENTIAL_GLOBS = name_globs("client_secret*.json", "*.kubeconfig", "kubeconfig*")
_CREDENTIAL_IN_DIR = frozenset(
    {(".aws", "credentials"), (".aws", "config"), (".kube", "config"), (".gem", "credentials")}
    | {(".docker", "config.json"), (".cargo", "credentials"), (".cargo", "credentials.toml")}
    | {("gh", "hosts.yml")}
)


def _is_credential_config(p: PathFacts) -> bool:
    parent = p.dirs[-1] if p.dirs else ""
    in_dir = (parent, p.name) in _CREDENTIAL_IN_DIR
    return in_dir or p.name in _CREDENTIAL_NAMES or glob_any(p.name, _CREDENTIAL_GLOBS)


_DNS_GLOBS = name_globs("*.zone", "*.zonefile", "named.conf*", "dnsconfig.js")


def _is_dns_zone(p: PathFacts) -> bool:
    return glob_any(p.name, _DNS_GLOBS) or p.in_dir(frozenset({"octodns"}))


# Read when a commit is checked out: which submodules are cloned and from where, and which
# server Git LFS fetches the real content of pointer files from.
_GIT_CHECKOUT_NAMES = frozenset({".gitmodules", ".lfsconfig"})


def _is_git_checkout_config(p: PathFacts) -> bool:
    return p.name in _GIT_CHECKOUT_NAMES


PATH_RULES = (
    PathRule("migration-path", "schema_change", _is_migration),
    PathRule("schema-file", "schema_change", _is_schema_file),
    PathRule("data-file-deleted", "data_deletion", _is_data_file, statuses="D"),
    PathRule("secret-key-file", "secret_rotation", _is_key_file),
    PathRule("secret-env-file", "secret_rotation", _is_env_file),
    PathRule("secret-store-file", "secret_rotation", _is_secret_store),
    PathRule("auth-path", "auth", _is_auth),
    PathRule("payments-path", "payments", _is_payments),
    PathRule("deploy-infra-code", "production_deploy", _is_infra_code),
    PathRule("deploy-kubernetes", "production_deploy", _is_kubernetes),
    PathRule("deploy-platform-file", "production_deploy", _is_platform_file),
    PathRule("deploy-config-mgmt", "production_deploy", _is_config_mgmt),
    PathRule("deploy-path", "production_deploy", _is_deploy_path),
    PathRule("ci-pipeline", "branch_protection", _is_ci),
    PathRule("repo-governance", "branch_protection", _is_governance),
    PathRule("git-hooks", "branch_protection", _is_git_hooks),
    PathRule("credential-config-file", "external_accounts", _is_credential_config),
    PathRule("dns-zone-file", "external_accounts", _is_dns_zone),
    PathRule("git-checkout-config", "git_behaviour", _is_git_checkout_config),
)
