# One image for every app; docker-compose picks the command. Node 20 on Debian, like CI.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NEXT_TELEMETRY_DISABLED=1
# Workspace packages export their TypeScript sources under this condition (dist/ otherwise).
ENV NODE_OPTIONS=--conditions=@once/source
COPY package.json package-lock.json ./
COPY apps/web/package.json apps/web/
COPY apps/worker/package.json apps/worker/
COPY apps/processor/package.json apps/processor/
COPY packages/api/package.json packages/api/
COPY packages/backoff/package.json packages/backoff/
COPY packages/db/package.json packages/db/
COPY packages/postgres/package.json packages/postgres/
COPY packages/invariant/package.json packages/invariant/
COPY packages/env/package.json packages/env/
COPY packages/idempotency/package.json packages/idempotency/
COPY packages/payments/package.json packages/payments/
COPY e2e/package.json e2e/
COPY bench/package.json bench/
# npm ci applies them (postinstall): a fix to postgres.js that upstream has not released.
COPY patches patches/
RUN npm ci --no-audit --no-fund
COPY . .
RUN cd apps/web && node ../../node_modules/next/dist/bin/next build
ENV NODE_ENV=production
# Every server listens on HOST (default 0.0.0.0, so other containers and published ports reach
# it; 127.0.0.1 would be this container alone): web 3000, processor 4100, worker /healthz 4200.
EXPOSE 3000 4100 4200
