# The host-built static healthgate runs in the guest (Debian 12's glibc, libsqlite3 from the image).
set -eu
[ -n "$HG_BIN" ] || { echo "no healthgate binary on the share"; exit 1; }
version=$("$HG_BIN" --version)
echo "healthgate --version: $version"
[ -n "$version" ]
"$HG_BIN" --help > "$HG_RESULTS/help.txt"
grep -q "record" "$HG_RESULTS/help.txt"
