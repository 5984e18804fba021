"""Built-in rules: every rule fires on its example and stays quiet on its near miss, and
every rule is documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.trust.destructive.hits import CLASSES
from harness.trust.destructive.rules import RULE_CLASSES
from harness.trust.destructive.sizes import (
    DELETED_FILE_LINES,
    FILE_REMOVED_LINES,
    TOTAL_REMOVED_LINES,
)
from tests.trust.destructive.probes import Probe, added, command, path, removed, removing

SPEC = Path(__file__).resolve().parents[3] / "docs" / "specs" / "destructive.md"

GH_TOKEN = "ghp_" + "a1B2" * 9  # built here so that no literal token sits in the repository


# (rule id, fires?, probe). Every built-in rule has at least one row of each kind.
CASES: list[tuple[str, bool, Probe]] = [
    # schema_change
    ("migration-path", True, path("app/migrations/0002_drop_users.py")),
    ("migration-path", True, path("alembic/versions/3f2a_add_age.py", "M")),
    ("migration-path", True, path("db/migrate/20240101_create_users.rb", "D")),
    ("migration-path", False, path("tests/test_migrations.py")),
    ("migration-path", False, path("app/migrations/README.md")),
    ("migration-path", False, path("alembic/env.py")),
    ("schema-file", True, path("db/schema.rb", "M")),
    ("schema-file", True, path("prisma/schema.prisma")),
    ("schema-file", False, path("api/schema.graphql")),
    ("sql-ddl-create", True, added("db/tables.sql", "create table users (id int);")),
    ("sql-ddl-create", True, added("app/db.py", 'conn.execute("CREATE TABLE t (x INTEGER)")')),
    ("sql-ddl-create", False, added("app/search.py", "# create index of pages")),
    ("sql-ddl-create", False, added("docs/sql.md", "CREATE TABLE users (id int);")),
    ("sql-ddl-alter", True, added("m.sql", "ALTER TABLE users ADD COLUMN age int;")),
    ("sql-ddl-alter", True, removed("schema.sql", "alter table users rename column a to b;")),
    ("sql-ddl-alter", False, added("app/x.py", "alter_table_name = 'x'")),
    ("sql-ddl-drop", True, added("migrations/0002_drop_users.sql", "DROP TABLE users;")),
    ("sql-ddl-drop", True, added("app/x.py", 'cur.execute("DROP INDEX idx_users")')),
    ("sql-ddl-drop", False, added("app/x.py", "df.drop(columns=['a'])  # drop the table later")),
    ("sql-ddl-truncate", True, added("x.sql", "TRUNCATE TABLE events;")),
    ("sql-ddl-truncate", False, added("app/x.py", "handle.truncate(0)")),
    ("orm-migration-op", True, added("alembic/versions/x.py", "    op.drop_table('users')")),
    (
        "orm-migration-op",
        True,
        added(
            "app/migrations/0003.py", "        migrations.RemoveField(model_name='u', name='a'),"
        ),
    ),
    ("orm-migration-op", True, added("db/migrate/x.rb", "    remove_column :users, :age")),
    ("orm-migration-op", True, added("m.js", "  await queryInterface.addColumn('users', 'age')")),
    ("orm-migration-op", False, added("app/cache.py", "stop.drop_table_cache()")),
    ("cmd-db-migrate", True, command("alembic", "upgrade", "head")),
    ("cmd-db-migrate", True, command("python", "manage.py", "migrate")),
    ("cmd-db-migrate", True, added("entrypoint.sh", "bundle exec rails db:migrate")),
    ("cmd-db-migrate", False, command("alembic", "history")),
    ("cmd-db-migrate", False, command("python", "manage.py", "makemigrations", "--check")),
    # data_deletion
    ("sql-drop-data", True, added("x.sql", "DROP DATABASE shop;")),
    ("sql-drop-data", True, command("psql", "-c", "drop table users")),
    ("sql-drop-data", False, removed("x.sql", "DROP TABLE users;")),  # removing a drop
    ("sql-truncate-data", True, added("x.sql", "truncate sessions;")),
    ("sql-truncate-data", False, added("app/x.py", "text.truncate(80)")),
    ("sql-delete-all", True, added("x.sql", "DELETE FROM users;")),
    ("sql-delete-all", True, added("app/x.py", 'db.execute("DELETE FROM sessions")')),
    ("sql-delete-all", False, added("x.sql", "DELETE FROM users WHERE id = 1;")),
    ("sql-delete-all", False, added("app/x.py", '"DELETE FROM users"', '"  WHERE id = ?"')),
    ("sql-delete-all", False, added("app/x.py", 'f"DELETE FROM {table} WHERE id = ?"')),
    ("orm-drop-data", True, added("alembic/versions/x.py", "    op.drop_column('users', 'age')")),
    (
        "orm-drop-data",
        True,
        added("app/migrations/0004.py", "    migrations.DeleteModel('Order'),"),
    ),
    ("orm-drop-data", False, added("alembic/versions/x.py", "    op.create_table('users')")),
    ("orm-bulk-delete", True, added("app/x.py", "User.objects.all().delete()")),
    ("orm-bulk-delete", True, added("app/x.rb", "Order.destroy_all")),
    ("orm-bulk-delete", True, added("app/x.py", "db.session.query(User).delete()")),
    ("orm-bulk-delete", False, added("app/x.py", "User.objects.filter(id=1).delete()")),
    (
        "orm-bulk-delete",
        False,
        added("app/x.py", "db.session.query(User).filter_by(id=1).delete()"),
    ),
    ("shell-rm-recursive", True, added("scripts/reset.sh", "rm -rf data/")),
    ("shell-rm-recursive", True, added("Makefile", "\trm -rf $(DATA_DIR)")),
    ("shell-rm-recursive", True, added("x.py", 'subprocess.run(["rm", "-rf", path])')),
    ("shell-rm-recursive", True, added("x.sh", "sudo /bin/rm -r -f ~/backups")),
    ("shell-rm-recursive", True, command("sh", "-c", "rm -rf /")),
    (
        "shell-rm-recursive",
        False,
        added("Makefile", "\trm -rf build dist *.egg-info .pytest_cache"),
    ),
    ("shell-rm-recursive", False, added("x.sh", "rm -f out.log")),
    ("shell-rm-recursive", False, added("x.sh", 'rm -rf "$TMPDIR/work" /tmp/cache')),
    ("shell-rm-recursive", False, added("x.sh", "git rm -r --cached vendor")),
    ("shell-rm-recursive", False, added("docs/reset.md", "rm -rf data/")),
    ("data-file-deleted", True, path("data/customers.csv", "D")),
    ("data-file-deleted", True, path("app.sqlite3", "D")),
    ("data-file-deleted", True, path("tests/fixtures/users.json", "D")),
    ("data-file-deleted", False, path("src/customers.csv", "D")),
    ("data-file-deleted", False, path("data/new.csv", "A")),
    ("data-file-deleted", False, path("app.db", "M")),
    ("cmd-data-drop", True, command("dropdb", "app")),
    ("cmd-data-drop", True, command("redis-cli", "-n", "0", "FLUSHALL")),
    ("cmd-data-drop", True, command("bin/rails", "db:drop")),
    ("cmd-data-drop", True, command("aws", "s3", "rm", "s3://bucket/", "--recursive")),
    ("cmd-data-drop", False, command("redis-cli", "GET", "k")),
    ("cmd-data-drop", False, command("createdb", "app")),
    ("large-file-deletion", True, removing("src/legacy.py", DELETED_FILE_LINES + 1, "D")),
    ("large-file-deletion", False, removing("src/legacy.py", DELETED_FILE_LINES, "D")),
    ("large-file-deletion", False, removing("package-lock.json", 5000, "D")),
    ("large-removal-file", True, removing("src/big.py", FILE_REMOVED_LINES + 1)),
    ("large-removal-file", False, removing("src/big.py", FILE_REMOVED_LINES)),
    ("large-removal-file", False, removing("yarn.lock", 3000)),
    ("large-removal-total", True, removing("mod.py", TOTAL_REMOVED_LINES // 4 + 1, files=4)),
    ("large-removal-total", False, removing("mod.py", TOTAL_REMOVED_LINES // 4, files=4)),
    # secret_rotation
    ("secret-key-file", True, path("deploy/server.key")),
    ("secret-key-file", True, path("certs/tls.pem", "D")),
    ("secret-key-file", True, path(".ssh/id_ed25519", "M")),
    ("secret-key-file", False, path(".ssh/id_ed25519.pub")),
    ("secret-key-file", False, path("src/keys.py")),
    ("secret-env-file", True, path(".env")),
    ("secret-env-file", True, path(".env.production", "M")),
    ("secret-env-file", True, path("config/prod.env")),
    ("secret-env-file", False, path(".env.example")),
    ("secret-env-file", False, path("src/env.py")),
    ("secret-store-file", True, path("secrets.yaml")),
    ("secret-store-file", True, path("k8s/app.enc.yaml")),
    ("secret-store-file", True, path("credentials.json", "M")),
    ("secret-store-file", True, path("config/secrets/db.yml")),
    ("secret-store-file", False, path("src/secret_santa.py")),
    ("secret-store-file", False, path("docs/secrets.md")),
    ("secret-private-key-block", True, added("README.md", "-----BEGIN OPENSSH PRIVATE KEY-----")),
    ("secret-private-key-block", True, removed("k.pem", "-----BEGIN RSA PRIVATE KEY-----")),
    ("secret-private-key-block", False, added("cert.pem", "-----BEGIN CERTIFICATE-----")),
    ("secret-private-key-block", False, added("k.pub", "-----BEGIN PUBLIC KEY-----")),
    ("secret-token-literal", True, added("settings.py", 'KEY_ID = "AKIAIOSFODNN7EXAMPLE"')),
    ("secret-token-literal", True, added("ci.sh", f"export GH_TOKEN={GH_TOKEN}")),
    ("secret-token-literal", True, added("notes.txt", f"token: {GH_TOKEN}")),
    ("secret-token-literal", False, added("x.py", "token = os.environ['GITHUB_TOKEN']")),
    ("secret-token-literal", False, added("x.py", "AKIA_PREFIX = 'AKIA'")),
    ("secret-manifest", True, added("k8s/secret.yaml", "kind: Secret")),
    ("secret-manifest", True, added("main.tf", 'resource "aws_secretsmanager_secret" "db" {')),
    ("secret-manifest", False, added("k8s/cm.yaml", "kind: ConfigMap")),
    ("secret-manifest", False, added("notes.md", "kind: Secret")),
    ("secret-assignment", True, added("settings.py", "SECRET_KEY = 'q8x2Lw9vR3mN7pZ4kT6yB1c'")),
    ("secret-assignment", True, added("config.yaml", 'db_password: "Zx9Qw8Er7Ty6Ui5Op4"')),
    ("secret-assignment", True, removed("app.js", 'const apiKey = "9f8e7d6c5b4a39281706f5e4"')),
    ("secret-assignment", False, added("settings.py", "SECRET_KEY = os.environ['SECRET_KEY']")),
    ("secret-assignment", False, added("settings.py", "password = 'changeme-changeme-123'")),
    ("secret-assignment", False, added("tests/test_x.py", 'login(password="short")')),
    ("secret-assignment", False, added("x.yaml", 'password_file: "/run/secrets/db_password"')),
    ("cmd-secret-store", True, command("vault", "kv", "put", "secret/app", "key=v")),
    (
        "cmd-secret-store",
        True,
        command("aws", "secretsmanager", "rotate-secret", "--secret-id", "x"),
    ),
    ("cmd-secret-store", True, command("kubectl", "create", "secret", "generic", "db")),
    ("cmd-secret-store", True, command("ssh-keygen", "-t", "ed25519", "-f", "deploy_key")),
    ("cmd-secret-store", False, command("vault", "kv", "get", "secret/app")),
    ("cmd-secret-store", False, command("ssh-keygen", "-l", "-f", "key.pub")),
    # auth
    ("auth-path", True, path("app/auth/views.py", "M")),
    ("auth-path", True, path("src/middleware/authMiddleware.ts")),
    ("auth-path", True, path("templates/users/login.html")),
    ("auth-path", True, path("api/jwt_utils.py")),
    ("auth-path", True, path("src/OAuth2Client.java")),
    ("auth-path", True, path("app/permissions.py", "D")),
    ("auth-path", True, path(".ssh/authorized_keys")),
    ("auth-path", False, path("docs/authority.md")),
    ("auth-path", False, path("src/author.py")),
    ("auth-path", False, path("authors/list.py")),
    ("auth-path", False, path("static/login.png")),
    ("auth-path", False, path("docs/auth.md")),
    ("auth-path", False, path("src/authoring/editor.py")),
    ("auth-decorator", True, added("views.py", "@login_required")),
    ("auth-decorator", True, removed("views.py", "@login_required")),
    ("auth-decorator", True, added("Admin.java", "@PreAuthorize(\"hasRole('ADMIN')\")")),
    (
        "auth-decorator",
        True,
        added("users_controller.rb", "  skip_before_action :authenticate_user!"),
    ),
    ("auth-decorator", True, added("api.py", "    permission_classes = [AllowAny]")),
    ("auth-decorator", False, added("views.py", "@cache_page(60)")),
    ("auth-decorator", False, added("mail.py", "to = 'login_required@example.com'")),
    ("auth-verify-disabled", True, added("x.py", "requests.get(url, verify=False)")),
    (
        "auth-verify-disabled",
        True,
        added("x.py", 'jwt.decode(t, options={"verify_signature": False})'),
    ),
    ("auth-verify-disabled", False, added("x.py", "requests.get(url, verify=True)")),
    ("auth-verify-disabled", False, removed("x.py", "requests.get(url, verify=False)")),
    ("auth-access-policy", True, added("policy.json", '      "Effect": "Allow",')),
    ("auth-access-policy", True, added("main.tf", 'resource "aws_iam_role_policy" "x" {')),
    ("auth-access-policy", True, added("k8s/rbac.yaml", "kind: ClusterRoleBinding")),
    ("auth-access-policy", True, added("iam.tf", 'resource "aws_iam_user_policy" "ci" {')),
    ("auth-access-policy", False, added("anim.json", '"effect": "fade"')),
    ("auth-access-policy", False, added("main.tf", 'resource "aws_s3_bucket" "x" {')),
    ("cmd-iam-policy", True, command("aws", "iam", "attach-role-policy", "--role-name", "r")),
    ("cmd-iam-policy", True, command("gcloud", "projects", "add-iam-policy-binding", "p")),
    ("cmd-iam-policy", False, command("aws", "iam", "list-roles")),
    ("cmd-iam-policy", False, command("aws", "iam", "create-user", "--user-name", "bot")),
    # payments
    ("payments-path", True, path("billing/models.py", "M")),
    ("payments-path", True, path("src/payments/client.py")),
    ("payments-path", True, path("app/checkout.ts")),
    ("payments-path", True, path("src/SubscriptionService.java")),
    ("payments-path", False, path("docs/billing.md")),
    ("payments-path", False, path("src/paying_attention.py")),
    ("payments-sdk", True, added("app.py", "import stripe")),
    ("payments-sdk", True, added("package.json", '    "stripe": "^14.0.0",')),
    ("payments-sdk", True, added("requirements.txt", "stripe==7.0.0")),
    ("payments-sdk", True, added("x.js", "const stripe = require('stripe')(key);")),
    ("payments-sdk", True, added("x.py", "stripe.PaymentIntent.create(amount=100)")),
    ("payments-sdk", False, added("x.py", "# stripes on the flag")),
    ("payments-sdk", False, added("x.py", "pinstripe = 1")),
    ("payments-api", True, added("ci.sh", "stripe listen --forward-to localhost:8000/hook")),
    ("payments-api", True, added("x.py", 'URL = "https://api.stripe.com/v1/charges"')),
    ("payments-api", True, command("stripe", "refunds", "create", "--charge", "ch_1")),
    ("payments-api", False, added("x.py", "stripe_count = stripes + 2")),
    # production_deploy
    ("deploy-infra-code", True, path("infra/main.tf", "M")),
    ("deploy-infra-code", True, path("Pulumi.prod.yaml")),
    ("deploy-infra-code", True, path("envs/prod.tfvars")),
    ("deploy-infra-code", False, path("src/infrastructure/repository.py")),
    ("deploy-infra-code", False, path("src/tfidf.py")),
    ("deploy-kubernetes", True, path("k8s/web.yaml")),
    ("deploy-kubernetes", True, path("charts/api/Chart.yaml")),
    ("deploy-kubernetes", True, path("charts/api/templates/svc.yaml")),
    ("deploy-kubernetes", True, path("overlays/prod/kustomization.yaml")),
    ("deploy-kubernetes", False, path("src/components/charts/LineChart.tsx")),
    ("deploy-kubernetes", False, path("docs/k8s/README.md")),
    ("deploy-platform-file", True, path("Procfile", "M")),
    ("deploy-platform-file", True, path("fly.toml")),
    ("deploy-platform-file", True, path(".ebextensions/env.config")),
    ("deploy-platform-file", False, path("src/procfile_parser.py")),
    ("deploy-platform-file", False, path("Dockerfile")),
    ("deploy-config-mgmt", True, path("ansible/roles/web/tasks/main.yml")),
    ("deploy-config-mgmt", True, path("site-playbook.yml")),
    ("deploy-config-mgmt", False, path("src/playbook_editor.py")),
    ("deploy-config-mgmt", False, path("docs/ansible/intro.md")),
    ("deploy-path", True, path("scripts/deploy.sh")),
    ("deploy-path", True, path("deploy/prod/values.yaml")),
    ("deploy-path", True, path("bin/rollout_canary.py")),
    ("deploy-path", False, path("docs/deploy.md")),
    ("deploy-path", False, path("src/deployable.py")),
    ("deploy-manifest", True, added("app.yaml", "kind: Deployment")),
    ("deploy-manifest", True, added("template.yaml", "AWSTemplateFormatVersion: '2010-09-09'")),
    ("deploy-manifest", True, added("t.yaml", "    Type: AWS::Lambda::Function")),
    ("deploy-manifest", False, added("catalog-info.yaml", "kind: Component")),
    ("deploy-manifest", False, added("t.yaml", "    Type: AWS::IAM::Role")),
    ("cmd-infra-apply", True, command("terraform", "apply", "-auto-approve")),
    ("cmd-infra-apply", True, command("terraform", "-chdir=infra", "destroy")),
    ("cmd-infra-apply", True, command("pulumi", "up", "--yes")),
    ("cmd-infra-apply", True, command("ansible-playbook", "site.yml")),
    ("cmd-infra-apply", True, added("Makefile", "\tcd infra && terraform apply")),
    ("cmd-infra-apply", False, command("terraform", "plan")),
    ("cmd-infra-apply", False, command("pulumi", "preview")),
    ("cmd-kubernetes", True, command("kubectl", "apply", "-f", "k8s/")),
    ("cmd-kubernetes", True, command("kubectl", "-n", "prod", "rollout", "restart", "deploy/api")),
    ("cmd-kubernetes", True, command("helm", "upgrade", "--install", "api", "./chart")),
    ("cmd-kubernetes", False, command("kubectl", "get", "pods")),
    ("cmd-kubernetes", False, command("kubectl", "logs", "-l", "app=create")),
    ("cmd-kubernetes", False, command("helm", "template", "./chart")),
    ("cmd-platform-deploy", True, command("flyctl", "deploy")),
    ("cmd-platform-deploy", True, command("git", "push", "heroku", "main")),
    ("cmd-platform-deploy", True, command("vercel", "--prod")),
    ("cmd-platform-deploy", True, command("gcloud", "run", "deploy", "api")),
    ("cmd-platform-deploy", False, command("fly", "status")),
    ("cmd-platform-deploy", False, command("gcloud", "run", "services", "list")),
    ("cmd-package-publish", True, command("npm", "publish")),
    ("cmd-package-publish", True, command("twine", "upload", "dist/*")),
    ("cmd-package-publish", True, command("docker", "push", "ghcr.io/o/app:1")),
    ("cmd-package-publish", False, command("npm", "run", "prepublish")),
    ("cmd-package-publish", False, command("docker", "build", ".")),
    ("cmd-deploy-script", True, command("make", "deploy")),
    ("cmd-deploy-script", True, command("npm", "run", "deploy:prod")),
    ("cmd-deploy-script", True, command("bash", "scripts/deploy.sh")),
    ("cmd-deploy-script", True, added("package.json", '    "ship": "./deploy.sh prod",')),
    ("cmd-deploy-script", False, command("make", "test")),
    ("cmd-deploy-script", False, command("npm", "run", "build")),
    # branch_protection
    ("ci-pipeline", True, path(".github/workflows/ci.yml", "M")),
    ("ci-pipeline", True, path(".gitlab-ci.yml")),
    ("ci-pipeline", True, path("Jenkinsfile", "D")),
    ("ci-pipeline", True, path(".circleci/config.yml")),
    ("ci-pipeline", True, path("azure-pipelines.yml")),
    ("ci-pipeline", False, path(".github/ISSUE_TEMPLATE/bug.md")),
    ("ci-pipeline", False, path("src/workflows/engine.py")),
    ("repo-governance", True, path(".github/CODEOWNERS", "M")),
    ("repo-governance", True, path("CODEOWNERS")),
    ("repo-governance", True, path(".github/settings.yml")),
    ("repo-governance", True, path("renovate.json")),
    ("repo-governance", False, path(".github/FUNDING.yml")),
    ("repo-governance", False, path("config/settings.yml")),
    ("git-hooks", True, path(".pre-commit-config.yaml", "M")),
    ("git-hooks", True, path(".husky/pre-commit")),
    ("git-hooks", False, path("src/hooks/usePrice.ts")),
    ("git-push-protected", True, added("release.sh", "git push --force origin main")),
    ("git-push-protected", True, added("x.sh", "git push origin HEAD:main")),
    ("git-push-protected", True, added("x.sh", "git push origin :old-branch")),
    ("git-push-protected", True, command("git", "push", "-f")),
    ("git-push-protected", True, command("git", "push", "origin", "+feature")),
    ("git-push-protected", False, added("x.sh", "git push origin feature/login")),
    ("git-push-protected", False, command("git", "push", "-u", "origin", "my-branch")),
    ("git-hook-bypass", True, added("setup.sh", "git config core.hooksPath /dev/null")),
    ("git-hook-bypass", True, added("x.sh", 'git commit --no-verify -m "wip"')),
    ("git-hook-bypass", True, added(".github/workflows/ci.yml", "      - run: HUSKY=0 npm ci")),
    ("git-hook-bypass", False, added("x.sh", "git commit -m 'verify output'")),
    ("git-hook-bypass", False, added("x.sh", "curl --no-verify-ssl https://x")),
    (
        "branch-protection-api",
        True,
        command("gh", "api", "-X", "PUT", "repos/o/r/branches/main/protection"),
    ),
    ("branch-protection-api", True, added("gh.tf", 'resource "github_branch_protection" "m" {')),
    ("branch-protection-api", True, added(".github/settings.yml", "    required_status_checks:")),
    ("branch-protection-api", False, command("gh", "api", "repos/o/r/branches")),
    ("branch-protection-api", False, added("x.py", "protection_level = 3")),
    # external_accounts
    ("credential-config-file", True, path(".pypirc")),
    ("credential-config-file", True, path("ops/.aws/credentials", "M")),
    ("credential-config-file", True, path("ci/.docker/config.json")),
    ("credential-config-file", True, path("client_secret_123.json")),
    ("credential-config-file", False, path("src/aws/config.py")),
    ("credential-config-file", False, path(".npmrc")),
    ("dns-zone-file", True, path("dns/example.com.zone")),
    ("dns-zone-file", True, path("named.conf.local", "M")),
    ("dns-zone-file", False, path("src/dns/resolver.py")),
    (
        "registry-auth-token",
        True,
        added(".npmrc", "//npm.registry.example/:_authToken=${NPM_TOKEN}"),
    ),
    ("registry-auth-token", True, added(".yarnrc.yml", "npmAuthToken: abc")),
    ("registry-auth-token", False, added(".npmrc", "save-exact=true")),
    ("oauth-app-config", True, added("settings.py", "GITHUB_CLIENT_SECRET = env('GH_SECRET')")),
    ("oauth-app-config", True, added("oauth.json", '  "redirect_uris": ["https://x/cb"],')),
    ("oauth-app-config", False, added("x.py", "client_id = 'abc'")),
    ("oauth-app-config", False, added("x.py", "def rotate_client_secret_docs(): pass")),
    ("iam-account-resource", True, added("iam.tf", 'resource "aws_iam_user" "ci" {')),
    ("iam-account-resource", True, added("cfn.yaml", "    Type: AWS::IAM::AccessKey")),
    ("iam-account-resource", False, added("iam.tf", 'resource "aws_iam_user_policy" "ci" {')),
    ("cmd-account-admin", True, command("aws", "iam", "create-user", "--user-name", "bot")),
    ("cmd-account-admin", True, command("aws", "iam", "create-access-key")),
    ("cmd-account-admin", True, command("docker", "login", "-u", "x")),
    ("cmd-account-admin", True, command("gh", "auth", "login")),
    ("cmd-account-admin", False, command("aws", "iam", "list-users")),
    ("cmd-account-admin", False, command("aws", "configure", "get", "region")),
    ("cmd-account-admin", False, command("gh", "auth", "status")),
    ("cmd-platform-secret", True, command("gh", "secret", "set", "NPM_TOKEN")),
    ("cmd-platform-secret", True, command("heroku", "config:set", "KEY=v")),
    ("cmd-platform-secret", True, command("fly", "secrets", "set", "K=v")),
    ("cmd-platform-secret", False, command("gh", "secret", "list")),
    ("cmd-platform-secret", False, command("heroku", "config:get", "KEY")),
    # git_behaviour (exact details: test_file_rules.py)
    (
        "gitattributes-checkout",
        True,
        added(".gitattributes", "*.sh working-tree-encoding=UTF-16LE"),
    ),
    ("gitattributes-checkout", False, added(".gitattributes", "*.md linguist-documentation")),
    ("git-checkout-config", True, path(".gitmodules", "M")),
    ("git-checkout-config", True, path(".lfsconfig")),
    ("git-checkout-config", False, path("docs/gitmodules.md")),
    # dependencies (exact details: test_file_rules.py)
    ("npm-lifecycle-script", True, added("package.json", '"postinstall": "node x.js",')),
    ("npm-lifecycle-script", False, added("package.json", '"test": "jest",')),
    ("package-index-config", True, added("requirements.txt", "--extra-index-url https://x/simple")),
    ("package-index-config", False, added("requirements.txt", "requests==2.31.0")),
    ("toml-package-index", True, added("pyproject.toml", 'index-url = "https://x/simple"')),
    ("toml-package-index", False, added("pyproject.toml", 'name = "app"')),
    ("lockfile-source-host", True, added("yarn.lock", '  resolved "https://x.example/a.tgz"')),
    (
        "lockfile-source-host",
        False,
        added("yarn.lock", '  resolved "https://registry.yarnpkg.com/a"'),
    ),
]


def _case_id(case: tuple[str, bool, Probe]) -> str:
    rule, fires, probe = case
    return f"{rule}:{'fires' if fires else 'quiet'}:{probe.label}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(case) for case in CASES])
def test_rule_table(case: tuple[str, bool, Probe]) -> None:
    rule, fires, probe = case
    hits = probe.hits()
    matching = [hit for hit in hits if hit.rule == rule]
    assert bool(matching) is fires, [hit.describe() for hit in hits]
    assert all(hit.cls == RULE_CLASSES[rule] for hit in matching)


def test_every_builtin_rule_has_a_firing_and_a_quiet_case() -> None:
    firing = {rule for rule, fires, _ in CASES if fires}
    quiet = {rule for rule, fires, _ in CASES if not fires}
    assert firing == set(RULE_CLASSES), firing ^ set(RULE_CLASSES)
    assert quiet == set(RULE_CLASSES), quiet ^ set(RULE_CLASSES)


def test_every_builtin_rule_is_documented() -> None:
    spec = SPEC.read_text(encoding="utf-8")
    missing = [rule for rule in RULE_CLASSES if f"`{rule}`" not in spec]
    assert missing == []
    for threshold in (DELETED_FILE_LINES, FILE_REMOVED_LINES, TOTAL_REMOVED_LINES):
        assert f"{threshold:,}" in spec


def test_every_class_has_rules_and_every_rule_a_known_class() -> None:
    assert set(RULE_CLASSES.values()) == set(CLASSES)


def test_every_line_rule_compiles_its_expressions() -> None:
    # They are compiled on first use (performance.md): a broken one must not wait for the
    # first diff that reaches it.
    from harness.trust.destructive.rules import LINE_RULES

    for rule in LINE_RULES:
        assert rule.needle_re.search(" ".join(rule.needles)) is not None, rule.id
        assert rule.pattern.pattern == rule.source, rule.id
        assert (rule.sql_pattern is not None) == rule.sql, rule.id
        assert (rule.unless_next is not None) == (rule.unless_source is not None), rule.id
