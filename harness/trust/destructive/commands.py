"""Command rules: matched in declared step commands and in added lines of scripts, CI files,
Makefiles and code (a deploy written into a script deploys when the script runs)."""

from __future__ import annotations

import re

from harness.trust.destructive.line_rule import ARGS, AT, line_rule

COMMAND_RULES = (
    line_rule(
        "cmd-db-migrate",
        "schema_change",
        "alembic manage.py django-admin db: flyway liquibase prisma knex sequelize diesel sqlx -database goose atlas dbmate artisan dotnet",
        rf"\balembic\b{ARGS}\s(?:upgrade|downgrade|stamp)\b",
        r"\b(?:manage\.py|django-admin)\s+migrate\b",
        r"\b(?:rails|rake|bin/rails)\s+db:(?:migrate|rollback|schema:load|setup"
        r"|structure:load)\b",
        rf"\bflyway\b{ARGS}\s(?:migrate|repair|baseline|undo)\b",
        rf"\bliquibase\b{ARGS}\s(?:update|rollback)",
        r"\bprisma\s+(?:migrate\s+(?:deploy|dev|resolve)|db\s+push)\b",
        r"\bknex\s+migrate:(?:latest|up|down|rollback)\b",
        r"\bsequelize(?:-cli)?\s+db:migrate\b",
        r"\bdiesel\s+migration\s+(?:run|revert|redo)\b|\bsqlx\s+migrate\s+(?:run|revert)\b",
        rf"\bmigrate\b{ARGS}\s-database\b{ARGS}\s(?:up|down|drop|force|goto)\b",
        rf"\bgoose\b{ARGS}\s(?:up|up-by-one|up-to|down|down-to|redo|reset)\b",
        r"\batlas\s+(?:migrate|schema)\s+apply\b",
        rf"\bdbmate\b{ARGS}\s(?:up|down|rollback|migrate)\b",
        r"\bartisan\s+migrate\b|\bdotnet\s+ef\s+database\s+update\b",
        sides="+",
    ),
    line_rule(
        "cmd-data-drop",
        "data_deletion",
        "dropdb mysqladmin db: manage.py redis-cli flyway prisma sequelize dbmate artisan aws gsutil gcloud",
        r"\bdropdb\b",
        rf"\bmysqladmin\b{ARGS}\sdrop\b",
        r"\b(?:rails|rake|bin/rails)\s+db:(?:drop|reset|purge|truncate_all|seed:replant)\b",
        r"\bmanage\.py\s+(?:flush|reset_db|sqlflush)\b",
        rf"\bredis-cli\b{ARGS}\s(?i:flushall|flushdb)\b",
        rf"\bflyway\b{ARGS}\sclean\b",
        rf"\bprisma\s+(?:migrate\s+reset|db\s+push\b{ARGS}\s--accept-data-loss)\b",
        r"\bsequelize(?:-cli)?\s+db:drop\b",
        rf"\bdbmate\b{ARGS}\sdrop\b",
        r"\bartisan\s+(?:migrate:(?:fresh|reset|rollback)|db:wipe)\b",
        rf"\baws\s+s3\s+(?:rm\b{ARGS}\s--recursive\b|rb\b)",
        rf"\bgsutil\b{ARGS}\s(?:rm\s+-\w*r|rb)\b",
        rf"\bgcloud\s+storage\s+(?:rm\b{ARGS}\s--recursive\b|buckets\s+delete\b)",
        sides="+",
    ),
    line_rule(
        "cmd-infra-apply",
        "production_deploy",
        "terra tofu pulumi cdk sam serverless sls cloudformation ansible-playbook nomad",
        rf"\b(?:terraform|tofu|terragrunt)\b{ARGS}\s(?:apply|destroy|import|taint|untaint"
        r"|force-unlock|state\s+(?:rm|mv|push|replace-provider))\b",
        rf"\bpulumi\b{ARGS}\s(?:up|update|destroy|refresh|import|cancel)\b",
        rf"{AT}cdk\b{ARGS}\s(?:deploy|destroy)\b",
        rf"{AT}sam\s+(?:deploy|delete|sync)\b",
        r"\b(?:serverless|sls)\s+(?:deploy|remove|rollback)\b",
        r"\baws\s+cloudformation\s+(?:deploy|create-stack|update-stack|delete-stack"
        r"|execute-change-set|create-stack-set|update-stack-set|delete-stack-set)\b",
        r"\bansible-playbook\b|\bnomad\s+job\s+(?:run|stop|revert)\b",
        sides="+",
    ),
    line_rule(
        "cmd-kubernetes",
        "production_deploy",
        "kubectl oc helm skaffold argocd flux",
        rf"\b(?:kubectl|oc)\b{ARGS}\s(?:apply|create|delete|replace|patch|edit|scale"
        r"|autoscale|label|annotate|drain|cordon|uncordon|taint|expose|run"
        r"|rollout\s+(?:restart|undo|resume|pause)"
        r"|set\s+(?:image|env|resources|serviceaccount))\b",
        rf"\bhelm\b{ARGS}\s(?:install|upgrade|uninstall|delete|rollback)\b",
        rf"\bhelmfile\b{ARGS}\s(?:apply|sync|destroy|delete)\b",
        r"\bskaffold\s+(?:run|deploy|delete)\b",
        r"\bargocd\s+app\s+(?:sync|create|delete|set|rollback|patch)\b",
        r"\bflux\s+(?:reconcile|create|delete|suspend|resume)\b",
        sides="+",
    ),
    line_rule(
        "cmd-platform-deploy",
        "production_deploy",
        "fly heroku vercel netlify gcloud az eb cap railway firebase kamal copilot docker aws",
        r"\bfly(?:ctl)?\s+(?:deploy|scale|machine\s+(?:run|destroy|stop)|apps\s+destroy"
        r"|releases\s+rollback)\b",
        r"\bheroku\s+(?:container:release|releases:rollback|ps:scale|apps:destroy|pg:reset"
        r"|maintenance:on)\b",
        r"\bgit\s+push\s+(?:-\S+\s+)*heroku\b",
        rf"\bvercel\b{ARGS}\s--prod\b|\bvercel\s+(?:deploy|promote|rollback|alias|remove)\b",
        rf"\bnetlify\s+deploy\b{ARGS}\s--prod\b",
        rf"\bgcloud\s+(?:app|run|functions|deployment-manager)\b{ARGS}\s(?:deploy|create"
        r"|update|delete)\b",
        rf"{AT}az\s+(?:webapp|functionapp|containerapp|deployment)\b{ARGS}\s(?:deploy"
        r"|create|up|update|delete|restart)\b",
        rf"{AT}eb\s+(?:deploy|terminate|scale|swap)\b|{AT}cap\s+\w+\s+deploy\b",
        r"\brailway\s+(?:up|deploy)\b|\bfirebase\s+deploy\b|\bkamal\s+(?:deploy|setup"
        r"|rollback|redeploy)\b|\bcopilot\s+(?:svc\s+)?deploy\b",
        r"\bdocker\s+(?:stack\s+deploy|service\s+(?:create|update|rm|scale))\b",
        r"\baws\s+(?:ecs\s+(?:update-service|create-service|delete-service|run-task)"
        r"|lambda\s+(?:update-function-code|update-function-configuration|create-function"
        r"|delete-function|publish-version|update-alias)|deploy\s+create-deployment"
        r"|elasticbeanstalk\s+update-environment|apprunner\s+(?:start-deployment"
        r"|update-service))\b",
        rf"\baws\s+s3\s+sync\b{ARGS}\s--delete\b",
        sides="+",
    ),
    line_rule(
        "cmd-package-publish",
        "production_deploy",
        "publish deprecate twine cargo gem push mvn gradle goreleaser release",
        rf"\b(?:npm|pnpm|yarn)\b{ARGS}\s(?:publish|unpublish|deprecate)\b",
        r"\btwine\s+upload\b|\b(?:poetry|uv|flit|hatch|pdm)\s+publish\b",
        r"\bcargo\s+(?:publish|yank)\b|\bgem\s+(?:push|yank)\b",
        r"\b(?:docker|podman|buildah)\s+(?:image\s+)?push\b",
        rf"\bdocker\s+buildx\s+build\b{ARGS}\s--push\b",
        rf"\bmvn\b{ARGS}\s(?:deploy|release:perform)\b",
        rf"\bgradlew?\b{ARGS}\s(?:publish\w*|uploadArchives)\b",
        r"\bgoreleaser\s+release\b|\bgh\s+release\s+(?:create|upload|delete|edit)\b",
        r"\bdotnet\s+nuget\s+push\b|\bhelm\s+push\b",
        sides="+",
    ),
    line_rule(
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
    line_rule(
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
        rf"\bkubectl\b{ARGS}\screate\s+secret\b",
        rf"\bsops\b{ARGS}\s(?:-e|--encrypt|-r|--rotate|updatekeys|-i|--in-place|set|unset)\b",
        rf"\bssh-keygen\b{ARGS}\s-[tpN]\b",
        rf"\bopenssl\s+(?:genrsa|genpkey|ecparam\b{ARGS}\s-genkey|req\b{ARGS}\s-new(?:key)?)\b",
        r"\bcertbot\s+(?:certonly|renew|revoke|delete)\b",
        rf"\bgpg\b{ARGS}\s--(?:gen-key|full-generate-key|quick-gen-key|delete-secret-keys?"
        r"|import)\b",
        sides="+",
    ),
    line_rule(
        "cmd-iam-policy",
        "auth",
        "iam role kubectl",
        r"\baws\s+iam\s+(?:(?:attach|detach|put|delete)-(?:role|group|user)-policy"
        r"|(?:create|delete|set-default)-policy(?:-version)?|(?:create|delete|update)-role"
        r"|update-assume-role-policy|(?:add|remove)-role-(?:to|from)-instance-profile)\b",
        rf"\bgcloud\b{ARGS}\s(?:add|remove|set)-iam-policy(?:-binding)?\b",
        r"\baz\s+role\s+(?:assignment|definition)\s+(?:create|delete|update)\b",
        rf"\bkubectl\b{ARGS}\screate\s+(?:cluster)?rolebinding\b|\bkubectl\s+auth\s+reconcile\b",
        sides="+",
    ),
    line_rule(
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
        rf"\bgh\s+api\b{ARGS}/(?:collaborators|members|memberships|invitations|keys|hooks)\b",
        rf"\bgit\s+config\b{ARGS}\scredential\.helper\b",
        sides="+",
    ),
    line_rule(
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

# A command that runs a SQL client: there, lower-case SQL keywords count too.
SQL_CLIENT_RE = re.compile(
    r"(?:^|[\s/;&|(\"'])(?:psql|mysql|mariadb|sqlite3|sqlcmd|duckdb|clickhouse-client"
    r"|cqlsh|snowsql|bq|cockroach)\b"
)
