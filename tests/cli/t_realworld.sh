#!/bin/sh
# The real-world corpus (fixtures/realworld, see SOURCES.tsv): each file against
# fixtures/realworld/expect.tsv: it loads (or not, with Pulumi's message); saved to a new path
# with no option it comes back byte for byte (but for the files edited by hand); validate's
# exit code, errors (rule and JSON Pointer) and number of warnings are the verdict Pulumi gives.
. "$(dirname "$0")/lib.sh"
R=$FIXTURES/realworld
TAB=$(printf '\t')
n=0
while IFS="$TAB" read -r file loads rt verdict errors warnings note; do
	case $file in '#'* | '') continue ;; esac
	n=$((n + 1))
	f=$R/$file
	rm -f "$T/rt.json"
	run "$file: load and save" st convert "$f" -o "$T/rt.json"
	case $loads in
	yes)
		check_rc 0
		case $rt in
		yes) check_same "$f" "$T/rt.json" ;;
		*) if cmp -s "$f" "$T/rt.json"; then bad "round trip: expected a difference ($rt)"; else ok; fi ;;
		esac
		;;
	*)
		check_rc 1
		check_err_has "${loads#no: }"
		check_absent "$T/rt.json"
		;;
	esac
	run "$file: validate" st validate "$f"
	if [ "$verdict" = valid ]; then check_rc 0; else check_rc 1; fi
	got=$(awk '/: error: \[/ {r = $0; sub(/.*: error: \[/, "", r); sub(/\].*/, "", r); getline; sub(/^ *at /, ""); printf "%s%s@%s", sep, r, $0; sep = ","} END {if (!sep) printf "-"}' "$T/out")
	if [ "$got" = "$errors" ]; then ok; else bad "errors: $got, expected $errors"; fi
	w=$(sed -n 's/.*: [a-z]*valid, [0-9]* errors\{0,1\}, \([0-9]*\) warnings\{0,1\}.*/\1/p' "$T/out")
	if [ "$w" = "$warnings" ]; then ok; else bad "$w warnings, expected $warnings ($note)"; fi
done < "$R/expect.tsv"
current="every file has a verdict"
if [ "$n" -eq "$(ls "$R"/*.json | wc -l)" ] && [ "$n" -eq 27 ]; then ok; else bad "$n verdicts"; fi

# Files 30 to 34 decrypt with the passphrase of their stacks.
for f in "$R"/3[0-4]-*.json; do
	run "$(basename "$f"): secrets verify" env PULUMI_CONFIG_PASSPHRASE="correct horse battery staple" "$STATETOOL" secrets verify "$f"
	check_rc 0; check_out_has ", 0 failed to decrypt"
done
finish
