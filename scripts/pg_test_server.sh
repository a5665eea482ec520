#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: `start DIR` creates and starts one in a new
# directory under /tmp (listening on 127.0.0.1 only, on a free port, trust authentication)
# and writes its URL to DIR/url; `restart DIR` restarts it (a fault the tests inject);
# `stop DIR` stops it and removes both. PostgreSQL refuses
# to run as root, so under root the cluster belongs to an unprivileged system user,
# tessel-pg, created when missing (and /tmp, unlike a checkout under /root, is reachable
# for it).
set -euo pipefail

action=${1:?usage: pg_test_server.sh start|restart|stop DIR}
dir=${2:?usage: pg_test_server.sh start|restart|stop DIR}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bin" ] || { echo "pg_test_server: no PostgreSQL server installed (apt-get install postgresql)" >&2; exit 1; }

cd /  # the server's user may not be allowed into the caller's directory

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u tessel-pg -- "$@"; else "$@"; fi
}

case "$action" in
  start)
    "$0" stop "$dir"
    mkdir -p "$dir"
    cluster=$(mktemp -d /tmp/tessel-pg.XXXXXX)
    echo "$cluster" >"$dir/cluster"
    if [ "$(id -u)" -eq 0 ]; then
      id tessel-pg >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin tessel-pg
      chown tessel-pg "$cluster"
    fi
    as_owner "$bin/initdb" -D "$cluster/data" -U tessel --auth=trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 1; }
    # A free port: ask the kernel for one, then hand it to the server (a race with another
    # program taking it in between only makes the start fail, loudly).
    port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    # TESSEL_PG_EXTRA_LISTEN (addresses) and TESSEL_PG_EXTRA_NET (a CIDR trusted like
    # loopback) open it to network namespaces on this machine (tests/cli/test_remote_netns.sh).
    listen=127.0.0.1${TESSEL_PG_EXTRA_LISTEN:+,$TESSEL_PG_EXTRA_LISTEN}
    if [ -n "${TESSEL_PG_EXTRA_NET:-}" ]; then
      echo "host all all $TESSEL_PG_EXTRA_NET trust" >>"$cluster/data/pg_hba.conf"
    fi
    as_owner "$bin/pg_ctl" -D "$cluster/data" -l "$cluster/server.log" -w -t 60 \
      -o "-c listen_addresses=$listen -p $port -k $cluster -c fsync=off -c max_connections=200" start >/dev/null ||
      { cat "$cluster/server.log" >&2; exit 1; }
    echo "postgresql://tessel@127.0.0.1:$port/postgres" >"$dir/url"
    cat "$dir/url"
    ;;
  restart)
    # The tests' fault: the server goes away under running clients and comes back.
    cluster=$(cat "$dir/cluster")
    as_owner "$bin/pg_ctl" -D "$cluster/data" -m fast -w -t 60 restart >/dev/null
    ;;
  stop)
    if [ -f "$dir/cluster" ]; then
      cluster=$(cat "$dir/cluster")
      if [ -f "$cluster/data/postmaster.pid" ]; then as_owner "$bin/pg_ctl" -D "$cluster/data" -m fast -w stop >/dev/null || true; fi
      case "$cluster" in /tmp/tessel-pg.*) rm -rf "$cluster" ;; esac
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: pg_test_server.sh start|restart|stop DIR" >&2
    exit 2
    ;;
esac
