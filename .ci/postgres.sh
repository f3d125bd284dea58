# Sourced by .ci/run: a real PostgreSQL for the history store's tests, from Debian's packages,
# started on loopback as the postgres user (the server refuses to run as root) and stopped on exit.
# Exports RUN_MATRIX_TEST_POSTGRES_URL (no password in it) and PGPASSWORD, which libpq reads.
{ set +x; } 2>/dev/null
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
PG_DIR=$(mktemp -d /tmp/run-matrix-pg.XXXXXX)
PG_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
PGPASSWORD=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
export PGPASSWORD
printf '%s\n' "$PGPASSWORD" > "$PG_DIR/password"
as_root chown -R postgres "$PG_DIR"
as_root runuser -u postgres -- "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth=scram-sha-256 \
  --pwfile="$PG_DIR/password" --no-sync
as_root rm "$PG_DIR/password"
as_root runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w \
  -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_DIR" start
trap 'as_root runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop' EXIT
export RUN_MATRIX_TEST_POSTGRES_URL="postgresql://postgres@127.0.0.1:$PG_PORT/postgres"
export RUN_MATRIX_POSTGRES=required
set -x
