#!/bin/sh
# Lazy loads in the one-resource edits (issue 21, lazy.md): protect, unprotect, taint, untaint,
# rename and delete give, for every fixture and realworld state, the bytes, .bak, stdout,
# stderr and exit code of the full load (STATETOOL_LAZY=0); STATETOOL_TIMINGS shows that the
# lazy path ran (unchanged resources copied from the file read).
. "$(dirname "$0")/lib.sh"

# same NAME FILE CMD ARGS...: CMD on a lazy copy and a full copy of FILE: all outcomes equal
same() {
	name=$1 file=$2 cmd=$3
	shift 3
	cp "$file" "$T/lazy.json"
	cp "$file" "$T/full.json"
	rm -f "$T/lazy.json.bak" "$T/full.json.bak"
	st "$cmd" "$T/lazy.json" "$@" >"$T/lo" 2>"$T/le"
	lrc=$?
	STATETOOL_LAZY=0 st "$cmd" "$T/full.json" "$@" >"$T/fo" 2>"$T/fe"
	frc=$?
	current="$name"
	sed "s#$T/lazy.json#STATE#g" "$T/lo" >"$T/lo2"
	sed "s#$T/full.json#STATE#g" "$T/fo" >"$T/fo2"
	sed "s#$T/lazy.json#STATE#g" "$T/le" >"$T/le2"
	sed "s#$T/full.json#STATE#g" "$T/fe" >"$T/fe2"
	if [ "$lrc" = "$frc" ] && cmp -s "$T/lo2" "$T/fo2" && cmp -s "$T/le2" "$T/fe2" &&
	   cmp -s "$T/lazy.json" "$T/full.json"; then
		ok
	else
		cp "$T/le" "$T/err"
		cp "$T/lo" "$T/out"
		bad "lazy ($lrc) and full ($frc) differ"
	fi
	if [ -e "$T/full.json.bak" ]; then check_same "$T/lazy.json.bak" "$T/full.json.bak"; fi
	edits=$((edits + 1))
	[ "$frc" = 0 ] && wrote=$((wrote + 1))
}

edits=0
wrote=0
# every edit on the middle resource of each state; protect and delete on its first and last
for f in "$FIXTURES"/realworld/*.json "$FIXTURES"/edit/*.json "$FIXTURES"/move/*.json; do
	urns=$(st list "$f" 2>/dev/null | awk '{print $1}')
	[ -n "$urns" ] || continue
	n=$(printf '%s\n' "$urns" | wc -l)
	first=$(printf '%s\n' "$urns" | sed -n 1p)
	mid=$(printf '%s\n' "$urns" | sed -n "$(( (n + 1) / 2 ))p")
	last=$(printf '%s\n' "$urns" | sed -n "${n}p")
	b=$(basename "$f" .json)
	for c in protect unprotect taint untaint; do
		same "$b $c $mid" "$f" "$c" "$mid"
	done
	same "$b rename $mid" "$f" rename "$mid" renamed-by-test
	same "$b delete $mid" "$f" delete "$mid"
	same "$b protect --dry-run --json $mid" "$f" protect --dry-run --json "$mid"
	for u in "$first" "$last"; do
		same "$b protect $u" "$f" protect "$u"
		same "$b delete --force --target-dependents $u" "$f" delete --force \
			--target-dependents "$u"
	done
done
# a state in Python's json.dumps layout (one line, ": " and ", "): every edit as the full load's
py='{"version": 3, "deployment": {"manifest": {"time": "2026-01-01T00:00:00Z", "magic": "", "version": ""}, "resources": [{"urn": "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev", "custom": false, "type": "pulumi:pulumi:Stack"}, {"urn": "urn:pulumi:dev::p::aws:s3/bucket:Bucket::b", "custom": true, "type": "aws:s3/bucket:Bucket", "parent": "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev", "inputs": {"b": 1}}]}}'
printf '%s\n' "$py" >"$T/py.json"
for c in protect taint; do
	same "python layout $c" "$T/py.json" "$c" 'urn:pulumi:dev::p::aws:s3/bucket:Bucket::b'
done
same "python layout delete" "$T/py.json" delete 'urn:pulumi:dev::p::aws:s3/bucket:Bucket::b'
run "python layout: protect" "$STATETOOL" protect "$T/py.json" 'urn:pulumi:dev::p::aws:s3/bucket:Bucket::b'
check_rc 0
# a resource's outputs given twice (found by tests/test_lazydiff): refused as the full load
# refuses it (the lazy scan once skipped both maps, so the edit went through and wrote the last)
dup='{"version":3,"deployment":{"manifest":{"time":"2026-01-01T00:00:00Z","magic":"","version":""},"resources":[{"urn":"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev","custom":false,"type":"pulumi:pulumi:Stack","outputs":{"a":1},"outputs":{"b":2}},{"urn":"urn:pulumi:dev::p::aws:s3/bucket:Bucket::b","custom":true,"type":"aws:s3/bucket:Bucket","parent":"urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev","inputs":{"b":1}}]}}'
printf '%s\n' "$dup" >"$T/dup.json"
for c in protect taint delete; do
	same "duplicate outputs $c" "$T/dup.json" "$c" 'urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev'
	same "duplicate outputs $c (another resource)" "$T/dup.json" "$c" \
		'urn:pulumi:dev::p::aws:s3/bucket:Bucket::b'
done
# a legacy checkpoint (no version, "latest" at the top) over 1 MiB, read on two threads: the
# second thread's skeletons in its resources (an array the first thread does not scan) once
# stayed in the tree, and an edit wrote those resources without their outputs (found by
# tests/test_lazydiff); now all of it is parsed again in full, as the full load does
awk 'BEGIN {
	printf "{\n    \"target\": \"foo\",\n    \"latest\": {\n        \"resources\": [\n"
	for (i = 0; i < 3000; i++)
		printf "            {\n                \"urn\": \"urn:pulumi:foo::p::t:m:R::r%d\",\n                \"custom\": true,\n                \"id\": \"%d\",\n                \"type\": \"t:m:R\",\n                \"outputs\": {\n                    \"k\": \"%0300d\"\n                }\n            }%s\n", i, i, i, i < 2999 ? "," : ""
	printf "        ]\n    }\n}\n"
}' >"$T/legacy.json"
STATETOOL_THREADS=2
export STATETOOL_THREADS
same "legacy checkpoint, two threads: protect" "$T/legacy.json" protect 'urn:pulumi:foo::p::t:m:R::r2999'
same "legacy checkpoint, two threads: delete" "$T/legacy.json" delete 'urn:pulumi:foo::p::t:m:R::r0'
unset STATETOOL_THREADS
run "legacy checkpoint: every outputs kept" grep -c '"k": "0' "$T/lazy.json"
check_out "2999"
run "duplicate outputs: refused" "$STATETOOL" protect "$T/dup.json" 'urn:pulumi:dev::p::aws:s3/bucket:Bucket::b'
check_rc 1
check_err_has "refusing to write: '$T/dup.json' has 1 duplicate object key (first at /deployment/resources/0/outputs)"

# A state over 4 MiB is mapped, not read, and its unchanged resources go to the new file as
# runs copied from the file (copy_file_range where the file system can): every edit at its
# start, middle and end gives the full load's bytes. big.json: realworld/04's resources, then
# 10 copies of all but its root stack (URNs suffixed -cK; references still to the originals).
awk '
NR == FNR { n++; next }
FNR <= 31 { print; next }
FNR > n - 4 { tail[FNR] = $0; next }
{ body[++b] = $0; if (!s0 && $0 == "                },") s0 = b + 1 }
END {
	for (k = 0; k <= 10; k++)
		for (i = k ? s0 : 1; i <= b; i++) {
			l = body[i]
			if (k && l ~ /^                    "urn": "/)
				sub(/",?$/, "-c" k "&", l)
			if (i == b && k < 10)
				l = l ","
			print l
		}
	for (i = n - 3; i <= n; i++)
		print tail[i]
}' "$FIXTURES/realworld/04-kloudlib-backup-big-56res.json" \
   "$FIXTURES/realworld/04-kloudlib-backup-big-56res.json" >"$T/big.json"
current="big state over 4 MiB"
[ "$(wc -c <"$T/big.json")" -gt 4194304 ] && ok || bad "$(wc -c <"$T/big.json") bytes"
urns=$(st list "$T/big.json" | awk '{print $1}')
n=$(printf '%s\n' "$urns" | wc -l)
for k in 1 $(( (n + 1) / 2 )) "$n"; do
	u=$(printf '%s\n' "$urns" | sed -n "${k}p")
	cp "$T/big.json" "$T/bigsrc.json"
	for c in protect taint; do
		same "big $c #$k" "$T/bigsrc.json" "$c" "$u"
	done
	same "big rename #$k" "$T/bigsrc.json" rename "$u" renamed-by-test
	same "big delete --force --target-dependents #$k" "$T/bigsrc.json" delete --force \
		--target-dependents "$u"
done
cp "$T/big.json" "$T/b.json"
run "big: lazy path" env STATETOOL_TIMINGS=1 "$STATETOOL" protect "$T/b.json" "$u"
check_rc 0
check_err_has "write: unchanged resources copied from the file read"

current="enough edits ran"
if [ "$edits" -gt 300 ] && [ "$wrote" -gt 150 ]; then ok; else bad "$edits edits, $wrote written"; fi

# move: between the move fixtures and two realworld states, lazily and in full, every outcome
# (both files, stdout, stderr, exit code) equal
moves=0
for s in "$FIXTURES"/move/children.json "$FIXTURES"/move/dependencies.json \
	 "$FIXTURES"/move/replacewith.json "$FIXTURES"/realworld/04-kloudlib-backup-big-56res.json; do
	for d in "$FIXTURES"/move/dest-same-provider.json "$FIXTURES"/move/dest-other-provider.json \
		 "$FIXTURES"/realworld/30-azure-network.json; do
		urns=$(st list "$s" 2>/dev/null | awk '{print $1}')
		n=$(printf '%s\n' "$urns" | wc -l)
		for k in 2 $(( (n + 1) / 2 )) "$n"; do
			u=$(printf '%s\n' "$urns" | sed -n "${k}p")
			for mode in lazy full; do
				cp "$s" "$T/$mode-src.json"
				cp "$d" "$T/$mode-dst.json"
				if [ $mode = lazy ]; then
					st move --source "$T/$mode-src.json" --dest "$T/$mode-dst.json" "$u" \
						>"$T/$mode-o" 2>"$T/$mode-e"
				else
					STATETOOL_LAZY=0 st move --source "$T/$mode-src.json" \
						--dest "$T/$mode-dst.json" "$u" >"$T/$mode-o" 2>"$T/$mode-e"
				fi
				echo $? >"$T/$mode-rc"
				sed -i "s#$T/$mode-#X-#g" "$T/$mode-o" "$T/$mode-e"
			done
			current="move $(basename "$s") #$k -> $(basename "$d")"
			if cmp -s "$T/lazy-rc" "$T/full-rc" && cmp -s "$T/lazy-o" "$T/full-o" &&
			   cmp -s "$T/lazy-e" "$T/full-e" && cmp -s "$T/lazy-src.json" "$T/full-src.json" &&
			   cmp -s "$T/lazy-dst.json" "$T/full-dst.json"; then
				ok
			else
				cp "$T/lazy-e" "$T/err"
				cp "$T/lazy-o" "$T/out"
				bad "lazy ($(cat "$T/lazy-rc")) and full ($(cat "$T/full-rc")) differ"
			fi
			moves=$((moves + 1))
			[ "$(cat "$T/full-rc")" = 0 ] && moved=$((moved + 1))
		done
	done
done
current="enough moves ran"
if [ "$moves" -ge 36 ] && [ "${moved:-0}" -ge 10 ]; then ok; else bad "$moves moves, ${moved:-0} done"; fi

# the lazy path ran: the unchanged resources were copied as the file had them
cp "$FIXTURES/realworld/30-azure-network.json" "$T/s.json"
u=$(st list "$T/s.json" | awk 'NR == 3 {print $1}')
run "lazy path" env STATETOOL_TIMINGS=1 "$STATETOOL" taint "$T/s.json" "$u"
check_rc 0
check_err_has "write: unchanged resources copied from the file read"
cp "$FIXTURES/realworld/30-azure-network.json" "$T/s.json"
run "full path" env STATETOOL_TIMINGS=1 STATETOOL_LAZY=0 "$STATETOOL" taint "$T/s.json" "$u"
check_rc 0
check_err_lacks "copied from the file read"

cp "$FIXTURES/realworld/30-azure-network.json" "$T/ms.json"
mu=$(st list "$T/ms.json" | awk 'END {print $1}')
run "move: lazy path" env STATETOOL_TIMINGS=1 "$STATETOOL" move --source "$T/ms.json" --dest "$T/md.json" --dest-stack network/prod "$mu"
check_rc 0
check_err_has "write: unchanged resources copied from the file read"

# filter mode: the state from a pipe, lazily, the same bytes
run "filter lazy" sh -c "\"$STATETOOL\" protect - '$u' < \"$FIXTURES/realworld/30-azure-network.json\""
check_rc 0
cp "$T/out" "$T/pipe-lazy"
run "filter full" sh -c "STATETOOL_LAZY=0 \"$STATETOOL\" protect - '$u' < \"$FIXTURES/realworld/30-azure-network.json\""
check_rc 0
check_same "$T/pipe-lazy" "$T/out"

finish
