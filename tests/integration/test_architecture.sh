#!/bin/bash
# SPDX-License-Identifier: MIT
#
# docs/architecture.md's layout is the tree, and the tree keeps the rules that
# page states:
#   - every folder its layout block names exists (and holds a file);
#   - every top-level folder, and every folder under lib/, config/, engines/
#     and daemon/, is named there (what git ignores does not count: build*/);
#   - no source file in lib/ config/ engines/ daemon/ tests/ bench/ includes
#     with a path that climbs ("../"): includes are written from the top;
#   - no source file (*.c, *.h) under lib/ config/ engines/ daemon/ is over
#     MAX_LINES (800) lines: a longer one is split along its banners.
# Every problem is listed before the test fails, so one run shows them all.
#
# The layout block is the fenced block after the "<!-- layout:" marker: one
# folder a line, the folder first ("daemon/sched/   what lives there").
#
# Needs only SOURCE_DIR (the repository root); it does not start the daemon:
#   SOURCE_DIR=. bash tests/integration/test_architecture.sh

set -euo pipefail

: "${SOURCE_DIR:?SOURCE_DIR must be the repository root}"
DOC=docs/architecture.md
MAX_LINES=${MAX_LINES:-800}
SOURCE_ROOTS=(lib config engines daemon) # every folder under these must be named
INCLUDE_ROOTS=(lib config engines daemon tests bench)

cd "$SOURCE_DIR"
[[ -f $DOC ]] || { echo "FAIL: test_architecture: no $DOC in $SOURCE_DIR" >&2; exit 1; }

PROBLEMS=()
problem() {
	PROBLEMS+=("$*")
}
note() {
	echo "# $*"
}

# ---- what counts as a folder -------------------------------------------------

# What git (or, without git, the directory patterns of .gitignore) ignores is
# not part of the tree: build directories and the like. IGNORED is filled once
# the tree's folders are known, with one git call for all of them.
GIT_OK=false
git rev-parse --is-inside-work-tree >/dev/null 2>&1 && GIT_OK=true
IGNORE_PATTERNS=()
if [[ -f .gitignore ]]; then
	while IFS= read -r line; do
		[[ $line == */ && $line != \#* && $line != !* ]] && IGNORE_PATTERNS+=("${line%/}")
	done <.gitignore
fi
declare -A IGNORED=()
find_ignored() {
	local dir pat
	if $GIT_OK; then
		while IFS= read -r dir; do
			IGNORED[${dir%/}]=1
		done < <(printf '%s/\n' "$@" | git check-ignore --stdin 2>/dev/null || true)
	fi
	for dir in "$@"; do
		for pat in "${IGNORE_PATTERNS[@]}"; do
			if [[ $pat == /* ]]; then
				# shellcheck disable=SC2053 # the pattern is a glob on purpose
				[[ $dir == ${pat#/} ]] && IGNORED[$dir]=1
			else
				# shellcheck disable=SC2053
				[[ ${dir##*/} == $pat ]] && IGNORED[$dir]=1
			fi
		done
	done
	return 0
}

# A folder is there when it is a directory holding at least one file (git keeps
# no empty directories: one left behind by a move is not a folder of the tree).
present() {
	[[ -d $1 ]] && [[ -n $(find "$1" -type f -print -quit) ]]
}

# ---- the layout block --------------------------------------------------------

LAYOUT=$(awk '/^<!-- layout:/ { m = 1; next } m && /^```/ { if (p) exit; p = 1; next } p' "$DOC")
[[ -n $LAYOUT ]] || { echo "FAIL: test_architecture: no layout block in $DOC (its marker moved?)" >&2; exit 1; }

declare -A NAMED=()
while IFS= read -r line; do
	[[ -n ${line// /} ]] || continue
	folder=${line%%[[:space:]]*}
	if [[ $line == [[:space:]]* || $folder != */ ]]; then
		problem "$DOC: layout line is not 'folder/  what lives there': $line"
		continue
	fi
	folder=${folder%/}
	[[ -z ${NAMED[$folder]:-} ]] || problem "$DOC: $folder/ is named twice"
	NAMED[$folder]=1
	present "$folder" || problem "$DOC names $folder/, which is not in the tree"
done <<<"$LAYOUT"
note "the layout names ${#NAMED[@]} folders"

# The tree's folders: the top level, and everything under the source roots.
TREE=()
while IFS= read -r dir; do
	TREE+=("${dir#./}")
done < <(find . -mindepth 1 -maxdepth 1 -type d ! -name .git | sort)
for root in "${SOURCE_ROOTS[@]}"; do
	[[ -d $root ]] || continue
	while IFS= read -r dir; do
		TREE+=("$dir")
	done < <(find "$root" -mindepth 1 -type d | sort)
done
find_ignored "${TREE[@]}"
checked=0
for dir in "${TREE[@]}"; do
	[[ -z ${IGNORED[$dir]:-} ]] || continue
	present "$dir" || continue
	checked=$((checked + 1))
	[[ -n ${NAMED[$dir]:-} ]] || problem "$dir/ is in the tree, but not in the layout of $DOC"
done
note "the tree has $checked folders to name"

# ---- includes from the top ---------------------------------------------------

roots=()
for root in "${INCLUDE_ROOTS[@]}"; do
	[[ -d $root ]] && roots+=("$root")
done
climbing=$(grep -rnE --include='*.c' --include='*.h' \
	'^[[:space:]]*#[[:space:]]*include[[:space:]]*"\.\./' "${roots[@]}" || true)
if [[ -n $climbing ]]; then
	while IFS= read -r hit; do
		problem "an include that climbs (write it from the top of the tree): $hit"
	done <<<"$climbing"
fi
note "includes checked in ${roots[*]}"

# ---- file length -------------------------------------------------------------

long=0
while read -r n f; do
	[[ $f != total ]] || continue
	if ((n > MAX_LINES)); then
		problem "$f: $n lines, over $MAX_LINES: split it along its banners"
		long=$((long + 1))
	fi
done < <(find "${SOURCE_ROOTS[@]}" -type f \( -name '*.c' -o -name '*.h' \) -print0 2>/dev/null |
	sort -z | xargs -0 -r wc -l)
note "$long source files over $MAX_LINES lines"

if ((${#PROBLEMS[@]} > 0)); then
	{
		echo "FAIL: test_architecture: ${#PROBLEMS[@]} problems:"
		printf '  %s\n' "${PROBLEMS[@]}"
	} >&2
	exit 1
fi
note "pass"
