# shellcheck shell=bash
# tools/bench/gateway-peers.sh — the peers tools/bench/gateway.sh measures corral
# against, each started from its own config in the bench's work dir, on 127.0.0.1
# only, its pid added to the bench's `pids` (killed by its trap). Sourced by
# gateway.sh; uses its work, pids, free_port, secret, https_port and bulk_port.
#   start_tinyproxy   (a): a CONNECT proxy; sets tp_port
#   start_tcp_relay   (a): haproxy in TCP mode straight to the bulk upstream (no
#                     CONNECT; splice-auto and 256 KiB buffers, its best of the
#                     variants tried by hand): what a bare relay costs on this machine;
#                     sets relay_port, or leaves it empty when haproxy is not installed
#   start_mitmproxy   (b): mitmdump with an addon doing corral's header rewrite; sets mp_port
#   start_nginx, start_haproxy
#                     (b): reverse proxies doing corral's inject work; each sets
#                     <peer>_port and <peer>_key_check and appends itself to `peers`,
#                     or says it is not installed and is skipped

wait_port() {  # port log: until 127.0.0.1:port accepts, 5 s at most
  for _ in $(seq 1 50); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$1))" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "gateway.sh: nothing listens on 127.0.0.1:$1 after 5 s; $2:" >&2; cat "$2" >&2; return 1
}

start_tinyproxy() {
  echo "# tinyproxy" >&2
  tp_port=$(free_port)
  {
    echo "Port $tp_port"; echo "Listen 127.0.0.1"; echo "MaxClients 1024"; echo "ConnectPort $bulk_port"
    echo "LogLevel Critical"
    if [ "$(id -u)" -eq 0 ]; then echo "User nobody"; echo "Group nogroup"; fi
  } > "$work/tinyproxy.conf"
  tinyproxy -d -c "$work/tinyproxy.conf" > "$work/tp.out" 2>&1 &
  pids+=($!)
  wait_port "$tp_port" "$work/tp.out"
}

start_tcp_relay() {
  relay_port=
  command -v haproxy >/dev/null || { echo "# haproxy is not installed (tools/install-deps.sh): (a) has no bare relay" >&2; return 0; }
  echo "# haproxy (TCP relay)" >&2
  local d=$work/relay port
  port=$(free_port)
  mkdir -p "$d"
  cat > "$d/haproxy.cfg" <<CONF
global
  maxconn 64
  tune.bufsize 262144
  user nobody
  group nogroup
defaults
  mode tcp
  option splice-auto
  timeout connect 5s
  timeout client 60s
  timeout server 60s
frontend relay
  bind 127.0.0.1:$port
  default_backend bulk
backend bulk
  server up 127.0.0.1:$bulk_port
CONF
  haproxy -db -f "$d/haproxy.cfg" > "$d/out" 2>&1 &
  pids+=($!)
  wait_port "$port" "$d/out"
  relay_port=$port
}

start_mitmproxy() {
  echo "# mitmproxy (mitmdump, header-rewrite addon)" >&2
  mp_port=$(free_port)
  cat > "$work/rewrite.py" <<PY
# Same rewrite as corral's inject mode: drop the box's auth headers, inject the key.
KEY = open("$work/key").read().strip()
def request(flow):
    for h in ("authorization", "x-api-key", "proxy-authorization", "cookie"):
        flow.request.headers.pop(h, None)
    flow.request.headers["x-api-key"] = KEY
PY
  mitmdump --listen-host 127.0.0.1 --listen-port "$mp_port" --set confdir="$work/mitm" \
    --set ssl_verify_upstream_trusted_ca="$work/ca.crt" --set http2=false -s "$work/rewrite.py" -q > "$work/mp.out" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do [ -f "$work/mitm/mitmproxy-ca-cert.pem" ] && python3 -c "import socket; socket.create_connection(('127.0.0.1',$mp_port))" 2>/dev/null && break; sleep 0.1; done
  sleep 0.5
}

# (b)'s reverse-proxy peers, each doing corral's inject work: TLS terminated with the
# test CA's front certificate; Authorization, Proxy-Authorization and Cookie dropped
# and x-api-key set to the real key (corral's rewrite, gateway/headers.cpp);
# re-encrypted to the upstream over kept-alive connections verified against the
# test CA for 127.0.0.1. Workers as nobody. No access log: corral's ledger line,
# journal record and response scrubbing per request are work the peers skip.

# What the upstream saw on GET /key-check sent through peer $1 with a placeholder
# key ("injected": the real one); sets <peer>_key_check.
key_check() {  # peer
  local port_var=${1}_port out
  out=$(python3 - "${!port_var}" "$work/ca.crt" <<'PY'
import ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[2])
req = urllib.request.Request(f"https://127.0.0.1:{sys.argv[1]}/key-check", headers={"x-api-key": "sk-ant-api03-placeholder"})
try:
    print(urllib.request.urlopen(req, context=ctx, timeout=10).read().decode())
except Exception as e:
    print(f"failed ({e})")
PY
)
  [ "$out" = injected ] || echo "gateway.sh: GET /key-check through $1: $out" >&2
  printf -v "${1}_key_check" %s "$out"
}

peer_setup() {  # name what: fails when name is not installed; else sets <name>_port, makes $work/<name>
  command -v "$1" >/dev/null || { echo "# $1 is not installed (tools/install-deps.sh): (b) skips it" >&2; return 1; }
  echo "# $1 ($2)" >&2
  printf -v "${1}_port" %s "$(free_port)"
  mkdir -p "$work/$1"
}
peer_run() {  # name log command...: runs it, waits for <name>_port, checks the key, adds name to peers
  local name=$1 log=$2 port_var=${1}_port
  shift 2
  "$@" > "$work/$name/out" 2>&1 &
  pids+=($!)
  wait_port "${!port_var}" "$log"
  key_check "$name"
  peers+=("$name")
}

start_nginx() {
  peer_setup nginx "reverse proxy, 2 worker processes" || return 0
  local d=$work/nginx
  mkdir -p "$d/tmp"
  cat > "$d/nginx.conf" <<CONF
worker_processes 2;
daemon off;
user nobody nogroup;
pid $d/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $d/tmp/body;
  proxy_temp_path $d/tmp/proxy;
  fastcgi_temp_path $d/tmp/fastcgi;
  uwsgi_temp_path $d/tmp/uwsgi;
  scgi_temp_path $d/tmp/scgi;
  # the load generator's connections never reconnect: no request limit (default 1000)
  keepalive_requests 1000000000;
  upstream bench_upstream {
    server 127.0.0.1:$https_port;
    keepalive 64;
    keepalive_requests 1000000000;
  }
  server {
    listen 127.0.0.1:$nginx_port ssl;
    ssl_certificate $work/front.crt;
    ssl_certificate_key $work/front.key;
    location / {
      proxy_pass https://bench_upstream;
      proxy_http_version 1.1;
      proxy_set_header Host 127.0.0.1:$https_port;
      proxy_set_header Connection "";
      proxy_set_header Authorization "";
      proxy_set_header Proxy-Authorization "";
      proxy_set_header Cookie "";
      proxy_set_header x-api-key "$secret";
      # nginx 1.22's default stops at TLS 1.2; corral speaks 1.3 to the upstream
      proxy_ssl_protocols TLSv1.2 TLSv1.3;
      proxy_ssl_verify on;
      proxy_ssl_trusted_certificate $work/ca.crt;
      proxy_ssl_name 127.0.0.1;
      proxy_ssl_session_reuse on;
    }
  }
}
CONF
  peer_run nginx "$d/error.log" nginx -p "$d/" -c "$d/nginx.conf" -e "$d/error.log"
}

start_haproxy() {
  peer_setup haproxy "reverse proxy, nbthread 2" || return 0
  local d=$work/haproxy
  cat > "$d/haproxy.cfg" <<CONF
global
  nbthread 2
  maxconn 8192
  user nobody
  group nogroup
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  timeout http-keep-alive 60s
frontend bench
  bind 127.0.0.1:$haproxy_port ssl crt $work/front.pem
  http-request del-header authorization
  http-request del-header proxy-authorization
  http-request del-header cookie
  http-request set-header x-api-key $secret
  default_backend bench_upstream
backend bench_upstream
  http-reuse always
  server up 127.0.0.1:$https_port ssl verify required ca-file $work/ca.crt verifyhost 127.0.0.1
CONF
  peer_run haproxy "$d/out" haproxy -db -f "$d/haproxy.cfg"
}
