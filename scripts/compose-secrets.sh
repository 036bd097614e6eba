#!/bin/sh
# Writes the secrets docker-compose.yml requires into .env, which compose reads:
#
#   sh scripts/compose-secrets.sh && docker compose up --build
#
# A fresh random value (256 bits, hex) for each variable missing from the file; a value
# already there is kept, so running it again changes nothing (PostgreSQL keeps the password
# its volume was created with). Prints the names it wrote or kept, never a value. The file
# is created mode 0600; .env is git-ignored and not copied into the image (.dockerignore).
# The variables are packages/env's SECRET_VARIABLES (the demo merchants' API keys among them,
# `once_live_` + hex) plus the database password (test/deployment-secrets.test.ts holds the
# three lists together). An operator signs in to /ops with a merchant's API key: read it
# from .env. Optional argument: the
# file to write (default: .env next to docker-compose.yml).
set -eu

env_file="${1:-$(dirname "$0")/../.env}"

random_hex() {
  if command -v openssl >/dev/null 2>&1; then
    openssl rand -hex 32
  else
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n'
  fi
}

umask 077
touch "$env_file"
for name in SESSION_SECRET PROCESSOR_WEBHOOK_SECRET PROCESSOR_ADMIN_TOKEN ONCE_ANSWER_KEY \
  ONCE_DEMO_API_KEY_TENANT_A ONCE_DEMO_API_KEY_TENANT_B POSTGRES_PASSWORD; do
  if grep -q "^${name}=." "$env_file"; then
    echo "compose-secrets: kept ${name} (already in ${env_file})"
    continue
  fi
  value=$(random_hex)
  case "$name" in
    PROCESSOR_WEBHOOK_SECRET) value="whsec_${value}" ;;
    ONCE_DEMO_API_KEY_*) value="once_live_${value}" ;;
  esac
  # A line left empty (NAME=) would shadow the new one for compose: drop it first.
  if grep -q "^${name}=" "$env_file"; then
    grep -v "^${name}=" "$env_file" >"${env_file}.tmp" || true
    mv "${env_file}.tmp" "$env_file"
  fi
  printf '%s=%s\n' "$name" "$value" >>"$env_file"
  echo "compose-secrets: wrote ${name} to ${env_file}"
done
