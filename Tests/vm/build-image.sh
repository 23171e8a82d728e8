#!/usr/bin/env bash
# Builds the Debian 12 guest of the virtual-machine tests (Tests/vm/README.md), or reuses the
# cached one when it exists and was built from the same recipe.
#
#   Tests/vm/build-image.sh [--force]
#
# Cache: $HEALTHGATE_VM_CACHE, default .cache/vm in the repository. It holds rootfs.img (ext4,
# the guest's root filesystem), vmlinuz and initrd.img (booted with -kernel/-initrd) and
# recipe.sha256, the hash of the recipe: this script, Tests/vm/image/* and the bumble pin of
# requirements-test.txt. A different hash, or a missing file, rebuilds everything.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${HEALTHGATE_VM_CACHE:-$repo/.cache/vm}
force=false
[ "${1:-}" = "--force" ] && force=true

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

bumble_pin=$(grep -E '^bumble==' "$repo/requirements-test.txt")
recipe_hash=$( { cat "$here/build-image.sh"; (cd "$here/image" && for f in $(ls | sort); do echo "== $f"; cat "$f"; done); echo "$bumble_pin"; } \
  | sha256sum | cut -d' ' -f1)

if ! $force && [ -f "$cache/rootfs.img" ] && [ -f "$cache/vmlinuz" ] && [ -f "$cache/initrd.img" ] \
  && [ "$(cat "$cache/recipe.sha256" 2>/dev/null)" = "$recipe_hash" ]; then
  echo "vm image: reusing $cache (recipe $recipe_hash)"
  exit 0
fi

for tool in mmdebstrap mkfs.ext4 qemu-system-x86_64; do
  command -v "$tool" >/dev/null || { echo "vm image: $tool is missing; run .ci/setup" >&2; exit 1; }
done

start=$(date +%s)
mkdir -p "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
cleanup() { as_root rm -rf "$work"; }
trap cleanup EXIT
rootfs=$work/rootfs
echo "vm image: building in $work (recipe $recipe_hash)"

# The guest: stock Debian kernel, systemd (for the systemd-mode tests), dbus + bluez (the real
# bluetoothd), python3-dbus/python3-gi (the D-Bus clients of the scenarios), libsqlite3 (the
# host-built healthgate links it), and a venv with the pinned bumble (the test peer on /dev/vhci).
# python3-usb (pyusb on the guest's libusb-1.0) and usbutils (lsusb): the ANT stick emulator's
# independent host client and its checks (Tests/peers/ant_stick.py, scenario ant-stick-selftest).
packages=linux-image-amd64,systemd-sysv,udev,dbus,bluez,kmod,procps,python3,python3-venv
packages+=,python3-dbus,python3-gi,libsqlite3-0,sqlite3,make,ca-certificates
packages+=,python3-usb,libusb-1.0-0,usbutils
# libmtp9 (HealthGate's MTP library, with libmtp-common's udev rules and device table), mtp-tools
# (mtp-getfile: the benchmark's baseline) and umtp-responder (a real MTP device on FunctionFS: the
# emulated watch); dosfstools: the FAT image of the emulated mass-storage watch.
packages+=,libmtp9,mtp-tools,umtp-responder,dosfstools

# pip inside the chroot verifies PyPI's certificate against the host's CA bundle (copied in for
# that one call); no network is needed when the guest runs.
as_root mmdebstrap --mode=root --variant=minbase --include="$packages" \
  --customize-hook='cp /etc/ssl/certs/ca-certificates.crt "$1/tmp/host-ca.crt"' \
  --customize-hook='chroot "$1" python3 -m venv --system-site-packages /opt/hg-venv' \
  --customize-hook="chroot \"\$1\" env -i PATH=/usr/bin:/bin HOME=/root PIP_CERT=/tmp/host-ca.crt \
      REQUESTS_CA_BUNDLE=/tmp/host-ca.crt SSL_CERT_FILE=/tmp/host-ca.crt PIP_DISABLE_PIP_VERSION_CHECK=1 \
      /opt/hg-venv/bin/pip install -q --no-cache-dir '$bumble_pin'" \
  --customize-hook='rm -f "$1/tmp/host-ca.crt"' \
  --customize-hook="copy-in $here/image/healthgate-vm-test.service /etc/systemd/system" \
  --customize-hook='chroot "$1" systemctl enable healthgate-vm-test.service' \
  --customize-hook="copy-in $here/image/hg-init /sbin" \
  --customize-hook='chmod 0755 "$1/sbin/hg-init"' \
  --customize-hook='chroot "$1" systemctl mask apt-daily.timer apt-daily-upgrade.timer serial-getty@ttyS0.service getty@tty1.service' \
  --customize-hook='chroot "$1" passwd -d root' \
  --customize-hook='echo healthgate-vm > "$1/etc/hostname"' \
  --customize-hook='mkdir -p "$1/share"' \
  bookworm "$rootfs" http://deb.debian.org/debian

# Trim what the guest never uses: docs, locales, and the kernel modules outside Bluetooth, 9p,
# virtio, USB, crypto and the ext4 it boots from. drivers/usb stays whole: the emulated ANT stick
# needs dummy_hcd, libcomposite and usb_f_fs (FunctionFS), and configfs (kept below, in case the
# kernel builds it as a module) to set up its gadget.
as_root rm -rf "$rootfs"/usr/share/{doc,man,info,locale,lintian} "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/*
mods=$(echo "$rootfs"/lib/modules/*/kernel)
as_root rm -rf "$mods"/{sound,drivers/gpu,drivers/media,drivers/net,drivers/infiniband,drivers/staging} \
  "$mods"/{drivers/isdn,drivers/iio,drivers/mtd,drivers/md,drivers/hwmon,drivers/platform,drivers/thunderbolt} \
  "$mods"/arch/x86/kvm
for d in "$mods"/net/*; do
  case "${d##*/}" in bluetooth|9p|rfkill) ;; *) as_root rm -rf "$d" ;; esac
done
for d in "$mods"/fs/*; do
  case "${d##*/}" in 9p|ext4|jbd2|mbcache.ko|netfs|fscache|nls|configfs|fat) ;; *) as_root rm -rf "$d" ;; esac
done
# SCSI: only the disk driver and its core, which USB mass storage (the emulated watch's volume) needs.
for f in "$mods"/drivers/scsi/*; do
  case "${f##*/}" in scsi_mod.ko*|sd_mod.ko*|scsi_common.ko*) ;; *) as_root rm -rf "$f" ;; esac
done
as_root chroot "$rootfs" depmod -a "$(ls "$rootfs"/lib/modules)"

# The disk: the tree plus 256 MB for the databases and logs the scenarios write.
size_mb=$(( $(as_root du -sm "$rootfs" | cut -f1) + 256 ))
as_root mkfs.ext4 -q -F -L healthgate-vm -d "$rootfs" "$work/rootfs.img" "${size_mb}M"
as_root cp "$rootfs"/boot/vmlinuz-* "$work/vmlinuz"
as_root cp "$rootfs"/boot/initrd.img-* "$work/initrd.img"
as_root chown "$(id -u):$(id -g)" "$work/rootfs.img" "$work/vmlinuz" "$work/initrd.img"
rm -f "$cache/recipe.sha256"
mv -f "$work/rootfs.img" "$work/vmlinuz" "$work/initrd.img" "$cache/"
echo "$recipe_hash" > "$cache/recipe.sha256"
cleanup
echo "vm image: built in $(( $(date +%s) - start )) s, $(du -sh "$cache" | cut -f1) in $cache"
