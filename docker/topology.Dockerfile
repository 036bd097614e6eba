# HAProxy and PgBouncer from Debian's archive (bookworm: 2.6 and 1.18), the same parts
# `npm run demo -- --webs N` starts; docker-compose.webs.yml runs one of them per service.
FROM debian:bookworm-slim
RUN apt-get update \
  && apt-get install -y --no-install-recommends haproxy pgbouncer \
  && rm -rf /var/lib/apt/lists/*
