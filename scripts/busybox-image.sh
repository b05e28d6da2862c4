#!/usr/bin/env bash
# Builds a small local docker image (default tag drover/busybox:local) from
# Debian's busybox-static, with no registry: a root file system holding
# /bin/busybox and a link per applet, imported with `docker import`.
# examples/docker.nomad.hcl runs it; any image the daemon has or can pull
# works the same way.
set -euo pipefail
IMG="${1:-drover/busybox:local}"
BB=/bin/busybox
if docker image inspect "$IMG" >/dev/null 2>&1; then exit 0; fi
if [ ! -x "$BB" ]; then
  echo "$BB is missing: apt-get install busybox-static" >&2
  exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"/{bin,sbin,usr/bin,usr/sbin,etc,tmp,var/www}
cp "$BB" "$tmp/bin/busybox"
for p in $("$BB" --list-full); do
  [ "$p" = bin/busybox ] && continue
  mkdir -p "$tmp/$(dirname "$p")"
  ln -sf /bin/busybox "$tmp/$p"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$tmp/etc/passwd"
printf 'hello from a drover docker task\n' >"$tmp/var/www/index.html"
tar -C "$tmp" -c . | docker import -c 'CMD ["/bin/sh"]' -c 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' - "$IMG" >/dev/null
echo "built $IMG"
