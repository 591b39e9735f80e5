#!/usr/bin/env bash
# The CLI's table of API fields (cli/cli_fields.c, k_fields) against the
# library's raising sites (CTR_FAIL_FIELD and friends in src/): the fields an
# error names travel as ctr_error_get_field, not as message text, so a
# renamed field or a new one must meet the table here.
#  1. every field the library raises an error about has a row, or the CLI
#     has no option of the member's name (then it names the member alone);
#  2. every row's field is one the library raises, or names in a message
#     (another field of the same error: "resume needs ... checkpoint",
#     "bin_x, bin_y"): a row nothing produces fails;
#  3. a site that raises about a field and prints that field's value in its
#     message ("FIELD = %g", "FIELD is %d") carries the value too
#     (CTR_FAIL_FIELD_VALUE: ctr_error_get_value), not the field alone.
# Usage: bash error_fields.sh SOURCE_DIR
set -u
export LC_ALL=C
src=${1:?usage: bash $0 SOURCE_DIR}
cd "$src" || exit 1
table=cli/cli_fields.c
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# rows: "field flag" of k_fields
rows=$(awk '/^static const cli_field k_fields\[\]/ {on = 1; next} on && /^};/ {on = 0}
            on && match($0, /\{"[^"]+", "[^"]+"/) {
              split(substr($0, RSTART + 1, RLENGTH - 1), f, "\"");
              print f[2] "\t" f[4] }' "$table")
[ -n "$rows" ] || { echo "FAIL: no rows read from $table"; exit 1; }
# the fields the library raises errors about: a string literal that is a
# field name alone (the field argument of CTR_FAIL_FIELD, ctr__error_set_field
# or of a helper that raises with it, such as the journal's `resume`)
raised=$(grep -rhoE '"(ctr_[a-z0-9_]+\.[a-z0-9_]+|gpu_budget|host_budget|scratch_dir|overwrite)"' \
           --include='*.c' --include='*.cu' --include='*.h' src | tr -d '"' | sort -u)
# every string literal of the library (messages), one a line
literals=$(grep -rhoE '"[^"]*"' --include='*.c' --include='*.cu' src)
# the CLI's options
options=$(grep -rhoE '\{"--[a-z0-9-]+"' cli | tr -d '{"' | sort -u)

n=0
for f in $raised; do
  n=$((n + 1))
  printf '%s\n' "$rows" | cut -f1 | grep -qxF -- "$f" && continue
  member=${f#*.}
  flag="--${member//_/-}"
  if printf '%s\n' "$options" | grep -qxF -- "$flag"; then
    bad "the library raises errors about $f but $table has no row for it (the CLI has $flag)"
  fi
done
echo "library: $n fields raised"

m=0
while IFS=$'\t' read -r field flag; do
  m=$((m + 1))
  printf '%s\n' "$options" | grep -qxF -- "${flag%%[^a-z0-9-]*}" ||
    bad "$table maps $field to ${flag%%[^a-z0-9-]*}, which no command has"
  printf '%s\n' "$raised" | grep -qxF -- "$field" && continue
  struct=${field%%.*} member=${field#*.}
  if [ "$struct" = "$field" ]; then
    printf '%s\n' "$literals" | grep -qw -- "$member" && continue
  else
    printf '%s\n' "$literals" | grep -F -- "$struct." | grep -qw -- "$member" && continue
  fi
  bad "$table maps $field, which no library error raises or names"
done <<<"$rows"
echo "cli: $m rows"

# 3: the calls of CTR_FAIL_FIELD, CTR_FAIL_FIELD_GOTO and ctr__error_set_field
# (whole, string literals joined) whose first field literal is followed, in
# the message, by " = %" or " is %"
valueless=$(grep -rlE 'CTR_FAIL_FIELD|ctr__error_set_field' --include='*.c' --include='*.cu' src |
  xargs perl -e '
    local $/;
    for my $f (@ARGV) {
      open(my $h, "<", $f) or next;
      my $t = <$h>;
      while ($t =~ /\b(?:CTR_FAIL_FIELD(?:_GOTO)?|ctr__error_set_field)\(/g) {
        my ($start, $depth, $i, $q) = (pos($t), 1, pos($t), 0);
        for (; $i < length($t) && $depth > 0; $i++) {
          my $c = substr($t, $i, 1);
          if ($q) { if ($c eq "\\") { $i++ } elsif ($c eq "\"") { $q = 0 } next }
          if ($c eq "\"") { $q = 1 } elsif ($c eq "(") { $depth++ } elsif ($c eq ")") { $depth-- }
        }
        my $call = substr($t, $start, $i - $start);
        $call =~ s/"\s*\n\s*"//g;
        next unless $call =~ /"((?:ctr_[a-z0-9_]+\.)?[a-z0-9_]+)"/;
        my $field = $1;
        next unless $field =~ /\.|^(gpu_budget|host_budget|scratch_dir|overwrite)$/;
        print "$f: $field\n" if $call =~ /\Q$field\E(?:\[%d\])? (?:=|is) %/;
      }
    }')
while IFS= read -r site; do
  [ -n "$site" ] && bad "$site: the message prints the field's value, which the error does not carry (raise it with CTR_FAIL_FIELD_VALUE)"
done <<<"$valueless"
nvalue=$(grep -rhoE 'CTR_FAIL_FIELD_VALUE(_GOTO)?\(|ctr__error_set_value\(' --include='*.c' src | wc -l)
echo "library: $nvalue sites raise with the value"
[ "$fails" -eq 0 ] && echo "error_fields: ok" || echo "error_fields: $fails failure(s)"
[ "$fails" -eq 0 ]
