#!/bin/sh
# Writes tests/nullargs.h (to stdout) from lib/statetool.h: for every pointer parameter of
# every ST_EXTERN function that the header does not let be NULL, a call passing NULL there
# and a harmless non-NULL pointer everywhere else (tests/test_contract.c runs each in a child,
# which must die of SIGABRT with "libstatetool: FUNC: 'ARG' must not be NULL", never SIGSEGV).
# `err` is optional everywhere; the other optional pointers are listed here, each one
# documented (or evidently so, as the _free functions') in the header.
#   sh tests/nullargs.sh lib/statetool.h > tests/nullargs.h   (tests/symbols.sh compares)
hdr=${1:-lib/statetool.h}
# FUNC:ARG pairs that may be NULL; FUNC:* for a function whose pointers all may be NULL
optional='
st_error_clear:* st_set_hooks:* st_set_net:* st_schema_free:* st_store_free:* st_state_free:*
st_edit_free:* st_secrets_free:* st_secret_free:* st_index_close:* st_backend_free:*
st_lock_release:* st_diff_clear:* st_move_report_clear:* st_import_report_clear:*
st_doctor_report_free:* st_store_entries_free:* st_stack_infos_free:* st_index_stale_free:*
st_generations_free:* st_changes_add:c st_changes_clear:* st_problems_clear:*
st_store_key_valid:* st_stack_name_valid:* st_project_name_valid:* st_urn_valid:*
st_type_is_provider:* st_schema_keyword_supported:* st_urn_parse:urn
st_magic_for_version:version st_store_open:url
st_backend_open:url st_problems_add:pointer st_problems_add:urn st_json_parse:name
st_json_parse:limits st_json_parse:style_out st_json_parse:problems st_json_load_file:limits
st_json_load_file:style_out st_json_load_file:problems st_json_dump:style st_json_dump:len
st_json_dump_at:style st_json_dump_at:len st_schema_add:uri st_schema_validate:uri
st_schema_validate:opts st_schema_validate:out st_store_read:info st_store_stat:info
st_store_write:opts st_store_write_fill:ctx st_store_write_fill:opts st_store_list:prefix
st_file_read:compression st_file_decompress:name st_file_decompress:compression
st_file_write_atomic:opts st_state_load_file:opts st_state_load_buffer:name
st_state_load_buffer:opts st_state_from_json:style st_state_from_json:problems
st_state_from_json:name st_state_set_envelope:stack st_state_dump:style st_state_dump:len
st_state_save:path st_state_save:opts st_edit_commit_save:path st_validate:opts
st_check_place:place st_validate_import_file:schema st_state_migrate:report st_edit_begin:report
st_edit_delete:deleted st_edit_set_flag:changed st_edit_pending_clear:removed
st_edit_replace_provider:changed st_edit_commit:diff st_edit_commit:problems
st_edit_commit_save:opts st_edit_commit_save:diff st_edit_commit_save:problems
st_edit_commit_save:written st_edit_commit_save_stack:diff st_edit_commit_save_stack:problems
st_edit_commit_save_stack:written st_edit_commit_pair:write st_edit_commit_pair:ctx
st_edit_commit_pair:diff_a st_edit_commit_pair:diff_b st_edit_commit_pair:problems
st_secrets_open:passphrase st_secrets_count:ciphertexts
st_secrets_count:plaintexts st_secrets_verify:count st_edit_secrets_encrypt:count
st_edit_secrets_rekey:count st_config_rekey:count st_config_scan:name st_config_scan:other
st_config_rekey_text:name st_config_rekey_text:out_len st_config_rekey_text:count
st_state_get:warnings st_resource_text:secrets st_resource_text:len st_resource_json:secrets
st_compare_text:len st_stack_names:override st_stack_names:path st_move:src_path
st_move:dst_path st_journal_recover_key:report
st_backend_recover:report st_journal_pending:other st_pair_unlock_dead:report st_journal_recover:report
st_import_check:stack st_import_check:project st_import_check:schema st_edit_import:opts
st_edit_import:problems st_import:dst_path st_import:opts st_import:problems st_index_open:notes
st_index_update_state:path st_index_update_backend:progress st_index_update_backend:pctx
st_index_update_backend:stats st_index_update_backend:failures st_index_update_stack:stats
st_index_update_stack:failures st_index_update_files:progress st_index_update_files:pctx
st_index_update_files:stats st_index_update_files:failures st_index_query_run:ctx
st_index_sql:ctx st_index_sql:row st_index_query_run:row st_urn_new:parent_qtype
st_backend_default_url:source st_backend_resolve:exists st_backend_resolve_key:exists
st_backend_load:opts st_backend_load_json:style st_backend_load_json:problems
st_backend_load_json:where st_backend_save:opts st_backend_stack_key:key
st_backend_stack_key:exists st_backend_stack_bak:exists st_backend_stack_path:path
st_backend_stack_path:exists st_backend_generation_load:opts st_backend_upgrade:opts
st_backend_upgrade:report st_backend_doctor:opts st_state_rename_stack:new_stack
st_state_rename_stack:new_project st_state_rename_stack:old_project st_state_rename_stack:count
st_backend_rename_stack_ex:new_qname st_backend_rename_stack_ex:report
st_backend_rename_stack:new_qname
'
tr '\n\t' '  ' < "$hdr" | sed 's/;/;\n/g' | sed -n 's/^.*ST_EXTERN \(.*[ *]st_[a-z0-9_]*(.*)\)[^()]*;$/\1/p' |
	sed 's/ ST_ATTRS((.*$//; s/  */ /g' |
	awk -v optional="$optional" '
function trim(s) { gsub(/^ +| +$/, "", s); return s }
BEGIN {
	n = split(optional, o, /[ \n]+/)
	for (i = 1; i <= n; i++) if (o[i] != "") opt[o[i]] = 1
	print "/* Generated by tests/nullargs.sh from lib/statetool.h: do not edit. */"
	ncase = 0
}
{
	fn = $0; sub(/\(.*/, "", fn); sub(/.*[ *]/, "", fn)
	plist = $0; sub(/^[^(]*\(/, "", plist); sub(/\)[^)]*$/, "", plist)
	np = split(plist, p, ",")
	for (i = 1; i <= np; i++) {
		p[i] = trim(p[i]); name[i] = p[i]; arr[i] = 0
		if (name[i] ~ /\[[0-9]*\]$/) { arr[i] = 1; sub(/\[[0-9]*\]$/, "", name[i]) }
		sub(/.*[ *]/, "", name[i])
		type[i] = p[i]; sub(/\[[0-9]*\]$/, "", type[i])
		type[i] = trim(substr(type[i], 1, length(type[i]) - length(name[i])))
		if (arr[i]) type[i] = type[i] " *"
		isptr[i] = (type[i] ~ /\*/ || type[i] ~ /_fn$/) && name[i] != "err"
		isfn[i] = type[i] ~ /_fn$/
	}
	known[fn ":*"] = 1
	for (i = 1; i <= np; i++) known[fn ":" name[i]] = 1
	if (np == 1 && p[1] == "void") next
	if (opt[fn ":*"]) next
	for (k = 1; k <= np; k++) {
		if (!isptr[k] || opt[fn ":" name[k]]) continue
		args = ""
		for (i = 1; i <= np; i++) {
			if (p[i] == "...") { a = "\"\""; }
			else if (i == k || name[i] == "err") a = "NULL"
			else if (name[i] == "fmt") a = "\"%s\""
			else if (isfn[i]) a = "(" type[i] ")na_fn"
			else if (type[i] ~ /\*/) a = "NA(" type[i] ")"
			else if (type[i] == "st_handle") a = "na_handle"
			else a = "(" type[i] ")1"
			args = args (i > 1 ? ", " : "") a
		}
		ncase++
		printf "static void na%d(void) { (void)%s(%s); }\n", ncase, fn, args
		cases = cases sprintf("\t{\"%s\", \"%s\", na%d},\n", fn, name[k], ncase)
	}
}
END {
	for (k in opt)
		if (!(k in known)) {
			print "nullargs.sh: " k " names no parameter of lib/statetool.h" > "/dev/stderr"
			exit 1
		}
	print "static const struct na_case na_cases[] = {"
	printf "%s", cases
	print "};"
}'
