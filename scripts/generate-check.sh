#!/usr/bin/env bash
# Regenerates the code (go generate ./...: entc, gqlgen, gqlpatch, genvocab) and fails when
# that changed anything: the committed generated code must be what the sources make.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The working tree as a git tree object, untracked files included, without touching the
# real index: comparing it before and after generating catches any change, even on a
# checkout that already has local edits.
tree_of_worktree() {
  local index
  index=$(mktemp)
  cp "$(git rev-parse --git-dir)/index" "$index"
  GIT_INDEX_FILE="$index" git add -A .
  GIT_INDEX_FILE="$index" git write-tree
  rm -f "$index"
}

before=$(tree_of_worktree)
go generate ./...
after=$(tree_of_worktree)
if [[ "$before" != "$after" ]]; then
  git status --porcelain
  git --no-pager diff --stat "$before" "$after"
  git --no-pager diff "$before" "$after"
  printf '\nFAILED: generated code is out of date: run '\''go generate ./...'\'' and commit the result\n' >&2
  exit 1
fi
echo "generated code is up to date"
