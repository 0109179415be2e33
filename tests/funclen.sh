#!/bin/sh
# Functions a reader holds in their head: no function in lib/ or tools/ longer than MAX_FUNC
# lines (from the first line of its signature to its closing brace), no file longer than
# MAX_FILE lines, except what the allow-lists below name, each with its reason. A function
# may be allowed only as a hot loop whose comment says why it is one piece ("hot loop" in the
# comment above it). An entry that is no longer needed fails too, so the lists stay true.
# Functions are found by the house style: the signature starts in column 0, the body's braces
# stand alone in column 0.
MAX_FUNC=120
MAX_FILE=1000
src=${top_srcdir:-$(dirname "$0")/..}

# FILE:FUNCTION  reason
ALLOW_FUNCS='
lib/json/read.c:parse_string_raw  the string scanner: one hot loop over the input (eight bytes at a time, then byte by byte with the escapes inline); split, it loses the registers the parser lives on
'
# FILE  reason
ALLOW_FILES='
lib/statetool.h  the public header: the whole exported surface in one place, as tests/symbols.sh and tests/header.sh read it
lib/store/journal.c  1,009 lines: the argument checks of st_journal_recover_key and st_journal_write_pair (api28) on a file main had at 999; the pair writer helpers are static to it, to be split with them
'

T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
cd "$src" || exit 2
find lib tools -name '*.[ch]' ! -name schemas_data.c | LC_ALL=C sort > "$T/files"
[ -s "$T/files" ] || { echo "funclen.sh: no sources under $src"; exit 2; }

# "LENGTH FILE:LINE FUNCTION" for every function
xargs awk '
FNR == 1 { sig = 0; infn = 0 }
{
	if (!infn && $0 ~ /^[A-Za-z_][A-Za-z0-9_ \t\*,]*\(/ && $0 !~ /;[ \t]*$/ &&
	    $0 !~ /^(typedef|return)[ \t]/) {
		sig = FNR
		s = $0
		sub(/\(.*/, "", s)
		n = split(s, w, /[ \t\*]+/)
		name = w[n]
	}
	if (!infn && sig && $0 ~ /^\{[ \t]*$/) {
		infn = 1
		next
	}
	if (infn && $0 ~ /^\}/) {
		printf "%d %s:%d %s\n", FNR - sig + 1, FILENAME, sig, name
		infn = 0
		sig = 0
	}
}' < "$T/files" > "$T/funcs"
n=$(wc -l < "$T/funcs")
braces=$(xargs cat < "$T/files" | grep -c '^{')
fail=0
# every function body found (a brace in column 0 without a signature is a style break)
if [ "$n" -ne "$braces" ]; then
	echo "funclen.sh: found $n functions for $braces bodies (a signature not in the house style?)"
	fail=1
fi
if [ "$n" -lt 500 ]; then
	echo "funclen.sh: only $n functions found"
	fail=1
fi

printf '%s\n' "$ALLOW_FUNCS" | awk 'NF {print $1}' > "$T/allow_funcs"
printf '%s\n' "$ALLOW_FILES" | awk 'NF {print $1}' > "$T/allow_files"

# too long and not allowed
while read -r len where name; do
	[ "$len" -gt "$MAX_FUNC" ] || continue
	file=${where%%:*}
	line=${where#*:}
	if grep -qxF "$file:$name" "$T/allow_funcs"; then
		echo "$file:$name" >> "$T/used_funcs"
		# its comment says why it is one piece
		from=$((line > 15 ? line - 15 : 1))
		if ! sed -n "${from},${line}p" "$file" | grep -q 'hot loop'; then
			echo "$where: $name is allowed, but the comment above it does not say why (hot loop)"
			fail=1
		fi
		continue
	fi
	echo "$where: $name is $len lines (more than $MAX_FUNC)"
	fail=1
done < "$T/funcs"

while read -r file; do
	len=$(wc -l < "$file")
	[ "$len" -gt "$MAX_FILE" ] || continue
	if grep -qxF "$file" "$T/allow_files"; then
		echo "$file" >> "$T/used_files"
		continue
	fi
	echo "$file: $len lines (more than $MAX_FILE)"
	fail=1
done < "$T/files"

# stale entries
touch "$T/used_funcs" "$T/used_files"
for e in $(cat "$T/allow_funcs"); do
	grep -qxF "$e" "$T/used_funcs" ||
		{ echo "allowed but not too long (or gone): $e (take it off the list)"; fail=1; }
done
for e in $(cat "$T/allow_files"); do
	grep -qxF "$e" "$T/used_files" ||
		{ echo "allowed but not too long (or gone): $e (take it off the list)"; fail=1; }
done

if [ "$fail" -eq 0 ]; then
	echo "funclen.sh: $n functions in $(wc -l < "$T/files") files, none too long but the allowed"
fi
exit $fail
