"""Statement rules: SQL, ORM migrations, secrets, auth, payments, manifests, scripts and
accounts, found in added or removed lines (and in declared commands)."""

from __future__ import annotations

import re

from harness.trust.destructive.line_rule import ARGS, AT, TABLE, anywhere, line_rule
from harness.trust.destructive.names import real_secret

_SQL_OBJECTS = "TABLE|INDEX|VIEW|SCHEMA|DATABASE|SEQUENCE|TYPE|TRIGGER|DOMAIN|EXTENSION"
_SQL_RULES = (
    line_rule(
        "sql-ddl-create",
        "schema_change",
        "create",
        r"\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:(?:UNIQUE|TEMP|TEMPORARY|GLOBAL|LOCAL|UNLOGGED"
        rf"|MATERIALIZED|VIRTUAL|FOREIGN)\s+)*(?:{_SQL_OBJECTS})\b",
        sql=True,
    ),
    line_rule(
        "sql-ddl-alter",
        "schema_change",
        "alter rename column constraint",
        rf"\bALTER\s+(?:MATERIALIZED\s+)?(?:{_SQL_OBJECTS}|COLUMN)\b",
        r"\bRENAME\s+(?:TABLE|COLUMN)\b",
        r"\bADD\s+(?:COLUMN|CONSTRAINT)\b",
        sql=True,
    ),
    line_rule(
        "sql-ddl-drop",
        "schema_change",
        "drop",
        rf"\bDROP\s+(?:(?:MATERIALIZED|TEMPORARY|TEMP|FOREIGN)\s+)?(?:{_SQL_OBJECTS}|COLUMN"
        r"|CONSTRAINT)\b",
        sql=True,
    ),
    line_rule(
        "sql-ddl-truncate",
        "schema_change",
        "truncate",
        rf"\bTRUNCATE\s+(?:TABLE\s+)?{TABLE}",
        sql=True,
    ),
    line_rule(
        "sql-drop-data",
        "data_deletion",
        "drop",
        r"\bDROP\s+(?:TABLE|DATABASE|SCHEMA|COLUMN)\b",
        sides="+",
        sql=True,
    ),
    line_rule(
        "sql-truncate-data",
        "data_deletion",
        "truncate",
        rf"\bTRUNCATE\s+(?:TABLE\s+)?{TABLE}",
        sides="+",
        sql=True,
    ),
    line_rule(
        "sql-delete-all",
        "data_deletion",
        "delete",
        # Nothing but the end of the statement after the table name: no WHERE.
        rf"\bDELETE\s+FROM\s+{TABLE}\s*(?:;|$|[\"'`)])",
        sides="+",
        sql=True,
        # The WHERE of a statement split over lines, also as the next piece of a string.
        unless_next=r"^\s*(?:[+(]\s*)?(?:[rbfu]{0,2}[\"'`]+)?\s*(?:WHERE|USING)\b",
    ),
)

_ORM_RULES = (
    line_rule(
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
    line_rule(
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
    line_rule(
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

_SECRET_RULES = (
    line_rule(
        "secret-private-key-block",
        "secret_rotation",
        "private key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
        scope=anywhere,
    ),
    line_rule(
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
        scope=anywhere,
    ),
    line_rule(
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
    line_rule(
        "secret-assignment",
        "secret_rotation",
        "secret passw api_key api-key apikey access_key access-key accesskey auth_token auth-token authtoken private_key private-key privatekey signing_key signing-key signingkey",
        r"(?i:secret|password|passwd|api[_-]?key|access[_-]?key|auth[_-]?token"
        r"|private[_-]?key|signing[_-]?key)[\w.-]{0,64}[\"']?\s*(?:=|:|:=|=>)\s*"
        r"[\"'](?P<value>[^\"'\s]{16,})[\"']",
        accept=real_secret,
    ),
)

_AUTH_RULES = (
    line_rule(
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
    line_rule(
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
    line_rule(
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
    line_rule(
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
    line_rule(
        "payments-api",
        "payments",
        "stripe paypal braintree razorpay mollie adyen",
        AT + r"stripe\s+[a-z]",
        r"\bapi\.stripe\.com\b|\bapi(?:-m)?\.(?:sandbox\.)?paypal\.com\b",
        r"\bbraintreegateway\.com\b|\bapi\.razorpay\.com\b|\bapi\.mollie\.com\b",
        r"\b(?:checkout|pal)-(?:test|live)\.adyen\.com\b",
        sides="+",
    ),
)

_DEPLOY_LINE_RULES = (
    line_rule(
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
    line_rule(
        "shell-rm-recursive",
        "data_deletion",
        "rm",
        r"(?<![\w.-])(?<!git )rm\s+(?P<args>[^;&|\n`)#>]*)",
        r"[\"']rm[\"']\s*,\s*[\"'](?P<listflag>-{1,2}[\w-]+)[\"']",
        sides="+",
        accept=_risky_rm,
    ),
    line_rule(
        "git-push-protected",
        "branch_protection",
        "push",
        r"\bgit(?:\s+-[cC]\s+\S+)*\s+push\b(?P<args>[^;&|\n`)#]*)",
        sides="+",
        accept=_risky_push,
    ),
    line_rule(
        "git-hook-bypass",
        "branch_protection",
        "hookspath --no-verify husky",
        r"\bcore\.hooksPath\b",
        rf"\bgit\b{ARGS}\s--no-verify\b",
        r"\bHUSKY\s*=\s*[\"']?0\b",
        sides="+",
    ),
    line_rule(
        "branch-protection-api",
        "branch_protection",
        "/protection resource ruleset protected_branches branch_protection required_status_checks enforce_admins required_pull_request_reviews",
        r"/branches/[^/\s\"']+/protection\b",
        r"\bresource\s+\"(?:github_branch_protection(?:_v3)?|github_repository_ruleset"
        r"|github_organization_ruleset|gitlab_branch_protection|gitlab_tag_protection"
        r"|github_branch_default|bitbucket_branch_restriction)\"",
        rf"\bgh\s+(?:api\b{ARGS}\brulesets\b|ruleset\s+\w+)",
        r"\bprotected_branches\b|\bbranch_protection_rules?\b",
        r"\brequired_status_checks\b|\benforce_admins\b|\brequired_pull_request_reviews\b",
    ),
)

_ACCOUNT_RULES = (
    line_rule(
        "registry-auth-token",
        "external_accounts",
        "_authtoken npmauthtoken :_password _auth twine_password poetry_pypi_token_ poetry_http_basic_ uv_publish_token node_auth_token cargo_registry_token gem_host_api_key",
        r"_authToken\b|\bnpmAuthToken\b|:_password\s*=|(?:^|\s)_auth\s*=",
        r"\bTWINE_PASSWORD\b|\bPOETRY_PYPI_TOKEN_\w+|\bPOETRY_HTTP_BASIC_\w+_PASSWORD\b",
        r"\bUV_PUBLISH_TOKEN\b|\bNODE_AUTH_TOKEN\b|\bCARGO_REGISTRY_TOKEN\b",
        r"\bGEM_HOST_API_KEY\b",
    ),
    line_rule(
        "oauth-app-config",
        "external_accounts",
        "client_secret clientsecret redirect_uri authorized_javascript_origins",
        r"(?i:client_?secret)\w*[\"']?\s*(?:=|:|=>)",
        r"\b(?i:redirect_uris?|authorized_javascript_origins)[\"']?\s*[:=]",
    ),
    line_rule(
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

STATEMENT_RULES = (
    *_SQL_RULES,
    *_ORM_RULES,
    *_SECRET_RULES,
    *_AUTH_RULES,
    *_PAYMENT_RULES,
    *_DEPLOY_LINE_RULES,
    *_SCRIPT_RULES,
    *_ACCOUNT_RULES,
)
