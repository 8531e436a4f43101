#!/usr/bin/env bash
# many-journals.sh [N]: a cell of three `paros serve --insecure` members on
# 127.0.0.1 with N journals (default 10,000), measured through their
# /metrics: formation, time until every journal is led, idle CPU and RSS,
# a member killed -9 and restarted, then the member leading the most
# journals killed -9. Run from the repository root; it builds paros and
# parosctl into a temporary directory and removes everything at the end.
set -euo pipefail
N=${1:-10000}
W=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$W"' EXIT
go build -o "$W/paros" ./cmd/paros
go build -o "$W/parosctl" ./cmd/parosctl
ports=(7611 7612 7613) metrics=(7711 7712 7713) pids=()
serve() { "$W/paros" serve --data "$W/m$1" --listen 127.0.0.1:${ports[$1]} --metrics 127.0.0.1:${metrics[$1]} --insecure >>"$W/log$1" 2>&1 & pids[$1]=$!; }
for i in 0 1 2; do serve $i; done
sleep 1
metric() { curl -s --max-time 2 "127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }
led() { local t=0 v; for m in "$@"; do v=$(metric "$m" paros_journals_leading); t=$((t + ${v:-0})); done; echo $t; }
now() { date +%s.%N; }
since() { python3 -c "print('%.1f' % ($(now) - $1))"; }
t0=$(now)
"$W/parosctl" --insecure --servers 127.0.0.1:7611 cell init --members 127.0.0.1:7611,127.0.0.1:7612,127.0.0.1:7613 --journals "$N" >/dev/null
echo "init of $N journals: $(since "$t0") s"
t0=$(now)
until [ "$(led 7711 7712 7713)" -ge "$N" ]; do sleep 0.5; done
echo "every journal led: $(since "$t0") s after init"
sleep 10
cpu() { local t=0 f; for p in "${pids[@]}"; do read -ra f <"/proc/$p/stat"; t=$((t + f[13] + f[14])); done; echo $t; }
a=$(cpu); sleep 20; b=$(cpu)
echo "idle CPU of the three members: $(python3 -c "print('%.3f' % (($b - $a) / $(getconf CLK_TCK) / 20))") cores"
for p in "${pids[@]}"; do echo "  RSS $(grep VmRSS /proc/$p/status | awk '{print $2}') KiB"; done
kill -9 "${pids[1]}"; sleep 1
t0=$(now); serve 1
until "$W/parosctl" --insecure --timeout 1s --servers 127.0.0.1:7612 cell inspect >/dev/null 2>&1; do sleep 0.05; done
echo "restart of member 2: Inspect answers $(since "$t0") s after its start"
until [ "$(led 7711 7712 7713)" -ge "$N" ]; do sleep 0.5; done
echo "restart of member 2: every journal led $(since "$t0") s after its start"
sleep 5
best=0 bi=0
for i in 0 1 2; do v=$(metric ${metrics[$i]} paros_journals_leading); if [ "${v:-0}" -gt "$best" ]; then best=$v bi=$i; fi; done
kill -9 "${pids[$bi]}"; t0=$(now)
rest=(); for i in 0 1 2; do [ $i -ne $bi ] && rest+=(${metrics[$i]}); done
until [ "$(led "${rest[@]}")" -ge "$N" ]; do sleep 0.1; done
echo "kill -9 of member $((bi + 1)), which led $best: every journal led again $(since "$t0") s after"
