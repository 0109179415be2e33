#!/bin/sh
# Runs every CLI test script; prints one closing line with the totals.
dir=$(dirname "$0")
total_p=0
total_f=0
status=0
for t in "$dir"/t_*.sh; do
	out=$(sh "$t" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	line=$(printf '%s\n' "$out" | tail -n 1)
	p=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
	f=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
	[ -n "$p" ] || { p=0; f=1; echo "$t did not finish"; }
	total_p=$((total_p + p))
	total_f=$((total_f + f))
	[ $rc -eq 0 ] || status=1
done
echo "cli: $total_p passed, $total_f failed"
exit $status
