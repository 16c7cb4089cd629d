# shellcheck shell=bash
# The benchmark target, shared by engine.sh, ab.sh, peak.sh and run-mode.sh (sourced, not run):
# nginx with 1 worker serving $WORK/www on 127.0.0.1:$PORT (a 17-byte index.txt, and under
# /catalog/ whatever run-mode.sh writes there, as JSON), pinned to $TARGET_CORE.
#
# start_nginx   writes the config, starts nginx, waits for it to answer $URL; sets NGINX_PID and
#               WORKER_PID. Exits the script if nginx does not come up.
# stop_nginx    stops it by PID (waking a SIGSTOPped worker first), then SIGKILL after 5 s.
NGINX_PID=""
WORKER_PID=""

start_nginx() {
  chmod 755 "$WORK"  # the nginx worker runs as an unprivileged user
  mkdir -p "$WORK/www" "$WORK/logs"
  printf 'hello from nginx\n' > "$WORK/www/index.txt"
  cat > "$WORK/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/logs/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path $WORK/tmp_body;
  proxy_temp_path $WORK/tmp_proxy;
  fastcgi_temp_path $WORK/tmp_fastcgi;
  uwsgi_temp_path $WORK/tmp_uwsgi;
  scgi_temp_path $WORK/tmp_scgi;
  keepalive_requests 1000000;
  keepalive_timeout 60s;
  server {
    listen 127.0.0.1:$PORT;
    root $WORK/www;
    location /catalog/ { default_type application/json; }  # bench/run-mode.sh's answers
  }
}
CONF
  taskset -c "$TARGET_CORE" nginx -c "$WORK/nginx.conf" -p "$WORK" &
  NGINX_PID=$!
  for _ in $(seq 50); do curl -fsS "$URL" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -fsS "$URL" >/dev/null || { echo "nginx did not come up" >&2; cat "$WORK/logs/error.log" >&2; exit 1; }
  WORKER_PID=$(cat /proc/"$NGINX_PID"/task/*/children | awk '{print $1}')
}

stop_nginx() {
  if [ -n "$NGINX_PID" ] && kill -0 "$NGINX_PID" 2>/dev/null; then
    for w in $(cat /proc/"$NGINX_PID"/task/*/children 2>/dev/null); do kill -CONT "$w" 2>/dev/null || true; done
    kill -QUIT "$NGINX_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$NGINX_PID" 2>/dev/null || true
  fi
}
