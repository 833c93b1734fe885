# tests/support/http_standin.sh — sourced by shell tests that need a plain
# HTTP upstream on the host's loopback (python3's http.server, a port the
# kernel picks: traffic to loopback only).
#
# start_http_standin DIR LOG: serves DIR; sets UPSTREAM_PID and PORT (empty
# when it did not start within 60 s; LOG then says why). The caller kills
# UPSTREAM_PID in its cleanup.
start_http_standin() {
  local dir=$1 log=$2 i
  (cd "$dir" && exec python3 -u -m http.server --bind 127.0.0.1 0 > "$log" 2>&1) &
  UPSTREAM_PID=$!
  PORT=
  for ((i = 0; i < 600; i++)); do
    PORT=$(sed -n 's/.* port \([0-9][0-9]*\) .*/\1/p' "$log" | head -1)
    [ -n "$PORT" ] && return 0
    sleep 0.1
  done
  return 1
}
