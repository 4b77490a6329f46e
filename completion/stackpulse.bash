# SPDX-License-Identifier: MIT
# Bash completion for the stackpulse tools (sp-capture, sp-unwind, ...).
#
# The options come from each tool's own --help, read once per shell, so
# the completion always offers the options of the tool that is installed.
# Values are completed where the option says what it takes: files and
# directories, process ids, event names, and the choices --help lists.
# Installed as share/bash-completion/completions/sp-TOOL for each tool.

# _sp_options TOOL: the options TOOL's --help lists, cached per tool.
_sp_options()
{
	local tool=$1 var
	var=_sp_opts_${tool##*/}
	var=${var//[^A-Za-z0-9_]/_}
	if [[ -z ${!var-} ]]; then
		printf -v "$var" '%s' "$("$tool" --help 2>/dev/null |
			grep -E '^ {2,}-' | sed -E 's/^ +//; s/  .*//' |
			grep -oE '(^|, )--?[A-Za-z0-9][A-Za-z0-9-]*' | sed 's/^, //' | sort -u)"
	fi
	printf '%s\n' "${!var}"
}

# _sp_choices TOOL OPTION: the fixed values an option takes (each also
# named in the tool's --help, which a test checks).
_sp_choices()
{
	case ${1##*/}:$2 in
	sp-fold:--format) echo "folded pprof speedscope firefox" ;;
	sp-fold:--weight) echo "samples period" ;;
	sp-fold:--sort|sp-top:--sort|sp-top:-s) echo "self total" ;;
	sp-capture:--call-graph) echo "dwarf fp" ;;
	sp-capture:--stack-size) echo "auto" ;;
	sp-flame:--colors|sp-flame:-c) echo "default kinds" ;;
	sp-unwind:--engine) echo "stackpulse libunwind" ;;
	sp-cat:--format) echo "json perf-script" ;;
	esac
}

_sp_complete()
{
	local cur prev tool=$1 name=${1##*/}
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	COMPREPLY=()
	case $prev in
	-o|--output|--kallsyms|--kallsyms-out|--pid-file|--map|--perf-map-dir)
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	--archive|--per-thread|--cache-dir|--debug-dir)
		COMPREPLY=($(compgen -d -- "$cur"))
		return
		;;
	-p|--pid|--only-pid)
		COMPREPLY=($(compgen -W "$(ls /proc | grep -E '^[0-9]+$')" -- "$cur"))
		return
		;;
	-e|--event)
		if [[ $name == sp-capture || $name == sp-top ]]; then
			COMPREPLY=($(compgen -W "cpu-clock task-clock page-faults context-switches cpu-migrations cycles instructions" -- "$cur"))
			return
		fi
		;;
	--format|--weight|--sort|-s|--call-graph|--stack-size|--colors|-c|--engine)
		local choices
		choices=$(_sp_choices "$tool" "$prev")
		if [[ -n $choices ]]; then
			COMPREPLY=($(compgen -W "$choices" -- "$cur"))
			return
		fi
		;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_sp_options "$tool")" -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -f -- "$cur"))
}

for _sp_tool in sp-capture sp-unwind sp-symbolize sp-fold sp-flame sp-stat sp-top sp-cat sp-import; do
	complete -o filenames -F _sp_complete "$_sp_tool"
done
unset _sp_tool
