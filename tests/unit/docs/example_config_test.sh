#!/bin/sh
# conf/memdiag.conf, every commented key switched on, loaded by a real
# collectd with the built plugin (-T: parse, init, one read, shut down).
# Paths are moved into a temp dir and certificates made there, so the plugin
# really starts. A misspelt key or bad value fails the run.
set -eu
collectd=$1 plugin=$2 example=$3 stock=$4 typesdb=$5
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/plugins"
cp "$plugin" "$dir/plugins/memdiag.so"
cp "$stock/logfile.so" "$dir/plugins/"
sh "$here/../../../conf/memdiag-certs" "$dir/etc" >/dev/null
sed -e 's/^\(\s*\)#\([A-Z][A-Za-z]* \)/\1\2/' \
    -e "s|/etc/memdiag|$dir/etc|g; s|/run/memdiag|$dir|g; s|/var/tmp/memdiag|$dir/captures|g" \
    -e "s|SocketGroup \"[^\"]*\"|SocketGroup \"$(id -gn)\"|" \
    -e "s|/usr/local/bin/memdiag-ship-rclone|$here/../../../conf/memdiag-ship-rclone|" \
    "$example" > "$dir/memdiag.conf"
cat > "$dir/collectd.conf" <<CONF
BaseDir "$dir"
PluginDir "$dir/plugins"
TypesDB "$typesdb"
LoadPlugin logfile
<Plugin logfile>
  LogLevel info
  File stdout
</Plugin>
Include "$dir/memdiag.conf"
CONF
status=0
# make check-tsan: the sanitizer runtime goes to collectd alone
# (tests/integration/harness/preload.rb), not to this shell.
out=$(env ${MEMDIAG_TEST_PRELOAD:+LD_PRELOAD="$MEMDIAG_TEST_PRELOAD"} \
  "$collectd" -T -C "$dir/collectd.conf" 2>&1) || status=$?
echo "$out"
if [ "$status" != 0 ] || echo "$out" | grep -q "Parsing the config file failed\|memdiag plugin:.*\(unknown\|invalid\|rejected\|not started\)"; then
  echo "FAIL: collectd did not accept conf/memdiag.conf (exit $status)"; exit 1
fi
echo "$out" | grep -q "memdiag plugin: listening on" || { echo "FAIL: the plugin did not start"; exit 1; }
echo "conf/memdiag.conf accepted: $(grep -c '^\s*[A-Z]' "$dir/memdiag.conf") keys, plugin started"
