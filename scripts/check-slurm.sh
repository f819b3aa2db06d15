#!/usr/bin/env bash
# check-slurm.sh runs pnec batch as a job array on a real, single-node Slurm
# cluster started for the purpose in a temporary directory on this machine,
# and checks what a nightly array must guarantee (make check-slurm; also run
# by `make test` through TestCheckSlurm when root).
#
# Usage: scripts/check-slurm.sh PNEC_BINARY
# Needs root (slurmd and munged run as root here); installs slurm-wlm and
# munge with apt-get when missing. Exit 0 when every check passed, 77 when it
# cannot run here (not root, no apt), 1 otherwise. The daemons it started are
# stopped by pid whatever happens; logs stay in $KEEP when set.
#
# Checks:
#   1. an array of 3 tasks over 6 small scenes (one of them not a raster):
#      every good scene is done exactly once across the tasks, with a valid
#      COG (gdalinfo: LAYOUT=COG) and an Item naming its task's shard, engine
#      and job id; the bad scene fails in its task with one line; the shared
#      STAC Collection lists every good Item once;
#   2. scancel of a task in the middle of a big scene leaves no partial or
#      temporary file, and resubmitting that task completes it;
#   3. resubmitting the whole array does nothing (every scene up to date).
set -uo pipefail
pnec=$(readlink -f "${1:?usage: check-slurm.sh PNEC_BINARY}")
say() { echo "check-slurm: $*"; }
if [ "$(id -u)" != 0 ]; then say "skipped: needs root to run slurmd and munged"; exit 77; fi
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
	command -v apt-get >/dev/null || { say "skipped: slurm-wlm and munge missing and no apt-get"; exit 77; }
	say "installing slurm-wlm and munge with apt-get"
	(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge) >/dev/null 2>&1 ||
		{ say "apt-get install slurm-wlm munge failed"; exit 1; }
fi

work=$(mktemp -d /tmp/pnec-slurm.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null
	done
	if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$work"/*.log "$KEEP"/ 2>/dev/null; fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail=0
check() { # check DESCRIPTION COMMAND...: runs COMMAND, reports it
	local what=$1
	shift
	if "$@"; then say "ok: $what"; else say "FAILED: $what"; fail=1; fi
}
is_cog() { # is_cog FILE: gdalinfo (an independent reader) says LAYOUT=COG
	local info
	info=$(gdalinfo "$1" 2>/dev/null) && [[ $info == *LAYOUT=COG* ]]
}

# munge with its own key and socket
mkdir -p "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
munged -F -f --key-file="$work/munge/munge.key" --socket="$work/munge/socket" --log-file="$work/munged.log" \
	--pid-file="$work/munge/munged.pid" --seed-file="$work/munge/seed" >"$work/munged.out" 2>&1 &
pids+=($!)

host=$(hostname -s)
mem=$(awk '/MemTotal/{print int($2/1024) - 1024}' /proc/meminfo)
port=$((20000 + RANDOM % 20000))
mkdir -p "$work/state" "$work/spool"
cat >"$work/slurm.conf" <<CONF
ClusterName=pnec-check
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
KillWait=10
NodeName=$host CPUs=$(nproc) RealMemory=$mem State=UNKNOWN
PartitionName=check Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$work/slurm.conf
for _ in $(seq 50); do [ -S "$work/munge/socket" ] && break; sleep 0.1; done
slurmctld -D -i >"$work/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D >"$work/slurmd.out" 2>&1 &
pids+=($!)
up=0
for _ in $(seq 150); do
	if sinfo -h -o %T 2>/dev/null | grep -q idle; then up=1; break; fi
	sleep 0.2
done
if [ $up != 1 ]; then
	say "the cluster did not come up"; tail -5 "$work"/slurmctld.log "$work"/slurmd.log 2>/dev/null; exit 1
fi
say "cluster up on $host (slurm $(sinfo -V | awk '{print $2}'), port $port)"

# Scenes, a bad one, a tiny model. The spectra come from the repository's
# own source writer, so a clone without ../shared (SalinasA, synth's
# default) runs the check too.
d=$work/data
mkdir -p "$d/in" "$d/out"
/usr/bin/python3 "$(dirname "$0")/demo_source.py" "$d/source.tif" "$d/source_gt.tif" ||
	{ say "could not write the spectral source (scripts/demo_source.py needs python3-rasterio)"; exit 1; }
spectra=$d/source.tif,$d/source_gt.tif
"$pnec" synth --layout procedural:96x96 --bands 12 --seed 1 --spectra "$spectra" --out "$d/train.tif" --labels-out "$d/train_gt.tif" >/dev/null 2>&1 &&
	"$pnec" train --scene "$d/train.tif" --labels "$d/train_gt.tif" --out "$d/m.pnec" --epochs 3 --hidden 32 -q ||
	{ say "could not make the model"; exit 1; }
for i in 1 2 3 4 5; do
	"$pnec" synth --layout procedural:80x72 --bands 12 --seed $((10 + i)) --spectra "$spectra" --out "$d/in/scene$i.tif" >/dev/null 2>&1 || { say "synth failed"; exit 1; }
done
echo "not a raster" >"$d/in/broken.tif"

cat >"$work/task.sh" <<TASK
#!/bin/bash
exec "$pnec" batch --quiet --model "$d/m.pnec" --out-dir "$d/out" --stac-collection "$d/out/collection.json" --datetime 2024-06-01 \
	--max-memory 1G --report "$d/report-\${SLURM_ARRAY_TASK_ID}-\${SLURM_JOB_ID}.jsonl" "\$@"
TASK
chmod +x "$work/task.sh"

# 1. the array
sbatch --wait --array=0-2 --mem=2G --output="$work/task-%a.log" -J pnec-check "$work/task.sh" "$d/in" >/dev/null 2>&1
cat "$d"/report-*.jsonl >"$work/run1.jsonl" 2>/dev/null
py=/usr/bin/python3
$py - "$work/run1.jsonl" "$d/out" <<'PY' || fail=1
import json, sys, collections, os
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
out = sys.argv[2]
by = collections.defaultdict(list)
for r in lines:
    by[os.path.basename(r["input"])].append(r)
ok = True
def check(cond, msg):
    global ok
    print(("check-slurm: ok: " if cond else "check-slurm: FAILED: ") + msg)
    ok = ok and cond
good = ["scene%d.tif" % i for i in range(1, 6)]
check(all(len(by[g]) == 1 and by[g][0]["status"] == "done" for g in good), "every good scene done exactly once across the tasks")
b = by["broken.tif"]
check(len(b) == 1 and b[0]["status"] == "failed" and "\n" not in b[0].get("reason", "") and b[0].get("reason"), "the bad scene failed in one task with one line: %s" % (b[0].get("reason") if b else None))
shards = {r.get("shard") for r in lines}
check(all(r.get("engine") == "slurm" and r.get("job_id") for r in lines) and shards <= {"0/3", "1/3", "2/3"}, "reports name the engine, job id and shard (%s)" % sorted(s for s in shards if s))
for g in good:
    item = json.load(open(by[g][0]["item"]))
    p = item["properties"]
    check(p.get("pnec:engine") == "slurm" and p.get("pnec:shard") == by[g][0]["shard"] and p.get("pnec:job_id") == by[g][0]["job_id"], "Item of %s records shard %s and job %s" % (g, p.get("pnec:shard"), p.get("pnec:job_id")))
coll = json.load(open(os.path.join(out, "collection.json")))
items = [l["href"] for l in coll.get("links", []) if l.get("rel") == "item"]
check(len(items) == 5 and len(set(items)) == 5, "the Collection lists the 5 Items once each (%d item links)" % len(items))
sys.exit(0 if ok else 1)
PY
for f in "$d"/out/*.tif; do
	case "$f" in *reliability*) continue ;; esac
	is_cog "$f" || { say "FAILED: $f is not a COG (gdalinfo)"; fail=1; }
done
[ $fail = 0 ] && say "ok: every product is a COG (gdalinfo: LAYOUT=COG)"
left=$(find "$d/out" -name '.*' -o -name '*stage*' -o -name '*.tmp' | wc -l)
check "no temporary files after the array" test "$left" = 0

# 2. scancel mid-scene, then resubmit the task
"$pnec" synth --layout procedural:512x512 --bands 12 --seed 7 --spectra "$spectra" --out "$d/big.vrt" --vrt 4096x4096 >/dev/null 2>&1 || { say "synth of the big scene failed"; exit 1; }
mkdir -p "$d/in2"
ln -s "$d/big.vrt" "$d/in2/big.vrt" 2>/dev/null || cp "$d/big.vrt" "$d/in2/"
jid=$(sbatch --parsable --array=0 --mem=3G --output="$work/big-%a.log" -J pnec-big "$work/task.sh" --tile 512 "$d/in2")
# Up to 5 minutes for the task to start writing: a slow or loaded node
# (CI runs other test packages beside this one) takes longer to schedule,
# open the scene and compile; it is cancelled as soon as the staging file
# shows, well before the 4096x4096 scene can be done.
for _ in $(seq 3000); do
	ls "$d/out"/.*stage* >/dev/null 2>&1 && break
	sleep 0.1
done
staged=0
ls "$d/out"/.*stage* >/dev/null 2>&1 && staged=1
check "the big scene's task is writing (its staging file exists)" test $staged = 1
scancel "$jid"
for _ in $(seq 600); do squeue -h -j "$jid" 2>/dev/null | grep -q . || break; sleep 0.1; done
partial=$(find "$d/out" -name '.*' -o -name '*stage*' -o -name '*.tmp' | wc -l)
check "scancel mid-scene leaves no partial or temporary file" test "$partial" = 0
check "scancel mid-scene leaves no product" test ! -e "$d/out/big.tif"
sbatch --wait --array=0 --mem=3G --output="$work/big2-%a.log" -J pnec-big "$work/task.sh" --tile 512 "$d/in2" >/dev/null 2>&1
check "the resubmitted task completes the big scene" is_cog "$d/out/big.tif"

# 3. the whole array again: nothing to do
rm -f "$d"/report-*.jsonl
sbatch --wait --array=0-2 --mem=2G --output="$work/again-%a.log" -J pnec-check "$work/task.sh" "$d/in" >/dev/null 2>&1
cat "$d"/report-*.jsonl >"$work/run3.jsonl" 2>/dev/null
done_again=$(grep -c '"status":"done"' "$work/run3.jsonl")
skipped=$(grep -c '"status":"skipped"' "$work/run3.jsonl")
check "resubmitting the array does nothing ($skipped skipped, $done_again done)" test "$done_again" = 0 -a "$skipped" = 5

if [ $fail = 0 ]; then say "all checks passed"; else say "some checks FAILED (KEEP=DIR keeps the logs)"; fi
exit $fail
