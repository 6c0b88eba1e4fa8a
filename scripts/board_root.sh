#!/usr/bin/env bash
# Build an emulated Raspberry Pi 4B: an arm64 Debian root with Python 3.11 and the aarch64 TVM wheel,
# run under qemu-user (no binfmt_misc, no chroot): ROOT/usr/bin/python3-qemu is its Python, e.g.
#   ROOT/usr/bin/python3-qemu -m tvm.exec.rpc_server --tracker 127.0.0.1:9190 --key rpi4b
#
#   scripts/board_root.sh [ROOT]        default ROOT: .boards/arm64 (or $FUSELENS_BOARD_ROOT)
#
# Needs Debian's debootstrap and qemu-user-static (make test-boards installs them) and network access to
# a Debian mirror and PyPI. Only debootstrap's first stage runs (--foreign: download and unpack, no
# maintainer scripts), so nothing executes inside the root while it is built. The wheels are unpacked by
# the host's pip for the aarch64 platform into ROOT/opt/tvm. Idempotent: a finished root is kept
# (ROOT/.fuselens-board-ready); an unfinished one is removed and built again.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="${1:-${FUSELENS_BOARD_ROOT:-.boards/arm64}}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
TVM_PINS=(apache-tvm==0.27.0.post1 apache-tvm-ffi==0.1.14.post1)
READY="$ROOT/.fuselens-board-ready"

if [ -f "$READY" ]; then
  echo "board root ready: $ROOT"
  exit 0
fi
for tool in debootstrap qemu-aarch64-static; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "board_root.sh: $tool not found: install Debian's ${tool/qemu-aarch64-static/qemu-user-static}" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "board_root.sh: debootstrap needs root (run as root or with sudo)" >&2; exit 2; }

rm -rf "$ROOT"
mkdir -p "$ROOT"
echo "debootstrap (first stage) of arm64 bookworm into $ROOT"
debootstrap --foreign --arch=arm64 --variant=minbase \
  --include=python3,python3-minimal,libpython3.11-stdlib,libstdc++6,zlib1g \
  bookworm "$ROOT" "$MIRROR" >"$ROOT.debootstrap.log" 2>&1 || {
    echo "board_root.sh: debootstrap failed; see $ROOT.debootstrap.log" >&2; tail -5 "$ROOT.debootstrap.log" >&2; exit 1; }
# --foreign leaves the .debs in var/cache; unpack the ones the first stage only downloaded
for deb in "$ROOT"/var/cache/apt/archives/*.deb; do
  dpkg-deb -x "$deb" "$ROOT"
done
rm -f "$ROOT"/var/cache/apt/archives/*.deb

echo "unpacking the aarch64 wheels (${TVM_PINS[*]}, numpy) into $ROOT/opt/tvm"
PIP="${PIP:-python3 -m pip}"
$PIP install --quiet --no-warn-script-location --target "$ROOT/opt/tvm" \
  --platform manylinux2014_aarch64 --platform manylinux_2_17_aarch64 --platform manylinux_2_28_aarch64 \
  --implementation cp --python-version 3.11 --abi cp311 --only-binary=:all: \
  "${TVM_PINS[@]}" "numpy<2.3" ml_dtypes typing_extensions psutil cloudpickle

# The launcher: a host shell script that runs the root's Python under qemu-user. The emulated Python sees
# the launcher as sys.executable (-0), so the workers TVM's RPC server starts with sys.executable are
# emulated too (without binfmt_misc the kernel cannot run an aarch64 binary itself).
cat >"$ROOT/usr/bin/python3-qemu" <<'LAUNCHER'
#!/bin/sh
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export PYTHONPATH="$ROOT/opt/tvm${PYTHONPATH:+:$PYTHONPATH}"
exec qemu-aarch64-static -L "$ROOT" -0 "$0" "$ROOT/usr/bin/python3.11" "$@"
LAUNCHER
chmod +x "$ROOT/usr/bin/python3-qemu"

echo "checking: python3 + tvm under qemu-aarch64"
"$ROOT/usr/bin/python3-qemu" -c "import platform, tvm; print(platform.machine(), tvm.__version__)"
touch "$READY"
echo "board root ready: $ROOT"
